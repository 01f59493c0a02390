-- Shared helpers, prepended to every frontier script.
-- Keys live under the prefix ARGV[1]; ARGV[2] is "now" in epoch seconds, or "" to use the
-- server clock (the default: one clock for every box of the cluster).
local P = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[2])
end
local RANK_SCALE = 1e12

local function fmt(x)
  return string.format('%.6f', x)
end

local function tier_of(score, tiers)
  if score < 0 then return 0 end
  local r = math.floor(score / RANK_SCALE)
  if r > tiers - 1 then r = tiers - 1 end
  return r
end

-- Put an unleased host into the ready set of its head entry's tier, or out of all sets.
local function make_ready(host, next_time, tiers)
  local hk = P .. 'h:' .. host
  local old = redis.call('HGET', hk, 'tier')
  if old then
    redis.call('ZREM', P .. 'r:' .. old, host)
    redis.call('HDEL', hk, 'tier')
  end
  local head = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
  if head[1] then
    local t = tier_of(tonumber(head[2]), tiers)
    redis.call('ZADD', P .. 'r:' .. t, fmt(next_time), host)
    redis.call('HSET', hk, 'tier', t)
  end
end
