-- candidates(A): the lexical side of a hybrid search under the information fusion (Query Engine),
-- over A, the information script's arguments: the items index, the namespace and filter clauses
-- (text, may be empty), the rare share, the index's size (-1: count it here), the page's end, the
-- candidates to read (-1: all), the vector index, the store's key prefix, the query vector, k, u,
-- c, then k words known to be rare, u words not counted lately, c words known to be common, then
-- the counts of the k rare and the c common words. Each of the u words is counted first and is
-- rare when at most max(1, page, floor(share x size)) items hold it (HybridSpec.rare_bound), else
-- common. The candidates are the items within the clauses holding a rare word; each scores the
-- IDF sum ln(N / df) (core.information.idf) of the query words it holds (N the index's size, df
-- the word's count): one FT.SEARCH per rare word (within the clauses, LIMIT its count), one per
-- common word among the items holding a rare word (LIMIT the candidates). The `read` best
-- candidates and those tied with the last of them (no other can be among the caller's
-- candidates) get their distance to the query vector. Returns {total = how many candidates,
-- picked = the hash names of those read, sums = name -> IDF sum, dist = name -> the server's
-- distance (text; nil: no vectors), counts = the counts of the u words, size = the index's size,
-- mass = the IDF sum of every weighed query word some item holds: the sent counts (rare, then
-- common), then the u words'}.
local function candidates(A)
  local index, head, share = A[1], A[2], tonumber(A[3])
  local size, page, read = tonumber(A[4]), tonumber(A[5]), tonumber(A[6])
  local vindex, prefix, blob = A[7], A[8], A[9]
  local k, u, c = tonumber(A[10]), tonumber(A[11]), tonumber(A[12])
  if size < 0 then size = ft_search(index, '*', 'NOCONTENT', 'LIMIT', 0, 1, 'DIALECT', 2)[1] end
  local bound = math.max(1, page, math.floor(share * size))
  local function idf(n) return math.log(math.max(size, n) / n) end
  local kept, common, counts, mass = {}, {}, {}, 0
  local at = 12 + k + u + c  -- the counts follow the words
  for i = 1, k + c do
    local n = tonumber(A[at + i])
    if n > 0 then mass = mass + idf(n) end
  end
  for i = 1, k do kept[#kept + 1] = {A[12 + i], tonumber(A[at + i])} end
  for i = k + 1, k + u do
    local word = A[12 + i]
    local n = ft_search(index, '@w:($t)', 'VERBATIM', 'NOCONTENT', 'LIMIT', 0, 1, 'PARAMS', 2, 't', word, 'DIALECT', 2)[1]
    counts[#counts + 1] = n
    if n > 0 then mass = mass + idf(n) end
    if n > 0 and n <= bound then kept[#kept + 1] = {word, n} elseif n > 0 then common[#common + 1] = {word, n} end
  end
  for i = 1, c do common[#common + 1] = {A[12 + k + u + i], tonumber(A[at + k + i])} end
  local out = {total = 0, picked = {}, sums = {}, dist = {}, counts = counts, size = size, mass = mass}
  -- Every item a query matches (`limit`: how many it should match at most, from the counts; a
  -- count past it asks again for all of them): [total, hash name, ...]. Without the server's query
  -- timeout (TIMEOUT 0), so that the RESP2 reply is complete (ft_search's RESP3 reply, which alone
  -- tells a timed-out reply from a complete one, made the script 1.4 of its 3.3 ms on LongMemEval
  -- globally: a table per row). Such a query's work is bounded by the postings of the rare words
  -- (held by at most `bound` items each), as is the script's own work on the rows it returns.
  local function each(query, limit, ...)
    local r = redis.call('FT.SEARCH', index, query, 'VERBATIM', 'NOCONTENT', 'TIMEOUT', 0, 'LIMIT', 0, limit, ...)
    if r[1] > limit then
      r = redis.call('FT.SEARCH', index, query, 'VERBATIM', 'NOCONTENT', 'TIMEOUT', 0, 'LIMIT', 0, r[1], ...)
    end
    return r
  end
  local sums, order = out.sums, {}
  local sel = ''
  if head ~= '' then sel = ' ' .. head end
  for _, w in ipairs(kept) do
    local add = idf(w[2])
    local r = each('@w:($t)' .. sel, math.max(w[2], 1), 'PARAMS', 2, 't', w[1], 'DIALECT', 2)
    for i = 2, #r do
      local id = r[i]
      local s = sums[id]
      if not s then s = 0; order[#order + 1] = id end
      sums[id] = s + add
    end
  end
  if #order == 0 then return out end
  out.total = #order
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
    local add = idf(w[2])
    local r = each('@w:$c' .. anyrare, #order, unpack(args))
    for i = 2, #r do
      local id = r[i]
      local s = sums[id]
      if s then sums[id] = s + add end
    end
  end
  -- The candidates read: all (read < 0, or no more than `read`), else the `read` best and those
  -- tied with the last (IDF sums within 1e-9 of it, core.information.TIE_DIGITS: the caller orders
  -- ties by namespace and key, which the hash names do not follow), found by sorting the sums alone
  -- (sorting the candidates by their sums, a comparison function's call each, took 0.28 of the
  -- script's 1.8 ms on LongMemEval globally). The caller orders the candidates itself.
  local picked = order
  if read >= 0 and #order > read then
    local desc = {}
    for i, key in ipairs(order) do desc[i] = -sums[key] end
    table.sort(desc)
    local least = -desc[read] - 1e-9
    picked = {}
    for _, key in ipairs(order) do
      if sums[key] >= least then picked[#picked + 1] = key end
    end
  end
  out.picked = picked
  -- Their distances to the query vector: one KNN restricted to their vector documents (INKEYS; the
  -- nearest of an item's vectors; a brute-force scan of those alone, as exact as the vector side's
  -- own distances, which come from the same server): no vectors read or sent.
  local dist = out.dist
  local cut = #prefix + 4  -- an item hash's name is prefix:i:rest, its vector document's prefix:v:rest
  for from = 1, #picked, 1000 do  -- in chunks: unpack's stack is bounded
    local q = {vindex, '', 'INKEYS', 0}
    for i = from, math.min(from + 999, #picked) do q[#q + 1] = prefix .. ':v:' .. string.sub(picked[i], cut) end
    local n = #q - 4
    q[2], q[4] = '*=>[KNN ' .. n .. ' @e $B HYBRID_POLICY ADHOC_BF AS d]', n
    for _, x in ipairs({'TIMEOUT', 0, 'RETURN', 1, 'd', 'LIMIT', 0, n, 'PARAMS', 2, 'B', blob, 'DIALECT', 2}) do q[#q + 1] = x end
    local r = redis.call('FT.SEARCH', unpack(q))  -- RESP2, TIMEOUT 0: as `each`
    for i = 2, #r, 2 do dist[prefix .. ':i:' .. string.sub(r[i], cut)] = r[i + 1][2] end
  end
  return out
end
