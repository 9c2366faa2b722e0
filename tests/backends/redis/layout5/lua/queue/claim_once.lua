-- ARGV[3]: job id, [4]: token, [5]: effect key. 1 for the first claim of a job and key, made
-- while the token still holds the job (as on SQLite, a lease that expired but was not yet
-- rescued still counts: nobody else has the job); the record keeps the attempt and the time.
local now_s, now = clock()
local id = ARGV[3]
local f = redis.call('HMGET', job_key(id), 'state', 'attempt')
local n = tonumber(f[2])
if f[1] ~= 'running' or n == nil or n ~= tonumber(ARGV[4]) then return 0 end
return redis.call('HSETNX', once_key(id), ARGV[5], n .. ' ' .. now_s)
