#!/usr/bin/env bash
# The collective network and the global interrupt (issue 14): coll_tree_ml
# on 8 ranks (2x2x2), 64 (4x4x4) and 256 (8x8x4) in CO mode, and 128 in VN
# mode on 4x4x4 (barrier only: the tree collectives need CO mode) —
# barrier (global interrupt vs p2p), allreduce of ints and doubles (tree vs
# p2p), bcast (tree vs torus3 vs p2p) in simulated microseconds and MB/s,
# with the host's wall time of each run. BENCH_TREE_MAX (default 1M) caps
# the sizes; the 256-rank run stops at 64K unless BENCH_TREE_BIG=1.
set -eu
MAX=${BENCH_TREE_MAX:-1M}
run() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  out=$(mpirun "$@" 2>/dev/null)
  t1=$(date +%s.%N)
  echo "  $label:"
  sed 's/^/    /' <<<"$out"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "    (host %.1f s wall)\n", b - a }'
}
run "8 ranks, 2x2x2, CO" -np 8 -shape 2x2x2 coll_tree_ml --max "$MAX"
run "64 ranks, 4x4x4, CO" -np 64 -shape 4x4x4 coll_tree_ml --max "$MAX"
if [ "${BENCH_TREE_BIG:-0}" = 1 ]; then big=$MAX; else big=64K; fi
run "256 ranks, 8x8x4, CO" -np 256 -shape 8x8x4 coll_tree_ml --max "$big"
run "128 ranks, 4x4x4, VN" -np 128 -mode VN -shape 4x4x4 coll_tree_ml --max 64K
