#!/usr/bin/env bash
# Redraws the pictures of docs/pictures.md with the project's own commands.
# Run from the top of the clone after `make install` (the halo2d pictures
# also need MPICH: `make mpich`); writes docs/img/*.svg and the JSON reports
# next to them in $OUT (default build/pictures).
set -eu
export PATH="${PREFIX:-$PWD/install}/bin:$PATH"
img=docs/img
OUT=${OUT:-build/pictures}
mkdir -p "$OUT"
run() { echo "\$ $*"; "$@"; }

# a ping-pong: dimension-order routes, the tie on a ring of 4
run mpirun -np 2 -shape 4x4x1 -mapfile $img/pingpong.map --report "$OUT/pingpong.json" \
  --heatmap $img/pingpong.svg tp_pingpong 100 240

# the alltoall on 4x4x4: packet-scheduled (torus) against point-to-point
run mpirun -np 64 -shape 4x4x4 --report "$OUT/alltoall-torus.json" --heatmap $img/alltoall-torus.svg \
  coll_alltoall_ml --algo torus --min 4096 --max 4096
run mpirun -np 64 -shape 4x4x4 --report "$OUT/alltoall-p2p.json" --heatmap $img/alltoall-p2p.svg \
  coll_alltoall_ml --algo p2p --min 4096 --max 4096

# synthetic transpose traffic: deterministic against adaptive routing
for r in det adaptive; do
  run bgl-traffic -np 64 -shape 4x4x4 --pattern transpose --routing $r --load 0.5 --packets 300 \
    --seed 1 --report "$OUT/transpose-$r.json" --heatmap $img/transpose-$r.svg
done

# a 2-D halo exchange (8x8 grid) mapped well and naively; eager messages
# follow deterministic routes (rendezvous data is routed adaptively)
if command -v mpicc >/dev/null && [ -x "$(dirname "$(command -v mpirun)")/mpiexec.hydra" ]; then
  run mpicc -O2 -o build/halo2d docs/examples/halo2d.c
  run mpirun -np 64 -shape 4x4x4 -clock none -protocol eager -mapfile mapfiles/grid2d-8x8-on-4x4x4.map \
    --report "$OUT/halo2d-grid2d.json" --heatmap $img/halo2d-grid2d.svg \
    --trace "$OUT/halo2d-grid2d.trace.json" build/halo2d 8 8 4096 20
  run mpirun -np 64 -shape 4x4x4 -clock none -protocol eager -mapfile XYZT \
    --report "$OUT/halo2d-xyzt.json" --heatmap $img/halo2d-xyzt.svg \
    --trace "$OUT/halo2d-xyzt.trace.json" build/halo2d 8 8 4096 20
else
  echo "make-pictures: no MPICH (make mpich): halo2d pictures not redrawn" >&2
fi
