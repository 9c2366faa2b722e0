-- ARGV[3]: job id, ARGV[4]: token, ARGV[5]: the result ('-' none, '+text'), written with the
-- success or not at all (a stale token writes nothing).
-- One HMGET reads everything the end needs: what a plain job lacks (batch, chain, concurrency
-- key) then costs no command at all (issue 32: the server's work per job).
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'attempt', 'seq', 'tries_used', 'batch_id', 'keep_s',
  'keep_f', 'chain', 'concurrency_key', 'waiter', unpack(OPEN_FIELDS))
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then
  return refuse(id, ARGV[4], 'succeeded', now_s)
end
local set = {'state', 'succeeded', 'finished_at', now_s, 'tries_used', num(f[4]) + 1}
local result = optional(ARGV[5] or '-')
if result then set[#set + 1] = 'result'; set[#set + 1] = result end
-- (its lease_expires_at stays: read only while the job runs, as every script and
-- records.job_record read it; deleting it was a command per job)
redis.call('HSET', jk, unpack(set))
redis.call('ZREM', RUNNING, id)
move_index(id, f[3] or '0', 'running', 'succeeded', {f[5], f[6], f[7], now_s})
close_attempt(id, n, now_s, 'succeeded', false, false, nil, open_at(f, 11))
-- A chain's next link is queued in this same script; a chain in a batch is counted there once,
-- when it ends (its last link), or as cancelled when its batch no longer runs new work.
-- (Each of these reads the job's batch_id or chain first and does nothing without it.)
if f[5] or f[8] then
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
-- (release_slot reads the job's concurrency key first and does nothing without it)
if f[9] then release_slot(jk, id, now_s, now) end
wake_waiters(id, f[10])
return {'ok', 'succeeded'}
