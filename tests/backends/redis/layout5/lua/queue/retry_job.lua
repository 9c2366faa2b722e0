-- ARGV[3]: job id.
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'seq', 'batch_id', 'batch_base', 'progress_u')
if f[1] ~= 'failed' then return 0 end
-- A member leaves its batch's failed count, so its next end is counted once, and is open
-- again (its own progress back in the batch's partial); a batch that no longer runs refuses.
if f[3] and ours(f[4]) then
  local bk = batch_key(f[4], f[3])
  local c = b_load(bk)
  if c then
    if not b_member_retried(c) then return 0 end
    c.partial = c.partial + num(f[5])
    b_save(bk, c, now_s)
    redis.call('HSET', open_key(f[4], f[3]), id, base)
  end
end
local seq = num(f[2])
redis.call('HSET', jk, 'state', 'queued', 'run_at', now_s, 'tries_used', 0, 'exceptions', 0)
redis.call('HDEL', jk, 'finished_at')
add_queued(base, job_priority(jk), now_s, queued_member(seq, id))
move_index(id, seq, 'failed', 'queued')
notify(1)
return 1
