#!/usr/bin/env bash
# bench/lookup.sh: the cost of finding a key, two redcell builds side by
# side. Each build runs CL.THROTTLE pipelined over 100,000 random keys and
# its own PING pipelined (the RESP loop's ceiling, PING_MBULK), so that
# throttle / ping says how close a decision comes to a command that finds
# nothing; then, on freshly started servers, the RSS growth per key of
# filling 1M and 10M keys. Rounds alternate which build goes first; medians,
# and per-round ratios. Run by hand, never from tests; it needs redis-cli and
# redis-benchmark (and go, given a commit), and talks only to 127.0.0.1.
#
# On a machine of few cores, redis-benchmark (one thread) may be what limits
# both loads: the table shows its cores, and the ratio by the server's CPU
# per request, which does not depend on it.
#
#   bench/lookup.sh OLD_BINARY NEW_BINARY
#   bench/lookup.sh OLD_COMMIT            # builds OLD_COMMIT and the work tree
#
# Settings (environment):
#   ROUNDS=5         rounds of the throughput loads
#   N=2000000        requests of each throughput load a round
#   RAND=100000      the random keys of CL.THROTTLE (-r)
#   MEM_KEYS="1000000 10000000"  the fills, each on freshly started servers
#                    ("" : none); a fill of K keys is 3K requests with -r K,
#                    which gives ~0.95K distinct keys, period 3600 so that
#                    none expires; the growth of RSS (MEM_WAIT seconds
#                    after, free pages returned: settled_rss) over DBSIZE's
#   MEM_ROUNDS=1     fills of each size
#   MEM_WAIT=3       seconds
#   ARGS             flags of both servers (e.g. --in-memory)
set -euo pipefail

