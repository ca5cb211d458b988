-- The lexical side of a hybrid search under the information fusion (Query Engine). ARGV: the items
-- index, the namespace and filter clauses (text, may be empty), the rare share, the index's size
-- (-1: count it here), the page's end, the candidates to read (-1: all), k, u, c, then k words known
-- to be rare, u words not counted lately, c words known to be common, then the counts of the k
-- rare and the c common words. Each of the u words is counted first and is rare when at most
-- max(1, page, floor(share x size)) items hold it (HybridSpec.rare_bound), else common. The
-- candidates are the items within the clauses holding a rare word; each scores the IDF sum
-- ln(1 + (N - df + 0.5) / (df + 0.5)) of the query words it holds (N the index's size, df the
-- word's count): one FT.SEARCH per rare word (within the clauses), one per common word among the
-- candidates (INKEYS). The meta, created_at and vectors of the `read` best candidates and of those
-- tied with the last of them are read (no other can be among the caller's candidates). Returns one
-- JSON text [candidates, [[meta, created, vectors, sum], ...], [counts of the u words], size].
-- FT_SEARCH
local index, head, share = ARGV[1], ARGV[2], tonumber(ARGV[3])
local size, page, read = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local k, u, c = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
if size < 0 then size = ft_search(index, '*', 'NOCONTENT', 'LIMIT', 0, 1, 'DIALECT', 2)[1] end
local bound = math.max(1, page, math.floor(share * size))
local function idf(n) return math.log(1 + (size - n + 0.5) / (n + 0.5)) end
local kept, common, counts = {}, {}, {}
local at = 9 + k + u + c  -- the counts follow the words
for i = 1, k do kept[#kept + 1] = {ARGV[9 + i], tonumber(ARGV[at + i])} end
for i = k + 1, k + u do
  local word = ARGV[9 + i]
  local n = ft_search(index, '@w:($t)', 'VERBATIM', 'NOCONTENT', 'LIMIT', 0, 1, 'PARAMS', 2, 't', word, 'DIALECT', 2)[1]
  counts[#counts + 1] = n
  if n > 0 and n <= bound then kept[#kept + 1] = {word, n} elseif n > 0 then common[#common + 1] = {word, n} end
end
for i = 1, c do common[#common + 1] = {ARGV[9 + k + u + i], tonumber(ARGV[at + k + i])} end
local tail = ',[' .. table.concat(counts, ',') .. '],' .. size .. ']'
-- Every item a query matches (a count past the first answer's LIMIT asks again for all of them).
local function all(query, ...)
  local r = ft_search(index, query, 'VERBATIM', 'NOCONTENT', 'LIMIT', 0, bound, ...)
  if r[1] > bound then r = ft_search(index, query, 'VERBATIM', 'NOCONTENT', 'LIMIT', 0, r[1], ...) end
  return r
end
local sums, order = {}, {}
local sel = ''
if head ~= '' then sel = ' ' .. head end
for _, w in ipairs(kept) do
  local r = all('@w:($t)' .. sel, 'PARAMS', 2, 't', w[1], 'DIALECT', 2)
  for i = 2, #r do
    if not sums[r[i]] then sums[r[i]] = 0; order[#order + 1] = r[i] end
    sums[r[i]] = sums[r[i]] + idf(w[2])
  end
end
if #order == 0 then return '[0,[]' .. tail end
-- A common word adds to the candidates holding it: the items within the clauses holding it and a
-- rare word (no longer a list than the candidates).
local names, params = {}, {}
for i, w in ipairs(kept) do
  names[i] = '$t' .. i
  params[#params + 1] = 't' .. i
  params[#params + 1] = w[1]
end
local anyrare = ' @w:(' .. table.concat(names, '|') .. ')' .. sel
for _, w in ipairs(common) do
  local args = {'PARAMS', #params + 2, 'c', w[1]}
  for _, p in ipairs(params) do args[#args + 1] = p end
  args[#args + 1] = 'DIALECT'
  args[#args + 1] = 2
  local r = all('@w:$c' .. anyrare, unpack(args))
  for i = 2, #r do
    if sums[r[i]] then sums[r[i]] = sums[r[i]] + idf(w[2]) end
  end
end
table.sort(order, function(a, b) return sums[a] > sums[b] end)
if read < 0 then read = #order end
-- IDF sums within 1e-9 of the last read one are ties (core.information.TIE_DIGITS): the caller
-- orders ties by namespace and key, which the hash names do not follow.
local rows, n, sep, last = {''}, 1, '[', nil
for i, key in ipairs(order) do
  local s = sums[key]
  if i > read and s < last - 1e-9 then break end
  local v = redis.call('HMGET', key, 'm', 'c', 'e')
  if v[1] then
    rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4] = sep, v[1], ',', v[2]
    rows[n + 5], rows[n + 6], rows[n + 7] = ',', cjson.encode(v[3] or ''), ','
    rows[n + 8], rows[n + 9] = string.format('%.17g', s), ']'
    n, sep = n + 9, ',['
  end
  if i == read then last = s end
end
rows[1] = '[' .. #order .. ',['
rows[n + 1] = ']' .. tail
return table.concat(rows)
