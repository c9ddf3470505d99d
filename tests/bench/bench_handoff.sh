#!/usr/bin/env bash
# Where a hand-off-bound job's host time goes (issue 25): the LU-like
# wavefront (tests/mpi/wavefront.c: small eager messages handed rank to
# rank), the BT/SP-like multi-partition exchange (tests/mpi/multipart.c:
# rendezvous messages, scout and grant handed back and forth) and CG's row
# and transpose exchanges (tests/mpi/rowcol.c: 14 KB vectors and one-double
# sums between fixed partners, 50 iterations: an eighth of CG.A.64), 64 ranks on
# 4x4x4, -clock none. Per job: wall s, packets, host us per packet, context
# switches per packet (mpirun and everything it started, /usr/bin/time),
# the engine's wakes and the ranks' syncs (pl_sync: a poll that waits for
# the engine to reach its clock) per MPI message (BGLEMU_PROXY_STATS), and the host CPU
# broken down from `perf record` samples of the job's process tree:
#   app      the program's own code (the floor)
#   mpich    libmpi outside the netmod, message, packet layer and torus-sim
#   ml       the netmod (MPIDI_BGL_*, adi3-device/netmod) + collectives,
#            message layer, packet layer (ml_*, pl_*, coll_*)
#   wait     the ranks waiting for the engine in user space: the packet
#            layer's wait_bell (spins, sched_yield turns), torus-sim code in
#            the ranks (tsim_*), libc's syscall() wrapper of futex(2)
#   libc     the ranks' libc (memcpy, ...)
#   engine   the mpirun process in user space at work (tsim_*, eng_*,
#            net_*, prx_*): the network model, blocked ranks' loops, the
#            looks at the processors
#   e-wait   the engine waiting for news in user space (engine_wait: its
#            spin before it sleeps, on a core of its own while the ranks
#            share the others)
#   futex / yield / vmcopy   kernel time under futex(2), sched_yield(2),
#            process_vm_readv/writev(2) (any process of the job)
#   sched    the kernel switching tasks outside those calls: reschedule
#            IPIs (a woken task placed on the other core), preemption on the
#            way back to user space, timer ticks
#   kother   the rest of the kernel: page faults, other system calls
#   init     MPI_Init's topology discovery reading PCI config space in
#            sysfs (hwloc; expensive in a virtual machine): start-up only
#   launch   mpiexec.hydra and its proxies
#   idle     wall x cores - the job's CPU (taken by other processes or
#            nobody; the system-wide idle share of the run is printed too)
# Percentages are of wall x cores. Without perf (or if it cannot sample):
# user/sys/idle from /usr/bin/time only, the rest "n/a".
# Then the floor: the job's hand-offs (wakes + syncs) at the host's price of
# one process switch (tests/bench/switch_cost.c) plus the app column, and
# the wall time's multiple of it.
# Then why the engine woke the ranks, per message: the message layer's
# wait loop's hand-backs by reason (BGLEMU_PROXY_STATS).
# Then, where SimGrid's SMPI is installed (smpicc, smpirun: Debian
# libsimgrid-dev), the same three programs under smpirun on a 4x4x4 TORUS
# platform, wall time beside ours and the ratio (docs/simulated-time.md,
# "Beside SMPI").
# Then the hand-off latency: 1-byte ping-pong between ranks 0 and 1 with
# 62 ranks blocked in MPI_Barrier (tests/mpi/handoff.c), host us per round
# trip measured inside the program, against 2 ranks on 2x1x1 and the two
# VN node mates on 1x1x1.
# Host figures only, never asserted; they vary with the host's load.
# BENCH_HANDOFF_RUNS (default 1) runs each job and reports the median;
# BENCH_HANDOFF_PERF=0 skips perf; BENCH_HANDOFF_KEEP=DIR keeps each job's
# output and perf.data there (the last run's).
set -eu
RUNS=${BENCH_HANDOFF_RUNS:-1}
if [ ! -x "$PREFIX/bin/mpicc" ]; then echo "  skipped: MPICH not built (make mpich)"; exit 0; fi
out=$BUILD/mpi; mkdir -p "$out"
for p in wavefront multipart rowcol handoff; do
  [ "$out/$p" -nt tests/mpi/$p.c ] && [ "$out/$p" -nt "$PREFIX/lib/libmpi.so" ] ||
    mpicc -O2 -I"$PREFIX/include/bglemu" -o "$out/$p" tests/mpi/$p.c
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)

