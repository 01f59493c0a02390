-- Shared helpers, prepended to every frontier script.
-- Keys live under the prefix ARGV[1]; ARGV[2] is "now" in epoch seconds, or "" to use the
-- server clock (the default: one clock for every box of the cluster); ARGV[3] the number of
-- tiers; ARGV[4] the head size: entries of a host's queue kept in its ordered set.
local P = ARGV[1]
local HEAD = tonumber(ARGV[4])
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

-- A host's queue is a head, the sorted set q:<host> of at most HEAD entries (blobs in the
-- hash e), and a tail past it, one list t:<host>:<tier> per tier of records
-- '<rank>|<blob>' in arrival order; the host's hash counts the tail under 'tail'.
-- The head never has room while the tail holds anything (refill keeps it so), and a head
-- entry is never of a worse tier than a tail entry (add swaps them).
local function tail_push(host, rank, blob, tiers)
  local t = tier_of(rank * RANK_SCALE, tiers)
  redis.call('RPUSH', P .. 't:' .. host .. ':' .. t, rank .. '|' .. blob)
  redis.call('HINCRBY', P .. 'h:' .. host, 'tail', 1)
  redis.call('INCR', P .. 'tailn')
end

-- Move tail entries, best tier first and oldest first within a tier, into the head of
-- host until it holds HEAD entries (or the tail is empty).
local function refill(host, tiers)
  local hk = P .. 'h:' .. host
  local q = P .. 'q:' .. host
  local tail = tonumber(redis.call('HGET', hk, 'tail') or '0')
  local room = HEAD - redis.call('ZCARD', q)
  if tail <= 0 or room <= 0 then return end
  local moved = 0
  for t = 0, tiers - 1 do
    local tk = P .. 't:' .. host .. ':' .. t
    while moved < room do
      local rec = redis.call('LPOP', tk)
      if not rec then break end
      local bar = string.find(rec, '|', 1, true)
      local rank = tonumber(string.sub(rec, 1, bar - 1))
      local id = redis.call('INCR', P .. 'seq')
      redis.call('HSET', P .. 'e', id, string.sub(rec, bar + 1))
      redis.call('ZADD', q, rank * RANK_SCALE + id, id)
      moved = moved + 1
    end
    if moved >= room then break end
  end
  redis.call('HINCRBY', hk, 'tail', -moved)
  redis.call('DECRBY', P .. 'tailn', moved)
end
