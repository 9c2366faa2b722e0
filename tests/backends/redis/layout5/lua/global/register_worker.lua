-- KEYS[1]: worker hash, KEYS[2]: workers zset. ARGV: id, host, pid, queues JSON, concurrency,
-- known job names JSON ('' when not reported).
local now_s = clock()
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'host', ARGV[2], 'pid', ARGV[3], 'queues', ARGV[4],
  'concurrency', ARGV[5], 'started_at', now_s, 'last_seen_at', now_s)
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'known', ARGV[6]) end
redis.call('ZADD', KEYS[2], now_s, ARGV[1])
return now_s
