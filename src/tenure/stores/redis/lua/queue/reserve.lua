-- ARGV[3..7]: limit, lease seconds, worker id, host, pid; ARGV[8] '1': a worker's own reserve,
-- answered, when it hands out nothing, {'idle', now, the earliest future run_at or false} (what
-- next_due.lua answers), so that the wait that follows needs no request of its own (issue 32:
-- every request costs the server more than a small script's commands). complete_and_reserve
-- sends no ARGV[8]: a worker that just ended a job asks again before it waits.
-- A ready job whose overlap or rate guard says not now is deferred instead: a `deferred`
-- attempt records why, run_at moves to when it may run, no try is used. At most
-- limit + RESERVE_LOOKAHEAD jobs are looked at, and none twice, so a deferral with no delay
-- cannot make the script spin.
-- A paused queue hands out nothing (complete_and_reserve runs this too).
local walk, paused = queued_keys(base)
local function idle()
  if ARGV[8] ~= '1' then return {} end
  local now_s = clock()
  local due = false
  for _, key in ipairs(walk) do
    local first = redis.call('ZRANGEBYSCORE', key, '(' .. now_s, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[2] and ((not due) or tonumber(first[2]) < tonumber(due)) then due = first[2] end
  end
  return {'idle', now_s, due}
end
if paused then return idle() end
local now_s, now = clock()
local limit = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local out = {}
local budget = limit + RESERVE_LOOKAHEAD
-- Lowest priority first (prelude.lua's queued_keys); within one, by run_at then sequence.
for _, queued in ipairs(walk) do
  if #out >= limit or budget <= 0 then break end
  -- exhausted: no ready job left in this zset; stop: this zset is done for this call
  local seen, exhausted, stop = {}, false, false
  while #out < limit and budget > 0 and not stop do
    -- The earliest jobs, taken off the zset in one command (a range read and a ZREM each cost
    -- one more per job, issue 32); the first one not due yet (or met again after its own
    -- deferral), and every one after it, go back as they were.
    local asked = math.min(limit - #out, budget)
    local popped = redis.call('ZPOPMIN', queued, asked)
    if #popped < 2 * asked then exhausted, stop = true, true end
    local back = false
    for i = 1, #popped, 2 do
      local member, score = popped[i], popped[i + 1]
      if not back and (tonumber(score) > now or seen[member]) then
        back = true
        stop = true
        exhausted = tonumber(score) > now
      end
      if back then
        redis.call('ZADD', queued, score, member)
      else
        budget = budget - 1
        local id = string.match(member, '^%d+:(.*)$')
        local f = {}
        if id then
          f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'seq', 'name', 'payload',
            'policy', 'batch_id', 'overlap_key', 'overlap_delay', 'rate_key', 'rate_limit',
            'rate_window', 'concurrency_key', 'concurrency_limit')
        end
        -- A member whose job is gone or not queued is a leftover (a damaged or hand-edited
        -- record); dropping it keeps one bad entry from blocking the queue.
        if f[1] == 'queued' and f[13]
            and conc_running(f[13], now) >= (tonumber(f[14]) or 1) then
          park(id, f[13], tonumber(f[14]) or 1)
        elseif f[1] == 'queued' then
          local n = num(f[2]) + 1
          -- a job with no overlap or rate key (most) has no guard to ask, nor a table to build
          local run_at, reason
          if f[8] or f[10] then
            run_at, reason = guard_deferral(id, n, {overlap_key = f[8], overlap_delay = f[9],
              rate_key = f[10], rate_limit = f[11], rate_window = f[12]}, now)
          end
          if run_at then
            -- a deferred attempt starts and ends here: written whole to the attempts hash
            local at = fmt(run_at)
            redis.call('HSET', job_key(id), 'attempt', n, 'run_at', at)
            redis.call('ZADD', queued, at, member)
            redis.call('HSET', att_key(id), n .. '.ended_at', now_s, n .. '.outcome', 'deferred',
              n .. '.error', reason .. string.format('; deferred %.1f s', math.max(run_at - now, 0)),
              n .. '.worker_id', ARGV[5], n .. '.host', ARGV[6], n .. '.pid', ARGV[7],
              n .. '.started_at', now_s)
            seen[member] = true
          else
            if f[8] then redis.call('HSET', OVERLAP, f[8], id) end
            if f[13] then
              redis.call('SADD', conc_key(f[13]), id)
              redis.call('HSET', CONC_KEYS, f[13], tonumber(f[14]) or 1)
            end
            local expires = fmt(now + lease)
            local attempt = tostring(n)  -- formatted once, for the HSET and the reply
            -- the job runs, and its attempt opens in the same hash (OPEN_FIELDS; memory_mb
            -- emptied: a reading belongs to the attempt that took it)
            redis.call('HSET', job_key(id), 'state', 'running', 'attempt', attempt,
              'lease_expires_at', expires, 'worker_id', ARGV[5], 'cur.host', ARGV[6],
              'cur.pid', ARGV[7], 'cur.started_at', now_s, 'cur.last_heartbeat_at', now_s,
              'cur.memory_mb', '')
            redis.call('ZADD', RUNNING, expires, id)
            out[#out + 1] = {id, f[4] or '', f[5] or '', f[6] or '', attempt, expires, f[7]}
          end
        end
      end
    end
  end
  -- A priority leaves the list once its zset is empty. Looked at only when the walk ran out of
  -- ready jobs, so a busy reserve pays no ZCARD; a zset emptied by taking its last job is
  -- dropped by the next reserve, which finds nothing in it.
  if exhausted and queued ~= QUEUED and redis.call('ZCARD', queued) == 0 then
    redis.call('ZREM', base .. ':priorities', string.match(queued, ':p(-?%d+)$'))
  end
end
if #out == 0 then return idle() end
return out
