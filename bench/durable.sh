#!/usr/bin/env bash
# bench/durable.sh: durable mode side by side with its Redis peer. redcell with
# --flush-interval 0 (nothing acknowledged before it is synced) against
# redis-server with the redis-cell module and appendonly yes, appendfsync
# always (the same promise: Redis fsyncs before it answers), both writing to
# a directory under $TMPDIR on the same disk. The load is unpipelined, where
# a sync is shared only by the clients that wait together:
#
#   redis-benchmark -c 50 -r 100000 CL.THROTTLE key:__rand_int__ 100 10 1
#
# over 100,000 keys, so nearly every call is allowed and stores a change.
# Rounds alternate the servers (the first of a round rotates), and the table
# gives medians, their spread (min-max), and ratios as the median of the
# per-round ratios. Run by hand; never part of the tests.
#
#   REDIS_CELL=/path/to/libredis_cell.so bench/durable.sh
#
# Settings (environment):
#   REDIS_CELL=path  the redis-cell module, built as ../shared/BENCH.md
#                    describes; unset: the peer is Redis running the Lua GCRA
#                    script (bench/gcra.lua), with the same appendfsync always
#   ROUNDS=5         rounds
#   N=200000         requests a round, per server
#   CLIENTS=50       redis-benchmark's -c
#   BIN=path         a redcell binary to use instead of building the work tree
#   BEFORE=path      an older redcell build, run beside it in durable mode as
#                    the column "before"
#   ARGS             more flags for redcell (both builds), e.g. --event-loops 0
set -euo pipefail

ROUNDS=${ROUNDS:-5}
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
ARGS=${ARGS:-}
BEFORE=${BEFORE:-}
REDIS_CELL=${REDIS_CELL:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/durable.sh
LUA=$repo/bench/gcra.lua

if [[ -n $REDIS_CELL ]]; then
	[[ -f $REDIS_CELL ]] || { echo "$script: REDIS_CELL=$REDIS_CELL: no such file" >&2; exit 1; }
	REDIS_CELL=$(realpath "$REDIS_CELL") # redis-server changes into --dir before it loads modules
fi
[[ -z $BEFORE || -x $BEFORE ]] || { echo "$script: BEFORE=$BEFORE is not an executable" >&2; exit 1; }

# The servers, by side: rc is this build, rc0 the build before, peer Redis
# with appendfsync always.
declare -A port=([rc]="" [rc0]="" [peer]=6393) pid=([rc]="" [rc0]="" [peer]="")
sides=(rc)
[[ -z $BEFORE ]] || sides+=(rc0)
sides+=(peer)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-server "install it with \`apt-get install redis-server\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"

# call SIDE: the words that make a CL.THROTTLE call on SIDE.
sha=""
call() { if [[ $1 == peer && -z $REDIS_CELL ]]; then echo "EVALSHA $sha 1"; else echo CL.THROTTLE; fi; }

# expect SIDE: the side answers a throttle of a fresh key as redis-cell does
# (0 16 15 -1 2 for 15 30 60), so that neither an error nor a wrong module is
# timed.
expect() {
	local got
	# shellcheck disable=SC2046 # call's words are meant to split
	got=$(redis-cli -h $HOST -p "${port[$1]}" $(call "$1") durable:check 15 30 60 2>&1 | tr '\n' ' ')
	[[ $got == "0 16 15 -1 2 " ]] || { log "$script: $1 answers '$got', not '0 16 15 -1 2'"; exit 1; }
}

build_redcell
[[ -z $BEFORE ]] || cp "$BEFORE" "$work/redcell.before"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# shellcheck disable=SC2086 # ARGS are words
start_redcell_side rc --flush-interval 0 $ARGS
expect rc
if [[ -n $BEFORE ]]; then
	# shellcheck disable=SC2086
	redcell_bin=$work/redcell.before start_redcell_side rc0 --flush-interval 0 $ARGS
	expect rc0
fi
if [[ -n $REDIS_CELL ]]; then
	peer="redis-cell (Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2), appendfsync always)"
	start_redis peer --appendonly yes --appendfsync always --loadmodule "$REDIS_CELL"
else
	peer="Redis + Lua GCRA (appendfsync always; REDIS_CELL unset)"
	log "REDIS_CELL is not set: the peer is Redis with the Lua GCRA script, not redis-cell"
	start_redis peer --appendonly yes --appendfsync always
	sha=$(redis-cli -h $HOST -p "${port[peer]}" SCRIPT LOAD "$(cat "$LUA")")
fi
expect peer
[[ $(redis-cli -h $HOST -p "${port[peer]}" CONFIG GET appendfsync | tail -1) == always ]] ||
	{ log "$script: the peer does not run appendfsync always"; exit 1; }

for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	# Rotate which side goes first, so none always follows the same one.
	order=("${sides[@]:$(((r - 1) % ${#sides[@]}))}" "${sides[@]:0:$(((r - 1) % ${#sides[@]}))}")
	for s in "${order[@]}"; do
		# shellcheck disable=SC2046 # call's words are meant to split
		bench "lat.$s" "" "$s" -c "$CLIENTS" -r 100000 -n "$N" $(call "$s") key:__rand_int__ 100 10 1
	done
done

# spread NAME COLUMN: min-max of a column.
spread() { awk -v c="$2" 'NR == 1 || $c < lo { lo = $c } NR == 1 || $c > hi { hi = $c } END { printf "%g-%g", lo, hi }' "$work/$1"; }

echo
echo "Durable mode, unpipelined: $ROUNDS rounds alternated, medians (min-max); ratios are medians of per-round ratios."
echo "redcell: $version --flush-interval 0 $ARGS; before: ${BEFORE:-(none)}; peer: $peer."
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
echo
echo "| server | decisions/s | p50 ms | p99 ms | server CPU µs/request |"
echo "|---|---|---|---|---|"
for s in "${sides[@]}"; do
	case $s in rc) label="redcell" ;; rc0) label="redcell before" ;; peer) label=$peer ;; esac
	printf '| %s | %.0f (%s) | %s (%s) | %s (%s) | %s |\n' "$label" "$(median "lat.$s" 1)" "$(spread "lat.$s" 1)" \
		"$(median "lat.$s" 2)" "$(spread "lat.$s" 2)" "$(median "lat.$s" 3)" "$(spread "lat.$s" 3)" "$(median "lat.$s" 4)"
done
echo
echo "redcell / peer: throughput $(pratio lat.rc lat.peer 1), p99 $(pratio lat.rc lat.peer 3)"
[[ -z $BEFORE ]] || echo "redcell / before: throughput $(pratio lat.rc lat.rc0 1), p99 $(pratio lat.rc lat.rc0 3)"
echo
echo "Commands (redis-benchmark against each server's port):"
for s in "${sides[@]}"; do echo "  $s: ${cmds[lat.$s]}"; done
