#!/usr/bin/env bash
# mpirun --trace on an MPI program (docs/trace.md): the preloaded wrappers
# put every MPI call the program makes on its rank's track (counted per
# rank and name), the message-layer sends nest inside the MPI_Send that
# made them, flows pair sends and receptions, the trace follows the viewers'
# rules (trace_check.py); -clock none: the report and the program's output
# are the same with and without --trace, and four traced runs give the same
# file byte for byte. One "ok"/"not ok" line per check.
set -u
PREFIX=${PREFIX:-$PWD/install}
BUILD=${BUILD:-build}
export PATH="$PREFIX/bin:$PATH"
here=$(cd "$(dirname "$0")" && pwd)
check="python3 $here/../integration/trace_check.py"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
ok()  { echo "ok - $*"; }
bad() { echo "not ok - $*"; fails=$((fails + 1)); }
[ -r "$PREFIX/lib/libbglemu-trace.so" ] || { bad "$PREFIX/lib/libbglemu-trace.so not installed (make mpich)"; exit 1; }

cat >"$tmp/tr.c" <<'EOF'
/* 4 ranks: 0 -> 1 three blocking sends (one-packet, eager, rendezvous
 * sizes), 2 -> 3 one nonblocking pair, then four collectives. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    static char buf[100000], a2a[4 * 64], b2a[4 * 64];
    const int sizes[3] = {100, 2000, 100000};
    MPI_Request q;
    for (int i = 0; i < 3; i++) {
        if (r == 0) MPI_Send(buf, sizes[i], MPI_CHAR, 1, i, MPI_COMM_WORLD);
        if (r == 1) MPI_Recv(buf, sizes[i], MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (r == 2) MPI_Isend(buf, 5000, MPI_CHAR, 3, 9, MPI_COMM_WORLD, &q);
    if (r == 3) MPI_Irecv(buf, 5000, MPI_CHAR, 2, 9, MPI_COMM_WORLD, &q);
    if (r >= 2) MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(buf, 1024, MPI_CHAR, 0, MPI_COMM_WORLD);
    long v = r, s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Alltoall(a2a, 64, MPI_CHAR, b2a, 64, MPI_CHAR, MPI_COMM_WORLD);
    if (r == 0) printf("sum %ld at %.3f us\n", s, MPI_Wtime() * 1e6);
    MPI_Finalize();
    return s == (long)n * (n - 1) / 2 ? 0 : 1;
}
EOF
mpicc -O2 -Wall -Wextra -Werror -o "$tmp/tr" "$tmp/tr.c" || { bad "compile the traced program"; exit 1; }

args=(-np 4 -shape 2x2x1 -clock none)
mpirun "${args[@]}" --report "$tmp/t.json" --trace "$tmp/t.trace.json" "$tmp/tr" >"$tmp/t.out" 2>"$tmp/t.err" &&
  ok "traced MPI job exits 0" || bad "traced MPI job: $(tail -n 3 "$tmp/t.err")"
all="MPI_Barrier=1,MPI_Bcast=1,MPI_Allreduce=1,MPI_Alltoall=1"
mpi=""
for r in 0 1 2 3; do mpi="$mpi,$(echo "$all" | sed "s/MPI_/$r:MPI_/g")"; done
mpi="0:MPI_Send=3,1:MPI_Recv=3,2:MPI_Isend=1,2:MPI_Wait=1,3:MPI_Irecv=1,3:MPI_Wait=1$mpi"
if $check "$tmp/t.trace.json" --report "$tmp/t.json" --mpi "$mpi" >"$tmp/check.out"; then
  sed 's/^ok /ok - /' "$tmp/check.out"
else
  sed 's/^ok /ok - /; s/^not ok /not ok - /' "$tmp/check.out"; fails=$((fails + 1))
fi
python3 - "$tmp/t.trace.json" <<'EOF' && ok "each of rank 0's MPI_Send calls holds the message-layer send it made (to 1, its bytes), each MPI_Recv on rank 1 the reception" || bad "MPI calls do not hold their message-layer events"
import json, sys
d = json.load(open(sys.argv[1]))
xs = [e for e in d["traceEvents"] if e["ph"] == "X"]
def inside(outer, e):
    return e["pid"] == outer["pid"] and e["tid"] == outer["tid"] and outer["ts"] <= e["ts"] and \
        e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] and e is not outer
ok = True
for call, kind, key, peer in (("MPI_Send", "send ", "to", 1), ("MPI_Recv", "recv ", "from", 0)):
    calls = [e for e in xs if e["name"] == call]
    for c in calls:
        ml = [e for e in xs if e["cat"] == "ml" and e["name"].startswith(kind) and inside(c, e)]
        ok = ok and any(m["args"][key] == peer and m["args"]["bytes"] == c["args"]["bytes"] for m in ml)
sys.exit(0 if ok and len(xs) > 0 else 1)
EOF

# exactness and determinism
mpirun "${args[@]}" --report "$tmp/u.json" "$tmp/tr" >"$tmp/u.out" 2>/dev/null
cmp -s "$tmp/t.json" "$tmp/u.json" && cmp -s "$tmp/t.out" "$tmp/u.out" &&
  ok "-clock none: report and output identical with and without --trace" ||
  bad "--trace changed the report or the output"
# three more runs: which loops the engine takes over must not follow the
# host's timing (tsim_handoff.c adopt), and a lost race shows only now and then
same=1
for k in 2 3 4; do
  mpirun "${args[@]}" --trace "$tmp/t$k.trace.json" "$tmp/tr" >/dev/null 2>&1
  cmp -s "$tmp/t.trace.json" "$tmp/t$k.trace.json" || same=0
done
[ $same = 1 ] && ok "-clock none: the same trace byte for byte four times" ||
  bad "traced runs gave different files"
ls /dev/shm 2>/dev/null | grep -q "^bglemu\.$(id -u)\..*\.trace$" && bad "trace buffers left in /dev/shm" ||
  ok "no trace buffers left in /dev/shm"
exit $((fails > 0))
