#!/usr/bin/env bash
# bglemu-cpuscale: prints the cputime_scale_pct for this host (a positive
# percentage, the same number in its long and -q forms' last line), and a
# bad option is one line and exit 2. The value itself depends on the host
# (no wall-clock assertion); docs/calibration.md says where it comes from.
. "$(dirname "$0")/lib/checks.sh"
long=$(bglemu-cpuscale); rc=$?
pct=$(sed -n 's/.*mpirun -p cputime_scale_pct=\([0-9][0-9]*\)$/\1/p' <<<"$long")
if [ $rc = 0 ] && [ -n "$pct" ] && [ "$pct" -gt 0 ] && grep -q '2.14 GFlop/s' <<<"$long"; then
  ok "bglemu-cpuscale: this host is cputime_scale_pct=$pct against BG/L's 2.14 GFlop/s per processor"
else
  echo "$long"; bad "bglemu-cpuscale (exit $rc)"
fi
q=$(bglemu-cpuscale -q); qrc=$?
if [ $qrc = 0 ] && [[ "$q" =~ ^[1-9][0-9]*$ ]]; then
  ok "bglemu-cpuscale -q prints the number alone ($q)"
else
  bad "bglemu-cpuscale -q: '$q' (exit $qrc)"
fi
out=$(bglemu-cpuscale --fast 2>&1); brc=$?
if [ $brc = 2 ] && [ "$out" = "bglemu-cpuscale: unknown option '--fast' (usage: bglemu-cpuscale [-q])" ]; then
  ok "bglemu-cpuscale: a bad option is one line and exit 2"
else
  echo "$out"; bad "bglemu-cpuscale bad option (exit $brc)"
fi
finish
