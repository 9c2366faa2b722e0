-- Layout 3 to 4, one page of this queue (database.py's _upgrade): a job's ended attempts move
-- from their own hash, `base:att:ID`, into the job's hash, where layout 4 writes them (fields
-- "N.outcome", ...), and the attempts hash is deleted. Paged by sequence over ALL (every job of
-- the queue; a sequence is never reused), so that no one call holds the server long: ARGV[3] is
-- the last sequence done ('-inf' to start), ARGV[4] the page size. Returns {moved, next}: next
-- is the page's last sequence, or false once the queue is done. Idempotent: a job already moved
-- has no attempts hash left, so a run stopped half way is simply run again from the start.
local page = redis.call('ZRANGEBYSCORE', ALL, '(' .. ARGV[3], '+inf', 'WITHSCORES', 'LIMIT', 0,
  tonumber(ARGV[4]))
local moved = 0
for i = 1, #page, 2 do
  local id = page[i]
  local ak = base .. ':att:' .. id
  local fields = redis.call('HGETALL', ak)
  if #fields > 0 then
    -- a job already gone keeps no history: its attempts go with it
    if redis.call('EXISTS', job_key(id)) == 1 then
      -- in slices: a job deferred many times has more fields than one unpack may pass
      for from = 1, #fields, 512 do
        redis.call('HSET', job_key(id), unpack(fields, from, math.min(from + 511, #fields)))
      end
    end
    redis.call('DEL', ak)
    moved = moved + 1
  end
end
if #page < 2 * tonumber(ARGV[4]) then return {moved, false} end
return {moved, page[#page]}
