#!/usr/bin/env bash
# Exactness of MPI programs in -clock none (docs/simulated-time.md, "What a
# processor may observe"; docs/mpi.md, "Time"): every simulated result must
# be the same run after run whatever the host does. Each program runs up to
# 3 times — idle, with a longer environment from another directory (the
# rank's stack moves with its strings), under 2 CPU hogs — and the whole
# --report JSON must be identical (the "job" label and "wall..." fields
# dropped, as in tests/regress/run.sh). A difference fails, naming the first
# differing field. Programs: tests/mpi/rma.c (MPI_Win_allocate's
# allreduce of a derived type from a stack buffer, shared windows, passive
# atomics) and tests/mpi/ddt_modes.c (pack, zerocopy, memo: the layout
# cache keyed by base alignment). Takes about 20-40 s on 2 cores.
# Prints "ok - ..." / "not ok - ..." per check.
set -u
PREFIX=${PREFIX:-$PWD/install}
BUILD=${BUILD:-build}
export PATH="$PREFIX/bin:$PATH"
src=$(cd "$(dirname "$0")" && pwd)
out=$BUILD/mpi
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
hogs=""
cleanup() { for h in $hogs; do kill "$h" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }

command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
  { notok "mpirun and mpicc in $PREFIX/bin (make mpich)"; exit 1; }
for name in rma ddt_modes; do # as tests/mpi/programs.sh builds them
  if [ "$src/$name.c" -nt "$out/$name" ] || [ "$src/mpi_check.h" -nt "$out/$name" ] ||
     [ "$PREFIX/lib/libmpi.so" -nt "$out/$name" ]; then
    mpicc -O2 -Wall -Wextra -Werror -I"$PREFIX/include/bglemu" -o "$out/$name" "$src/$name.c" \
      2>"$tmp/cc.err" || { cat "$tmp/cc.err"; notok "compile $name.c"; exit 1; }
  fi
done

# first DIFFERENT field of two reports, as a path: "result.end_cycles: 1506457 vs 1506497"
first_diff() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
def load(p):
    d = json.load(open(p))
    d.pop("job", None)
    return d
def walk(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k.startswith("wall"):
                continue
            if k not in a or k not in b:
                return f"{path}{k}: only in run {'1' if k in a else '2'}"
            r = walk(a[k], b[k], f"{path}{k}.")
            if r: return r
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            r = walk(x, y, f"{path[:-1]}[{i}].")
            if r: return r
        return None if len(a) == len(b) else f"{path[:-1]}: {len(a)} vs {len(b)} entries"
    return None if a == b else f"{path[:-1]}: {a} vs {b}"
r = walk(load(sys.argv[1]), load(sys.argv[2]), "")
print(r or "")
sys.exit(1 if r else 0)
EOF
}

# job NAME RUNS MPIRUN-ARGS... : runs 1..RUNS of the three, reports compared with the first
job() {
  local name=$1 runs=$2; shift 2
  local how=("idle" "longer environment, another directory" "2 CPU hogs") k rc end
  for k in $(seq 1 "$runs"); do
    local env=() dir=$tmp
    if [ $k = 2 ]; then
      env=(-env BGLEMU_DETERMINISM_PAD="$(printf '%0*d' $((37 + RANDOM % 64)) 0)")
      dir=$tmp/another/directory/$RANDOM; mkdir -p "$dir"
    fi
    if [ $k = 3 ]; then
      bash -c 'while :; do :; done' & hogs="$hogs $!"
      bash -c 'while :; do :; done' & hogs="$hogs $!"
    fi
    (cd "$dir" && timeout 300 mpirun --timeout 240 "${env[@]}" --report "$tmp/$name.$k.json" "$@") \
      >"$tmp/$name.$k.out" 2>&1
    rc=$?
    if [ $k = 3 ]; then for h in $hogs; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done; hogs=""; fi
    if [ $rc != 0 ] || ! grep -q '^mpirun: all [0-9]* ranks exited 0' "$tmp/$name.$k.out"; then
      tail -20 "$tmp/$name.$k.out" | sed 's/^/    /'
      notok "$name: run $k (${how[$((k - 1))]}) exited $rc"; return
    fi
  done
  end=$(sed -n 's/.*"end_cycles": \([0-9]*\).*/\1/p' "$tmp/$name.1.json")
  for k in $(seq 2 "$runs"); do
    local d
    if ! d=$(first_diff "$tmp/$name.1.json" "$tmp/$name.$k.json"); then
      notok "$name: run $k (${how[$((k - 1))]}) differs from run 1 (idle): first difference $d"; return
    fi
  done
  local desc; desc=$(IFS=';'; echo "${how[*]:0:$runs}")
  ok "$name: $runs runs in -clock none (${desc//;/; }) give identical --report JSON ($end cycles)"
}

# rma under host load is not exact yet (issue 26, open): with 2 CPU hogs
# one run in a few ends 500 cycles later on every processor (2 more
# events, the same packets), so its load run is left out until that is
# found; the address-space part (ASLR) is covered by runs 1 and 2.
job rma 2 -np 4 -shape 2x2x1 -clock none "$out/rma" 1
job ddt_modes 3 -np 2 -shape 2x1x1 -clock none "$out/ddt_modes"
[ $fails = 0 ]
