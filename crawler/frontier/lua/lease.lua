-- ARGV: prefix, now, tiers, head, n, lease_s, ip_limit (0 = none), ip_wait.
-- Leases up to n eligible hosts; returns a flat list, 9 fields per lease:
-- lease id, host, entry id, blob, score, deadline, attempts, latency, backoff.
local tiers, n = tonumber(ARGV[3]), tonumber(ARGV[5])
local lease_s, ip_limit, ip_wait = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local cur = {}
local stored = redis.call('HGETALL', P .. 'sel')
for t = 0, tiers - 1 do cur[t] = 0 end
for j = 1, #stored, 2 do cur[tonumber(stored[j])] = tonumber(stored[j + 1]) end
local out, leased, waits = {}, 0, 0
local snow = fmt(now)
for _ = 1, n * 3 do
  if leased >= n then break end
  local heads, best, total = {}, nil, 0
  for t = 0, tiers - 1 do
    local h = redis.call('ZRANGEBYSCORE', P .. 'r:' .. t, '-inf', snow, 'LIMIT', 0, 1)
    if h[1] then
      heads[t] = h[1]
      local w = 2 ^ (tiers - 1 - t)
      cur[t] = cur[t] + w
      total = total + w
      if best == nil or cur[t] > cur[best] then best = t end
    end
  end
  if best == nil then break end
  cur[best] = cur[best] - total
  local host = heads[best]
  local hk = P .. 'h:' .. host
  local ip = redis.call('HGET', hk, 'ip')
  if ip_limit > 0 and tonumber(redis.call('HGET', P .. 'ipc', ip) or '0') >= ip_limit then
    redis.call('ZADD', P .. 'r:' .. best, fmt(now + ip_wait), host)
    waits = waits + 1
  else
    redis.call('ZREM', P .. 'r:' .. best, host)
    redis.call('HDEL', hk, 'tier')
    local head = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
    if head[1] then
      local eid = head[1]
      local lid = tostring(redis.call('INCR', P .. 'lseq'))
      local deadline = now + lease_s
      redis.call('HSET', hk, 'lease', lid)
      redis.call('HINCRBY', P .. 'ipc', ip, 1)
      redis.call('ZADD', P .. 'leases', fmt(deadline), lid)
      redis.call('HSET', P .. 'L', lid, host .. '\t' .. eid .. '\t' .. ip)
      local lat = redis.call('HGET', hk, 'lat') or '0'
      local bo = redis.call('HGET', hk, 'bo') or '0'
      local att = redis.call('HGET', P .. 'att', eid) or '0'
      local blob = redis.call('HGET', P .. 'e', eid)
      for _, v in ipairs({lid, host, eid, blob, head[2], fmt(deadline), att, lat, bo}) do
        out[#out + 1] = v
      end
      leased = leased + 1
    end
  end
end
for t = 0, tiers - 1 do redis.call('HSET', P .. 'sel', t, cur[t]) end
if leased > 0 then redis.call('HINCRBY', P .. 'stats', 'leased', leased) end
if waits > 0 then redis.call('HINCRBY', P .. 'stats', 'politeness_waits/ip', waits) end
return out
