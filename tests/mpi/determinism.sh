#!/usr/bin/env bash
# Exactness of MPI programs in -clock none (docs/simulated-time.md, "What a
# processor may observe"; docs/mpi.md, "Time"): every simulated result must
# be the same run after run whatever the host does. Each program runs up to
# 5 times — idle; with 3 more environment variables of random lengths, from
# another directory (a rank's stack moves with its strings, and glibc's
# environment array would move its heap: docs/mpi.md, "A reproducible
# address space"); under 2 CPU hogs; on one core (taskset), where the
# engine and the ranks interleave at every switch of the core and its
# promises to running ranks must hold whatever the interleaving
# (docs/simulated-time.md, "Promises"); with a timeline (--trace: the
# tracing library and buffers move none of the program's) — and the whole
# --report JSON must be identical (the "job" label and "wall..." fields
# dropped, as in tests/regress/run.sh). A difference fails, naming the
# first differing field. Programs: tests/mpi/rma.c (MPI_Win_allocate's allreduce of a
# derived type from a stack buffer, shared windows, passive atomics),
# tests/mpi/ddt_modes.c (pack, zerocopy, memo: the layout cache keyed by
# base alignment; it changes a variable after MPI_Init) and
# tests/mpi/environ.c (the environment functions in a rank; the address
# of a buffer allocated after a change, its "environ:" lines, must also be
# the same). Takes about 30-60 s on 2 cores.
#
# SOAK=1 (make bench, section determinism: the long part): every program
# of tests/mpi that ends well in -clock none, with the arguments
# programs.sh gives it, twice — idle and under 2 CPU hogs — reports
# compared the same way. Left out: failures.c (its jobs fail on purpose),
# cputime.c in the default clock mode (host time by design), MPICH's own
# test suite (mpich_suite.sh; not yet). About 5-10 minutes on 2 cores.
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
trap 'exit 130' INT TERM HUP # the hogs go with the script however it ends
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }

command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
  { notok "mpirun and mpicc in $PREFIX/bin (make mpich)"; exit 1; }
command -v taskset >/dev/null || { notok "taskset (util-linux) for the one-core runs"; exit 1; }
progs="rma ddt_modes environ"
[ "${SOAK:-0}" = 1 ] && progs=$(cd "$src" && ls *.c *.f90 | sed 's/\.[^.]*$//' | grep -v '^failures$')
for name in $progs; do # as tests/mpi/programs.sh builds them
  f=$src/$name.c cc=mpicc flags="-O2 -Wall -Wextra -Werror -I$PREFIX/include/bglemu"
  [ -e "$f" ] || f=$src/$name.f90 cc=mpifort flags=-O2
  if [ "$f" -nt "$out/$name" ] || [ "$src/mpi_check.h" -nt "$out/$name" ] ||
     [ "$PREFIX/lib/libmpi.so" -nt "$out/$name" ]; then
    $cc $flags -o "$out/$name" "$f" 2>"$tmp/cc.err" || { cat "$tmp/cc.err"; notok "compile $f"; exit 1; }
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

