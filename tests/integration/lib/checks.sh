# What the integration scripts share; each sources it first. The installed
# programs on PATH (BIN), a scratch directory removed at exit (tmp), and
# the lines tests/run.sh counts: "ok WHAT" and "not ok WHAT". A script ends
# with `finish`, its status: 0 when no check failed.
set -u
BIN=${PREFIX:-$PWD/install}/bin
export PATH="$BIN:$PATH"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fails=0
ok()  { echo "ok $*"; pass=$((pass + 1)); }
bad() { echo "not ok $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { : "$pass checks passed"; [ "$fails" -eq 0 ]; }

# needs PROGRAM...: each is installed, or the script ends here, one check failed.
needs() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null || { echo "not ok $p not installed in $BIN"; exit 1; }
  done
}

# leftovers PID: the shared-memory objects and rank processes mpirun PID left.
leftovers() {
  ls /dev/shm 2>/dev/null | grep "^bglemu\.$(id -u)\.$1\." || true
  pgrep -P "$1" 2>/dev/null || true
}

# one_line WHAT WANT-EXIT WANT-SUBSTRING COMMAND...: the command fails with
# that exit status and says so in one line holding the substring.
one_line() {
  local what=$1 want=$2 sub=$3; shift 3
  "$@" >"$tmp/o" 2>&1; local rc=$?
  local lines; lines=$(grep -c . "$tmp/o")
  if [ $rc -eq "$want" ] && [ "$lines" -eq 1 ] && grep -qF -- "$sub" "$tmp/o"; then
    ok "$what: exit $rc, one line: $(cat "$tmp/o")"
  else
    bad "$what: exit $rc (want $want), $lines lines, want '$sub': $(cat "$tmp/o")"
  fi
}