have_perf=0
if [ "${BENCH_HANDOFF_PERF:-1}" != 0 ] && command -v perf >/dev/null 2>&1 &&
   perf record -e cpu-clock -g -o "$tmp/probe.data" true >/dev/null 2>&1; then
  have_perf=1
fi

# the layer of each symbol of our own code, from the objects libmpi holds
: >"$tmp/syms"
for d in torus-sim:wait packetlayer:ml messagelayer:ml collectives:ml; do
  dir=${d%%:*}; layer=${d##*:}
  for o in "$BUILD/$dir"/*.o; do
    [ -e "$o" ] && nm "$o" 2>/dev/null | awk -v l="$layer" '$2 ~ /^[tT]$/ { print $3, l }'
  done >>"$tmp/syms"
done
# the netmod's functions (built inside MPICH's tree): names defined in its sources
cat adi3-device/netmod/bgl/*.c adi3-device/netmod/bgl/*.h 2>/dev/null |
  sed -n 's/^[a-zA-Z_][a-zA-Z0-9_ *]*[ *]\([a-zA-Z_][a-zA-Z0-9_]*\)(.*/\1 ml/p' >>"$tmp/syms"

# perf script samples (header line, then the call chain, leaf first) ->
# counts per category, then the total
cat >"$tmp/classify.awk" <<'EOF'
BEGIN { while ((getline l < symf) > 0) { split(l, f, " "); layer[f[1]] = f[2] } }
function flush() {
  if (!have) return
  n++
  if (comm ~ /^(mpiexec|hydra)/) c = "launch"
  else if (kleaf) {
    c = "kother"
    if (ks ~ /futex/) c = "futex"; else if (ks ~ /sched_yield/) c = "yield"
    else if (ks ~ /process_vm/) c = "vmcopy"; else if (ks ~ / (pci_|kernfs_)/) c = "init"
    else if (ks ~ /reschedule_ipi|exit_to_user_mode_loop|apic_timer_interrupt|call_function/) c = "sched"
  } else if (comm == "mpirun") c = usym == "engine_wait" ? "ewait" : "engine"
  else if (udso ~ ("/" prog "$")) c = "app"
  else if (usym ~ /^wait_bell/ || (udso ~ /libc\.so/ && usym == "syscall")) c = "wait"
  else if (udso ~ /libmpi\.so/) c = (usym in layer) ? layer[usym] : (usym ~ /^MPIDI_BGL|^bgl_/ ? "ml" : "mpich")
  else c = "libc"
  cnt[c]++; have = 0
}
/^$/ { next }
/^[^\t]/ { flush(); comm = $1; have = 1; first = 1; kleaf = 0; ks = ""; usym = ""; udso = ""; next }
/^\t+ *[0-9a-f]+ / {
  dso = $NF; gsub(/[()]/, "", dso); sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym)
  if (first) { kleaf = dso ~ /kernel/; first = 0 }
  if (dso ~ /kernel/) ks = ks " " sym
  else if (udso == "") { udso = dso; usym = sym }
  next }
END { flush(); nk = split(cats, k, " ")
      for (i = 1; i <= nk; i++) printf "%d ", cnt[k[i]]; printf "%d\n", n }
EOF

# the categories, in the order of the breakdown's columns
cats="app mpich ml wait libc engine ewait futex yield vmcopy sched kother init launch"
ncats=$(echo $cats | wc -w)

