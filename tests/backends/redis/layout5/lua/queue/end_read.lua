-- The first half of end_attempt: refuse a stale token at once, or return what the retry
-- decision (pure Python, tenure.core.retry.decide) needs. ARGV[3]: job id, [4]: token, [5]: outcome.
local now_s, now = clock()
local id = ARGV[3]
local f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'policy', 'tries_used',
  'exceptions', 'cancel_requested_at')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then
  return refuse(id, ARGV[4], ARGV[5], now_s)
end
return {'running', now_s, f[3] or '', tostring(num(f[4])), tostring(num(f[5])), f[6] or ''}
