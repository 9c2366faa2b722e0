-- The guards: enqueue with uniqueness, reserve with overlap and rate-limit deferrals, and
-- once() claims. See guards.py for the key layout and what holds on Redis Cluster.
-- Every guard key is built inside the script from the queue's base, so it carries the queue's
-- hash tag and a script never leaves its queue's slot.
local OVERLAP = NAMES.overlap
local function unique_key(key) return base .. ':uniq:' .. key end
local function rate_key(key) return base .. ':rate:' .. key end
local function once_key(id) return base .. ':once:' .. id end
local function quoted(text) return "'" .. text .. "'" end

-- The id of the job holding a unique key, or nil when the key is free: the holder is gone, the
-- key expired (unique_for), or the holder is past the moment its uniqueness lasts for.
local function unique_holder(key, now)
  local u = redis.call('HMGET', unique_key(key), 'job', 'until', 'expires_at')
  if not u[1] then return nil end
  local state = redis.call('HGET', job_key(u[1]), 'state')
  if not state then return nil end
  if u[3] and (tonumber(u[3]) or 0) <= now then return nil end
  if u[2] == 'processing' then
    if state == 'queued' then return u[1] end
    return nil
  end
  if FINAL[state] then return nil end
  return u[1]
end

local function take_unique(key, id, held_until, unique_for, now)
  local uk = unique_key(key)
  redis.call('DEL', uk)
  redis.call('HSET', uk, 'job', id, 'until', held_until)
  if unique_for then
    redis.call('HSET', uk, 'expires_at', fmt(now + tonumber(unique_for)))
    -- an expired key holds nothing: Redis deletes it (retention's "expired guard rows")
    redis.call('PEXPIRE', uk, math.ceil(tonumber(unique_for) * 1000) + 1000)
  end
end

-- The job running under this overlap key with a live lease, other than `id`: the lock follows
-- the holder's lease (a heartbeat cannot revive an expired one), so a crashed holder blocks
-- the key for one lease at most.
local function overlap_holder(key, id, now)
  local holder = redis.call('HGET', OVERLAP, key)
  if (not holder) or holder == id then return nil end
  local h = redis.call('HMGET', job_key(holder), 'state', 'lease_expires_at')
  if h[1] == 'running' and (tonumber(h[2]) or -1) >= now then return holder end
  return nil
end

-- nil when a start is allowed now (and records it as `member`), else when the window frees.
-- The window's key expires once it is over: it holds nothing a later check needs.
local function rate_free_at(key, limit, window, now, member)
  local zk = rate_key(key)
  redis.call('ZREMRANGEBYSCORE', zk, '-inf', fmt(now - window))
  if redis.call('ZCARD', zk) >= limit then
    local oldest = redis.call('ZRANGE', zk, 0, 0, 'WITHSCORES')
    return (tonumber(oldest[2]) or now) + window
  end
  redis.call('ZADD', zk, fmt(now), member)
  redis.call('PEXPIRE', zk, math.ceil(window * 1000) + 1000)
  return nil
end

-- (run_at, reason) when the job's overlap or rate guard says not now; g is the job's fields.
local function guard_deferral(id, n, g, now)
  if g.overlap_key then
    local holder = overlap_holder(g.overlap_key, id, now)
    if holder then
      return now + (tonumber(g.overlap_delay) or 0),
        'overlap key ' .. quoted(g.overlap_key) .. ' is held by running job ' .. holder
    end
  end
  local limit, window = tonumber(g.rate_limit), tonumber(g.rate_window)
  if g.rate_key and limit and window then
    local free_at = rate_free_at(g.rate_key, limit, window, now, id .. ':' .. n)
    if free_at then
      return free_at, string.format('rate limit %d per %g s reached for ', limit, window)
        .. quoted(g.rate_key)
    end
  end
  return nil
end

-- Forgetting a job drops its once() records and the guard entries it still holds.
local function forget_guards(id, f)
  redis.call('DEL', once_key(id))
  if f[1] and redis.call('HGET', unique_key(f[1]), 'job') == id then
    redis.call('DEL', unique_key(f[1]))
  end
  if f[2] and redis.call('HGET', OVERLAP, f[2]) == id then redis.call('HDEL', OVERLAP, f[2]) end
end

-- Concurrency: at most concurrency_limit attempts of a key running at once. The key's running
-- attempts are a set (`conc:KEY`), its parked jobs a list, oldest first (`parked:KEY`). A job
-- over its limit is parked by reserve (run_at = PARKED_AT, out of the queued zset: no attempt,
-- no try); the end of an attempt of the key hands back the oldest parked ones, as many as it
-- has free slots, in the script of that end.
local PARKED_AT = '253402214400.000000'  -- states.PARKED_AT, 9999-12-31 UTC
local function conc_key(key) return base .. ':conc:' .. key end
local function parked_key(key) return base .. ':parked:' .. key end
-- the queue's concurrency keys with parked jobs (key -> limit), for the listing of parked jobs
-- and `tenure queues --keys` (counts.lua, which finds the keys that only run from the running
-- jobs): a claim and an end with nothing parked write nothing here (issue 31)
local CONC_KEYS = NAMES.conc_keys

-- The key's running attempts with a live lease (a slot follows its holder's lease); holders
-- no longer running or past their lease leave the set. Their leases are read from RUNNING,
-- which mirrors state = running with each lease as its score (reserve, heartbeat, every end):
-- one ZMSCORE for the whole set instead of an HMGET per holder, two commands a count whatever
-- the limit (each claim and each end of a limited job counts once).
local function conc_running(key, now)
  local ck, n = conc_key(key), 0
  local holders = redis.call('SMEMBERS', ck)
  for at = 1, #holders, 500 do  -- bounded arguments per call, for a very large limit
    local part = {unpack(holders, at, math.min(at + 499, #holders))}
    local leases = redis.call('ZMSCORE', RUNNING, unpack(part))
    for i, holder in ipairs(part) do
      local lease = leases[i] and tonumber(leases[i])
      if lease and lease >= now then n = n + 1 else redis.call('SREM', ck, holder) end
    end
  end
  return n
end

-- Whether the key has no free slot: a set smaller than the limit has one (a lapsed holder still
-- in it only counts against the claim), one SCARD; a full set is counted holder by holder.
local function conc_full(key, limit, now)
  if redis.call('SCARD', conc_key(key)) < limit then return false end
  return conc_running(key, now) >= limit
end

local function park(id, key, limit)
  redis.call('HSET', job_key(id), 'run_at', PARKED_AT)
  redis.call('RPUSH', parked_key(key), id)
  redis.call('HSET', CONC_KEYS, key, limit)
end

-- A parked job cancelled: off its key's list (true when it was parked).
local function unpark(jk, id)
  local g = redis.call('HMGET', jk, 'concurrency_key', 'run_at')
  if g[1] and g[2] == PARKED_AT then
    local pk = parked_key(g[1])
    redis.call('LREM', pk, 0, id)
    if redis.call('EXISTS', pk) == 0 then redis.call('HDEL', CONC_KEYS, g[1]) end
    return true
  end
  return false
end

-- An attempt of the job `jk` ended (finished, retried, cancelled, rescued): free its slot and
-- hand back its key's oldest parked jobs (a parked job cancelled or gone meanwhile is passed).
-- `key`: the job's concurrency_key when the caller read it (its limit is then read here, only
-- when a job is parked).
-- The parked list is asked first: an end with nothing parked costs SREM and LPOP (issue 31).
-- Otherwise the set's size (SCARD) bounds the key's live holders from above, so limit - size
-- slots are free for certain; only when parked jobs remain past those is the set counted
-- holder by holder (conc_running). A job popped with no slot free goes back to the head.
local function release_slot(jk, id, now_s, now, key)
  local limit = nil
  if key == nil then
    local g = redis.call('HMGET', jk, 'concurrency_key', 'concurrency_limit')
    key, limit = g[1], g[2]
  end
  if not key then return end
  local ck, pk = conc_key(key), parked_key(key)
  redis.call('SREM', ck, id)
  local next_id = redis.call('LPOP', pk)
  if not next_id then return end
  if limit == nil then limit = redis.call('HGET', jk, 'concurrency_limit') end
  limit = tonumber(limit) or 1
  local held = redis.call('SCARD', ck)
  local exact = held >= limit
  if exact then held = conc_running(key, now) end
  local free, woke, drained = limit - held, 0, false
  if free <= 0 then
    redis.call('LPUSH', pk, next_id)
    return
  end
  while true do
    local nk = job_key(next_id)
    local f = redis.call('HMGET', nk, 'state', 'run_at', 'seq', 'priority')
    if f[1] == 'queued' and f[2] == PARKED_AT then
      redis.call('HSET', nk, 'run_at', now_s)
      add_queued(base, tonumber(f[4]) or 0, now_s, queued_member(num(f[3]), next_id))
      free, woke = free - 1, woke + 1
    end
    if free <= 0 and not exact then
      -- the sure slots are used and jobs may be parked still: lapsed holders free the rest
      held, exact = conc_running(key, now), true
      free = limit - held - woke
    end
    if free <= 0 then break end
    next_id = redis.call('LPOP', pk)
    if not next_id then drained = true; break end
  end
  notify(woke)
  -- a key leaves CONC_KEYS with its last parked job (known without a command when the list
  -- ran dry here)
  if drained or redis.call('EXISTS', pk) == 0 then redis.call('HDEL', CONC_KEYS, key) end
end

-- A batch's queued member cancelled with its batch (lib/batch_io.lua), as cancel_job does it:
-- a parked one leaves its key's list; one handed back (or not parked yet) may have been its
-- key's next to run, so the parked ones behind it are handed back, not left waiting for an end
-- that will not come. A member of another queue keeps its own queue's lists (not reachable
-- from this script's keys): its key's next end hands back past it.
on_member_unqueued = function(jk, now_s)
  local prefix = base .. ':job:'
  if string.sub(jk, 1, #prefix) ~= prefix then return end
  local id = string.sub(jk, #prefix + 1)
  if not unpark(jk, id) then release_slot(jk, id, now_s, tonumber(now_s)) end
end

-- Fair share (sql/guards.py place_fairly, the same rule): a job due at dispatch with a fair
-- key gets its virtual start for a run_at (and score): its key's next turn, not before the
-- queue's virtual now (the lowest virtual start queued, else the largest handed out). The
-- next turn of its key is 1/weight later. `fair` holds 'k:' .. key -> next turn, and '' ->
-- the largest.
local FAIR_BEFORE = 1e9  -- states.FAIR_BEFORE
local function place_fairly(jk, id, key, weight)
  local fair = base .. ':fair'
  local head = false
  for _, zk in ipairs(queued_keys(base)) do
    local first = redis.call('ZRANGEBYSCORE', zk, '-inf', '(' .. FAIR_BEFORE, 'WITHSCORES',
      'LIMIT', 0, 1)
    if first[2] and ((not head) or tonumber(first[2]) < head) then head = tonumber(first[2]) end
  end
  local turns = redis.call('HMGET', fair, '', 'k:' .. key)
  local largest = tonumber(turns[1]) or 0
  local start = math.max(tonumber(turns[2]) or 0, head or largest)
  local following = start + 1 / weight
  redis.call('HSET', fair, 'k:' .. key, fmt(following), '', fmt(math.max(largest, following)))
  local f = redis.call('HMGET', jk, 'seq', 'run_at')
  local priority = job_priority(jk)
  redis.call('ZREM', queued_key(base, priority), queued_member(num(f[1]), id))
  redis.call('HSET', jk, 'run_at', fmt(start))
  add_queued(base, priority, fmt(start), queued_member(num(f[1]), id))
end
