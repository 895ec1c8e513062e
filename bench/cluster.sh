#!/usr/bin/env bash
# bench/cluster.sh: redcell's cluster mode, as ../shared/BENCH.md asks: side
# by side in one run, rounds alternated, medians. Run by hand from anywhere
# (never from tests); it needs go (unless BIN= is set), redis-cli and
# redis-benchmark (with --cluster, Redis 6+), and only talks to 127.0.0.1.
#
# 1. Decisions/s of 1, 2 and 3 nodes as one cluster (--cluster-enabled yes,
#    CLUSTERX SETNODEID and SETNODES pushed to every node, the slots split
#    evenly), pipelined and unpipelined. Each round starts every
#    configuration fresh (new ports, new --dir) in turn, 1 2 3 then 3 2 1.
#    Two or three nodes take redis-benchmark --cluster, which reads CLUSTER
#    NODES, runs a thread per node and sends each client's requests to its
#    node; it needs the key to hold {tag} (it puts there a hash tag of one of
#    that node's slots) and exits at the first MOVED otherwise, so the key is
#    key:{tag}:__rand_int__. It refuses a cluster of one node ("Invalid
#    cluster: 1 node(s)"), so one node takes the plain client with one thread
#    (--threads 1, as --cluster's one thread a node) and the key
#    key:__rand_int__:__rand_int__: in every configuration nearly every key
#    is new and the keys spread over all slots. The server CPU is all nodes'
#    together; "cores busy" is decisions/s times the server's and the
#    client's CPU per decision: on a machine with fewer cores than nodes plus
#    client, more nodes cannot add CPU, and the table shows what they cost.
# 2. What cluster mode costs one node: the same binary twice side by side,
#    --cluster-enabled emulated (every slot its own, each key routed) and
#    standalone (no), the same plain load against each (one node serves
#    every slot, so no --cluster), the one that goes first alternating by
#    round; the ratio is the median of the per-round ratios (the goal:
#    within 3%), with the server CPU per request from /proc/PID/stat.
#
# Every load is checked, since redis-benchmark --cluster counts an error
# reply as a request done (after a MOVED or ASK it reads the slots again,
# other errors it ignores): a node that answers any error during a load (INFO stats
# total_error_replies) stops the script with its errorstats and the
# command's rejected and failed calls, and the nodes must have served at
# least the requests asked for.
#
# Settings (environment):
#   ROUNDS=3       rounds of every configuration and load
#   N=1000000      requests per pipelined run
#   LAT_N=200000   requests per unpipelined run
#   BIN=path       a redcell binary to use instead of building the work tree
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/cluster.sh

# The servers, by side: n0 n1 n2 a cluster's nodes (started again for each
# configuration and round), std the standalone node and emu the emulated one.
declare -A port=([n0]="" [n1]="" [n2]="" [std]="" [emu]="") pid=([n0]="" [n1]="" [n2]="" [std]="" [emu]="")
sides=()
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"
redis-benchmark --help 2>&1 | grep -q -- --cluster ||
	{ log "$script: this redis-benchmark has no --cluster (Redis 6 added it)"; exit 1; }

cli() { redis-cli -h $HOST -p "${port[$1]}" "${@:2}"; }

# died SIDE: the side's server is gone or broke, and its log's end.
died() {
	log "$script: the server $1 died or broke; its log ends with:"
	tail -20 "$work/$1.log" >&2
	exit 1
}

# answer SIDE WANT ARGS...: the side answers ARGS with WANT (redis-cli -c,
# which follows MOVED, so any node of a cluster may be asked).
answer() {
	local got
	got=$(redis-cli -c -h $HOST -p "${port[$1]}" "${@:3}" 2>&1 | tr '\n' ' ')
	[[ $got == "$2" ]] || { log "$script: $1 answers '${*:3}' with '$got', not '$2'"; died "$1"; }
}

