# bench/lib.sh: what bench/run.sh, bench/limiters.sh and bench/ab.sh share,
# sourced by each: finding the tools, starting redis-server and redcell on
# 127.0.0.1, timing a load with redis-benchmark (or bench/pipeload) while
# reading the server's CPU time, medians and per-round ratios.
#
# The caller sets: script (its name, for messages), repo (the module root),
# sides (the servers of a round), and declares the associative arrays port
# and pid (by side) before sourcing; lib.sh makes $work, removed on exit.

HOST=127.0.0.1
work=$(mktemp -d)

log() { echo "$*" >&2; }

need() { command -v "$1" >/dev/null 2>&1 || { log "$script: $1 not found in PATH: $2"; exit 1; }; }

# tell SIDE ARGS...: the side's answer to ARGS on one line, for check.
tell() { redis-cli -h $HOST -p "${port[$1]}" "${@:2}" | tr '\n' ' '; }

# check SIDE WANT ARGS...: the side answers ARGS with WANT (a glob pattern),
# so that a broken script or command is never timed.
check() {
	local got
	got=$(tell "$1" "${@:3}")
	# shellcheck disable=SC2053 # WANT is a pattern
	[[ $got == $2 ]] || { log "$script: $1 answers '${*:3}' with '$got', not '$2'"; exit 1; }
}

