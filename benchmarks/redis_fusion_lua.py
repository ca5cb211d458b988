"""Variants of the Redis lexical script (``langmem_adapters/redis/lua/lexical.lua``) that also give
each candidate what ``information_tied_cut_union`` needs (its cosine to the query, the IDF sum of
the query words it holds), for ``redis_fusion_cost.py`` to time beside today's script.

Each variant is today's script up to its ``FT.SEARCH`` (unchanged but for ``knn_explain``) and a
new reading of the hits:

- ``ew``: every candidate's ``e`` (vectors, base64 float32) and ``w`` (its words) come back; the
  client computes cosines and IDF sums;
- ``e_idf``: ``e`` comes back, the IDF sum is computed here from ``w`` and the words' counts
  (passed in; those of the words the script counts itself, from its own counts);
- ``idf``: the IDF sums alone, as in ``e_idf`` (no cosines: what they cost apart);
- ``knn_idf``: the cosines come from a KNN query restricted to the candidates' vector documents
  (``INKEYS``) on the vector index, the IDF sums as in ``e_idf``: two numbers per candidate come
  back;
- ``idf_inkeys`` and ``knn_inkeys``: ``idf`` and ``knn_idf`` with the IDF sums from one
  ``FT.SEARCH`` per query word restricted to the candidates (``INKEYS``), ``w`` never read
  (finding a word in a 1.6 KB text in Lua took ~2 us: 0.6 ms for 40 candidates and 8 words);
- ``knn_explain``: ``knn_inkeys`` with the held words read from today's query run with
  ``EXPLAINSCORE`` (each held term's line starts with the term): no query per word.

The variants take ``n`` extra arguments first (``ARGV[1] = n``, then the extras, then today's
ARGV; ``ew``: none): ``e_idf``, ``idf`` and ``idf_inkeys`` the query words with their counts (word,
df, ...), the ``knn_*`` ones the vector index, its field and the query vector (float32 bytes), then
the words and counts.
"""

from __future__ import annotations

from langmem_adapters.redis.scripts import SCRIPTS

#: Where today's script runs its search: the variants keep what comes before and replace the rest.
CUT = "local r = ft_search(unpack(args))\n"

#: The extras (``X``) split off the arguments; today's arguments as ``A``.
PRELUDE = """
local X, A, nx = {}, {}, tonumber(ARGV[1])
for i = 2, nx + 1 do X[#X + 1] = ARGV[i] end
for i = nx + 2, #ARGV do A[#A + 1] = ARGV[i] end
"""

#: Appending a row's pieces to the reply, and the IDF of each query word (Lucene's, over the
#: index's ``size`` items) from the extras' counts from ``first`` on and the script's own counts.
HELPERS = """
local rows, n, sep, done, last = {''}, 1, '[', 0, nil
local function add(...)
  local t = {...}
  for j = 1, #t do rows[n + j] = t[j] end
  n = n + #t
end
local idf, idfw = {}, {}
local function weigh(word, df)
  if df <= 0 then return end
  idfw[word] = math.log(1 + (size - df + 0.5) / (df + 0.5))
  idf[' ' .. word .. ' '] = idfw[word]
end
local function idfsum(w)
  local s, padded = 0, ' ' .. (w or '') .. ' '
  for pat, x in pairs(idf) do
    if string.find(padded, pat, 1, true) then s = s + x end
  end
  return string.format('%.17g', s)
end
local function weigh_all(first)
  for j = first, #X, 2 do weigh(X[j], tonumber(X[j + 1])) end
  for j = 1, u do weigh(A[9 + k + j], counts[j]) end
end
"""

#: The rows' loop: ``read(key)`` gives a row read with ``m`` and ``c`` (the first ``read`` and
#: their ties, as today), ``other(key)`` the others' (no ``m``); each returns nil for an expired key.
LOOP = """
for i = 2, #r, 2 do
  local score = tonumber(r[i + 1])
  if done < read or (last and score >= last) then
    if full(r[i], r[i + 1]) then
      done = done + 1
      if done == read then last = score end
    end
  else
    part(r[i], r[i + 1])
  end
end
rows[1] = '[' .. r[1] .. ',['
rows[n + 1] = ']' .. tail
return table.concat(rows)
"""

