-- KEYS[1]: control hash.
local now_s = clock()
redis.call('HSET', KEYS[1], 'restart_at', now_s)
return now_s
