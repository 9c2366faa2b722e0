-- Reading and writing a batch's keys, in the same atomic step as the job change that
-- triggers it. A batch lives under the hash tag of its own queue (`BASE` = `PREFIX:{q:QUEUE}`):
--
--     BASE:batch:ID   hash  name, state, counts, `partial` (the running members' own progress,
--                           in millionths, so sums are exact), callbacks as `then.id`, ...
--     BASE:bopen:ID   hash  member job id -> that member's queue base, for members not settled
--
-- A member's job hash carries `batch_id` and `batch_base` (where its batch lives) and
-- `progress_u` (its own progress in millionths, the highest reported). Keys of other queues
-- (members or callbacks elsewhere) are built inside the scripts: fine on one server or
-- Sentinel, refused up front on Redis Cluster, where they would be in another slot.
local function batch_key(bbase, bid) return bbase .. ':batch:' .. bid end
-- Callbacks that a damaged batch record kept from being enqueued, {batch id, kind} each. The
-- script's reply carries them (scripts.py wraps every queue script in `with_lost_callbacks`)
-- and the client logs each one, as the SQL stores do: a lost callback is never silent.
-- (nil until the first one: most calls lose none, and a table made on every call was work)
local LOST_CALLBACKS
local function with_lost_callbacks(reply)
  if not LOST_CALLBACKS then return reply end
  return {LOST_CALLBACKS_MARK, LOST_CALLBACKS, reply}
end
-- A queue base read back from a record must be one of this store's: a damaged record must not
-- make a script write keys of another prefix (or no prefix at all).
-- The pattern of this store's bases, made on the first use in a call (most calls never ask,
-- and a match and a gsub on every call were server work for nothing).
local OUR_BASES
local function ours(qbase)
  if qbase == nil then return false end
  if not OUR_BASES then
    local prefix = string.match(base, '^(.*:){q:') or base
    OUR_BASES = '^' .. string.gsub(prefix, '%W', '%%%0') .. '{q:.*}$'
  end
  return string.find(qbase, OUR_BASES) ~= nil
end
local function open_key(bbase, bid) return bbase .. ':bopen:' .. bid end
-- every member, settled or not (id -> its queue base): what pruning the batch deletes
local function members_key(bbase, bid) return bbase .. ':bmembers:' .. bid end

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

