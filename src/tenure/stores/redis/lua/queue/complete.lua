-- ARGV[3]: job id, ARGV[4]: token, ARGV[5]: the result ('-' none, '+text'), written with the
-- success or not at all (a stale token writes nothing).
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
local result = optional(ARGV[5] or '-')
if result then redis.call('HSET', jk, 'result', result) end
redis.call('ZREM', RUNNING, id)
move_index(id, num(f[3]), 'running', 'succeeded')
close_attempt(id, n, now_s, 'succeeded', false, false)
-- A chain's next link is queued in this same script; a chain in a batch is counted there once,
-- when it ends (its last link), or as cancelled when its batch no longer runs new work.
if not chain_goes_on(jk) then
  batch_member_end(jk, id, 'succeeded', now_s, now)
  chain_link_end(jk, 'succeeded', now_s, now)
elseif batch_stops_new_work(jk) then
  batch_member_end(jk, id, 'cancelled', now_s, now)
  chain_link_end(jk, 'succeeded, but its batch no longer runs new work', now_s, now)
else
  chain_link_end(jk, 'succeeded', now_s, now)
end
release_slot(jk, id, now_s, now)
wake_waiters(id)
return {'ok', 'succeeded'}
