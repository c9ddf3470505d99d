#!/usr/bin/env bash
# Runs MPICH's own test suite (test/mpi of the MPICH source bglemu builds)
# through bglemu's mpirun: directories pt2pt datatype coll comm group attr init
# topo, each test with runtests' np, output check ("No Errors") and timeout.
# See docs/mpich-tests.md.
set -u -o pipefail

usage() {
  cat <<'EOF'
usage: tests/mpi/mpich_suite.sh [options] [DIR|DIR/TEST ...]
Runs MPICH's test suite (test/mpi of the MPICH source) through bglemu's
mpirun (-clock none). Default directories (MPICH_SUITE_DIRS): pt2pt
datatype comm group attr init topo plus coll's MPI_Bcast, MPI_Alltoall and
MPI_Alltoallv tests (bcasttest bcastzerotype alltoall1 alltoallv
alltoallv0), the set `make test` runs; all of
coll (over an hour of wall time on 2 cores) only when named or with --all.
An argument DIR/TEST runs only that test's lines of DIR's testlist.
Prints one line per test ("ok DIR/TEST np=N" or "not ok DIR/TEST np=N:
reason"), honours tests/mpi/mpich-expected-failures.txt, and ends with
"N passed, N failed" and the pass percentage. Exit status 1 on any unexpected
failure (or a build/configure error), 0 otherwise.
Options:
  --prefix DIR        installed MPICH + bglemu (default: the clone's install/)
  --src DIR           MPICH source (default: $CACHE/src/mpich-<version>)
  --multiplier X      MPITEST_TIMEOUT_MULTIPLIER (default 3: runtests'
                      180 s per test becomes 540 s; also mpirun --timeout)
  --expected FILE     expected-failures file (default
                      tests/mpi/mpich-expected-failures.txt)
  --results DIR       where TAP files and per-test logs go (default
                      <tree>/bglemu-results)
  --build-only        configure and build the tests, run nothing
  --no-snapshot       run against PREFIX itself instead of a copy of it
                      taken at the start (see below)
  --run-all           also run the expected failures marked "[not run]"
  --all               all eight directories (coll too)
  -v, --verbose       a progress line on stderr as each test's job ends
  --help              this text
Environment: BGLEMU_CACHE (default /var/cache/bglemu, $HOME/.cache/bglemu if
not writable), MPITEST_TIMEOUT_MULTIPLIER, MPICH_NICE (default 19).
PREFIX is copied (bin, lib, share: ~35 MB) to <tree>/prefix-snapshot once
the build lock of make mpich is free, and every test runs against that copy
(LD_LIBRARY_PATH), so a make/make mpich in the clone during the run cannot
mix two builds. The configured and built test tree is cached in
$CACHE/testsuite-<version>-<key> (key: MPICH version, PREFIX, configure
flags); a rerun only rebuilds what changed.
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
PREFIX=${PREFIX:-$repo/install}
SRC=""
MULT=${MPITEST_TIMEOUT_MULTIPLIER:-3}
EXPECTED=$here/mpich-expected-failures.txt
RESULTS=""
BUILD_ONLY=0
SNAPSHOT=1
RUN_ALL=0
VERBOSE=0
NICE=${MPICH_NICE:-19}
# coll alone takes over an hour of wall time on 2 cores: not in the default
# run (`make test`); name it (or use --all) to run it.
# Of coll, the default runs the tests of MPI_Bcast, MPI_Alltoall and
# MPI_Alltoallv, the collectives the netmod routes to the torus algorithms.
COLL_TORUS="coll/bcasttest coll/bcastzerotype coll/alltoall1 coll/alltoallv coll/alltoallv0"
DEFAULT_DIRS=${MPICH_SUITE_DIRS:-"pt2pt datatype comm group attr init topo $COLL_TORUS"}
sel=()

die() { echo "mpich_suite: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --help|-h) usage; exit 0 ;;
    --prefix) PREFIX=${2:?}; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    --src) SRC=${2:?}; shift 2 ;;
    --src=*) SRC=${1#*=}; shift ;;
    --multiplier) MULT=${2:?}; shift 2 ;;
    --multiplier=*) MULT=${1#*=}; shift ;;
    --expected) EXPECTED=${2:?}; shift 2 ;;
    --expected=*) EXPECTED=${1#*=}; shift ;;
    --results) RESULTS=${2:?}; shift 2 ;;
    --results=*) RESULTS=${1#*=}; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --no-snapshot) SNAPSHOT=0; shift ;;
    --run-all) RUN_ALL=1; shift ;;
    --all) DEFAULT_DIRS="pt2pt datatype coll comm group attr init topo"; shift ;;
    -v|--verbose) VERBOSE=1; shift ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) sel+=("$1"); shift ;;
  esac
