-- KEYS: the registry when ARGV[4] is "1" (not on a cluster, where it lives in another slot), then
-- per namespace group its ZSET and its item keys.
-- ARGV: now_ms - GRACE, query engine ("1"/"0"), groups, registry, now (us: created_at of new items
-- and updated_at); per group: ns, n; per item its op, then by op:
--   p put / a put-if-absent: ttl_ms, x, m, then in Query Engine mode p and t (tokens);
--   P / A the same for an item with vectors: ttl_ms, x, m, h, e, then p, t and the vector document;
--   r restore (R with vectors): created_us, updated_us, x, m, then as for p (P): the item is
--     written with these timestamps and expires at x (ms; NO_EXPIRY: never);
--   d delete: nothing; t touch (refresh TTL): ttl_ms, x.
-- A put or restore op followed by "w" (pw, Aw, ...) is a hybrid store's: one more argument at its
-- end, the item's indexed words (field w, which the items index reads as TEXT; '' removes it).
-- Returns the number of items written.
-- Entries of expired items are kept for GRACE ms (readers skip them) so sweep_ttl() can count them;
-- a group drops them when it deletes or writes an item with a TTL (a group of permanent writes
-- leaves them to the next such group or to sweep_ttl(): that saves a call per namespace).
-- Query Engine mode only runs on a single server: the vector document's key is derived here.
local old, qe, reg, c = ARGV[1], ARGV[2] == '1', ARGV[4] == '1' and KEYS[1], ARGV[5]
local function vkey(key) return (string.gsub(key, '^([^:]*):i:', '%1:v:')) end
local listed = {}  -- registry scores and namespaces
local trim, kept = false, false  -- a group deleted or wrote with a TTL; a group's top never expires
local a, k, written = 6, reg and 2 or 1, 0
for g = 1, tonumber(ARGV[3]) do
  local z, ns, n = KEYS[k], ARGV[a], tonumber(ARGV[a + 1])
  local forever = false  -- an item without expiry was written: the ZSET's top score is NO_EXPIRY
  local expiring = false  -- an item was deleted or written with a TTL
  k = k + 1
  a = a + 2
  for i = 1, n do
    local key, op = KEYS[k], ARGV[a]
    local hy = string.sub(op, 2) == 'w'  -- a hybrid store's write: its words come last
    op = string.sub(op, 1, 1)
    k = k + 1
    if op == 'd' then
      a = a + 1
      expiring = true
      redis.call('DEL', key)
      if qe then redis.call('DEL', vkey(key)) end
      redis.call('ZREM', z, key)
    elseif op == 't' then
      local ttl, x = ARGV[a + 1], ARGV[a + 2]
      a = a + 3
      if redis.call('PEXPIRE', key, ttl) == 1 then  -- 0: the item is gone, nothing to refresh
        redis.call('HSET', key, 'x', x)
        if qe then redis.call('PEXPIRE', vkey(key), ttl) end
        redis.call('ZADD', z, x, key)
      end
    else
      local restore = op == 'r' or op == 'R'
      local with = op == 'P' or op == 'A' or op == 'R'  -- the item has vectors now
      local ttl, x, m, created, updated
      if restore then
        created, updated, x, m = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
        a = a + 5
      else
        ttl, x, m, updated = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], c
        a = a + 4
      end
      local h, e, p, t, doc = '[]', ''
      if with then h, e, a = ARGV[a], ARGV[a + 1], a + 2 end
      if qe then p, t, a = ARGV[a], ARGV[a + 1], a + 2 end
      if qe and with then doc, a = ARGV[a], a + 1 end
      local words = {}
      if hy then
        if ARGV[a] ~= '' then words = {'w', ARGV[a]} end
        a = a + 1
      end
      -- the stored created_at, false when there is no item (the read doubles as the existence test),
      -- the stored text hashes ('[]' or absent: the item has no vectors), expiry and words
      local got = redis.call('HMGET', key, 'c', 'h', 'x', 'w')
      local stored = got[1]
      if not ((op == 'a' or op == 'A') and stored) then
        written = written + 1
        created = created or stored or c
        local vectors = with or (got[2] and got[2] ~= '[]')  -- now or before
        local v = qe and vectors and vkey(key)
        if qe and vectors then
          redis.call('HSET', key, 'm', m, 'h', h, 'e', e, 'c', created, 'x', x, 'u', updated, 'p', p, 't', t, unpack(words))
          if with then redis.call('JSON.SET', v, '$', doc) else redis.call('DEL', v) end
        elseif qe then  -- no vectors now or before: h and e stay absent
          redis.call('HSET', key, 'm', m, 'c', created, 'x', x, 'u', updated, 'p', p, 't', t, unpack(words))
        else
          redis.call('HSET', key, 'm', m, 'h', h, 'e', e, 'c', created, 'x', x, unpack(words))
        end
        -- words stored before and none now (a store without hybrid search writes none): removed
        if got[4] and not words[1] then redis.call('HDEL', key, 'w') end
        -- a vector document gets the item's expiry whatever it had (JSON.SET keeps a key's TTL)
        local lasting = (restore and tonumber(x) >= NO_EXPIRY) or ttl == ''
        if lasting then
          if stored then redis.call('PERSIST', key) end
          if qe and with then redis.call('PERSIST', v) end
        elseif restore then
          expiring = true
          redis.call('PEXPIREAT', key, x)
          if qe and with then redis.call('PEXPIREAT', v, x) end
        else
          expiring = true
          redis.call('PEXPIRE', key, ttl)
          if qe and with then redis.call('PEXPIRE', v, ttl) end
        end
        if got[3] ~= x then redis.call('ZADD', z, x, key) end  -- same expiry: the entry stands
        forever = forever or lasting
      end
    end
  end
  if expiring then redis.call('ZREMRANGEBYSCORE', z, '-inf', old) end
  trim, kept = trim or expiring, kept or forever
  local top = forever and {ns, NO_EXPIRY} or redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if top[2] then
    if reg then listed[#listed + 1] = top[2]; listed[#listed + 1] = ns end
    if tonumber(top[2]) >= NO_EXPIRY then redis.call('PERSIST', z) else redis.call('PEXPIREAT', z, top[2] + GRACE) end
  elseif reg then
    redis.call('ZREM', reg, ns)
  end
end
if reg then
  for i = 1, #listed, 1000 do  -- the registry entries of the batch, in a few ZADDs
    redis.call('ZADD', reg, unpack(listed, i, math.min(i + 999, #listed)))
  end
  -- Expired registry entries are trimmed as the ZSETs' are: by a batch that deletes or writes with
  -- a TTL (readers skip them meanwhile); and an entry that never expires is the registry's top, so
  -- it is made permanent without reading its top. Two calls of eight saved on a permanent put.
  if trim then redis.call('ZREMRANGEBYSCORE', reg, '-inf', old) end
  if kept then
    redis.call('PERSIST', reg)
  else
    -- REGISTRY_TTL
  end
end
return written
