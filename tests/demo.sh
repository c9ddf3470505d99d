#!/usr/bin/env bash
# `make demo`: a small job on the emulated torus through mpirun, its report,
# and a short synthetic-traffic run. Needs PREFIX (set by the Makefile).
set -eu
PREFIX=${PREFIX:-$PWD/install}
export PATH="$PREFIX/bin:$PATH"
out="$PREFIX/demo"
mkdir -p "$out"
say() { printf '\n== %s\n' "$*"; }

say "mpirun: 8 ranks on a 2x2x2 torus; ranks 0 and 1 ping-pong 100 one-packet messages"
echo "\$ mpirun -np 8 -shape 2x2x2 --report $out/pingpong.json --heatmap $out/pingpong.svg tp_pingpong 100 64"
mpirun -np 8 -shape 2x2x2 --report "$out/pingpong.json" --heatmap "$out/pingpong.svg" tp_pingpong 100 64

say "the same ranks placed by a mapping file, virtual node mode (two ranks per node)"
maps="$PREFIX/share/bglemu/mapfiles"
[ -d "$maps" ] || maps="$PWD/mapfiles"
echo "\$ mpirun -np 16 -mode VN -shape 2x2x2 -mapfile txyz-2x2x2-vn.map tp_pingpong 100 64"
mpirun -np 16 -mode VN -shape 2x2x2 -mapfile "$maps/txyz-2x2x2-vn.map" tp_pingpong 100 64

say "what the JSON report holds ($out/pingpong.json)"
python3 - "$out/pingpong.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, res = r["machine"], r["result"]
print("machine   %s %s, %d ranks, mapping %s" % ("x".join(map(str, m["shape"])),
      "torus" if all(m["torus"]) else "mesh", m["ranks"], m["mapping"]))
print("result    %d cycles (%.3f us), %d packets, %d packet-hops" %
      (res["end_cycles"], res["end_us"], res["packets_delivered"], res["packet_hops"]))
for p in r["processors"][:2]:
    print("rank %d    <%s> %d cycles, %d packets sent, %d received" % (p["rank"],
          ",".join(map(str, p["coords"])), p["cycles"], p["pkts_injected"], p["pkts_received"]))
busy = [l for l in r["links"] if l["packets"]]
print("links     %d of %d carried traffic" % (len(busy), len(r["links"])))
PY

say "the report again from the JSON, and the links as a picture ($out/pingpong.svg, docs/pictures.md)"
echo "\$ bglemu-report $out/pingpong.json"
bglemu-report "$out/pingpong.json"

say "bgl-traffic: 64 processors, uniform random traffic at 30% load on 4x4x4"
echo "\$ bgl-traffic -np 64 -shape 4x4x4 --pattern uniform --load 0.3 --packets 200 --seed 1"
bgl-traffic -np 64 -shape 4x4x4 --pattern uniform --load 0.3 --packets 200 --seed 1

say "MPI: an MPI ping-pong compiled with mpicc, 1 byte per protocol (Table 1's MPI column)"
mkdir -p "$out/mpi"
mpicc -O2 -o "$out/mpi/pingpong" tests/mpi/pingpong.c
for p in one-packet eager adaptive-eager rendezvous; do
  echo "\$ mpirun -np 2 -shape 2x1x1 -clock none -protocol $p pingpong 1"
  mpirun -np 2 -shape 2x1x1 -clock none -protocol "$p" "$out/mpi/pingpong" 1 2>&1 | grep -E '^pingpong:|protocol'
done

say "MPI: allreduce + alltoall on 8 ranks, the full report"
mpicc -O2 -o "$out/mpi/collectives" tests/mpi/collectives.c
echo "\$ mpirun -np 8 -shape 2x2x2 -clock none collectives 3 64"
mpirun -np 8 -shape 2x2x2 -clock none "$out/mpi/collectives" 3 64 2>&1 | grep -v '^ok '

say "done. Next: README.md (usage), docs/mpi.md, docs/mpirun.md, docs/traffic.md; 'make test' runs the tests."
