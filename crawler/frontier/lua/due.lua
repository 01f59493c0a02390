-- ARGV: prefix, now, tiers, head. Returns the seconds until the soonest host of any ready
-- set is eligible (0 if one is now), or nil when every ready set is empty.
local tiers = tonumber(ARGV[3])
local soonest
for t = 0, tiers - 1 do
  local head = redis.call('ZRANGE', P .. 'r:' .. t, 0, 0, 'WITHSCORES')
  if head[2] then
    local next_time = tonumber(head[2])
    if soonest == nil or next_time < soonest then soonest = next_time end
  end
end
if soonest == nil then return nil end
return fmt(math.max(0, soonest - now))