EW = """
local function full(key, score)
  local v = redis.call('HMGET', key, 'm', 'c', 'e', 'w')
  if not v[1] then return false end
  add(sep, v[1], ',', v[2], ',', score, ',"', v[3] or '', '",', cjson.encode(v[4] or ''), ']')
  sep = ',['
  return true
end
local function part(key, score)
  local v = redis.call('HMGET', key, 'e', 'w')
  if not v[2] then return end
  add(sep, cjson.encode(key), ',', score, ',"', v[1] or '', '",', cjson.encode(v[2]), ']')
  sep = ',['
end
"""

E_IDF = """
weigh_all(1)
local function full(key, score)
  local v = redis.call('HMGET', key, 'm', 'c', 'e', 'w')
  if not v[1] then return false end
  add(sep, v[1], ',', v[2], ',', score, ',"', v[3] or '', '",', idfsum(v[4]), ']')
  sep = ',['
  return true
end
local function part(key, score)
  local v = redis.call('HMGET', key, 'e', 'w')
  if not v[2] then return end
  add(sep, cjson.encode(key), ',', score, ',"', v[1] or '', '",', idfsum(v[2]), ']')
  sep = ',['
end
"""

IDF = """
weigh_all(1)
local function full(key, score)
  local v = redis.call('HMGET', key, 'm', 'c', 'w')
  if not v[1] then return false end
  add(sep, v[1], ',', v[2], ',', score, ',null,', idfsum(v[3]), ']')
  sep = ',['
  return true
end
local function part(key, score)
  local w = redis.call('HGET', key, 'w')
  if not w then return end
  add(sep, cjson.encode(key), ',', score, ',null,', idfsum(w), ']')
  sep = ',['
end
"""

#: The candidates' best cosines (``cos``, by item hash) from a KNN query restricted to their vector
#: documents (P:i:... -> P:v:...; a prefix holds no ':').
KNN = """
weigh_all(4)
local vkeys, cos = {}, {}
for i = 2, #r, 2 do
  local at = string.find(r[i], ':i:', 1, true)
  vkeys[#vkeys + 1] = string.sub(r[i], 1, at) .. 'v' .. string.sub(r[i], at + 2)
end
if #vkeys > 0 then
  local q = {X[1], '*=>[KNN ' .. #vkeys .. ' @' .. X[2] .. ' $B AS d]', 'INKEYS', #vkeys}
  for _, vk in ipairs(vkeys) do q[#q + 1] = vk end
  for _, a in ipairs({'RETURN', 1, 'd', 'LIMIT', 0, #vkeys, 'PARAMS', 2, 'B', X[3], 'DIALECT', 2}) do
    q[#q + 1] = a
  end
  local got = ft_search(unpack(q))
  for i = 2, #got, 2 do
    local vk = got[i]
    local at = string.find(vk, ':v:', 1, true)
    cos[string.sub(vk, 1, at) .. 'i' .. string.sub(vk, at + 2)] = string.format('%.17g', 1 - tonumber(got[i + 1][2]))
  end
end
"""

#: The candidates' IDF sums (``sums``, by item hash) from one ``FT.SEARCH`` per query word
#: restricted to the candidates (``INKEYS``): which of them hold it, without reading ``w``.
INKEYS = """
local sums, cands = {}, {}
for i = 2, #r, 2 do cands[#cands + 1] = r[i]; sums[r[i]] = 0 end
if #cands > 0 then
  for word, x in pairs(idfw) do
    local q = {index, '@w:($t)', 'VERBATIM', 'NOCONTENT', 'INKEYS', #cands}
    for _, key in ipairs(cands) do q[#q + 1] = key end
    for _, a in ipairs({'LIMIT', 0, #cands, 'PARAMS', 2, 't', word, 'DIALECT', 2}) do q[#q + 1] = a end
    local got = ft_search(unpack(q))
    for j = 2, #got do sums[got[j]] = sums[got[j]] + x end
  end
end
local function summed(key) return string.format('%.17g', sums[key]) end
"""

