"""The Lua behind the Redis store's batches: the rules of `tenure.batch`, ported, and the scripts
that apply them in the same atomic step as the job change that triggers them.

`BATCH_RULES` is pure (tables in, tables out, no Redis calls), a line-by-line port of
`tenure.batch.member_ended`, `member_retried`, `cancelled_by_user`, `queued_members_cancelled`
and `settle`;
tests/test_redis_batches.py runs it against the Python rules over every reachable state, so
the two cannot drift apart silently. `BATCH_IO` reads and writes a batch's keys. Both are
appended to the queue prelude, so `complete` and `end_apply` (in redis_lua.py) end a member and
do its batch's bookkeeping (counts, cancelling queued members, enqueuing callbacks) in one
script.

A batch lives under the hash tag of its own queue (`BASE` = `PREFIX:{q:QUEUE}`):

    BASE:batch:ID   hash  name, state, counts, `partial` (the running members' own progress, in
                          millionths, so sums are exact), callbacks as `then.id`, `then.base`, ...
    BASE:bopen:ID   hash  member job id -> that member's queue base, for members not settled yet

A member's job hash carries `batch_id` and `batch_base` (where its batch lives) and `progress_u`
(its own progress in millionths, the highest reported). Keys of other queues (members or
callbacks elsewhere) are built inside the scripts: fine on one server or Sentinel, refused up
front on Redis Cluster, where they would be in another slot.
"""

from __future__ import annotations

CALLBACK_KINDS = ("then", "catch", "finally")
CALLBACK_FIELDS = ("id", "base", "queue", "name", "payload", "policy", "delay")
MEMBER_FIELDS = 8  # base, queue, id, name, payload, policy, delay, guards

BATCH_RULES = """
-- c: {state, jobs, done, failed, cancelled, allow, catch_sent, finished}; cbs: list to append to.
local function b_settle(c, cbs)
  if c.finished or (c.jobs - c.done - c.failed - c.cancelled) > 0 then return end
  if c.state == 'running' then
    if c.failed == 0 or c.allow then
      c.state = 'succeeded'
      cbs[#cbs + 1] = 'then'
    else
      c.state = 'failed'
    end
  end
  cbs[#cbs + 1] = 'finally'
  c.finished = true
end

-- Returns true when the members still queued must be cancelled.
local function b_member_ended(c, outcome, cbs)
  if outcome == 'succeeded' then c.done = c.done + 1
  elseif outcome == 'cancelled' then c.cancelled = c.cancelled + 1
  else c.failed = c.failed + 1 end
  local cancel = false
  if outcome == 'failed' and not c.catch_sent then
    cbs[#cbs + 1] = 'catch'
    c.catch_sent = true
    if not c.allow and c.state == 'running' then
      c.state = 'failed'
      cancel = true
    end
  end
  b_settle(c, cbs)
  return cancel
end

-- A failed member retried by hand; false (c untouched) once the batch no longer runs.
local function b_member_retried(c)
  if c.state ~= 'running' or c.finished then return false end
  c.failed = math.max(0, c.failed - 1)
  return true
end

local function b_cancelled_by_user(c)
  if c.state ~= 'running' then return false end
  c.state = 'cancelled'
  return true
end

local function b_queued_cancelled(c, n, cbs)
  c.cancelled = c.cancelled + n
  b_settle(c, cbs)
end
"""

