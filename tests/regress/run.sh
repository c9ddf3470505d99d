#!/usr/bin/env bash
# The exactness regression: runs every job of tests/regress/jobs with
# `--report FILE` and compares the JSON report, byte for byte, with
# tests/regress/ref/NAME.json. One line per job: "ok - NAME: ..." or
# "not ok - NAME: <the first difference>"; then a "#" summary line.
#
#   tests/regress/run.sh [--filter ERE] [--twice] [--record] [--keep DIR]
#
#   --filter ERE  only the jobs whose name matches (e.g. '^mpi-', '^(ml|traffic)-')
#   --twice       run each job twice: the two reports must also be identical
#   --record      (re)write ref/NAME.json; each job runs twice and is recorded
#                 only if both runs agree. Re-recording changes the contract:
#                 see docs/simulated-time.md, "Exactness regression".
#   --keep DIR    leave the reports (and the jobs' output) in DIR
#   --trace       mpirun jobs also write a timeline (--trace NAME.trace.json):
#                 tracing must not change a single simulated number
#
# Environment: PREFIX (default ./install; mpirun, bgl-traffic, the installed
# programs), BUILD (default build; MPI test programs in $BUILD/mpi, compiled
# from tests/mpi/NAME.c with PREFIX's mpicc when missing or stale). Run from
# the repository's root.
#
# The report holds simulated quantities (torus-sim/tsim_report.c). Two
# things are dropped before comparing, as host-dependent: a "job" line (the
# command line as a label: it names programs by their host paths) and any
# field named "wall..." (host time; none today). The mapping is an order
# (XYZT, ...), never a host path.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PREFIX=${PREFIX:-$PWD/install}
BUILD=${BUILD:-build}
export PATH="$PREFIX/bin:$PATH"
jobs=$here/jobs
refdir=$here/ref
filter='' record=0 twice=0 keep='' trace=0
while [ $# -gt 0 ]; do
  case $1 in
    --filter) filter=${2:?--filter needs a regular expression}; shift 2 ;;
    --record) record=1; twice=1; shift ;;
    --twice) twice=1; shift ;;
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --trace) trace=1; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "regress: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$keep" ]; then mkdir -p "$keep" && tmp=$(cd "$keep" && pwd) || exit 2
else tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; fi

ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
failed=0; njobs=0
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Only simulated quantities stay: drop the "job" label and "wall..." fields.
normalize() { sed -E -e '/^  "job": /d' -e 's/"wall[A-Za-z_]*": *[-+0-9.eE]+(, )?//g' "$1"; }

# field FILE KEY: the first number after "KEY": in FILE
field() { grep -o "\"$2\": [0-9]*" "$1" | head -n 1 | sed 's/.*: //'; }

# The first difference between two reports: line number, the JSON object it
# belongs to, and the first differing ", "-separated item on that line.
# first_diff GOT WANT
first_diff() {
  awk -v want="$2" '
    { got[NR] = $0 } END {
      n = 0; while ((getline line < want) > 0) ref[++n] = line
      m = NR > n ? NR : n
      for (i = 1; i <= m; i++) if (got[i] != ref[i]) break
      if (i > m) { print "identical"; exit }
      g = got[i]; r = ref[i]
      ng = split(g, gi, ", "); nr = split(r, ri, ", ")
      for (k = 1; k <= ng || k <= nr; k++) if (gi[k] != ri[k]) break
      where = r != "" ? r : g; sub(/^ */, "", where); where = substr(where, 1, 60)
      printf "line %d (%s...): got %s, want %s", i, where,
             (k <= ng ? gi[k] : "<end of line>"), (k <= nr ? ri[k] : "<end of line>")
      if (i > NR) printf " (got only %d lines)", NR
      if (i > n) printf " (want has only %d lines)", n
    }' "$1"
}

