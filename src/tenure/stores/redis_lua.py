"""The Lua scripts behind the Redis store: every state change of a job is one of these.

A script runs atomically on the server, so the check ("does this worker still hold the lease?")
and the change it guards can never be split by another client: the same guarantee SQLite's
BEGIN IMMEDIATE and PostgreSQL's row locks give the other stores.

Every queue script receives the same KEYS (see `RedisStore._queue_keys`), all under the queue's
hash tag, and ARGV[1] = the queue's key base (job and attempt hashes are `base:job:ID` and
`base:att:ID`, built inside the script because their ids are only known there; they carry the
same hash tag, so a script never leaves its queue's Redis Cluster slot), ARGV[2] = queue name.

Every queue script also carries the batch functions of redis_batch_lua.py: `complete` and
`end_apply` count a batch member's end in its batch (and enqueue its callbacks) in the same
script that ends the job.

Times: `redis.call('TIME')` is the only clock. Times are stored as strings with six decimals
(`%.6f`); Lua's own `tostring` keeps only 14 significant digits, which would cut epoch seconds
to 0.1 ms and make a stored lease differ from the one compared against.
"""

from __future__ import annotations

# Kept small: a burst of 10,000 jobs must not leave 10,000 wake-ups behind for idle workers to
# chew through one by one; 32 is enough to wake every idle worker of a typical deployment.
NOTIFY_MAX = 32

PRELUDE = f"""
local base = ARGV[1]
local queue_name = ARGV[2]
local QUEUED, RUNNING, NOTIFY, SEQ, ALL = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local IDX = {{queued = KEYS[6], running = KEYS[7], succeeded = KEYS[8], failed = KEYS[9],
              cancelled = KEYS[10]}}
local FINAL = {{succeeded = true, failed = true, cancelled = true}}

local function clock()
  local t = redis.call('TIME')
  local text = t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
  return text, tonumber(text)
end
local function fmt(x) return string.format('%.6f', x) end
local function num(x) return tonumber(x) or 0 end
local function job_key(id) return base .. ':job:' .. id end
local function att_key(id) return base .. ':att:' .. id end
-- Members of QUEUED are 'seq:id' so that jobs with the same run_at (one enqueue_many shares one
-- clock reading) come out in the order they were sent, as SQLite's rowid orders them.
local function queued_member(seq, id) return string.format('%016d', seq) .. ':' .. id end

local function move_index(id, seq, from, to)
  if from and IDX[from] then redis.call('ZREM', IDX[from], id) end
  if to and IDX[to] then redis.call('ZADD', IDX[to], seq, id) end
end

local function notify(n)
  if n < 1 then return end
  if n > {NOTIFY_MAX} then n = {NOTIFY_MAX} end
  local tokens = {{}}
  for i = 1, n do tokens[i] = '1' end
  redis.call('LPUSH', NOTIFY, unpack(tokens))
  redis.call('LTRIM', NOTIFY, 0, {NOTIFY_MAX - 1})
end

-- Fencing: a worker paused past its lease reports a result for an attempt someone else has
-- taken over. Nothing changes but a note on the attempt that produced the late result.
local function refuse(id, token, outcome, now_s)
  local ak = att_key(id)
  local n = tonumber(token)
  if n and redis.call('HEXISTS', ak, n .. '.started_at') == 1 then
    local previous = redis.call('HGET', ak, n .. '.outcome')
    if (not previous) or previous == 'crashed' then
      local note = "its worker reported '" .. outcome .. "' after the lease had been taken "
        .. "over; the late result was refused (fencing)"
      local err = redis.call('HGET', ak, n .. '.error')
      if err then note = err .. '; ' .. note end
      redis.call('HSET', ak, n .. '.outcome', 'lost_lease', n .. '.error', note)
    end
  end
  local f = redis.call('HMGET', job_key(id), 'state', 'run_at')
  return {{'refused', f[1], f[2], now_s}}
end

local function close_attempt(id, n, now_s, outcome, err, tb)
  local ak = att_key(id)
  redis.call('HSET', ak, n .. '.ended_at', now_s, n .. '.outcome', outcome)
  if err then redis.call('HSET', ak, n .. '.error', err)
  else redis.call('HDEL', ak, n .. '.error') end
  if tb then redis.call('HSET', ak, n .. '.traceback', tb)
  else redis.call('HDEL', ak, n .. '.traceback') end
end

-- Optional strings travel as '-' (none) or '+text'.
local function optional(x)
  if string.sub(x, 1, 1) == '+' then return string.sub(x, 2) end
  return false
end
"""

# ENQUEUE and RESERVE, which check the guards, live in redis_guard_lua.py.

