#!/usr/bin/env bash
# bench/run.sh: redcell against its peers, side by side, as ../shared/BENCH.md
# asks. Run by hand from anywhere (never from tests); it needs go (unless
# BIN= is set), redis-server, redis-cli and redis-benchmark, and only ever
# talks to 127.0.0.1.
#
# It builds redcell and starts three servers: redcell (a free port, its own
# temporary --dir, persistence on as by default), Redis with the redis-cell
# module (port 6392, only when REDIS_CELL is set) and Redis with the Lua GCRA
# script (port 6391; also the plain redis-server whose PING is Redis's loop
# ceiling). It runs every load against each in turn within a round (A B C A B
# C ...) and prints one table of medians and ratios, then the exact commands
# used.
#
# Settings (environment):
#   REDIS_CELL=path  the redis-cell module (libredis_cell.so), built as
#                    ../shared/BENCH.md describes; unset: its rows are skipped
#   ROUNDS=3         rounds of every throughput and latency load
#   N=1000000        requests per pipelined round
#   LAT_N=200000     requests per unpipelined (latency) round
#   MEM_ROUNDS=1     fills of ~1M keys (each on freshly started servers)
#   MEM_N=3000000    requests per fill (-r 1000000 gives ~950k distinct keys)
#   LUA=path         the Lua peer (default bench/gcra.lua)
#   BIN=path         a redcell binary to use instead of building the work tree
#   BEFORE=path      a second redcell binary (an older build), run beside the
#                    first as the column "redcell before", for a before/after
#                    table in one run; BEFORE_ARGS are flags for it only
#                    (BEFORE=same uses the first binary: BEFORE=same
#                    BEFORE_ARGS="--event-loops 0" compares a setting)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
MEM_ROUNDS=${MEM_ROUNDS:-1}
MEM_N=${MEM_N:-3000000}
repo=$(cd "$(dirname "$0")/.." && pwd)
LUA=${LUA:-$repo/bench/gcra.lua}
REDIS_CELL=${REDIS_CELL:-}
script=bench/run.sh

if [[ -n $REDIS_CELL ]]; then
	[[ -f $REDIS_CELL ]] || { echo "bench/run.sh: REDIS_CELL=$REDIS_CELL: no such file" >&2; exit 1; }
	# redis-server changes into --dir before it loads modules.
	REDIS_CELL=$(realpath "$REDIS_CELL")
fi

# The servers, by side: rc is redcell, cell Redis with the redis-cell module,
# lua Redis with the Lua script (and the plain redis-server for PING).
declare -A port=([lua]=6391 [cell]=6392 [rc]="" [rc0]="") pid=([lua]="" [cell]="" [rc]="" [rc0]="")
BEFORE=${BEFORE:-}
BEFORE_ARGS=${BEFORE_ARGS:-}
sides=(rc)
[[ -z $BEFORE ]] || sides+=(rc0)
[[ -z $REDIS_CELL ]] || sides+=(cell)
sides+=(lua)
rcs=(rc)
[[ -z $BEFORE ]] || rcs+=(rc0)
sha=""
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-server "install it with \`apt-get install redis-server\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"
# Without the script every EVALSHA is an instant error: the peer would look fast.
[[ -f $LUA ]] || { echo "bench/run.sh: the Lua peer $LUA is missing (set LUA=path)" >&2; exit 1; }

# expect SIDE ARGS...: the server answers ARGS (a throttle of a fresh key
# of 15 30 60, which redis-cell answers 0 16 15 -1 2) as redis-cell does; a wrong module, a
# broken script or a server that answers errors would otherwise be timed.
expect() {
	local side=$1 got
	shift
	got=$(redis-cli -h $HOST -p "${port[$side]}" "$@" bench:check 15 30 60 2>&1 | tr '\n' ' ')
	if [[ $got != "0 16 15 -1 2 " ]]; then
		log "bench/run.sh: $side answers '$* bench:check 15 30 60' with '$got', not '0 16 15 -1 2'"
		exit 1
	fi
	redis-cli -h $HOST -p "${port[$side]}" DEL bench:check >/dev/null
}

start_lua() {
	start_redis lua
	sha=$(redis-cli -h $HOST -p "${port[lua]}" SCRIPT LOAD "$(cat "$LUA")")
	expect lua EVALSHA "$sha" 1
}

start_cell() {
	start_redis cell --loadmodule "$REDIS_CELL"
	expect cell CL.THROTTLE
}

start_redcell() {
	start_redcell_side rc
	expect rc CL.THROTTLE
	if [[ -n $BEFORE ]]; then
		# shellcheck disable=SC2086 # BEFORE_ARGS are words
		redcell_bin=$before_bin start_redcell_side rc0 $BEFORE_ARGS
		expect rc0 CL.THROTTLE
	fi
}

start_servers() {
	start_lua
	[[ -z $REDIS_CELL ]] || start_cell
	start_redcell
}

