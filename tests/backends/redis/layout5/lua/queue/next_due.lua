-- Read-only: the server's now and the earliest run_at still in the future (over every
-- priority's zset), so an idle worker sleeps exactly until a delayed job is due instead of
-- polling for it.
local now_s, now = clock()
local due = false
for _, key in ipairs(queued_keys(base)) do
  local first = redis.call('ZRANGEBYSCORE', key, '(' .. now_s, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] and ((not due) or tonumber(first[2]) < tonumber(due)) then due = first[2] end
end
return {now_s, due}
