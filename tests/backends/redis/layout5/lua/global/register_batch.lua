-- Store-wide ({g}) registration, run before the batch's own script: the queues its members and
-- callbacks use (so get_job and rescue find them), and where the batch lives, once.
-- KEYS: queues set, batch id -> queue hash, batches zset, batch sequence.
-- ARGV[1]: batch id, [2]: its queue, [3..]: queues to register. Returns the batch's queue (an
-- existing batch keeps its own).
if #ARGV > 2 then redis.call('SADD', KEYS[1], unpack(ARGV, 3)) end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[1])
end
return redis.call('HGET', KEYS[2], ARGV[1])
