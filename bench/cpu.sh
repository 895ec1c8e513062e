#!/usr/bin/env bash
# bench/cpu.sh: CPU time per operation of the server and of redis-benchmark,
# for one load against a running server. Run by hand, never from tests.
#
#   bench/cpu.sh PORT PID redis-benchmark-args...
#   bench/cpu.sh 6379 "$(pgrep -x redcell)" -P 16 -c 50 -r 100000 -n 2000000 \
#       CL.THROTTLE key:__rand_int__ 100 10 1
#
# It prints ops/s, the server's CPU (user + system, from /proc/PID/stat) and
# the client's (from its rusage) per request. With both on the same cores,
# throughput follows their sum: this is how the throttle/PING gap was
# accounted for (docs/performance.md). -n must be among the arguments.
set -euo pipefail
port=$1 pid=$2
shift 2
n=$(printf '%s\n' "$@" | awk 'prev == "-n" { print; exit } { prev = $0 }')
[[ -n $n ]] || { echo "bench/cpu.sh: pass -n N among redis-benchmark's arguments" >&2; exit 1; }
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
out=$( { TIMEFORMAT='%U %S'; time redis-benchmark -h 127.0.0.1 -p "$port" --csv "$@" 2>/dev/null; } 2>&1)
t1=$(ticks)
rps=$(printf '%s\n' "$out" | grep -v '^[0-9.]* [0-9.]*$' | tail -1 | tr -d '"' | cut -d, -f2)
client=$(printf '%s\n' "$out" | grep '^[0-9.]* [0-9.]*$' | tail -1)
awk -v rps="$rps" -v s=$((t1 - t0)) -v hz="$hz" -v n="$n" -v c="$client" 'BEGIN {
	split(c, u, " ")
	printf "ops/s %d  server %.3f us/op  client %.3f us/op\n", rps, s / hz * 1e6 / n, (u[1] + u[2]) * 1e6 / n
}'
