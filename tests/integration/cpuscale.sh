#!/usr/bin/env bash
# bglemu-cpuscale: prints the cputime_scale_pct for this host (a positive
# percentage, the same number in its long and -q forms' last line), and a
# bad option is one line and exit 2. The value itself depends on the host
# (no wall-clock assertion); docs/calibration.md says where it comes from.
set -u
export PATH="${PREFIX:-$PWD/install}/bin:$PATH"
long=$(bglemu-cpuscale); rc=$?
pct=$(sed -n 's/.*mpirun -p cputime_scale_pct=\([0-9][0-9]*\)$/\1/p' <<<"$long")
if [ $rc = 0 ] && [ -n "$pct" ] && [ "$pct" -gt 0 ] && grep -q '2.14 GFlop/s' <<<"$long"; then
  echo "ok bglemu-cpuscale: this host is cputime_scale_pct=$pct against BG/L's 2.14 GFlop/s per processor"
else
  echo "$long"; echo "not ok bglemu-cpuscale (exit $rc)"
fi
q=$(bglemu-cpuscale -q); qrc=$?
if [ $qrc = 0 ] && [[ "$q" =~ ^[1-9][0-9]*$ ]]; then
  echo "ok bglemu-cpuscale -q prints the number alone ($q)"
else
  echo "not ok bglemu-cpuscale -q: '$q' (exit $qrc)"
fi
bad=$(bglemu-cpuscale --fast 2>&1); brc=$?
if [ $brc = 2 ] && [ "$bad" = "bglemu-cpuscale: unknown option '--fast' (usage: bglemu-cpuscale [-q])" ]; then
  echo "ok bglemu-cpuscale: a bad option is one line and exit 2"
else
  echo "$bad"; echo "not ok bglemu-cpuscale bad option (exit $brc)"
fi
