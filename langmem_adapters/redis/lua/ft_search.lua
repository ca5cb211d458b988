-- ft_search(...): FT.SEARCH with these arguments, its reply in the RESP2 shape ([total, id,
-- (score), (sort key), (fields), ...]). The call itself goes under RESP3, whose reply alone says
-- that the query ran past the server's TIMEOUT: with ON_TIMEOUT return (the default) the RESP2
-- reply is the rows found so far, with nothing to tell it from a complete one. Such a reply
-- raises SEARCHTIMEOUT (connection.py: SearchTimeoutError) instead of passing as complete.
local function ft_name(k) if type(k) == 'table' then return k.ok end return k end
local function ft_timeout(said) error({err = 'SEARCHTIMEOUT ' .. said}) end
local function ft_search(...)
  redis.setresp(3)
  local r = redis.call('FT.SEARCH', ...)
  redis.setresp(2)
  local out, rows = {}, {}
  for k, v in pairs(r.map) do
    local name = ft_name(k)
    if name == 'total_results' then out[1] = v
    elseif name == 'results' then rows = v
    elseif name == 'warning' then
      for _, w in ipairs(v) do
        local said = ft_name(w)
        if string.find(string.lower(said), 'timeout', 1, true) then ft_timeout(said) end
      end
    end
  end
  -- a reply of another shape (another module version) fails loudly rather than reading as empty
  if type(out[1]) ~= 'number' then error({err = 'ERR FT.SEARCH answered no total_results under RESP3'}) end
  local n = 1
  for _, row in ipairs(rows) do
    local id, score, sortkey, fields
    for k, v in pairs(row.map) do
      local name = ft_name(k)
      if name == 'id' then id = v
      elseif name == 'sortkey' then sortkey = v
      elseif name == 'score' then score = string.format('%.17g', v.double or v)
      elseif name == 'extra_attributes' then
        fields = {}
        for f, x in pairs(v.map or v) do fields[#fields + 1] = ft_name(f); fields[#fields + 1] = x end
      end
    end
    n = n + 1
    out[n] = id
    if score then n = n + 1; out[n] = score end
    if sortkey then n = n + 1; out[n] = sortkey end
    if fields then n = n + 1; out[n] = fields end
  end
  return out
end
