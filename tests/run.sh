#!/usr/bin/env bash
# Runs the unit suites (Check) and the test scripts of TEST_DIRS (default
# tests/integration; `make test` adds tests/mpi), then prints one closing
# line "N passed, N failed" over all of them. SKIP_UNIT=1 skips the unit
# suites, TESTS_FILTER=word runs only the scripts whose name has it. Every
# failed check is listed again just above that line, so the end of a long
# log (all a CI excerpt may keep) names what failed.
set -u
BUILD=${BUILD:-build}
PREFIX=${PREFIX:-$PWD/install}
export PREFIX BUILD PATH="$PREFIX/bin:$PATH"
export CK_VERBOSITY=${CK_VERBOSITY:-verbose}
passed=0; failed=0

log=$(mktemp); fails=$(mktemp); trap 'rm -f "$log" "$fails"' EXIT
[ "${SKIP_UNIT:-0}" = 1 ] || "$BUILD/unit_tests" 2>&1 | tee "$log"
summary=$(grep -E '^[0-9]+%: Checks: ' "$log" | tail -n 1)
if [ "${SKIP_UNIT:-0}" = 1 ]; then
  :
elif [ -n "$summary" ]; then
  n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
  f=$(sed -E 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1+\2/' <<<"$summary")
  f=$((f)); passed=$((passed + n - f)); failed=$((failed + f))
  grep -E ':[FE]:' "$log" | sed 's/^/unit_tests: /' >>"$fails"
else
  echo "FAIL unit_tests: no Check summary (crashed?)"; failed=$((failed + 1))
  echo "unit_tests: no Check summary (crashed?)" >>"$fails"
fi

for t in $(for d in ${TEST_DIRS:-tests/integration}; do ls "$d"/*.sh 2>/dev/null; done); do
  [ -e "$t" ] || continue
  name=$(basename "$t" .sh)
  if [ -n "${TESTS_FILTER:-}" ] && [[ "$name" != *"$TESTS_FILTER"* ]]; then continue; fi
  out=$(mktemp)
  limit=600; case $t in tests/mpi/*) limit=4800 ;; esac  # MPICH's suite is long
  if timeout $limit bash "$t" >"$out" 2>&1; then
    # a script reports its own checks as lines "ok ..." / "not ok ..."
    p=$(grep -c '^ok ' "$out"); q=$(grep -c '^not ok ' "$out")
    [ "$p" -eq 0 ] && p=1
    cat "$out"; passed=$((passed + p)); failed=$((failed + q))
    echo "PASS $name ($p checks)"
  else
    cat "$out"; q=$(grep -c '^not ok ' "$out"); [ "$q" -eq 0 ] && q=1
    p=$(grep -c '^ok ' "$out")
    passed=$((passed + p)); failed=$((failed + q))
    echo "FAIL $name"
  fi
  grep '^not ok ' "$out" | sed "s/^/$name: /" >>"$fails"
  [ "$q" -gt 0 ] && ! grep -q '^not ok ' "$out" && echo "$name: the script failed (exit or timeout) without a 'not ok' line" >>"$fails"
  rm -f "$out"
done
if [ -s "$fails" ]; then
  echo "failed:"
  head -n 40 "$fails" | cut -c1-300 | sed 's/^/  /'
  [ "$(wc -l <"$fails")" -gt 40 ] && echo "  ... and $(($(wc -l <"$fails") - 40)) more"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
