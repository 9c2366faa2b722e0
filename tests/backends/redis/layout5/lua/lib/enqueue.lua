-- One job's enqueue, for every script that creates jobs from an ARGV group starting at `i`
-- (database.enqueue_args): the number n of fields sent, then the fields in the order of
-- scripts.ENQUEUE_ORDER (their positions: ENQ): id, name, payload, policy, delay, keep_s,
-- keep_f, priority, then the rare ones: batch_id, chain, unique_key, unique_until, unique_for,
-- overlap_key, overlap_delay, rate_key, rate_limit, rate_window, concurrency_key,
-- concurrency_limit, debounce_key, fair_key, fair_weight. The fields past n, each at its
-- default (ENQUEUE_DEFAULTS), are not sent: a plain job is 8 arguments instead of 23 (issue 32:
-- each one is server work). Optional ones travel as '-' or '+text'; keep_* '-': kept forever.
-- Returns the job's id, or the id of the job holding its unique key; 1 when a job was created
-- (0: deduplicated, or the id already exists, so a client retrying after a lost reply cannot
-- create the job twice); and where the next group starts. Included after the guards.
--
-- Field k of the group at `i` that sent n fields. (No table of a job's fields: every
-- allocation is work for Lua's collector, whose every cycle walks the whole library's heap.)
local function field(i, n, k)
  if k <= n then return ARGV[i + k] end
  return ENQUEUE_DEFAULTS[k]
end

local function enqueue_one(i, now_s, now)
  local n = tonumber(ARGV[i])
  local next_i = i + 1 + n
  local id = ARGV[i + 1]
  local ukey = optional(field(i, n, ENQ.unique_key))
  local holder = nil
  if ukey then holder = unique_holder(ukey, now) end
  if holder then return holder, 0, next_i end
  -- debounce: the key's pending job, still waiting for its time, takes these arguments and
  -- this run time (base:debounce maps a key to the job last created for it)
  local dkey = optional(field(i, n, ENQ.debounce_key))
  if dkey then
    local pending = redis.call('HGET', base .. ':debounce', dkey)
    local pk = pending and job_key(pending)
    local p = pending and redis.call('HMGET', pk, 'state', 'run_at', 'seq') or {}
    if p[1] == 'queued' and (tonumber(p[2]) or 0) > now then
      local run_at = fmt(now + math.max(tonumber(field(i, n, ENQ.delay)) or 0, 0))
      redis.call('HSET', pk, 'payload', field(i, n, ENQ.payload), 'run_at', run_at)
      add_queued(base, job_priority(pk), run_at, queued_member(num(p[3]), pending))
      return pending, 0, next_i
    end
  end
  -- taken at once: the next job of this call with the same key must see this one
  if ukey then take_unique(ukey, id, field(i, n, ENQ.unique_until), optional(field(i, n, ENQ.unique_for)), now) end
  -- the job itself, as any script enqueues one (batch_io.lua); 0: the id is already there
  if enqueue_at(base, queue_name, id, field(i, n, ENQ.name), field(i, n, ENQ.payload), field(i, n, ENQ.policy),
      tonumber(field(i, n, ENQ.delay)) or 0, now_s, now, field(i, n, ENQ.keep_s) .. ' ' .. field(i, n, ENQ.keep_f),
      tonumber(field(i, n, ENQ.priority)) or 0) == 0 then
    return id, 0, next_i
  end
  local jk = job_key(id)
  local batch_id = optional(field(i, n, ENQ.batch_id))
  if batch_id then redis.call('HSET', jk, 'batch_id', batch_id) end
  if ukey then redis.call('HSET', jk, 'unique_key', ukey) end
  local okey = optional(field(i, n, ENQ.overlap_key))
  if okey then
    redis.call('HSET', jk, 'overlap_key', okey, 'overlap_delay', field(i, n, ENQ.overlap_delay))
  end
  local rkey = optional(field(i, n, ENQ.rate_key))
  if rkey then
    redis.call('HSET', jk, 'rate_key', rkey, 'rate_limit', field(i, n, ENQ.rate_limit),
      'rate_window', field(i, n, ENQ.rate_window))
  end
  local chain = optional(field(i, n, ENQ.chain))
  if chain then redis.call('HSET', jk, 'chain', chain) end
  if dkey then
    redis.call('HSET', base .. ':debounce', dkey, id)
    redis.call('HSET', jk, 'debounce_key', dkey)
  end
  local fkey = optional(field(i, n, ENQ.fair_key))
  if fkey then place_fairly(jk, id, fkey, tonumber(field(i, n, ENQ.fair_weight)) or 1) end
  local ckey = optional(field(i, n, ENQ.concurrency_key))
  if ckey then
    redis.call('HSET', jk, 'concurrency_key', ckey, 'concurrency_limit', field(i, n, ENQ.concurrency_limit))
  end
  return id, 1, next_i
end
