#!/usr/bin/env bash
# The collective network and the global interrupt through mpirun with real
# processes (coll_tree_ml): barrier, allreduce and broadcast checked on
# every rank, exact cycles of the global interrupt, the tree beating p2p,
# reproducible cycles, VN mode, a partly populated machine (fallback),
# the report's collective section, bad options. A few seconds each.
. "$(dirname "$0")/lib/checks.sh"

h=$(coll_tree_ml --help); rc=$?
check "coll_tree_ml --help: usage, exit 0" bash -c '[ '"$rc"' -eq 0 ] && grep -q "^usage: mpirun" <<<"$0"' "$h"
err=$(mpirun -np 2 -shape 2x1x1 coll_tree_ml --what sideways 2>&1); rc=$?
check "coll_tree_ml --what sideways: one-line error, non-zero exit" \
  bash -c '[ '"$rc"' -ne 0 ] && grep -q "what must be" <<<"$0"' "$err"

out=$(mpirun -np 8 -shape 2x2x2 --report "$tmp/r.json" coll_tree_ml --max 4K 2>/dev/null); rc=$?
check "coll_tree_ml on 2x2x2: barrier x 2, allreduce (int, double, p2p) x 4 sizes, bcast x 3 x 4: 26 lines, checked on every rank" \
  bash -c '[ '"$rc"' -eq 0 ] && [ "$(grep -cE "^(barrier|allreduce|bcast) " <<<"$0")" -eq 26 ]' "$out"
# global interrupt on depth 3: arm 20 + 2 x 3 x 33 + 1 (visible the cycle after)
gi=$(awk '$1 == "barrier" && $2 == "gi" {print $5}' <<<"$out")
check "global-interrupt barrier on 2x2x2 takes 20 + 198 + 1 = 219 cycles (got ${gi:-?})" test "${gi:-0}" = 219
# one int packet: write 80 + 3 x (80 + 8) up + 3 x 80 down + 532 + 1 + read 204
ai=$(awk '$1 == "allreduce" && $2 == "tree" && $3 == "int" && $4 == 8 {print $5}' <<<"$out")
check "8-byte int allreduce on 2x2x2 takes 80 + 264 + 240 + 532 + 1 + 204 = 1321 cycles (got ${ai:-?})" test "${ai:-0}" = 1321
t=$(awk '$1 == "bcast" && $2 == "tree" && $4 == 512 {print $5}' <<<"$out")
p=$(awk '$1 == "bcast" && $2 == "p2p" && $4 == 512 {print $5}' <<<"$out")
check "512-byte bcast: tree ${t:-?} cycles, less than p2p ${p:-?}" awk -v a="${t:-0}" -v b="${p:-0}" 'BEGIN { exit !(a > 0 && a < b) }'
check "the JSON report has the collective section (depth 3) with its tree links" \
  bash -c 'grep -q "\"collective\": {\"depth\": 3" "$0" && grep -q "\"tree_links\"" "$0"' "$tmp/r.json"
out2=$(mpirun -np 8 -shape 2x2x2 coll_tree_ml --max 4K 2>/dev/null)
check "coll_tree_ml twice: identical simulated cycles" test "$out" = "$out2"

m=$(mpirun -np 8 -shape 2x2x2 -mapfile ZYXT coll_tree_ml --what allreduce --max 512 2>/dev/null); rc=$?
check "coll_tree_ml with ranks mapped ZYXT: the tree still serves, results checked" \
  bash -c '[ '"$rc"' -eq 0 ] && grep -qE "^allreduce +tree +double +512 " <<<"$0"' "$m"

vn=$(mpirun -np 16 -mode VN -shape 2x2x2 coll_tree_ml --max 4K 2>/dev/null); rc=$?
check "coll_tree_ml in VN mode (16 ranks: node mates combine over the scratchpad, then the tree), checked on every rank" \
  bash -c '[ '"$rc"' -eq 0 ] && grep -qE "^barrier +gi " <<<"$0" && [ "$(grep -cE "^[a-z]+ +tree " <<<"$0")" -eq 12 ]' "$vn"

part=$(mpirun -np 6 -shape 2x2x2 coll_tree_ml --max 64 2>/dev/null); rc=$?
check "coll_tree_ml on a partly populated machine: barrier on the ranks' wires, tree collectives fall back" \
  bash -c '[ '"$rc"' -eq 0 ] && grep -qE "^barrier +gi " <<<"$0" && ! grep -qE "^[a-z]+ +tree " <<<"$0"' "$part"

# The engine runs a blocked rank's tree loop (collectives/coll_tree_engine.c):
# the same simulated result as every rank waking per packet, far fewer wakes.
on=$(mpirun -np 8 -shape 2x2x2 --report "$tmp/on.json" coll_tree_ml --max 64K 2>/dev/null)
off=$(BGLEMU_PROXY=0 mpirun -np 8 -shape 2x2x2 --report "$tmp/off.json" coll_tree_ml --max 64K 2>/dev/null)
check "coll_tree_ml up to 64 KiB: the engine running blocked ranks' tree loops gives the cycles and report of ranks woken per packet" \
  bash -c '[ -n "$0" ] && [ "$0" = "$1" ] && diff <(grep -v "\"job\"" "$2") <(grep -v "\"job\"" "$3") >/dev/null' \
  "$on" "$off" "$tmp/on.json" "$tmp/off.json"
st=$(BGLEMU_PROXY_STATS=1 mpirun -np 8 -shape 2x2x2 coll_tree_ml --algo tree --what allreduce --min 64K --max 64K 2>&1 >/dev/null | grep "engine read")
rd=$(sed -E 's/.*engine read ([0-9]+) .*/\1/' <<<"$st"); wk=$(sed -E 's/.*; ([0-9]+) wakes.*/\1/' <<<"$st")
check "64 KiB int and double allreduce on 8 ranks: the engine read ${rd:-?} tree packets for blocked ranks, ${wk:-?} wakes (fewer than 1 per 20 packets)" \
  awk -v r="${rd:-0}" -v w="${wk:-0}" 'BEGIN { exit !(r >= 7000 && w * 20 < r) }'

finish
