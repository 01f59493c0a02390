-- ARGV: prefix, now, tiers, head, k, robots_first ('1'/'0'), then per entry: host, ip, rank,
-- budget ('' = none), filter ('1'/'0'), blob, and the k Bloom bit positions packed as
-- big-endian uint32s. With robots_first, a host seen for the first time gets a robots.txt
-- fetch at the head of its queue. Returns {added, seen, over_budget}.
local tiers = tonumber(ARGV[3])
local k = tonumber(ARGV[5])
local robots_first = ARGV[6] == '1'
local stride = 7
local added, seen, over = 0, 0, 0
for i = 7, #ARGV, stride do
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
      -- the blob's URL is packed (crawler/frontier/codec.py): 1 = http, 2 = https
      local scheme = 'http'
      local b1 = string.byte(blob, 1)
      if b1 == 2 then scheme = 'https'
      elseif b1 ~= 1 then scheme = string.match(blob, '^(%a+)://') or 'http' end
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
    elseif filter == '1' or budget ~= '' then
      -- a copy of a page queued before (a re-push) takes no more of the budget
      redis.call('HINCRBY', hk, 'added', 1)
    end
  end
  if keep and rank >= 0 and redis.call('ZCARD', P .. 'q:' .. host) >= HEAD then
    -- the head is full: the better-tier one of the new entry and the head's worst (unless
    -- that one is leased) stays in the head, the other waits in the tail
    local worst = redis.call('ZRANGE', P .. 'q:' .. host, -1, -1, 'WITHSCORES')
    local weid, wscore = worst[1], tonumber(worst[2])
    local lid = redis.call('HGET', hk, 'lease')
    local leased = lid and string.match(redis.call('HGET', P .. 'L', lid) or '',
                                        '^.*\t(.*)\t.*$')
    if wscore >= 0 and tier_of(wscore, tiers) > tier_of(rank * RANK_SCALE, tiers)
        and weid ~= leased then
      local wblob = redis.call('HGET', P .. 'e', weid)
      redis.call('ZREM', P .. 'q:' .. host, weid)
      redis.call('HDEL', P .. 'e', weid)
      redis.call('HDEL', P .. 'att', weid)
      tail_push(host, (wscore - tonumber(weid)) / RANK_SCALE, wblob, tiers)
    else
      tail_push(host, ARGV[i + 2], blob, tiers)
      added = added + 1
      keep = false
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