# job NAME RUNS MPIRUN-ARGS... : runs 1..RUNS of the three (or the ones
# RUNS lists, "1,3"), reports compared with the first
job() {
  local name=$1 runs=$2; shift 2
  local how=("idle" "3 more environment variables, another directory" "2 CPU hogs" "one core"
             "with a timeline (--trace)") k rc end kinds
  if [[ $runs == *,* ]]; then kinds=${runs//,/ }; else kinds=$(seq -s " " 1 "$runs"); fi
  local first=${kinds%% *}
  for k in $kinds; do
    # run 2 inherits 3 more variables, as a job started from make has
    # MAKEFLAGS, MAKELEVEL, ... (3: glibc's environment array grows in
    # 16-byte steps, two variables a step, so 3 more always moved it)
    local env=() dir=$tmp v pin=() trace=()
    if [ $k = 2 ]; then
      for v in 1 2 3; do env+=("BGLEMU_DETERMINISM_$v=$(printf '%0*d' $((RANDOM % 64)) 0)"); done
      dir=$tmp/another/directory/$RANDOM; mkdir -p "$dir"
    fi
    if [ $k = 3 ]; then
      # bounded: a hog outliving a killed script still ends
      timeout 900 bash -c 'while :; do :; done' & hogs="$hogs $!"
      timeout 900 bash -c 'while :; do :; done' & hogs="$hogs $!"
    fi
    # run 4: mpirun, its engine and every rank on one core, where the
    # engine and the ranks interleave at every switch of the core
    [ $k = 4 ] && pin=(taskset -c "$(taskset -cp $$ | sed 's/.*[-,: ]//')") # the last one
    # run 5: tracing preloads a library and maps buffers, and must move none
    # of the program's
    [ $k = 5 ] && trace=(--trace "$tmp/$name.$k.trace.json")
    (cd "$dir" && env "${env[@]}" "${pin[@]}" timeout 300 mpirun --timeout 240 "${trace[@]}" \
       --report "$tmp/$name.$k.json" "$@") \
      >"$tmp/$name.$k.out" 2>&1
    rc=$?
    if [ $k = 3 ]; then for h in $hogs; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done; hogs=""; fi
    if [ $rc != 0 ] || ! grep -q '^mpirun: all [0-9]* ranks exited 0' "$tmp/$name.$k.out"; then
      tail -20 "$tmp/$name.$k.out" | sed 's/^/    /'
      notok "$name: run $k (${how[$((k - 1))]}) exited $rc"; return
    fi
  done
  end=$(sed -n 's/.*"end_cycles": \([0-9]*\).*/\1/p' "$tmp/$name.$first.json")
  local desc="" n=0
  for k in $kinds; do
    local d
    n=$((n + 1)); desc="$desc${desc:+; }${how[$((k - 1))]}"
    [ "$k" = "$first" ] && continue
    if ! d=$(first_diff "$tmp/$name.$first.json" "$tmp/$name.$k.json"); then
      notok "$name: run $k (${how[$((k - 1))]}) differs from run $first (${how[$((first - 1))]}): first difference $d"; return
    fi
    # environ's heap addresses (hydra forwards output in chunks: a line
    # may follow part of another)
    local at='environ: rank [0-9]* heap [0-9a-fx]*' a b
    a=$(grep -o "$at" "$tmp/$name.$first.out" | sort) b=$(grep -o "$at" "$tmp/$name.$k.out" | sort)
    if [ "$a" != "$b" ]; then
      notok "$name: run $k (${how[$((k - 1))]}) allocates elsewhere than run $first: ${b%%$'\n'*} vs ${a%%$'\n'*}"; return
    fi
  done
  ok "$name: $n runs in -clock none ($desc) give identical --report JSON ($end cycles)"
}

if [ "${SOAK:-0}" != 1 ]; then
  job rma 5 -np 4 -shape 2x2x1 -clock none "$out/rma" 1
  job ddt_modes 5 -np 2 -shape 2x1x1 -clock none "$out/ddt_modes"
  job environ 2 -np 2 -shape 2x1x1 -clock none "$out/environ"
  [ $fails = 0 ]; exit
fi

# ---- the soak: every program, idle and under 2 CPU hogs ----
soak() { local name=$1; shift; job "$name" 1,3 -clock none "$@"; }
soak pingpong       -np 2 -shape 2x1x1 "$out/pingpong" 0 1 150 240 1000 5000 100000
soak pingpong-vn    -np 2 -mode VN -shape 1x1x1 "$out/pingpong" --iters 3 1024 4096 16384 65536
soak collectives    -np 8 -shape 2x2x2 "$out/collectives" 4 64
soak collectives-64 -np 64 -shape 4x4x4 "$out/collectives" 5 16
soak mapping        -np 8 -mode VN -shape 2x2x1 -mapfile TXYZ "$out/mapping" 2 2 1 2
soak cputime        -np 2 "$out/cputime" 0
soak pt2pt          -np 4 "$out/pt2pt"
soak pt2pt-vn       -np 4 -mode VN "$out/pt2pt"
soak unexpected     -np 2 -shape 2x1x1 "$out/unexpected"
soak unexpected-vn  -np 2 -mode VN -shape 1x1x1 "$out/unexpected"
soak rma            -np 4 -shape 2x2x1 "$out/rma" 1
soak rma-vn         -np 4 -mode VN -shape 2x1x1 "$out/rma" 2
soak dtypes         -np 2 "$out/dtypes"
soak ddt_modes      -np 2 -shape 2x1x1 "$out/ddt_modes"
soak ddt_modes-vn   -np 2 -mode VN -shape 1x1x1 "$out/ddt_modes"
soak ddt_coll       -np 8 -shape 2x2x2 "$out/ddt_coll"
soak large          -np 2 -shape 2x1x1 "$out/large" 64
soak fortran        -np 4 "$out/fortran"
soak fpingpong      -np 2 -shape 2x1x1 "$out/fpingpong"
soak bcast          -np 8 -shape 2x2x2 "$out/bcast"
soak treecoll       -np 8 -shape 2x2x2 "$out/treecoll"
soak treecoll-vn    -np 8 -mode VN -shape 2x2x1 "$out/treecoll"
soak treemix        -np 8 -shape 2x2x2 "$out/treemix"
soak halo           -np 27 -shape 3x3x3 "$out/halo"
soak alltoallv      -np 16 -shape 4x2x2 -env BGLMPI_ALLTOALL=mpich "$out/alltoallv" --rounds 2 --total 65536
soak bibw           -np 2 -shape 2x1x1 "$out/bibw" --max 256K
soak stream         -np 2 -shape 2x1x1 -connect MESH "$out/stream" --count 2 1M
soak handoff        -np 8 -shape 2x2x2 "$out/handoff" --iters 200
soak wavefront      -np 64 -shape 4x4x4 "$out/wavefront" --iters 1
soak multipart      -np 64 -shape 4x4x4 "$out/multipart" --iters 1
soak rowcol         -np 16 -shape 4x2x2 "$out/rowcol" --iters 3
soak wtime_delay    -np 2 -shape 2x1x1 "$out/wtime_delay"
soak environ        -np 2 -shape 2x1x1 "$out/environ"
[ $fails = 0 ]
