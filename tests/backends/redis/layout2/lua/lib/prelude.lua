-- The Redis store's Lua: every state change of a job is one script (queue/*.lua), run after
-- this prelude, the batch functions (batch_rules.lua, batch_io.lua) and the guard functions
-- (guards.lua). Python prepends the shared constants (NOTIFY_MAX, ...; see scripts.py).
--
-- A script runs atomically on the server, so the check ("does this worker still hold the
-- lease?") and the change it guards can never be split by another client: the same guarantee
-- SQLite's BEGIN IMMEDIATE and PostgreSQL's row locks give the other stores.
--
-- Every queue script receives the same KEYS (see `RedisDatabase._queue_keys`), all under the
-- queue's hash tag, and ARGV[1] = the queue's key base (job and attempt hashes are
-- `base:job:ID` and `base:att:ID`, built inside the script because their ids are only known
-- there; they carry the same hash tag, so a script never leaves its queue's Redis Cluster
-- slot), ARGV[2] = queue name.
--
-- `complete` and `end_apply` count a batch member's end in its batch (and enqueue its
-- callbacks) in the same script that ends the job.
--
-- Times: `redis.call('TIME')` is the only clock. Times are stored as strings with six decimals
-- (`%.6f`); Lua's own `tostring` keeps only 14 significant digits, which would cut epoch
-- seconds to 0.1 ms and make a stored lease differ from the one compared against.
local base = ARGV[1]
local queue_name = ARGV[2]
local QUEUED, RUNNING, NOTIFY, SEQ, ALL = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local IDX = {queued = KEYS[6], running = KEYS[7], succeeded = KEYS[8], failed = KEYS[9],
              cancelled = KEYS[10]}
-- Exists while the queue is paused (its value: when it was paused); reserve hands out nothing.
local PAUSED = KEYS[11]
local FINAL = {succeeded = true, failed = true, cancelled = true}

-- Read once per script call (a script is atomic, so one instant serves all of it): the end
-- and the claim of complete_and_reserve share it, one TIME fewer per job.
local clock_text, clock_value
local function clock()
  if not clock_text then
    local t = redis.call('TIME')
    clock_text = t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
    clock_value = tonumber(clock_text)
  end
  return clock_text, clock_value
end
local function fmt(x) return string.format('%.6f', x) end
local function num(x) return tonumber(x) or 0 end
local function job_key(id) return base .. ':job:' .. id end
local function att_key(id) return base .. ':att:' .. id end
-- Members of QUEUED are 'seq:id' so that jobs with the same run_at (one enqueue_many shares one
-- clock reading) come out in the order they were sent, as SQLite's rowid orders them.
local function queued_member(seq, id) return string.format('%016d', seq) .. ':' .. id end

-- Retention (see tenure.core.retention and queue/prune.lua): a finished job that is not a batch
-- member (members go with their batch) is entered here, scored by when it may be pruned
-- (finished_at + its keep_s or keep_f), by the same script that finishes it; a job that is
-- kept forever has no entry. prune.lua reads the due ones as a range of this set.
local ENDED = base .. ':ended'
-- `known`: those four fields as the caller already read them (complete.lua), else read here.
local function retire(id, state, known)
  local f = known or redis.call('HMGET', job_key(id), 'batch_id', 'keep_s', 'keep_f',
    'finished_at')
  if f[1] then return end
  local keep = tonumber(state == 'succeeded' and f[2] or f[3])
  if not keep then return end
  local finished = tonumber(f[4])
  if not finished then local _, now = clock(); finished = now end
  redis.call('ZADD', ENDED, fmt(finished + keep), id)
end

-- Every change of a job's state moves it between the state indexes here, and a job that
-- reaches a final state is retired (or leaves ENDED when it comes back: a retry).
-- A queue's queued jobs (ready and scheduled) are zsets by run_at, one per priority: `queued`
-- holds priority 0 (the only one before priorities existed, so older keys read the same),
-- `queued:pN` priority N, and `priorities` (score N) lists the other priorities that may hold
-- jobs. Reservation walks them lowest first: each is still a range query by run_at.
local function queued_key(qbase, priority)
  if priority == 0 then return qbase .. ':queued' end
  return qbase .. ':queued:p' .. priority
