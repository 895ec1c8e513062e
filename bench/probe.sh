#!/usr/bin/env bash
# bench/probe.sh: tail latency while persisting. A latency probe
# (redis-benchmark -c 10, unpipelined) runs while a pipelined writer churns
# millions of keys, against two redcell servers side by side: one in memory
# (--in-memory) and one persisting at the default --flush-interval (or
# ARGS_B). Rounds alternate which side goes first; medians, and the
# persisting side's p99 and max as the median of per-round ratios to the
# in-memory side's. Run by hand, never from tests; it needs go (unless BIN=
# is set), redis-cli and redis-benchmark, and talks only to 127.0.0.1.
#
#   bench/probe.sh
#   ROUNDS=5 KEYS=5000000 bench/probe.sh
#
# Each side is first filled (FILL requests of the writer's load, so that the
# rounds churn a keyspace that is there: each decision rewrites a key's
# TAT, and the persisting side's flusher writes every key changed in its
# interval). A round starts the writer, waits WARM seconds, runs the probe,
# then stops the writer; the writer's rate during the probe is read from
# INFO's total_commands_processed.
#
# Settings (environment):
#   ROUNDS=3         rounds
#   KEYS=5000000     the writer's keys (-r)
#   FILL=15000000    requests of the fill, per side (0: none)
#   PROBE_N=100000   requests of the probe a round
#   WARM=5           seconds of writing before the probe starts
#   WRITE="1000 10 3600"  the writer's CL.THROTTLE max_burst count period:
#                    10 an hour, a burst of 1000, so every decision stores
#                    and no key expires during the run
#   ARGS_A="--in-memory"  flags of side A (the reference)
#   ARGS_B=""        flags of side B (default: persisting every second)
#   BIN=path         a redcell binary instead of building the work tree
#   BIN_B=path       another binary for side B (default: the same)
#   PPROF_B=addr     serve pprof on side B (--pprof-addr), to take a trace
#                    while it runs: curl -o t.out "http://addr/debug/pprof/trace?seconds=5"
set -euo pipefail

ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-5000000}
FILL=${FILL:-15000000}
PROBE_N=${PROBE_N:-100000}
WARM=${WARM:-5}
WRITE=${WRITE:-1000 10 3600}
ARGS_A=${ARGS_A---in-memory}
ARGS_B=${ARGS_B:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
script=bench/probe.sh

declare -A port=([a]="" [b]="") pid=([a]="" [b]="")
sides=(a b)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
need redis-cli "install it with \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
need redis-benchmark "it comes with redis-cli: \`apt-get install redis-tools\` (Debian/Ubuntu) or \`brew install redis\`"
[[ -n ${BIN:-} ]] || need go "install Go, or set BIN=path to a redcell binary"

build_redcell
bin_b=$work/redcell
if [[ -n ${BIN_B:-} ]]; then
	cp "$BIN_B" "$work/redcell.b"
	bin_b=$work/redcell.b
fi
# shellcheck disable=SC2086 # the flags are meant to split
start_redcell_side a $ARGS_A
pprof=()
[[ -z ${PPROF_B:-} ]] || pprof=(--pprof-addr "$PPROF_B")
# shellcheck disable=SC2086
redcell_bin=$bin_b start_redcell_side b $ARGS_B "${pprof[@]}"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

commands() { redis-cli -h $HOST -p "${port[$1]}" INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" { print $2 }'; }
# shellcheck disable=SC2206 # WRITE is words
write=(-P 16 -c 50 -r "$KEYS")
# shellcheck disable=SC2206
write_cmd=(CL.THROTTLE churn:__rand_int__ $WRITE)
probe=(-c 10 -r 100000 -n "$PROBE_N" CL.THROTTLE probe:__rand_int__ 100 10 1)

if ((FILL > 0)); then
	for s in a b; do
		log "filling $s: redis-benchmark ${write[*]} -n $FILL ${write_cmd[*]}"
		redis-benchmark -h $HOST -p "${port[$s]}" -q "${write[@]}" -n "$FILL" "${write_cmd[@]}" >/dev/null
		log "$s: $(redis-cli -h $HOST -p "${port[$s]}" DBSIZE) keys, RSS $(($(rss "${pid[$s]}") >> 20)) MiB"
	done
fi

# round SIDE: the writer in the background, the probe once it has run WARM
# seconds; appends "p50 p99 max probe-rps writer-rps" to $work/probe.SIDE.
round() {
	local s=$1 wpid c0 c1 t0 t1 csv
	redis-benchmark -h $HOST -p "${port[$s]}" -q "${write[@]}" -n 2000000000 "${write_cmd[@]}" >/dev/null 2>&1 &
	wpid=$!
	sleep "$WARM"
	c0=$(commands "$s") t0=$(date +%s.%N)
	csv=$(redis-benchmark -h $HOST -p "${port[$s]}" --csv "${probe[@]}" | tr -d '"\r' | awk -F, '$1 != "test"')
	c1=$(commands "$s") t1=$(date +%s.%N)
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	awk -F, -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v n="$PROBE_N" \
		'{ printf "%s %s %s %s %.0f\n", $5, $7, $8, $2, (c1 - c0 - n) / (t1 - t0) }' <<<"$csv" >>"$work/probe.$s"
	log "  $s: $(tail -1 "$work/probe.$s") (p50 p99 max ms, probe ops/s, writer ops/s)"
	sleep 2 # the writer's connections closed, the flusher caught up
}

for r in $(seq "$ROUNDS"); do
	log "round $r/$ROUNDS"
	order=(a b)
	((r % 2)) || order=(b a)
	for s in "${order[@]}"; do round "$s"; done
done

echo
echo "redcell $version; A: ${ARGS_A:-(defaults)}; B: ${ARGS_B:-(defaults: persisting every 1s)}${BIN_B:+ ($BIN_B)}."
echo "$ROUNDS rounds alternated, medians; B/A is the median of per-round ratios. Keys: $(redis-cli -h $HOST -p "${port[a]}" DBSIZE) (A), $(redis-cli -h $HOST -p "${port[b]}" DBSIZE) (B)."
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
echo
echo "| probe, redis-benchmark ${probe[*]} | A | B | B/A |"
echo "|---|---|---|---|"
for c in "1:p50 ms" "2:p99 ms" "3:max ms" "4:probe ops/s" "5:writer ops/s"; do
	printf '| %s | %s | %s | %s |\n' "${c#*:}" "$(median probe.a "${c%%:*}")" "$(median probe.b "${c%%:*}")" \
		"$(pratio probe.b probe.a "${c%%:*}")"
done
echo
echo "Writer: redis-benchmark ${write[*]} ${write_cmd[*]}, started $WARM s before the probe and stopped after it."
