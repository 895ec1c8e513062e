#!/usr/bin/env bash
# bench/run.sh: redcell against its peers, side by side, as ../shared/BENCH.md
# asks. Run by hand from anywhere (never from tests); it needs go, redis-server,
# redis-cli and redis-benchmark, and only ever talks to 127.0.0.1.
#
# It builds redcell, starts Redis with the Lua GCRA script (port 6391) and
# redcell (a free port, its own temporary --dir, persistence on as by
# default), runs every load against both in alternating rounds (A B A B ...),
# and prints one table of medians and ratios, then the exact commands used.
#
# Settings (environment):
#   ROUNDS=3         rounds of every throughput and latency load
#   N=1000000        requests per pipelined round
#   LAT_N=200000     requests per unpipelined (latency) round
#   MEM_ROUNDS=1     fills of ~1M keys (each on freshly started servers)
#   MEM_N=3000000    requests per fill (-r 1000000 gives ~950k distinct keys)
#   LUA=path         the Lua peer (default ../shared/bench/gcra.lua)
#   BIN=path         a redcell binary to use instead of building the work tree
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
MEM_ROUNDS=${MEM_ROUNDS:-1}
MEM_N=${MEM_N:-3000000}
repo=$(cd "$(dirname "$0")/.." && pwd)
LUA=${LUA:-$repo/../shared/bench/gcra.lua}
# Without the script every EVALSHA is an instant error: the peer would look fast.
[[ -f $LUA ]] || { echo "bench/run.sh: the Lua peer $LUA is missing (set LUA=path)" >&2; exit 1; }
PEER_PORT=6391
HOST=127.0.0.1

work=$(mktemp -d)
rc_pid="" peer_pid="" rc_port="" sha=""

cleanup() {
	[[ -n $rc_pid ]] && kill "$rc_pid" 2>/dev/null && wait "$rc_pid" 2>/dev/null
	[[ -n $peer_pid ]] && kill "$peer_pid" 2>/dev/null && wait "$peer_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

log() { echo "$*" >&2; }

start_peer() {
	if redis-cli -h $HOST -p $PEER_PORT ping >/dev/null 2>&1; then
		log "port $PEER_PORT is already in use: stop that server first"
		exit 1
	fi
	redis-server --bind $HOST --port $PEER_PORT --save '' --appendonly no \
		--logfile "$work/redis.log" &
	peer_pid=$!
	until redis-cli -h $HOST -p $PEER_PORT ping >/dev/null 2>&1; do sleep 0.1; done
	sha=$(redis-cli -h $HOST -p $PEER_PORT SCRIPT LOAD "$(cat "$LUA")")
}

start_redcell() {
	rm -rf "$work/data"
	"$work/redcell" --bind $HOST --port 0 --dir "$work/data" 2>"$work/redcell.log" &
	rc_pid=$!
	until grep -qs "ready to accept connections" "$work/redcell.log"; do
		kill -0 "$rc_pid" || { cat "$work/redcell.log" >&2; exit 1; }
		sleep 0.1
	done
	rc_port=$(grep -o 'addr=[0-9.]*:[0-9]*' "$work/redcell.log" | head -1 | cut -d: -f2)
}

stop_servers() {
	if ! kill "$rc_pid" "$peer_pid"; then
		log "a server died during the run; redcell's log ends with:"
		tail -5 "$work/redcell.log" >&2
		exit 1
	fi
	wait "$rc_pid" "$peer_pid" 2>/dev/null || true
	rc_pid="" peer_pid=""
}

rss() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }

# The commands of each load; %PORT% and the key pattern are filled in below.
declare -A cmds
record() { cmds["$1"]="redis-benchmark -h $HOST -p ${*:2}"; }

# ticks PID: the CPU time (user + system, clock ticks) PID has used.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

