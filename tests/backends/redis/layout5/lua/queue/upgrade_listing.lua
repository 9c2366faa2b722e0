-- Layout 4 to 5, for this queue (database.py's _upgrade; idempotent): layout 5 keeps no index
-- of every job (`all`, one ZADD per enqueued job that only the listing of all states read,
-- issue 32): that listing merges the queued zsets, RUNNING and the finished jobs' indexes
-- (operations.py), which hold every job once already. Run only after upgrade_attempts has
-- paged over `all` (layout 3 to 4) for every queue. UNLINK: a large index is freed off the
-- server's main thread. Returns how many entries the index had.
local had = redis.call('ZCARD', ALL)
redis.call('UNLINK', ALL)
return had
