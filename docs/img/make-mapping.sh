#!/usr/bin/env bash
# The runs of docs/mapping.md: for each program, run it with XYZT and
# --report, map it (bglemu-map), run it again with the new mapping, every
# order and every shipped mapping file that fits, and print the simulated
# cycles; the pictures (traffic matrix, heatmaps before and after) go to
# docs/img/map-*.svg, the reports and maps to build/mapping/.
#   docs/img/make-mapping.sh [NAME...]    (halo2d halo3d alltoall pairs; default all)
# Run from the top of the clone after make (MPI programs need make mpich).
set -u
PREFIX=${PREFIX:-$PWD/install}
BUILD=${BUILD:-build}
export PATH="$PREFIX/bin:$PATH"
out=$BUILD/mapping
mkdir -p "$out" "$BUILD/mpi"
for p in commpattern halo; do
  mpicc -O2 -Wall -Wextra -Werror -o "$BUILD/mpi/$p" "tests/mpi/$p.c" || exit 1
done
mpicc -O2 -o "$BUILD/mpi/halo2d" docs/examples/halo2d.c || exit 1

# NAME MPIRUN-OPTIONS -- PROGRAM ARGS
cycles() { sed -n 's/^mpirun: simulated time \([0-9]*\) cycles.*/\1/p' "$1"; }
study() {
  local name=$1; shift
  local opts=() prog=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
  prog=("$@")
  mpirun "${opts[@]}" -mapfile XYZT --report "$out/$name.json" --heatmap "docs/img/map-$name-xyzt.svg" \
    "${prog[@]}" >"$out/$name.out" 2>"$out/$name.err" </dev/null || { echo "$name: XYZT run failed"; return 1; }
  bglemu-report "$out/$name.json" --matrix "docs/img/map-$name-matrix.svg" >/dev/null
  /usr/bin/time -f '%e s' -o "$out/$name.time" bglemu-map "$out/$name.json" -o "$out/$name.map" >"$out/$name.bglemu-map" 2>/dev/null ||
    { echo "$name: bglemu-map failed"; return 1; }
  echo "== $name: ${opts[*]} ${prog[*]}"
  cat "$out/$name.bglemu-map"
  local maps=() m
  while read -r m; do maps+=("$m"); done < <(sed -n 's/^order \([XYZT]*\)  *[0-9].*/\1/p; s/^file \([^ ]*\) .*/mapfiles\/\1/p' "$out/$name.bglemu-map")
  maps+=("$out/$name.map")
  for m in "${maps[@]}"; do
    local tag=$(basename "$m" .map)
    local heat=()
    [ "$m" = "$out/$name.map" ] && heat=(--heatmap "docs/img/map-$name-new.svg")
    mpirun "${opts[@]}" -mapfile "$m" "${heat[@]}" "${prog[@]}" >/dev/null 2>"$out/$name-$tag.err" </dev/null ||
      { echo "$name: run with $m failed"; continue; }
    printf '  %-40s %12s cycles\n' "$m" "$(cycles "$out/$name-$tag.err")"
  done
}

want=${*:-halo2d halo3d alltoall pairs}
for w in $want; do
  case $w in
    halo2d) study halo2d -np 64 -shape 4x4x4 -clock none -protocol eager -- "$BUILD/mpi/halo2d" 8 8 4096 20 ;;
    halo3d) study halo3d -np 64 -shape 8x4x2 -clock none -protocol eager -- "$BUILD/mpi/halo" --iters 10 512 ;;
    alltoall) study alltoall -np 64 -shape 4x4x4 -clock none -- "$BUILD/mpi/commpattern" alltoall 1K 5 ;;
    pairs) study pairs -np 64 -shape 4x4x4 -clock none -protocol eager -- "$BUILD/mpi/commpattern" pairs 16K 10 ;;
    *) echo "unknown study '$w'"; exit 2 ;;
  esac
done
