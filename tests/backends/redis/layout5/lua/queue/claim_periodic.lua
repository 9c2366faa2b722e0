-- A periodic job's due time claimed, and its run enqueued, in one script (see
-- Store.claim_periodic). The state is a field of this queue's `periodic` hash, so it shares
-- the slot of the queue its runs go to: "LAST_DUE LAST_JOB_ID" (the id '' before a run).
-- ARGV[3]: the periodic job's name, ARGV[4]: the due time, ARGV[5..]: the run's
-- group (see lib/enqueue.lua), absent when the due time is to be skipped.
--#include lib/enqueue.lua
local PERIODIC = base .. ':periodic'
local name, due = ARGV[3], tonumber(ARGV[4])
local stored = redis.call('HGET', PERIODIC, name)
if not stored then
  -- first sighting: start at the next due time, no back-filled run
  redis.call('HSET', PERIODIC, name, ARGV[4] .. ' ')
  return 'recorded'
end
local last_due, last_job = string.match(stored, '^(%S+) ?(.*)$')
if (tonumber(last_due) or -math.huge) >= due then return 'taken' end
if #ARGV < 5 then
  redis.call('HSET', PERIODIC, name, ARGV[4] .. ' ' .. (last_job or ''))
  return 'recorded'
end
local now_s, now = clock()
-- A held unique key stands in for the run: the holder's id is what ran for it.
local id, created = enqueue_one(5, now_s, now)
redis.call('HSET', PERIODIC, name, ARGV[4] .. ' ' .. id)
notify(created)
return 'dispatched'
