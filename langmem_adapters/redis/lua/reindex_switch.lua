-- The switch of a reindex (single server): every live item takes the vectors of its shadow, in one
-- script call, so a search sees all old vectors before it and all new ones after.
-- KEYS: the registry, the embedders hash, the reindex state, its text-hash cache, then the ZSETs of
-- the namespaces, in the order of ARGV[4 + i].
-- ARGV: now_ms, query engine ("1"/"0"), identity field name and value, then the namespaces.
-- A shadow with a field w (a hybrid store's) also replaces the item's words ('' removes them).
-- A shadow records the SHA1 of the item meta it was made from (s): an item written since, one
-- without a shadow, or a registry namespace not passed changes nothing and is returned for a
-- catch-up: {'stale', item keys...} or {'namespaces', names...} (at most 1000 a call); else
-- {'ok', items switched}.
local now, qe = ARGV[1], ARGV[2] == '1'
local passed = {}
for i = 5, #ARGV do passed[ARGV[i]] = true end
local unknown = {}
for _, ns in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')) do
  if not passed[ns] and #unknown < 1000 then unknown[#unknown + 1] = ns end
end
if #unknown > 0 then return {'namespaces', unpack(unknown)} end
local function shadow(key) return (string.gsub(key, '^([^:]*):i:', '%1:r:')) end
local function vkey(key) return (string.gsub(key, '^([^:]*):i:', '%1:v:')) end
local live, stale = {}, {}
for z = 5, #KEYS do
  for _, key in ipairs(redis.call('ZRANGE', KEYS[z], '(' .. now, '+inf', 'BYSCORE')) do
    local m = redis.call('HGET', key, 'm')
    if m then
      if redis.call('HGET', shadow(key), 's') == redis.sha1hex(m) then
        live[#live + 1] = key
      elseif #stale < 1000 then  -- at most 1000 a call (a reply, and Lua's unpack, stay small)
        stale[#stale + 1] = key
      end
    end
  end
end
if #stale > 0 then return {'stale', unpack(stale)} end
for _, key in ipairs(live) do
  local r = shadow(key)
  local got = redis.call('HMGET', r, 'h', 'e', 'd', 'x', 'w')
  redis.call('HSET', key, 'h', got[1], 'e', got[2])
  if got[5] == '' then  -- a hybrid store's words (field w) switch with the vectors
    redis.call('HDEL', key, 'w')
  elseif got[5] then
    redis.call('HSET', key, 'w', got[5])
  end
  if qe then
    local v = vkey(key)
    if got[3] ~= '' then
      redis.call('JSON.SET', v, '$', got[3])
      local x = redis.call('HGET', key, 'x')
      if tonumber(x) >= NO_EXPIRY then redis.call('PERSIST', v) else redis.call('PEXPIREAT', v, x) end
    else
      redis.call('DEL', v)
    end
  end
  redis.call('DEL', r)
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
return {'ok', #live}
