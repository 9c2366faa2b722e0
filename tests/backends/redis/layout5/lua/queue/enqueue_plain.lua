-- The enqueue of plain jobs: no guard, batch, chain, debounce, concurrency or fair key (the
-- client decides that once per job definition: its guards are the shared NO_GUARDS; see
-- RedisJobs._enqueue_jobs), so none of enqueue.lua's generic branches is walked, nor a field
-- past the ones below sent. ARGV[3..]: PLAIN_FIELDS per job: id, name, payload, policy, keep_s
-- and keep_f (seconds, '': kept forever), delay (seconds, '0': now), priority ('0': none); the
-- call's last group stops at its last field not at its default (database.trim_plain): the
-- usual dispatch of one job is eight arguments, not ten (each one a string and a table slot the
-- server makes, and past eight the ARGV table grows once more: issue 32).
-- Returns how many jobs were created: an id already there is not created twice (a client
-- retrying after a lost reply), and its id is the caller's own either way.
local now_s, now = clock()
local added = 0
for i = 3, #ARGV, PLAIN_FIELDS do
  local id = ARGV[i]
  local jk = job_key(id)
  if redis.call('EXISTS', jk) == 0 then
    local seq = redis.call('INCR', SEQ)
    -- the sequence as text made once (a number passed to redis.call is formatted each time)
    local seq_text = string.format('%d', seq)
    local delay = ARGV[i + 6] or '0'
    local run_at = (delay == '0' and now_s) or after(tonumber(delay) or 0)
    -- no attempt, tries_used nor exceptions of 0: every reader reads a missing one as 0
    local keep_s, keep_f, priority = ARGV[i + 4], ARGV[i + 5], ARGV[i + 7] or '0'
    if keep_s ~= '' and keep_f ~= '' and priority == '0' then  -- the usual job: one fixed write
      redis.call('HSET', jk, 'id', id, 'name', ARGV[i + 1], 'queue', queue_name,
        'payload', ARGV[i + 2], 'state', 'queued', 'policy', ARGV[i + 3], 'created_at', now_s,
        'run_at', run_at, 'seq', seq_text, 'keep_s', keep_s, 'keep_f', keep_f)
    else
      local fields = {'id', id, 'name', ARGV[i + 1], 'queue', queue_name, 'payload', ARGV[i + 2],
        'state', 'queued', 'policy', ARGV[i + 3], 'created_at', now_s, 'run_at', run_at,
        'seq', seq_text}
      if keep_s ~= '' then fields[#fields + 1] = 'keep_s'; fields[#fields + 1] = keep_s end
      if keep_f ~= '' then fields[#fields + 1] = 'keep_f'; fields[#fields + 1] = keep_f end
      if priority ~= '0' then fields[#fields + 1] = 'priority'; fields[#fields + 1] = priority end
      redis.call('HSET', jk, unpack(fields))
    end
    local member = string.format('%016d', seq) .. ':' .. id
    if priority == '0' then
      redis.call('ZADD', QUEUED, run_at, member)
    else
      add_queued(base, tonumber(priority), run_at, member)
    end
    added = added + 1
  end
end
-- Delayed jobs wake waiters too: a waiter re-reads the earliest run_at and sleeps until then.
notify(added)
return added