sysidle() { awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# job NAME PROG ARGS...: one run -> $tmp/NAME.line:
#   wall usr sys csw packets msgs wakes loop_s sysidle% app mpich ml wait libc engine ewait futex yield vmcopy sched kother init launch syncs
job1() {
  local name=$1 prog=$2; shift 2
  local cmd=(mpirun -np 64 -shape 4x4x4 -clock none "$out/$prog" "$@")
  local i0 i1
  i0=$(sysidle)
  if [ "$have_perf" = 1 ]; then
    BGLEMU_PROXY_STATS=1 perf record -q -e cpu-clock -c 1000000 -g -o "$tmp/perf.data" -- \
      /usr/bin/time -f '%e %U %S %c %w' -o "$tmp/time" "${cmd[@]}" >"$tmp/out" 2>&1 || {
      tail -5 "$tmp/out" | sed 's/^/    /'; echo "  $name: FAILED"; return 1; }
  else
    BGLEMU_PROXY_STATS=1 /usr/bin/time -f '%e %U %S %c %w' -o "$tmp/time" "${cmd[@]}" >"$tmp/out" 2>&1 || {
      tail -5 "$tmp/out" | sed 's/^/    /'; echo "  $name: FAILED"; return 1; }
  fi
  i1=$(sysidle)
  cp "$tmp/out" "$tmp/$name.out"
  if [ -n "${BENCH_HANDOFF_KEEP:-}" ]; then
    mkdir -p "$BENCH_HANDOFF_KEEP"; cp "$tmp/out" "$BENCH_HANDOFF_KEEP/$name.out"
    [ "$have_perf" = 0 ] || cp "$tmp/perf.data" "$BENCH_HANDOFF_KEEP/$name.perf.data"
  fi
  read -r wall usr sys inv vol <"$tmp/time"
  local pk msgs wakes loop syncs
  pk=$(sed -n 's/.*; \([0-9]*\) packets delivered.*/\1/p' "$tmp/out" | head -1)
  msgs=$(sed -n 's/.*, \([0-9]*\) messages.*/\1/p' "$tmp/out" | head -1)
  wakes=$(sed -n 's/.* \([0-9]*\) wakes\(;.*\)\{0,1\}$/\1/p' "$tmp/out" | head -1)
  loop=$(sed -n 's/.*, host \([0-9.]*\) s$/\1/p' "$tmp/out" | head -1)
  syncs=$(sed -n 's/.* synced \([0-9]*\) times.*/\1/p' "$tmp/out" | head -1)
  local idle
  idle=$(awk -v a="$i0" -v b="$i1" 'BEGIN { split(a, x, " "); split(b, y, " ");
    d = y[2] - x[2]; printf("%.0f", d > 0 ? 100 * (y[1] - x[1]) / d : 0) }')
  local br
  br=$(printf 'n/a %.0s' $cats)
  if [ "$have_perf" = 1 ]; then
    br=$(perf script -i "$tmp/perf.data" -F comm,pid,ip,sym,dso 2>/dev/null |
      awk -v prog="$prog" -v symf="$tmp/syms" -v cats="$cats" -f "$tmp/classify.awk")
    # samples -> seconds of CPU, scaled to the measured user + sys
    br=$(awk -v l="$br" -v u="$usr" -v s="$sys" 'BEGIN { n = split(l, f, " "); tot = f[n] > 0 ? f[n] : 1
      for (i = 1; i < n; i++) printf "%.3f ", f[i] * (u + s) / tot }')
  fi
  echo "$wall $usr $sys $((inv + vol)) ${pk:-0} ${msgs:-0} ${wakes:-0} ${loop:-0} $idle $br ${syncs:-0}" >>"$tmp/$name.runs"
}

row() {
  local name=$1; shift
  : >"$tmp/$name.runs"
  local i
  for i in $(seq "$RUNS"); do job1 "$name" "$@" || return 1; done
  sort -n "$tmp/$name.runs" | awk -v m=$(( (RUNS + 1) / 2 )) 'NR == m' >"$tmp/$name.line"
  awk -v n="$name" -v c="$cores" '{
    wall = $1; cpu = $2 + $3; pk = $5 > 0 ? $5 : 1; msgs = $6 > 0 ? $6 : 1; cap = wall * c
    printf "  %-10s %6.1f %8d %7d %8.1f %6.2f %6.2f %6.2f %7.1f %5.1f %4d%%\n", n, wall, $5, $6, wall * 1e6 / pk, $4 / pk,
           $7 / msgs, $NF / msgs, cpu * 1e6 / pk, 100 * (cap - cpu) / cap, $9 }' "$tmp/$name.line"
}

echo "  64 ranks on 4x4x4 (CO), -clock none, $cores host cores; median of $RUNS run(s); host figures vary with load."
echo "  job          wall  packets    msgs  us/pkt csw/pkt wake/msg sync/msg cpu-us/pkt idle% sysidle"
row wavefront wavefront || exit 1
row multipart multipart || exit 1
row rowcol rowcol --iters 50 || exit 1
if [ "$have_perf" = 1 ]; then
  echo "  CPU breakdown, % of wall x $cores cores (perf record -g, cpu-clock; kernel by the system call under the sample):"
  echo "  job          app mpich    ml  wait  libc engine e-wait futex yield vmcopy sched kother  init launch  idle"
