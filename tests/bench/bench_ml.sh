#!/usr/bin/env bash
# Message layer: host time per message and per packet for each protocol
# (ml_pong through mpirun on a 2x1x1 torus), next to the simulated figures;
# then ml_bw and ml_multilink (simulated MB/s).
set -eu
N=${BENCH_ML_ITERS:-1000}
now() { date +%s.%N; }
for p in one-packet eager adaptive-eager rendezvous; do
  for size in 1 24000; do
    [ "$p" = one-packet ] && [ "$size" -gt 200 ] && continue
    t0=$(now)
    line=$(mpirun -np 2 -shape 2x1x1 ml_pong --protocol "$p" --size "$size" --iters "$N" 2>/dev/null)
    t1=$(now)
    pk=$(( (size + 239) / 240 )); [ "$pk" -lt 1 ] && pk=1
    awk -v l="$line" -v a="$t0" -v b="$t1" -v n="$N" -v pk="$pk" 'BEGIN {
      msgs = 2 * n; printf "  %-48s host %7.1f us/message, %6.2f us/packet\n", l, (b - a) * 1e6 / msgs, (b - a) * 1e6 / (msgs * pk) }'
  done
done
t0=$(now); line=$(mpirun -np 2 -mode VN -shape 1x1x1 ml_pong --protocol vn --size 4096 --iters "$N" 2>/dev/null); t1=$(now)
awk -v l="$line" -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "  %-48s host %7.1f us/message\n", l, (b - a) * 1e6 / (2 * n) }'
echo "  ml_bw (simulated, 2x1x1):"
mpirun -np 2 -shape 2x1x1 ml_bw --max "${BENCH_ML_BW_MAX:-262144}" 2>/dev/null | sed 's/^/    /'
echo "  ml_multilink --size 16384 (simulated, 3x3x3, coprocessor on):"
mpirun -np 27 -shape 3x3x3 ml_multilink --size 16384 2>/dev/null | sed 's/^/    /'
