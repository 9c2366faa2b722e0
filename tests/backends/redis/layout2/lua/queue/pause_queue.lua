-- ARGV[3]: '1' pause, '0' resume. A paused queue's reserve hands out nothing. Returns the time.
local now_s = clock()
if ARGV[3] == '1' then
  redis.call('SETNX', PAUSED, now_s)
elseif redis.call('DEL', PAUSED) == 1 then
  notify(NOTIFY_MAX)
end
return now_s
