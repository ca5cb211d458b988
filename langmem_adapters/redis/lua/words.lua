-- The word statistics of one namespace's live items (plain mode, a hybrid search's collection
-- counts): KEYS[1] its ZSET; ARGV now_ms. Each item's words are its hash's field w (space-separated,
-- only letters, digits and _, see core.hybrid.words). Returns one text, "texts length word1 n1
-- word2 n2 ...": the items holding words, their words in all, then each word and how many items
-- hold it (one bulk reply parses far faster client-side than an array of thousands).
local texts, length, df = 0, 0, {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE')) do
  local w = redis.call('HGET', key, 'w')
  if w and w ~= '' then
    texts = texts + 1
    local seen = {}
    for word in string.gmatch(w, '%S+') do
      length = length + 1
      if not seen[word] then
        seen[word] = true
        df[word] = (df[word] or 0) + 1
      end
    end
  end
end
local out = {texts, length}
for word, n in pairs(df) do
  out[#out + 1] = word
  out[#out + 1] = n
end
return table.concat(out, ' ')
