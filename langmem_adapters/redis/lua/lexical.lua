-- The lexical side of a hybrid search: FT.SEARCH with ARGV as its arguments (NOCONTENT WITHSCORES),
-- then the meta and created_at of the hits read here, as one JSON text:
-- [hits, [[meta, created, score], ...]]. A hit whose key expired reads as nil and is left out; hits
-- still counts it, so the caller can tell a short window from an exhausted result.
local r = redis.call('FT.SEARCH', unpack(ARGV))
local rows = {}
for i = 2, #r, 2 do
  local v = redis.call('HMGET', r[i], 'm', 'c')
  if v[1] then rows[#rows + 1] = '[' .. v[1] .. ',' .. v[2] .. ',' .. r[i + 1] .. ']' end
end
return '[' .. r[1] .. ',[' .. table.concat(rows, ',') .. ']]'
