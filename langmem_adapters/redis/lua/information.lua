-- The lexical side of a hybrid search under the information fusion (Query Engine): the candidates
-- of lua/candidates.lua (ARGV: its arguments A), each with its IDF sum and distance. Returns one
-- JSON text [candidates, [[hash name, distance, sum] or [meta, created, distance, sum], ...],
-- [counts of the u words], size, mass].
-- FT_SEARCH
-- CANDIDATES
local side = candidates(ARGV)
local whole = tonumber(ARGV[6]) < 0
local tail = ',[' .. table.concat(side.counts, ',') .. '],' .. side.size .. ','
tail = tail .. string.format('%.17g', side.mass) .. ']'
-- Rows read whole (to check conditions on them): [meta, created, distance, sum]; else [hash name,
-- distance, sum], the caller reading the meta of those its page takes (a candidate's meta is ~2 KB
-- on LongMemEval, and most candidates do not reach the page). An item without vectors has no
-- distance (null); one gone since it was indexed (expired) is left out.
local rows, n, sep = {''}, 1, '['
for _, key in ipairs(side.picked) do
  local d, meta, created = side.dist[key], nil, nil
  if whole then
    local v = redis.call('HMGET', key, 'm', 'c')
    meta, created = v[1], v[2]
  end
  if (whole and meta) or (not whole and (d or redis.call('EXISTS', key) == 1)) then
    if whole then
      rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], n = sep, meta, ',', created, n + 4
    else
      rows[n + 1], rows[n + 2], n = sep, cjson.encode(key), n + 2
    end
    rows[n + 1], rows[n + 2], rows[n + 3] = ',', d and cjson.encode(d) or 'null', ','
    rows[n + 4], rows[n + 5] = string.format('%.17g', side.sums[key]), ']'
    n, sep = n + 5, ',['
  end
end
rows[1] = '[' .. side.total .. ',['
rows[n + 1] = ']' .. tail
return table.concat(rows)
