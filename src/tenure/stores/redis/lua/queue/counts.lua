-- Read-only: one consistent count of a queue at the server's now (its queued zsets summed, one
-- per priority in use), then whether it is paused and the run_at of its oldest queued job (the
-- lowest score of those zsets; false when empty).
local now_s, now = clock()
local ready, scheduled, oldest = 0, 0, false
for _, key in ipairs(queued_keys(base)) do
  ready = ready + redis.call('ZCOUNT', key, '-inf', now_s)
  scheduled = scheduled + redis.call('ZCOUNT', key, '(' .. now_s, '+inf')
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and ((not oldest) or tonumber(first[2]) < tonumber(oldest)) then
    oldest = first[2]
  end
end
return {now_s, ready, scheduled,
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled),
  redis.call('EXISTS', PAUSED),
  oldest}
