#!/usr/bin/env bash
# Throughput of CL.THROTTLE with persistence off, at the default flush
# interval, and in durable mode (--flush-interval 0), side by side: rounds
# alternate between the modes and the median of each is compared with the
# in-memory figure. Run by hand; never part of the tests.
#
#   bench/persistence.sh [rounds] [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-500000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/redcell" .
declare -A flags=(
  [in-memory]="--in-memory"
  [interval-1s]="--flush-interval 1s"
  [durable-0]="--flush-interval 0"
)
modes=(in-memory interval-1s durable-0)
port=6411
declare -A ports
for m in "${modes[@]}"; do
  ports[$m]=$port
  # shellcheck disable=SC2086
  "$work/redcell" --port "$port" --dir "$work/data-$m" ${flags[$m]} 2>"$work/$m.log" &
  pids+=($!)
  port=$((port + 1))
done
for m in "${modes[@]}"; do
  until redis-cli -p "${ports[$m]}" PING >/dev/null 2>&1; do sleep 0.1; done
done

load=(-P 16 -c 50 -r 100000 -n "$requests" --csv CL.THROTTLE key:__rand_int__ 100 10 1)
echo "load: redis-benchmark ${load[*]}"
declare -A results
for ((r = 1; r <= rounds; r++)); do
  for m in "${modes[@]}"; do
    ops=$(redis-benchmark -p "${ports[$m]}" "${load[@]}" | awk -F'","' 'NR==2 {print $2}')
    results[$m]+="$ops "
    echo "round $r $m: $ops ops/s"
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${results[in-memory]}" | median)
printf '\n%-12s %14s %8s\n' mode "median ops/s" "vs off"
for m in "${modes[@]}"; do
  med=$(echo "${results[$m]}" | median)
  printf '%-12s %14.0f %7.2fx\n' "$m" "$med" "$(echo "$med / $base" | bc -l)"
done
