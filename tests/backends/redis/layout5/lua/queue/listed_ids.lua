-- Read-only: this queue's queued (ARGV[3] = 'queued': ready, scheduled and parked) or running
-- ('running') job ids, newest first (by sequence), for list_jobs: layout 3 keeps no index of
-- either, so they are read from where the hot path keeps them, the queued zsets (members
-- 'SEQ:ID') and the parked lists, or the lease zset. False when there are more than ARGV[4]:
-- the caller then walks every job newest first instead (a large backlog's jobs are the newest).
local most = tonumber(ARGV[4])
local found = {}
local function seq_of(id) return num(redis.call('HGET', job_key(id), 'seq')) end
if ARGV[3] == 'running' then
  if redis.call('ZCARD', RUNNING) > most then return false end
  for _, id in ipairs(redis.call('ZRANGE', RUNNING, 0, -1)) do
    found[#found + 1] = {seq_of(id), id}
  end
else
  local zsets = queued_keys(base)
  local parked = {}
  for _, key in ipairs(redis.call('HKEYS', CONC_KEYS)) do parked[#parked + 1] = parked_key(key) end
  local total = 0
  for _, zk in ipairs(zsets) do total = total + redis.call('ZCARD', zk) end
  for _, lk in ipairs(parked) do total = total + redis.call('LLEN', lk) end
  if total > most then return false end
  for _, zk in ipairs(zsets) do
    for _, member in ipairs(redis.call('ZRANGE', zk, 0, -1)) do
      local seq, id = string.match(member, '^(%d+):(.*)$')
      if id then found[#found + 1] = {tonumber(seq), id} end
    end
  end
  for _, lk in ipairs(parked) do
    for _, id in ipairs(redis.call('LRANGE', lk, 0, -1)) do found[#found + 1] = {seq_of(id), id} end
  end
end
table.sort(found, function(a, b) return a[1] > b[1] end)
local ids, seen = {}, {}
for _, pair in ipairs(found) do
  if not seen[pair[2]] then ids[#ids + 1] = pair[2]; seen[pair[2]] = true end
end
return ids
