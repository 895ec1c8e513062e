-- bench/gcra.lua: CL.THROTTLE as a Redis Lua script, the bench's peer for
-- "Redis without the module" (../shared/BENCH.md), answering as redis-cell
-- does (README, "Differences from redis-cell", for where redcell differs):
--
--   EVALSHA sha 1 key max_burst count period [quantity]
--   -> limited, limit (max_burst + 1), remaining, retry_after, reset_after
--
-- It stores what redis-cell stores: a string key holding the TAT in
-- nanoseconds since the Unix epoch, expiring when the TAT passes
-- (SET key tat PX ttl). A limited call and a peek (quantity 0) write nothing.
-- The same value is not quite the same memory: SET keeps a decimal that fits
-- in an int64 as an integer object (OBJECT ENCODING int), where the module
-- writes an embstr: MEMORY USAGE of a key is 48 B here against redis-cell's
-- 80 B, so this peer's memory per key is not redis-cell's; bench/run.sh
-- measures both.
--
-- Units. Redis's Lua numbers are doubles, exact for integers up to 2^53
-- (about 9.007e15). Nanoseconds do not fit (now is about 1.8e18 ns), so the
-- math is in whole microseconds: now, from TIME, is about 1.8e15 us, exact
-- until the year 2255, and every duration and sum below is checked to stay
-- under 2^53 (durations of up to about 285 years). Integer division is
-- math.floor(a / b), exact for 0 <= a, b < 2^53. The stored value is the TAT
-- in microseconds with "000" appended (so still nanoseconds) and is read back
-- by dropping its last three digits.
--
-- The emission interval is period * 1e6 / count truncated to whole
-- microseconds, so where it is not a whole number of microseconds the replies
-- can differ from redcell's exact nanoseconds; rates above a million a second
-- (an interval under 1 us) are rejected as zero rates. Where the interval is a
-- whole number of microseconds the replies are redcell's.

local LIMIT = 9007199254740992 -- 2^53
local US = 1000000

local function err(msg) return redis.error_reply(msg) end

-- num: ARGV[i] as an integer in (-2^53, 2^53), or nil.
local function num(i)
  local s = ARGV[i]
  if not s or not string.match(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n <= -LIMIT or n >= LIMIT then return nil end
  return n
end

if #KEYS ~= 1 or (#ARGV ~= 3 and #ARGV ~= 4) then
  return err("ERR wrong number of arguments for 'cl.throttle' command")
end
local burst, count, period = num(1), num(2), num(3)
local quantity = 1
if #ARGV == 4 then quantity = num(4) end
if not burst then return err('ERR max_burst is not an integer or out of range') end
if not count then return err('ERR count is not an integer or out of range') end
if not period then return err('ERR period is not an integer or out of range') end
if not quantity then return err('ERR quantity is not an integer or out of range') end
if burst < 0 then return err('ERR max_burst must not be negative') end
if count < 0 then return err('ERR count must be positive') end
if period < 0 then return err('ERR period must be positive') end
if quantity < 0 then return err('ERR quantity must not be negative') end
if count == 0 or period == 0 then return err('ERR zero rates are not supported') end
if period >= LIMIT / US then return err('ERR rate limit parameters out of range') end
local ei = math.floor(period * US / count)
if ei == 0 then return err('ERR zero rates are not supported') end
local limit = burst + 1
local dvt = ei * limit
local inc = ei * quantity
if dvt >= LIMIT or inc >= LIMIT then return err('ERR rate limit parameters out of range') end

local t = redis.call('TIME')
local now = tonumber(t[1]) * US + tonumber(t[2])

local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local v = tonumber(string.sub(stored, 1, -4)) or 0
  if v > now then tat = v end
end
local new_tat = tat + inc
if new_tat >= LIMIT then return err('ERR rate limit parameters out of range') end

local limited, retry, ttl = 0, -US, 0
local diff = now - (new_tat - dvt)
if diff < 0 then
  limited = 1
  if inc <= dvt then retry = -diff end
  ttl = tat - now
else
  ttl = new_tat - now
  if inc > 0 then
    -- PX is whole milliseconds, truncated as redis-cell's expiry is; at
    -- least 1 because SET refuses PX 0 (a TAT under 1 ms ahead is treated as
    -- now once it passes, so the extra fraction of a millisecond is harmless).
    local px = math.max(1, math.floor(ttl / 1000))
    redis.call('SET', KEYS[1], string.format('%.0f000', new_tat), 'PX', px)
  end
end

local remaining = 0
local nxt = dvt - ttl
if nxt > 0 then remaining = math.floor(nxt / ei) end

-- secs: whole seconds of a duration in us, truncating, plus 1 if the rest is
-- 1 ms or more (redis-cell's rounding). Only -1 s is ever negative.
local function secs(us)
  if us < 0 then return -math.floor(-us / US) end
  local s = math.floor(us / US)
  if us - s * US >= 1000 then s = s + 1 end
  return s
end

return { limited, limit, remaining, secs(retry), secs(ttl) }
