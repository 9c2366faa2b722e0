-- ARGV[3..7]: limit, lease seconds, worker id, host, pid.
-- A ready job whose overlap or rate guard says not now is deferred instead: a `deferred`
-- attempt records why, run_at moves to when it may run, no try is used. At most
-- limit + RESERVE_LOOKAHEAD jobs are looked at, and none twice, so a deferral with no delay
-- cannot make the script spin.
-- A paused queue hands out nothing (complete_and_reserve runs this too).
if redis.call('EXISTS', PAUSED) == 1 then return {} end
local now_s, now = clock()
local limit = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local out = {}
local budget = limit + RESERVE_LOOKAHEAD
-- Lowest priority first (prelude.lua's queued_keys); within one, by run_at then sequence.
for _, queued in ipairs(queued_keys(base)) do
  if #out >= limit or budget <= 0 then break end
  local seen, nseen, exhausted = {}, 0, false
  while #out < limit and budget > 0 do
    local asked = limit - #out + nseen
    local members = redis.call('ZRANGEBYSCORE', queued, '-inf', now_s, 'LIMIT', 0, asked)
    exhausted = #members < asked
    local fresh = 0
    for _, member in ipairs(members) do
      if #out >= limit or budget <= 0 then break end
      if not seen[member] then
        fresh = fresh + 1
        budget = budget - 1
        redis.call('ZREM', queued, member)
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
          local g = {overlap_key = f[8], overlap_delay = f[9], rate_key = f[10],
            rate_limit = f[11], rate_window = f[12]}
          local run_at, reason = guard_deferral(id, n, g, now)
          local ak = att_key(id)
          -- the attempt's start, and its end (deferred) or first beat, in one HSET
          local started = {n .. '.worker_id', ARGV[5], n .. '.host', ARGV[6],
            n .. '.pid', ARGV[7], n .. '.started_at', now_s}
          if run_at then
            local at = fmt(run_at)
            redis.call('HSET', job_key(id), 'attempt', n, 'run_at', at)
            redis.call('ZADD', queued, at, member)
            redis.call('HSET', ak, n .. '.ended_at', now_s, n .. '.outcome', 'deferred',
              n .. '.error', reason .. string.format('; deferred %.1f s', math.max(run_at - now, 0)),
              unpack(started))
            seen[member] = true
            nseen = nseen + 1
          else
            if g.overlap_key then redis.call('HSET', OVERLAP, g.overlap_key, id) end
            if f[13] then
              redis.call('SADD', conc_key(f[13]), id)
              redis.call('HSET', CONC_KEYS, f[13], tonumber(f[14]) or 1)
            end
            local expires = fmt(now + lease)
            redis.call('HSET', job_key(id), 'state', 'running', 'attempt', n,
              'lease_expires_at', expires, 'worker_id', ARGV[5])
            redis.call('ZADD', RUNNING, expires, id)
            move_index(id, num(f[3]), 'queued', 'running')
            redis.call('HSET', ak, n .. '.last_heartbeat_at', now_s, unpack(started))
            out[#out + 1] = {id, f[4] or '', f[5] or '', f[6] or '', tostring(n), expires, f[7]}
          end
        end
      end
    end
    if fresh == 0 then break end
  end
  -- A priority leaves the list once its zset is empty. Looked at only when the walk ran out of
  -- ready jobs, so a busy reserve pays no ZCARD; a zset emptied by taking its last job is
  -- dropped by the next reserve, which finds nothing in it.
  if exhausted and queued ~= QUEUED and redis.call('ZCARD', queued) == 0 then
    redis.call('ZREM', base .. ':priorities', string.match(queued, ':p(-?%d+)$'))
  end
end
return out