# ARGV[3]: lease seconds; ARGV[4..]: pairs (job id, token). Returns the ids whose lease is lost.
HEARTBEAT = """
local now_s, now = clock()
local lease = tonumber(ARGV[3])
local lost = {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'state', 'attempt', 'lease_expires_at')
  local n = tonumber(f[2])
  -- An expired lease is not renewed even if nobody rescued it yet: rescue_expired may be
  -- deciding about it right now, and a lease must not come back to life.
  if f[1] == 'running' and n ~= nil and n == tonumber(ARGV[i + 1])
      and (tonumber(f[3]) or -1) >= now then
    local expires = fmt(now + lease)
    redis.call('HSET', jk, 'lease_expires_at', expires)
    redis.call('ZADD', RUNNING, expires, id)
    redis.call('HSET', att_key(id), n .. '.last_heartbeat_at', now_s)
  else
    lost[#lost + 1] = id
  end
end
return lost
"""

# ARGV[3]: job id, ARGV[4]: token.
COMPLETE = """
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'seq', 'tries_used')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then
  return refuse(id, ARGV[4], 'succeeded', now_s)
end
redis.call('HSET', jk, 'state', 'succeeded', 'finished_at', now_s, 'tries_used', num(f[4]) + 1)
redis.call('HDEL', jk, 'lease_expires_at')
redis.call('ZREM', RUNNING, id)
move_index(id, num(f[3]), 'running', 'succeeded')
close_attempt(id, n, now_s, 'succeeded', false, false)
batch_member_end(jk, id, 'succeeded', now_s, now)
return {'ok', 'succeeded'}
"""

# The first half of end_attempt: refuse a stale token at once, or return what the retry
# decision (pure Python, tenure.retry.decide) needs. ARGV[3]: job id, [4]: token, [5]: outcome.
END_READ = """
local now_s, now = clock()
local id = ARGV[3]
local f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'policy', 'tries_used',
  'exceptions')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then
  return refuse(id, ARGV[4], ARGV[5], now_s)
end
return {'running', now_s, f[3] or '', tostring(num(f[4])), tostring(num(f[5]))}
"""

# The second half: apply a decision taken in Python, only if the job is still exactly as it was
# read (compare-and-set); otherwise return 'conflict' and the caller reads again.
# ARGV[3..]: id, token, outcome, error ('-'/'+'), traceback ('-'/'+'), retry ('1'/'0'), delay,
# tries_used, exceptions, last_error, tries_used read, exceptions read, mode ('end'/'rescue').
END_APPLY = """
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'tries_used', 'exceptions',
  'lease_expires_at', 'seq')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4])
    or num(f[3]) ~= tonumber(ARGV[13]) or num(f[4]) ~= tonumber(ARGV[14]) then
  return {'conflict'}
end
-- Rescue acts only on a lease that is still expired; heartbeats cannot revive one, but a
-- hand-edited lease could have moved.
if ARGV[15] == 'rescue' and (tonumber(f[5]) or 0) >= now then return {'conflict'} end
local seq = num(f[6])
close_attempt(id, n, now_s, ARGV[5], optional(ARGV[6]), optional(ARGV[7]))
redis.call('ZREM', RUNNING, id)
if ARGV[8] == '1' and batch_stops_new_work(jk) then
  -- Its batch was cancelled or has failed: the retry would be wasted work.
  redis.call('HSET', jk, 'state', 'cancelled', 'finished_at', now_s, 'tries_used', ARGV[10],
    'exceptions', ARGV[11], 'last_error', ARGV[12])
  redis.call('HDEL', jk, 'lease_expires_at')
  move_index(id, seq, 'running', 'cancelled')
  batch_member_end(jk, id, 'cancelled', now_s, now)
  return {'ok', 'cancelled', false, now_s}
end
if ARGV[8] == '1' then
  local run_at = fmt(now + (tonumber(ARGV[9]) or 0))
  redis.call('HSET', jk, 'state', 'queued', 'run_at', run_at, 'tries_used', ARGV[10],
    'exceptions', ARGV[11], 'last_error', ARGV[12])
  redis.call('HDEL', jk, 'lease_expires_at', 'worker_id')
  redis.call('ZADD', QUEUED, run_at, queued_member(seq, id))
  move_index(id, seq, 'running', 'queued')
  notify(1)
  return {'ok', 'queued', run_at, now_s}
end
redis.call('HSET', jk, 'state', 'failed', 'finished_at', now_s, 'tries_used', ARGV[10],
  'exceptions', ARGV[11], 'last_error', ARGV[12])
redis.call('HDEL', jk, 'lease_expires_at')
move_index(id, seq, 'running', 'failed')
batch_member_end(jk, id, 'failed', now_s, now)
return {'ok', 'failed', false, now_s}
"""