-- Enqueue one job into any queue, given that queue's key base; 0 if its id is already there.
local function enqueue_at(qbase, qname, id, name, payload, policy, delay, now_s, now, keep,
    priority)
  local jk = qbase .. ':job:' .. id
  if redis.call('EXISTS', jk) == 1 then return 0 end
  -- Numbers go to redis.call as text made once: Redis formats a Lua number argument with
  -- sprintf on every use (issue 32: the server's CPU per job).
  local seq = tostring(redis.call('INCR', qbase .. ':seq'))
  -- now_s is now as text already (clock() formats it as fmt would)
  local run_at = delay > 0 and fmt(now + delay) or now_s
  local fields = {'id', id, 'name', name, 'queue', qname, 'payload', payload,
    'state', 'queued', 'policy', policy, 'created_at', now_s, 'run_at', run_at, 'attempt', '0',
    'tries_used', '0', 'exceptions', '0', 'seq', seq}
  -- keep: a callback's retention, "+S +F" as keep_args writes them (members go with the batch)
  local keep_s, keep_f = string.match(keep or '', '^(%S+) (%S+)$')
  keep_s, keep_f = keep_s and optional(keep_s), keep_f and optional(keep_f)
  if keep_s then fields[#fields + 1] = 'keep_s'; fields[#fields + 1] = keep_s end
  if keep_f then fields[#fields + 1] = 'keep_f'; fields[#fields + 1] = keep_f end
  priority = priority or 0
  if priority ~= 0 then fields[#fields + 1] = 'priority'; fields[#fields + 1] = priority end
  redis.call('HSET', jk, unpack(fields))  -- one write for the whole new job
  add_queued(qbase, priority, run_at, queued_member(seq, id))
  return 1
end

-- A callback's or later chain link's overlap and rate guards (codec.guard_fields: the job-hash
-- fields the reserve script reads), written on its new job hash as enqueue writes them on any
-- job's; anything else in `g`, or a value of the wrong type, is ignored. Absent: no guard.
local GUARD_FIELDS = {'overlap_key', 'overlap_delay', 'rate_key', 'rate_limit', 'rate_window',
  'concurrency_key', 'concurrency_limit'}
local function set_guards(jk, g)
  if type(g) ~= 'table' then return end
  if type(g.overlap_key) == 'string' then
    redis.call('HSET', jk, 'overlap_key', g.overlap_key,
      'overlap_delay', tostring(tonumber(g.overlap_delay) or 1))
  end
  local limit, window = tonumber(g.rate_limit), tonumber(g.rate_window)
  if type(g.rate_key) == 'string' and limit and window and window > 0 then
    redis.call('HSET', jk, 'rate_key', g.rate_key, 'rate_limit', tostring(limit),
      'rate_window', tostring(window))
  end
  local slots = tonumber(g.concurrency_limit)
  if type(g.concurrency_key) == 'string' and slots and slots >= 1 then
    redis.call('HSET', jk, 'concurrency_key', g.concurrency_key,
      'concurrency_limit', tostring(math.floor(slots)))
  end
end

-- ARGV from `first` on: groups of (base, queue, id, name, payload, policy, delay, guards);
-- guards is '' or a JSON object of the job-hash fields the overlap and rate checks read
-- (guards.member_guards), so members are deferred like any job. Returns the ids added, in
-- order: an id already present is skipped.
local function b_add_members(bbase, bid, c, first, now_s, now)
  local ok = open_key(bbase, bid)
  local added, per_queue = {}, {}
  for i = first, #ARGV, MEMBER_FIELDS do
    local qbase, id = ARGV[i], ARGV[i + 2]
    local fields = {}
    if ARGV[i + 7] ~= '' then fields = cjson.decode(ARGV[i + 7]) end
    if enqueue_at(qbase, ARGV[i + 1], id, ARGV[i + 3], ARGV[i + 4], ARGV[i + 5],
        tonumber(ARGV[i + 6]) or 0, now_s, now, nil, tonumber(fields.priority) or 0) == 1 then
      redis.call('HSET', qbase .. ':job:' .. id, 'batch_id', bid, 'batch_base', bbase)
      for field, value in pairs(fields) do
        redis.call('HSET', qbase .. ':job:' .. id, field, tostring(value))
      end
      redis.call('HSET', ok, id, qbase)
      -- the member list: what `list_jobs(batch_id=)` reads and pruning the batch deletes
      redis.call('HSET', members_key(bbase, bid), id, qbase)
      per_queue[qbase] = (per_queue[qbase] or 0) + 1
      added[#added + 1] = id
    end
  end
  for qbase, n in pairs(per_queue) do notify_at(qbase, n) end
  c.jobs = c.jobs + #added
  return added
end

-- A queued member cancelled with its batch: a chain link's chain stops (lib/chain_io.lua
-- sets this once it is defined; a forward declaration, as the two files call each other).
local on_member_cancelled = function(jk, now_s) end
-- its concurrency slot's bookkeeping, set by guards.lua
local on_member_unqueued = function(jk, now_s) end

-- Cancel every member still queued (scheduled ones too); running members finish on their own.
local function b_cancel_queued(bbase, bid, c, now_s)
  local ok = open_key(bbase, bid)
  local open = redis.call('HGETALL', ok)
  local n = 0
  for i = 1, #open, 2 do
    local id, qbase = open[i], open[i + 1]
    local f = {}
    if ours(qbase) then
      f = redis.call('HMGET', qbase .. ':job:' .. id, 'state', 'seq', 'progress_u', 'priority')
    end
    if f[1] == 'queued' or not f[1] then
      if f[1] then
        local seq = num(f[2])
        redis.call('HSET', qbase .. ':job:' .. id, 'state', 'cancelled', 'finished_at', now_s)
        redis.call('ZREM', queued_key(qbase, tonumber(f[4]) or 0), queued_member(seq, id))
        redis.call('ZADD', qbase .. ':idx:cancelled', seq, id)
        on_member_cancelled(qbase .. ':job:' .. id, now_s)
        on_member_unqueued(qbase .. ':job:' .. id, now_s)
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
    kind .. '.name', kind .. '.payload', kind .. '.policy', kind .. '.delay', kind .. '.keep',
    kind .. '.guards')
  if not (f[1] and f[1] ~= '' and ours(f[2]) and f[3]) then
    for i = 1, CALLBACK_FIELDS do  -- no field at all: the batch has no such callback
      if f[i] then
        LOST_CALLBACKS = LOST_CALLBACKS or {}
        LOST_CALLBACKS[#LOST_CALLBACKS + 1] = {bid, kind}
        break
      end
    end
    return
  end
  local added = enqueue_at(f[2], f[3], f[1], f[4] or '', f[5] or '', f[6] or '',
    tonumber(f[7]) or 0, now_s, now, f[8])
  if added == 1 and f[9] and f[9] ~= '' then
    local ok, g = pcall(cjson.decode, f[9])  -- written before callbacks kept guards: none
    if ok then set_guards(f[2] .. ':job:' .. f[1], g) end
  end
  notify_at(f[2], added)
  redis.call('HSET', bk, kind .. '_job_id', f[1])
end

-- A settled batch is entered in its queue's `ended_batches`, scored by when it may be pruned
-- with its members (queue/prune.lua); kept forever: no entry.
local function b_retire(bbase, bid, now)
  local f = redis.call('HMGET', batch_key(bbase, bid), 'state', 'keep_s', 'keep_f')
  local keep = tonumber(f[1] == 'succeeded' and f[2] or f[3])
  if keep then redis.call('ZADD', bbase .. ':ended_batches', 'NX', fmt(now + keep), bid) end
end

local function b_apply(bbase, bid, c, cbs, cancel, now_s, now)
  if cancel then b_queued_cancelled(c, b_cancel_queued(bbase, bid, c, now_s), cbs) end
  b_save(batch_key(bbase, bid), c, now_s)
  if c.finished then b_retire(bbase, bid, now) end
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
