#!/usr/bin/env bash
# Start and end at scale (issue 26, docs/mpirun.md "Start and end"): the
# wall time of a job that is almost only start and end — startend
# (adi3-device/bench/startend.c: 10 exchanges around the ring of ranks and
# one MPI_Allreduce, -clock none, about 40 us simulated) — with 512 ranks
# in CO mode and 1,024 in VN mode, both on 8x8x8, and where it goes: when
# the last rank process existed, the last MPI_Init returned, the last rank
# finished its messages, the last MPI_Finalize returned (each rank's
# clock, --times), mpirun's exit; the job's host CPU (/usr/bin/time); the
# most tasks runnable on the host at once, sampled from /proc/loadavg every
# 0.2 s (every task of the host, other users' included). Median of
# BENCH_STARTEND_RUNS runs (default 3) by wall time. Goals (reported, not
# enforced): 512 CO <= 5 s, 1,024 VN <= 10 s on the 2-core host. Host
# figures only; they vary with the host's load (printed). Fails only if a
# run fails.
set -u
RUNS=${BENCH_STARTEND_RUNS:-3}
if [ ! -x "$PREFIX/bin/startend" ]; then echo "  skipped: MPICH not built (make mpich)"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# one NAME ARGS...: one run -> a line in $tmp/NAME.runs:
#   wall started init job finalized cpu runnable
one() {
  local name=$1; shift
  rm -f "$tmp/times" "$tmp/sampling"; touch "$tmp/sampling"
  (while [ -e "$tmp/sampling" ]; do cut -d' ' -f4 /proc/loadavg; sleep 0.2; done >"$tmp/load") &
  local sampler=$! t0 t1
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$tmp/cpu" mpirun "$@" -clock none "$PREFIX/bin/startend" --times "$tmp/times" \
    >"$tmp/out" 2>&1
  local rc=$?
  t1=$(now)
  rm -f "$tmp/sampling"; wait "$sampler"
  if [ "$rc" != 0 ] || ! grep -q 'sum [0-9]* right' "$tmp/out"; then
    tail -5 "$tmp/out" | sed 's/^/    /'; echo "  $name: FAILED"; return 1
  fi
  awk -v t0="$t0" -v t1="$t1" -v cpu="$(cat "$tmp/cpu")" -v run="$(sort -t/ -n -k1 "$tmp/load" | tail -1 | cut -d/ -f1)" '
    { for (k = 2; k <= 6; k++) if ($k - t0 > m[k]) m[k] = $k - t0 }
    END { split(cpu, c, " "); printf "%.2f %.2f %.2f %.2f %.2f %.1f %d\n", t1 - t0, m[2], m[4], m[5], m[6], c[1] + c[2], run }' \
    "$tmp/times" >>"$tmp/$name.runs"
}

row() {
  local name=$1 goal=$2; shift 2
  : >"$tmp/$name.runs"
  local i
  for i in $(seq "$RUNS"); do one "$name" "$@" || return 1; done
  sort -n "$tmp/$name.runs" | awk -v m=$(( (RUNS + 1) / 2 )) -v n="$name" -v g="$goal" -v all="$(cut -d' ' -f1 "$tmp/$name.runs" | tr '\n' ' ')" 'NR == m {
    printf "  %-22s %6.2f %8.2f %6.2f %6.2f %9.2f %6.1f %8d   goal <= %s s (runs: %s)\n", n, $1, $2, $3, $4, $5, $6, $7, g, all }'
}

echo "  startend (10 ring exchanges + MPI_Allreduce), -clock none; median of $RUNS run(s) by wall; seconds from mpirun's start"
echo "  job                      wall  started   init    job finalized    cpu runnable"
row "512 CO on 8x8x8" 5 -np 512 -shape 8x8x8 || exit 1
row "1,024 VN on 8x8x8" 10 -np 1024 -mode VN -shape 8x8x8 || exit 1
echo "  (started: the last rank process existed; init: the last MPI_Init returned; job: the last rank's"
echo "   allreduce done; finalized: the last MPI_Finalize returned; cpu: user + sys of the job;"
echo "   runnable: most tasks runnable on the host at once, other users' included; load now $(cut -d' ' -f1-3 /proc/loadavg))"
