-- ARGV[3]: batch id, then members. Returns the ids added; none once the batch stopped.
local now_s, now = clock()
local bid = ARGV[3]
local bk = batch_key(base, bid)
local c = b_load(bk)
if not c or c.state ~= 'running' or c.finished then return {} end
local added = b_add_members(base, bid, c, 4, now_s, now)
b_save(bk, c, now_s)
return added
