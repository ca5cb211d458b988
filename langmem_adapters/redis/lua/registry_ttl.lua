-- The registry's own expiry: its latest entry's, plus GRACE (none while an entry never expires).
local top = redis.call('ZRANGE', reg, -1, -1, 'WITHSCORES')
if top[2] then
  if tonumber(top[2]) >= NO_EXPIRY then redis.call('PERSIST', reg) else redis.call('PEXPIREAT', reg, top[2] + GRACE) end
end