done

PREFIX=$(cd "$PREFIX" 2>/dev/null && pwd) || die "no PREFIX directory"
for f in mpicc mpirun mpichversion; do
  [ -x "$PREFIX/bin/$f" ] || die "$PREFIX/bin/$f missing (make mpich first)"
done
[[ $MULT =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--multiplier wants a number"
VER=$("$PREFIX/bin/mpichversion" | sed -n 's/^MPICH Version:[[:space:]]*//p')
[ -n "$VER" ] || die "cannot read the MPICH version from $PREFIX/bin/mpichversion"

CACHE=${BGLEMU_CACHE:-/var/cache/bglemu}
if ! { mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ]; }; then
  CACHE=$HOME/.cache/bglemu; mkdir -p "$CACHE" || die "cannot create $CACHE"
fi
CACHE=$(cd "$CACHE" && pwd)
case "$CACHE/" in "$repo"/*) die "cache $CACHE is inside the clone" ;; esac
[ -n "$SRC" ] || SRC=$CACHE/src/mpich-$VER
[ -f "$SRC/test/mpi/runtests.in" ] || die "no MPICH test suite in $SRC/test/mpi (make mpich fetches the source)"

# What the test suite is configured with. Only C tests of the eight
# directories run: no Fortran/C++/F08, no spawn, RMA, partitioned, I/O, fault
# tolerance, perf or large-memory tests (their directories are not run).
CONF_FLAGS=(--with-mpi="$PREFIX" --enable-fortran=no --disable-cxx
  --disable-spawn --disable-rma --disable-part --disable-romio
  --disable-ft-tests --disable-perftest --disable-checkfaults
  --disable-checkpointing --disable-large-tests
  --disable-dependency-tracking
  MPICC="$PREFIX/bin/mpicc" CC=gcc CFLAGS=-O1)
key=$(printf '%s\n' bglemu-mpich-suite-1 "$VER" "$PREFIX" "${CONF_FLAGS[@]}" |
  sha1sum | cut -c1-12)
TREE=$CACHE/testsuite-$VER-$key
ST=$TREE/.bglemu
[ -n "$RESULTS" ] || RESULTS=$TREE/bglemu-results

exec 9>"$TREE.lock" || die "cannot open $TREE.lock"
flock -n 9 || { echo "mpich_suite: waiting for another run on $TREE" >&2; flock 9; }

t_start=$(date +%s)
step() { echo "mpich_suite: $*" >&2; }
tail_log() { echo "--- tail of $1" >&2; tail -n 25 "$1" >&2; }

# 1. copy test/mpi (once per tree; the source is pristine and keyed by version)
if [ ! -f "$ST/copied" ]; then
  step "copying $SRC/test/mpi to $TREE"
  rm -rf "$TREE"; mkdir -p "$TREE"
  cp -a "$SRC/test/mpi/." "$TREE/" || die "copy failed"
  mkdir -p "$ST"; echo "$SRC" >"$ST/copied"
fi

# 2. configure, again when the flags or the installed MPICH's identity change
conf_hash=$( { printf '%s\n' "${CONF_FLAGS[@]}"; "$PREFIX/bin/mpichversion";
  "$PREFIX/bin/mpicc" -show; } | sha1sum | cut -c1-40)
if [ "$(cat "$ST/configure" 2>/dev/null)" != "$conf_hash" ]; then
  step "configuring the test suite (a few minutes; log $ST/configure.log)"
  t0=$(date +%s)
  ( cd "$TREE" && nice -n "$NICE" ./configure "${CONF_FLAGS[@]}" ) >"$ST/configure.log" 2>&1 \
    || { tail_log "$ST/configure.log"; die "configure failed"; }
  echo "$conf_hash" >"$ST/configure"
  echo "configure $(( $(date +%s) - t0 )) s $(date -u +%FT%TZ)" >>"$ST/timings"
fi

# 3. the directories and tests selected
dirs=(); declare -A only=()
[ ${#sel[@]} -gt 0 ] || read -r -a sel <<<"$DEFAULT_DIRS"
for s in "${sel[@]}"; do
  d=${s%%/*}; [ -d "$TREE/$d" ] || die "no test directory $d"
  [[ " ${dirs[*]} " == *" $d "* ]] || dirs+=("$d")
  if [[ $s == */* ]]; then only[$d]+=" ${s#*/}"; fi
