-- ARGV: prefix, now, tiers, k, robots_first ('1'/'0'), then per entry: host, ip, rank,
-- budget ('' = none), filter ('1'/'0'), blob, and the k Bloom bit positions packed as
-- big-endian uint32s. With robots_first, a host seen for the first time gets a robots.txt
-- fetch at the head of its queue. Returns {added, seen, over_budget}.
local tiers = tonumber(ARGV[3])
local k = tonumber(ARGV[4])
local robots_first = ARGV[5] == '1'
local stride = 7
local added, seen, over = 0, 0, 0
for i = 6, #ARGV, stride do
  local host, ip, rank = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local budget, filter, blob = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local keep = true
  if filter == '1' then
    local new = false
    local packed = ARGV[i + 6]
    for j = 0, k - 1 do
      local bit = struct.unpack('>I4', packed, 1 + 4 * j)
      if redis.call('SETBIT', P .. 'bloom', bit, 1) == 0 then new = true end
    end
    if not new then
      seen = seen + 1
      keep = false
    end
  end
  local hk = P .. 'h:' .. host
  if keep and redis.call('HSETNX', hk, 'ip', ip) == 1 then
    -- eligible from now on: a host's priority grows with the time it waits (lease.lua)
    redis.call('HSET', hk, 'next', fmt(now), 'added', 0)
    redis.call('HINCRBY', P .. 'stats', 'hosts', 1)
    if robots_first and rank >= 0 then
      local scheme = string.match(blob, '^(%a+)://') or 'http'
      local id = redis.call('INCR', P .. 'seq')
      redis.call('HSET', P .. 'e', id, scheme .. '://' .. host .. '/robots.txt\n')
      redis.call('ZADD', P .. 'q:' .. host, -1, id)
    end
  end
  if keep and rank >= 0 then
    local b = tonumber(budget)
    local cut = redis.call('HGET', hk, 'cut')
    if cut and (b == nil or tonumber(cut) < b) then b = tonumber(cut) end
    if b ~= nil and tonumber(redis.call('HGET', hk, 'added')) >= b then
      over = over + 1
      keep = false
    else
      redis.call('HINCRBY', hk, 'added', 1)
    end
  end
  if keep then
    local id = redis.call('INCR', P .. 'seq')
    redis.call('HSET', P .. 'e', id, blob)
    local score = -1
    if rank >= 0 then score = rank * RANK_SCALE + id end
    redis.call('ZADD', P .. 'q:' .. host, score, id)
    if not redis.call('HGET', hk, 'lease') then
      local t = tier_of(score, tiers)
      local cur = redis.call('HGET', hk, 'tier')
      if not cur or tonumber(cur) > t then
        if cur then redis.call('ZREM', P .. 'r:' .. cur, host) end
        redis.call('ZADD', P .. 'r:' .. t, redis.call('HGET', hk, 'next'), host)
        redis.call('HSET', hk, 'tier', t)
      end
    end
    added = added + 1
  end
end
if added > 0 then redis.call('HINCRBY', P .. 'stats', 'added', added) end
if seen > 0 then redis.call('HINCRBY', P .. 'stats', 'dropped/seen', seen) end
if over > 0 then redis.call('HINCRBY', P .. 'stats', 'dropped/budget', over) end
return {added, seen, over}
