#!/usr/bin/env bash
# bench/replication.sh: what one replica costs a redcell master, how far
# behind the replica runs, and how long a full resynchronization takes, as
# ../shared/BENCH.md asks: side by side in one run, rounds alternated,
# medians. Run by hand from anywhere (never from tests); it needs go (for
# bench/repllag, and redcell unless BIN= is set), redis-cli and
# redis-benchmark (redis-server for its row), and only talks to 127.0.0.1.
#
# 1. Throughput: two masters of the same binary side by side, m1 with one
#    redcell replica (r1, started with --replicaof) and m0 with none; each
#    round runs the pipelined and the unpipelined load against both, the
#    one that goes first alternating, and the ratio m1 / m0 is the median
#    of the per-round ratios (the goal: >= 0.9x). The replica's CPU is
#    shown beside: on one machine it takes cores the master and the load
#    would otherwise have.
#    The same for Redis, as the host's yardstick: a redis-server master
#    with one redis-server replica (rm1, rr1) and one with none (rm0),
#    persistence off, under the same pipelined load of SET key:<n> <a TAT>:
#    what a replica costs Redis itself when the three share the cores.
# 2. Lag: each round, the pipelined load once more against m1 under
#    bench/repllag lag, which every 20 ms makes a decision on a fresh key on
#    the master and times it from the master's reply until a GET on the
#    replica (polled back to back) first finds the key, and samples the byte
#    lag (master_repl_offset - slave_repl_offset); then how long the replica
#    takes to reach the master's offset once the load ends.
# 3. Full resync: a fresh master filled with exactly KEYS keys (repllag fill,
#    CL.THROTTLE fill:<i> 1 1 3600), then a fresh replica is sent REPLICAOF
#    and timed until master_link_status:up and until its DBSIZE equals the
#    master's; the RDB's bytes are the master's "full resynchronization sent"
#    log line's. The same against a real redis-server replica (on a Unix
#    socket, no TCP port) as the second column, alternated by round.
#
# Settings (environment):
#   ROUNDS=3          rounds of the loads (throughput, then lag)
#   N=1000000         requests per pipelined round
#   LAT_N=200000      requests per unpipelined round
#   KEYS=1000000      keys of the full resync
#   RESYNC_ROUNDS=$ROUNDS  resyncs of each replica (each a fresh one)
#   REDIS=1           0 skips the redis-server replica (unset if no
#                     redis-server is installed)
#   BIN=path          a redcell binary to use instead of building the work tree
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
KEYS=${KEYS:-1000000}
RESYNC_ROUNDS=${RESYNC_ROUNDS:-$ROUNDS}
REDIS=${REDIS:-1}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/replication.sh

# The servers, by side: m1 the master with a replica, r1 its replica, m0 the
# master alone; for the resync, big the filled master, fresh the replica
# made for each resync, redis the redis-server replica.
declare -A port=([m1]="" [r1]="" [m0]="" [big]="" [fresh]="" [redis]="" [rm1]=6393 [rr1]=6394 [rm0]=6395) \
	pid=([m1]="" [r1]="" [m0]="" [big]="" [fresh]="" [redis]="" [rm1]="" [rr1]="" [rm0]="")
sides=(m1 r1 m0)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need go "bench/repllag is built with it"
if [[ $REDIS == 1 ]] && ! command -v redis-server >/dev/null; then
	log "$script: no redis-server in PATH: its resync column is skipped"
	REDIS=0
fi

cli() { redis-cli -h $HOST -p "${port[$1]}" "${@:2}"; }

# field SIDE NAME: NAME's value in the side's INFO replication.
field() { cli "$1" INFO replication | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }

# died SIDE: the side's server is gone, and its log's end.
died() {
	log "$script: the server $1 died or broke; its log ends with:"
	tail -20 "$work/$1.log" >&2
	exit 1
}

# linked MASTER REPLICA: wait (up to 30 s) until the replica's link is up and
# the master shows it online.
linked() {
	for _ in $(seq 300); do
		kill -0 "${pid[$1]}" 2>/dev/null || died "$1"
		kill -0 "${pid[$2]}" 2>/dev/null || died "$2"
		if [[ $(field "$2" master_link_status) == up && $(field "$1" slave0) == *state=online* ]]; then
			return 0
		fi
		sleep 0.1
	done
	log "$script: $2 is no replica of $1 after 30 s"
	cli "$1" INFO replication >&2
	cli "$2" INFO replication >&2
	died "$2"
}

