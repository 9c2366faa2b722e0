-- ARGV[3..7]: limit, lease seconds, worker id, host, pid; ARGV[8] '1': a worker's own reserve.
-- Returns, flat, how many jobs were claimed, then 7 fields per job; a worker's own reserve that
-- claimed nothing adds now and the earliest future run_at (false: none), so that the wait that
-- follows needs no request of its own (lib/hot_path.lua's reserve_into).
local out = {}
reserve_into(out, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8] == '1')
return out
