-- The second half: apply a decision taken in Python, only if the job is still exactly as it was
-- read (compare-and-set); otherwise return 'conflict' and the caller reads again.
-- ARGV[3..]: id, token, outcome, error ('-'/'+'), traceback ('-'/'+'), retry ('1'/'0'), delay,
-- tries_used, exceptions, last_error, tries_used read, exceptions read, mode ('end'/'rescue',
-- or 'forget': an end already recorded once by its worker leaves no attempt fields unless the
-- job was cancelled meanwhile), cause ('' for none).
-- retry 'c': the job was cancelled while it ran; it ends cancelled (counters unchanged).
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'tries_used', 'exceptions',
  'lease_expires_at', 'seq', 'cur.started_at')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4])
    or num(f[3]) ~= tonumber(ARGV[13]) or num(f[4]) ~= tonumber(ARGV[14]) then
  return {'conflict'}
end
-- Rescue acts only on a lease that is still expired; heartbeats cannot revive one, but a
-- hand-edited lease could have moved.
if ARGV[15] == 'rescue' and (tonumber(f[5]) or 0) >= now then return {'conflict'} end
local seq = num(f[6])
local older = older_claim(f[7])
if ARGV[15] ~= 'forget' or ARGV[8] == 'c' then
  if older then close_older_claim(id, f[2]) end
  -- A rescued attempt crashed when its worker was last known alive: its last heartbeat (else
  -- its start), not now; the job's own timing (retry, finished_at) stays at now.
  local ended = now_s
  if ARGV[15] == 'rescue' then
    local p = attempt_fields(f[2])
    local a = redis.call('HMGET', jk, p.last_heartbeat_at, p.started_at)
    local at = a[1] or a[2]
    if at and tonumber(at) and tonumber(at) > 0 and tonumber(at) <= now then ended = at end
  end
  close_attempt(id, f[2], ended, ARGV[5], optional(ARGV[6]), optional(ARGV[7]), ARGV[16])
elseif not older then
  -- 'forget': the attempt leaves no trace in the history; its claim's fields go
  local p = attempt_fields(f[2])
  redis.call('HDEL', jk, p.worker_id, p.host, p.pid, p.started_at, p.last_heartbeat_at,
    p.memory_mb)
end
redis.call('ZREM', RUNNING, id)
-- Cancelled while it ran, or its batch was cancelled or has failed (a retry would be wasted
-- work): it ends cancelled; a retry is queued again; anything else ends failed.
local final = 'failed'
if ARGV[8] == 'c' or (ARGV[8] == '1' and batch_stops_new_work(jk)) then
  final = 'cancelled'
elseif ARGV[8] == '1' then
  local run_at = fmt(now + (tonumber(ARGV[9]) or 0))
  redis.call('HSET', jk, 'state', 'queued', 'run_at', run_at, 'tries_used', ARGV[10],
    'exceptions', ARGV[11], 'last_error', ARGV[12])
  redis.call('HDEL', jk, 'lease_expires_at', 'worker_id')
  add_queued(base, job_priority(jk), run_at, queued_member(seq, id))
  move_index(id, seq, 'running', 'queued')
  notify(1)
  release_slot(jk, id, now_s, now)
  return {'ok', 'queued', run_at, now_s}
end
redis.call('HSET', jk, 'state', final, 'finished_at', now_s, 'tries_used', ARGV[10],
  'exceptions', ARGV[11], 'last_error', ARGV[12])
redis.call('HDEL', jk, 'lease_expires_at')
move_index(id, seq, 'running', final)
batch_member_end(jk, id, final, now_s, now)
chain_link_end(jk, final, now_s, now)
release_slot(jk, id, now_s, now)
wake_waiters(id)
return {'ok', final, false, now_s}
