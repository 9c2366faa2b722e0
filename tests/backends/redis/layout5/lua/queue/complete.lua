-- ARGV[3]: job id, ARGV[4]: token, ARGV[5]: the result ('-' none, '+text'), written with the
-- success or not at all (a stale token writes nothing). Returns {'ok'}, or {'refused', the job's
-- state, its run_at, now} (lib/hot_path.lua's complete_into).
local out = {}
complete_into(out, ARGV[3], ARGV[4], ARGV[5])
return out
