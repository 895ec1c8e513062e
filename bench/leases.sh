#!/usr/bin/env bash
# bench/leases.sh: CL.ACQUIRE and CL.RELEASE against the usual concurrency
# limiter on Redis 7 (a sorted set of holders and a Lua script that trims
# the expired ones, adds and counts: bench/lease_zset.lua), side by side,
# rounds alternated, as ../shared/BENCH.md asks. Run by hand (never from
# tests); it needs go (unless BIN= is set), redis-server, redis-cli and
# redis-benchmark, and only talks to 127.0.0.1.
#
#   acquires/s, random keys, limit 100, a minute's lease, pipelined -P 16
#     and unpipelined: CL.ACQUIRE vs EVALSHA lease_zset; and CL.THROTTLE on
#     redcell under the same loads, the ceiling an acquire cannot pass
#   releases/s of tokens that may be held: CL.RELEASE vs ZREM
#   memory per held lease, MEM_KEYS keys of 100 leases each (the server's
#     11-byte tokens on redcell; the script's own, about 19 bytes, on Redis),
#     then as many more; also on redcell --in-memory
#
# Settings (environment):
#   ROUNDS=3      rounds of every load
#   N=1000000     requests per round
#   MEM_KEYS=10000  keys of the memory fill
#   BIN=path      a redcell binary to use instead of building the work tree
#   BEFORE=path   a second redcell binary (an older build), run beside the
#                 others in every round: a before column in the table
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
MEM_KEYS=${MEM_KEYS:-10000}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/leases.sh

BEFORE=${BEFORE:-}
declare -A port=([lua]=6392 [rc]="" [rc0]="") pid=([lua]="" [rc]="" [rc0]="")
sides=(rc)
[[ -z $BEFORE ]] || sides+=(rc0)
sides+=(lua)
sha=""
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-server "install it with \`apt-get install redis-server\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"

start_servers() {
	start_redis lua
	sha=$(redis-cli -h $HOST -p "${port[lua]}" SCRIPT LOAD "$(cat "$repo/bench/lease_zset.lua")")
	check lua "0 2 1 -1 t " EVALSHA "$sha" 1 check:l 2 60000 t
	check lua "0 2 1 -1 t " EVALSHA "$sha" 1 check:l 2 60000 t
	check lua "0 2 0 -1 * " EVALSHA "$sha" 1 check:l 2 60000
	check lua "1 2 0 * " EVALSHA "$sha" 1 check:l 2 60000
	check lua "1 " ZREM check:l t
	start_redcell_side rc
	check rc "0 2 1 -1 t " CL.ACQUIRE check:l 2 60000 TOKEN t
	check rc "0 2 1 -1 t " CL.ACQUIRE check:l 2 60000 TOKEN t
	check rc "0 2 0 -1 * " CL.ACQUIRE check:l 2 60000
	check rc "1 2 0 * " CL.ACQUIRE check:l 2 60000
	check rc "1 " CL.RELEASE check:l t
	tell lua DEL check:l >/dev/null
	tell rc DEL check:l >/dev/null
	[[ -z $BEFORE ]] || redcell_bin=$work/redcell.before start_redcell_side rc0
}

# acquire SIDE: the words of one acquire on SIDE, before its key.
acquire() { if [[ $1 == lua ]]; then echo "EVALSHA $sha 1"; else echo CL.ACQUIRE; fi; }

build_redcell
if [[ -n $BEFORE ]]; then
	[[ -x $BEFORE ]] || { echo "$script: BEFORE=$BEFORE is not an executable" >&2; exit 1; }
	cp "$BEFORE" "$work/redcell.before"
fi
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
start_servers

for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	# shellcheck disable=SC2046 # the words are meant to split
	for s in "${sides[@]}"; do bench acq.$s "" $s -P 16 -c 50 -r 100000 -n "$N" $(acquire $s) lease:__rand_int__ 100 60000; done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench acqlat.$s "" $s -c 50 -r 100000 -n $((N / 5)) $(acquire $s) lease:__rand_int__ 100 60000; done
	# The ceiling: redcell's lightest decision, CL.THROTTLE, under the same
	# loads; no acquire can be faster than the loop that serves it.
	bench ceil.rc "" rc -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE thr:__rand_int__ 100 10 1
	bench ceillat.rc "" rc -c 50 -r 100000 -n $((N / 5)) CL.THROTTLE thr:__rand_int__ 100 10 1
	# Releases of tokens 0..999 on keys 0..999 of limit 100, a tenth of
	# them held: each round first takes the leases again with known tokens.
	for s in "${sides[@]}"; do
		if [[ $s == lua ]]; then
			bench hold.$s "" $s -P 16 -c 50 -r 1000 -n 500000 EVALSHA "$sha" 1 rel:__rand_int__ 100 3600000 __rand_int__
			bench rel.$s "" $s -P 16 -c 50 -r 1000 -n "$N" ZREM rel:__rand_int__ __rand_int__
		else
			bench hold.$s "" $s -P 16 -c 50 -r 1000 -n 500000 CL.ACQUIRE rel:__rand_int__ 100 3600000 TOKEN __rand_int__
			bench rel.$s "" $s -P 16 -c 50 -r 1000 -n "$N" CL.RELEASE rel:__rand_int__ __rand_int__
		fi
	done
done

