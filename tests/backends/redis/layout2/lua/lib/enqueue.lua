-- One job's enqueue, for every script that creates jobs from an ARGV group of ENQUEUE_FIELDS
-- starting at `i`: id, name, payload, policy, delay, batch_id, unique_key, unique_until,
-- unique_for, overlap_key, overlap_delay, rate_key, rate_limit, rate_window, keep_s, keep_f,
-- priority, chain, concurrency_key, concurrency_limit, debounce_key, fair_key, fair_weight
-- (optional ones as '-' or '+text'; keep_* absent: kept forever). Returns the job's id, or the id of the job holding its unique key, and 1
-- when a job was created (0: deduplicated, or the id already exists, so a client retrying
-- after a lost reply cannot create the job twice). Included after the guards (guards.lua).
local function enqueue_one(i, now_s, now)
  local id = ARGV[i]
  local ukey = optional(ARGV[i + 6])
  local holder = nil
  if ukey then holder = unique_holder(ukey, now) end
  if holder then return holder, 0 end
  -- debounce: the key's pending job, still waiting for its time, takes these arguments and
  -- this run time (base:debounce maps a key to the job last created for it)
  local dkey = optional(ARGV[i + 20] or '-')
  if dkey then
    local pending = redis.call('HGET', base .. ':debounce', dkey)
    local pk = pending and job_key(pending)
    local p = pending and redis.call('HMGET', pk, 'state', 'run_at', 'seq') or {}
    if p[1] == 'queued' and (tonumber(p[2]) or 0) > now then
      local run_at = fmt(now + math.max(tonumber(ARGV[i + 4]) or 0, 0))
      redis.call('HSET', pk, 'payload', ARGV[i + 2], 'run_at', run_at)
      add_queued(base, job_priority(pk), run_at, queued_member(num(p[3]), pending))
      return pending, 0
    end
  end
  -- taken at once: the next job of this call with the same key must see this one
  if ukey then take_unique(ukey, id, ARGV[i + 7], optional(ARGV[i + 8]), now) end
  -- the job itself, as any script enqueues one (batch_io.lua); 0: the id is already there
  if enqueue_at(base, queue_name, id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3],
      tonumber(ARGV[i + 4]) or 0, now_s, now, ARGV[i + 14] .. ' ' .. ARGV[i + 15],
      tonumber(ARGV[i + 16]) or 0) == 0 then
    return id, 0
  end
  local jk = job_key(id)
  local batch_id = optional(ARGV[i + 5])
  if batch_id then redis.call('HSET', jk, 'batch_id', batch_id) end
  if ukey then redis.call('HSET', jk, 'unique_key', ukey) end
  local okey = optional(ARGV[i + 9])
  if okey then
    redis.call('HSET', jk, 'overlap_key', okey, 'overlap_delay', ARGV[i + 10])
  end
  local rkey = optional(ARGV[i + 11])
  if rkey then
    redis.call('HSET', jk, 'rate_key', rkey, 'rate_limit', ARGV[i + 12],
      'rate_window', ARGV[i + 13])
  end
  local chain = optional(ARGV[i + 17] or '-')
  if chain then redis.call('HSET', jk, 'chain', chain) end
  if dkey then
    redis.call('HSET', base .. ':debounce', dkey, id)
    redis.call('HSET', jk, 'debounce_key', dkey)
  end
  local fkey = optional(ARGV[i + 21] or '-')
  if fkey then place_fairly(jk, id, fkey, tonumber(ARGV[i + 22]) or 1) end
  local ckey = optional(ARGV[i + 18] or '-')
  if ckey then
    redis.call('HSET', jk, 'concurrency_key', ckey, 'concurrency_limit', ARGV[i + 19])
  end
  return id, 1
end