done

# 4. build: the MTest support library, dtpools, then each directory
#    (make -k: one test that does not compile is reported, not fatal)
t0=$(date +%s)
step "building tests in ${dirs[*]} (log $ST/make.log)"
: >"$ST/make.log"
for d in util dtpools; do
  ( cd "$TREE/$d" && nice -n "$NICE" make -j2 ) >>"$ST/make.log" 2>&1 \
    || { tail_log "$ST/make.log"; die "building $d failed"; }
done
for d in "${dirs[@]}"; do
  ( cd "$TREE/$d" && nice -n "$NICE" make -k -j2 ) >>"$ST/make.log" 2>&1 || true
done
echo "make ${dirs[*]} $(( $(date +%s) - t0 )) s $(date -u +%FT%TZ)" >>"$ST/timings"
[ "$BUILD_ONLY" = 1 ] && { step "built in $TREE"; exit 0; }

# make mpich (adi3-device/mpich/build-mpich.sh) may reinstall PREFIX while
# the suite runs (during its install, PREFIX/bin/mpirun is hydra's symlink
# and libmpi is being replaced). Every test first waits for such a build: it
# takes the build tree's lock shared for a moment (the build holds it
# exclusively), then checks that mpirun is bglemu's (a regular file).
BUILD_LOCK=""
for t in "$CACHE"/mpich-"$VER"-*/ "$(cd "$SRC/../.." && pwd)"/mpich-"$VER"-*/; do
  if [ "$(cat "$t.bglemu/prefix" 2>/dev/null)" = "$PREFIX" ] && [ -e "${t%/}.lock" ]; then
    BUILD_LOCK=${t%/}.lock
  fi
done
fingerprint() {
  stat -c '%n %s %Y' "$PREFIX/bin/mpirun" "$PREFIX"/lib/libmpi.so.* "$PREFIX"/lib/libbglemu-wtime.so 2>/dev/null
}

wait_for_build() {
  local i
  for i in $(seq 240); do
    if [ -n "$BUILD_LOCK" ]; then flock -s -w 1200 "$BUILD_LOCK" true 2>/dev/null; fi
    [ -f "$PREFIX/bin/mpirun" ] && [ ! -L "$PREFIX/bin/mpirun" ] && return 0
    sleep 5
  done
  die "$PREFIX/bin/mpirun is not bglemu's mpirun (make mpich unfinished?)"
}
RUN_PREFIX=$PREFIX
if [ "$SNAPSHOT" = 1 ]; then
  wait_for_build
  RUN_PREFIX=$TREE/prefix-snapshot
  rm -rf "$RUN_PREFIX"; mkdir -p "$RUN_PREFIX"
  cp -a "$PREFIX/bin" "$PREFIX/lib" "$RUN_PREFIX/" || die "cannot copy $PREFIX"
  [ -d "$PREFIX/share" ] && cp -a "$PREFIX/share" "$RUN_PREFIX/"
  step "testing a copy of $PREFIX taken at $(date -u +%TZ): $RUN_PREFIX"
  export LD_LIBRARY_PATH=$RUN_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# 5. the mpiexec runtests calls: "WRAP -n N [mpiexecargs] ./prog args".