# bench NAME TEST PORT ARGS...: one redis-benchmark run; appends "rps p50 p99
# server-us client-us" of the CSV row named TEST (the last row if empty) to
# $work/NAME: the last two are the server's and redis-benchmark's CPU time
# per request (they share the machine's cores).
bench() {
	local name=$1 test=$2 port=$3 pid=$peer_pid n t0 t1 csv client
	shift 3
	[[ $port == "$rc_port" ]] && pid=$rc_pid
	n=$(printf '%s\n' "$@" | awk 'prev == "-n" { print; exit } { prev = $0 }')
	record "$name" "$port" --csv "$@"
	t0=$(ticks "$pid")
	csv=$( { TIMEFORMAT='%U %S'; time redis-benchmark -h $HOST -p "$port" --csv "$@" 2>/dev/null; } 2>"$work/time.tmp")
	t1=$(ticks "$pid")
	client=$(tail -1 "$work/time.tmp")
	printf '%s\n' "$csv" | tr -d '"\r' |
		awk -F, -v t="$test" -v s=$((t1 - t0)) -v hz="$HZ" -v n="$n" -v c="$client" '
			$1 != "test" && (t == "" || $1 == t) { row = $2 " " $5 " " $7 }
			END { split(c, u, " "); printf "%s %.3f %.3f\n", row, s / hz * 1e6 / n, (u[1] + u[2]) * 1e6 / n }' \
			>>"$work/$name"
}

