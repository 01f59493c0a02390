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

-- Queue an entry of host (rank < 0: a robots.txt fetch, at the head): into the head of its
-- queue, or into the tail when the head is full (the better-tier one of the new entry and
-- the head's worst, unless that one is leased, stays in the head). An unleased host moves
-- to the ready set of its new entry's tier when that tier is better than its own.
local function enqueue(host, rank, blob, tiers)
  local hk = P .. 'h:' .. host
  local q = P .. 'q:' .. host
  local r = tonumber(rank)
  if r >= 0 and redis.call('ZCARD', q) >= HEAD then
    local worst = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
    local weid, wscore = worst[1], tonumber(worst[2])
    local lid = redis.call('HGET', hk, 'lease')
    local leased = lid and string.match(redis.call('HGET', P .. 'L', lid) or '',
                                        '^.*\t(.*)\t.*$')
    if wscore >= 0 and tier_of(wscore, tiers) > tier_of(r * RANK_SCALE, tiers)
        and weid ~= leased then
      local wblob = redis.call('HGET', P .. 'e', weid)
      redis.call('ZREM', q, weid)
      redis.call('HDEL', P .. 'e', weid)
      redis.call('HDEL', P .. 'att', weid)
      tail_push(host, (wscore - tonumber(weid)) / RANK_SCALE, wblob, tiers)
    else
      tail_push(host, rank, blob, tiers)
      return
    end
  end
  local id = redis.call('INCR', P .. 'seq')
  redis.call('HSET', P .. 'e', id, blob)
  local score = -1
  if r >= 0 then score = r * RANK_SCALE + id end
  redis.call('ZADD', q, score, id)
  if not redis.call('HGET', hk, 'lease') then
    local t = tier_of(score, tiers)
    local cur = redis.call('HGET', hk, 'tier')
    if not cur or tonumber(cur) > t then
      if cur then redis.call('ZREM', P .. 'r:' .. cur, host) end
      redis.call('ZADD', P .. 'r:' .. t, redis.call('HGET', hk, 'next'), host)
      redis.call('HSET', hk, 'tier', t)
    end
  end
end

-- A host's waiting list: the sorted set w:<host> of the pages its own budget refused, scored
-- by rank then arrival like the head, members '<id>|<budget>|<blob>'; 'waitn' counts them
-- all. Set a page aside (at most cap per host: past it the worst is dropped); returns
-- whether it waits (1/0) and how many pages were dropped (0/1).
local function set_aside(host, rank, budget, blob, cap)
  local wk = P .. 'w:' .. host
  local id = redis.call('INCR', P .. 'seq')
  local member = id .. '|' .. budget .. '|' .. blob
  redis.call('ZADD', wk, tonumber(rank) * RANK_SCALE + id, member)
  if redis.call('ZCARD', wk) <= cap then
    redis.call('INCR', P .. 'waitn')
    return 1, 0
  end
  local worst = redis.call('ZPOPMAX', wk)
  if worst[1] == member then return 0, 1 end
  return 1, 1
end

-- Queue the best waiting pages of host while its budget (the smaller of the page's own and
-- the host's cut) has room; returns how many.
local function promote(host, tiers)
  local hk = P .. 'h:' .. host
  local wk = P .. 'w:' .. host
  local cut = redis.call('HGET', hk, 'cut')
  cut = cut and tonumber(cut)
  local added = tonumber(redis.call('HGET', hk, 'added') or '0')
  local moved = 0
  while true do
    local head = redis.call('ZRANGE', wk, 0, 0, 'WITHSCORES')
    if not head[1] then break end
    local member = head[1]
    local a = string.find(member, '|', 1, true)
    local z = string.find(member, '|', a + 1, true)
    local budget = tonumber(string.sub(member, a + 1, z - 1))
    if cut and cut < budget then budget = cut end
    if added >= budget then break end
    redis.call('ZREM', wk, member)
    local id = tonumber(string.sub(member, 1, a - 1))
    enqueue(host, (tonumber(head[2]) - id) / RANK_SCALE, string.sub(member, z + 1), tiers)
    added = added + 1
    moved = moved + 1
  end
  if moved > 0 then
    redis.call('HSET', hk, 'added', added)
    redis.call('DECRBY', P .. 'waitn', moved)
    redis.call('HINCRBY', P .. 'stats', 'budget_promoted', moved)
  end
  return moved
end
