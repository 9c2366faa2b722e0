-- Layouts 1 and 2 to 3, for this queue (database.py's _upgrade; idempotent: run again, it finds
-- nothing left to change). upgrade_attempts.lua then takes layout 3 to 4.
-- Layouts 1 to 3 kept a job's attempts in a hash of their own.
local function att_key(id) return base .. ':att:' .. id end
-- 1. A running job's open attempt moves from the attempts hash into the job's own hash
--    (prelude's OPEN_FIELDS), where layout 3 keeps it until the attempt's end appends it whole.
--    An attempt already ended (it has an outcome) stays where it is: it is history.
local moved, seen = 0, {}
local running = redis.call('ZRANGE', RUNNING, 0, -1)
for _, id in ipairs(redis.call('ZRANGE', base .. ':idx:running', 0, -1)) do
  running[#running + 1] = id
end
for _, id in ipairs(running) do
  local jk, ak = job_key(id), att_key(id)
  local f = redis.call('HMGET', jk, 'state', 'attempt', 'cur.started_at')
  local n = tonumber(f[2])
  -- (in both sets, or moved by an earlier run: once only, or the move would empty it again)
  if f[1] == 'running' and n and not f[3] and not seen[id]
      and redis.call('HEXISTS', ak, n .. '.outcome') == 0 then
    seen[id] = true
    local names = {}
    for i, name in ipairs(ATTEMPT_NAMES) do names[i] = n .. '.' .. name end
    local a = redis.call('HMGET', ak, unpack(names))
    local set = {}
    for i, field in ipairs(OPEN_FIELDS) do
      -- a field the attempt never had is written empty, as the reservation writes memory_mb
      set[#set + 1] = field
      set[#set + 1] = a[i] or (field == 'worker_id' and redis.call('HGET', jk, field)) or ''
    end
    redis.call('HSET', jk, unpack(set))
    redis.call('HDEL', ak, unpack(names))
    moved = moved + 1
  end
end
-- 2. A paused queue's flag joins its priorities (prelude's PRIORITIES): reserve reads both at once.
if redis.call('EXISTS', base .. ':paused') == 1 then
  redis.call('ZADD', PRIORITIES, '-inf', PAUSED_MEMBER)
  redis.call('DEL', base .. ':paused')
end
-- 3. Layout 3 keeps no index of queued and running jobs: the queued zsets and RUNNING list them
--    (operations.py reads those).
redis.call('DEL', base .. ':idx:queued', base .. ':idx:running')
return moved
