-- Read-only: one consistent count of a queue at the server's now (its queued zsets summed, one
-- per priority in use), then whether it is paused and the run_at of its oldest queued job (the
-- lowest score of those zsets; false when empty), then how many queued jobs are parked by
-- their concurrency key (not in any zset: counted as queued), and with ARGV[3] = 'keys' each
-- key in use (a job of it running or parked): key, running, waiting, limit.
local now_s, now = clock()
local ready, scheduled, oldest = 0, 0, false
for _, key in ipairs(queued_keys(base)) do
  ready = ready + redis.call('ZCOUNT', key, '-inf', now_s)
  scheduled = scheduled + redis.call('ZCOUNT', key, '(' .. now_s, '+inf')
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and ((not oldest) or tonumber(first[2]) < tonumber(oldest)) then
    oldest = first[2]
  end
end
local waiting, keys = 0, redis.call('HGETALL', CONC_KEYS)
local per_key, by = {}, {}
for i = 1, #keys, 2 do
  local parked = redis.call('LLEN', parked_key(keys[i]))
  waiting = waiting + parked
  if ARGV[3] == 'keys' then
    by[keys[i]] = {keys[i], 0, parked, keys[i + 1]}
    per_key[#per_key + 1] = by[keys[i]]
  end
end
-- CONC_KEYS lists only the keys with parked jobs (lib/guards.lua): the running ones are found
-- from the running jobs, each job's own limit listed for a key with nothing parked
if ARGV[3] == 'keys' then
  for _, id in ipairs(redis.call('ZRANGE', RUNNING, 0, -1)) do
    local g = redis.call('HMGET', job_key(id), 'concurrency_key', 'concurrency_limit')
    if g[1] then
      local entry = by[g[1]]
      if not entry then
        entry = {g[1], 0, 0, g[2] or '1'}
        by[g[1]] = entry
        per_key[#per_key + 1] = entry
      end
      entry[2] = entry[2] + 1
    end
  end
  local kept = {}
  for _, entry in ipairs(per_key) do
    if entry[2] > 0 or entry[3] > 0 then kept[#kept + 1] = entry end
  end
  per_key = kept
end
ready = ready + waiting
return {now_s, ready, scheduled,
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled),
  redis.call('ZSCORE', PRIORITIES, PAUSED_MEMBER) and 1 or 0,
  oldest, waiting, per_key}