#    mpirun accepts -n; the wrapper adds -clock none and the timeout, keeps
#    the whole output as a log, and drops mpirun's own report lines
#    ("mpirun: ...", stderr) from what runtests sees when the job succeeded
#    (runtests takes any line but "No Errors" as a failure).
rm -rf "$RESULTS"; mkdir -p "$RESULTS/logs"
WRAP=$ST/mpiexec-bglemu
cat >"$WRAP" <<EOF
#!/usr/bin/env bash
# generated by tests/mpi/mpich_suite.sh
set -u
trap '' PIPE    # runtests' TestStatus stops reading after the first line
np=1
while [ \$# -gt 0 ]; do
  case \$1 in -n|-np) np=\$2; shift 2 ;; *) break ;; esac
done
to=\${MPIEXEC_TIMEOUT:-360}; to=\${to%%.*}
# without a snapshot: wait for a make mpich in progress (it holds its
# tree's lock), up to 20 min
for i in \$(seq 240); do
  [ "$SNAPSHOT" = 1 ] && break
  if [ -n "$BUILD_LOCK" ]; then flock -s -w 1200 "$BUILD_LOCK" true 2>/dev/null; fi
  [ -f "$PREFIX/bin/mpirun" ] && [ ! -L "$PREFIX/bin/mpirun" ] && break
  sleep 5
done
dir=\${PWD#$TREE/}; prog=\$(basename "\${1:-x}")
mkdir -p "$RESULTS/logs/\$dir"
k=1; while [ -e "$RESULTS/logs/\$dir/\$prog.np\$np.\$k.log" ]; do k=\$((k+1)); done
log="$RESULTS/logs/\$dir/\$prog.np\$np.\$k.log"
{ echo "#bglemu cd \$PWD; mpirun -np \$np -clock none --progress 0 --timeout \$((to+30)) \$*"
  env | grep -E '^MPIR_CVAR|^MPITEST' | sed 's/^/#bglemu env /'; } >"\$log"
t0=\$(date +%s.%N)
"$RUN_PREFIX/bin/mpirun" -np "\$np" -clock none --progress 0 --timeout \$((to+30)) "\$@" >>"\$log" 2>&1
rc=\$?
secs=\$(awk -v a="\$t0" -v b="\$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "#bglemu exit \$rc after \$secs s" >>"\$log"
{ if [ \$rc -eq 0 ]; then
  grep -v -e '^mpirun: ' -e '^#bglemu ' "\$log"
else
  grep -v -e '^#bglemu ' "\$log"
  case \$rc in
    3) why="deadlock detected by the emulator" ;;
    124) why="wall-clock timeout (\$((to+30)) s)" ;;
    *) why="" ;;
  esac
  echo "mpirun: exit status \$rc\${why:+: \$why}"
fi; } 2>/dev/null
if [ -n "\${BGLEMU_SUITE_VERBOSE:-}" ]; then
  { printf '  .. %s/%s np=%s exit %s, %s s\n' "\$dir" "\$prog" "\$np" "\$rc" "\$secs" >&3; } 2>/dev/null
fi
exit \$rc
EOF
chmod +x "$WRAP"

