#!/usr/bin/env bash
# bench/limiters.sh: redcell's other limiters against what users run on
# Redis 7 today, side by side, rounds alternated, as ../shared/BENCH.md asks.
# Run by hand (never from tests); it needs go (unless BIN= is set),
# redis-server, redis-cli and redis-benchmark, and only talks to 127.0.0.1.
#
#   CL.WINDOW key 100 60           vs  the zset log as one Lua script
#                                      (bench/window_zset.lua)
#   CL.WINDOW key 100 60 PRECISION 1  vs  INCR key:minute + EXPIRE in a
#                                      pipeline (bench/pipeload sends both)
#   CL.RESERVE key 100 10 1 1 MAXWAIT 1000  vs  the HMGET/HMSET funnel
#                                      (bench/funnel.lua)
#   memory per key with every key's log holding 100 entries: CL.WINDOW
#   against the zset log
#
# Settings (environment):
#   ROUNDS=3      rounds of every load
#   N=1000000     requests per round
#   MEM_KEYS=10000  keys of the memory fill, each then holding 100 entries
#   BIN=path      a redcell binary to use instead of building the work tree
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
MEM_KEYS=${MEM_KEYS:-10000}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/limiters.sh

# The servers, by side: rc is redcell, lua a plain Redis with the scripts.
declare -A port=([lua]=6391 [rc]="") pid=([lua]="" [rc]="")
sides=(rc lua)
declare -A sha
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-server "install it with \`apt-get install redis-server\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"

start_servers() {
	local s
	start_redis lua
	for s in window_zset funnel; do
		sha[$s]=$(redis-cli -h $HOST -p "${port[lua]}" SCRIPT LOAD "$(cat "$repo/bench/$s.lua")")
	done
	check lua "0 100 99 -1 " EVALSHA "${sha[window_zset]}" 1 check:w 100 60
	check lua "1 99 " EVALSHA "${sha[funnel]}" 1 check:f 100 10 1
	start_redcell_side rc
	check rc "0 100 99 -1 60 " CL.WINDOW check:w 100 60
	check rc "0 101 100 0 100 " CL.RESERVE check:f 100 10 1 1 MAXWAIT 1000
	tell lua DEL check:w check:f >/dev/null
	tell rc DEL check:w check:f >/dev/null
}

# window SIDE / reserve SIDE: the words of one call on SIDE.
window() { if [[ $1 == lua ]]; then echo "EVALSHA ${sha[window_zset]} 1"; else echo CL.WINDOW; fi; }
reserve() {
	if [[ $1 == lua ]]; then echo "EVALSHA ${sha[funnel]} 1 reserve:__rand_int__ 101 10 1"; else echo "CL.RESERVE reserve:__rand_int__ 100 10 1 1 MAXWAIT 1000"; fi
}

build_redcell
(cd "$repo" && go build -o "$work/pipeload" ./bench/pipeload)
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
start_servers

for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	# shellcheck disable=SC2046 # the words are meant to split
	for s in "${sides[@]}"; do bench win.$s "" $s -P 16 -c 50 -r 100000 -n "$N" $(window $s) window:__rand_int__ 100 60; done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench winlat.$s "" $s -c 50 -r 100000 -n $((N / 5)) $(window $s) window:__rand_int__ 100 60; done
	for s in "${sides[@]}"; do
		mode=window
		[[ $s == lua ]] && mode=incr
		tool=pipeload bench fixed.$s "" $s -mode $mode -P 16 -c 50 -r 100000 -n "$N"
	done
	# shellcheck disable=SC2046
	for s in "${sides[@]}"; do bench reserve.$s "" $s -P 16 -c 50 -r 100000 -n "$N" $(reserve $s); done
done

# Memory: MEM_KEYS keys, each called about 150 times with limit 100 and a
# one-hour window on freshly started servers, so that every log holds
# exactly 100 entries; RSS growth (3 s after, past redcell's persistence
# flush, free pages returned on both: settled_rss) per key. The 100 entries are checked.
stop_servers
start_servers
for s in "${sides[@]}"; do
	# shellcheck disable=SC2046
	bench warm.$s "" $s -P 16 -c 50 -r 1000 -n 200000 $(window $s) warm:__rand_int__ 100 3600
	sleep 2
	keys0=$(tell $s DBSIZE) rss0=$(settled_rss "$s")
	# shellcheck disable=SC2046
	bench fill.$s "" $s -P 16 -c 50 -r "$MEM_KEYS" -n $((MEM_KEYS * 150)) $(window $s) log:__rand_int__ 100 3600
	sleep 3 # redcell's flush
	rss1=$(settled_rss "$s")
	keys1=$(tell $s DBSIZE)
	echo "$((rss1 - rss0)) $((keys1 - keys0))" >>"$work/mem.$s"
	awk '{ printf "%.1f\n", $1 / $2 }' "$work/mem.$s" >"$work/bpk.$s"
	awk '{ print $2 }' "$work/mem.$s" >"$work/keys.$s"
done
# Every key holds 100 entries: ZCARD on Redis, a peek's remaining 0 on redcell.
for i in 0 $((MEM_KEYS / 2)) $((MEM_KEYS - 1)); do
	k=log:$(printf '%012d' "$i")
	check lua "100 " ZCARD "$k"
	check rc "0 100 0 -1 * " CL.WINDOW "$k" 100 3600 0
done


redis_version=$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)
echo
echo "redcell $version against Redis $redis_version with what users run there. $ROUNDS rounds, servers" \
	"alternated within each; values are medians, ratios redcell / Redis as the median of per-round ratios." \
	"Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
echo
echo "| load | redcell | Redis 7 | redcell / Redis |"
echo "|---|---|---|---|"
row "decisions/s, CL.WINDOW 100 60 vs the zset log script, random keys -P 16 -c 50 -r 100000" win 1 %.0f
row "decisions/s, the same unpipelined -c 50" winlat 1 %.0f
printf '| p50 / p99 ms, the same | %s | %s | %s |\n' "$(lat winlat.rc)" "$(lat winlat.lua)" "$(pratio winlat.rc winlat.lua 3)"
row "decisions/s, CL.WINDOW PRECISION 1 vs INCR + EXPIRE in a pipeline, -P 16 -c 50 -r 100000" fixed 1 %.0f
row "decisions/s, CL.RESERVE vs the HMGET/HMSET funnel script, -P 16 -c 50 -r 100000" reserve 1 %.0f
row "server CPU us/decision, CL.WINDOW vs the zset log, -P 16" win 4 %.2f
row "server CPU us/decision, fixed window, -P 16" fixed 4 %.2f
row "server CPU us/decision, CL.RESERVE vs the funnel, -P 16" reserve 4 %.2f
row "RSS growth per key, $MEM_KEYS keys of 100 entries each (B/key)" bpk 1 %.1f
row "keys after the fill (DBSIZE growth)" keys 1 %.0f
echo
echo "Commands (redcell: $work/redcell --bind $HOST --port 0 --dir DIR; Redis: redis-server --bind $HOST --port ${port[lua]}" \
	"--save '' --appendonly no, scripts loaded with SCRIPT LOAD from bench/window_zset.lua and bench/funnel.lua;" \
	"pipeload: go build ./bench/pipeload):"
for k in "${order[@]}"; do
	c=${cmds[$k]//${sha[window_zset]}/\$ZSET_SHA}
	echo "  $k: ${c//${sha[funnel]}/\$FUNNEL_SHA}"
done
