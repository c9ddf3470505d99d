#!/usr/bin/env bash
# make bench: runs every tests/bench/bench_*.sh in name order. Each bench is
# one section: it prints a "== name" header, its figures (wall-clock figures
# are host timing and vary run to run; simulated ones do not), and exits
# non-zero only if the run itself failed (a wrong result), never for being
# slow: performance goals are reported, not enforced.
#
# Add a bench: drop tests/bench/bench_NAME.sh; it gets BUILD, PREFIX and
# PATH=$PREFIX/bin:$PATH. BENCH_FILTER=NAME runs only matching benches.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PREFIX=${PREFIX:-$PWD/install}
export BUILD PREFIX PATH="$PREFIX/bin:$PATH"
failed=0; ran=0
echo "host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
for b in tests/bench/bench_*.sh; do
  [ -e "$b" ] || continue
  name=$(basename "$b" .sh); name=${name#bench_}
  if [ -n "${BENCH_FILTER:-}" ] && [[ "$name" != *"$BENCH_FILTER"* ]]; then continue; fi
  echo; echo "== $name"
  start=$(date +%s.%N)
  if bash "$b"; then st=ok; else st=FAILED; failed=$((failed + 1)); fi
  ran=$((ran + 1))
  awk -v n="$name" -v s="$st" -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "-- %s: %s in %.1f s wall\n", n, s, b - a }'
done
echo; echo "$ran benches, $failed failed"
[ "$failed" -eq 0 ]
