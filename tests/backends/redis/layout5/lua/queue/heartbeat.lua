-- ARGV[3]: lease seconds; ARGV[4..]: triples (job id, token, the attempt's last memory reading
-- in MB or ''). Returns the ids whose lease is lost, and the ids renewed whose job was cancelled
-- meanwhile (its worker stops it).
local now_s, now = clock()
local lease = tonumber(ARGV[3])
local lost, cancel = {}, {}
for i = 4, #ARGV, 3 do
  local id = ARGV[i]
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'state', 'attempt', 'lease_expires_at', 'cancel_requested_at',
    'cur.started_at')
  local n = tonumber(f[2])
  -- An expired lease is not renewed even if nobody rescued it yet: sweep may be
  -- deciding about it right now, and a lease must not come back to life.
  if f[1] == 'running' and n ~= nil and n == tonumber(ARGV[i + 1])
      and (tonumber(f[3]) or -1) >= now then
    local expires = after(lease)
    -- the lease and the open attempt's beat in one write: the attempt's own fields, or an
    -- older release's claim's (prelude's older_claim)
    local beat, memory = 'cur.last_heartbeat_at', 'cur.memory_mb'
    if not older_claim(f[5]) then
      local p = attempt_fields(f[2])
      beat, memory = p.last_heartbeat_at, p.memory_mb
    end
    if ARGV[i + 2] ~= '' then
      redis.call('HSET', jk, 'lease_expires_at', expires, beat, now_s, memory, ARGV[i + 2])
    else
      redis.call('HSET', jk, 'lease_expires_at', expires, beat, now_s)
    end
    redis.call('ZADD', RUNNING, expires, id)
    if f[4] then cancel[#cancel + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
return {lost, cancel}