ROUNDS=${ROUNDS:-5}
N=${N:-2000000}
RAND=${RAND:-100000}
MEM_KEYS=${MEM_KEYS-1000000 10000000}
MEM_ROUNDS=${MEM_ROUNDS:-1}
MEM_WAIT=${MEM_WAIT:-3}
ARGS=${ARGS:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/lookup.sh
[[ $# -ge 1 ]] || { sed -n 2,12p "$0" >&2; exit 2; }

# The servers, by side: a is the old build, b the new.
declare -A port=([a]="" [b]="") pid=([a]="" [b]="")
sides=(a b)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"

build_pair "$@"

# start SIDE: the side's build, checked to answer CL.THROTTLE as redis-cell
# does, so that a broken build is never timed.
start() {
	local s=$1
	# shellcheck disable=SC2086 # ARGS is meant to split
	redcell_bin=$work/redcell.$s start_redcell_side "$s" $ARGS
	[[ $(redis-cli -h $HOST -p "${port[$s]}" CL.THROTTLE lookup:check 15 30 60 | tr '\n' ' ') == "0 16 15 -1 2 " ]] ||
		{ log "$script: $s does not answer CL.THROTTLE as redis-cell"; exit 1; }
}

throttle=(-P 16 -c 50 -r "$RAND" -n "$N" CL.THROTTLE key:__rand_int__ 100 10 1)
ping=(-t ping_mbulk -P 16 -c 50 -n "$N")

if ((ROUNDS > 0)); then
	start a
	start b
	log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
	# A first round unmeasured: each table grows to the keys' size.
	for s in a b; do bench "warm.$s" "" "$s" "${throttle[@]}"; done
	for r in $(seq "$ROUNDS"); do
		log "round $r/$ROUNDS"
		turn=(a b)
		((r % 2)) || turn=(b a)
		for s in "${turn[@]}"; do
			bench "rand.$s" "" "$s" "${throttle[@]}"
			bench "ping.$s" PING_MBULK "$s" "${ping[@]}"
		done
	done
	stop_servers
fi

stop() {
	kill "${pid[$1]}" || { log "$script: $1 died during the run"; tail -5 "$work/$1.log" >&2; exit 1; }
	wait "${pid[$1]}" 2>/dev/null || true
	pid[$1]=""
}

# Memory: each fill on freshly started servers, after a warm-up that brings
# each to its working size, one side after the other.
fill() {
	local s=$1 k=$2 keys0 rss0 rss1 keys1
	bench "mwarm.$s" "" "$s" -P 16 -c 50 -r 1000 -n 200000 CL.THROTTLE warm:__rand_int__ 1 1 3600
	sleep "$MEM_WAIT"
	keys0=$(redis-cli -h $HOST -p "${port[$s]}" DBSIZE) rss0=$(settled_rss "$s")
	bench "mfill.$s" "" "$s" -P 16 -c 50 -r "$k" -n $((3 * k)) CL.THROTTLE key:__rand_int__ 1 1 3600
	sleep "$MEM_WAIT"
	rss1=$(settled_rss "$s")
	keys1=$(redis-cli -h $HOST -p "${port[$s]}" DBSIZE)
	echo "$((rss1 - rss0)) $((keys1 - keys0)) $rss1 $keys1" >>"$work/mem$k.$s"
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem$k.$s" >"$work/bpk$k.$s"
}
for k in $MEM_KEYS; do
	for m in $(seq "$MEM_ROUNDS"); do
		log "memory, $k keys, $m/$MEM_ROUNDS"
		turn=(a b)
		((m % 2)) || turn=(b a)
		for s in "${turn[@]}"; do
			start "$s"
			fill "$s" "$k"
			stop "$s"
		done
	done
done

echo
echo "A: $label_a; B: $label_b; $ROUNDS rounds alternated, medians; ratios are medians of per-round ratios."
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg). Flags: ${ARGS:-(defaults)}."
echo
if ((ROUNDS > 0)); then
	# The load tool's cores: its CPU per request times requests a second.
	# redis-benchmark is one thread: near 1.0, it is what sets ops/s.
	for f in rand.a rand.b ping.a ping.b; do awk '{ print $1 * $5 / 1e6 }' "$work/$f" >"$work/cores.$f"; done
	echo "| load (-c 50) | A ops/s | B ops/s | B/A | A server µs per request | B server µs per request | A load tool µs per request (cores) | B load tool µs per request (cores) |"
	echo "|---|---|---|---|---|---|---|---|"
	for l in "rand:CL.THROTTLE -P 16 -r $RAND" "ping:PING_MBULK -P 16"; do
		n=${l%%:*}
		printf '| %s | %.0f | %.0f | %s | %s | %s | %s (%.2f) | %s (%.2f) |\n' "${l#*:}" "$(median "$n.a" 1)" "$(median "$n.b" 1)" \
			"$(pratio "$n.b" "$n.a" 1)" "$(median "$n.a" 4)" "$(median "$n.b" 4)" \
			"$(median "$n.a" 5)" "$(median "cores.$n.a" 1)" "$(median "$n.b" 5)" "$(median "cores.$n.b" 1)"
	done
	printf '| CL.THROTTLE / PING | %s | %s | | | | | |\n' "$(pratio rand.a ping.a 1)" "$(pratio rand.b ping.b 1)"
	# PING's server CPU per request over CL.THROTTLE's: the same ratio as
	# the server alone would give, whatever limits the load tool.
	printf '| CL.THROTTLE / PING, by the server'"'"'s CPU per request | %s | %s | | | | | |\n' \
		"$(pratio ping.a rand.a 4)" "$(pratio ping.b rand.b 4)"
	echo
	for s in a b; do
		echo "$s: CL.THROTTLE ops/s by round: $(awk '{ printf "%.0f ", $1 }' "$work/rand.$s")"
		echo "$s: PING ops/s by round:        $(awk '{ printf "%.0f ", $1 }' "$work/ping.$s")"
	done
fi
for k in $MEM_KEYS; do
	echo
	echo "RSS growth per key, filling $k keys: A $(median "bpk$k.a" 1) B, B $(median "bpk$k.b" 1) B" \
		"(A: $(awk '{ printf "%s B over %s keys; ", $1, $2 }' "$work/mem$k.a")B: $(awk '{ printf "%s B over %s keys; ", $1, $2 }' "$work/mem$k.b"))"
done
echo
echo "Commands:"
for n in "${order[@]}"; do printf '  %s: %s\n' "$n" "${cmds[$n]}"; done
