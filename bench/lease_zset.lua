-- bench/lease_zset.lua: the concurrency limiter users write on Redis, a
-- sorted set of holders per key scored by when each lease ends (as mail and
-- job systems' lease scripts and Redisson's expirable semaphore keep them),
-- the bench's peer for CL.ACQUIRE:
--
--   EVALSHA sha 1 key limit lease_ms [token]
--   -> limited, limit, remaining, retry_after_ms, token
--
-- ZREMRANGEBYSCORE trims the leases that ended, a token already held is
-- renewed, ZCARD counts the rest, and a granted lease is ZADDed with its end
-- (its token: the caller's, or the time and the count, as a client's UUID
-- would be made, shorter) and the key's expiry pushed to the lease's end. A
-- release is ZREM key token.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local count = redis.call('ZCARD', key)
local token = ARGV[3]
if token and redis.call('ZSCORE', key, token) then
	redis.call('ZADD', key, now + lease, token)
	redis.call('PEXPIRE', key, lease)
	return {0, limit, math.max(0, limit - count), -1, token}
end
if count < limit then
	token = token or (t[1] .. t[2] .. '-' .. count)
	redis.call('ZADD', key, now + lease, token)
	redis.call('PEXPIRE', key, lease)
	return {0, limit, limit - count - 1, -1, token}
end
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {1, limit, 0, tonumber(first[2]) - now, false}
