-- The rules of `tenure.core.batch`, ported: pure (tables in, tables out, no Redis calls), a
-- line-by-line port of `tenure.core.batch.member_ended`, `member_retried`, `cancelled_by_user`,
-- `queued_members_cancelled` and `settle`. tests/backends/redis/test_batches.py runs it against the
-- Python rules over every reachable state, so the two cannot drift apart silently.
-- c: {state, jobs, done, failed, cancelled, allow, catch_sent, finished}; cbs: list to append to.
local function b_settle(c, cbs)
  if c.finished or (c.jobs - c.done - c.failed - c.cancelled) > 0 then return end
  if c.state == 'running' then
    if c.failed == 0 or c.allow then
      c.state = 'succeeded'
      cbs[#cbs + 1] = 'then'
    else
      c.state = 'failed'
    end
  end
  cbs[#cbs + 1] = 'finally'
  c.finished = true
end

-- Returns true when the members still queued must be cancelled.
local function b_member_ended(c, outcome, cbs)
  if outcome == 'succeeded' then c.done = c.done + 1
  elseif outcome == 'cancelled' then c.cancelled = c.cancelled + 1
  else c.failed = c.failed + 1 end
  local cancel = false
  if outcome == 'failed' and not c.catch_sent then
    cbs[#cbs + 1] = 'catch'
    c.catch_sent = true
    if not c.allow and c.state == 'running' then
      c.state = 'failed'
      cancel = true
    end
  end
  b_settle(c, cbs)
  return cancel
end

-- A failed member retried by hand; false (c untouched) once the batch no longer runs.
local function b_member_retried(c)
  if c.state ~= 'running' or c.finished then return false end
  c.failed = math.max(0, c.failed - 1)
  return true
end

local function b_cancelled_by_user(c)
  if c.state ~= 'running' then return false end
  c.state = 'cancelled'
  return true
end

local function b_queued_cancelled(c, n, cbs)
  c.cancelled = c.cancelled + n
  b_settle(c, cbs)
end
