-- Jobs whose lease expired before now, with what describe_crash and decide need, after now and
-- the earliest lease of the queue that has not expired ('' when none: the sweep's next due).
-- ARGV[3]: how many at most. Each entry: id, attempt, lease_expires_at, policy, tries_used,
-- exceptions, then the attempt's ATTEMPT_FIELDS, then cancel_requested_at ('' when none), then
-- the attempt's last memory reading ('' when none).
local now_s, now = clock()
local upcoming = redis.call('ZRANGEBYSCORE', RUNNING, now_s, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local out = {now_s, upcoming[2] or ''}
local ids = redis.call('ZRANGEBYSCORE', RUNNING, '-inf', '(' .. now_s, 'LIMIT', 0,
  tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', job_key(id), 'state', 'attempt', 'lease_expires_at', 'policy',
    'tries_used', 'exceptions', 'cancel_requested_at', unpack(OPEN_FIELDS))
  if f[1] ~= 'running' then
    -- RUNNING mirrors state = running; an entry without a running job is a leftover.
    redis.call('ZREM', RUNNING, id)
  elseif (tonumber(f[3]) or 0) >= now then
    -- The set's score disagrees with the job's lease (hand-edited): trust the job.
    redis.call('ZADD', RUNNING, fmt(tonumber(f[3])), id)
  else
    local n = num(f[2])
    local a = open_at(f, 8)  -- an older release's claim (OPEN_FIELDS; prelude's older_claim)
    if not older_claim(a[4]) then  -- the attempt's own fields (layout 5)
      local p = attempt_fields(f[2])
      a = redis.call('HMGET', job_key(id), p.worker_id, p.host, p.pid, p.started_at,
        p.last_heartbeat_at, p.memory_mb)
    end
    out[#out + 1] = {id, tostring(n), f[3] or '0', f[4] or '', tostring(num(f[5])),
      tostring(num(f[6])), a[1], a[2], a[3], a[4], a[5], f[7] or '', a[6] or ''}
  end
end
return out
