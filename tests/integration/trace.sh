#!/usr/bin/env bash
# mpirun --trace (docs/trace.md): the timeline of message-layer programs is
# well formed by the rules viewers enforce (trace_check.py: slices nested
# per track, flows paired, counters numeric), holds exactly the messages
# the programs send (per rank, per protocol, flows joining the n-th send
# of a pair to its n-th reception), link counters that add up to the
# report's, the torus collectives; tracing changes no simulated number and
# the same job gives the same file byte for byte; --trace-ranks,
# --trace-window and --trace-max restrict it (a cut trace says so); OTF2
# reads back the same; a rank damaging its own trace region hurts only its
# records; bad options are one line before the job starts; nothing is left
# in /dev/shm.
# Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
here=$(cd "$(dirname "$0")" && pwd)
check="python3 $here/trace_check.py"
needs mpirun ml_pong coll_alltoall_ml tp_crash tp_trace_damage
trace_buffers() { ls /dev/shm 2>/dev/null | grep -c "^bglemu\.$(id -u)\..*\.trace$"; }
before=$(trace_buffers)

# 1. ping-pong: 5 round trips of 1000 bytes by eager, plus the warm-up one
mpirun -np 2 -shape 2x1x1 --report "$tmp/pp.json" --trace "$tmp/pp.trace.json" \
  ml_pong --protocol eager --size 1000 --iters 5 >"$tmp/pp.out" 2>"$tmp/pp.err" \
  || bad "traced ping-pong exits 0: $(tail -n 2 "$tmp/pp.err")"
$check "$tmp/pp.trace.json" --report "$tmp/pp.json" --sends 0=6,1=6 --recvs 0=6,1=6 \
  --blocked 0,1 || fails=$((fails + 1))
n=$(grep -c '"ph":"s"' "$tmp/pp.trace.json")
[ "$n" = 12 ] && ok "ping-pong: 12 message flows" || bad "ping-pong: $n flows, want 12"
grep -q '"name":"send eager 1000 B to 1"' "$tmp/pp.trace.json" &&
  ok "ping-pong: sends named by protocol, size and peer" || bad "ping-pong: no 'send eager 1000 B to 1' slice"

# 2. tracing changes nothing, and is deterministic
mpirun -np 2 -shape 2x1x1 --report "$tmp/pp0.json" ml_pong --protocol eager --size 1000 --iters 5 \
  >"$tmp/pp0.out" 2>/dev/null
cmp -s "$tmp/pp.json" "$tmp/pp0.json" && cmp -s "$tmp/pp.out" "$tmp/pp0.out" &&
  ok "ping-pong: report and output identical with and without --trace" ||
  bad "ping-pong: --trace changed the report or the output"
mpirun -np 2 -shape 2x1x1 --trace "$tmp/pp2.trace.json" ml_pong --protocol eager --size 1000 --iters 5 \
  >/dev/null 2>&1
cmp -s "$tmp/pp.trace.json" "$tmp/pp2.trace.json" && ok "ping-pong: the same trace byte for byte twice" ||
  bad "ping-pong: two runs gave different traces"

# 3. every protocol, with the coprocessor receiving rendezvous data
mpirun -np 2 -shape 2x1x1 --report "$tmp/all.json" --trace "$tmp/all.trace.json" \
  ml_pong --size 4000 >/dev/null 2>"$tmp/all.err" || bad "ml_pong every protocol exits 0"
$check "$tmp/all.trace.json" --report "$tmp/all.json" || fails=$((fails + 1))

# 4. the torus alltoall on 16 ranks: 4 sizes (1, 4, 16, 64 B), one instance each
mpirun -np 16 -shape 4x2x2 --report "$tmp/a2a.json" --trace "$tmp/a2a.trace.json" \
  coll_alltoall_ml --algo torus --max 64 >"$tmp/a2a.out" 2>"$tmp/a2a.err" ||
  bad "alltoall exits 0: $(tail -n 2 "$tmp/a2a.err")"
ninst=$(grep -c '^torus ' "$tmp/a2a.out")
$check "$tmp/a2a.trace.json" --report "$tmp/a2a.json" --colls "$ninst" || fails=$((fails + 1))
n=$(grep -c '"name":"torus alltoall"' "$tmp/a2a.trace.json")
[ "$ninst" = 4 ] && [ "$n" = 64 ] && ok "alltoall: each of the 16 ranks shows the 4 torus alltoalls" ||
  bad "alltoall: $n per-rank alltoall slices for $ninst sizes, want 64 for 4"

