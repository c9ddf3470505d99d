#!/usr/bin/env bash
# The teaching curve: accepted throughput and latency against offered load
# (uniform and transpose, det and adaptive, 4x4x4 torus, full packets).
# Simulated figures only: the table is the same on every run. Below
# saturation accepted = offered; past it, accepted flattens and latency
# (which includes source queueing) climbs. BENCH_CURVE_PACKETS per source.
set -u
K=${BENCH_CURVE_PACKETS:-400}
printf '  %-9s %-8s %6s %9s %9s %9s\n' pattern routing offered accepted lat_mean lat_p99
for p in uniform transpose; do
  for r in det adaptive; do
    for l in 0.1 0.3 0.5 0.7 0.9 1.1 1.3 1.5; do
      out=$(bgl-traffic -np 64 -shape 4x4x4 --pattern $p --routing $r --load $l --packets "$K" --seed 1) \
        || { echo "$out"; exit 1; }
      acc=$(sed -n 's/^accepted throughput \([0-9.]*\) .*/\1/p' <<<"$out")
      lat=$(sed -n 's/^latency *mean \([0-9.]*\) *p99 \([0-9]*\) .*/\1 \2/p' <<<"$out")
      printf '  %-9s %-8s %6s %9s %9s %9s\n' $p $r $l "$acc" ${lat% *} ${lat#* }
    done
  done
done