# throttle SIDE: the words that make a CL.THROTTLE call on SIDE.
throttle() { if [[ $1 == lua ]]; then echo "EVALSHA $sha 1"; else echo CL.THROTTLE; fi; }

# val NAME COLUMN FORMAT: the median of a column, formatted; "skipped" for
# redis-cell's files without REDIS_CELL, nothing for a load a side never runs
# (PING: redis-cell's server is a redis-server, measured as the Lua column).
val() {
	if [[ -f $work/$1 ]]; then
		printf "$3" "$(median "$1" "$2")"
	elif [[ $1 == *.cell && $1 != ping* && -z $REDIS_CELL ]]; then
		printf skipped
	fi
}

[[ -n $REDIS_CELL ]] || log "REDIS_CELL is not set: the redis-cell rows are skipped." \
	"Build the module as ../shared/BENCH.md describes and run REDIS_CELL=/path/to/libredis_cell.so $0"
build_redcell
if [[ $BEFORE == same ]]; then
	before_bin=$work/redcell
elif [[ -n $BEFORE ]]; then
	[[ -x $BEFORE ]] || { echo "bench/run.sh: BEFORE=$BEFORE is not an executable" >&2; exit 1; }
	cp "$BEFORE" "$work/redcell.before"
	before_bin=$work/redcell.before
fi
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
start_servers

rand="key:__rand_int__ 100 10 1"
hot="hot 100 10 1"
for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	for s in "${sides[@]}"; do
		# shellcheck disable=SC2046 # throttle's words are meant to split
		bench rand.$s "" $s -P 16 -c 50 -r 100000 -n "$N" $(throttle $s) $rand
	done
	for s in "${rcs[@]}" lua; do bench ping.$s PING_MBULK $s -t ping_mbulk -P 16 -c 50 -n "$N"; done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench hot.$s "" $s -P 16 -c 50 -n "$N" $(throttle $s) $hot; done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench lat.$s "" $s -c 50 -r 100000 -n "$LAT_N" $(throttle $s) $rand; done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench lathot.$s "" $s -c 50 -n "$LAT_N" $(throttle $s) $hot; done
	for s in "${rcs[@]}" lua; do bench pinglat.$s PING_MBULK $s -t ping_mbulk -c 50 -n "$LAT_N"; done
done

# Memory: fill ~1M live keys (period 3600: they outlive the run) on freshly
# started servers, after a warm-up that brings each to its working size.
# RSS growth is read 3 s after the fill (redcell's last persistence flush),
# free pages returned on every server (settled_rss), and divided by the
# growth of DBSIZE.
fill="key:__rand_int__ 1 1 3600"
warm="warm:__rand_int__ 1 1 3600"
for m in $(seq "$MEM_ROUNDS"); do
	log "memory $m/$MEM_ROUNDS"
	stop_servers
	start_servers
	for s in "${sides[@]}"; do
		# shellcheck disable=SC2046
		bench warm.$s "" $s -P 16 -c 50 -r 1000 -n 200000 $(throttle $s) $warm
		sleep 2
		keys0=$(redis-cli -h $HOST -p "${port[$s]}" DBSIZE) rss0=$(settled_rss "$s")
		# shellcheck disable=SC2046
		bench fill.$s "" $s -P 16 -c 50 -r 1000000 -n "$MEM_N" $(throttle $s) $fill
		sleep 3 # redcell's flush
		rss1=$(settled_rss "$s")
		keys1=$(redis-cli -h $HOST -p "${port[$s]}" DBSIZE)
		echo "$((rss1 - rss0)) $((keys1 - keys0)) $rss1 $keys1" >>"$work/mem.$s"
	done
done
for s in "${sides[@]}"; do
	[[ -f $work/mem.$s ]] || echo "0 1 0 1" >"$work/mem.$s" # MEM_ROUNDS=0
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem.$s" >"$work/bpk.$s"
	awk '{ printf "%.1f\n", $3 / $4 }' "$work/mem.$s" >"$work/total.$s"
	awk '{ printf "%.1f\n", $3 / 1048576 }' "$work/mem.$s" >"$work/mib.$s"
	awk '{ print $2 }' "$work/mem.$s" >"$work/keys.$s"
done

