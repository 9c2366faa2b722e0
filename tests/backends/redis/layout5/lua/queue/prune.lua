-- Retention: one bounded chunk of this queue's finished jobs and settled batches whose time
-- has come (see ENDED and b_retire: entered, scored by their prune time, by the scripts that
-- finish them), deleted with every key that belongs to them. One script: two sweepers at once
-- take turns, and the second finds what the first deleted gone.
-- ARGV[3]: how many jobs (batches too) at most; ARGV[4]: '1' for a dry run (count, delete
-- nothing), ARGV[5]: the dry run's offset into the due entries.
-- Returns {jobs, attempts, effects, batches, guards, more, deleted batch ids...}.
local _, now = clock()
local limit, dry, offset = tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5]) or 0
local ENDED_BATCHES = base .. ':ended_batches'
local n_jobs, n_attempts, n_effects, n_batches, n_guards = 0, 0, 0, 0, 0
local gone_batches = {}

-- The latest run of each periodic job is kept: `tenure periodic list` shows its outcome.
local latest = {}
for _, value in ipairs(redis.call('HVALS', base .. ':periodic')) do
  local run = string.match(value, '^%S+ (.+)$')
  if run then latest[run] = true end
end

-- Delete one finished job of queue `qbase` with its attempts, effects and the guard entries
-- it still holds; false (nothing touched) when it is not finished.
local function drop(qbase, id)
  local jk = qbase .. ':job:' .. id
  local f = redis.call('HMGET', jk, 'state', 'unique_key', 'overlap_key', 'attempt',
    'debounce_key')
  if not FINAL[f[1]] then return false end
  -- its attempts are fields of its hash (layout 4); `att:ID` only holds those an older
  -- release's worker ended there after the upgrade (a rolling deploy), deleted with the job
  local ak, ok = qbase .. ':att:' .. id, qbase .. ':once:' .. id
  n_attempts = n_attempts + num(f[4])  -- attempts opened: one field group each
  n_effects = n_effects + redis.call('HLEN', ok)
  local uk = f[2] and (qbase .. ':uniq:' .. f[2])
  local held_unique = uk and redis.call('HGET', uk, 'job') == id
  local held_overlap = f[3] and redis.call('HGET', qbase .. ':overlap', f[3]) == id
  -- the debounce key still naming this job (the last one created for it)
  local held_debounce = f[5] and redis.call('HGET', qbase .. ':debounce', f[5]) == id
  if held_unique then n_guards = n_guards + 1 end
  if held_overlap then n_guards = n_guards + 1 end
  if held_debounce then n_guards = n_guards + 1 end
  n_jobs = n_jobs + 1
  if dry then return true end
  if held_unique then redis.call('DEL', uk) end
  if held_overlap then redis.call('HDEL', qbase .. ':overlap', f[3]) end
  if held_debounce then redis.call('HDEL', qbase .. ':debounce', f[5]) end
  redis.call('DEL', jk, ak, ok)
  redis.call('ZREM', qbase .. ':idx:' .. f[1], id)
  redis.call('ZREM', qbase .. ':all', id)
  redis.call('ZREM', qbase .. ':ended', id)
  return true
end

local due = redis.call('ZRANGEBYSCORE', ENDED, '-inf', fmt(now), 'LIMIT', offset, limit)
for _, id in ipairs(due) do
  if latest[id] then
    -- looked at again in a minute: it stops being the latest when the next run is dispatched
    if not dry then redis.call('ZADD', ENDED, fmt(now + 60), id) end
  elseif not drop(base, id) and not dry then
    redis.call('ZREM', ENDED, id)  -- gone, or no longer finished (retried by hand)
  end
end

-- Settled batches: their members first, a chunk at a time, then the batch itself.
local budget = limit - n_jobs  -- members count against the same bound as jobs
local batches = redis.call('ZRANGEBYSCORE', ENDED_BATCHES, '-inf', fmt(now), 'LIMIT',
  offset, limit)
for _, bid in ipairs(batches) do
  local mk = members_key(base, bid)
  if dry then
    n_batches = n_batches + 1
    n_jobs = n_jobs + redis.call('HLEN', mk)
  else
    local scan = redis.call('HSCAN', mk, 0, 'COUNT', math.max(budget, 1))
    local fields = scan[2]
    for i = 1, #fields, 2 do
      if budget <= 0 then break end
      local id, qbase = fields[i], fields[i + 1]
      if ours(qbase) then drop(qbase, id) end
      redis.call('HDEL', mk, id)
      budget = budget - 1
    end
    if redis.call('EXISTS', mk) == 0 then
      redis.call('DEL', batch_key(base, bid), open_key(base, bid))
      redis.call('ZREM', ENDED_BATCHES, bid)
      n_batches = n_batches + 1
      gone_batches[#gone_batches + 1] = bid
    end
    if budget <= 0 then break end
  end
end

-- Fair keys' turns that no dispatch needs (sql/retention.py _unused_keys, the same rule): a
-- key's next turn at or before the queue's virtual now (the head of its fair jobs, else the
-- largest turn handed out) changes nothing, as a dispatch starts there anyway and that never
-- goes back; the queue's own turn ('') stays. A chunk of the hash per call, resumed where the
-- last one stopped; a dry run counts them all, once (on its first page).
local FAIR, FAIR_CURSOR = base .. ':fair', base .. ':fair_cursor'
local fair_now = false
for _, zk in ipairs(queued_keys(base)) do
  local first = redis.call('ZRANGEBYSCORE', zk, '-inf', '(' .. FAIR_BEFORE, 'WITHSCORES',
    'LIMIT', 0, 1)
  if first[2] and ((not fair_now) or tonumber(first[2]) < fair_now) then
    fair_now = tonumber(first[2])
  end
end
fair_now = fair_now or tonumber(redis.call('HGET', FAIR, '') or '')
local fair_more = false
if fair_now and not (dry and offset > 0) then
  local cursor = dry and '0' or (redis.call('GET', FAIR_CURSOR) or '0')
  repeat
    local scan = redis.call('HSCAN', FAIR, cursor, 'COUNT', limit)
    cursor = scan[1]
    local fields = scan[2]
    for i = 1, #fields, 2 do
      if fields[i] ~= '' and (tonumber(fields[i + 1]) or 0) <= fair_now then
        n_guards = n_guards + 1
        if not dry then redis.call('HDEL', FAIR, fields[i]) end
      end
    end
  until not dry or cursor == '0'
  if not dry then
    if cursor == '0' then redis.call('DEL', FAIR_CURSOR)
    else redis.call('SET', FAIR_CURSOR, cursor) end
    fair_more = cursor ~= '0'
  end
end

local more = (fair_more or #due >= limit or #batches >= limit or (budget <= 0 and #batches > 0)) and 1 or 0
return {n_jobs, n_attempts, n_effects, n_batches, n_guards, more, unpack(gone_batches)}
