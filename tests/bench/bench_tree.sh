#!/usr/bin/env bash
# The collective network and the global interrupt (issue 14): coll_tree_ml
# on 8 ranks (2x2x2), 64 (4x4x4) and 256 (8x8x4) in CO mode and 128 in VN
# mode on 4x4x4 — barrier (global interrupt vs p2p), allreduce of ints and
# doubles (tree vs p2p), bcast (tree vs torus3 vs p2p) in simulated
# microseconds and MB/s, with the host's wall time of each run. The p2p
# baselines are slow on the host at large sizes: 8 ranks go to 1 MiB, the
# others to 256 KiB (64 ranks) and 4 KiB (256 CO, 128 VN) unless
# BENCH_TREE_BIG=1 (1 MiB everywhere: tens of minutes); then the hardware
# alone to 4 MiB (64 ranks) and 1 MiB (256 ranks); the host cost of a 1 MiB
# allreduce (CO) and a 256 KiB one (VN) with and without the engine running
# blocked ranks' tree loops (minutes without). Then the MPI level
# (coll_reduce) when MPICH is built.
set -eu
big=${BENCH_TREE_BIG:-0}
lim() { if [ "$big" = 1 ]; then echo 1M; else echo "$1"; fi; }
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
run "8 ranks, 2x2x2, CO" -np 8 -shape 2x2x2 coll_tree_ml --max 1M
run "64 ranks, 4x4x4, CO" -np 64 -shape 4x4x4 coll_tree_ml --max "$(lim 256K)"
run "256 ranks, 8x8x4, CO" -np 256 -shape 8x8x4 coll_tree_ml --max "$(lim 4K)"
run "128 ranks, 4x4x4, VN" -np 128 -mode VN -shape 4x4x4 coll_tree_ml --max "$(lim 4K)"
# The hardware alone is cheap on the host (the engine runs blocked ranks'
# tree loops): the large sizes without the p2p baselines. Broadcast to
# 4 MiB, tree against the torus's three routes (the crossover, if any);
# allreduce of 1 MiB on 256 ranks.
run "64 ranks, 4x4x4, CO, hardware only (tree, gi, torus3)" -np 64 -shape 4x4x4 coll_tree_ml --algo hw --min 512K --max 4M --step 2
run "256 ranks, 8x8x4, CO, tree only" -np 256 -shape 8x8x4 coll_tree_ml --algo tree --min 1M --max 1M
# Host cost of a long tree collective on 64 ranks, the engine running
# blocked ranks' tree loops (collectives/coll_tree_engine.c, coll_tree_vn.c)
# against every rank woken per packet (BGLEMU_PROXY=0, minutes): the same
# simulated cycles, wall time and context switches of mpirun and its ranks.
hostcost() {
  local label=$1 proxy=$2 size=$3; shift 3
  local t
  t=$(mktemp)
  env BGLEMU_PROXY="$proxy" /usr/bin/time -f "%e %w %c" -o "$t" \
    mpirun "$@" coll_tree_ml --what allreduce --algo tree --min "$size" --max "$size" 2>/dev/null |
    awk '$1 == "allreduce" { s = s sprintf("%s %s, ", $3, $5) } END { printf "    cycles %s", s }'
  read -r wall vcs ics <"$t"; rm -f "$t"
  echo " | $label: ${wall} s wall, $vcs voluntary + $ics involuntary context switches"
}
if [ -x /usr/bin/time ]; then
  echo "  host cost, 1 MiB allreduce (int then double), 64 ranks, 4x4x4, CO:"
  hostcost "engine runs the tree loop" 1 1M -np 64 -shape 4x4x4
  hostcost "ranks woken per packet (BGLEMU_PROXY=0)" 0 1M -np 64 -shape 4x4x4
  # VN mode: the node mates over the scratchpad, then the leader on the
  # tree (collectives/coll_tree_vn.c), every half a wake without the engine
  echo "  host cost, 256 KiB allreduce (int then double), 64 ranks, 4x4x2, VN:"
  hostcost "engine runs the VN pass" 1 256K -np 64 -mode VN -shape 4x4x2
  hostcost "ranks woken per half (BGLEMU_PROXY=0)" 0 256K -np 64 -mode VN -shape 4x4x2
fi
# The same at the MPI level (MPI_Barrier gi vs mpich, MPI_Allreduce tree vs
# mpich, MPI_Bcast tree vs torus3 vs mpich), when MPICH is built.
if [ -x "$PREFIX/bin/mpicc" ] && command -v coll_reduce >/dev/null; then
  run "MPI, 8 ranks, 2x2x2, CO" -np 8 -shape 2x2x2 -clock none coll_reduce --max 64K
  run "MPI, 64 ranks, 4x4x4, CO" -np 64 -shape 4x4x4 -clock none coll_reduce --max 8K
  run "MPI, 128 ranks, 4x4x4, VN" -np 128 -mode VN -shape 4x4x4 -clock none coll_reduce --max 8K
  run "MPI, 256 ranks, 8x8x4, CO" -np 256 -shape 8x8x4 -clock none coll_reduce --max 512
else
  echo "  MPI level skipped: MPICH not built (make mpich)"
fi