# cleanup runs on exit, also from a signal's trap in the middle of any
# function: nothing may shadow pid, and one server that is gone or exits
# non-zero must not stop the others' killing (set -e holds in the trap too).
cleanup() {
	local s
	for s in "${!pid[@]}"; do
		if [[ -n ${pid[$s]} ]] && kill "${pid[$s]}" 2>/dev/null; then
			wait "${pid[$s]}" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# build_redcell: $work/redcell from BIN or the work tree; sets version.
build_redcell() {
	if [[ -n ${BIN:-} ]]; then
		cp "$BIN" "$work/redcell"
		version="$("$work/redcell" --version 2>/dev/null || echo "$BIN")"
	else
		log "building redcell"
		(cd "$repo" && go build -o "$work/redcell" .)
		version="$(cd "$repo" && git describe --always --dirty)"
	fi
}

# build_pair OLD_BINARY NEW_BINARY, or build_pair OLD_COMMIT: the two builds a
# script compares, as $work/redcell.a and $work/redcell.b (OLD_COMMIT built,
# and the work tree); sets label_a and label_b.
build_pair() {
	if [[ $# -eq 2 ]]; then
		cp "$1" "$work/redcell.a" && cp "$2" "$work/redcell.b"
		label_a=$1 label_b=$2
		return
	fi
	need go "install Go, or pass two redcell binaries"
	git -C "$repo" worktree add -q --detach "$work/src" "$1"
	(cd "$work/src" && go build -o "$work/redcell.a" .)
	git -C "$repo" worktree remove --force "$work/src"
	(cd "$repo" && go build -o "$work/redcell.b" .)
	label_a=$(git -C "$repo" rev-parse --short "$1") label_b="$(git -C "$repo" describe --always --dirty) (work tree)"
}

# start_redis SIDE ARGS...: redis-server on the side's fixed port, with
# persistence off and ARGS added.
start_redis() {
	local side=$1 p=${port[$1]}
	shift
	if redis-cli -h $HOST -p "$p" ping >/dev/null 2>&1; then
		log "port $p is already in use: stop that server first"
		exit 1
	fi
	redis-server --bind $HOST --port "$p" --save '' --appendonly no --dir "$work" \
		--logfile "$work/$side.log" "$@" &
	pid[$side]=$!
	until redis-cli -h $HOST -p "$p" ping >/dev/null 2>&1; do
		if ! kill -0 "${pid[$side]}" 2>/dev/null; then
			pid[$side]=""
			log "redis-server for $side did not start; its log ends with:"
			tail -5 "$work/$side.log" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# start_redcell_side SIDE ARGS...: $work/redcell (or the binary redcell_bin
# names, as in "redcell_bin=path start_redcell_side SIDE") on a free port with
# its own fresh --dir (persistence on, as by default) and ARGS added.
start_redcell_side() {
	local side=$1 exe=${redcell_bin:-$work/redcell}
	shift
	rm -rf "$work/data.$side" "$work/$side.log"
	"$exe" --bind $HOST --port 0 --dir "$work/data.$side" "$@" 2>"$work/$side.log" &
	pid[$side]=$!
	until grep -qs "ready to accept connections" "$work/$side.log"; do
		kill -0 "${pid[$side]}" || { cat "$work/$side.log" >&2; exit 1; }
		sleep 0.1
	done
	port[$side]=$(grep -o 'addr=[0-9.]*:[0-9]*' "$work/$side.log" | head -1 | cut -d: -f2)
}

stop_servers() {
	local s
	for s in "${sides[@]}"; do
		if ! kill "${pid[$s]}"; then
			log "a server ($s) died during the run; its log ends with:"
			tail -5 "$work/$s.log" >&2
			exit 1
		fi
	done
	for s in "${sides[@]}"; do
		wait "${pid[$s]}" 2>/dev/null || true
		pid[$s]=""
	done
}

rss() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }

# settled_rss SIDE: the side's RSS once its allocator has given free pages
# back (MEMORY PURGE: jemalloc's purge on Redis, Go's FreeOSMemory on
# redcell; an older build that does not know it is read as it is). Read
# without it, Redis's RSS just after a fill of a million leases held 16 B
# a lease of dirty pages it had not yet returned.
settled_rss() {
	redis-cli -h $HOST -p "${port[$1]}" MEMORY PURGE >/dev/null 2>&1 || true
	rss "${pid[$1]}"
}

# The commands of each load, in the order first run.
declare -A cmds
order=()
record() {
	[[ -n ${cmds[$1]:-} ]] || order+=("$1")
	cmds["$1"]="$2"
}

# ticks PID...: the CPU time (user + system, clock ticks) the PIDs have used
# together, all their threads included.
ticks() { local p; for p in "$@"; do cat "/proc/$p/stat"; done | awk '{ s += $14 + $15 } END { print s }'; }
HZ=$(getconf CLK_TCK)

# bench NAME TEST SIDE ARGS...: one redis-benchmark run against SIDE (or
# bench/pipeload's, with tool=pipeload); appends "rps p50 p99 server-us
# client-us" of the CSV row named TEST (the last row if empty) to
# $work/NAME: the last two are the server's and the load tool's CPU time per
# request (they share the machine's cores). With cpu="SIDE..." set (as in
# cpu="n0 n1" bench ...), the server CPU is those sides' together: a
# cluster's nodes, of a load sent to SIDE and spread by the client.
bench() {
	local name=$1 test=$2 p=${port[$3]} servers=() s n t0 t1 csv client run
	for s in ${cpu:-$3}; do servers+=("${pid[$s]}"); done
	shift 3
	n=$(printf '%s\n' "$@" | awk 'prev == "-n" { print; exit } { prev = $0 }')
	if [[ ${tool:-redis-benchmark} == pipeload ]]; then
		run=("$work/pipeload" -addr "$HOST:$p" "$@")
	else
		run=(redis-benchmark -h $HOST -p "$p" --csv "$@")
	fi
	record "$name" "${run[*]}"
	t0=$(ticks "${servers[@]}")
	if ! csv=$( { TIMEFORMAT='%U %S'; time "${run[@]}" 2>"$work/err.tmp"; } 2>"$work/time.tmp"); then
		log "$script: $name failed: ${cmds[$name]}"
		tail -5 "$work/err.tmp" >&2
		exit 1
	fi
	t1=$(ticks "${servers[@]}")
	client=$(tail -1 "$work/time.tmp")
	if ! printf '%s\n' "$csv" | tr -d '"\r' |
		awk -F, -v t="$test" -v s=$((t1 - t0)) -v hz="$HZ" -v n="$n" -v c="$client" '
			$1 != "test" && (t == "" || $1 == t) { row = $2 " " $5 " " $7 }
			END { if (row == "") exit 1
				split(c, u, " "); printf "%s %.3f %.3f\n", row, s / hz * 1e6 / n, (u[1] + u[2]) * 1e6 / n }' \
		>>"$work/$name"; then
		log "$script: no result for $name: ${cmds[$name]}"
		exit 1
	fi
}

# median NAME COLUMN: the median of a column of $work/NAME.
median() {
	awk -v c="$2" '{ print $c }' "$work/$1" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# pratio A B COLUMN: the median of the per-round ratios A/B. Each round runs A
# and B back to back, so a ratio within a round is what the machine's load
# drifting between rounds disturbs least. Nothing if either was not run.
pratio() {
	[[ -f $work/$1 && -f $work/$2 ]] || return 0
	paste -d' ' "$work/$1" "$work/$2" | awk -v c="$3" -v n="$(awk 'END { print NF }' "$work/$1")" \
		'{ if ($(n + c) > 0) print $c / $(n + c) }' >"$work/ratio.tmp"
	[[ -s $work/ratio.tmp ]] || { printf -- '-'; return 0; }
	printf '%.2fx' "$(median ratio.tmp 1)"
}

# row LABEL NAME COLUMN FORMAT: a table row of the medians of NAME.rc and
# NAME.lua (redcell's side and Redis's, as limiters.sh and leases.sh name
# them) and redcell's per-round ratio; lat NAME: its p50 / p99.
row() {
	printf '| %s | %s | %s | %s |\n' "$1" "$(printf "$4" "$(median "$2.rc" "$3")")" \
		"$(printf "$4" "$(median "$2.lua" "$3")")" "$(pratio "$2.rc" "$2.lua" "$3")"
}
lat() { printf '%s / %s' "$(median "$1" 2)" "$(median "$1" 3)"; }
