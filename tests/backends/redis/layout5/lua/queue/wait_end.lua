-- ARGV[3..]: ids of this queue's jobs someone waits for (JobHandle.wait). Marks each job that
-- exists with the field `waiter`, which the script ending it turns into a token on
-- `base:woken:ID` (prelude's wake_waiters). Returns per id 1 when it was marked already (the
-- caller may block on the token), else 0: marked now, or no such job; the caller then reads
-- the job again at once, since an end before the mark woke nobody.
local out = {}
for i = 3, #ARGV do
  local jk = job_key(ARGV[i])
  if redis.call('EXISTS', jk) == 1 then
    out[#out + 1] = 1 - redis.call('HSETNX', jk, 'waiter', '1')
  else
    out[#out + 1] = 0
  end
end
return out