else
  echo "  CPU, % of wall x $cores cores (/usr/bin/time; perf unavailable: no breakdown):"
  echo "  job          user, sys                                     idle"
fi
for name in wavefront multipart rowcol; do
  awk -v n="$name" -v c="$cores" -v last=$((9 + ncats)) '{
    cap = $1 * c; printf "  %-10s", n
    if ($10 == "n/a") { printf "  user %.1f%%, sys %.1f%%, breakdown n/a (no perf)", 100 * $2 / cap, 100 * $3 / cap }
    else for (i = 10; i <= last; i++) printf " %5.1f", 100 * $i / cap
    printf " %5.1f\n", 100 * (cap - $2 - $3) / cap }' "$tmp/$name.line"
done

# The floor: each hand-off (an engine wake or a sync) at the host's price of
# one switch between two processes on one core (tests/bench/switch_cost.c,
# the cheaper of its futex and sched_yield figures), plus the application's
# own computation (the breakdown's app column): the wall time of a job whose
# ranks only ever handed the core to each other, with no engine, MPICH or
# layer of ours in between (docs/simulated-time.md, "What the goals need").
swc=$BUILD/bench/switch_cost
mkdir -p "$BUILD/bench"
[ "$swc" -nt tests/bench/switch_cost.c ] ||
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -o "$swc" tests/bench/switch_cost.c
sw=$("$swc") || { echo "  switch_cost: FAILED"; exit 1; }
sw_us=$(echo "$sw" | awk '{ f = $2; y = $5; print (y < f ? y : f) }')
echo "  host switch between two processes on one core: $sw (tests/bench/switch_cost.c)"
echo "  job        hand-offs   x ${sw_us} us    app s  floor s  wall/floor"
for name in wavefront multipart rowcol; do
  awk -v n="$name" -v sw="$sw_us" '{
    h = $7 + $NF; app = $10 == "n/a" ? 0 : $10; fl = h * sw * 1e-6 + app
    printf "  %-10s %9d %9.2f s %8s %8.2f %11.1f\n", n, h, h * sw * 1e-6, $10 == "n/a" ? "n/a" : sprintf("%.2f", app), fl,
           $1 / (fl > 0 ? fl : 1) }' "$tmp/$name.line"
done

# Why the engine woke the ranks, per MPI message: the message layer's
# hand-backs by reason (ML_BACK_*: a message's first packet, whose upcall is
# MPI's matching; a completion that is the rank's to run; the request the
# wait is for done; a control packet; other) and the wakes that were no
# hand-back (a rank blocked without handing its loop over). Simulated-state
# counts: the same in every run (the last run's).
echo "  why the engine woke the ranks, per message (BGLEMU_PROXY_STATS, ml-wait's hand-backs; the same every run):"
echo "  job        new-msg rx-done tx-done wait-done control   other  no-hand-back"
for name in wavefront multipart rowcol; do
  sed -n 's/.*ml-wait handed processors back [0-9]* times: \(.*\)$/\1/p' "$tmp/$name.out" | head -1 |
    awk -v n="$name" -v line="$(cat "$tmp/$name.line")" '{
      split(line, f, " "); msgs = f[6] > 0 ? f[6] : 1; wakes = f[7]
      # "N name" pairs, by the names ml_engine.c gives them
      nr = split($0, part, ", ")
      for (i = 1; i <= nr; i++) { c = part[i] + 0; sub(/^[0-9]+ /, "", part[i]); v[part[i]] = c; sum += c }
      printf "  %-10s %7.2f %7.2f %7.2f %9.2f %7.2f %7.2f %13.2f\n", n, v["a new message"] / msgs,
             v["a reception done"] / msgs, v["a send done"] / msgs, v["the wait'"'"'s request done"] / msgs,
             v["a control packet"] / msgs, v["other"] / msgs, (wakes - sum) / msgs }'
done

