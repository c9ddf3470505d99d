#!/usr/bin/env bash
# The message-layer programs through mpirun: Table 1, reproducibility, VN,
# multi-link and bandwidth runs, bad options.
. "$(dirname "$0")/lib/checks.sh"

out=$(mpirun -np 2 -shape 2x1x1 ml_pong 2>/dev/null)
expect='one-packet 1 1600 cycles 2.286 us
eager 1 2700 cycles 3.857 us
adaptive-eager 1 3300 cycles 4.714 us
rendezvous 1 12107 cycles 17.296 us'
check "ml_pong reproduces Table 1 (1600/2700/3300/12107 cycles, nearest neighbours, 1 byte)" \
  test "$out" = "$expect"
[ "$out" = "$expect" ] || echo "$out" | sed 's/^/    /'
out2=$(mpirun -np 2 -shape 2x1x1 ml_pong 2>/dev/null)
check "ml_pong twice: identical simulated cycles" test "$out" = "$out2"

vn=$(mpirun -np 2 -mode VN -shape 1x1x1 ml_pong --protocol vn --size 4096 2>/dev/null)
check "ml_pong --protocol vn between the two cpus of a node: $vn" grep -qE '^vn 4096 [0-9]+ cycles' <<<"$vn"

far=$(mpirun -np 8 -shape 4x2x1 -mapfile XYZT ml_pong --protocol eager --size 1000 2>/dev/null)
check "ml_pong eager 1000 bytes: $far" grep -qE '^eager 1000 [0-9]+ cycles' <<<"$far"

err=$(mpirun -np 2 -shape 2x1x1 ml_pong --protocol bogus 2>&1); rc=$?
check "ml_pong --protocol bogus: one-line error, non-zero exit" \
  bash -c '[ '"$rc"' -ne 0 ] && grep -q "unknown protocol '"'"'bogus'"'"'" <<<"$0"' "$err"

ml=$(mpirun -np 27 -shape 3x3x3 ml_multilink --size 4096 2>/dev/null)
check "ml_multilink: 3 protocols x k = 1..6 neighbours" test "$(grep -cE '^(eager|adaptive-eager|rendezvous) +[1-6] ' <<<"$ml")" -eq 18
ho=$(mpirun -np 27 -shape 3x3x3 -env BGLEMU_MODE=HEATER ml_multilink --size 4096 2>/dev/null)
check "ml_multilink in heater mode runs without the coprocessor" grep -q "no coprocessor" <<<"$ho"

bw=$(mpirun -np 2 -shape 2x1x1 ml_bw --max 16384 2>/dev/null)
check "ml_bw: uni- and bidirectional rows 1 B..16 KiB" test "$(grep -cE '^[0-9]+ ' <<<"$bw")" -eq 8

finish
