-- Live items of one namespace (plain mode): KEYS[1] its ZSET; ARGV now_ms, with_vectors ("1"/"0"),
-- and optionally a hybrid search's words (field w): "1" each item's words; "2" only which of the
-- query words ARGV[4..] each item holds, space-separated and led by a space when the item has any
-- word ("" when it has none): a hybrid search under the information fusion needs no more, and
-- shipping every item's words was most of its server time.
-- Returns a flat array, per live item: its meta, created, vectors (with_vectors "1") and words (when
-- asked). Redis writes the reply's strings as they are; building one JSON text of them here took
-- 3.3x as long (a namespace of 560 LongMemEval rounds: 24.6 against 7.4 ms, docs/benchmarks.md).
local out = {}
local words = ARGV[3]
-- whether the words ``text`` holds ``word`` (as a whole word): found, then its edges checked (faster
-- than finding ' word ' in ' text ', a copy of the text and a match at every space)
local function holds(text, word)
  local init = 1
  while true do
    local s, e = string.find(text, word, init, true)
    if not s then return false end
    if (s == 1 or string.byte(text, s - 1) == 32) and (e == #text or string.byte(text, e + 1) == 32) then
      return true
    end
    init = s + 1
  end
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE')) do
  local v = redis.call('HMGET', key, 'm', 'c', 'e', 'w')
  if v[1] then
    out[#out + 1] = v[1]
    out[#out + 1] = v[2]
    if ARGV[2] == '1' then out[#out + 1] = v[3] or '' end
    if words == '1' then out[#out + 1] = v[4] or '' end
    if words == '2' then
      local held = ''
      if v[4] and v[4] ~= '' then
        local found = {}
        for i = 4, #ARGV do
          if holds(v[4], ARGV[i]) then found[#found + 1] = ARGV[i] end
        end
        held = ' ' .. table.concat(found, ' ')
      end
      out[#out + 1] = held
    end
  end
end
return out