# median NAME COLUMN: the median of a column of $work/NAME.
median() {
	awk -v c="$2" '{ print $c }' "$work/$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

# pratio A B COLUMN: the median of the per-round ratios A/B. Each round runs A
# and B back to back, so a ratio within a round is what the machine's load
# drifting between rounds disturbs least.
pratio() {
	paste -d' ' "$work/$1" "$work/$2" | awk -v c="$3" -v n="$(awk 'END { print NF }' "$work/$1")" \
		'{ if ($(n + c) > 0) print $c / $(n + c) }' >"$work/ratio.tmp"
	printf '%.2fx' "$(median ratio.tmp 1)"
}

if [[ -n ${BIN:-} ]]; then
	cp "$BIN" "$work/redcell"
	version="$("$work/redcell" --version 2>/dev/null || echo "$BIN")"
else
	log "building redcell"
	(cd "$repo" && go build -o "$work/redcell" .)
	version="$(cd "$repo" && git describe --always --dirty)"
fi
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
start_peer
start_redcell

rand="key:__rand_int__ 100 10 1"
hot="hot 100 10 1"
for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	bench rand.rc "" "$rc_port" -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE $rand
	bench rand.peer "" $PEER_PORT -P 16 -c 50 -r 100000 -n "$N" EVALSHA "$sha" 1 $rand
	bench ping.rc PING_MBULK "$rc_port" -t ping_mbulk -P 16 -c 50 -n "$N"
	bench hot.rc "" "$rc_port" -P 16 -c 50 -n "$N" CL.THROTTLE $hot
	bench hot.peer "" $PEER_PORT -P 16 -c 50 -n "$N" EVALSHA "$sha" 1 $hot
	bench lat.rc "" "$rc_port" -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE $rand
	bench lat.peer "" $PEER_PORT -c 50 -r 100000 -n "$LAT_N" EVALSHA "$sha" 1 $rand
	bench lathot.rc "" "$rc_port" -c 50 -n "$LAT_N" CL.THROTTLE $hot
	bench lathot.peer "" $PEER_PORT -c 50 -n "$LAT_N" EVALSHA "$sha" 1 $hot
done

# Memory: fill ~1M live keys (period 3600: they outlive the run) on freshly
# started servers, after a warm-up that brings both to their working size.
# RSS growth is read as the larger of just after the fill and 3 s later (the
# last persistence flush), and divided by the growth of DBSIZE.
fill="key:__rand_int__ 1 1 3600"
warm="warm:__rand_int__ 1 1 3600"
for m in $(seq "$MEM_ROUNDS"); do
	log "memory $m/$MEM_ROUNDS"
	stop_servers
	start_peer
	start_redcell
	for side in rc peer; do
		if [[ $side == rc ]]; then
			port=$rc_port pid=$rc_pid cmd=(CL.THROTTLE)
		else
			port=$PEER_PORT pid=$peer_pid cmd=(EVALSHA "$sha" 1)
		fi
		bench warm.$side "" "$port" -P 16 -c 50 -r 1000 -n 200000 "${cmd[@]}" $warm
		sleep 2
		keys0=$(redis-cli -h $HOST -p "$port" DBSIZE) rss0=$(rss "$pid")
		bench fill.$side "" "$port" -P 16 -c 50 -r 1000000 -n "$MEM_N" "${cmd[@]}" $fill
		rss1=$(rss "$pid")
		sleep 3
		rss2=$(rss "$pid")
		keys1=$(redis-cli -h $HOST -p "$port" DBSIZE)
		rss1=$((rss1 > rss2 ? rss1 : rss2))
		echo "$((rss1 - rss0)) $((keys1 - keys0)) $rss1 $keys1" >>"$work/mem.$side"
	done
done
for side in rc peer; do
	[[ -f $work/mem.$side ]] || echo "0 1 0 1" >"$work/mem.$side" # MEM_ROUNDS=0
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem.$side" >"$work/bpk.$side"
	awk '{ printf "%.1f\n", $3 / $4 }' "$work/mem.$side" >"$work/total.$side"
	awk '{ printf "%.1f\n", $3 / 1048576 }' "$work/mem.$side" >"$work/mib.$side"
done

row() { # load, redcell file, peer file or "", note
	local rc=$2 peer=$3
	local a p50 p99 b q50 q99
	a=$(median "$rc" 1) p50=$(median "$rc" 2) p99=$(median "$rc" 3)
	if [[ -n $peer ]]; then
		b=$(median "$peer" 1) q50=$(median "$peer" 2) q99=$(median "$peer" 3)
		printf '| %s | %.0f | %.0f | %s | %s / %s | %s / %s |\n' "$1" "$a" "$b" "$(pratio "$rc" "$peer" 1)" "$p50" "$p99" "$q50" "$q99"
	else
		printf '| %s | %.0f | | | %s / %s | |\n' "$1" "$a" "$p50" "$p99"
	fi
}

echo
echo "redcell $version vs Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2) + gcra.lua;" \
	"$ROUNDS alternating rounds (memory: $MEM_ROUNDS); ops/s and latencies are medians, ratios the median of per-round ratios;" \
	"load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo
echo "| load | redcell ops/s | peer ops/s | ratio | redcell p50 / p99 ms | peer p50 / p99 ms |"
echo "|---|---|---|---|---|---|"
row "random keys, -P 16 -c 50 -r 100000" rand.rc rand.peer
row "one hot key, -P 16 -c 50" hot.rc hot.peer
row "random keys, unpipelined -c 50" lat.rc lat.peer
row "one hot key, unpipelined -c 50" lathot.rc lathot.peer
row "redcell PING (PING_MBULK), -P 16 -c 50" ping.rc ""
printf '| throttle / ping (random keys / PING_MBULK, redcell) | | | %s | | |\n' "$(pratio rand.rc ping.rc 1)"
echo
echo "CPU time per request, in microseconds (medians): the server and redis-benchmark share the $(nproc) cores, so"
echo "throughput follows their sum."
echo
echo "| load | redcell server | redis-benchmark vs redcell | peer server | redis-benchmark vs peer |"
echo "|---|---|---|---|---|"
cpurow() { printf '| %s | %s | %s | %s | %s |\n' "$1" "$(median "$2.rc" 4)" "$(median "$2.rc" 5)" "${3:+$(median "$2.peer" 4)}" "${3:+$(median "$2.peer" 5)}"; }
cpurow "random keys, -P 16" rand peer
cpurow "one hot key, -P 16" hot peer
cpurow "PING, -P 16" ping ""
echo
echo "| memory | redcell | peer | ratio | | |"
echo "|---|---|---|---|---|---|"
memrow() { printf '| %s | %s | %s | %s | | |\n' "$1" "$(median "$2.rc" 1)" "$(median "$2.peer" 1)" "$(pratio "$2.rc" "$2.peer" 1)"; }
memrow "RSS growth per live key, filling ~1M keys (B/key)" bpk
memrow "total RSS / live keys after the fill (B/key)" total
memrow "total RSS after the fill (MiB)" mib
printf '| live keys after fill (DBSIZE growth) | %s | %s | | | |\n' "$(awk '{print $2}' "$work/mem.rc" | tr '\n' ' ')" "$(awk '{print $2}' "$work/mem.peer" | tr '\n' ' ')"
echo
echo "Commands (redcell port $rc_port, a free one; peer: redis-server --port $PEER_PORT --save '' --appendonly no,"
echo "SHA=\$(redis-cli -p $PEER_PORT SCRIPT LOAD \"\$(cat gcra.lua)\")):"
for k in rand.rc rand.peer ping.rc hot.rc hot.peer lat.rc lat.peer lathot.rc lathot.peer warm.rc warm.peer fill.rc fill.peer; do
	echo "  $k: ${cmds[$k]//$sha/\$SHA}"
done
