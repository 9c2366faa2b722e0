-- ARGV[3]: batch id. 1 if the batch was running and is now cancelled, else 0.
local now_s, now = clock()
local bid = ARGV[3]
local c = b_load(batch_key(base, bid))
if not c or not b_cancelled_by_user(c) then return 0 end
b_apply(base, bid, c, {}, true, now_s, now)
return 1