# check SIDE: a throttle of a fresh key of 15 30 60 answers 0 16 15 -1 2, as
# redis-cell's; the key is deleted after.
check() {
	answer "$1" "0 16 15 -1 2 " CL.THROTTLE bench:check 15 30 60
	answer "$1" "1 " DEL bench:check
}

# stat SIDE FIELD ARGS...: a field of the side's answer to ARGS (INFO
# stats, CLUSTER INFO).
stat() { cli "$1" "${@:3}" | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }
# calls SIDE: the CL.THROTTLE calls the side has served.
calls() { stat "$1" cmdstat_cl.throttle INFO commandstats | tr ',' '\n' | awk -F= '$1 == "calls" { print $2 }'; }

# checked NAME WANT SIDE... -- BENCH-ARGS...: bench NAME BENCH-ARGS... with
# the sides' server CPU together; then no side may have answered an error
# during it, and together they must have served at least WANT calls. Appends
# the sides' calls, one column each, to $work/calls.NAME.
checked() {
	local name=$1 want=$2 s e0=() c0=() e c got=0 line=""
	shift 2
	local on=()
	while [[ $1 != -- ]]; do on+=("$1") && shift; done
	shift
	for s in "${on[@]}"; do e0+=("$(stat "$s" total_error_replies INFO stats)") c0+=("$(calls "$s")"); done
	cpu="${on[*]}" bench "$name" "" "$@"
	for s in "${!on[@]}"; do
		e=$(stat "${on[$s]}" total_error_replies INFO stats) c=$(calls "${on[$s]}")
		if ((e != e0[s])); then
			# redcell's errorstats leaves out MOVED, ASK, TRYAGAIN, CLUSTERDOWN
			# and CROSSSLOT (total_error_replies counts them): the refusals
			# are the command's rejected_calls, its own errors failed_calls.
			log "$script: ${on[$s]} answered $((e - e0[s])) errors during $name: ${cmds[$name]}"
			cli "${on[$s]}" INFO errorstats | grep errorstat_ >&2 || true
			stat "${on[$s]}" cmdstat_cl.throttle INFO commandstats >&2
			died "${on[$s]}"
		fi
		got=$((got + c - c0[s])) line+="$((c - c0[s])) "
	done
	((got >= want)) || { log "$script: the nodes served $got calls during $name, not $want: ${cmds[$name]}"; exit 1; }
	echo "$line" >>"$work/calls.$name"
}

# nodeid I: node I's ID (40 hex digits, the same in every run).
nodeid() { printf 'redcell-bench-node-%d' "$1" | sha1sum | cut -c1-40; }

# cluster K: K fresh nodes n0..n(K-1) as one cluster, each the owner of an
# even share of the slots; sets sides.
cluster() {
	local k=$1 i top=""
	sides=()
	for ((i = 0; i < k; i++)); do
		sides+=("n$i")
		start_redcell_side "n$i" --cluster-enabled yes
	done
	for ((i = 0; i < k; i++)); do
		top+="$(nodeid $i) $HOST ${port[n$i]} master - $((i * 16384 / k))-$(((i + 1) * 16384 / k - 1))"$'\n'
	done
	for ((i = 0; i < k; i++)); do
		[[ $(cli "n$i" CLUSTERX SETNODEID "$(nodeid $i)") == OK ]] || died "n$i"
		[[ $(cli "n$i" CLUSTERX SETNODES "$top" 1) == OK ]] || died "n$i"
	done
	for ((i = 0; i < k; i++)); do
		[[ $(stat "n$i" cluster_state CLUSTER INFO) == ok ]] || { cli "n$i" CLUSTER INFO >&2; died "n$i"; }
		check "n$i"
	done
	record "topology.$k" "CLUSTERX SETNODEID <id>; CLUSTERX SETNODES \"${top//$'\n'/\\n}\" 1"
}

