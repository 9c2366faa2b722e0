-- ARGV[3]: '1' pause, '0' resume. A paused queue's reserve hands out nothing. Returns the time.
local now_s = clock()
-- (the flag is a member of PRIORITIES, see the prelude)
if ARGV[3] == '1' then
  redis.call('ZADD', PRIORITIES, '-inf', PAUSED_MEMBER)
elseif redis.call('ZREM', PRIORITIES, PAUSED_MEMBER) == 1 then
  notify(NOTIFY_MAX)
end
return now_s