BATCH_IO = """
local function batch_key(bbase, bid) return bbase .. ':batch:' .. bid end
-- A queue base read back from a record must be one of this store's: a damaged record must not
-- make a script write keys of another prefix (or no prefix at all).
local OUR_PREFIX = string.match(base, '^(.*:){q:') or base
local OUR_BASES = '^' .. string.gsub(OUR_PREFIX, '%W', '%%%0') .. '{q:.*}$'
local function ours(qbase) return qbase ~= nil and string.find(qbase, OUR_BASES) ~= nil end
local function open_key(bbase, bid) return bbase .. ':bopen:' .. bid end

-- nil when the batch is missing or too damaged to apply rules to (no state).
local function b_load(bk)
  local f = redis.call('HMGET', bk, 'state', 'jobs', 'done', 'failed', 'cancelled',
    'allow_failures', 'catch_sent', 'finished', 'partial')
  if not f[1] then return nil end
  return {state = f[1], jobs = num(f[2]), done = num(f[3]), failed = num(f[4]),
    cancelled = num(f[5]), allow = f[6] == '1', catch_sent = f[7] == '1',
    finished = f[8] == '1', partial = num(f[9])}
end

local function b_save(bk, c, now_s)
  redis.call('HSET', bk, 'state', c.state, 'jobs', c.jobs, 'done', c.done, 'failed', c.failed,
    'cancelled', c.cancelled, 'catch_sent', c.catch_sent and '1' or '0',
    'finished', c.finished and '1' or '0', 'partial', c.partial)
  if c.finished then redis.call('HSET', bk, 'finished_at', now_s) end
end

local function notify_at(qbase, n)
  if n < 1 then return end
  if n > NOTIFY_MAX then n = NOTIFY_MAX end
  local tokens = {}
  for i = 1, n do tokens[i] = '1' end
  redis.call('LPUSH', qbase .. ':notify', unpack(tokens))
  redis.call('LTRIM', qbase .. ':notify', 0, NOTIFY_MAX - 1)
end

-- Enqueue one job into any queue, given that queue's key base; 0 if its id is already there.
local function enqueue_at(qbase, qname, id, name, payload, policy, delay, now_s, now)
  local jk = qbase .. ':job:' .. id
  if redis.call('EXISTS', jk) == 1 then return 0 end
  local seq = redis.call('INCR', qbase .. ':seq')
  if delay < 0 then delay = 0 end
  local run_at = fmt(now + delay)
  redis.call('HSET', jk, 'id', id, 'name', name, 'queue', qname, 'payload', payload,
    'state', 'queued', 'policy', policy, 'created_at', now_s, 'run_at', run_at, 'attempt', 0,
    'tries_used', 0, 'exceptions', 0, 'seq', seq)
  redis.call('ZADD', qbase .. ':queued', run_at, queued_member(seq, id))
  redis.call('ZADD', qbase .. ':all', seq, id)
  redis.call('ZADD', qbase .. ':idx:queued', seq, id)
  return 1
end

-- ARGV from `first` on: groups of (base, queue, id, name, payload, policy, delay, guards);
-- guards is '' or a JSON object of the job-hash fields the overlap and rate checks read
-- (redis_guards.member_guards), so members are deferred like any job.
local function b_add_members(bbase, bid, c, first, now_s, now)
  local ok = open_key(bbase, bid)
  local added, per_queue = 0, {}
  for i = first, #ARGV, MEMBER_FIELDS do
    local qbase, id = ARGV[i], ARGV[i + 2]
    if enqueue_at(qbase, ARGV[i + 1], id, ARGV[i + 3], ARGV[i + 4], ARGV[i + 5],
        tonumber(ARGV[i + 6]) or 0, now_s, now) == 1 then
      redis.call('HSET', qbase .. ':job:' .. id, 'batch_id', bid, 'batch_base', bbase)
      if ARGV[i + 7] ~= '' then
        for field, value in pairs(cjson.decode(ARGV[i + 7])) do
          redis.call('HSET', qbase .. ':job:' .. id, field, tostring(value))
        end
      end
      redis.call('HSET', ok, id, qbase)
      per_queue[qbase] = (per_queue[qbase] or 0) + 1
      added = added + 1
    end
  end
  for qbase, n in pairs(per_queue) do notify_at(qbase, n) end
  c.jobs = c.jobs + added
  return added
end

-- Cancel every member still queued (scheduled ones too); running members finish on their own.
local function b_cancel_queued(bbase, bid, c, now_s)
  local ok = open_key(bbase, bid)
  local open = redis.call('HGETALL', ok)
  local n = 0
  for i = 1, #open, 2 do
    local id, qbase = open[i], open[i + 1]
    local f = {}
    if ours(qbase) then
      f = redis.call('HMGET', qbase .. ':job:' .. id, 'state', 'seq', 'progress_u')
    end
    if f[1] == 'queued' or not f[1] then
      if f[1] then
        local seq = num(f[2])
        redis.call('HSET', qbase .. ':job:' .. id, 'state', 'cancelled', 'finished_at', now_s)
        redis.call('ZREM', qbase .. ':queued', queued_member(seq, id))
        redis.call('ZREM', qbase .. ':idx:queued', id)
        redis.call('ZADD', qbase .. ':idx:cancelled', seq, id)
      end
      -- a member whose record vanished can never end: count it as cancelled with the rest
      redis.call('HDEL', ok, id)
      c.partial = c.partial - num(f[3])
      n = n + 1
    end
  end
  return n
end

local function b_enqueue_callback(bbase, bid, kind, now_s, now)
  local bk = batch_key(bbase, bid)
  local f = redis.call('HMGET', bk, kind .. '.id', kind .. '.base', kind .. '.queue',
    kind .. '.name', kind .. '.payload', kind .. '.policy', kind .. '.delay')
  if not (f[1] and f[1] ~= '' and ours(f[2]) and f[3]) then return end
  local added = enqueue_at(f[2], f[3], f[1], f[4] or '', f[5] or '', f[6] or '',
    tonumber(f[7]) or 0, now_s, now)
  notify_at(f[2], added)
  redis.call('HSET', bk, kind .. '_job_id', f[1])
end

local function b_apply(bbase, bid, c, cbs, cancel, now_s, now)
  if cancel then b_queued_cancelled(c, b_cancel_queued(bbase, bid, c, now_s), cbs) end
  b_save(batch_key(bbase, bid), c, now_s)
  for _, kind in ipairs(cbs) do b_enqueue_callback(bbase, bid, kind, now_s, now) end
end

-- The job behind `jk` reached a final state: count it in its batch, if it has one.
local function batch_member_end(jk, id, outcome, now_s, now)
  local f = redis.call('HMGET', jk, 'batch_id', 'batch_base', 'progress_u')
  if not (f[1] and ours(f[2])) then return end
  local bbase, bid = f[2], f[1]
  local c = b_load(batch_key(bbase, bid))
  if not c then return end
  if redis.call('HDEL', open_key(bbase, bid), id) == 1 then
    c.partial = c.partial - num(f[3])  -- its share becomes a whole settled member
  end
  local cbs = {}
  local cancel = b_member_ended(c, outcome, cbs)
  b_apply(bbase, bid, c, cbs, cancel, now_s, now)
end

-- A retry of this member would be wasted: its batch was cancelled or has failed.
local function batch_stops_new_work(jk)
  local f = redis.call('HMGET', jk, 'batch_id', 'batch_base')
  if not (f[1] and ours(f[2])) then return false end
  local state = redis.call('HGET', batch_key(f[2], f[1]), 'state')
  return state == 'cancelled' or state == 'failed'
end
"""


