-- ARGV: prefix, now, tiers, head, max_attempts, limit. Returns the number of leases released.
local tiers, max_attempts, limit = tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6])
local ids = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', '(' .. fmt(now), 'LIMIT', 0, limit)
for _, lid in ipairs(ids) do
  local rec = redis.call('HGET', P .. 'L', lid)
  redis.call('ZREM', P .. 'leases', lid)
  if rec then
    local host, eid, ip = string.match(rec, '^(.*)\t(.*)\t(.*)$')
    redis.call('HDEL', P .. 'L', lid)
    redis.call('HINCRBY', P .. 'ipc', ip, -1)
    if redis.call('HINCRBY', P .. 'att', eid, 1) >= max_attempts then
      redis.call('ZREM', P .. 'q:' .. host, eid)
      redis.call('HDEL', P .. 'e', eid)
      redis.call('HDEL', P .. 'att', eid)
      redis.call('HINCRBY', P .. 'stats', 'dropped/lease_expired', 1)
      refill(host, tiers)
    end
    local hk = P .. 'h:' .. host
    redis.call('HDEL', hk, 'lease')
    local next_time = tonumber(redis.call('HGET', hk, 'next') or '0')
    if now > next_time then next_time = now end
    make_ready(host, next_time, tiers)
  end
end
if #ids > 0 then redis.call('HINCRBY', P .. 'stats', 'expired', #ids) end
return #ids
