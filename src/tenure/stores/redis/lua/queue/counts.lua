-- Read-only: one consistent count of a queue at the server's now.
local now_s, now = clock()
return {now_s,
  redis.call('ZCOUNT', QUEUED, '-inf', now_s),
  redis.call('ZCOUNT', QUEUED, '(' .. now_s, '+inf'),
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled)}
