-- The Redis store's Lua: every state change of a job is one script (queue/*.lua), run after
-- this prelude, the batch functions (batch_rules.lua, batch_io.lua) and the guard functions
-- (guards.lua). Python prepends the shared constants (NOTIFY_MAX, ...; see scripts.py).
--
-- A script runs atomically on the server, so the check ("does this worker still hold the
-- lease?") and the change it guards can never be split by another client: the same guarantee
-- SQLite's BEGIN IMMEDIATE and PostgreSQL's row locks give the other stores.
--
-- Every queue script receives the same KEYS (see `RedisDatabase._queue_keys`), under the
-- queue's hash tag, and ARGV[1] = the queue's key base (a job's hash is `base:job:ID`, built
-- inside the script because its id is only known there; it carries the same hash tag, so a
-- script never leaves its queue's Redis Cluster slot), ARGV[2] = queue name.
--
-- `complete` and `end_apply` count a batch member's end in its batch (and enqueue its
-- callbacks) in the same script that ends the job.
--
-- Times: `redis.call('TIME')` is the only clock. Times are stored as strings with six decimals
-- (`%.6f`); Lua's own `tostring` keeps only 14 significant digits, which would cut epoch
-- seconds to 0.1 ms and make a stored lease differ from the one compared against.
local base = ARGV[1]
local queue_name = ARGV[2]
-- A call declares one key, KEYS[1] = base:queued, which a cluster client routes it by (every key
-- a script touches carries the queue's hash tag, so all are in that slot); the queue's other
-- keys are named here from the base: each key sent costs the server more than naming it in Lua
-- (issue 32: about a thousand instructions an argument, against a few hundred a concatenation).
-- Those names are made once per queue base and kept, in a function library, across calls
-- (scripts.py keeps a `--#library` table; an EVALSHA script makes it afresh): a concatenation
-- per name per call was a tenth of the Lua work of a small call (issue 32). Bounded: a server
-- serving more queues than KEY_NAMES_MAX starts the table again.
local KEY_NAMES = {} --#library
local KEY_NAMES_MAX = 1000
local function key_names(b)
  local n = KEY_NAMES[b]
  if n == nil then
    if (KEY_NAMES.count or 0) >= KEY_NAMES_MAX then KEY_NAMES = {} end
    -- Finished jobs by sequence, one zset per final state (IDX): what lists them (newest
    -- first) and counts them reads. Queued and running jobs have no such index (layout 3):
    -- their own structures, QUEUED (and its priorities) and RUNNING, already hold each once.
    -- Nor is there an index of every job (layout 5): a listing of all states merges those
    -- (operations.py). `all` is named only to clean it: upgrade_listing.lua deletes layout
    -- 1-4's, and forget and prune take out what an older release's worker still adds to it
    -- during a rolling deploy.
    n = {running = b .. ':running', notify = b .. ':notify', seq = b .. ':seq', all = b .. ':all',
      idx = {succeeded = b .. ':idx:succeeded', failed = b .. ':idx:failed',
        cancelled = b .. ':idx:cancelled'},
      priorities = b .. ':priorities', ended = b .. ':ended', overlap = b .. ':overlap',
      conc_keys = b .. ':conc_keys', queued = b .. ':queued'}
    KEY_NAMES[b] = n
    KEY_NAMES.count = (KEY_NAMES.count or 0) + 1
  end
  return n
end
local NAMES = key_names(base)
local QUEUED, RUNNING, NOTIFY = KEYS[1], NAMES.running, NAMES.notify
local SEQ, ALL = NAMES.seq, NAMES.all
local IDX = NAMES.idx
-- The queue's reservation state (layout 3): a zset of the priorities that may hold queued jobs
-- (score N, queued_keys) and, while the queue is paused, the member PAUSED_MEMBER scored -inf,
-- so that reserve learns both from the one ZRANGE it needs anyway.
local PRIORITIES = NAMES.priorities
local PAUSED_MEMBER = 'paused' 
local FINAL = {succeeded = true, failed = true, cancelled = true}

-- Read once per script call (a script is atomic, so one instant serves all of it): the end
-- and the claim of complete_and_reserve share it, one TIME fewer per job.
local clock_text, clock_value, clock_whole, clock_micros
local function clock()
  if not clock_text then
    local t = redis.call('TIME')
    -- the microseconds zero-padded as text: no number made and formatted back (sprintf)
    local us = t[2]
    if #us < 6 then us = string.rep('0', 6 - #us) .. us end
    clock_text = t[1] .. '.' .. us
    -- `+ 0` parses the text once; tonumber parses a string twice (lua_isnumber, then
    -- lua_tonumber), and a parse of a clock's 17 digits is some 700 instructions (issue 32).
    -- TIME's reply is always digits, so the arithmetic cannot raise.
    clock_value = clock_text + 0
    -- the whole seconds as a number, for after(): floor is exact (a double holds the
    -- microseconds of any epoch second below 2^33 to well under half a microsecond)
    clock_whole, clock_micros = clock_value - clock_value % 1, us
  end
  return clock_text, clock_value
end
-- The number a text with few distinct values stands for (a lease, a limit, a retention's keep:
-- a handful per deployment), parsed once and kept in the library across calls (see
-- KEY_NAMES): a table lookup instead of tonumber's two parses per call. nil when not a number,
-- as tonumber says. Bounded as KEY_NAMES is; [0] counts the entries (no text is the number 0).
local NUMBERS = {} --#library
local function small_number(text)
  if not text then return nil end
  local n = NUMBERS[text]
  if n == nil then
    if (NUMBERS[0] or 0) >= KEY_NAMES_MAX then NUMBERS = {} end
    n = tonumber(text) or false
    NUMBERS[text] = n
    NUMBERS[0] = (NUMBERS[0] or 0) + 1
  end
  return n or nil
end
local function fmt(x) return string.format('%.6f', x) end
-- Now plus `seconds` (a number), as fmt(now + seconds) writes it. A whole number of seconds (a
-- lease, a retention: nearly always) is added to the clock's seconds and formatted as an
-- integer: '%.6f' of a float is the costliest formatting there is (issue 32), and the sum of a
-- whole number and the clock's microseconds is exact, so both texts are the same.
local function after(seconds)
  local _, now = clock()
  if seconds >= 0 and seconds < 1e9 and seconds % 1 == 0 then  -- (no math.floor: a C call)
    return string.format('%d', clock_whole + seconds) .. '.' .. clock_micros
  end
  return fmt(now + seconds)
end
local function num(x) return tonumber(x) or 0 end
local function job_key(id) return base .. ':job:' .. id end
-- Members of QUEUED are 'seq:id' so that jobs with the same run_at (one enqueue_many shares one
-- clock reading) come out in the order they were sent, as SQLite's rowid orders them.
local function queued_member(seq, id) return string.format('%016d', seq) .. ':' .. id end

-- Retention (see tenure.core.retention and queue/prune.lua): a finished job that is not a batch
-- member (members go with their batch) is entered here, scored by when it may be pruned
-- (finished_at + its keep_s or keep_f), by the same script that finishes it; a job that is
-- kept forever has no entry. prune.lua reads the due ones as a range of this set.
local ENDED = NAMES.ended
-- `known`: those four fields as the caller already read them (complete.lua), else read here.
local function retire(id, state, known)
  local f = known or redis.call('HMGET', job_key(id), 'batch_id', 'keep_s', 'keep_f',
    'finished_at')
  if f[1] then return end
  local keep = tonumber(state == 'succeeded' and f[2] or f[3])
  if not keep then return end
  -- the script's own clock as a number already (clock()): no second parse of its text
  local finished = (f[4] == clock_text and clock_value) or tonumber(f[4])
  if not finished then local _, now = clock(); finished = now end
  redis.call('ZADD', ENDED, fmt(finished + keep), id)
end

-- Every change of a job's state into or out of a final state moves it between the final
-- states' indexes here, and a job that reaches a final state is retired (or leaves ENDED when it
-- comes back: a retry). Queued and running have no index to move between (IDX).
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
-- Every queued zset of the queue `qbase`, lowest priority first, and whether it is paused.
-- The table returned is only read by the callers: the usual queue's (no priority but 0, not
-- paused) is made once per base and kept with its key names (a table fewer per reserve).
local function queued_keys(qbase)
  local names = key_names(qbase)
  local listed = redis.call('ZRANGE', names.priorities, '0', '-1')
  if #listed == 0 then
    local only = names.only_queued
    if not only then
      only = {names.queued}
      names.only_queued = only
    end
    return only, false
  end
  local out, zero_placed, paused = {}, false, false
  for _, p in ipairs(listed) do
    local n = tonumber(p)
    if p == PAUSED_MEMBER then paused = true end
    if n and n > 0 and not zero_placed then
      out[#out + 1] = names.queued
      zero_placed = true
    end
    if n and n ~= 0 then out[#out + 1] = queued_key(qbase, n) end
  end
  if not zero_placed then out[#out + 1] = names.queued end
  return out, paused
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

-- Whoever waits for this job's end (JobHandle.wait marks the job's field `waiter`, see
-- queue/wait_end.lua and RedisStore.wait_for_work) is woken by a token on `base:woken:ID`,
-- which it pops. `waiter`: the field as the caller read it with the rest of the job (so a job
-- nobody waits for costs complete.lua no command at all), nil to read it here.
local function wake_waiters(id, waiter)
  if waiter == nil then waiter = redis.call('HGET', job_key(id), 'waiter') end
  if waiter then
    local woken = base .. ':woken:' .. id
    redis.call('HDEL', job_key(id), 'waiter')
    redis.call('LPUSH', woken, '1')
    redis.call('EXPIRE', woken, ENDED_TOKEN_TTL_S)
  end
end

-- Fencing: a worker paused past its lease reports a result for an attempt someone else has
-- taken over. Nothing changes but a note on the attempt that produced the late result.
local function refuse(id, token, outcome, now_s)
  local ak = job_key(id)  -- its ended attempts are in the job's hash (layout 4)
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

-- The field names of attempt `n` (its number as text) in the job's hash ("N.outcome", ...),
-- made once per attempt number and kept in the library across calls (see KEY_NAMES): seven
-- concatenations per job fewer. Attempt numbers are few (a job's tries), so the table stays
-- small; bounded all the same.
local ATTEMPT_FIELDS = {} --#library
local function attempt_fields(n)
  local names = ATTEMPT_FIELDS[n]
  if names == nil then
    if (ATTEMPT_FIELDS.count or 0) >= KEY_NAMES_MAX then ATTEMPT_FIELDS = {} end
    local p = n .. '.'
    names = {ended_at = p .. 'ended_at', outcome = p .. 'outcome', worker_id = p .. 'worker_id',
      host = p .. 'host', pid = p .. 'pid', started_at = p .. 'started_at',
      last_heartbeat_at = p .. 'last_heartbeat_at', memory_mb = p .. 'memory_mb',
      cause = p .. 'cause', error = p .. 'error', traceback = p .. 'traceback'}
    ATTEMPT_FIELDS[n] = names
    ATTEMPT_FIELDS.count = (ATTEMPT_FIELDS.count or 0) + 1
  end
  return names
end

-- A running job's attempt lives in the job's own hash under its own fields, "N.worker_id",
-- "N.host", "N.pid", "N.started_at", "N.last_heartbeat_at" (and "N.memory_mb" once read),
-- written by its claim and renewed by the heartbeat (layout 5); its end adds "N.ended_at",
-- "N.outcome" and what else it has (close_attempt), so an end reads nothing of the attempt
-- and writes two fields of it (issue 32). Readers group the fields that start with a digit.
-- Layouts 3 and 4 kept the open attempt under the fields OPEN_FIELDS (ATTEMPT_NAMES[i] of the
-- attempt) until its end copied them: an older release's worker may still claim so during a
-- rolling deploy, marked by a non-empty cur.started_at (a layout-5 claim empties it); its
-- end, heartbeat and rescue read them there (close_older_claim; records.OPEN_ATTEMPT_FIELDS
-- is the reader's copy).
local OPEN_FIELDS = {'worker_id', 'cur.host', 'cur.pid', 'cur.started_at',
  'cur.last_heartbeat_at', 'cur.memory_mb'}
local ATTEMPT_NAMES = {'worker_id', 'host', 'pid', 'started_at', 'last_heartbeat_at',
  'memory_mb'}
-- The OPEN_FIELDS values of an HMGET reply `f` that asked for them from position `at` on.
local function open_at(f, at)
  return {f[at], f[at + 1], f[at + 2], f[at + 3], f[at + 4], f[at + 5]}
end
-- Whether a job's cur.started_at, as read, marks an attempt claimed in layout 3 or 4.
local function older_claim(started) return started ~= nil and started ~= false and started ~= '' end

-- An attempt an older release claimed (older_claim): its OPEN_FIELDS written as attempt `n`'s
-- own fields, as a layout-5 claim writes them, and the mark emptied, before its end is written.
local function close_older_claim(id, n)
  local jk = job_key(id)
  local open = redis.call('HMGET', jk, unpack(OPEN_FIELDS))
  local p = attempt_fields(n)
  local set = {'cur.started_at', ''}
  for i, name in ipairs(ATTEMPT_NAMES) do
    local v = open[i]
    if v and v ~= '' then set[#set + 1] = p[name]; set[#set + 1] = v end
  end
  redis.call('HSET', jk, unpack(set))
end

-- The end of attempt `n` (its number as text) in one HSET: when, how, and why (`cause`: who
-- ended its process, tenure.core.causes; `err`, `tb`: false when none). Its other fields are
-- there already (its claim's).
local function close_attempt(id, n, now_s, outcome, err, tb, cause)
  local p = attempt_fields(n)
  local set = {p.ended_at, now_s, p.outcome, outcome}
  if cause and cause ~= '' then set[#set + 1] = p.cause; set[#set + 1] = cause end
  if err then set[#set + 1] = p.error; set[#set + 1] = err end
  if tb then set[#set + 1] = p.traceback; set[#set + 1] = tb end
  redis.call('HSET', job_key(id), unpack(set))
end

-- Optional strings travel as '-' (none) or '+text'.
local function optional(x)
  if x == '-' then return false end  -- the usual none: no string.sub called
  if string.sub(x, 1, 1) == '+' then return string.sub(x, 2) end
  return false
end
