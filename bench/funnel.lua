-- bench/funnel.lua: the leaky bucket users write on Redis, a "funnel" in a
-- hash (its free room and when it last leaked), the bench's peer for
-- CL.RESERVE:
--
--   EVALSHA sha 1 key capacity leaks_per_second quantity
--   -> allowed (1) or not (0), the room left
--
-- HMGET reads the funnel, it leaks what the time since allows, a call that
-- fits takes its room, HMSET writes it back and EXPIRE drops a funnel once
-- it would be empty.
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local quantity = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] + t[2] / 1e6
local f = redis.call('HMGET', key, 'room', 'at')
local room = tonumber(f[1]) or capacity
local at = tonumber(f[2]) or now
room = math.min(capacity, room + (now - at) * rate)
local allowed = 0
if room >= quantity then
	room = room - quantity
	allowed = 1
end
redis.call('HMSET', key, 'room', room, 'at', now)
redis.call('EXPIRE', key, math.ceil(capacity / rate))
return {allowed, math.floor(room)}