# Builds $BUILD/mpi/NAME from tests/mpi/NAME.c (programs.sh's rule).
build_mpi() {
  local bin=$1 name src
  name=$(basename "$bin"); src=$root/tests/mpi/$name.c
  [ -f "$src" ] || return 0  # not one of ours: must exist already
  command -v mpicc >/dev/null || { echo "no mpicc in $PREFIX/bin (make mpich)"; return 1; }
  mkdir -p "$(dirname "$bin")"
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ "$root/tests/mpi/mpi_check.h" -nt "$bin" ] ||
     [ "$PREFIX/lib/libmpi.so" -nt "$bin" ]; then
    mpicc -O2 -Wall -Wextra -Werror -o "$bin" "$src" </dev/null 2>&1 || return 1
  fi
}

# run_job NAME OUT ARGS...: the job with --report OUT.json, output in OUT.log
run_job() {
  local name=$1 out=$2; shift 2
  local tool=$1; shift
  local extra=()
  [ $trace = 1 ] && [ "$tool" = mpirun ] && extra=(--trace "$out.trace.json")
  timeout 900 "$tool" --report "$out.json" "${extra[@]}" "$@" </dev/null >"$out.log" 2>&1
}

t_all=$(now)
while read -r name rest; do
  case $name in ''|'#'*) continue ;; esac
  if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then continue; fi
  njobs=$((njobs + 1))
  read -r -a args <<<"${rest//\$BUILD/$BUILD}"
  case ${args[0]} in mpirun|bgl-traffic) ;; *) notok "$name: unknown tool '${args[0]}' in $jobs"; continue ;; esac
  bad=''
  for a in "${args[@]}"; do
    case $a in "$BUILD"/mpi/*) msg=$(build_mpi "$a") || { bad="cannot build $a: $(tail -n 3 <<<"$msg")"; break; } ;; esac
  done
  [ -z "$bad" ] || { notok "$name: $bad"; continue; }

  t0=$(now)
  run_job "$name" "$tmp/$name" "${args[@]}"; rc=$?
  t1=$(now)
  if [ $rc -ne 0 ] || [ ! -s "$tmp/$name.json" ]; then
    tail -n 15 "$tmp/$name.log" | sed 's/^/    /'
    notok "$name: exit $rc (${args[*]})"; continue
  fi
  normalize "$tmp/$name.json" >"$tmp/$name.norm"
  end=$(field "$tmp/$name.norm" end_cycles); pk=$(field "$tmp/$name.norm" packets_delivered)
  what="$end cycles, $pk packets"
  if [ $twice = 1 ]; then
    run_job "$name" "$tmp/$name.2" "${args[@]}"; rc2=$?
    normalize "$tmp/$name.2.json" >"$tmp/$name.2.norm" 2>/dev/null
    if [ $rc2 -ne 0 ] || ! cmp -s "$tmp/$name.norm" "$tmp/$name.2.norm"; then
      [ $rc2 -eq 0 ] || tail -n 15 "$tmp/$name.2.log" | sed 's/^/    /'
      notok "$name: not reproducible: second run (exit $rc2) $(first_diff "$tmp/$name.2.norm" "$tmp/$name.norm")"
      continue
    fi
    what="$what, twice the same"
  fi
  ref=$refdir/$name.json
  if [ $record = 1 ]; then
    mkdir -p "$refdir"
    if [ -f "$ref" ] && cmp -s "$tmp/$name.norm" "$ref"; then
      ok "$name: $what; reference unchanged ($(secs "$t0" "$t1") s wall)"
    else
      [ -f "$ref" ] && echo "    was: $(first_diff "$tmp/$name.norm" "$ref")"
      cp "$tmp/$name.norm" "$ref"
      ok "$name: $what; recorded in ${ref#"$root"/} ($(secs "$t0" "$t1") s wall)"
    fi
  elif [ ! -f "$ref" ]; then
    notok "$name: $what; no reference ${ref#"$root"/} (record it with --record)"
  elif cmp -s "$tmp/$name.norm" "$ref"; then
    ok "$name: $what, identical to the reference ($(secs "$t0" "$t1") s wall)"
  else
    notok "$name: differs from the reference: $(first_diff "$tmp/$name.norm" "$ref")"
  fi
done <"$jobs"
echo "# regress: $njobs jobs, $failed failed, $(secs "$t_all" "$(now)") s wall"
[ "$njobs" -gt 0 ] && [ "$failed" -eq 0 ]
