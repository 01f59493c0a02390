-- ARGV: prefix, now, tiers, head, n, lease_s, ip_limit (0 = none), ip_wait, window, age_s,
-- ahead (a host due within that many seconds is eligible now).
-- In the tier picked, the host is the one of highest priority (its value from hash 'val',
-- 1 unless set, times 1 + seconds waited / age_s: base.host_priority) of the `window`
-- hosts eligible longest.
-- Leases up to n eligible hosts; returns a flat list, 10 fields per lease:
-- lease id, host, entry id, blob, score, deadline, attempts, latency, backoff, wait (seconds
-- until the host's next-eligible time, 0 when due).
local tiers, n = tonumber(ARGV[3]), tonumber(ARGV[5])
local lease_s, ip_limit, ip_wait = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local window, age_s = tonumber(ARGV[9]), tonumber(ARGV[10])
local ahead = tonumber(ARGV[11] or '0')
local cur = {}
local stored = redis.call('HGETALL', P .. 'sel')
for t = 0, tiers - 1 do cur[t] = 0 end
for j = 1, #stored, 2 do cur[tonumber(stored[j])] = tonumber(stored[j + 1]) end
local out, leased, waits = {}, 0, 0
local snow = fmt(now + ahead)
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
  local look = redis.call('ZRANGEBYSCORE', P .. 'r:' .. best, '-inf', snow, 'LIMIT', 0, window,
                         'WITHSCORES')
  if #look > 2 then
    local names = {}
    for j = 1, #look, 2 do names[#names + 1] = look[j] end
    local values = redis.call('HMGET', P .. 'val', unpack(names))
    local top = -1
    for j = 1, #names do
      local waited = now - tonumber(look[2 * j])
      if waited < 0 then waited = 0 end
      local p = tonumber(values[j] or '1') * (1 + waited / age_s)
      if p > top then top = p; host = names[j] end
    end
  end
  local hk = P .. 'h:' .. host
  local ip = redis.call('HGET', hk, 'ip')
  if ip_limit > 0 and tonumber(redis.call('HGET', P .. 'ipc', ip) or '0') >= ip_limit then
    redis.call('ZADD', P .. 'r:' .. best, fmt(now + ip_wait), host)
    waits = waits + 1
  else
    local wait = tonumber(redis.call('ZSCORE', P .. 'r:' .. best, host)) - now
    if wait < 0 then wait = 0 end
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
      for _, v in ipairs({lid, host, eid, blob, head[2], fmt(deadline), att, lat, bo,
                          fmt(wait)}) do
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
