#!/usr/bin/env bash
# mpirun refuses a job the host cannot run before it creates anything
# (adi3-device/mpirun/mpirun_limits.c; docs/mpirun.md, "Limits"): one line
# naming the limit and the numbers, exit 2, within a second, nothing left
# in /dev/shm. Real limits where a test can set them without huge
# resources: /dev/shm as a 1 MiB tmpfs in a private mount namespace
# (unshare -m), ulimit -u for an unprivileged user (setpriv to nobody: the
# kernel lets root fork past RLIMIT_NPROC), ulimit -n; the memory through
# BGLEMU_MEM_AVAILABLE (pretends the host has that much). The same jobs run
# when the limit allows them. Checks that need what the host lacks (root
# for unshare/setpriv, an MPI program for the open-files check) say
# "skipped" in an ok line.
# Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
needs mpirun tp_idle
chmod 755 "$tmp"

# refused WHAT PATTERN CMD...: CMD (an mpirun) exits 2 within 2 s with one
# line on stderr that matches PATTERN, and leaves nothing in /dev/shm
refused() {
  local what=$1 pat=$2; shift 2
  local t0 t1 rc lines
  t0=$(date +%s%N)
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  t1=$(date +%s%N)
  lines=$(wc -l <"$tmp/err")
  local ms=$(((t1 - t0) / 1000000))
  if [ $rc = 2 ] && [ "$lines" = 1 ] && grep -Eq "$pat" "$tmp/err" && [ $ms -lt 2000 ] &&
     [ ! -s "$tmp/out" ]; then
    ok "$what: exit 2 in $ms ms, one line: $(cat "$tmp/err")"
  else
    sed 's/^/    /' "$tmp/err" | head -5
    bad "$what: exit $rc, $lines lines, $ms ms (want exit 2, one line matching '$pat', under 2 s)"
  fi
}

# ---- memory ----
refused "64 ranks with 20 MB of memory" \
  '^mpirun: -np 64 -mode CO -shape 4x4x4: needs at least 35 MiB of memory \(0.25 MiB a rank, 17.0 MiB the segment\), the host has 19 MiB available' \
  env BGLEMU_MEM_AVAILABLE=20000000 mpirun -np 64 tp_idle
if BGLEMU_MEM_AVAILABLE=100000000 mpirun -np 64 tp_idle >"$tmp/out" 2>&1; then
  ok "64 ranks with 100 MB of memory run"
else
  sed 's/^/    /' "$tmp/out" | tail -3; bad "64 ranks with 100 MB of memory do not run"
fi

# ---- /dev/shm ----
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  refused "a 64-node machine with a 1 MiB /dev/shm" \
    '^mpirun: -np 64 -mode CO -shape 4x4x4: /dev/shm has 1.0 MiB free, the machine.s segment for 64 nodes needs 17.0 MiB' \
    unshare -m bash -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec mpirun -np 64 tp_idle'
  if unshare -m bash -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec mpirun -np 2 tp_idle' >"$tmp/out" 2>&1; then
    ok "a 2-node machine (0.5 MiB) runs with a 1 MiB /dev/shm"
  else
    sed 's/^/    /' "$tmp/out" | tail -3; bad "a 2-node machine does not run with a 1 MiB /dev/shm"
  fi
else
  ok "/dev/shm check skipped: needs root for unshare -m"
fi

# ---- ulimit -u ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  cd "$tmp" || exit 1
  refused "16 ranks under ulimit -u 20 (as nobody)" \
    '^mpirun: -np 16 -mode CO -shape 3x3x2: needs 33 processes and threads, and user 65534 runs [0-9]+ already: ulimit -u \(RLIMIT_NPROC\) is 20' \
    as_nobody bash -c 'ulimit -u 20 && exec mpirun -np 16 tp_idle'
  if as_nobody bash -c 'ulimit -u 60 && exec mpirun -np 16 tp_idle' >"$tmp/out" 2>&1; then
    ok "16 ranks under ulimit -u 60 (as nobody) run"
  else
    sed 's/^/    /' "$tmp/out" | tail -3; bad "16 ranks under ulimit -u 60 (as nobody) do not run"
  fi
  cd - >/dev/null || exit 1
elif [ "$(id -u)" != 0 ]; then
  refused "16 ranks under ulimit -u (what this user runs + 10)" \
    '^mpirun: -np 16 -mode CO -shape 3x3x2: needs 33 processes and threads, .*ulimit -u \(RLIMIT_NPROC\)' \
    bash -c "ulimit -u $(($(ps -L -u "$(id -u)" --no-headers | wc -l) + 10)) && exec mpirun -np 16 tp_idle"
else
  ok "ulimit -u check skipped: root without setpriv (the kernel lets root fork past it)"
fi

# ---- ulimit -n: a pidfd per MPI rank ----
mpiprog=$(command -v coll_alltoall || true)
if [ -n "$mpiprog" ]; then
  refused "256 MPI ranks under ulimit -n 200" \
    '^mpirun: -np 256 -mode CO -shape 8x8x4: needs 272 open files, ulimit -n \(RLIMIT_NOFILE\) allows at most 200' \
    bash -c "ulimit -n 200 && exec mpirun -np 256 -shape 8x8x4 $mpiprog"
else
  ok "open files check skipped: no MPI program installed (make mpich)"
fi
finish
