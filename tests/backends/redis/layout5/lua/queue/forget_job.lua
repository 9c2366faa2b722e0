-- ARGV[3]: job id.
local id = ARGV[3]
local state = redis.call('HGET', job_key(id), 'state')
if not (state and FINAL[state]) then return 0 end
forget_guards(id, redis.call('HMGET', job_key(id), 'unique_key', 'overlap_key'))
-- its attempts with it (layout 4), and any an older release's worker ended into `att:ID` after
-- the upgrade (a rolling deploy: operations._read_job shows them)
redis.call('DEL', job_key(id), base .. ':att:' .. id)
move_index(id, 0, state, nil)
-- (layouts 1-4's index of every job: an older release's worker may still add to it)
redis.call('ZREM', ALL, id)
return 1
