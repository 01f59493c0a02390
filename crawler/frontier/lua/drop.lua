-- ARGV: prefix, now, tiers, head, host. Drops every entry queued for host but the one
-- leased (its head, its tail and its waiting list); an unleased host leaves the ready sets.
-- Returns the entries dropped (waiting pages not counted).
local tiers, host = tonumber(ARGV[3]), ARGV[5]
local hk = P .. 'h:' .. host
local q = P .. 'q:' .. host
local lid = redis.call('HGET', hk, 'lease')
local leased = lid and string.match(redis.call('HGET', P .. 'L', lid) or '',
                                    '^.*\t(.*)\t.*$')
local dropped = 0
for _, eid in ipairs(redis.call('ZRANGE', q, 0, -1)) do
  if eid ~= leased then
    redis.call('ZREM', q, eid)
    redis.call('HDEL', P .. 'e', eid)
    redis.call('HDEL', P .. 'att', eid)
    dropped = dropped + 1
  end
end
local tail = tonumber(redis.call('HGET', hk, 'tail') or '0')
if tail > 0 then
  for t = 0, tiers - 1 do redis.call('DEL', P .. 't:' .. host .. ':' .. t) end
  redis.call('HSET', hk, 'tail', 0)
  redis.call('DECRBY', P .. 'tailn', tail)
  dropped = dropped + tail
end
local waits = redis.call('ZCARD', P .. 'w:' .. host)
if waits > 0 then
  redis.call('DEL', P .. 'w:' .. host)
  redis.call('DECRBY', P .. 'waitn', waits)
end
if not lid then
  make_ready(host, tonumber(redis.call('HGET', hk, 'next') or '0'), tiers)
end
return dropped
