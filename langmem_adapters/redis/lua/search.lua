-- FT.SEARCH with ARGV[4..] as its arguments (NOCONTENT, or RETURN 1 d for KNN), then the meta and
-- created_at of the hits read here, as one bulk reply that parses far faster than the nested one:
-- [hits, distance of the last hit or null, [[meta, created, distance or null], ...]]. A KNN hit is
-- an item's vector document (P:v:...), read through its item (P:i:...); one whose item has no
-- vectors (a document left behind when its item was removed out of band) is left out.
-- ARGV[1] > 0 reads only that many hits plus those tied with the last of them (a KNN page whose
-- rows all match needs no more); 0 reads every hit. A hit whose key expired reads as nil and is left
-- out; ``hits`` still counts it, so the caller can tell a short window from an exhausted result.
-- ARGV[2] > 0: a newest-first window of that many rows (ARGV[4] the index, ARGV[5] the query) read
-- by a shortcut first when one is exact (below), ARGV[3] a guess for it ('' none); the reply's
-- second field is then the window's last updated_at when the window is full (else null).
-- The reply is one table.concat of its pieces: Lua hashes and copies every string it makes, and a
-- string per row plus a joined body cost a fifth of the script beside its FT.SEARCH (measured).
-- FT_SEARCH
local load, w, guess = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local r, edge
if w > 0 then
  -- The plain query gathers and sorts every match. Two shortcuts read only the newest ones, through
  -- ``o`` (the indexed copy of ``u``), and are kept only when provably the same window:
  -- 1. the query within ``o >= guess`` (the last such window's edge): when at least ``w`` matches are
  --    that new, the ``w`` newest matches are all among them, and this query sorts them all;
  -- 2. RediSearch's sort optimizer (WITHOUTCOUNT), which walks the newest ranges of ``o`` but may
  --    return a short window or miss rows: kept when full and when the matches newer than its last
  --    row, counted by the index, are exactly its rows newer than that row.
  local idx, q = ARGV[4], ARGV[5]
  local function within(range) return q == '*' and range or (q .. ' ' .. range) end
  if guess ~= '' then
    local h = ft_search(idx, within('@o:[' .. guess .. ' +inf]'), 'SORTBY', 'u',
      'DESC', 'LIMIT', 0, w, 'NOCONTENT', 'WITHSORTKEYS', 'DIALECT', 2)
    if h[1] >= w then r = h end
  end
  if not r then
    local o = ft_search(idx, q, 'SORTBY', 'o', 'DESC', 'WITHOUTCOUNT', 'LIMIT', 0, w,
      'NOCONTENT', 'WITHSORTKEYS', 'DIALECT', 2)
    if #o == 2 * w + 1 then
      local e = string.sub(o[#o], 2)  -- a sort key is '#' and the number
      local last, newer = tonumber(e), 0
      for i = 3, #o, 2 do
        if tonumber(string.sub(o[i], 2)) > last then newer = newer + 1 end
      end
      -- LIMIT 0 1: a count-only LIMIT 0 0 reply past the TIMEOUT can come back short unwarned
      local c = ft_search(idx, within('@o:[(' .. e .. ' +inf]'), 'NOCONTENT', 'LIMIT', 0, 1,
        'DIALECT', 2)
      if c[1] == newer then r = o end
    end
  end
  -- else the plain query, whose last sort key is the next guess (none when the window is short:
  -- every match is in it, and the range of a guess would hold them all)
  r = r or ft_search(idx, q, 'SORTBY', 'u', 'DESC', 'LIMIT', 0, w, 'NOCONTENT',
    'WITHSORTKEYS', 'DIALECT', 2)
  local key = r[#r]  -- '#' and the number (a hash without ``u``, not written here, has none)
  if #r == 2 * w + 1 and type(key) == 'string' and string.match(key, '^#[-+0-9.eE]+$') then
    edge = string.sub(key, 2)
  end
  local ids = {0}  -- the count's place (read as #r - 1 below)
  for i = 2, #r, 2 do ids[#ids + 1] = r[i] end
  r = ids
end
r = r or ft_search(unpack(ARGV, 4))
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
  rows[1] = '[' .. (#r - 1) .. ',' .. (edge or 'null') .. ',['
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
