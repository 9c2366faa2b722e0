-- A busy worker's hot path in one atomic call: complete, then reserve of one job. Each body
-- runs as a function whose parameter shadows ARGV, so both read their own arguments unchanged.
-- ARGV[3..4]: job id, token (complete); ARGV[5..9]: limit, lease, worker id, host, pid (reserve);
-- ARGV[10]: the result (complete's ARGV[5]).
local function complete_body(ARGV)
--#include queue/complete.lua
end
local function reserve_body(ARGV)
--#include queue/reserve.lua
end
local ended = complete_body({ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[10]})
local claimed = reserve_body({ARGV[1], ARGV[2], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]})
return {ended, claimed}
