-- A whole hybrid search under the information fusion in one script (Query Engine, every condition
-- answered by the server): the vector side's KNN window, the lexical candidates
-- (lua/candidates.lua), the fusion of core.information.fuse_information, and the records of the
-- fused page alone. ARGV: offset, limit, depth (the lexical candidates wanted), floor, vector
-- weight, lexical weight, the distance ('cosine', 'inner_product', 'l2'), the window, the
-- namespace prefix (text) the window's rows are checked under ('': none; the window's query left
-- it out, as it holds the whole index), nv, then the nv arguments of the window's FT.SEARCH (KNN,
-- RETURN 1 d), then the candidates' arguments.
-- Returns one JSON text: [0] when the window cannot tell the page (its last row ties with the
-- page's last, or rows were gone: the caller asks both sides again, wider); else [1, [[meta,
-- created, distance, score], ...] (the page, best first), the vector side's hash names when it
-- ran short of the page (else null), [counts of the u words], size].
-- FT_SEARCH
-- CANDIDATES
local offset, limit, depth = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local floor, vw, lw, metric = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local window, under, nv = tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10])
local need = offset + limit

-- The server's distance as pgvector's (redis/search.py standard_distance), as Python computes it.
local function standard(d)
  if metric == 'inner_product' then return d - 1.0 end
  if metric == 'l2' then return math.pow(math.max(d, 0.0), 0.5) end
  return d
end

-- Byte order of two texts (Python's order of str, as UTF-8; Lua's `<` follows the server's
-- collation locale). A faster path through `<` under a byte-order locale saved 0.06 of the
-- script's 2.1 ms on LongMemEval: not kept.
local function less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- An item's {namespace text, key} from its hash's name, prefix:i:{tag}:length:namespace:key (as
-- Keys.item_id reads it).
local skip = #ARGV[18 + nv] + 4
local function ident(name)
  local len, rest = string.match(name, '^.-}:(%d+):(.*)$', skip + 1)
  len = tonumber(len)
  return {string.sub(rest, 1, len), string.sub(rest, len + 2)}
end

-- Whether item a ({hash name, ...}) comes before item b when their numbers tie: by namespace,
-- then key (read from the names when first needed).
local function before(a, b)
  a.id, b.id = a.id or ident(a[1]), b.id or ident(b[1])
  local x, y = a.id, b.id
  if x[1] ~= y[1] then return less(x[1], y[1]) end
  return less(x[2], y[2])
end