# cpu_of SIDE NAME CMD...: runs CMD and appends the side's CPU time per
# request (microseconds; the requests are \$N of the load, passed as NAME's
# -n) to $work/NAME.
cpu_of() {
	local side=$1 name=$2 n=$3 t0 t1
	shift 3
	t0=$(ticks "${pid[$side]}")
	"$@"
	t1=$(ticks "${pid[$side]}")
	awk -v s=$((t1 - t0)) -v hz="$HZ" -v n="$n" 'BEGIN { printf "%.3f\n", s / hz * 1e6 / n }' >>"$work/$name"
}

build_redcell
log "building bench/repllag"
(cd "$repo" && go build -o "$work/repllag" ./bench/repllag)
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

start_redcell_side m1
start_redcell_side m0
start_redcell_side r1 --replicaof "$HOST ${port[m1]}"
linked m1 r1
[[ $(field m0 connected_slaves) == 0 ]] || { log "$script: m0 has replicas"; exit 1; }
if [[ $REDIS == 1 ]]; then
	sides+=(rm1 rr1 rm0)
	start_redis rm1
	start_redis rm0
	start_redis rr1 --replicaof "$HOST" "${port[rm1]}"
	linked rm1 rr1
fi
set_tat="key:__rand_int__ 1764600000000000000"

rand="key:__rand_int__ 100 10 1"
for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	turn=(m1 m0)
	((r % 2)) || turn=(m0 m1)
	for s in "${turn[@]}"; do
		# shellcheck disable=SC2086 # $rand's words are meant to split
		cpu_of r1 rcpu.rand.$s "$N" bench rand.$s "" $s -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE $rand
	done
	if [[ $REDIS == 1 ]]; then
		rturn=(rm1 rm0)
		((r % 2)) || rturn=(rm0 rm1)
		for s in "${rturn[@]}"; do
			# shellcheck disable=SC2086 # $set_tat's words are meant to split
			cpu_of rr1 rcpu.rand.$s "$N" bench rand.$s "" $s -P 16 -c 50 -r 100000 -n "$N" SET $set_tat
		done
		linked rm1 rr1
	fi
	for s in "${turn[@]}"; do
		# shellcheck disable=SC2086
		cpu_of r1 rcpu.lat.$s "$LAT_N" bench lat.$s "" $s -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE $rand
	done
	linked m1 r1
	lag=("$work/repllag" lag -master "$HOST:${port[m1]}" -replica "$HOST:${port[r1]}" --
		redis-benchmark -h "$HOST" -p "${port[m1]}" -q -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE)
	# shellcheck disable=SC2206
	lag+=($rand)
	record lag "${lag[*]}"
	if ! "${lag[@]}" >>"$work/lag" 2>"$work/lag.err"; then
		log "$script: the lag run failed: ${lag[*]}"
		tail -c 2000 "$work/lag.err" >&2
		echo >&2
		died r1
	fi
	linked m1 r1
done
for c in 1 2 3 4 5 6 7 8 9 10; do awk -v c=$c '{ print $c }' "$work/lag" >"$work/lag.$c"; done

# The full resync: a fresh master with exactly KEYS keys, then each round a
# fresh redcell replica and a fresh redis-server replica (the one that goes
# first alternating), each timed from REPLICAOF.
stop_servers
sides=(big)
start_redcell_side big
log "filling $KEYS keys"
fill=("$work/repllag" fill -addr "$HOST:${port[big]}" -n "$KEYS")
record fill "${fill[*]}"
fill_out=$("${fill[@]}")
[[ $(cli big DBSIZE) == "$KEYS" ]] || { log "$script: the master holds $(cli big DBSIZE) keys after the fill, not $KEYS"; exit 1; }

sock=$work/redis.sock
start_redis_replica() {
	rm -rf "$work/redis.d" "$sock"
	mkdir "$work/redis.d"
	redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' --appendonly no \
		--dir "$work/redis.d" --logfile "$work/redis.log" &
	pid[redis]=$!
	until redis-cli -s "$sock" PING >/dev/null 2>&1; do
		kill -0 "${pid[redis]}" 2>/dev/null || died redis
		sleep 0.1
	done
}

stop_side() {
	kill "${pid[$1]}" 2>/dev/null || died "$1"
	wait "${pid[$1]}" 2>/dev/null || true
	pid[$1]=""
}

