-- Scripts on the store-wide keys (tag {g}): the queue registry, workers, control flags.
local function clock()
  local t = redis.call('TIME')
  return t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
end