declare -A xf=()
if [ -f "$EXPECTED" ]; then
  while read -r t n reason; do
    [[ -z $t || $t == \#* ]] && continue
    xf["$t $n"]=$reason
  done <"$EXPECTED"
fi
declare -A xf_seen_pass=()

passed=0; failed=0; xfailed=0; skipped=0; unexpected_pass=0
declare -A dpass=() dfail=() dxf=() dtime=()
failures=()

report() {  # report DIR/TEST NP PASS(0/1) REASON
  local t=$1 n=$2 ok=$3 reason=$4 d=${1%%/*} k="$1 $2"
  if [ "$ok" = 1 ]; then
    passed=$((passed+1)); dpass[$d]=$(( ${dpass[$d]:-0} + 1 ))
    if [ -n "${xf[$k]+x}" ]; then
      echo "ok $t np=$n # listed as an expected failure but passed: remove it from $(basename "$EXPECTED")"
      xf_seen_pass[$k]=1; unexpected_pass=$((unexpected_pass+1))
    else
      echo "ok $t np=$n"
    fi
  elif [ -n "${xf[$k]+x}" ]; then
    xfailed=$((xfailed+1)); dxf[$d]=$(( ${dxf[$d]:-0} + 1 ))
    echo "ok $t np=$n # expected failure: ${xf[$k]}"
  else
    failed=$((failed+1)); dfail[$d]=$(( ${dfail[$d]:-0} + 1 ))
    echo "not ok $t np=$n: $reason"
    failures+=("$t np=$n: $reason")
  fi
}

# the reason of a failed test, from its output in the TAP file ("## " lines)
reason_of() {
  local out=$1 r
  r=$(grep -m1 -E '^mpirun: (job|exit status)' <<<"$out")
  local first
  first=$(grep -v -E '^mpirun: |^Test output|^$|^\s*No Errors\s*$' <<<"$out" | head -n 1 | cut -c1-160)
  if [ -n "$r" ]; then
    r=$(grep -E '^mpirun: exit status' <<<"$out" | tail -n1)
    r=${r#mpirun: }
    [ -n "$first" ] && r="$r; $first"
    local j; j=$(grep -m1 -E '^mpirun: job' <<<"$out" | cut -c1-160)
    [ -n "$j" ] && r="$r; ${j#mpirun: }"
  elif [ -n "$first" ]; then
    if grep -q -E '^\s*No Errors\s*$' <<<"$out"; then r="unexpected output: $first"
    else r="no 'No Errors': $first"; fi
  else
    r="exited 0 without printing 'No Errors'"
  fi
  echo "$r"
}

export MPITEST_TIMEOUT_MULTIPLIER=$MULT
# progress lines (-v) reach the terminal on fd 3, around runtests
[ "$VERBOSE" = 1 ] && export BGLEMU_SUITE_VERBOSE=1
exec 3>&2
t_tests=$(date +%s)
fp_start=$(fingerprint)
for d in "${dirs[@]}"; do
  td=$(date +%s)
  # the testlist runtests gets: DIR's, or only the tests named on the
  # command line, without the expected failures marked "[not run]"
  list=testlist.bglemu
  if [ -n "${only[$d]:-}" ]; then
    : >"$TREE/$d/$list"
    for t in ${only[$d]}; do
      grep -E "^[[:space:]]*$t([[:space:]]|\$)" "$TREE/$d/testlist" >>"$TREE/$d/$list" \
        || die "no test $t in $d/testlist"
    done
  else
    cp "$TREE/$d/testlist" "$TREE/$d/$list"
  fi
  notrun=()
  while IFS= read -r line; do
    read -r prog n rest <<<"${line%%#*}"
    [[ ${n:-} =~ ^[0-9]+$ ]] || n=2
    k="$d/${prog:-} $n"
    if [ "$RUN_ALL" = 0 ] && [ -n "${prog:-}" ] && [ -n "${xf[$k]+x}" ] && [[ ${xf[$k]} == "[not run]"* ]]; then
      notrun+=("$d/$prog $n")
      continue
    fi
    printf '%s\n' "$line"
  done <"$TREE/$d/$list" >"$TREE/$d/$list.tmp"
  mv "$TREE/$d/$list.tmp" "$TREE/$d/$list"
  for k in "${notrun[@]}"; do report "${k% *}" "${k##* }" 0 "not run"; done
  # programs that did not build: runtests tries make again and reports
  # nothing in its TAP file; they are failures here
  while read -r prog n rest; do
    [ -d "$TREE/$d/$prog" ] && continue
    grep -q -E '(^|[[:space:]])xfail=' <<<"$rest" && continue
    [ -x "$TREE/$d/$prog" ] || report "$d/$prog" "$n" 0 "does not build (see $ST/make.log)"
  done < <(sed -e 's/#.*//' "$TREE/$d/$list" | awk 'NF>0 {print $1, (NF>1 && $2 ~ /^[0-9]+$/ ? $2 : 2), $0}')
  tap=$RESULTS/$d.tap
  ( cd "$TREE" && ./runtests -srcdir=. -tests="$list" -testdirs="$d" \
      -mpiexec="$WRAP" -tapfile="$tap" -junitfile="$RESULTS/$d.junit.xml" ) \
      >"$RESULTS/$d.runtests.log" 2>&1
  # TAP: "ok N - ./DIR/PROG NP # time=S", "not ok N - ..." followed by
  # "## " output lines, "ok N - ./DIR/PROG NP  # SKIP reason"
  cur=""; out=""
  flush() {
    if [ -n "$cur" ]; then
      set -- $cur; report "$1" "$2" 0 "$(reason_of "$out")"
    fi
    cur=""; out=""
  }
  while IFS= read -r line; do
    if [[ $line =~ ^(not\ )?ok\ +[0-9]*\ *-\ \./([^ ]+)\ ([0-9]+)(.*)$ ]]; then
      flush
      name=${BASH_REMATCH[2]}; n=${BASH_REMATCH[3]}; rest=${BASH_REMATCH[4]}
      if [[ $rest == *"# SKIP"* ]]; then
        skipped=$((skipped+1)); echo "ok $name np=$n # skipped by runtests:${rest#*# SKIP}"
      elif [ -n "${BASH_REMATCH[1]}" ]; then
        cur="$name $n"
      else
        report "$name" "$n" 1 ""
      fi
    elif [[ $line == "## "* ]]; then
      out+="${line#\#\# }"$'\n'
    elif [[ $line == "##" ]]; then
      out+=$'\n'
    fi
  done < <(cat "$tap" 2>/dev/null)
  flush
  if grep -q 'Terminating test because' "$RESULTS/$d.runtests.log"; then
    report "$d/runtests" 0 0 "runtests stopped early: $(grep -m1 'Terminating test' "$RESULTS/$d.runtests.log")"
  fi
  rm -f "$TREE/$d/$list"
  dtime[$d]=$(( $(date +%s) - td ))
done
t_end=$(date +%s)

echo "# per directory (passed / failed / expected failures, wall time):"
for d in "${dirs[@]}"; do
  printf '#   %-9s %4d / %d / %d  %4d s\n' "$d" "${dpass[$d]:-0}" "${dfail[$d]:-0}" "${dxf[$d]:-0}" "${dtime[$d]:-0}"
done
echo "# tests ran in $(( t_end - t_tests )) s, $(( t_end - t_start )) s with configure/build; logs in $RESULTS"
if [ ${#failures[@]} -gt 0 ]; then
  echo "# unexpected failures:"; printf '#   %s\n' "${failures[@]}"
fi
if [ "$SNAPSHOT" = 0 ] && [ "$(fingerprint)" != "$fp_start" ]; then
  echo "# warning: $PREFIX (mpirun or libmpi) was reinstalled during the run: tests ran against two builds"
fi
total=$((passed + failed + xfailed))
pct=$(awk -v p="$passed" -v t="$total" 'BEGIN { printf "%.1f", t ? 100*p/t : 0 }')
echo "$passed passed, $failed failed ($xfailed expected failures, $skipped skipped by runtests, $unexpected_pass expected failures passed); $pct% of $total tests pass"
[ "$failed" -eq 0 ]
