#!/usr/bin/env bash
# bench/rls.sh: Envoy's rate limit service, redcell (--rls-addr) against
# envoyproxy/ratelimit with Redis, side by side in alternating rounds, with
# bench/rlsload sending the same calls to each: requests/s, p50/p99 and the
# servers' CPU per request (redcell's; the reference's plus Redis's, from
# /proc/PID/stat). Run by hand, never from tests.
#
#   bench/rls.sh /path/to/ratelimit [rounds] [seconds]
#
# The reference binary is one you built by hand from envoyproxy/ratelimit's
# source (this script does not build it); it runs against redis-server with
# DISABLE_STATS=true, as its README's docker-compose does. Both sides get the
# same rule (domain bench, key user, 100 requests a second per value), 50
# calls in flight (RLS_INFLIGHT), 10000 values (RLS_VALUES). redcell keeps
# its default persistence (a flush a second); Redis runs without.
set -euo pipefail
script=bench/rls.sh
repo=$(cd "$(dirname "$0")/.." && pwd)
ref=${1:?usage: bench/rls.sh /path/to/ratelimit [rounds] [seconds]}
rounds=${2:-5}
secs=${3:-10}
inflight=${RLS_INFLIGHT:-50}
values=${RLS_VALUES:-10000}
sides=(redcell reference)
declare -A port pid
port[redis]=6397
source "$repo/bench/lib.sh"
need redis-server "apt-get install redis-server"
[[ -x $ref ]] || { log "$script: $ref is not an executable (build envoyproxy/ratelimit by hand first)"; exit 1; }

build_redcell
(cd "$repo" && go build -o "$work/rlsload" ./bench/rlsload)

mkdir -p "$work/runtime/ratelimit/config"
cat >"$work/runtime/ratelimit/config/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit:
      unit: second
      requests_per_unit: 100
YAML

start_redcell_side redcell --rls-addr $HOST:18181 --rls-config "$work/runtime/ratelimit/config/bench.yaml"
start_redis redis
env USE_STATSD=false DISABLE_STATS=true LOG_LEVEL=warn REDIS_SOCKET_TYPE=tcp REDIS_URL=$HOST:${port[redis]} \
	RUNTIME_ROOT="$work/runtime" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
	HOST=$HOST PORT=18280 GRPC_HOST=$HOST GRPC_PORT=18281 DEBUG_HOST=$HOST DEBUG_PORT=18270 \
	"$ref" >"$work/reference.log" 2>&1 &
pid[reference]=$!
until grep -qs "Listening for gRPC" "$work/reference.log"; do
	kill -0 "${pid[reference]}" || { cat "$work/reference.log" >&2; exit 1; }
	sleep 0.1
done
declare -A addr=([redcell]=$HOST:18181 [reference]=$HOST:18281)
declare -A cpu_pids=([redcell]="${pid[redcell]}" [reference]="${pid[reference]} ${pid[redis]}")
hz=$(getconf CLK_TCK)

log "redcell $version against $ref, $rounds rounds of ${secs}s, $inflight in flight, $values values"
for ((r = 1; r <= rounds; r++)); do
	for side in "${sides[@]}"; do
		# shellcheck disable=SC2086
		t0=$(ticks ${cpu_pids[$side]})
		out=$("$work/rlsload" -addr "${addr[$side]}" -c "$inflight" -values "$values" -d "${secs}s" -warmup 1s)
		# shellcheck disable=SC2086
		t1=$(ticks ${cpu_pids[$side]})
		read -r _ n _ rps _ p50 _ p99 _ <<<"$out"
		# The warm-up second's calls are in the CPU too: count them at the
		# measured rate.
		us=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$n" -v s="$secs" 'BEGIN { printf "%.2f", t / hz * 1e6 / (n * (s + 1) / s) }')
		echo "$rps $p50 $p99 $us" >>"$work/res.$side"
		printf 'round %d %-9s %8.0f req/s  p50 %5d us  p99 %6d us  server CPU %6.2f us/req\n' "$r" "$side" "$rps" "$p50" "$p99" "$us"
	done
done
echo
printf '%-9s %10s %8s %8s %14s\n' side req/s p50_us p99_us cpu_us/req
for side in "${sides[@]}"; do
	printf '%-9s %10.0f %8.0f %8.0f %14.2f\n' "$side" "$(median "res.$side" 1)" "$(median "res.$side" 2)" "$(median "res.$side" 3)" "$(median "res.$side" 4)"
done
echo "redcell/reference, medians of the per-round ratios: req/s $(pratio res.redcell res.reference 1), CPU per request $(pratio res.redcell res.reference 4)"
