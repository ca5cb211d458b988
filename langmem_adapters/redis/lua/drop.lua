-- Delete whole namespaces: their items, vector documents (Query Engine mode), reindex shadows, ZSETs
-- and registry entries.
-- KEYS: the registry when ARGV[3] is "1" (a single server), then the namespaces' ZSETs.
-- ARGV: now_ms, query engine ("1"/"0"), registry ("1"/"0"), the prefix's text, then the namespaces
-- (one per ZSET, in order). With the registry, the script first reads it: if it lists a namespace
-- under the prefix (whole labels) that is not among ARGV, nothing is deleted and the reply is
-- {0, missing namespaces...}, so the caller asks again with them; otherwise {1, live items deleted}.
-- A namespace created concurrently under the prefix is thus deleted whole or not touched at all.
local now, qe, reg, base = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3] == '1' and KEYS[1], ARGV[4]
local first = reg and 2 or 1
if reg then
  local given, missing = {}, {0}
  for i = 5, #ARGV do given[ARGV[i]] = true end
  for _, ns in ipairs(redis.call('ZRANGE', reg, 0, -1)) do
    if (ns == base or string.sub(ns, 1, #base + 1) == base .. '.') and not given[ns] then
      missing[#missing + 1] = ns
    end
  end
  if #missing > 1 then return missing end
end
local removed = 0
for i = first, #KEYS do
  local z = KEYS[i]
  local members = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
  for j = 1, #members, 2 do
    local key = members[j]
    -- an expired item reads as absent here: it is neither counted nor left behind
    if redis.call('DEL', key) == 1 and tonumber(members[j + 1]) > now then removed = removed + 1 end
    if qe then redis.call('DEL', (string.gsub(key, '^([^:]*):i:', '%1:v:'))) end
    redis.call('DEL', (string.gsub(key, '^([^:]*):i:', '%1:r:')))  -- its reindex shadow, if any
  end
  redis.call('DEL', z)
  if reg then redis.call('ZREM', reg, ARGV[i - first + 5]) end
end
if reg then
-- REGISTRY_TTL
end
return {1, removed}
