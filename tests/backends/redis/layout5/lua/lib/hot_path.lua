-- A job's hot path as library functions: its success and a claim, which the scripts complete,
-- reserve and complete_and_reserve call. As functions of the library they are built once
-- (FUNCTION LOAD), and the combined call builds no closure nor copy of its arguments per call;
-- both append to one flat reply, so a claim costs no table per job (issue 32: every Lua table
-- and every number formatted is the server's work per job). (This header ends up in the text of
-- the function above it: it names none, or every script reaching that one would carry them.)

-- Whether the stored text `text` is the number `other` (a token sent as text): compared as text
-- first (the usual case: both written by this code), as numbers only when the texts differ.
local function same_number(text, other)
  if not text then return false end
  if text == other then return true end
  local a = tonumber(text)
  return a ~= nil and a == tonumber(other)
end

-- A whole number as text, with no float formatting (tostring and a number passed to
-- redis.call format through '%.14g'/'%.17g', the costliest way there is).
local function int_text(n)
  if n == 1 then return '1' end
  return string.format('%d', n)
end

-- A success, if `token` still holds the job's lease; otherwise refused (fencing). Appends to
-- `out` 'ok', or 'refused' and what refuse() says of the job (state, run_at, now). `result`:
-- '-' none, '+text'. One HMGET reads everything the end needs: what a plain job lacks (batch,
-- chain, concurrency key, a waiter) then costs no command at all.
local function complete_into(out, id, token, result)
  local now_s, now = clock()
  local jk = job_key(id)
  -- (keep_f and concurrency_limit are not read: a success keeps for keep_s, and a
  -- concurrency key's limit is read by release_slot only when its key has a job parked)
  -- (cur.started_at: set only by a claim of layout 4 or older, an older release's worker
  -- during a rolling deploy; a layout-5 claim writes it empty)
  local f = redis.call('HMGET', jk, 'state', 'attempt', 'seq', 'tries_used', 'batch_id',
    'keep_s', 'chain', 'concurrency_key', 'waiter', 'cur.started_at')
  if f[1] ~= 'running' or not same_number(f[2], token) then
    local refused = refuse(id, token, 'succeeded', now_s)
    for i = 1, 4 do out[#out + 1] = refused[i] end
    return
  end
  local tries = int_text(num(f[4]) + 1)
  local text = optional(result or '-')
  -- (its lease_expires_at stays: read only while the job runs, as every script and
  -- records.job_record read it; deleting it was a command per job)
  -- The job's end and its attempt's end in one HSET of the job's hash: the claim wrote the
  -- attempt's own fields ("N.worker_id", ...: layout 5), so only its end is added, and
  -- nothing of the attempt is read here.
  if f[10] and f[10] ~= '' then
    close_older_claim(id, f[2])
  end
  local p = attempt_fields(f[2])
  if text then
    redis.call('HSET', jk, 'state', 'succeeded', 'finished_at', now_s, 'tries_used', tries,
      'result', text, p.ended_at, now_s, p.outcome, 'succeeded')
  else
    redis.call('HSET', jk, 'state', 'succeeded', 'finished_at', now_s, 'tries_used', tries,
      p.ended_at, now_s, p.outcome, 'succeeded')
  end
  redis.call('ZREM', RUNNING, id)
  -- move_index from running (no index) to succeeded, and retire: written out, no table made
  local seq = f[3] or '0'
  redis.call('ZADD', IDX.succeeded, seq, id)
  local keep = not f[5] and small_number(f[6])
  if keep then redis.call('ZADD', ENDED, after(keep), id) end
  -- A chain's next link is queued in this same script; a chain in a batch is counted there
  -- once, when it ends (its last link), or as cancelled when its batch no longer runs new work.
  -- (Each of these reads the job's batch_id or chain first and does nothing without it.)
  if f[5] or f[7] then
    if not chain_goes_on(jk) then
      batch_member_end(jk, id, 'succeeded', now_s, now)
      chain_link_end(jk, 'succeeded', now_s, now)
    elseif batch_stops_new_work(jk) then
      batch_member_end(jk, id, 'cancelled', now_s, now)
      chain_link_end(jk, 'succeeded, but its batch no longer runs new work', now_s, now)
    else
      chain_link_end(jk, 'succeeded', now_s, now)
    end
  end
  if f[8] then release_slot(jk, id, now_s, now, f[8]) end
  wake_waiters(id, f[9])
  out[#out + 1] = 'ok'
end

-- What a claim of job `id`, at attempt `n`, must do first when its overlap or rate guard says
-- not now: a `deferred` attempt records why, run_at moves to when it may run, no try is used.
-- True when deferred. (`g`: the guards' fields as the claim read them.)
local function deferred(queued, member, id, n, g, now_s, now, wid, host, pid)
  local run_at, reason = guard_deferral(id, n, g, now)
  if not run_at then return false end
  -- a deferred attempt starts and ends here: written whole, with the job's new run_at, in one
  -- HSET of the job's hash (layout 4)
  local at = fmt(run_at)
  redis.call('HSET', job_key(id), 'attempt', n, 'run_at', at, n .. '.ended_at', now_s,
    n .. '.outcome', 'deferred',
    n .. '.error', reason .. string.format('; deferred %.1f s', math.max(run_at - now, 0)),
    n .. '.worker_id', wid, n .. '.host', host, n .. '.pid', pid, n .. '.started_at', now_s)
  redis.call('ZADD', queued, at, member)
  return true
end

-- Claim up to `limit` ready jobs for worker (wid, host, pid) with a lease of `lease` seconds
-- (text), appending to `out` how many were claimed, then per job: id, name, payload, policy,
-- attempt, lease expiry, batch id (false: none). `own`: a worker's own reserve, which, when it
-- claims nothing, appends the server's now and the earliest future run_at (false: none), what
-- next_due.lua answers, so that the wait that follows needs no request of its own.
-- A ready job whose overlap or rate guard says not now is deferred instead (deferred()). At
-- most limit + RESERVE_LOOKAHEAD jobs are looked at, and none twice, so a deferral with no delay
-- cannot make the script spin. A paused queue hands out nothing.
local function reserve_into(out, limit, lease, wid, host, pid, own)
  local walk, paused = queued_keys(base)
  local count_at = #out + 1
  out[count_at] = 0
  local now_s, now = clock()
  local taken, budget = 0, 0
  if not paused then
    limit = small_number(limit)
    budget = limit + RESERVE_LOOKAHEAD
    lease = small_number(lease)
  end
  -- Lowest priority first (prelude.lua's queued_keys); within one, by run_at then sequence.
  -- (numeric loops here, not ipairs: an iterator is a C call per step)
  for w = 1, #walk do
    local queued = walk[w]
    if paused or taken >= limit or budget <= 0 then break end
    -- exhausted: no ready job left in this zset; stop: this zset is done for this call
    local seen, exhausted, stop = nil, false, false
    while taken < limit and budget > 0 and not stop do
      -- The earliest jobs, taken off the zset in one command (a range read and a ZREM each
      -- cost one more per job, issue 32); the first one not due yet (or met again after its
      -- own deferral), and every one after it, go back as they were.
      local asked = limit - taken
      if budget < asked then asked = budget end
      local popped = redis.call('ZPOPMIN', queued, int_text(asked))
      if #popped < 2 * asked then exhausted, stop = true, true end
      local back = false
      for i = 1, #popped, 2 do
        local member, score = popped[i], popped[i + 1]
        if not back then
          -- (`+ 0`: one parse, where tonumber makes two; a zset's score is always a number)
          local future = score + 0 > now
          if future or (seen and seen[member]) then
            back = true
            stop = true
            exhausted = future
          end
        end
        if back then
          redis.call('ZADD', queued, score, member)
        else
          budget = budget - 1
          local id = string.match(member, '^%d+:(.*)$')
          local jk = id and job_key(id)
          local f
          -- only what a claim needs; an overlap or rate guard's values are read when its key
          -- is there (a concurrency limit is read here: a limited claim reads its hash once)
          if id then
            f = redis.call('HMGET', jk, 'state', 'attempt', 'name', 'payload', 'policy',
              'batch_id', 'overlap_key', 'rate_key', 'concurrency_key', 'concurrency_limit')
          else
            f = {}  -- a leftover member (below): no table made for the usual one
          end
          local slots = f[9] and f[1] == 'queued' and (tonumber(f[10]) or 1)
          -- A member whose job is gone or not queued is a leftover (a damaged or hand-edited
          -- record); dropping it keeps one bad entry from blocking the queue.
          if slots and conc_full(f[9], slots, now) then
            park(id, f[9], slots)
          elseif f[1] == 'queued' then
            -- the first attempt (no `attempt` yet, or '0') formats no number
            local n = (not f[2] or f[2] == '0') and 1 or num(f[2]) + 1
            local later = false
            -- a job with no overlap or rate key (most) has no guard to ask, nor a table to build
            if f[7] or f[8] then
              local g = redis.call('HMGET', jk, 'overlap_delay', 'rate_limit',
                'rate_window')
              later = deferred(queued, member, id, n, {overlap_key = f[7], overlap_delay = g[1],
                rate_key = f[8], rate_limit = g[2], rate_window = g[3]}, now_s, now, wid, host, pid)
            end
            if later then
              seen = seen or {}
              seen[member] = true
            else
              if f[7] then redis.call('HSET', OVERLAP, f[7], id) end
              if slots then
                redis.call('SADD', conc_key(f[9]), id)
              end
              local expires = after(lease)
              local attempt = int_text(n)  -- formatted once, for the HSET and the reply
              -- the job runs, and its attempt opens in the same hash under its own fields
              -- ("N.worker_id", ...: layout 5), where its end adds ended_at and outcome;
              -- cur.started_at emptied: an older release's claim (open_fields) is over
              local p = attempt_fields(attempt)
              redis.call('HSET', jk, 'state', 'running', 'attempt', attempt,
                'lease_expires_at', expires, 'worker_id', wid, p.worker_id, wid, p.host, host,
                p.pid, pid, p.started_at, now_s, p.last_heartbeat_at, now_s,
                'cur.started_at', '')
              redis.call('ZADD', RUNNING, expires, id)
              local at = #out
              out[at + 1], out[at + 2], out[at + 3], out[at + 4] = id, f[3] or '', f[4] or '',
                f[5] or ''
              out[at + 5], out[at + 6], out[at + 7] = attempt, expires, f[6]
              taken = taken + 1
            end
          end
        end
      end
    end
    -- A priority leaves the list once its zset is empty. Looked at only when the walk ran out
    -- of ready jobs, so a busy reserve pays no ZCARD; a zset emptied by taking its last job is
    -- dropped by the next reserve, which finds nothing in it.
    if exhausted and queued ~= QUEUED and redis.call('ZCARD', queued) == 0 then
      redis.call('ZREM', PRIORITIES, string.match(queued, ':p(-?%d+)$'))
    end
  end
  out[count_at] = taken
  if taken > 0 or not own then return end
  local due = false
  for _, key in ipairs(walk) do
    local first = redis.call('ZRANGEBYSCORE', key, '(' .. now_s, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[2] and ((not due) or tonumber(first[2]) < tonumber(due)) then due = first[2] end
  end
  out[count_at + 1], out[count_at + 2] = now_s, due
end
