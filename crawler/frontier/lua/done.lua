-- ARGV: prefix, now, tiers, head, lease id, delay, latency, backoff, requeue ('1'/'0'),
-- fetched ('1'/'0'), ip ('' = unchanged), refund ('1'/'0': the unfetched entry gives its
-- host a page of budget back, which its best waiting page takes). Returns 1, or 0 when the lease was already released (stale
-- report).
local tiers, lid = tonumber(ARGV[3]), ARGV[5]
local delay, requeue, fetched = tonumber(ARGV[6]), ARGV[9] == '1', ARGV[10] == '1'
local rec = redis.call('HGET', P .. 'L', lid)
if not rec then
  redis.call('HINCRBY', P .. 'stats', 'stale_reports', 1)
  return 0
end
local host, eid, ip = string.match(rec, '^(.*)\t(.*)\t(.*)$')
redis.call('HDEL', P .. 'L', lid)
redis.call('ZREM', P .. 'leases', lid)
redis.call('HINCRBY', P .. 'ipc', ip, -1)
if not requeue then
  redis.call('ZREM', P .. 'q:' .. host, eid)
  redis.call('HDEL', P .. 'e', eid)
  redis.call('HDEL', P .. 'att', eid)
  redis.call('HINCRBY', P .. 'stats', 'done', 1)
  refill(host, tiers)
end
local hk = P .. 'h:' .. host
if not requeue and ARGV[12] == '1' and tonumber(redis.call('HGET', hk, 'added') or '0') > 0 then
  redis.call('HINCRBY', hk, 'added', -1)
  redis.call('HINCRBY', P .. 'stats', 'budget_refunded', 1)
  promote(host, tiers)
end
local next_time = tonumber(redis.call('HGET', hk, 'next') or '0')
if fetched and now + delay > next_time then next_time = now + delay end
redis.call('HSET', hk, 'next', fmt(next_time), 'lat', ARGV[7], 'bo', ARGV[8])
if ARGV[11] ~= '' then redis.call('HSET', hk, 'ip', ARGV[11]) end
redis.call('HDEL', hk, 'lease')
make_ready(host, next_time, tiers)
return 1
