#!/usr/bin/env bash
# bench/callgrind.sh: instructions per operation of a Go benchmark, counted
# by valgrind's callgrind, which counts instructions, not seconds: the same
# figure on a busy host as on an idle one. Run by hand, never from tests.
#
#   bench/callgrind.sh PACKAGE BENCHMARK [OLD_COMMIT...]
#   bench/callgrind.sh ./server BenchmarkThrottleHandler 2963deb
#
# For the work tree, and for each OLD_COMMIT given, it builds PACKAGE's test
# binary, runs BENCHMARK for N1 and then N2 iterations (N1=100000,
# N2=300000 by default) under callgrind with GOMAXPROCS=1,
# GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off (valgrind 3.19 has no RDTSCP,
# which the runtime reads the cycle counter with now and then where the CPU
# has it: the run dies of SIGILL, and its total is garbage) and GOGC=off (a
# collection's work, which comes when the set-up's garbage says, not when
# the loop does, would be counted),
# and prints (total(N2) - total(N1)) / (N2 - N1):
# what one more iteration costs, start-up and set-up cancelled out. This is
# the hot path's figure a change near it states before and after
# (docs/performance.md).
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n 2,20p "$0" >&2; exit 2; }
pkg=$1 bench=$2
shift 2
N1=${N1:-100000} N2=${N2:-300000}
repo=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "valgrind not found: apt-get install valgrind" >&2; exit 1; }
work=$(mktemp -d)
trap 'git -C "$repo" worktree prune; rm -rf "$work"' EXIT

# total BINARY N: callgrind's instruction total for N iterations.
total() {
	local out=$work/cg.out
	GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOGC=off valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$1" -test.run='^$' -test.bench="^$bench\$" -test.benchtime="${2}x" -test.count=1 >/dev/null 2>&1
	callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done { gsub(",", "", $1); print $1; done = 1 }'
}

# measure LABEL DIR: builds PACKAGE's test binary in DIR and prints its figure.
measure() {
	local bin=$work/$1.test
	(cd "$2" && go test -c -o "$bin" "$pkg")
	local a b
	a=$(total "$bin" "$N1")
	b=$(total "$bin" "$N2")
	awk -v l="$1" -v a="$a" -v b="$b" -v n=$((N2 - N1)) 'BEGIN { printf "%-12s %10.1f instructions/op\n", l, (b - a) / n }'
}

for old in "$@"; do
	git -C "$repo" worktree add -q --detach "$work/src-$old" "$old"
	measure "$old" "$work/src-$old"
done
measure "$(git -C "$repo" describe --always --dirty)" "$repo"