build_redcell
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. One, two and three nodes as one cluster.
configs=(1 2 3)
for r in $(seq "$ROUNDS"); do
	turn=("${configs[@]}")
	((r % 2)) || turn=(3 2 1)
	for k in "${turn[@]}"; do
		log "round $r/$ROUNDS: $k node(s)"
		cluster "$k"
		if ((k == 1)); then
			client=(--threads 1) key="key:__rand_int__:__rand_int__"
		else
			client=(--cluster) key="key:{tag}:__rand_int__"
		fi
		checked "rand.c$k" "$N" "${sides[@]}" -- n0 "${client[@]}" -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE "$key" 100 10 1
		checked "lat.c$k" "$LAT_N" "${sides[@]}" -- n0 "${client[@]}" -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE "$key" 100 10 1
		stop_servers
		sides=()
	done
done

# 2. One node, emulated cluster against standalone.
sides=(std emu)
start_redcell_side std --cluster-enabled no
start_redcell_side emu --cluster-enabled emulated
check std
check emu
[[ $(stat emu cluster_state CLUSTER INFO) == ok ]] || died emu
for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS: emulated and standalone"
	turn=(emu std)
	((r % 2)) || turn=(std emu)
	for s in "${turn[@]}"; do
		checked "rand.$s" "$N" "$s" -- "$s" -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE key:__rand_int__ 100 10 1
	done
	for s in "${turn[@]}"; do
		checked "lat.$s" "$LAT_N" "$s" -- "$s" -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE key:__rand_int__ 100 10 1
	done
done
stop_servers
sides=()

# Columns of each run's line (lib.sh's bench): 1 rps, 2 p50, 3 p99, 4 server
# us/request, 5 client us/request; busy.NAME: the cores both kept busy.
for f in "$work"/rand.* "$work"/lat.*; do
	awk '{ printf "%.2f\n", $1 * ($4 + $5) / 1e6 }' "$f" >"$work/busy.${f##*/}"
done

# shellcheck disable=SC2059 # FORMAT is a printf format
val() { printf "$3" "$(median "$1" "$2")"; }
# crow LABEL NAME COLUMN FORMAT: the medians of NAME.c1, .c2 and .c3 and the
# per-round ratios of 2 and 3 nodes to 1.
crow() {
	printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(val "$2.c1" "$3" "$4")" "$(val "$2.c2" "$3" "$4")" \
		"$(val "$2.c3" "$3" "$4")" "$(pratio "$2.c2" "$2.c1" "$3")" "$(pratio "$2.c3" "$2.c1" "$3")"
}
clatrow() {
	printf '| %s | %s / %s | %s / %s | %s / %s | %s | %s |\n' "$1" "$(median "$2.c1" 2)" "$(median "$2.c1" 3)" \
		"$(median "$2.c2" 2)" "$(median "$2.c2" 3)" "$(median "$2.c3" 2)" "$(median "$2.c3" 3)" \
		"$(pratio "$2.c2" "$2.c1" 3)" "$(pratio "$2.c3" "$2.c1" 3)"
}
# erow LABEL NAME COLUMN FORMAT: emulated and standalone, and their ratio.
erow() {
	printf '| %s | %s | %s | %s |\n' "$1" "$(val "$2.emu" "$3" "$4")" "$(val "$2.std" "$3" "$4")" "$(pratio "$2.emu" "$2.std" "$3")"
}
shares() { tail -1 "$work/calls.$1" | awk '{ for (i = 1; i <= NF; i++) { s += $i; v[i] = $i } for (i = 1; i <= NF; i++) printf "%s%.0f%%", (i > 1 ? " / " : ""), 100 * v[i] / s }'; }

cores=$(nproc)
echo
echo "redcell $version; $ROUNDS rounds, the configurations alternated within each (1 2 3, then 3 2 1; emulated" \
	"and standalone: which goes first alternating); values are medians, ratios the median of the per-round" \
	"ratios. Load average at start: $load0, at end: $(cut -d' ' -f1-3 /proc/loadavg) on $cores cores."
