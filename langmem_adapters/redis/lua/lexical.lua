-- The lexical side of a hybrid search (Query Engine). ARGV: the items index, the namespace and
-- filter clauses (text, may be empty), the window, the rare share, the index's size (-1: count it
-- here), the page's end, the hits to read (see below), k, u, then k words known to be rare, u words
-- not counted lately and the query's other words (known to be common). Each of the u words is counted first (FT.SEARCH ...
-- LIMIT 0 1) and is rare when at most max(1, page, floor(share x size)) items hold it
-- (HybridSpec.rare_bound), else common. The rare words select the hits; the common ones add to the
-- BM25STD scores of those hits and select none. All are passed as query parameters (never spliced
-- into the query); the clauses select only (the words alone score);
-- then the meta and created_at of the first `read` hits and of those tied with the last of them are
-- read here; the others (scoring strictly less) come back as their key alone: past the page's end on
-- the lexical side, an item reaches the page only when the vector side has it (and read it), so a
-- caller that checks no condition on the rows reads only the page's end (an item is ~2 KB on
-- LongMemEval: reading all 40 candidates made the script 1.3 ms against 0.5 ms). Returns one JSON
-- text [hits, [[meta, created, score] or [key, score], ...], [counts of the u words], size]. A hit
-- whose key expired is left out; hits still counts it, so the caller can tell a short window from an
-- exhausted result.
-- FT_SEARCH
local index, head, window, share = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local size, page, read = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local k, u = tonumber(ARGV[8]), tonumber(ARGV[9])
if size < 0 then size = ft_search(index, '*', 'NOCONTENT', 'LIMIT', 0, 1, 'DIALECT', 2)[1] end
local bound = math.max(1, page, math.floor(share * size))
local kept, common, counts = {}, {}, {}
for i = 1, k do kept[#kept + 1] = ARGV[9 + i] end
for i = k + 1, k + u do
  local word = ARGV[9 + i]
  -- LIMIT 0 1: a count-only LIMIT 0 0 reply past the TIMEOUT can come back short unwarned
  local n = ft_search(index, '@w:($t)', 'VERBATIM', 'NOCONTENT', 'LIMIT', 0, 1, 'PARAMS', 2, 't', word, 'DIALECT', 2)[1]
  counts[#counts + 1] = n
  if n > 0 and n <= bound then kept[#kept + 1] = word elseif n > 0 then common[#common + 1] = word end
end
for i = 10 + k + u, #ARGV do common[#common + 1] = ARGV[i] end
local counted = '[' .. table.concat(counts, ',') .. ']'
local tail = ',' .. counted .. ',' .. size .. ']'
if #kept == 0 then return '[0,[]' .. tail end
-- One branch per word, OR-ed: a rare word's branch selects the items holding it, a common word's
-- only those also holding a rare word. The clauses go into every branch, doubly negated: they still
-- select, but score nothing (BM25STD scores every term of a query, a tag clause too, by each item's
-- length; $weight 0 is ignored). Each branch is its own intersection because a union of words inside
-- an intersection (with the clauses, or with optional ~ terms) is advanced to each item and scores
-- only its first word that the item holds: the ranking then fell from 0.560 to 0.438 recall@5 on
-- LongMemEval under a namespace prefix (docs/hybrid.md). At the top, the union scores every branch
-- an item matches: the BM25STD sum over all the query's words it holds. The word comes first in its
-- branch: led by a doubly negated clause that every document matches, RediSearch returned one hit
-- where 18 items held the word (tests/redis/test_hybrid.py).
local sel = ''
if head ~= '' then sel = ' -(-(' .. head .. '))' end
local names, params, branches = {}, {}, {}
for i, word in ipairs(kept) do
  names[i] = '$t' .. i
  params[#params + 1] = 't' .. i
  params[#params + 1] = word
  branches[#branches + 1] = '(@w:$t' .. i .. sel .. ')'
end
-- A common word's branch: the word and, doubly negated once, a rare word within the clauses (one
-- double negation, not one for the clauses and one for the rare words: the same items and scores,
-- ~50 us less of the script's ~380 in a namespace on LongMemEval, replayed).
local anyrare = '-(-(@w:(' .. table.concat(names, '|') .. ') ' .. head .. '))'
for i, word in ipairs(common) do
  params[#params + 1] = 'c' .. i
  params[#params + 1] = word
  branches[#branches + 1] = '(@w:$c' .. i .. ' ' .. anyrare .. ')'
end
local query = table.concat(branches, ' | ')
-- VERBATIM: no stemming of the query's words either (the field is NOSTEM)
local args = {index, query, 'NOCONTENT', 'VERBATIM',
  'WITHSCORES', 'SCORER', 'BM25STD', 'LIMIT', 0, window, 'PARAMS', #params}
for _, p in ipairs(params) do args[#args + 1] = p end
args[#args + 1] = 'DIALECT'
args[#args + 1] = 2
local r = ft_search(unpack(args))
-- The reply is one table.concat of its pieces, as in search.lua: a string per row (an item is ~2 KB
-- on LongMemEval) and a joined body took ~120 of the script's ~450 us in a namespace (replayed).
local rows, n, sep, done, last = {''}, 1, '[', 0, nil
for i = 2, #r, 2 do
  local score = tonumber(r[i + 1])
  if done < read or (last and score >= last) then
    local v = redis.call('HMGET', r[i], 'm', 'c')
    if v[1] then
      rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4] = sep, v[1], ',', v[2]
      rows[n + 5], rows[n + 6], rows[n + 7] = ',', r[i + 1], ']'
      n, sep = n + 7, ',['
      done = done + 1
      if done == read then last = score end
    end
  elseif redis.call('EXISTS', r[i]) == 1 then
    rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4] = sep, cjson.encode(r[i]), ',', r[i + 1]
    rows[n + 5], n, sep = ']', n + 5, ',['
  end
end
rows[1] = '[' .. r[1] .. ',['
rows[n + 1] = ']' .. tail
return table.concat(rows)
