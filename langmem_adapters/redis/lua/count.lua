-- Query Engine mode: how many documents the query ARGV[2] finds on the index ARGV[1] whose keys still
-- exist (an expired item may linger in the index until the server removes it), read ARGV[3] at a
-- time within this one call, so the count is a snapshot.
-- FT_SEARCH
local idx, q, page = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n, off = 0, 0
while true do
  local r = ft_search(idx, q, 'NOCONTENT', 'LIMIT', off, page, 'DIALECT', 2)
  for i = 2, #r do
    if redis.call('EXISTS', r[i]) == 1 then n = n + 1 end
  end
  if #r - 1 < page then return n end
  off = off + page
end
