-- ARGV[3..]: one group per job (see lib/enqueue.lua). Returns, per job, its id, or the id of
-- the job holding its unique key.
--#include lib/enqueue.lua
local now_s, now = clock()
local added = 0
local ids = {}
local i = 3
while i <= #ARGV do
  local id, created, next_i = enqueue_one(i, now_s, now)
  ids[#ids + 1] = id
  added = added + created
  i = next_i
end
-- Delayed jobs wake waiters too: a waiter re-reads the earliest run_at and sleeps until then.
notify(added)
return ids
