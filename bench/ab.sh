#!/usr/bin/env bash
# bench/ab.sh: two redcell builds side by side, for a before/after figure:
# the same loads against each in alternating rounds (A B A B ...), medians,
# and B's ratio to A as the median of the per-round ratios. Run by hand; it
# needs redis-benchmark and redis-cli and talks only to 127.0.0.1.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY
#   bench/ab.sh OLD_COMMIT            # builds OLD_COMMIT and the work tree
#
# Settings (environment): ROUNDS=5, N=1000000 (pipelined requests a round),
# LAT_N=200000 (unpipelined), ARGS (extra flags for both servers, e.g.
# --in-memory), ARGS_A and ARGS_B (for one side), BENCH_A and BENCH_B
# (redis-benchmark's flags for one side). An ACL user's cost, on one build:
#
#   ARGS_B="--aclfile users.acl" BENCH_B="--user app -a app-secret" bench/ab.sh NEW NEW
#
# with users.acl granting app CL.THROTTLE on the loads' keys (~key:* ~hot).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
ARGS=${ARGS:-}
declare -A side_args=([a]="${ARGS_A:-}" [b]="${ARGS_B:-}") bench_args=([a]="${BENCH_A:-}" [b]="${BENCH_B:-}")
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/ab.sh
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
	redcell_bin=$work/redcell.$s start_redcell_side "$s" $ARGS ${side_args[$s]}
	[[ $(redis-cli -h $HOST -p "${port[$s]}" CL.THROTTLE ab:check 15 30 60 | tr '\n' ' ') == "0 16 15 -1 2 " ]] ||
		{ log "$script: $s does not answer CL.THROTTLE as redis-cell"; exit 1; }
}

start a
start b
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# Each side runs the three loads in a row, so that each load finds its
# server in the state the load before left it (the random round leaves 100k
# keys being flushed and expiring): interleaving the loads by side made the
# hot round of whichever side ran it just after its own random round pay for
# that flush (an A/A run gave 0.89x). Which side goes first alternates by
# round.
for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	order=(a b)
	((r % 2)) || order=(b a)
	for s in "${order[@]}"; do
		# shellcheck disable=SC2086 # the side's flags are meant to split
		bench "rand.$s" "" "$s" ${bench_args[$s]} -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE key:__rand_int__ 100 10 1
		# shellcheck disable=SC2086
		bench "hot.$s" "" "$s" ${bench_args[$s]} -P 16 -c 50 -n "$N" CL.THROTTLE hot 100 10 1
		# shellcheck disable=SC2086
		bench "lat.$s" "" "$s" ${bench_args[$s]} -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE key:__rand_int__ 100 10 1
	done
done

echo
echo "A: $label_a; B: $label_b; $ROUNDS rounds alternated, medians; B/A is the median of per-round ratios."
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg). Flags: ${ARGS:-(defaults)}; A: ${ARGS_A:-} ${BENCH_A:-}; B: ${ARGS_B:-} ${BENCH_B:-}."
echo
echo "| load | A ops/s | B ops/s | B/A | A p50 / p99 ms | B p50 / p99 ms | A / B server µs per request |"
echo "|---|---|---|---|---|---|---|"
for l in "rand:random keys, -P 16 -c 50 -r 100000" "hot:one hot key, -P 16 -c 50" "lat:random keys, unpipelined -c 50"; do
	n=${l%%:*}
	printf '| %s | %.0f | %.0f | %s | %s / %s | %s / %s | %s / %s |\n' "${l#*:}" "$(median "$n.a" 1)" "$(median "$n.b" 1)" \
		"$(pratio "$n.b" "$n.a" 1)" "$(median "$n.a" 2)" "$(median "$n.a" 3)" "$(median "$n.b" 2)" "$(median "$n.b" 3)" \
		"$(median "$n.a" 4)" "$(median "$n.b" 4)"
done
