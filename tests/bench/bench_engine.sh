#!/usr/bin/env bash
# Engine throughput in packet-hops per second (goal: >= 10 M/s on uniform
# traffic, 4x4x4 torus; see issue 2), measured with bgl-traffic --timing.
# Saturated load keeps every router busy, so this is the engine's own speed,
# not the traffic generator's; the loaded run shows events per hop at a
# BookSim-style offered load. BENCH_ENGINE_PACKETS sets packets per source.
set -u
K=${BENCH_ENGINE_PACKETS:-20000}
B=bgl-traffic
rate() { sed -n 's/^host timing .* \([0-9.]*\) M packet-hops\/s.*/\1/p'; }
for r in det adaptive; do
  out=$($B -np 64 -shape 4x4x4 --pattern uniform --load sat --routing $r --packets "$K" --timing) || { echo "$out"; exit 1; }
  grep -E '^(simulated|host timing)' <<<"$out" | sed "s/^/  uniform sat $r: /"
  echo "  engine_hops_per_s_M{routing=$r,load=sat} $(rate <<<"$out")  (goal >= 10)"
done
# Below saturation a run takes tens of milliseconds: the rate is the median
# of BENCH_ENGINE_RUNS runs (default 5), det (the row issue 9 tracks) and
# adaptive.
R=${BENCH_ENGINE_RUNS:-5}
for r in det adaptive; do
  rates=()
  for _ in $(seq "$R"); do
    out=$($B -np 64 -shape 4x4x4 --pattern uniform --load 0.5 --routing $r --packets 1000 --timing) ||
      { echo "$out"; exit 1; }
    rates+=("$(rate <<<"$out")")
  done
  grep -E '^(accepted|latency|simulated|host timing)' <<<"$out" | sed "s/^/  uniform load 0.5 $r: /"
  hops=$(sed -n 's/^simulated .* \([0-9]*\) packet-hops, \([0-9]*\) events/\1 \2/p' <<<"$out")
  [ $r = det ] && echo "  events_per_hop{load=0.5} $(awk -v h="${hops% *}" -v e="${hops#* }" 'BEGIN { printf "%.1f", e / h }')"
  med=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  echo "  engine_hops_per_s_M{routing=$r,load=0.5} $med  (median of $R: ${rates[*]})"
done