-- The vector side: the window's rows read as lua/search.lua reads a KNN page (the first `need`
-- and those tied with the last of them, or every row when a prefix is checked here; an item gone,
-- without vectors or outside the prefix left out), ordered by distance, ties by namespace and key
-- (Searcher.run).
local r = ft_search(unpack(ARGV, 11, 10 + nv))
local vec, hits, edge, last = {}, 0, nil, nil
for i = 2, #r, 2 do
  hits = hits + 1
  local f, d = r[i + 1], nil
  for j = 1, #f, 2 do
    if f[j] == 'd' then d = tonumber(f[j + 1]) end
  end
  if d == nil then return '[0]' end
  if under ~= '' or hits <= need or d == edge then
    local key = string.gsub(r[i], '^([^:]*):v:', '%1:i:')
    local row = {key, d, standard(d)}
    if under ~= '' then
      row.id = ident(key)
      local ns = row.id[1]
      if ns ~= under and string.sub(ns, 1, #under + 1) ~= under .. '.' then row = nil end
    end
    if row and redis.call('HSTRLEN', key, 'h') > 2 then vec[#vec + 1] = row end
  end
  if hits == need then edge = d end
  last = d
end
if hits >= window and not (#vec >= need and vec[need][2] ~= last) then return '[0]' end
table.sort(vec, function(a, b)
  if a[3] ~= b[3] then return a[3] < b[3] end
  return before(a, b)
end)

-- The lexical side, ordered by IDF sum to TIE_DIGITS decimals, ties by namespace and key, cut to
-- `depth` and the floor (information_page).
local side = candidates({unpack(ARGV, 11 + nv)})
local lex = {}
for _, key in ipairs(side.picked) do
  local d = side.dist[key]
  if d or redis.call('EXISTS', key) == 1 then
    local s = side.sums[key]
    local tie = string.format('%.9f', s)
    lex[#lex + 1] = {key, s, d and standard(tonumber(d)) or math.huge, tie, tonumber(tie)}
  end
end
for i, c in ipairs(lex) do c.at = i end
table.sort(lex, function(a, b)
  if a[5] ~= b[5] then return a[5] > b[5] end
  return a.at < b.at
end)
-- Within a tie (the same sum to TIE_DIGITS decimals) the order is namespace and key; it decides only
-- which candidates a cut through the tie keeps (sorted here, for a tie a cut runs through), the best
-- sum the floor is taken of, and the order of candidates whose fused nats tie (the fusion's
-- comparison, below): sorting every tie by name took 0.3 of the script's 2.1 ms on LongMemEval.
local function settle(at)  -- the tie across positions at and at + 1 in namespace and key order
  if at < 1 or at >= #lex or lex[at][4] ~= lex[at + 1][4] then return end
  local first, last = at, at + 1
  while first > 1 and lex[first - 1][4] == lex[at][4] do first = first - 1 end
  while last < #lex and lex[last + 1][4] == lex[at][4] do last = last + 1 end
  local group = {}
  for i = first, last do group[#group + 1] = lex[i] end
  table.sort(group, before)
  for i, c in ipairs(group) do lex[first + i - 1] = c end
end
settle(depth)
while #lex > depth do lex[#lex] = nil end
local best = lex[1]
for i = 2, #lex do
  if lex[i][4] ~= lex[1][4] then break end
  if before(lex[i], best) then best = lex[i] end
end
local kept = 0
for _, c in ipairs(lex) do
  if c[2] >= floor * best[2] then kept = kept + 1 end
end
settle(kept)
while #lex > kept do lex[#lex] = nil end
if lw <= 0 then lex = {} end

-- The fusion (core.information.fuse_information): each candidate's ln(M / rank of its distance)
-- and counted IDF sum, best first, ties in the order met (the vector side's, then the lexical's).
local ties, cut = {}, nil
for _, c in ipairs(lex) do ties[c[4]] = (ties[c[4]] or 0) + 1 end
if #lex > 0 and #lex >= depth then cut = lex[#lex][4] end
local names, dist, counted, entry = {}, {}, {}, {}
local function add(key, d)
  if dist[key] ~= nil then return false end
  names[#names + 1] = key
  dist[key] = d
  return true
end
if vw > 0 then
  for i = 1, math.min(need, #vec) do add(vec[i][1], vec[i][3]) end
end
for _, c in ipairs(lex) do
  if add(c[1], c[3]) then entry[c[1]] = c end  -- met first on the lexical side
  if ties[c[4]] <= need and c[4] ~= cut then counted[c[1]] = c[2] end
end
local ordered = {}
for i, key in ipairs(names) do ordered[i] = dist[key] end
table.sort(ordered)
local function nearer(d)  -- how many candidates are strictly nearer than d (bisect_left)
  local lo, hi = 0, #ordered
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if ordered[mid + 1] < d then lo = mid + 1 else hi = mid end
  end
  return lo
end
local top = vw * math.log(math.max(#ordered, 1))
local most = top + lw * ((#lex > 0) and side.mass or 0.0)
local nats, at = {}, {}
for i, key in ipairs(names) do
  nats[key] = -vw * math.log(1 + nearer(dist[key])) + lw * (counted[key] or 0.0)
  at[key] = i
end
table.sort(names, function(a, b)
  if nats[a] ~= nats[b] then return nats[a] > nats[b] end
  local x, y = entry[a], entry[b]
  if x and y and x[4] == y[4] then return before(x, y) end  -- met in a lexical tie
  return at[a] < at[b]
end)

-- The page's records, each with its distance and fused score (an item gone since: left out).
local rows, n, sep = {''}, 1, '['
local raw = {}
for _, v in ipairs(vec) do raw[v[1]] = v[2] end
for _, c in ipairs(lex) do
  if raw[c[1]] == nil and side.dist[c[1]] then raw[c[1]] = tonumber(side.dist[c[1]]) end
end
for i = offset + 1, math.min(need, #names) do
  local key = names[i]
  local v = redis.call('HMGET', key, 'm', 'c')
  if v[1] then
    local score = 1.0
    if most > 0 then score = math.min(1.0, math.max(0.0, (top + nats[key]) / most)) end
    local d = raw[key] and string.format('%.17g', raw[key]) or 'null'
    rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4] = sep, v[1], ',', v[2]
    rows[n + 5], rows[n + 6], rows[n + 7], rows[n + 8] = ',', d, ',', string.format('%.17g', score)
    rows[n + 9], n, sep = ']', n + 9, ',['
  end
end
local short = 'null'
if #vec < need then
  local all = {}
  for i, v in ipairs(vec) do all[i] = cjson.encode(v[1]) end
  short = '[' .. table.concat(all, ',') .. ']'
end
rows[1] = '[1,['
rows[n + 1] = '],' .. short .. ',[' .. table.concat(side.counts, ',') .. '],' .. side.size .. ']'
return table.concat(rows)