# row LABEL NAME COLUMN FORMAT [RC-NAME]: medians of NAME.rc, NAME.cell and
# NAME.lua and redcell's per-round ratios to the other two.
# With BEFORE, the before column and redcell / before come first.
row() {
	local rc=${5:-$2.rc} pre=""
	[[ -z $BEFORE ]] || pre="$(val "$2.rc0" "$3" "$4") | $(pratio "$rc" "$2.rc0" "$3") | "
	printf '| %s | %s | %s%s | %s | %s | %s |\n' "$1" "$(val "$rc" "$3" "$4")" "$pre" "$(val "$2.cell" "$3" "$4")" \
		"$(val "$2.lua" "$3" "$4")" "$(pratio "$rc" "$2.cell" "$3")" "$(pratio "$rc" "$2.lua" "$3")"
}
# latrow LABEL NAME: p50 / p99 medians; the ratios are of p99.
latrow() {
	local s cells=() all=(rc cell lua) line
	[[ -z $BEFORE ]] || all=(rc rc0 cell lua)
	for s in "${all[@]}"; do
		if [[ -f $work/$2.$s ]]; then
			cells+=("$(median "$2.$s" 2) / $(median "$2.$s" 3)")
		else
			cells+=("$(val "$2.$s" 2 %s)")
		fi
		[[ $s != rc0 ]] || cells+=("$(pratio "$2.rc" "$2.rc0" 3)")
	done
	cells+=("$(pratio "$2.rc" "$2.cell" 3)" "$(pratio "$2.rc" "$2.lua" 3)")
	line="| $1"
	for s in "${cells[@]}"; do line+=" | $s"; done
	echo "$line |"
}

redis_version=$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)
echo
echo "redcell $version; redis-cell: ${REDIS_CELL:-not set (REDIS_CELL=path), its rows skipped}; Lua: $LUA;" \
	"Redis $redis_version. $ROUNDS rounds (memory: $MEM_ROUNDS), servers alternated within each; values are medians," \
	"ratios redcell / peer as the median of per-round ratios (above 1x: redcell higher; for ops/s better, for" \
	"latency, CPU and memory worse). Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
echo
if [[ -n $BEFORE ]]; then
	echo "redcell before: ${BEFORE/#same/the same binary} $BEFORE_ARGS"
	echo
	echo "| load | redcell | redcell before | redcell / before | redis-cell | Redis + Lua | redcell / redis-cell | redcell / Lua |"
	echo "|---|---|---|---|---|---|---|---|"
else
	echo "| load | redcell | redis-cell | Redis + Lua | redcell / redis-cell | redcell / Lua |"
	echo "|---|---|---|---|---|---|"
fi
row "ops/s, random keys, -P 16 -c 50 -r 100000" rand 1 %.0f
row "ops/s, one hot key, -P 16 -c 50" hot 1 %.0f
row "ops/s, random keys, unpipelined -c 50 -r 100000" lat 1 %.0f
latrow "p50 / p99 ms, the same (ratios of p99)" lat
row "ops/s, one hot key, unpipelined -c 50" lathot 1 %.0f
latrow "p50 / p99 ms, the same (ratios of p99)" lathot
row "ops/s, PING_MBULK -P 16 -c 50 (Lua column: plain redis-server)" ping 1 %.0f
row "ops/s, PING_MBULK unpipelined -c 50 (the same)" pinglat 1 %.0f
latrow "p50 / p99 ms, the same (ratios of p99)" pinglat
pre=""
[[ -z $BEFORE ]] || pre="$(pratio rand.rc0 ping.rc0 1) | | "
printf '| throttle / PING_MBULK, random keys -P 16 (peers: against the plain redis-server PING) | %s | %s%s | %s | | |\n' \
	"$(pratio rand.rc ping.rc 1)" "$pre" "$(pratio rand.cell ping.lua 1)" "$(pratio rand.lua ping.lua 1)"
row "server CPU us/request, random keys -P 16" rand 4 %.2f
row "server CPU us/request, one hot key -P 16" hot 4 %.2f
row "server CPU us/request, random keys unpipelined" lat 4 %.2f
row "server CPU us/request, PING_MBULK -P 16" ping 4 %.2f
row "redis-benchmark CPU us/request, random keys -P 16" rand 5 %.2f
row "redis-benchmark CPU us/request, PING_MBULK -P 16" ping 5 %.2f
row "RSS growth per live key, filling ~1M keys (B/key)" bpk 1 %.1f
row "total RSS / live keys after the fill (B/key)" total 1 %.1f
row "total RSS after the fill (MiB)" mib 1 %.1f
row "live keys after the fill (DBSIZE growth)" keys 1 %.0f
[[ -n $REDIS_CELL ]] || echo "(redis-cell: skipped, REDIS_CELL is not set; build the module as ../shared/BENCH.md describes.)"
echo
echo "Commands (redcell: $work/redcell --bind $HOST --port 0 --dir DIR, on a free port, a new one at each start;"
echo "Lua: redis-server --bind $HOST --port ${port[lua]} --save '' --appendonly no, SHA=\$(redis-cli -p ${port[lua]} SCRIPT LOAD \"\$(cat $LUA)\");"
[[ -z $REDIS_CELL ]] || echo "redis-cell: redis-server --bind $HOST --port ${port[cell]} --save '' --appendonly no --loadmodule $REDIS_CELL;"
echo "CPU: the server's user + system ticks from /proc/PID/stat around each run, redis-benchmark's from its rusage):"
for k in "${order[@]}"; do
	echo "  $k: ${cmds[$k]//$sha/\$SHA}"
done
