-- ARGV[3]: job id, ARGV[4]: token.
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'seq', 'tries_used')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then
  return refuse(id, ARGV[4], 'succeeded', now_s)
end
redis.call('HSET', jk, 'state', 'succeeded', 'finished_at', now_s, 'tries_used', num(f[4]) + 1)
redis.call('HDEL', jk, 'lease_expires_at')
redis.call('ZREM', RUNNING, id)
move_index(id, num(f[3]), 'running', 'succeeded')
close_attempt(id, n, now_s, 'succeeded', false, false)
batch_member_end(jk, id, 'succeeded', now_s, now)
return {'ok', 'succeeded'}