# resync SIDE ADDR: one timed resync of the fresh replica SIDE at ADDR;
# appends "up_s equal_s keys rdb_bytes bytes_per_key master_rss_growth_mb"
# to $work/resync.SIDE, the last the most the master's RSS rose over its
# RSS before the resync, sampled every 10 ms while it ran.
resync() {
	local side=$1 out bytes base sampler
	local run=("$work/repllag" resync -master "$HOST:${port[big]}" -replica "$2")
	record "resync.$side" "${run[*]}"
	base=$(rss "${pid[big]}")
	echo "$base" >"$work/rss.peak"
	(
		peak=$base
		while :; do
			r=$(rss "${pid[big]}") || exit 0
			((r > peak)) && peak=$r && echo "$peak" >"$work/rss.peak"
			sleep 0.01
		done
	) &
	sampler=$!
	if ! out=$("${run[@]}" 2>"$work/resync.err"); then
		kill "$sampler" 2>/dev/null || true
		log "$script: the resync of $side failed: ${run[*]}"
		cat "$work/resync.err" >&2
		died "$side"
	fi
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	bytes=$(grep 'full resynchronization sent' "$work/big.log" | tail -1 | grep -o ' bytes=[0-9]*' | cut -d= -f2)
	[[ -n $bytes ]] || { log "$script: no \"full resynchronization sent\" line in the master's log"; died big; }
	echo "$out $bytes $base $(cat "$work/rss.peak")" |
		awk '{ printf "%s %s %s %s %.1f %.1f\n", $1, $2, $3, $4, $4 / $3, ($6 - $5) / 1048576 }' >>"$work/resync.$side"
}

