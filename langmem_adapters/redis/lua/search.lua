-- FT.SEARCH with ARGV[2..] as its arguments (NOCONTENT, or RETURN 1 d for KNN), then the meta and
-- created_at of the hits read here, as one bulk reply that parses far faster than the nested one:
-- [hits, distance of the last hit or null, [[meta, created, distance or null], ...]]. A KNN hit is
-- an item's vector document (P:v:...), read through its item (P:i:...); one whose item has no
-- vectors (a document left behind when its item was removed out of band) is left out.
-- ARGV[1] > 0 reads only that many hits plus those tied with the last of them (a KNN page whose
-- rows all match needs no more); 0 reads every hit. A hit whose key expired reads as nil and is left
-- out; ``hits`` still counts it, so the caller can tell a short window from an exhausted result.
local load = tonumber(ARGV[1])
local r = redis.call('FT.SEARCH', unpack(ARGV, 2))
local step = type(r[3]) == 'table' and 2 or 1
local rows, hits, edge, d = {}, 0, nil, 'null'
for i = 2, #r, step do
  hits = hits + 1
  d = 'null'
  if step == 2 then
    local f = r[i + 1]
    for j = 1, #f, 2 do
      if f[j] == 'd' and string.match(f[j + 1], '^[-+0-9.eE]+$') then d = f[j + 1] end
    end
  end
  if load == 0 or hits <= load or d == edge then
    local key, n = string.gsub(r[i], '^([^:]*):v:', '%1:i:')
    local v = redis.call('HMGET', key, 'm', 'c', 'h')
    if v[1] and (n == 0 or (v[3] and v[3] ~= '[]')) then
      rows[#rows + 1] = '[' .. v[1] .. ',' .. v[2] .. ',' .. d .. ']'
    end
  end
  if hits == load then edge = d end
end
return '[' .. hits .. ',' .. d .. ',[' .. table.concat(rows, ',') .. ']]'
