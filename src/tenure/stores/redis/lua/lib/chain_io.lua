-- Chains (tenure.core.chains): a link's job hash carries its chain as JSON in `chain` -- the later
-- links, catch and finally, each with its queue's key base -- and the script that ends the
-- link for good follows it before it returns: the next link is queued with the success, or,
-- once the chain stopped, the later links are stored cancelled and catch and finally queued.
-- One script, so a worker killed around it leaves both or neither. The rules are
-- tenure.core.chains.step's; the SQL stores run that function itself.

-- A callback or link record of the spec: enqueue it (with its own spec, or none); 1 if new.
local function c_enqueue(link, spec_text, now_s, now)
  if type(link) ~= 'table' or not ours(link.base) or type(link.id) ~= 'string' then return 0 end
  local keep = type(link.keep) == 'table' and link.keep or {}
  local function opt(x)
    if type(x) == 'number' then return '+' .. fmt(x) end
    return '-'
  end
  local added = enqueue_at(link.base, link.queue, link.id, link.name or '', link.payload or '',
    link.policy or '', tonumber(link.delay) or 0, now_s, now, opt(keep[1]) .. ' ' .. opt(keep[2]),
    tonumber(link.priority) or 0)
  if added == 1 then
    set_guards(link.base .. ':job:' .. link.id, link)
    if spec_text then redis.call('HSET', link.base .. ':job:' .. link.id, 'chain', spec_text) end
    notify_at(link.base, 1)
  end
  return added
end

-- A later link of a stopped chain: its record, ended cancelled at once (never queued).
local function c_cancelled(link, spec_text, reason, now_s)
  if type(link) ~= 'table' or not ours(link.base) or type(link.id) ~= 'string' then return end
  local qbase, id = link.base, link.id
  local jk = qbase .. ':job:' .. id
  if redis.call('EXISTS', jk) == 1 then return end
  local seq = new_seq()
  redis.call('HSET', jk, 'id', id, 'name', link.name or '', 'queue', link.queue,
    'payload', link.payload or '', 'state', 'cancelled', 'policy', link.policy or '',
    'created_at', now_s, 'run_at', now_s, 'finished_at', now_s, 'attempt', 0, 'tries_used', 0,
    'exceptions', 0, 'seq', seq, 'last_error', reason, 'chain', spec_text)
  local keep = type(link.keep) == 'table' and link.keep or {}
  if type(keep[1]) == 'number' then redis.call('HSET', jk, 'keep_s', fmt(keep[1])) end
  if type(keep[2]) == 'number' then
    redis.call('HSET', jk, 'keep_f', fmt(keep[2]))
    redis.call('ZADD', qbase .. ':ended', fmt(tonumber(now_s) + keep[2]), id)
  end
  redis.call('ZADD', qbase .. ':idx:cancelled', seq, id)
end

local function c_dump(t) return cjson.encode(t) end

-- A chain in a batch is one member: its live link carries the batch. On a link's success the
-- next link takes its place among the batch's open members, with the progress it reported
-- (the batch's `partial` already holds it, so the batch's progress never goes back).
local function c_hand_membership(jk, link)
  local f = redis.call('HMGET', jk, 'batch_id', 'batch_base', 'progress_u', 'id')
  if not (f[1] and ours(f[2])) then return end
  local bbase, bid = f[2], f[1]
  local nk = link.base .. ':job:' .. link.id
  redis.call('HSET', nk, 'batch_id', bid, 'batch_base', bbase, 'progress_u', num(f[3]))
  local ok = open_key(bbase, bid)
  redis.call('HDEL', ok, f[4])
  redis.call('HSET', ok, link.id, link.base)
  if redis.call('EXISTS', members_key(bbase, bid)) == 1 then
    redis.call('HSET', members_key(bbase, bid), link.id, link.base)
  end
end

-- True when this link's success dispatches another link: its batch counts the chain later.
local function chain_goes_on(jk)
  local text = redis.call('HGET', jk, 'chain')
  if not text then return false end
  local ok, spec = pcall(cjson.decode, text)
  return ok and type(spec) == 'table' and type(spec.rest) == 'table' and #spec.rest > 0
end

-- The link behind `jk` ended for good with `outcome` (succeeded, failed, cancelled).
local function chain_link_end(jk, outcome, now_s, now)
  local text = redis.call('HGET', jk, 'chain')
  if not text then return end
  local ok, spec = pcall(cjson.decode, text)
  if not ok or type(spec) ~= 'table' or type(spec.links) ~= 'table' then return end
  local rest = type(spec.rest) == 'table' and spec.rest or {}
  local pos = tonumber(spec.pos) or 0
  if outcome == 'succeeded' then
    if #rest > 0 then
      local link = table.remove(rest, 1)
      spec.pos = pos + 1
      spec.rest = rest
      spec.input = nil
      -- pass_result: the next link takes this link's stored result with it (its own spec),
      -- so it needs nothing of this link's hash, which retention may prune first
      if spec.pass == true then spec.input = redis.call('HGET', jk, 'result') or cjson.null end
      if c_enqueue(link, c_dump(spec), now_s, now) == 1 then c_hand_membership(jk, link) end
    else
      c_enqueue(spec['finally'], nil, now_s, now)
    end
    return
  end
  local here = spec.links[pos + 1]
  local name = type(here) == 'table' and tostring(here[2]) or '?'
  local reason = 'its chain stopped: link ' .. (pos + 1) .. '/' .. #spec.links .. ' (' .. name
    .. ') ' .. outcome
  local catch, final = spec['catch'], spec['finally']
  local shown = {chain = spec.chain, links = spec.links, rest = {}, catch = cjson.null,
    ['finally'] = cjson.null, pass = spec.pass or false,
    catch_id = type(catch) == 'table' and catch.id or cjson.null,
    finally_id = type(final) == 'table' and final.id or cjson.null}
  for k, link in ipairs(rest) do
    shown.pos = pos + k
    c_cancelled(link, c_dump(shown), reason, now_s)
  end
  c_enqueue(catch, nil, now_s, now)
  c_enqueue(final, nil, now_s, now)
end

on_member_cancelled = function(jk, now_s)
  local _, now = clock()
  chain_link_end(jk, 'cancelled', now_s, now)
end
