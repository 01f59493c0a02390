-- ARGV: prefix, now, tiers, head. Returns {counters (flat pairs), queue depth, leases, ready,
-- cooldown, waiting}.
local tiers = tonumber(ARGV[3])
local ready, cooldown = 0, 0
local snow = fmt(now)
for t = 0, tiers - 1 do
  ready = ready + redis.call('ZCOUNT', P .. 'r:' .. t, '-inf', snow)
  cooldown = cooldown + redis.call('ZCOUNT', P .. 'r:' .. t, '(' .. snow, '+inf')
end
return {redis.call('HGETALL', P .. 'stats'), redis.call('HLEN', P .. 'e') + tonumber(redis.call('GET', P .. 'tailn') or '0'),
        redis.call('ZCARD', P .. 'leases'), ready, cooldown,
        tonumber(redis.call('GET', P .. 'waitn') or '0')}
