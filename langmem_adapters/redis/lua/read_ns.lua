-- Live items of one namespace (plain mode): KEYS[1] its ZSET; ARGV now_ms, with_vectors ("1"/"0").
-- Returns one JSON text [[meta, created, vectors?], ...]: a single reply parses fast client-side.
local rows = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE')) do
  local v = redis.call('HMGET', key, 'm', 'c', 'e')
  if v[1] then
    local row = '[' .. v[1] .. ',' .. v[2]
    if ARGV[2] == '1' then row = row .. ',"' .. v[3] .. '"' end
    rows[#rows + 1] = row .. ']'
  end
end
return '[' .. table.concat(rows, ',') .. ']'