reps=(fresh)
[[ $REDIS == 0 ]] || reps+=(redis)
for r in $(seq "$RESYNC_ROUNDS"); do
	log "resync $r/$RESYNC_ROUNDS"
	turn=("${reps[@]}")
	((r % 2)) || [[ ${#reps[@]} -lt 2 ]] || turn=(redis fresh)
	for s in "${turn[@]}"; do
		if [[ $s == fresh ]]; then
			start_redcell_side fresh
			resync fresh "$HOST:${port[fresh]}"
			grep -q "loaded the master's snapshot.* keys=$KEYS " "$work/fresh.log" ||
				{ log "$script: the replica did not load $KEYS keys"; died fresh; }
		else
			start_redis_replica
			resync redis "$sock"
		fi
		stop_side "$s"
	done
done
for s in "${reps[@]}"; do
	for c in 1 2 4 5 6; do awk -v c=$c '{ print $c }' "$work/resync.$s" >"$work/resync.$s.$c"; done
done

# row LABEL A B FORMAT: the medians of $work/A and $work/B and the median of
# the per-round ratios A / B.
# shellcheck disable=SC2059 # FORMAT is a printf format
row() {
	local b="" ratio=""
	if [[ -n $3 && -f $work/$3 ]]; then
		b=$(printf "$4" "$(median "$3" 1)")
		ratio=$(pratio "$2" "$3" 1)
	fi
	printf '| %s | %s | %s | %s |\n' "$1" "$(printf "$4" "$(median "$2" 1)")" "$b" "$ratio"
}
# latrow LABEL A B: p50 / p99 of redis-benchmark's rows; the ratio of p99.
latrow() {
	printf '| %s | %s / %s | %s / %s | %s |\n' "$1" "$(median "$2" 2)" "$(median "$2" 3)" \
		"$(median "$3" 2)" "$(median "$3" 3)" "$(pratio "$2" "$3" 3)"
}
maxof() { sort -g "$work/$1" | tail -1; }
for s in m1 m0; do
	for l in rand lat; do awk '{ print $4 }' "$work/$l.$s" >"$work/scpu.$l.$s"; done
done
if [[ $REDIS == 1 ]]; then
	for s in rm1 rm0; do awk '{ print $4 }' "$work/rand.$s" >"$work/scpu.rand.$s"; done
fi

redis_version=$(redis-server --version 2>/dev/null | grep -o 'v=[0-9.]*' | cut -d= -f2 || true)
echo
echo "redcell $version; $ROUNDS rounds of the loads and $RESYNC_ROUNDS resyncs, the two sides alternated" \
	"within each (which goes first alternating by round); values are medians, ratios the median of the" \
	"per-round ratios. Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores: the master," \
	"its replica and the load share them."
echo
echo "| measure | A | B | A / B |"
echo "|---|---|---|---|"
echo "| **A: a master with one redcell replica; B: the same binary with none** | | | |"
row "ops/s, -P 16 -c 50 -r 100000 -n $N CL.THROTTLE $rand (goal: A / B >= 0.9x)" rand.m1 rand.m0 %.0f
row "master CPU us/request, the same" scpu.rand.m1 scpu.rand.m0 %.2f
row "the replica's CPU us/request, the same" rcpu.rand.m1 "" %.2f
row "ops/s, unpipelined -c 50 -r 100000 -n $LAT_N" lat.m1 lat.m0 %.0f
latrow "p50 / p99 ms, the same (ratio of p99)" lat.m1 lat.m0
row "master CPU us/request, the same" scpu.lat.m1 scpu.lat.m0 %.2f
row "the replica's CPU us/request, the same" rcpu.lat.m1 "" %.2f
if [[ $REDIS == 1 ]]; then
	echo "| **the host's yardstick: A: a redis-server $redis_version master with one redis-server replica; B: one with none** | | | |"
	row "ops/s, -P 16 -c 50 -r 100000 -n $N SET $set_tat" rand.rm1 rand.rm0 %.0f
	row "master CPU us/request, the same" scpu.rand.rm1 scpu.rand.rm0 %.2f
	row "the replica's CPU us/request, the same" rcpu.rand.rm1 "" %.2f
fi
echo "| **lag of A's replica under the pipelined load (p50 / p99: medians of the rounds'; max: of all)** | | | |"
printf '| probe lag ms, p50 / p99 / max (%s probes a round, %s missed in all) | %s / %s / %s | | |\n' \
	"$(median lag.1 1)" "$(awk '{ s += $1 } END { print s }' "$work/lag.2")" \
	"$(median lag.3 1)" "$(median lag.4 1)" "$(maxof lag.5)"
printf '| byte lag, master_repl_offset - slave_repl_offset, p50 / p99 / max (%s samples a round) | %s / %s / %s | | |\n' \
	"$(median lag.6 1)" "$(median lag.7 1)" "$(median lag.8 1)" "$(maxof lag.9)"
printf '| catch-up after the load ends, ms (median / max) | %s / %s | | |\n' "$(median lag.10 1)" "$(maxof lag.10)"
if [[ $REDIS == 0 ]]; then
	echo "| **full resync of $KEYS keys: A: a fresh redcell replica; B: skipped (REDIS=0 or no redis-server)** | | | |"
else
	echo "| **full resync of $KEYS keys: A: a fresh redcell replica; B: a fresh redis-server $redis_version replica** | | | |"
fi
b=""
[[ $REDIS == 0 ]] || b=redis
row "seconds from REPLICAOF to master_link_status:up" resync.fresh.1 "${b:+resync.redis.1}" %.3f
row "seconds from REPLICAOF to DBSIZE equal to the master's" resync.fresh.2 "${b:+resync.redis.2}" %.3f
row "RDB bytes sent (the master's log)" resync.fresh.4 "${b:+resync.redis.4}" %.0f
row "RDB bytes per key" resync.fresh.5 "${b:+resync.redis.5}" %.1f
row "the master's peak RSS growth during the resync, MiB" resync.fresh.6 "${b:+resync.redis.6}" %.1f
echo
echo "The probe lag is the time from the master's reply to CL.THROTTLE probe:<run>:<n> 1 1 3600 (a fresh key," \
	"every 20 ms) until the replica's GET of that key, sent back to back, first finds it: the master's feed" \
	"interval (1 ms), the stream over TCP, the replica's apply, and up to one GET round trip; it is measured" \
	"on its own connections while the load runs. The byte lag is sampled every 20 ms from INFO replication" \
	"(the master's offset read before and after the replica's, averaged). Catch-up: from the load's end until" \
	"the replica's slave_repl_offset reaches the master's master_repl_offset."
echo
echo "Commands (redcell: $work/redcell --bind $HOST --port 0 --dir DIR, on a free port, a new one at each start;" \
	"r1: the same with --replicaof \"$HOST <m1's port>\"; the fresh replica: the same, then REPLICAOF;" \
	"rm1, rr1, rm0: redis-server --bind $HOST --port P --save '' --appendonly no, rr1 with --replicaof $HOST ${port[rm1]};" \
	"redis-server replica: redis-server --port 0 --unixsocket SOCK --save '' --appendonly no --dir DIR, then REPLICAOF;" \
	"CPU: user + system ticks from /proc/PID/stat around each run; fill: $fill_out (keys, seconds)):"
for k in "${order[@]}"; do
	echo "  $k: ${cmds[$k]}"
done
