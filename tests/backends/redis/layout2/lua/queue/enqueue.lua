-- ARGV[3..]: groups of ENQUEUE_FIELDS, one per job (see lib/enqueue.lua). Returns, per job, its
-- id, or the id of the job holding its unique key.
--#include lib/enqueue.lua
local now_s, now = clock()
local added = 0
local ids = {}
for i = 3, #ARGV, ENQUEUE_FIELDS do
  local id, created = enqueue_one(i, now_s, now)
  ids[#ids + 1] = id
  added = added + created
end
-- Delayed jobs wake waiters too: a waiter re-reads the earliest run_at and sleeps until then.
notify(added)
return ids