end
local function add_queued(qbase, priority, run_at, member)
  redis.call('ZADD', queued_key(qbase, priority), run_at, member)
  if priority ~= 0 then redis.call('ZADD', qbase .. ':priorities', priority, priority) end
end
local function job_priority(jk) return tonumber(redis.call('HGET', jk, 'priority')) or 0 end
-- Every queued zset of the queue `qbase`, lowest priority first.
local function queued_keys(qbase)
  local out, zero_placed = {}, false
  for _, p in ipairs(redis.call('ZRANGE', qbase .. ':priorities', 0, -1)) do
    local n = tonumber(p) or 0
    if n > 0 and not zero_placed then
      out[#out + 1] = qbase .. ':queued'
      zero_placed = true
    end
    if n ~= 0 then out[#out + 1] = queued_key(qbase, n) end
  end
  if not zero_placed then out[#out + 1] = qbase .. ':queued' end
  return out
end

local function move_index(id, seq, from, to, known)
  if from and IDX[from] then redis.call('ZREM', IDX[from], id) end
  if to and IDX[to] then redis.call('ZADD', IDX[to], seq, id) end
  if from and FINAL[from] then redis.call('ZREM', ENDED, id) end
  if to and FINAL[to] then retire(id, to, known) end
end

-- Wake up to `n` idle workers of the queue whose key base is `qbase` (this queue: notify).
local function notify_at(qbase, n)
  if n < 1 then return end
  -- topped up to NOTIFY_MAX tokens, never past it (all tokens are alike): a list already full,
  -- as it stays while no worker sleeps, costs one LLEN and no write
  local room = NOTIFY_MAX - redis.call('LLEN', qbase .. ':notify')
  if n > room then n = room end
  if n < 1 then return end
  local tokens = {}
  for i = 1, n do tokens[i] = '1' end
  redis.call('LPUSH', qbase .. ':notify', unpack(tokens))
end
local function notify(n) notify_at(base, n) end

-- Whoever waits for this job's end (JobHandle.wait sets `base:waiter:ID`, see
-- RedisStore.wait_for_work) is woken by a token on `base:woken:ID`, which it pops. A job
-- nobody waits for costs its end one EXISTS.
local function wake_waiters(id)
  local waiter = base .. ':waiter:' .. id
  if redis.call('EXISTS', waiter) == 1 then
    local woken = base .. ':woken:' .. id
    redis.call('DEL', waiter)
    redis.call('LPUSH', woken, '1')
    redis.call('EXPIRE', woken, ENDED_TOKEN_TTL_S)
  end
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
  return {'refused', f[1], f[2], now_s}
end

-- One HSET and at most one HDEL, whatever is set: every command a script runs costs the
-- server more than the fields it carries (issue 32).
local function close_attempt(id, n, now_s, outcome, err, tb, cause)
  local ak = att_key(id)
  local set = {n .. '.ended_at', now_s, n .. '.outcome', outcome}
  local gone = {}
  -- who ended its process (tenure.core.causes); kept when absent, as the SQL stores' coalesce
  if cause and cause ~= '' then set[#set + 1] = n .. '.cause'; set[#set + 1] = cause end
  if err then set[#set + 1] = n .. '.error'; set[#set + 1] = err
  else gone[#gone + 1] = n .. '.error' end
  if tb then set[#set + 1] = n .. '.traceback'; set[#set + 1] = tb
  else gone[#gone + 1] = n .. '.traceback' end
  redis.call('HSET', ak, unpack(set))
  if #gone > 0 then redis.call('HDEL', ak, unpack(gone)) end
end

-- Optional strings travel as '-' (none) or '+text'.
local function optional(x)
  if string.sub(x, 1, 1) == '+' then return string.sub(x, 2) end
  return false
end
