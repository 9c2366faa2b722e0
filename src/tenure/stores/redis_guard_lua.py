"""The Lua behind the Redis store's guards: enqueue with uniqueness, reserve with overlap and
rate-limit deferrals, and once() claims. See redis_guards.py for the key layout and what holds
on Redis Cluster.

`GUARD_PRELUDE` is appended to the queue prelude (after redis_lua.PRELUDE and the batch
prelude), so every queue script can use its functions; `forget_job` uses `forget_guards`.
Every guard key is built inside the script from the queue's base, so it carries the queue's
hash tag and a script never leaves its queue's slot.
"""

from __future__ import annotations

from tenure.stores.redis_lua import COMPLETE

# Fields per job in ENQUEUE's ARGV, after the two common ones (base, queue name).
ENQUEUE_FIELDS = 14
# Ready jobs a reservation looks at beyond `limit`: guarded jobs in front may be deferred.
RESERVE_LOOKAHEAD = 32

GUARD_PRELUDE = """
local OVERLAP = base .. ':overlap'
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
  if unique_for then redis.call('HSET', uk, 'expires_at', fmt(now + tonumber(unique_for))) end
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
"""

# ARGV[3..]: groups of ENQUEUE_FIELDS: id, name, payload, policy, delay, batch_id, unique_key,
# unique_until, unique_for, overlap_key, overlap_delay, rate_key, rate_limit, rate_window
# (optional ones as '-' or '+text'). Returns, per job, its id, or the id of the job holding its
# unique key. An id that already exists is skipped, so a client retrying after a lost reply
# cannot create the job twice.
ENQUEUE = f"""
local now_s, now = clock()
local added = 0
local ids = {{}}
for i = 3, #ARGV, {ENQUEUE_FIELDS} do
  local id = ARGV[i]
  local ukey = optional(ARGV[i + 6])
  local holder = nil
  if ukey then holder = unique_holder(ukey, now) end
  if holder then
    ids[#ids + 1] = holder
  else
    -- taken at once: the next job of this call with the same key must see this one
    if ukey then take_unique(ukey, id, ARGV[i + 7], optional(ARGV[i + 8]), now) end
    local jk = job_key(id)
    if redis.call('EXISTS', jk) == 0 then
      local seq = redis.call('INCR', SEQ)
      local delay = tonumber(ARGV[i + 4]) or 0
      if delay < 0 then delay = 0 end
      local run_at = fmt(now + delay)
      redis.call('HSET', jk, 'id', id, 'name', ARGV[i + 1], 'queue', queue_name,
        'payload', ARGV[i + 2], 'state', 'queued', 'policy', ARGV[i + 3], 'created_at', now_s,
        'run_at', run_at, 'attempt', 0, 'tries_used', 0, 'exceptions', 0, 'seq', seq)
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
      redis.call('ZADD', QUEUED, run_at, queued_member(seq, id))
      redis.call('ZADD', ALL, seq, id)
      move_index(id, seq, nil, 'queued')
      added = added + 1
    end
    ids[#ids + 1] = id
  end
end
-- Delayed jobs wake waiters too: a waiter re-reads the earliest run_at and sleeps until then.
notify(added)
return ids
"""

# ARGV[3..7]: limit, lease seconds, worker id, host, pid.
# A ready job whose overlap or rate guard says not now is deferred instead: a `deferred`
# attempt records why, run_at moves to when it may run, no try is used. At most
# limit + RESERVE_LOOKAHEAD jobs are looked at, and none twice, so a deferral with no delay
# cannot make the script spin.
RESERVE = f"""
local now_s, now = clock()
local limit = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local out = {{}}
local seen, nseen, budget = {{}}, 0, limit + {RESERVE_LOOKAHEAD}
while #out < limit and budget > 0 do
  local members = redis.call('ZRANGEBYSCORE', QUEUED, '-inf', now_s, 'LIMIT', 0,
    limit - #out + nseen)
  local fresh = 0
  for _, member in ipairs(members) do
    if #out >= limit or budget <= 0 then break end
    if not seen[member] then
      fresh = fresh + 1
      budget = budget - 1
      redis.call('ZREM', QUEUED, member)
      local id = string.match(member, '^%d+:(.*)$')
      local f = {{}}
      if id then
        f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'seq', 'name', 'payload',
          'policy', 'batch_id', 'overlap_key', 'overlap_delay', 'rate_key', 'rate_limit',
          'rate_window')
      end
      -- A member whose job is gone or not queued is a leftover (a damaged or hand-edited
      -- record); dropping it keeps one bad entry from blocking the queue.
      if f[1] == 'queued' then
        local n = num(f[2]) + 1
        local g = {{overlap_key = f[8], overlap_delay = f[9], rate_key = f[10],
          rate_limit = f[11], rate_window = f[12]}}
        local run_at, reason = guard_deferral(id, n, g, now)
        local ak = att_key(id)
        redis.call('HSET', ak, n .. '.worker_id', ARGV[5], n .. '.host', ARGV[6],
          n .. '.pid', ARGV[7], n .. '.started_at', now_s)
        if run_at then
          local at = fmt(run_at)
          redis.call('HSET', job_key(id), 'attempt', n, 'run_at', at)
          redis.call('ZADD', QUEUED, at, member)
          redis.call('HSET', ak, n .. '.ended_at', now_s, n .. '.outcome', 'deferred',
            n .. '.error', reason .. string.format('; deferred %.1f s', math.max(run_at - now, 0)))
          seen[member] = true
          nseen = nseen + 1
        else
          if g.overlap_key then redis.call('HSET', OVERLAP, g.overlap_key, id) end
          local expires = fmt(now + lease)
          redis.call('HSET', job_key(id), 'state', 'running', 'attempt', n,
            'lease_expires_at', expires, 'worker_id', ARGV[5])
          redis.call('ZADD', RUNNING, expires, id)
          move_index(id, num(f[3]), 'queued', 'running')
          redis.call('HSET', ak, n .. '.last_heartbeat_at', now_s)
          out[#out + 1] = {{id, f[4] or '', f[5] or '', f[6] or '', tostring(n), expires, f[7]}}
        end
      end
    end
  end
  if fresh == 0 then break end
end
return out
"""

# ARGV[3]: job id, [4]: token, [5]: effect key. 1 for the first claim of a job and key, made
# while the token still holds the job (as on SQLite, a lease that expired but was not yet
# rescued still counts: nobody else has the job); the record keeps the attempt and the time.
CLAIM_ONCE = """
local now_s, now = clock()
local id = ARGV[3]
local f = redis.call('HMGET', job_key(id), 'state', 'attempt')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then return 0 end
return redis.call('HSETNX', once_key(id), ARGV[5], n .. ' ' .. now_s)
"""

# A busy worker's hot path in one atomic call: COMPLETE, then RESERVE of one job. Each body
# runs as a function whose parameter shadows ARGV, so both read their own arguments unchanged.
# ARGV[3..4]: job id, token (COMPLETE); ARGV[5..9]: limit, lease, worker id, host, pid (RESERVE).
COMPLETE_AND_RESERVE = f"""
local function complete_body(ARGV)
{COMPLETE}
end
local function reserve_body(ARGV)
{RESERVE}
end
local ended = complete_body({{ARGV[1], ARGV[2], ARGV[3], ARGV[4]}})
local claimed = reserve_body({{ARGV[1], ARGV[2], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]}})
return {{ended, claimed}}
"""

GUARD_SCRIPTS = {
    "enqueue": ENQUEUE,
    "reserve": RESERVE,
    "claim_once": CLAIM_ONCE,
    "complete_and_reserve": COMPLETE_AND_RESERVE,
}
