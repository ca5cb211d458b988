-- FT.SEARCH with ARGV[2..] as its arguments (NOCONTENT, or RETURN 1 d for KNN), then the meta and
-- created_at of the hits read here, as one bulk reply that parses far faster than the nested one:
-- [hits, distance of the last hit or null, [[meta, created, distance or null], ...]]. A KNN hit is
-- an item's vector document (P:v:...), read through its item (P:i:...); one whose item has no
-- vectors (a document left behind when its item was removed out of band) is left out.
-- ARGV[1] > 0 reads only that many hits plus those tied with the last of them (a KNN page whose
-- rows all match needs no more); 0 reads every hit. A hit whose key expired reads as nil and is left
-- out; ``hits`` still counts it, so the caller can tell a short window from an exhausted result.
-- The reply is one table.concat of its pieces: Lua hashes and copies every string it makes, and a
-- string per row plus a joined body cost a fifth of the script beside its FT.SEARCH (measured).
local load = tonumber(ARGV[1])
local r = redis.call('FT.SEARCH', unpack(ARGV, 2))
local rows, n, sep = {''}, 1, '['
if type(r[3]) ~= 'table' then
  -- NOCONTENT (or no hits): item hashes, in order; every hit is read (it has no distance to tie on,
  -- so ARGV[1] changes nothing). A loop of its own, as it serves every filtered search: no key
  -- rewrite or field scan.
  for i = 2, #r do
    local v = redis.call('HMGET', r[i], 'm', 'c')
    if v[1] then
      rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], rows[n + 5] = sep, v[1], ',', v[2], ',null]'
      n, sep = n + 5, ',['
    end
  end
  rows[1] = '[' .. (#r - 1) .. ',null,['
  rows[n + 1] = ']]'
  return table.concat(rows)
end
local hits, edge, d = 0, nil, 'null'
for i = 2, #r, 2 do
  hits = hits + 1
  d = 'null'
  local f = r[i + 1]
  for j = 1, #f, 2 do
    if f[j] == 'd' and string.match(f[j + 1], '^[-+0-9.eE]+$') then d = f[j + 1] end
  end
  if load == 0 or hits <= load or d == edge then
    local key, item = string.gsub(r[i], '^([^:]*):v:', '%1:i:')
    local v = redis.call('HMGET', key, 'm', 'c', 'h')
    if v[1] and (item == 0 or (v[3] and v[3] ~= '[]')) then
      rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4] = sep, v[1], ',', v[2]
      rows[n + 5], rows[n + 6], rows[n + 7] = ',', d, ']'
      n, sep = n + 7, ',['
    end
  end
  if hits == load then edge = d end
end
rows[1] = '[' .. hits .. ',' .. d .. ',['
rows[n + 1] = ']]'
return table.concat(rows)
