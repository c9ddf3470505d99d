#!/usr/bin/env bash
# MPI multi-link throughput (needs `make mpich`): the centre of a 3x3x3 torus
# exchanges with k = 1..6 neighbours at once (mpi_multilink), per protocol
# (-protocol), with the coprocessor (CO) and without (BGLEMU_MODE=HEATER),
# 16 KiB, 64 KiB and 1 MiB messages, 32-byte-aligned buffers (offset 0) and
# malloc's (offset 16). Simulated MB/s, both directions, the centre's view;
# then, for k = 6, the busiest of the centre's links (utilization from
# --report). docs/calibration.md, "Multi-link throughput", reads them.
# MODES, PROTOS, OFFSETS, SIZES (space-separated) pick a part of the table,
# e.g. MODES=CO PROTOS=rendezvous SIZES="64K 1M" (the split receptions);
# REPORT=0 skips the k = 6 section, REPORT_OFFSETS (default 0) gives its
# buffers' offsets.
set -eu
MODES=${MODES:-CO HEATER} PROTOS=${PROTOS:-eager adaptive-eager rendezvous}
OFFSETS=${OFFSETS:-0 16} SIZES=${SIZES:-16K 64K 1M} REPORT=${REPORT:-1}
REPORT_OFFSETS=${REPORT_OFFSETS:-0}
if [ ! -x "$PREFIX/bin/mpi_multilink" ]; then echo "  skipped: MPICH not built (make mpich)"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for mode in $MODES; do
  for proto in $PROTOS; do
    for off in $OFFSETS; do
      for size in $SIZES; do
        iters=8; [ "$size" = 1M ] && iters=2
        line=$(mpirun -np 27 -shape 3x3x3 -clock none -protocol "$proto" -env BGLEMU_MODE=$mode \
          mpi_multilink --size "$size" --iters $iters --offset $off 2>/dev/null |
          awk '!/^#/ && NF == 5 { printf " %5d", $5 }')
        printf "  %-6s %-14s offset %2s %4s:%s MB/s (k = 1..6)\n" "$mode" "$proto" "$off" "$size" "$line"
      done
    done
  done
done
[ "$REPORT" = 0 ] && exit 0
echo "  k = 6, 64 KiB, offset $REPORT_OFFSETS (--report; MB/s over the whole job): where the time goes"
for roff in $REPORT_OFFSETS; do
for mode in $MODES; do
  for proto in $PROTOS; do
    mpirun -np 27 -shape 3x3x3 -clock none -protocol "$proto" -env BGLEMU_MODE=$mode \
      --report "$tmp/r.json" mpi_multilink --size 64K --iters 8 --k 6 --offset $roff >/dev/null 2>&1
    python3 - "$tmp/r.json" "$mode" "$proto" "$roff" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
end = r["result"]["end_cycles"]
out = [l for l in r["links"] if l["node"] == [1, 1, 1]]
inn = [l for l in r["links"] if l["packets"] and l["node"] != [1, 1, 1] and
       sum(abs(a - b) for a, b in zip(l["node"], [1, 1, 1])) == 1]
mo = max(l["busy_cycles"] for l in out) / end
mi = max(l["busy_cycles"] for l in inn) / end
p = {x["coords"][3]: x for x in r["processors"] if x["coords"][:3] == [1, 1, 1]}
c1 = p.get(1, {"pkts_injected": 0, "pkts_received": 0})
prm = r["params"]
# the centre's main processor: a write per packet out, a read and a dispatch per packet in
busy0 = (p[0]["pkts_injected"] * prm["pkt_write_cycles"] +
         p[0]["pkts_received"] * (prm["pkt_read_cycles"] + prm["ml_dispatch_cycles"])) / end
busy1 = c1["pkts_received"] * (prm["pkt_read_cycles"] + prm["ml_dispatch_cycles"]) / end
print("  %-6s %-14s off %2s %5.0f MB/s; centre's links out <= %4.1f%% busy, in <= %4.1f%%; per-packet work: "
      "cpu 0 %4.1f%% (%d out, %d in), cpu 1 %4.1f%% (%d in)" % (sys.argv[2], sys.argv[3], sys.argv[4],
      2 * 6 * 65536 * 8 / (end / 700e6) / 1e6, 100 * mo, 100 * mi, 100 * busy0,
      p[0]["pkts_injected"], p[0]["pkts_received"], 100 * busy1, c1["pkts_received"]))
PY
  done
done
done