# 4b. the collective network and the global interrupt: every rank's tree
# collectives and barriers, one instance each on the collectives track
if command -v coll_tree_ml >/dev/null; then
  mpirun -np 8 -shape 2x2x2 --report "$tmp/tree.json" --trace "$tmp/tree.trace.json" \
    coll_tree_ml --max 64 >/dev/null 2>"$tmp/tree.err" || bad "coll_tree_ml exits 0: $(tail -n 2 "$tmp/tree.err")"
  $check "$tmp/tree.trace.json" --report "$tmp/tree.json" >/dev/null || bad "tree trace well formed"
  python3 - "$tmp/tree.trace.json" <<'PY' && ok "tree collectives and barriers: the same count on each of the 8 ranks, one instance of each on the collectives track" || bad "tree collectives on the timeline"
import json, sys, collections
d = json.load(open(sys.argv[1]))
per = collections.Counter(); inst = collections.Counter()
for e in d["traceEvents"]:
    if e["ph"] == "X" and e["cat"] == "coll":
        if " (group " in e["name"]:
            inst[e["name"].split(" (group ")[0]] += 1
        else:
            per[(e["pid"], e["name"])] += 1
names = {"tree allreduce", "tree broadcast", "global interrupt barrier"}
ok = all(inst[n] > 0 for n in names)
for n in names:
    counts = {per[(r + 1, n)] for r in range(8)}
    ok = ok and counts == {inst[n]}
print("# instances:", dict(inst))
sys.exit(0 if ok else 1)
PY
fi

# 5. restrictions: two ranks of four, a window, a bound
mpirun -np 4 -shape 4x1x1 --trace "$tmp/r.trace.json" --trace-ranks 0,2-2 \
  coll_alltoall_ml --algo torus --max 64 >/dev/null 2>&1 || bad "--trace-ranks job exits 0"
$check "$tmp/r.trace.json" --ranks 0,2 || fails=$((fails + 1))
mpirun -np 2 -shape 2x1x1 --trace "$tmp/w.trace.json" --trace-window 20000:40000 \
  ml_pong --protocol eager --size 1000 --iters 5 >/dev/null 2>&1 || bad "--trace-window job exits 0"
$check "$tmp/w.trace.json" >/dev/null || bad "windowed trace well formed"
python3 - "$tmp/w.trace.json" <<'EOF' && ok "--trace-window 20000:40000: every slice and sample overlaps the window" || bad "--trace-window: events outside the window"
import json, sys
d = json.load(open(sys.argv[1]))
xs = [e for e in d["traceEvents"] if e["ph"] == "X"]
cs = [e for e in d["traceEvents"] if e["ph"] == "C"]
ok = xs and all(e["args"]["end_cycles"] >= 20000 and e["args"]["cycles"] <= 40000 for e in xs)
ok = ok and all(e["ts"] * 700 <= 40000 + 1 for e in cs)
sys.exit(0 if ok else 1)
EOF
mpirun -np 16 -shape 4x2x2 --trace "$tmp/m.trace.json" --trace-max 300 \
  coll_alltoall_ml --algo torus --max 64 >/dev/null 2>"$tmp/m.err" || bad "--trace-max job exits 0"
grep -q "^mpirun: --trace .*: cut to the first 300 events" "$tmp/m.err" &&
  ok "--trace-max 300: a warning line says the trace was cut" || bad "--trace-max: no warning line: $(cat "$tmp/m.err" | tail -n 2)"
$check "$tmp/m.trace.json" --cut >/dev/null && ok "--trace-max 300: the cut trace is still well formed and says so" ||
  bad "--trace-max 300: cut trace malformed"
n=$(grep '"ph":"X"' "$tmp/m.trace.json" | grep -vc '(group ')
[ "$n" = 300 ] && ok "--trace-max 300: the ranks' first 300 slices written" || bad "--trace-max 300: $n slices"

# 6. bad options: one line, exit 2, nothing started
t() { # t WANT-REGEX ARGS...
  local want=$1; shift
  out=$(mpirun "$@" 2>&1); rc=$?
  if [ $rc = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ $out =~ $want ]]; then ok "bad input: $out"
  else bad "bad input '$*': exit $rc, output: $out"; fi
}
t "^mpirun: --trace $tmp/no/such/dir/t.json: cannot open: " -np 2 --trace "$tmp/no/such/dir/t.json" ml_pong
t "^mpirun: --trace-ranks '5': rank 5 is not in 0..1" -np 2 --trace "$tmp/x.json" --trace-ranks 5 ml_pong
t "^mpirun: --trace-ranks 'x': " -np 2 --trace "$tmp/x.json" --trace-ranks x ml_pong
t "^mpirun: --trace-window '5:3': FROM is after TO" -np 2 --trace "$tmp/x.json" --trace-window 5:3 ml_pong
t "^mpirun: --trace-window '12': want FROM:TO" -np 2 --trace "$tmp/x.json" --trace-window 12 ml_pong
t "^mpirun: --trace-ranks and --trace-window need --trace" -np 2 --trace-ranks 0 ml_pong
t "^mpirun: --trace-max '0': want an integer" -np 2 --trace "$tmp/x.json" --trace-max 0 ml_pong

