-- ARGV: prefix, now, tiers, head, k, robots_first ('1'/'0'), waiting cap (0 = none), then
-- per entry: host, ip, rank, budget ('' = none), filter ('1'/'0'), blob, and the k Bloom
-- bit positions packed as big-endian uint32s. With robots_first, a host seen for the first
-- time gets a robots.txt fetch at the head of its queue. A page its own budget refuses
-- waits on the host's waiting list (common.lua set_aside). Returns {added, seen,
-- over_budget (dropped), waiting}.
local tiers = tonumber(ARGV[3])
local k = tonumber(ARGV[5])
local robots_first = ARGV[6] == '1'
local cap = tonumber(ARGV[7])
local stride = 7
local added, seen, over, waiting = 0, 0, 0, 0
for i = 8, #ARGV, stride do
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
    local own = tonumber(budget)
    local b = own
    local cut = redis.call('HGET', hk, 'cut')
    cut = cut and tonumber(cut)
    if cut and (b == nil or cut < b) then b = cut end
    if b ~= nil and tonumber(redis.call('HGET', hk, 'added')) >= b then
      keep = false
      if cap > 0 and own ~= nil and (not cut or cut > own) then
        local waits, dropped = set_aside(host, ARGV[i + 2], budget, blob, cap)
        waiting = waiting + waits
        over = over + dropped
      else
        over = over + 1
      end
    elseif filter == '1' or budget ~= '' then
      -- a copy of a page queued before (a re-push) takes no more of the budget
      redis.call('HINCRBY', hk, 'added', 1)
    end
  end
  if keep then
    enqueue(host, ARGV[i + 2], blob, tiers)
    added = added + 1
  end
end
if added > 0 then redis.call('HINCRBY', P .. 'stats', 'added', added) end
if seen > 0 then redis.call('HINCRBY', P .. 'stats', 'dropped/seen', seen) end
if over > 0 then redis.call('HINCRBY', P .. 'stats', 'dropped/budget', over) end
if waiting > 0 then redis.call('HINCRBY', P .. 'stats', 'budget_waiting', waiting) end
return {added, seen, over, waiting}
