#!/bin/bash
# Every budget's bench on this checkout, one after another (issue 28 item 5; README, Performance):
#   bench/every-budget.sh [output dir]   (default: a new temp dir)
# Each bench's output goes to <dir>/<name>.txt; <dir>/log says when each ran and the load average then.
# Run it on a quiet machine and nothing else meanwhile: the benches share the two cores with nothing.
set -u
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d -t netsot-budgets-XXXXXX)}
mkdir -p "$out"
npm run build >/dev/null && npx tsc -p bench/tsconfig.json >/dev/null || exit 1
run() { # name, then env assignments and the scenario
  local name=$1
  shift
  echo "=== $name start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/log"
  env "$@" >"$out/$name.txt" 2>&1
  echo "=== $name exit $? end $(date +%T)" >>"$out/log"
}
B="node dist-bench/bench/run.js"
run p1 BENCH_CLIENT=wrk BENCH_ROUNDS=3 $B get-device
run p1-info BENCH_LOG_LEVEL=info BENCH_CLIENT=wrk BENCH_ROUNDS=3 $B get-device
run access-log BENCH_OBS=log BENCH_CLIENT=wrk BENCH_SECONDS=8 BENCH_ROUNDS=6 $B obs-cost
for i in 1 2 3 4 5; do run "p2-$i" BENCH_CLIENT=wrk $B alloc; done
run webhooks BENCH_SECONDS=8 BENCH_ROUNDS=4 $B webhooks
run p10 $B feed
run p9 BENCH_ROUNDS=3 BENCH_NETWORKS=20000 $B pg
run hol $B hol
run hostile $B hostile
run p6 BENCH_ROUNDS=3 $B bulk-10k
run p8 BENCH_ROUNDS=4 $B rights
run metrics BENCH_ROUNDS=3 $B obs-cost
run p3 BENCH_FILLS=0.99 BENCH_NAIVE_REPS=0 $B alloc-1m
run p4 $B setquery-1m
run p7 BENCH_KEEP_DATA=1 $B list-1m
run p5 BENCH_STORES=lmdb BENCH_RESTARTS=3 $B restart-1m
run standby BENCH_ROUNDS=2 $B standby
run pool $B pool
echo "=== all done $(date +%T); outputs in $out" >>"$out/log"
echo "$out"
