"""redis-py against redcell: what protocol_test/clients_python_test.go runs.

usage: python3 throttle.py PORT  -> one JSON object on stdout
"""
import json
import sys

import redis


def rate_limit_headers(reply):
    """The HTTP headers for a CL.THROTTLE reply, as the README maps them."""
    limited, limit, remaining, retry_after, reset_after = reply
    headers = {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset_after),
    }
    if limited:
        headers["Retry-After"] = str(retry_after)
    return headers


r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
out = {"ping": r.ping()}

# The README's example, then max_burst 1 at 1 per 60 s until limited.
out["user123"] = r.execute_command("CL.THROTTLE", "user123", 15, 30, 60)
out["steps"] = [r.execute_command("CL.THROTTLE", "py", 1, 1, 60) for _ in range(3)]
out["headers"] = [rate_limit_headers(reply) for reply in out["steps"]]
out["peek"] = r.execute_command("CL.THROTTLE", "py", 1, 1, 60, 0)

# Pipelined, without MULTI.
pipe = r.pipeline(transaction=False)
for _ in range(3):
    pipe.execute_command("CL.THROTTLE", "pipe", 1, 1, 60)
out["pipeline"] = pipe.execute()

# redis-py's default pipeline is a transaction: MULTI ... EXEC.
tx = r.pipeline()
for _ in range(3):
    tx.execute_command("CL.THROTTLE", "tx", 1, 1, 60)
out["transaction"] = tx.execute()

# A transaction with a command refused while queued runs nothing: the token
# is not spent, so retrying cannot charge twice.
tx = r.pipeline()
tx.execute_command("CL.THROTTLE", "txabort", 1, 1, 60)
tx.execute_command("CL.NOSUCH", "txabort")
try:
    tx.execute()
except redis.ResponseError as e:
    out["tx_abort"] = str(e)
out["tx_abort_peek"] = r.execute_command("CL.THROTTLE", "txabort", 1, 1, 60, 0)

# WATCH: another client's decision on the watched key between WATCH and
# EXEC makes EXEC run nothing (redis-py raises WatchError).
other = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
with r.pipeline() as tx:
    tx.watch("watched")
    other.execute_command("CL.THROTTLE", "watched", 1, 1, 60)
    tx.multi()
    tx.execute_command("CL.THROTTLE", "watched", 1, 1, 60)
    try:
        tx.execute()
        out["watch_conflict"] = False
    except redis.WatchError:
        out["watch_conflict"] = True
out["watched_peek"] = r.execute_command("CL.THROTTLE", "watched", 1, 1, 60, 0)

try:
    r.execute_command("CL.THROTTLE", "py", -1, 1, 60)
except redis.ResponseError as e:
    out["error"] = str(e)

out["pttl"] = r.pttl("py")
out["deleted"] = r.delete("py")
out["after_delete"] = r.execute_command("CL.THROTTLE", "py", 1, 1, 60)
print(json.dumps(out, sort_keys=True))
