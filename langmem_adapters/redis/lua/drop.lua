-- Delete whole namespaces a bounded batch at a time: their items, vector documents (Query Engine
-- mode), reindex shadows, ZSETs and registry entries.
-- KEYS: the registry when ARGV[3] is not "0" (a single server), then the namespaces' ZSETs.
-- ARGV: now_ms, query engine ("1"/"0"), registry ("0": none, a cluster; "1": kept; "2": kept and
-- checked), the prefix's text, the batch (most ZSET entries and namespaces this call handles),
-- then the namespaces (one per ZSET, in order).
-- The namespaces are emptied in order, each from its lowest score up, so the namespace's top score
-- (its registry score) stands until its last entry goes: after every call each namespace is whole
-- but smaller, or gone with its ZSET and registry entry. With "2", once every given namespace is
-- gone, the script reads the registry and replies the namespaces under the prefix (whole labels)
-- it still lists (created meanwhile: the caller deletes them next).
-- Reply: {live items deleted, namespaces emptied (the first ones given), listed namespaces...}.
local now, qe, base = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[4]
local reg = ARGV[3] ~= '0' and KEYS[1]
local first, left = reg and 2 or 1, tonumber(ARGV[5])
local removed, emptied = 0, 0
for i = first, #KEYS do
  if left <= 0 then break end
  local z = KEYS[i]
  local members = redis.call('ZRANGE', z, 0, left - 1, 'WITHSCORES')
  for j = 1, #members, 2 do
    local key = members[j]
    -- an expired item reads as absent here: it is neither counted nor left behind
    if redis.call('DEL', key) == 1 and tonumber(members[j + 1]) > now then removed = removed + 1 end
    if qe then redis.call('DEL', (string.gsub(key, '^([^:]*):i:', '%1:v:'))) end
    redis.call('DEL', (string.gsub(key, '^([^:]*):i:', '%1:r:')))  -- its reindex shadow, if any
  end
  left = left - #members / 2 - 1
  if #members > 0 then redis.call('ZREMRANGEBYRANK', z, 0, #members / 2 - 1) end
  if redis.call('ZCARD', z) > 0 then break end
  redis.call('DEL', z)
  if reg then redis.call('ZREM', reg, ARGV[i - first + 6]) end
  emptied = emptied + 1
end
local reply = {removed, emptied}
if reg and emptied == #KEYS - 1 then
  if ARGV[3] == '2' then
    for _, ns in ipairs(redis.call('ZRANGE', reg, 0, -1)) do
      if ns == base or string.sub(ns, 1, #base + 1) == base .. '.' then reply[#reply + 1] = ns end
    end
  end
-- REGISTRY_TTL
end
return reply
