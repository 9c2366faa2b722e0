-- ARGV[3]: job id. Cancel one job: a queued (or scheduled) one at once, with its batch's
-- bookkeeping; a running one gets `cancel_requested_at`, which its worker's heartbeat returns.
-- Returns {'cancelled'}, {'running'}, or {'refused', state} (state false: no such job).
local now_s, now = clock()
local id = ARGV[3]
local jk = job_key(id)
local f = redis.call('HMGET', jk, 'state', 'seq')
if f[1] == 'queued' then
  local seq = num(f[2])
  redis.call('ZREM', queued_key(base, job_priority(jk)), queued_member(seq, id))
  -- a parked job leaves its key's list; one handed back (or not parked yet) may have been its
  -- key's next to run: the parked ones behind it must not wait for an end that will not come
  if not unpark(jk, id) then release_slot(jk, id, now_s, now) end
  redis.call('HSET', jk, 'state', 'cancelled', 'finished_at', now_s, 'cancel_requested_at', now_s)
  move_index(id, seq, 'queued', 'cancelled')
  batch_member_end(jk, id, 'cancelled', now_s, now)
  chain_link_end(jk, 'cancelled', now_s, now)
  wake_waiters(id)
  return {'cancelled'}
end
if f[1] == 'running' then
  redis.call('HSETNX', jk, 'cancel_requested_at', now_s)
  return {'running'}
end
return {'refused', f[1]}
