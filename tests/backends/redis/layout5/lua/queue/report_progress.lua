-- ARGV[3]: job id, [4]: token, [5]: progress in millionths. Kept as the highest reported, and
-- only while the attempt holding `token` runs.
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'progress_u', 'batch_id', 'batch_base')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then return 0 end
local old, new = num(f[3]), tonumber(ARGV[5]) or 0
if new <= old then return 0 end
redis.call('HSET', jk, 'progress_u', new)
if f[4] and ours(f[5]) and redis.call('HEXISTS', open_key(f[5], f[4]), id) == 1 then
  local bk = batch_key(f[5], f[4])
  if redis.call('EXISTS', bk) == 1 then
    redis.call('HSET', bk, 'partial', num(redis.call('HGET', bk, 'partial')) + new - old)
  end
end
return 1
