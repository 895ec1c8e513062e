"""redis-py with an ACL user against redcell: what
protocol_test/clients_python_test.go's TestRedisPyUsername runs.

usage: python3 acl.py PORT  -> one JSON object on stdout
"""
import json
import sys

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, username="app", password="app-secret")
out = {"whoami_refused": None}
out["decision"] = r.execute_command("CL.THROTTLE", "rl:app:py", 15, 30, 60)
try:
    r.execute_command("CL.THROTTLE", "rl:other:py", 15, 30, 60)
except redis.exceptions.NoPermissionError as e:
    out["key_refused"] = str(e)
try:
    r.flushall()
except redis.exceptions.NoPermissionError as e:
    out["command_refused"] = str(e)
try:
    r.execute_command("ACL", "WHOAMI")
except redis.exceptions.NoPermissionError as e:
    out["whoami_refused"] = str(e)
try:
    redis.Redis(host="127.0.0.1", port=port, username="app", password="wrong").ping()
except redis.exceptions.ResponseError as e:  # redis-py 4.3 raises WRONGPASS as is
    out["wrong_password"] = str(e)
print(json.dumps(out))