def batch_prelude(notify_max: int) -> str:
    """The batch functions, ready to follow the queue PRELUDE of redis_lua."""
    return (
        f"local NOTIFY_MAX, MEMBER_FIELDS = {notify_max}, {MEMBER_FIELDS}\n"
        + BATCH_RULES
        + BATCH_IO
    )


# ARGV[3]: batch id, [4]: name, [5]: declared total ('-' or '+N'), [6]: allow_failures (1/0),
# then for then/catch/finally: '1' + CALLBACK_FIELDS, or '0' + as many blanks; then members.
CREATE_BATCH = f"""
local now_s, now = clock()
local bid = ARGV[3]
local bk = batch_key(base, bid)
if redis.call('EXISTS', bk) == 1 then return {{'exists'}} end
redis.call('HSET', bk, 'id', bid, 'name', ARGV[4], 'state', 'running', 'jobs', 0, 'done', 0,
  'failed', 0, 'cancelled', 0, 'allow_failures', ARGV[6], 'catch_sent', '0', 'finished', '0',
  'partial', 0, 'created_at', now_s)
local declared = optional(ARGV[5])
if declared then redis.call('HSET', bk, 'declared_total', declared) end
local i = 7
for _, kind in ipairs({{'then', 'catch', 'finally'}}) do
  if ARGV[i] == '1' then
    redis.call('HSET', bk, kind .. '.id', ARGV[i + 1], kind .. '.base', ARGV[i + 2],
      kind .. '.queue', ARGV[i + 3], kind .. '.name', ARGV[i + 4], kind .. '.payload',
      ARGV[i + 5], kind .. '.policy', ARGV[i + 6], kind .. '.delay', ARGV[i + 7])
  end
  i = i + {1 + len(CALLBACK_FIELDS)}
end
local c = b_load(bk)
local added = b_add_members(base, bid, c, i, now_s, now)
-- A batch created empty is finished at once: then and finally still run, once.
local cbs = {{}}
b_settle(c, cbs)
b_apply(base, bid, c, cbs, false, now_s, now)
return {{'ok', added}}
"""

