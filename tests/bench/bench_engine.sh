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
out=$($B -np 64 -shape 4x4x4 --pattern uniform --load 0.5 --packets 1000 --timing) || { echo "$out"; exit 1; }
grep -E '^(accepted|latency|simulated|host timing)' <<<"$out" | sed "s/^/  uniform load 0.5 det: /"
hops=$(sed -n 's/^simulated .* \([0-9]*\) packet-hops, \([0-9]*\) events/\1 \2/p' <<<"$out")
echo "  events_per_hop{load=0.5} $(awk -v h="${hops% *}" -v e="${hops#* }" 'BEGIN { printf "%.1f", e / h }')"
echo "  engine_hops_per_s_M{routing=det,load=0.5} $(rate <<<"$out")"
