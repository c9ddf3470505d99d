#!/usr/bin/env bash
# The deposit-bit broadcast's host cost (issue 24): coll_bcast_ml, torus1
# and torus3, 1 B .. 1 MiB, on 64 ranks in CO mode (4x4x4) and in VN mode
# (4x4x2), with the engine running blocked ranks' broadcast loops
# (collectives/coll_bcast_engine.c) and with every rank woken per packet
# (BGLEMU_PROXY=0). One row per run: wall seconds, the engine's wakes of
# ranks, the packets it read and sent for them; the simulated time must be
# the same both ways (else the bench fails). BENCH_BCAST_MAX=4M for the
# sizes up to 4 MiB (minutes without the engine's help). Host figures vary
# with the host's load; nothing is asserted about them.
set -eu
max=${BENCH_BCAST_MAX:-1M}
fail=0
row() {
  local label=$1 proxy=$2 algo=$3; shift 3
  local out t0 t1
  t0=$(date +%s.%N)
  out=$(env BGLEMU_PROXY="$proxy" BGLEMU_PROXY_STATS=1 mpirun "$@" coll_bcast_ml --algo "$algo" --max "$max" 2>&1) || {
    echo "  $label: the job failed"; fail=1; return; }
  t1=$(date +%s.%N)
  sim=$(sed -n 's/.*simulated time \([0-9]*\) cycles.*/\1/p' <<<"$out")
  wakes=$(sed -n 's/.* \([0-9]*\) wakes\(;.*\)\{0,1\}$/\1/p' <<<"$out")
  rs=$(sed -n 's/.*engine read \([0-9]*\) and sent \([0-9]*\) packets.*/read \1, sent \2/p' <<<"$out")
  awk -v l="$label" -v a="$t0" -v b="$t1" -v s="$sim" -v w="$wakes" -v r="$rs" \
    'BEGIN { printf "  %-44s %6.1f s wall, %8s wakes, engine %s; %s cycles\n", l, b - a, w, r, s }'
  last_sim=$sim
}
pair() {
  local label=$1 algo=$2; shift 2
  row "$label, engine runs the loop" 1 "$algo" "$@"
  local with=$last_sim
  row "$label, ranks woken per packet (PROXY=0)" 0 "$algo" "$@"
  if [ "$with" != "$last_sim" ]; then
    echo "  $label: simulated time differs with the engine's help ($with) and without ($last_sim)"
    fail=1
  fi
}
pair "64 ranks 4x4x4 CO, torus3" torus3 -np 64 -shape 4x4x4
pair "64 ranks 4x4x4 CO, torus1" torus1 -np 64 -shape 4x4x4
pair "64 ranks 4x4x2 VN, torus3" torus3 -np 64 -mode VN -shape 4x4x2
[ "$fail" -eq 0 ]
