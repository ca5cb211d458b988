-- Cluster only: register namespaces in KEYS[1] before their items are written (another slot).
-- ARGV: now_ms - GRACE, then (expiry_ms, ns) pairs. Scores only grow (GT), so an entry always covers
-- the latest expiry of its namespace's items; readers check the namespace ZSET for live items.
local reg = KEYS[1]
for i = 2, #ARGV, 2 do redis.call('ZADD', reg, 'GT', ARGV[i], ARGV[i + 1]) end
redis.call('ZREMRANGEBYSCORE', reg, '-inf', ARGV[1])
-- REGISTRY_TTL