KNN_IDF = (
    KNN
    + """
local function full(key, score)
  local v = redis.call('HMGET', key, 'm', 'c', 'w')
  if not v[1] then return false end
  add(sep, v[1], ',', v[2], ',', score, ',', cos[key] or 'null', ',', idfsum(v[3]), ']')
  sep = ',['
  return true
end
local function part(key, score)
  local w = redis.call('HGET', key, 'w')
  if not w then return end
  add(sep, cjson.encode(key), ',', score, ',', cos[key] or 'null', ',', idfsum(w), ']')
  sep = ',['
end
"""
)

#: The rows when nothing is read but ``m`` and ``c`` (as today): ``value(key)`` is a row's last two.
SUMMED_ROWS = """
local function full(key, score)
  local v = redis.call('HMGET', key, 'm', 'c')
  if not v[1] then return false end
  add(sep, v[1], ',', v[2], ',', score, ',', value(key), ']')
  sep = ',['
  return true
end
local function part(key, score)
  if redis.call('EXISTS', key) == 0 then return end
  add(sep, cjson.encode(key), ',', score, ',', value(key), ']')
  sep = ',['
end
"""

IDF_INKEYS = (
    "weigh_all(1)\n"
    + INKEYS
    + "local function value(key) return 'null,' .. summed(key) end\n"
    + SUMMED_ROWS
)
KNN_INKEYS = (
    KNN
    + INKEYS
    + "local function value(key) return (cos[key] or 'null') .. ',' .. summed(key) end\n"
    + SUMMED_ROWS
)

#: ``knn_explain``'s search: today's query with ``EXPLAINSCORE`` (RESP2, so without the timeout
#: check of ``ft_search``), each hit's held query words read from its explanation's term lines.
EXPLAIN_CUT = """
table.insert(args, 6, 'EXPLAINSCORE')
local r = redis.call('FT.SEARCH', unpack(args))
local held = {}
local function names(node, into)
  if type(node) == 'table' and node.ok then node = node.ok end  -- a line is a status reply
  if type(node) == 'string' then
    local w = string.match(node, '^(%S+): %(')
    if w then into[w] = true end
  elseif type(node) == 'table' then
    for _, x in ipairs(node) do names(x, into) end
  end
end
for i = 2, #r, 2 do
  local into = {}
  names(r[i + 1][2], into)
  held[r[i]] = into
  r[i + 1] = r[i + 1][1]
end
"""

KNN_EXPLAIN = (
    KNN
    + """
local function value(key)
  local s = 0
  for w in pairs(held[key] or {}) do s = s + (idfw[w] or 0) end
  return (cos[key] or 'null') .. ',' .. string.format('%.17g', s)
end
"""
    + SUMMED_ROWS
)

TAILS = {
    "ew": EW,
    "e_idf": E_IDF,
    "idf": IDF,
    "knn_idf": KNN_IDF,
    "idf_inkeys": IDF_INKEYS,
    "knn_inkeys": KNN_INKEYS,
}


def variant_sources() -> dict[str, str]:
    """Each variant's Lua source, by name (see the module's docstring)."""
    head, cut, _ = SCRIPTS["lexical"].partition(CUT)
    if not cut:
        raise RuntimeError("the lexical script no longer runs its search as this benchmark expects")
    head = PRELUDE + head.replace("ARGV", "A")
    out = {name: head + cut + HELPERS + tail + LOOP for name, tail in TAILS.items()}
    out["knn_explain"] = head + EXPLAIN_CUT + HELPERS + KNN_EXPLAIN + LOOP
    return out
