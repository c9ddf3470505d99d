#!/usr/bin/env bash
# The long soak: random mixed traffic (det + adaptive + 10% high-priority,
# 1..8 chunks) with the smallest buffers the bubble rule allows (vc_chunks
# 16, fifo_chunks 8), on a 4x4x4 torus and mesh, uniform and hotspot-with-slow-consumer. Every packet
# is checked (lost, duplicated, corrupted, misrouted, det order) and the
# engine must not deadlock. `make check` runs 10^6 packets of the same mix
# (tests/unit/test_soak.c); this runs BENCH_SOAK_PACKETS in total, default
# 10^7 (about a minute at today's engine speed). The full 10^8:
#   BENCH_SOAK_PACKETS=100000000 make bench BENCH_FILTER=soak
set -u
TOTAL=${BENCH_SOAK_PACKETS:-10000000}
K=$(( (TOTAL + 255) / 256 ))   # 4 runs x 64 sources
B=bgl-traffic
small=(-p vc_chunks=16 -p fifo_chunks=8)
fail=0; pk=0
for conn in TORUS MESH; do
  for mode in uniform hotspot; do
    extra=(); [ $mode = hotspot ] && extra=(--consume 100)
    out=$($B -np 64 -shape 4x4x4 -connect $conn --pattern $mode --load sat --routing mixed \
          --chunks mixed --hp 0.1 --packets "$K" --seed 1 "${small[@]}" "${extra[@]}" --timing 2>&1)
    rc=$?
    n=$(sed -n 's/^packets  *[0-9]* generated, \([0-9]*\) delivered.*/\1/p' <<<"$out")
    pk=$((pk + ${n:-0}))
    if [ $rc -ne 0 ]; then fail=1; echo "$out" | sed 's/^/    /'; fi
    echo "  $conn $mode${extra[*]:+ ${extra[*]}}: $([ $rc -eq 0 ] && echo ok || echo FAILED)"
    grep -E '^(packets|order|simulated|host timing)' <<<"$out" | sed 's/^/    /'
  done
done
echo "  soak_packets_verified $pk (requested $TOTAL)"
exit $fail
