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
# --in-memory).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
N=${N:-1000000}
LAT_N=${LAT_N:-200000}
ARGS=${ARGS:-}
HOST=127.0.0.1
repo=$(cd "$(dirname "$0")/.." && pwd)
for tool in redis-benchmark redis-cli; do
	command -v $tool >/dev/null || { echo "bench/ab.sh: $tool not found: apt-get install redis-tools" >&2; exit 1; }
done
[[ $# -ge 1 ]] || { sed -n 2,12p "$0" >&2; exit 2; }

work=$(mktemp -d)
declare -A pid port
cleanup() {
	for s in a b; do [[ -n ${pid[$s]:-} ]] && kill "${pid[$s]}" 2>/dev/null && wait "${pid[$s]}" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

if [[ $# -eq 2 ]]; then
	cp "$1" "$work/a" && cp "$2" "$work/b"
	label_a=$1 label_b=$2
else
	git -C "$repo" worktree add -q --detach "$work/src" "$1"
	(cd "$work/src" && go build -o "$work/a" .)
	git -C "$repo" worktree remove --force "$work/src"
	(cd "$repo" && go build -o "$work/b" .)
	label_a=$(git -C "$repo" rev-parse --short "$1") label_b="$(git -C "$repo" describe --always --dirty) (work tree)"
fi

start() { # start SIDE
	local s=$1
	rm -rf "$work/data.$s"
	# shellcheck disable=SC2086 # ARGS is meant to split
	"$work/$s" --bind $HOST --port 0 --dir "$work/data.$s" $ARGS 2>"$work/$s.log" &
	pid[$s]=$!
	until grep -qs "ready to accept connections" "$work/$s.log"; do
		kill -0 "${pid[$s]}" || { cat "$work/$s.log" >&2; exit 1; }
		sleep 0.1
	done
	port[$s]=$(grep -o 'addr=[0-9.]*:[0-9]*' "$work/$s.log" | head -1 | cut -d: -f2)
	[[ $(redis-cli -h $HOST -p "${port[$s]}" CL.THROTTLE ab:check 15 30 60 | tr '\n' ' ') == "0 16 15 -1 2 " ]] ||
		{ echo "bench/ab.sh: $s does not answer CL.THROTTLE as redis-cell" >&2; exit 1; }
}

# run NAME SIDE ARGS...: appends "rps p50 p99" of the last CSV row.
run() {
	local name=$1 s=$2
	shift 2
	redis-benchmark -h $HOST -p "${port[$s]}" --csv "$@" 2>/dev/null | tr -d '"\r' |
		awk -F, '$1 != "test" { row = $2 " " $5 " " $7 } END { print row }' >>"$work/$name.$s"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$2" '{ print $c }' "$work/$1" | median; }
ratio() { paste -d' ' "$work/$1.a" "$work/$1.b" | awk -v c="$2" '{ print $(3 + c) / $c }' | median; }

start a
start b
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
for r in $(seq "$ROUNDS"); do
	echo "round $r/$ROUNDS" >&2
	for s in a b; do run rand "$s" -P 16 -c 50 -r 100000 -n "$N" CL.THROTTLE key:__rand_int__ 100 10 1; done
	for s in b a; do run hot "$s" -P 16 -c 50 -n "$N" CL.THROTTLE hot 100 10 1; done
	for s in a b; do run lat "$s" -c 50 -r 100000 -n "$LAT_N" CL.THROTTLE key:__rand_int__ 100 10 1; done
done

echo
echo "A: $label_a; B: $label_b; $ROUNDS rounds alternated, medians; B/A is the median of per-round ratios."
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg). Flags: ${ARGS:-(defaults)}."
echo
echo "| load | A ops/s | B ops/s | B/A | A p50 / p99 ms | B p50 / p99 ms |"
echo "|---|---|---|---|---|---|"
for l in "rand:random keys, -P 16 -c 50 -r 100000" "hot:one hot key, -P 16 -c 50" "lat:random keys, unpipelined -c 50"; do
	n=${l%%:*}
	printf '| %s | %.0f | %.0f | %.3fx | %s / %s | %s / %s |\n' "${l#*:}" "$(col "$n.a" 1)" "$(col "$n.b" 1)" "$(ratio "$n" 1)" \
		"$(col "$n.a" 2)" "$(col "$n.a" 3)" "$(col "$n.b" 2)" "$(col "$n.b" 3)"
done
