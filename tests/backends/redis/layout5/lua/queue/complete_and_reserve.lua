-- A busy worker's hot path in one atomic call: complete, then reserve of one job.
-- ARGV[3..4]: job id, token (complete); ARGV[5..8]: lease, worker id, host, pid (the reserve of
-- one job); ARGV[9], sent only when there is one: the result ('+text'). (Every argument is a
-- string and a table slot made by the server before the script runs, and past eight the ARGV
-- table grows once more: issue 32.) One flat reply: complete's ({'ok'}, or 'refused' and three
-- fields), then reserve's (the count claimed, then 7 fields per job): no table per part.
-- Made with room for the reply of an end and one claim (nine values; `#out` reads a table's
-- nil slots as its end): an empty table would grow four times on the way (issue 32).
local out = {nil, nil, nil, nil, nil, nil, nil, nil, nil}
complete_into(out, ARGV[3], ARGV[4], ARGV[9] or '-')
reserve_into(out, '1', ARGV[5], ARGV[6], ARGV[7], ARGV[8], false)
return out