ATTEMPT_FIELDS = ("worker_id", "host", "pid", "started_at", "last_heartbeat_at")

# Jobs whose lease expired before now, with what describe_crash and decide need.
# ARGV[3]: how many at most. Each entry: id, attempt, lease_expires_at, policy, tries_used,
# exceptions, then the attempt's ATTEMPT_FIELDS.
RESCUE_READ = """
local now_s, now = clock()
local out = {now_s}
local ids = redis.call('ZRANGEBYSCORE', RUNNING, '-inf', '(' .. now_s, 'LIMIT', 0,
  tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'lease_expires_at', 'policy',
    'tries_used', 'exceptions')
  if f[1] ~= 'running' then
    -- RUNNING mirrors state = running; an entry without a running job is a leftover.
    redis.call('ZREM', RUNNING, id)
  elseif (tonumber(f[3]) or 0) >= now then
    -- The set's score disagrees with the job's lease (hand-edited): trust the job.
    redis.call('ZADD', RUNNING, fmt(tonumber(f[3])), id)
  else
    local n = num(f[2])
    local a = redis.call('HMGET', att_key(id), n .. '.worker_id', n .. '.host', n .. '.pid',
      n .. '.started_at', n .. '.last_heartbeat_at')
    out[#out + 1] = {id, tostring(n), f[3] or '0', f[4] or '', tostring(num(f[5])),
      tostring(num(f[6])), a[1], a[2], a[3], a[4], a[5]}
  end
end
return out
"""

# ARGV[3]: job id.
RETRY_JOB = """
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
redis.call('ZADD', QUEUED, now_s, queued_member(seq, id))
move_index(id, seq, 'failed', 'queued')
notify(1)
return 1
"""

# ARGV[3]: job id.
FORGET_JOB = """
local id = ARGV[3]
local state = redis.call('HGET', job_key(id), 'state')
if not (state and FINAL[state]) then return 0 end
forget_guards(id, redis.call('HMGET', job_key(id), 'unique_key', 'overlap_key'))
redis.call('DEL', job_key(id), att_key(id))
move_index(id, 0, state, nil)
redis.call('ZREM', ALL, id)
return 1
"""

# Read-only: one consistent count of a queue at the server's now.
COUNTS = """
local now_s, now = clock()
return {now_s,
  redis.call('ZCOUNT', QUEUED, '-inf', now_s),
  redis.call('ZCOUNT', QUEUED, '(' .. now_s, '+inf'),
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled)}
"""

# Read-only: the server's now and the earliest run_at still in the future, so an idle worker
# sleeps exactly until a delayed job is due instead of polling for it.
NEXT_DUE = """
local now_s, now = clock()
local first = redis.call('ZRANGEBYSCORE', QUEUED, '(' .. now_s, '+inf', 'WITHSCORES',
  'LIMIT', 0, 1)
return {now_s, first[2] or false}
"""

QUEUE_SCRIPTS = {
    "heartbeat": HEARTBEAT,
    "complete": COMPLETE,
    "end_read": END_READ,
    "end_apply": END_APPLY,
    "rescue_read": RESCUE_READ,
    "retry_job": RETRY_JOB,
    "forget_job": FORGET_JOB,
    "counts": COUNTS,
    "next_due": NEXT_DUE,
}

# Scripts on the store-wide keys (tag {g}): the queue registry, workers, control flags.
GLOBAL_PRELUDE = """
local function clock()
  local t = redis.call('TIME')
  return t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
end
"""

# KEYS[1]: queue registry set. ARGV: queue names.
REGISTER_QUEUES = "return redis.call('SADD', KEYS[1], unpack(ARGV))"

# KEYS[1]: worker hash, KEYS[2]: workers zset. ARGV: id, host, pid, queues JSON, concurrency.
REGISTER_WORKER = """
local now_s = clock()
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'host', ARGV[2], 'pid', ARGV[3], 'queues', ARGV[4],
  'concurrency', ARGV[5], 'started_at', now_s, 'last_seen_at', now_s)
redis.call('ZADD', KEYS[2], now_s, ARGV[1])
return now_s
"""

# KEYS[1]: worker hash. ARGV[1]: the field to stamp with now (last_seen_at or stopped_at).
TOUCH_WORKER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local now_s = clock()
redis.call('HSET', KEYS[1], ARGV[1], now_s)
return now_s
"""

# KEYS[1]: control hash.
REQUEST_RESTART = """
local now_s = clock()
redis.call('HSET', KEYS[1], 'restart_at', now_s)
return now_s
"""

GLOBAL_SCRIPTS = {
    "register_queues": REGISTER_QUEUES,
    "register_worker": REGISTER_WORKER,
    "touch_worker": TOUCH_WORKER,
    "request_restart": REQUEST_RESTART,
}
