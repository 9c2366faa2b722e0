-- A worker's heartbeat, its store-wide part. KEYS[1]: worker hash, KEYS[2]: control hash.
-- Stamps last_seen_at (if the worker is registered) and returns the latest restart request.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'last_seen_at', clock())
end
return redis.call('HGET', KEYS[2], 'restart_at')