# The same three programs under SimGrid's SMPI, where it is installed (Debian
# libsimgrid-dev: smpicc, smpirun), one after the other on this host: the
# wall time issue 25 holds these jobs to. SMPI runs the 64 ranks as threads
# of one process on a 4x4x4 TORUS cluster of BG/L-like links (175 MB/s,
# 100 ns; only its simulated times depend on them) and, with
# smpi/simulate-computation:no, charges no simulated time for computation.
# The programs print the same checksum under both, or the row says so.
smpi_rows() {
  if ! command -v smpicc >/dev/null 2>&1 || ! command -v smpirun >/dev/null 2>&1; then
    echo "  SMPI: not installed (apt-get install libsimgrid-dev): no side-by-side rows"
    return 0
  fi
  local sdir=$BUILD/smpi p i
  mkdir -p "$sdir"
  cat >"$tmp/torus.xml" <<'XML'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="bgl" prefix="node-" suffix="" radical="0-63" speed="1Gf" bw="175MBps" lat="100ns"
             topology="TORUS" topo_parameters="4,4,4" loopback_bw="1GBps" loopback_lat="10ns"/>
  </zone>
</platform>
XML
  seq 0 63 | sed 's/^/node-/' >"$tmp/hosts"
  echo "  beside $(smpirun -version 2>&1 | head -1)'s SMPI (smpirun -np 64, 4x4x4 TORUS cluster, smpi/simulate-computation:no), median of $RUNS run(s):"
  [ "$have_perf" = 1 ] && echo "  (bglemu's wall is the rows' above, under perf record: BENCH_HANDOFF_PERF=0 for runs without it)"
  echo "  job        bglemu wall  SMPI wall  bglemu/SMPI"
  for p in wavefront multipart rowcol; do
    [ "$sdir/$p" -nt tests/mpi/$p.c ] ||
      smpicc -O2 -Itests/mpi -o "$sdir/$p" tests/mpi/$p.c >"$tmp/smpicc" 2>&1 || {
        sed 's/^/    /' "$tmp/smpicc" | tail -5; echo "  $p: smpicc FAILED"; return 1; }
    local args=(); [ "$p" = rowcol ] && args=(--iters 50)
    : >"$tmp/smpi.runs"
    for i in $(seq "$RUNS"); do
      /usr/bin/time -f '%e' -o "$tmp/stime" smpirun -np 64 -platform "$tmp/torus.xml" -hostfile "$tmp/hosts" \
        --cfg=smpi/simulate-computation:no --cfg=smpi/tmpdir:"$tmp" "$sdir/$p" "${args[@]}" >"$tmp/sout" 2>&1 || {
        grep -v INFO "$tmp/sout" | tail -5 | sed 's/^/    /'; echo "  $p under SMPI: FAILED"; return 1; }
      cat "$tmp/stime" >>"$tmp/smpi.runs"
    done
    local ours theirs same=""
    ours=$(sed -n 's/.*checksum \([^,]*\),.*/\1/p' "$tmp/$p.out" | head -1)
    theirs=$(sed -n 's/.*checksum \([^,]*\),.*/\1/p' "$tmp/sout" | head -1)
    [ -n "$ours" ] && [ "$ours" = "$theirs" ] || same="  (checksums differ: $ours, SMPI $theirs)"
    sort -n "$tmp/smpi.runs" | awk -v m=$(( (RUNS + 1) / 2 )) -v n="$p" -v w="$(cut -d' ' -f1 "$tmp/$p.line")" -v d="$same" \
      'NR == m { printf "  %-10s %9.1f s %8.1f s %10.1fx%s\n", n, w, $1, w / ($1 > 0 ? $1 : 1), d }'
  done
}
smpi_rows || exit 1

# hand-off latency: host us per 1-byte round trip, measured in the program
rtt() {
  local label=$1; shift
  : >"$tmp/rtt"
  local i
  for i in $(seq "$RUNS"); do
    mpirun -clock none "$@" "$out/handoff" --iters "${BENCH_HANDOFF_ITERS:-2000}" >"$tmp/out" 2>&1 || {
      tail -5 "$tmp/out" | sed 's/^/    /'; echo "  $label: FAILED"; return 1; }
    sed -n 's/.*host \([0-9.]*\) us per round trip.*/\1/p' "$tmp/out" >>"$tmp/rtt"
  done
  sort -n "$tmp/rtt" | awk -v m=$(( (RUNS + 1) / 2 )) -v l="$label" 'NR == m { printf "  hand-off 1 B round trip, %-40s %8.1f us\n", l ":", $1 }'
}
rtt "64 ranks 4x4x4, 62 in MPI_Barrier" -np 64 -shape 4x4x4 || exit 1
rtt "2 ranks 2x1x1 (two nodes)" -np 2 -shape 2x1x1 || exit 1
rtt "2 ranks VN 1x1x1 (node mates)" -np 2 -mode VN -shape 1x1x1 || exit 1
