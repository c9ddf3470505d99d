#!/usr/bin/env bash
# The collectives' programs through mpirun: small sweeps, 3 routes beating
# 1, VN mode, a partly populated machine (fallback), determinism, bad
# options. Each case runs a few seconds; the big sweeps are in
# docs/collectives.md.
. "$(dirname "$0")/lib/checks.sh"

h=$(coll_bcast_ml --help); rc=$?
check "coll_bcast_ml --help: usage, exit 0" bash -c '[ '"$rc"' -eq 0 ] && grep -q "^usage: mpirun" <<<"$0"' "$h"
h=$(coll_alltoall_ml --help); rc=$?
check "coll_alltoall_ml --help: usage, exit 0" bash -c '[ '"$rc"' -eq 0 ] && grep -q "^usage: mpirun" <<<"$0"' "$h"

err=$(mpirun -np 2 -shape 2x1x1 coll_bcast_ml --algo bogus 2>&1); rc=$?
check "coll_bcast_ml --algo bogus: one-line error, non-zero exit" \
  bash -c '[ '"$rc"' -ne 0 ] && grep -q "unknown algorithm '"'"'bogus'"'"'" <<<"$0"' "$err"
err=$(mpirun -np 2 -shape 2x1x1 coll_alltoall_ml --order sideways 2>&1); rc=$?
check "coll_alltoall_ml --order sideways: one-line error, non-zero exit" \
  bash -c '[ '"$rc"' -ne 0 ] && grep -q "unknown order '"'"'sideways'"'"'" <<<"$0"' "$err"
err=$(mpirun -np 2 -shape 2x1x1 coll_bcast_ml --max 0 2>&1); rc=$?
check "coll_bcast_ml --max 0: error, non-zero exit" \
  bash -c '[ '"$rc"' -ne 0 ] && grep -q "max must be" <<<"$0"' "$err"

out=$(mpirun -np 8 -shape 2x2x2 -connect MESH coll_bcast_ml --max 4K 2>/dev/null); rc=$?
check "coll_bcast_ml on a 2x2x2 mesh: 3 algorithms x 7 sizes (1 B..4 KiB), data checked on every rank" \
  bash -c '[ '"$rc"' -eq 0 ] && [ "$(grep -cE "^(torus1|torus3|p2p) +[0-9]+ " <<<"$0")" -eq 21 ]' "$out"
out2=$(mpirun -np 8 -shape 2x2x2 -connect MESH coll_bcast_ml --max 4K 2>/dev/null)
check "coll_bcast_ml twice: identical simulated cycles" test "$out" = "$out2"

b=$(mpirun -np 32 -shape 4x4x2 -connect MESH coll_bcast_ml --min 64K --max 64K --algo torus1 2>/dev/null)
b3=$(mpirun -np 32 -shape 4x4x2 -connect MESH coll_bcast_ml --min 64K --max 64K --algo torus3 2>/dev/null)
l1=$(awk '/^torus1/ {print $5}' <<<"$b"); l3=$(awk '/^torus3/ {print $5}' <<<"$b3")
check "coll_bcast_ml 64 KiB on a 4x4x2 mesh: 1 route ${l1:-?} links, 3 routes ${l3:-?} links (> 1.5)" \
  awk -v a="${l1:-0}" -v b="${l3:-0}" 'BEGIN { exit !(a > 0.9 && b > 1.5) }'

vn=$(mpirun -np 16 -mode VN -shape 2x2x2 coll_bcast_ml --max 1K --root 5 2>/dev/null); rc=$?
check "coll_bcast_ml in VN mode (16 ranks, root 5 on cpu 1)" \
  bash -c '[ '"$rc"' -eq 0 ] && [ "$(grep -cE "^(torus1|torus3|p2p) " <<<"$0")" -eq 18 ]' "$vn"

part=$(mpirun -np 6 -shape 2x2x2 coll_bcast_ml --max 256 2>/dev/null); rc=$?
check "coll_bcast_ml on a partly populated machine falls back to p2p and says so" \
  bash -c '[ '"$rc"' -eq 0 ] && grep -q "fall back to p2p" <<<"$0"' "$part"

a=$(mpirun -np 8 -shape 2x2x2 coll_alltoall_ml --max 1K 2>/dev/null); rc=$?
check "coll_alltoall_ml on a 2x2x2 torus: 2 algorithms x 6 sizes (1 B..1 KiB), data checked" \
  bash -c '[ '"$rc"' -eq 0 ] && [ "$(grep -cE "^(torus|p2p) +[0-9]+ " <<<"$0")" -eq 12 ]' "$a"
av=$(mpirun -np 16 -mode VN -shape 2x2x2 coll_alltoall_ml --algo torus --min 240 --max 1000 --step 2 2>/dev/null); rc=$?
check "coll_alltoall_ml in VN mode (16 ranks), 240..1000 B per pair" \
  bash -c '[ '"$rc"' -eq 0 ] && [ "$(grep -cE "^torus +[0-9]+ " <<<"$0")" -eq 4 ]' "$av"
ar=$(mpirun -np 8 -shape 2x2x2 coll_alltoall_ml --algo torus --order random --min 4K --max 4K 2>/dev/null); rc=$?
check "coll_alltoall_ml --order random" bash -c '[ '"$rc"' -eq 0 ] && grep -qE "^torus +4096 " <<<"$0"' "$ar"

finish