# 7. OTF2 (when mpirun was built with libotf2): the same slices and messages
if mpirun --help | grep -q 'FILE.otf2'; then
  mpirun -np 2 -shape 2x1x1 --trace "$tmp/pp.otf2" ml_pong --protocol eager --size 1000 --iters 5 \
    >/dev/null 2>"$tmp/otf2.err" || bad "OTF2 job exits 0: $(tail -n 2 "$tmp/otf2.err")"
  if command -v otf2-print >/dev/null; then
  otf2-print "$tmp/pp.otf2" >"$tmp/otf2.txt" 2>"$tmp/otf2.warn" || bad "otf2-print reads the archive"
  [ -s "$tmp/otf2.warn" ] && bad "otf2-print warns: $(head -n 1 "$tmp/otf2.warn")"
  e=$(grep -c '^ENTER ' "$tmp/otf2.txt"); l=$(grep -c '^LEAVE ' "$tmp/otf2.txt")
  s=$(grep -c '^MPI_SEND ' "$tmp/otf2.txt"); r=$(grep -c '^MPI_RECV ' "$tmp/otf2.txt")
  x=$(grep -c '"ph":"X"' "$tmp/pp.trace.json")
  [ "$e" = "$x" ] && [ "$l" = "$x" ] && [ "$s" = 12 ] && [ "$r" = 12 ] &&
    ok "OTF2: otf2-print reads $e ENTER/LEAVE pairs (the JSON's $x slices), 12 MPI_SEND and 12 MPI_RECV" ||
    bad "OTF2: $e ENTER, $l LEAVE (want $x), $s MPI_SEND, $r MPI_RECV (want 12)"
  else
    bad "OTF2: otf2-print not installed (Debian's otf2-tools: make deps)"
  fi
  mkdir -p "$tmp/o2"
  mpirun -np 2 -shape 2x1x1 --trace "$tmp/o2/pp.otf2" ml_pong --protocol eager --size 1000 --iters 5 \
    >/dev/null 2>&1
  diff -r "$tmp/pp" "$tmp/o2/pp" >/dev/null && cmp -s "$tmp/pp.def" "$tmp/o2/pp.def" &&
    ok "OTF2: definitions and events the same byte for byte twice (the anchor's trace id is libotf2's)" ||
    bad "OTF2: two runs gave different definitions or events"
  t "^mpirun: --trace $tmp/pp.otf2: $tmp/pp.otf2 exists" -np 2 --trace "$tmp/pp.otf2" ml_pong
else
  t "^mpirun: --trace $tmp/x.otf2: OTF2 output is not available" -np 2 --trace "$tmp/x.otf2" ml_pong
fi

# 8. a rank that damages its own trace region: mpirun reads no more than it
# gave, keeps the one valid record, leaves the rest out and says so
mpirun -np 2 --trace "$tmp/dmg.trace.json" --trace-max 100 tp_trace_damage >/dev/null 2>"$tmp/dmg.err"
rc=$?
n=$(grep -c '"ph":"X"' "$tmp/dmg.trace.json" 2>/dev/null)
[ $rc = 0 ] && [ "$n" = 1 ] && grep -q "^mpirun: --trace .*: 99 damaged records left out$" "$tmp/dmg.err" &&
  $check "$tmp/dmg.trace.json" >/dev/null &&
  ok "damaged trace region (count and capacity huge, bad records): exit 0, 1 valid slice kept, '99 damaged records left out'" ||
  bad "damaged trace region: exit $rc, $n slices, $(grep trace "$tmp/dmg.err")"

# 9. a crashing rank: the trace is written, its buffers removed
mpirun -np 4 --trace "$tmp/crash.trace.json" tp_crash >/dev/null 2>&1
[ $? = 1 ] && $check "$tmp/crash.trace.json" >/dev/null && ok "crashed job: exit 1, trace still written and well formed" ||
  bad "crashed job: trace missing or malformed"
after=$(trace_buffers)
[ "$after" = "$before" ] && ok "no trace buffers left in /dev/shm" || bad "trace buffers left in /dev/shm: $(ls /dev/shm | grep trace)"
finish
