-- KEYS[1]: queue registry set. ARGV: queue names.
return redis.call('SADD', KEYS[1], unpack(ARGV))
