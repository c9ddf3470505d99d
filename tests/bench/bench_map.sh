#!/usr/bin/env bash
# bglemu-map's speed (docs/mapping.md, goal: a 1,024-rank graph under 10 s):
# a periodic 3-D stencil of 8x8x16 ranks on an 8x8x16 torus and on 16x8x8
# (a mismatched shape), 4 KiB to each neighbour; wall seconds, median of 3,
# with the tool's own split (Scotch, swaps). Host time: never asserted.
set -u
export PATH="${PREFIX:-$PWD/install}/bin:$PATH"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/st.txt" <<'PY'
import sys
X, Y, Z = 8, 8, 16
n = X * Y * Z
rows = []
for z in range(Z):
    for y in range(Y):
        for x in range(X):
            row = [0] * n
            for dx, dy, dz in ((1,0,0),(-1,0,0),(0,1,0),(0,-1,0),(0,0,1),(0,0,-1)):
                row[(x+dx) % X + X * ((y+dy) % Y + Y * ((z+dz) % Z))] += 4096
            rows.append(" ".join(map(str, row)))
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
PY
for shape in 8x8x16 16x8x8; do
  ts=()
  for i in 1 2 3; do
    s=$(date +%s.%N)
    bglemu-map "$tmp/st.txt" -shape $shape --mapfiles '' -o "$tmp/m.map" >"$tmp/out" 2>"$tmp/err" || { echo "bench map: bglemu-map failed: $(cat "$tmp/err")"; exit 1; }
    ts+=("$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')")
  done
  med=$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p)
  echo "map: 1024-rank 3-D stencil on $shape: $med s median of ${ts[*]} ($(sed -n 's/^bglemu-map: //p' "$tmp/err")); $(sed -n 's/^new: \(.*\) ->.*/new: \1/p' "$tmp/out")"
done
