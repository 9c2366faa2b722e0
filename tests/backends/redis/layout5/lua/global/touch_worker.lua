-- KEYS[1]: worker hash. ARGV[1]: the field to stamp with now (last_seen_at or stopped_at).
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local now_s = clock()
redis.call('HSET', KEYS[1], ARGV[1], now_s)
return now_s
