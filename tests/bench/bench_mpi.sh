#!/usr/bin/env bash
# MPI over the bgl netmod (needs `make mpich`): host (wall) time per message
# of an MPI ping-pong next to its simulated half round trip, host and
# simulated bandwidth of large messages, the wall time of the 64-rank
# allreduce + alltoall loop on 4x4x4, and MPI_Bcast / MPI_Alltoall with
# MPICH's algorithms against the torus collectives (simulated MB/s).
set -eu
if [ ! -x "$PREFIX/bin/mpicc" ]; then echo "  skipped: MPICH not built (make mpich)"; exit 0; fi
out=$BUILD/mpi; mkdir -p "$out"
for p in pingpong collectives; do
  [ "$out/$p" -nt tests/mpi/$p.c ] || mpicc -O2 -o "$out/$p" tests/mpi/$p.c
done
N=${BENCH_MPI_ITERS:-1000}
now() { date +%s.%N; }
echo "  MPI ping-pong, 2x1x1, -clock none ($N round trips; host time includes mpirun/hydra start-up):"
for size in 1 1000 10000; do
  t0=$(now); line=$(mpirun -np 2 -shape 2x1x1 -clock none "$out/pingpong" --iters "$N" "$size" 2>/dev/null | grep '^pingpong:'); t1=$(now)
  awk -v l="$line" -v a="$t0" -v b="$t1" -v n="$N" -v s="$size" 'BEGIN {
    split(l, f, " "); msgs = 2 * (n + 2)
    printf "    %6d B: simulated %7d cycles (%.2f us) per half round trip; host %7.1f us per message\n",
           s, f[4], f[4] / 700, (b - a) * 1e6 / msgs }'
done
for mib in 4; do
  t0=$(now); line=$(mpirun -np 2 -shape 2x1x1 -clock none "$out/pingpong" --iters 2 $((mib << 20)) 2>/dev/null | grep '^pingpong:'); t1=$(now)
  awk -v l="$line" -v a="$t0" -v b="$t1" -v m="$mib" 'BEGIN {
    split(l, f, " "); bytes = m * 1048576 * 2 * 4   # 2 iterations + 2 warm-ups, both ways
    printf "    %d MiB: simulated %s MB/s; host %.2f MB/s moved (%.1f s wall, %d packets)\n",
           m, f[10], bytes / (b - a) / 1e6, b - a, bytes / 240 }'
done
echo "  64 ranks on 4x4x4 (CO), allreduce + alltoall of 16 ints per pair, 10 iterations, -clock none:"
t0=$(now); line=$(mpirun -np 64 -shape 4x4x4 -clock none "$out/collectives" 10 16 2>&1 | grep -E '^collectives:|simulated time'); t1=$(now)
echo "$line" | sed 's/^/    /'
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "    wall: %.1f s for the job (2 host cores)\n", b - a }'
echo "  MPI_Bcast on a 4x4x2 mesh (32 ranks), simulated, MPICH's default vs deposit-bit torus1/torus3 (coll_bcast):"
t0=$(now); mpirun -np 32 -shape 4x4x2 -connect MESH -clock none coll_bcast --min 1K --max 256K --step 16 2>/dev/null | grep -v '^#' | sed 's/^/    /'; t1=$(now)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "    (%.1f s wall)\n", b - a }'
echo "  MPI_Alltoall on 4x4x4 (64 ranks), simulated, MPICH's default vs packet-scheduled torus (coll_alltoall):"
t0=$(now); mpirun -np 64 -shape 4x4x4 -clock none coll_alltoall --min 1K --max 4K 2>/dev/null | grep -v '^#' | sed 's/^/    /'; t1=$(now)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "    (%.1f s wall)\n", b - a }'
