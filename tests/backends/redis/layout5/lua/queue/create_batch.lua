-- ARGV[3]: batch id, [4]: name, [5]: declared total ('-' or '+N'), [6]: allow_failures (1/0),
-- [7], [8]: how long it is kept once settled, succeeded / otherwise ('-': forever, '+S'), then for then/catch/finally: '1' + CALLBACK_FIELDS, or '0' + as many blanks; then members.
local now_s, now = clock()
local bid = ARGV[3]
local bk = batch_key(base, bid)
if redis.call('EXISTS', bk) == 1 then return {'exists'} end
redis.call('HSET', bk, 'id', bid, 'name', ARGV[4], 'state', 'running', 'jobs', 0, 'done', 0,
  'failed', 0, 'cancelled', 0, 'allow_failures', ARGV[6], 'catch_sent', '0', 'finished', '0',
  'partial', 0, 'created_at', now_s)
local declared = optional(ARGV[5])
if declared then redis.call('HSET', bk, 'declared_total', declared) end
if optional(ARGV[7]) then redis.call('HSET', bk, 'keep_s', optional(ARGV[7])) end
if optional(ARGV[8]) then redis.call('HSET', bk, 'keep_f', optional(ARGV[8])) end
local i = 9
for _, kind in ipairs({'then', 'catch', 'finally'}) do
  if ARGV[i] == '1' then
    redis.call('HSET', bk, kind .. '.id', ARGV[i + 1], kind .. '.base', ARGV[i + 2],
      kind .. '.queue', ARGV[i + 3], kind .. '.name', ARGV[i + 4], kind .. '.payload',
      ARGV[i + 5], kind .. '.policy', ARGV[i + 6], kind .. '.delay', ARGV[i + 7],
      kind .. '.keep', ARGV[i + 8])
    -- its overlap and rate guards, as JSON (codec.guard_fields); '' when it has none
    if ARGV[i + 9] ~= '' then redis.call('HSET', bk, kind .. '.guards', ARGV[i + 9]) end
  end
  i = i + 1 + CALLBACK_FIELDS
end
local c = b_load(bk)
local added = b_add_members(base, bid, c, i, now_s, now)
-- A batch created empty is finished at once: then and finally still run, once.
local cbs = {}
b_settle(c, cbs)
b_apply(base, bid, c, cbs, false, now_s, now)
return {'ok', added}
