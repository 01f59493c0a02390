-- ARGV: prefix, now, tiers, head, host, budget. Cuts host's page budget to budget; a cut
-- raised lets its waiting pages in (common.lua promote). Returns the pages queued.
local tiers, host = tonumber(ARGV[3]), ARGV[5]
redis.call('HSET', P .. 'h:' .. host, 'cut', ARGV[6])
return promote(host, tiers)
