-- bench/window_zset.lua: the sliding log users write on Redis, a sorted set
-- per key, as one script (what they run in a MULTI pipeline without Lua),
-- the bench's peer for CL.WINDOW's exact log:
--
--   EVALSHA sha 1 key limit window_seconds
--   -> limited, limit, remaining, retry_after_ms
--
-- ZREMRANGEBYSCORE drops the calls that left the window, ZCARD counts the
-- rest, and an allowed call is ZADDed (member: its time and the count, so
-- that calls in one microsecond stay distinct) and the key's expiry pushed
-- to a window from now. A limited call reads its oldest entry to say when
-- to retry, as CL.WINDOW does.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
	redis.call('ZADD', key, now, t[1] .. t[2] .. '-' .. count)
	redis.call('PEXPIRE', key, window)
	return {0, limit, limit - count - 1, -1}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {1, limit, 0, tonumber(oldest[2]) + window - now}