echo
echo "**1. Nodes as one cluster** (server CPU: all nodes together; cores busy: decisions/s x (server + client CPU per decision))"
echo
echo "| measure | 1 node | 2 nodes | 3 nodes | 2 / 1 | 3 / 1 |"
echo "|---|---|---|---|---|---|"
crow "decisions/s, -P 16 -c 50 -r 100000 -n $N" rand 1 %.0f
crow "server CPU us/decision, the same" rand 4 %.2f
crow "redis-benchmark CPU us/decision, the same" rand 5 %.2f
crow "cores busy, the same (of $cores)" busy.rand 1 %.2f
printf '| requests each node served, last round | %s | %s | %s | | |\n' "$(shares rand.c1)" "$(shares rand.c2)" "$(shares rand.c3)"
crow "decisions/s, unpipelined -c 50 -r 100000 -n $LAT_N" lat 1 %.0f
clatrow "p50 / p99 ms, the same (ratios of p99)" lat
crow "server CPU us/decision, the same" lat 4 %.2f
crow "redis-benchmark CPU us/decision, the same" lat 5 %.2f
crow "cores busy, the same (of $cores)" busy.lat 1 %.2f
echo
if ((cores < 4)); then
	echo "On $cores cores the load tool and every node share the same CPUs: a node more adds no CPU, only one" \
		"more process (and, with --cluster, one more client thread) competing for them, so these rows show what" \
		"splitting the slots costs, not how a cluster scales (that needs a node per core or machine, and the" \
		"client elsewhere). Where 2 or 3 nodes do more than 1, look at cores busy: one node runs one event loop" \
		"(--event-loops: one per two CPUs) and leaves CPU a second node's loop takes, and on a shared machine" \
		"more runnable threads take a larger share from the neighbours (the load average above)."
else
	echo "On $cores cores the load tool and the nodes still share one machine: a node adds CPU only while cores" \
		"are idle (cores busy below $cores); beyond that these rows show what splitting the slots costs."
fi
echo "1 node: redis-benchmark --threads 1 (--cluster refuses one node), key key:__rand_int__:__rand_int__;" \
	"2 and 3: --cluster (a client thread a node), key key:{tag}:__rand_int__ (--cluster writes a slot's hash tag" \
	"over {tag}; without it the first MOVED ends the run). Either way nearly every key is new, over all slots."
echo
echo "**2. One node: emulated cluster against standalone, the same binary, the same plain load**"
echo
echo "| measure | --cluster-enabled emulated | standalone | emulated / standalone |"
echo "|---|---|---|---|"
erow "ops/s, -P 16 -c 50 -r 100000 -n $N (goal: >= 0.97x)" rand 1 %.0f
erow "server CPU us/request, the same (goal: <= 1.03x)" rand 4 %.2f
erow "ops/s, unpipelined -c 50 -r 100000 -n $LAT_N (goal: >= 0.97x)" lat 1 %.0f
printf '| p50 / p99 ms, the same (ratio of p99) | %s / %s | %s / %s | %s |\n' "$(median lat.emu 2)" "$(median lat.emu 3)" \
	"$(median lat.std 2)" "$(median lat.std 3)" "$(pratio lat.emu lat.std 3)"
erow "server CPU us/request, the same (goal: <= 1.03x)" lat 4 %.2f
echo
echo "Commands (redcell: $work/redcell --bind $HOST --port 0 --dir DIR --cluster-enabled yes|emulated|no, on a free" \
	"port, a new one at each start, so -p is the last start's; the cluster's topology pushed to every node," \
	"<id> each node's own; CPU: user + system ticks from /proc/PID/stat around each run, all the nodes'," \
	"redis-benchmark's from its rusage):"
for k in "${order[@]}"; do
	echo "  $k: ${cmds[$k]}"
done
