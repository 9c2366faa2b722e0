-- A busy worker's hot path in one atomic call: complete, then reserve of one job.
-- ARGV[3..4]: job id, token (complete); ARGV[5..9]: limit, lease, worker id, host, pid (reserve);
-- ARGV[10]: the result ('-' none, '+text'). One flat reply: complete's ({'ok'}, or 'refused' and
-- three fields), then reserve's (the count claimed, then 7 fields per job): no table per part.
-- Made with room for the reply of an end and one claim (nine values; `#out` reads a table's
-- nil slots as its end): an empty table would grow four times on the way (issue 32).
local out = {nil, nil, nil, nil, nil, nil, nil, nil, nil}
complete_into(out, ARGV[3], ARGV[4], ARGV[10])
reserve_into(out, ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], false)
return out
