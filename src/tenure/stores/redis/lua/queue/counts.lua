-- Read-only: one consistent count of a queue at the server's now, then whether it is paused
-- and the run_at of its oldest queued job (the ready set's lowest score; false when empty).
local now_s, now = clock()
local oldest = redis.call('ZRANGE', QUEUED, 0, 0, 'WITHSCORES')
return {now_s,
  redis.call('ZCOUNT', QUEUED, '-inf', now_s),
  redis.call('ZCOUNT', QUEUED, '(' .. now_s, '+inf'),
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled),
  redis.call('EXISTS', PAUSED),
  oldest[2] or false}
