-- Live items of one namespace (plain mode): KEYS[1] its ZSET; ARGV now_ms, with_vectors ("1"/"0"),
-- and optionally with_words ("1": a hybrid search also reads each item's words, field w).
-- Returns one JSON text [[meta, created, vectors?, words?], ...]: a single reply parses fast client-side.
local rows = {}
local words = ARGV[3] == '1'
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE')) do
  local v = redis.call('HMGET', key, 'm', 'c', 'e', 'w')
  if v[1] then
    local row = '[' .. v[1] .. ',' .. v[2]
    if ARGV[2] == '1' then row = row .. ',"' .. v[3] .. '"' end
    if words then row = row .. ',"' .. (v[4] or '') .. '"' end
    rows[#rows + 1] = row .. ']'
  end
end
return '[' .. table.concat(rows, ',') .. ']'
