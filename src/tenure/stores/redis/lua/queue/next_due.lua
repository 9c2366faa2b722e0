-- Read-only: the server's now and the earliest run_at still in the future, so an idle worker
-- sleeps exactly until a delayed job is due instead of polling for it.
local now_s, now = clock()
local first = redis.call('ZRANGEBYSCORE', QUEUED, '(' .. now_s, '+inf', 'WITHSCORES',
  'LIMIT', 0, 1)
return {now_s, first[2] or false}