# ARGV[3]: batch id, then members. Returns how many were added; 0 once the batch stopped.
ADD_TO_BATCH = """
local now_s, now = clock()
local bid = ARGV[3]
local bk = batch_key(base, bid)
local c = b_load(bk)
if not c or c.state ~= 'running' or c.finished then return 0 end
local added = b_add_members(base, bid, c, 4, now_s, now)
b_save(bk, c, now_s)
return added
"""

# ARGV[3]: batch id. 1 if the batch was running and is now cancelled, else 0.
CANCEL_BATCH = """
local now_s, now = clock()
local bid = ARGV[3]
local c = b_load(batch_key(base, bid))
if not c or not b_cancelled_by_user(c) then return 0 end
b_apply(base, bid, c, {}, true, now_s, now)
return 1
"""

# ARGV[3]: job id, [4]: token, [5]: progress in millionths. Kept as the highest reported, and
# only while the attempt holding `token` runs.
REPORT_PROGRESS = """
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'progress_u', 'batch_id', 'batch_base')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then return 0 end
local old, new = num(f[3]), tonumber(ARGV[5]) or 0
if new <= old then return 0 end
redis.call('HSET', jk, 'progress_u', new)
if f[4] and ours(f[5]) and redis.call('HEXISTS', open_key(f[5], f[4]), id) == 1 then
  local bk = batch_key(f[5], f[4])
  if redis.call('EXISTS', bk) == 1 then
    redis.call('HSET', bk, 'partial', num(redis.call('HGET', bk, 'partial')) + new - old)
  end
end
return 1
"""

BATCH_SCRIPTS = {
    "create_batch": CREATE_BATCH,
    "add_to_batch": ADD_TO_BATCH,
    "cancel_batch": CANCEL_BATCH,
    "report_progress": REPORT_PROGRESS,
}

# Store-wide ({g}) registration, run before the batch's own script: the queues its members and
# callbacks use (so get_job and rescue find them), and where the batch lives, once.
# KEYS: queues set, batch id -> queue hash, batches zset, batch sequence.
# ARGV[1]: batch id, [2]: its queue, [3..]: queues to register. Returns the batch's queue (an
# existing batch keeps its own).
REGISTER_BATCH = """
if #ARGV > 2 then redis.call('SADD', KEYS[1], unpack(ARGV, 3)) end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[1])
end
return redis.call('HGET', KEYS[2], ARGV[1])
"""
