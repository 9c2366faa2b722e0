-- Read-only: one consistent count of a queue at the server's now (its queued zsets summed, one
-- per priority in use), then whether it is paused and the run_at of its oldest queued job (the
-- lowest score of those zsets; false when empty), then how many queued jobs are parked by
-- their concurrency key (not in any zset: counted as queued), and with ARGV[3] = 'keys' each
-- key in use: key, running, waiting, limit.
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
local per_key = {}
for i = 1, #keys, 2 do
  local parked = redis.call('LLEN', parked_key(keys[i]))
  waiting = waiting + parked
  if ARGV[3] == 'keys' then
    per_key[#per_key + 1] = {keys[i], redis.call('SCARD', conc_key(keys[i])), parked, keys[i + 1]}
  end
end
ready = ready + waiting
return {now_s, ready, scheduled,
  redis.call('ZCARD', RUNNING),
  redis.call('ZCARD', IDX.succeeded),
  redis.call('ZCARD', IDX.failed),
  redis.call('ZCARD', IDX.cancelled),
  redis.call('ZSCORE', PRIORITIES, PAUSED_MEMBER) and 1 or 0,
  oldest, waiting, per_key}