# Memory: MEM_KEYS keys, each acquired about 150 times with limit 100 and
# an hour's lease on freshly started servers, so that every key holds
# exactly 100 leases; RSS growth (3 s after, past redcell's persistence
# flush and its tidying of the arenas, free pages returned on both:
# settled_rss) per lease. Then the same again on other keys: what the next
# leases cost once the fixed parts (Pebble's memtables) have grown. Beside
# them, redcell --in-memory (rcm): no persistence, as the Redis peer runs.
# The 100 are checked.
stop_servers
start_servers
start_redcell_side rcm --in-memory
sides+=(rcm)
for s in "${sides[@]}"; do
	# shellcheck disable=SC2046
	bench warm.$s "" $s -P 16 -c 50 -r 1000 -n 200000 $(acquire $s) warm:__rand_int__ 100 3600000
	sleep 2
	rss0=$(settled_rss "$s")
	# shellcheck disable=SC2046
	bench fill.$s "" $s -P 16 -c 50 -r "$MEM_KEYS" -n $((MEM_KEYS * 150)) $(acquire $s) mem:__rand_int__ 100 3600000
	sleep 3 # redcell's flush and tidying
	rss1=$(settled_rss "$s")
	# shellcheck disable=SC2046
	bench fill2.$s "" $s -P 16 -c 50 -r "$MEM_KEYS" -n $((MEM_KEYS * 150)) $(acquire $s) next:__rand_int__ 100 3600000
	sleep 3
	rss2=$(settled_rss "$s")
	echo "$((rss1 - rss0)) $((MEM_KEYS * 100))" >>"$work/mem.$s"
	echo "$((rss2 - rss1)) $((MEM_KEYS * 100))" >>"$work/mem2.$s"
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem.$s" >"$work/bpl.$s"
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem2.$s" >"$work/bpl2.$s"
done
for i in 0 $((MEM_KEYS / 2)) $((MEM_KEYS - 1)); do
	for prefix in mem next; do
		k=$prefix:$(printf '%012d' "$i")
		check lua "100 " ZCARD "$k"
		for s in rc rcm; do
			[[ $(redis-cli -h $HOST -p "${port[$s]}" CL.LEASES "$k" | wc -l) == 200 ]] ||
				{ log "$script: $k does not hold 100 leases on redcell ($s)"; exit 1; }
		done
	done
done

redis_version=$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)
echo
echo "redcell $version against Redis $redis_version with the sorted-set lease script. $ROUNDS rounds, servers" \
	"alternated within each; values are medians, ratios redcell / Redis as the median of per-round ratios." \
	"Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
echo
# With BEFORE, rows get the before build's median and redcell / before.
if [[ -n $BEFORE ]]; then
	row() {
		printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(printf "$4" "$(median "$2.rc" "$3")")" \
			"$(printf "$4" "$(median "$2.rc0" "$3")")" "$(pratio "$2.rc" "$2.rc0" "$3")" \
			"$(printf "$4" "$(median "$2.lua" "$3")")" "$(pratio "$2.rc" "$2.lua" "$3")"
	}
	echo "redcell before: $BEFORE"
	echo
	echo "| load | redcell | before | redcell / before | Redis 7 | redcell / Redis |"
	echo "|---|---|---|---|---|---|"
else
	echo "| load | redcell | Redis 7 | redcell / Redis |"
	echo "|---|---|---|---|"
fi
row "acquires/s, CL.ACQUIRE 100 60000 vs the zset script, random keys -P 16 -c 50 -r 100000" acq 1 %.0f
row "acquires/s, the same unpipelined -c 50" acqlat 1 %.0f
before_ceil="" before_lat=""
[[ -z $BEFORE ]] || before_ceil=" | |" before_lat=" $(lat acqlat.rc0) | $(pratio acqlat.rc acqlat.rc0 3) |"
printf '| the ceiling: CL.THROTTLE on redcell, -P 16 / unpipelined (ratio: to the script'"'"'s acquires) | %.0f / %.0f |%s | %s / %s |\n' \
	"$(median ceil.rc 1)" "$(median ceillat.rc 1)" "$before_ceil" "$(pratio ceil.rc acq.lua 1)" "$(pratio ceillat.rc acqlat.lua 1)"
printf '| p50 / p99 ms, the same | %s |%s %s | %s |\n' "$(lat acqlat.rc)" "$before_lat" "$(lat acqlat.lua)" "$(pratio acqlat.rc acqlat.lua 3)"
row "releases/s, CL.RELEASE vs ZREM, 1,000 keys of 100 leases, -P 16 -c 50 -r 1000" rel 1 %.0f
row "server CPU us/acquire, -P 16" acq 4 %.2f
row "server CPU us/release, -P 16" rel 4 %.2f
row "RSS growth per held lease, $MEM_KEYS keys of 100 (B/lease)" bpl 1 %.1f
row "RSS growth per held lease, $MEM_KEYS keys of 100 more (B/lease)" bpl2 1 %.1f
printf '| the same two, redcell --in-memory (no persistence, as the Redis peer runs) | %.1f / %.1f |%s %.1f / %.1f | %s / %s |\n' \
	"$(median bpl.rcm 1)" "$(median bpl2.rcm 1)" "$before_ceil" "$(median bpl.lua 1)" "$(median bpl2.lua 1)" \
	"$(pratio bpl.rcm bpl.lua 1)" "$(pratio bpl2.rcm bpl2.lua 1)"
echo
echo "Commands (redcell: $work/redcell --bind $HOST --port 0 --dir DIR, rcm the same with --in-memory; Redis: redis-server --bind $HOST --port ${port[lua]}" \
	"--save '' --appendonly no, the script loaded with SCRIPT LOAD from bench/lease_zset.lua):"
for k in "${order[@]}"; do
	echo "  $k: ${cmds[$k]//$sha/\$LEASE_SHA}"
done
