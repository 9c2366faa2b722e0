-- ARGV[3]: job id.
local id = ARGV[3]
local state = redis.call('HGET', job_key(id), 'state')
if not (state and FINAL[state]) then return 0 end
forget_guards(id, redis.call('HMGET', job_key(id), 'unique_key', 'overlap_key'))
redis.call('DEL', job_key(id), att_key(id))
move_index(id, 0, state, nil)
redis.call('ZREM', ALL, id)
return 1
