#!/usr/bin/env bash
# mpirun end to end: every bad option and mapping file gives one line naming
# the file, line and reason and a non-zero exit; good runs in CO and VN with
# orders and files; cleanup after a crashing rank, SIGINT, SIGKILL, a fatal
# signal in mpirun itself and an explicit --timeout (none by default); the
# deadlock report; reports identical run after run.
# Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
MAPS=${MAPS:-$PWD/mapfiles}
needs mpirun tp_pingpong

# Runs mpirun in the background (so we know its pid), waits, and checks
# that nothing named after this job is left in /dev/shm and no rank lives.
# Sets rc, out (stdout+stderr), pid.
run() {
  "$@" >"$tmp/out" 2>&1 &
  pid=$!
  wait $pid; rc=$?
  out=$(cat "$tmp/out")
}
# Waits (up to 20 s) until mpirun $1 runs $2 ranks that have all attached
# (the shm name is unlinked then), so a signal hits a job in full flight.
started() {
  for _ in $(seq 200); do
    if [ "$(pgrep -P "$1" | wc -l)" -eq "$2" ] &&
       ! ls /dev/shm 2>/dev/null | grep -q "^bglemu\.$(id -u)\.$1\."; then return 0; fi
    sleep 0.1
  done
  return 1
}

# usage_error NAME EXPECTED-SUBSTRING mpirun-args...: exit 2, one line.
usage_error() {
  local what=$1 want=$2; shift 2
  run mpirun "$@"
  local lines; lines=$(printf '%s\n' "$out" | grep -c .)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$out" == "mpirun: "*"$want"* ]] &&
     [ -z "$(leftovers $pid)" ]; then
    ok "$what: exit 2, one line: $out"
  else
    bad "$what: exit $rc, wanted 2 and one line containing '$want'; got: $out"
  fi
}

# ---- --help -----------------------------------------------------------------
mpirun --help >"$tmp/help" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^usage: mpirun -np N' "$tmp/help" && grep -q -- '-mapfile' "$tmp/help"; then
  ok "--help prints usage and exits 0"
else
  bad "--help (exit $rc)"
fi
# no wall-clock limit unless asked (issue 25): the --timeout entry, with its
# continuation lines, says the default is none and names no number of seconds
to_help=$(sed -n '/^  --timeout /,/^  --[a-z]/p' "$tmp/help" | sed '$d')
if grep -q 'default none' <<<"$to_help" && ! grep -q 'default [0-9]' <<<"$to_help"; then
  ok "--help: --timeout has no default limit: $(tr -s ' \n' ' ' <<<"$to_help")"
else
  bad "--help: --timeout's default is not none: $to_help"
fi

# ---- bad options ------------------------------------------------------------
usage_error "no -np"            "-np N is required"               tp_pingpong
usage_error "-np 0"             "-np '0': want an integer"        -np 0 tp_pingpong
usage_error "-np abc"           "-np 'abc': want an integer"      -np abc tp_pingpong
usage_error "-mode XX"          "-mode 'XX': want CO or VN"       -np 2 -mode XX tp_pingpong
usage_error "-shape 2x2"        "-shape '2x2': want XxYxZ"        -np 2 -shape 2x2 tp_pingpong
usage_error "-shape 0x1x1"      "each side must be 1..64"         -np 2 -shape 0x1x1 tp_pingpong
usage_error "-shape 2x2x2junk"  "want XxYxZ"                      -np 2 -shape 2x2x2junk tp_pingpong
usage_error "-connect RING"     "-connect 'RING': want TORUS or MESH" -np 2 -connect RING tp_pingpong
usage_error "-connect two dims" "-connect 'TORUS,MESH': want TORUS or MESH, or one per dimension" -np 2 -connect TORUS,MESH tp_pingpong
usage_error "-connect empty dim" "-connect 'TORUS,,MESH'"            -np 2 -connect TORUS,,MESH tp_pingpong
usage_error "-connect bad dim"  "-connect 'TORUS,MESH,RING'"         -np 2 -connect TORUS,MESH,RING tp_pingpong
usage_error "unknown option"    "unknown option '-frobnicate'"    -np 2 -frobnicate tp_pingpong
usage_error "missing value"     "option -mode needs a value"      -np 2 -mode
usage_error "-env without ="    "-env 'FOO': want NAME=VALUE"     -np 2 -env FOO tp_pingpong
usage_error "-p unknown"        "-p bogus=1:"                     -np 2 -p bogus=1 tp_pingpong
usage_error "--params missing"  "nope.params"                     -np 2 --params "$tmp/nope.params" tp_pingpong
printf 'hop_latency = 10\nthis is not a parameter\n' >"$tmp/bad.params"
usage_error "--params bad line" "bad.params:2"                    -np 2 --params "$tmp/bad.params" tp_pingpong
usage_error "--timeout -1"      "--timeout '-1'"                  -np 2 --timeout -1 tp_pingpong
usage_error "no program"        "no PROGRAM to run"               -np 2
usage_error "program not found" "no_such_prog_xyz: command not found" -np 2 no_such_prog_xyz
usage_error "program not executable" "not an executable file"     -np 2 "$MAPS/README.md"
usage_error "-np beyond shape"  "-np 9 does not fit -shape 2x2x2 in CO mode (8 processors)" -np 9 -shape 2x2x2 tp_pingpong
usage_error "-np beyond VN shape" "-np 17 does not fit -shape 2x2x2 in VN mode (16 processors)" -np 17 -mode VN -shape 2x2x2 tp_pingpong
usage_error "--heatmap unwritable" "--heatmap $tmp/no/dir/h.txt: cannot open" -np 2 --heatmap "$tmp/no/dir/h.txt" tp_pingpong
usage_error "--progress x"      "--progress 'x': want an integer" -np 2 --progress x tp_pingpong
usage_error "--report unwritable" "--report $tmp/no/dir/r.json: cannot open" -np 2 --report "$tmp/no/dir/r.json" tp_pingpong

# ---- bad mapping files: FILE:LINE: reason -----------------------------------
badmap() { # name, file content, expected "LINE: reason", mpirun args before PROGRAM
  local what=$1 content=$2 want=$3; shift 3
  printf '%b' "$content" >"$tmp/$what.map"
  usage_error "mapfile $what" "$tmp/$what.map:$want" -mapfile "$tmp/$what.map" "$@" tp_pingpong
}
badmap too-few     '0 0 0 0\n1 0 0 0\n'                '2: too few lines: 2 ranks mapped, -np 4 needs 4' -np 4 -shape 2x2x1
badmap too-many    '0 0 0 0\n1 0 0 0\n# x\n0 1 0 0\n'  '4: too many lines' -np 2 -shape 2x2x1
badmap outside-x   '0 0 0 0\n2 0 0 0\n'                '2: x=2 outside the shape 2x2x2 (x must be 0..1)' -np 2 -shape 2x2x2
badmap outside-z   '0 0 5 0\n1 0 0 0\n'                '1: z=5 outside the shape 2x2x2' -np 2 -shape 2x2x2
badmap negative    '0 0 0 0\n0 -1 0 0\n'               '2: y=-1 outside the shape' -np 2 -shape 2x2x2
badmap duplicate   '0 0 0 0\n\n1 0 0 0\n1 0 0 0\n'     '4: duplicate <1,0,0,0>, already rank 1 on line 3' -np 3 -shape 2x2x2
badmap t-co        '0 0 0 0\n0 0 0 1\n'                '2: t=1 out of range for CO mode (t must be 0)' -np 2 -shape 2x2x2
badmap t-vn        '0 0 0 1\n0 0 0 2\n'                '2: t=2 out of range for VN mode (t must be 0 or 1)' -np 2 -mode VN -shape 2x2x2
badmap not-number  '0 0 0 0\n1 a 0 0\n'                "2: y coordinate 'a' is not a number" -np 2 -shape 2x2x2
badmap few-fields  '0 0 0 0\n1 0 0\n'                  "2: expected 4 numbers 'x y z t', found 3" -np 2 -shape 2x2x2
badmap junk        '0 0 0 0\n1 0 0 0 junk\n'           "2: unexpected 'junk' after 'x y z t'" -np 2 -shape 2x2x2
badmap trailing-nr '0 0 0 0 # ok\n1 0 0 0x\n'          "2: t coordinate '0x' is not a number" -np 2 -shape 2x2x2
usage_error "mapfile missing" "$tmp/none.map: cannot open mapping file" -np 2 -mapfile "$tmp/none.map" tp_pingpong
usage_error "bad order XXYZ" "mapping order 'XXYZ': not a permutation of X, Y, Z and T" -np 2 -mapfile XXYZ tp_pingpong
usage_error "bad order XYZ"  "mapping order 'XYZ'" -np 2 -mapfile XYZ tp_pingpong

# ---- good runs --------------------------------------------------------------
good() { # what, mpirun args...
  local what=$1; shift
  run mpirun "$@"
  if [ "$rc" -eq 0 ] && grep -q '^tp_pingpong: .* cycles per half round trip' <<<"$out" &&
     grep -q '^mpirun: simulated time [0-9]* cycles = .* us at 700 MHz' <<<"$out" &&
     [ -z "$(leftovers $pid)" ]; then
    ok "$what: ping-pong data checked, report printed, nothing left"
  else
    bad "$what: exit $rc: $out"
  fi
}
good "2 ranks default shape"             -np 2 tp_pingpong 50
good "8 ranks 2x2x2 XYZT file"           -np 8 -shape 2x2x2 -mapfile "$MAPS/xyzt-2x2x2.map" tp_pingpong 20 240
good "16 ranks VN TXYZ file"             -np 16 -mode VN -shape 2x2x2 -mapfile "$MAPS/txyz-2x2x2-vn.map" tp_pingpong 20
good "64 ranks grid2d on 4x4x4"          -np 64 -shape 4x4x4 -mapfile "$MAPS/grid2d-8x8-on-4x4x4.map" tp_pingpong 5
good "mesh, order ZYXT, -p"              -np 4 -shape 2x2x1 -connect MESH -mapfile zyxt -p hop_latency=100 tp_pingpong 10
printf 'hop_latency = 32\n' >"$tmp/ok.params"
good "--params file"                     -np 2 --params "$tmp/ok.params" tp_pingpong 10

# heatmap and progress lines
run mpirun -np 8 -shape 2x2x2 --heatmap "$tmp/heat.txt" tp_pingpong 10
if [ "$rc" -eq 0 ] && grep -q '^link utilization' "$tmp/heat.txt" && grep -q '^mean by direction: x+ [1-9]' "$tmp/heat.txt"; then
  ok "--heatmap FILE: link utilization written, x+ links busy"
else
  bad "--heatmap: exit $rc: $out $(cat "$tmp/heat.txt" 2>/dev/null)"
fi
run mpirun -np 2 --progress 1 tp_idle 1.6
if [ "$rc" -eq 0 ] && grep -q '^bglemu: 1 s: simulated' <<<"$out"; then
  ok "--progress 1: a progress line after one second"
else
  bad "--progress: exit $rc: $out"
fi

# the order decides placement: ranks 0 and 1 one hop apart (XYZT) or on one node (TXYZ)
mpirun -np 4 -mode VN -shape 2x1x1 -mapfile XYZT --report "$tmp/x.json" tp_pingpong 10 >/dev/null 2>&1
mpirun -np 4 -mode VN -shape 2x1x1 -mapfile TXYZ --report "$tmp/t.json" tp_pingpong 10 >/dev/null 2>&1
hx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["packet_hops"])' "$tmp/x.json" 2>/dev/null)
ht=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["packet_hops"])' "$tmp/t.json" 2>/dev/null)
if [ "${hx:-0}" -gt 0 ] && [ "${ht:-1}" -eq 0 ]; then
  ok "XYZT puts ranks 0,1 on two nodes ($hx packet-hops), TXYZ on one node (0 hops)"
else
  bad "placement by order: XYZT $hx hops, TXYZ $ht hops"
fi

# -connect per dimension: ranks 0 and 1 at x=0 and x=3 of 4x2x1 are one hop
# apart when x wraps, three when x is a mesh line (y's setting is irrelevant)
printf '0 0 0 0\n3 0 0 0\n' >"$tmp/ends.map"
mpirun -np 2 -shape 4x2x1 -connect TORUS,MESH,TORUS -mapfile "$tmp/ends.map" --report "$tmp/tm.json" tp_pingpong 10 >"$tmp/tm.out" 2>&1
mpirun -np 2 -shape 4x2x1 -connect MESH,TORUS,TORUS -mapfile "$tmp/ends.map" --report "$tmp/mt.json" tp_pingpong 10 >/dev/null 2>&1
hops() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["result"]["packet_hops"], r["result"]["packets_delivered"], "".join(map(str, r["machine"]["torus"])))' "$1" 2>/dev/null; }
read -r htm ptm ttm <<<"$(hops "$tmp/tm.json")"
read -r hmt pmt tmt <<<"$(hops "$tmp/mt.json")"
if [ "${ptm:-0}" -gt 0 ] && [ "$htm" -eq "$ptm" ] && [ "${hmt:-0}" -eq $((3 * ${pmt:-0})) ] &&
   [ "$ttm" = 101 ] && [ "$tmt" = 011 ] && grep -q 'on 4x2x1 torus,mesh,torus, CO mode' "$tmp/tm.out"; then
  ok "-connect per dimension: x torus 1 hop per packet, x mesh 3 hops; report shows torus=$ttm/$tmt"
else
  bad "-connect per dimension: TORUS,MESH,TORUS $htm hops/$ptm pkts torus=$ttm, MESH,TORUS,TORUS $hmt hops/$pmt pkts torus=$tmt: $(cat "$tmp/tm.out")"
fi

# the grid mapping really makes grid neighbours torus neighbours: rank r and r+1
# in one row, r and r+8 in one column
python3 - "$MAPS/grid2d-8x8-on-4x4x4.map" >"$tmp/grid" <<'EOF'
import sys
pos = [tuple(map(int, l.split('#')[0].split())) for l in open(sys.argv[1]) if l.split('#')[0].strip()]
d = lambda a, b: sum(min(abs(p - q) % 4, 4 - abs(p - q) % 4) for p, q in zip(a[:3], b[:3]))
worst = max(d(pos[i + 8 * j], pos[(i + di) % 8 + 8 * ((j + dj) % 8)])
            for i in range(8) for j in range(8) for di, dj in ((1, 0), (0, 1)))
print(len(pos), worst)
EOF
if [ "$(cat "$tmp/grid")" = "64 1" ]; then
  ok "grid2d-8x8-on-4x4x4.map: 64 ranks, every grid neighbour (wrap included) 1 hop away"
else
  bad "grid2d mapping: $(cat "$tmp/grid")"
fi

# environment: the ranks see the job and -env values (a plain program works too)
run mpirun -np 3 -env FOO=bar -env FOO=baz -env EMPTY= sh -c 'echo "r=$BGLEMU_RANK n=$BGLEMU_NRANKS m=$BGLMPI_MAPPING foo=$FOO e=[$EMPTY] seg=${BGLEMU_SEG:+set}"'
if [ "$rc" -eq 0 ] && [ "$(grep -c '^r=[0-2] n=3 m=XYZT foo=baz e=\[\] seg=set$' <<<"$out")" -eq 3 ]; then
  ok "ranks get BGLEMU_RANK/NRANKS/SEG, BGLMPI_MAPPING and -env (last wins)"
else
  bad "rank environment: $out"
fi

# a rank that exits 0 without pl_close does not hold the job
run mpirun -np 4 tp_idle --no-close 0.1
if [ "$rc" -eq 0 ] && [ -z "$(leftovers $pid)" ]; then ok "ranks exiting 0 without pl_close: job ends, exit 0"
else bad "exit without pl_close: exit $rc: $out"; fi

# a rank exiting non-zero fails the job and is named
run env BGLEMU_IDLE_RANK=2 mpirun -np 4 tp_idle 0 5
if [ "$rc" -eq 1 ] && grep -q '^mpirun: job failed: rank 2 <0,1,0,0> (pid [0-9]*) exited with status 5$' <<<"$out"; then
  ok "rank 2 exiting 5: exit 1, the rank and its status named"
else
  bad "non-zero rank: exit $rc: $out"
fi

# ---- determinism at the process level ---------------------------------------
mpirun -np 8 -shape 2x2x2 --report "$tmp/a.json" tp_pingpong 200 100 >"$tmp/a.out" 2>/dev/null; ra=$?
mpirun -np 8 -shape 2x2x2 --report "$tmp/b.json" tp_pingpong 200 100 >"$tmp/b.out" 2>/dev/null; rb=$?
if [ $ra -eq 0 ] && [ $rb -eq 0 ] && cmp -s "$tmp/a.json" "$tmp/b.json" && cmp -s "$tmp/a.out" "$tmp/b.out" &&
   python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/a.json"; then
  ok "ping-pong job twice: identical JSON reports and output (valid JSON)"
else
  bad "ping-pong twice: reports differ or failed (exit $ra/$rb)"; diff "$tmp/a.json" "$tmp/b.json" | head -5
fi

# ---- crash cleanup ----------------------------------------------------------
run mpirun -np 4 tp_crash 1
if [ "$rc" -ne 0 ] && grep -q '^mpirun: job failed: rank 1 <1,0,0,0> (pid [0-9]*) was killed by signal 9' <<<"$out" &&
   [ -z "$(leftovers $pid)" ]; then
  ok "a rank SIGKILLs itself: exit $rc, rank and signal named, no /dev/shm leftovers, no rank left"
else
  bad "crash: exit $rc, leftovers '$(leftovers $pid)': $out"
fi
run mpirun -np 4 tp_crash 3 segv
if [ "$rc" -eq 1 ] &&
   grep -q '^mpirun: job failed: rank 3 <1,1,0,0> (pid [0-9]*) was killed by signal 11 (Segmentation fault)$' <<<"$out" &&
   [ -z "$(leftovers $pid)" ]; then
  ok "a rank writes through NULL: exit 1, rank 3 and SIGSEGV named, no leftovers"
else
  bad "segv crash: exit $rc, leftovers '$(leftovers $pid)': $out"
fi

# ---- a rank damaging its injection FIFO (issue 15: validate at the boundary) --
# Written straight into the ring, as a stray write would: the engine refuses
# it before use, and mpirun names the rank and the damage, at once.
for c in "chunks0:packet of 0 chunks at slot 0" "chunks9:packet of 201 chunks at slot 0" \
         "dst:packet to <255,255,255>, outside the 2x2x1 machine, at slot 0" \
         "flags:packet with unknown flags 0x80 at slot 0" "group:packet for reception group 7 at slot 0" \
         "head:head 100000 is 100000 slots past the engine's cursor 0 (a ring holds 32)" \
         "back:head 4294967293 moved 3 slots back, behind the engine's cursor 0" \
         "past:packet injected at 5 cycles, before the 10000 already simulated, at slot 0"; do
  what=${c%%:*}; want=${c#*:}
  t0=$(date +%s)
  run mpirun --timeout 60 -np 4 tp_corrupt 1 "$what"
  secs=$(( $(date +%s) - t0 ))
  if [ "$rc" -eq 1 ] && [ "$secs" -lt 20 ] &&
     grep -qxF "mpirun: job failed: rank 1 <1,0,0,0> (pid $(sed -n 's/.*rank 1 <1,0,0,0> (pid \([0-9]*\)).*/\1/p' <<<"$out" | head -1)) corrupted its injection FIFO 0: $want" <<<"$out" &&
     [ -z "$(leftovers $pid)" ]; then
    ok "rank 1 writes a bad $what into its injection FIFO: named with the damage, exit 1, ${secs} s, nothing left"
  else
    bad "corrupt $what: exit $rc, ${secs} s, leftovers '$(leftovers $pid)': $out"
  fi
done

# ---- signals to mpirun ------------------------------------------------------
sigtest() { # signal, expected exit
  local sig=$1 want=$2
  mpirun -np 3 tp_idle 60 >"$tmp/out" 2>&1 &
  pid=$!
  started $pid 3
  kill -"$sig" $pid
  wait $pid; rc=$?
  sleep 0.2
  local left; left=$(leftovers $pid; pgrep -f 'tp_idle 60' | xargs -r ps -o ppid= -p | grep -w "$pid")
  if [ "$rc" -eq "$want" ] && [ -z "$left" ]; then
    ok "SIG$sig to mpirun: exit $rc, no /dev/shm leftovers, ranks gone"
  else
    bad "SIG$sig to mpirun: exit $rc (want $want), leftovers '$left': $(cat "$tmp/out")"
  fi
}
sigtest INT 130
sigtest TERM 143
# SIGKILL cannot be handled: the name is already unlinked once ranks attached,
# and the ranks die with their parent (PR_SET_PDEATHSIG)
mpirun -np 3 tp_idle 60 >/dev/null 2>&1 &
pid=$!
started $pid 3
kids=$(pgrep -P $pid | tr '\n' ' ')
kill -KILL $pid; wait $pid 2>/dev/null
sleep 0.3
alive=""  # a zombie (Z) is dead: init may be slow to reap it
for k in $kids; do st=$(ps -o stat= -p "$k" 2>/dev/null); [ -n "$st" ] && [[ "$st" != Z* ]] && alive="$alive $k"; done
if [ -n "$kids" ] && [ -z "$alive" ] && [ -z "$(ls /dev/shm | grep "^bglemu\.$(id -u)\.$pid\.")" ]; then
  ok "SIGKILL to mpirun: ranks die with it, nothing left in /dev/shm"
else
  bad "SIGKILL to mpirun: ranks '$kids' alive '$alive'"
  for k in $alive; do kill -KILL "$k"; done
fi

# A fatal signal in mpirun itself (the engine's abort() on a broken
# invariant, a crash) before the ranks attached: the names are removed
# all the same (adi3-device/mpirun/mpirun_fatal.c), with the signal's own
# exit status. The ranks here never attach (sleep is no MPI program), so
# without that nothing would remove the segment's or the trace's name.
for sig in ABRT SEGV; do
  for tr in "" "--trace $tmp/fatal.json"; do
    mpirun -np 2 -shape 2x1x1 $tr /bin/sleep 30 >/dev/null 2>&1 &
    pid=$!
    named=0
    for _ in $(seq 100); do
      named=$(ls /dev/shm | grep -c "^bglemu\.$(id -u)\.$pid\.")
      [ "$named" -eq $([ -n "$tr" ] && echo 2 || echo 1) ] && [ "$(pgrep -P $pid | wc -l)" -eq 2 ] && break
      sleep 0.1
    done
    kill -$sig $pid; wait $pid; rc=$?
    sleep 0.2
    left=$(ls /dev/shm | grep "^bglemu\.$(id -u)\.$pid\.")
    want=$((128 + $(kill -l $sig)))
    if [ "$named" -ge 1 ] && [ "$rc" -eq "$want" ] && [ -z "$left" ]; then
      ok "SIG$sig in mpirun ${tr:+with --trace }before the ranks attached: exit $rc, its $named shm name(s) removed"
    else
      bad "SIG$sig in mpirun ${tr:+with --trace }: exit $rc (want $want), named $named, left '$left'"
    fi
  done
done

# ---- timeout: only when asked -----------------------------------------------
# an explicit --timeout still kills a job that runs too long, at once
t0=$(date +%s)
run mpirun -np 2 --timeout 1 tp_idle 60
secs=$(( $(date +%s) - t0 ))
if [ "$rc" -eq 124 ] && [ "$secs" -lt 10 ] &&
   grep -q '^mpirun: timeout after 1 s: killing the job$' <<<"$out" &&
   grep -q '^mpirun: job killed: wall-clock timeout of 1 s$' <<<"$out" && [ -z "$(leftovers $pid)" ]; then
  ok "--timeout 1 on a 60 s job: killed after ${secs} s, exit 124, nothing left"
else
  bad "timeout: exit $rc after ${secs} s: $out"
fi
# 0 is no limit, not a deadline of now; nor is the default a limit: jobs
# longer than the 1 s above run to their end
run mpirun -np 2 --timeout 0 tp_idle 1.5
rc0=$rc; out0=$out
run mpirun -np 2 tp_idle 1.5
if [ "$rc0" -eq 0 ] && [ "$rc" -eq 0 ] && ! grep -q 'timeout' <<<"$out0$out"; then
  ok "--timeout 0 and no --timeout: a 1.5 s job runs to its end, exit 0"
else
  bad "no timeout: exit $rc0 / $rc: $out0 $out"
fi

# ---- the ranks' core watched (torus-sim/tsim_watch.h) -------------------------
# BGLEMU_CORES=split puts 4 rank processes on one core, where one waiting
# rank watches it and passes on the engine's wakes: the same report as with
# the ranks anywhere, and (on 2 cores or more) the wakes really went through
# the watcher. tp_pingpong: ranks 0 and 1 play, the others wait.
if [ "$(nproc)" -ge 2 ]; then
  run env BGLEMU_CORES=shared mpirun -np 4 --report "$tmp/ws.json" tp_pingpong
  rc_s=$rc
  run env BGLEMU_CORES=split BGLEMU_PROXY_STATS=1 mpirun -np 4 --report "$tmp/wp.json" tp_pingpong
  left=$(sed -n "s/.*; \([0-9]*\) wake calls left to the ranks' watcher.*/\1/p" <<<"$out")
  if [ "$rc_s" -eq 0 ] && [ "$rc" -eq 0 ] && [ "${left:-0}" -gt 0 ] &&
     diff <(grep -v '"job"\|"wall' "$tmp/ws.json") <(grep -v '"job"\|"wall' "$tmp/wp.json") >/dev/null; then
    ok "ranks on one core: $left wake calls passed on by the watching rank, report identical to ranks anywhere"
  else
    bad "watched core: exit $rc_s / $rc, left '${left:-}': $(grep bglemu: <<<"$out")"
  fi
else
  ok "ranks on one core: skipped, one CPU (no core of the engine's own)"
fi

# ---- deadlock ---------------------------------------------------------------
run mpirun -np 2 -shape 2x1x1 --report "$tmp/d.json" tp_deadlock
if [ "$rc" -eq 3 ] && grep -q 'deadlock' <<<"$out" &&
   grep -q 'rank 0 <0,0,0,0> .*waits for a packet: a message from rank 1' <<<"$out" &&
   grep -q 'rank 1 <1,0,0,0> .*waits for a packet: a message from rank 0' <<<"$out" &&
   grep -q '"deadlock": 1' "$tmp/d.json" && [ -z "$(leftovers $pid)" ]; then
  ok "two ranks waiting for each other: deadlock reported with both waiters, exit 3, report written"
else
  bad "deadlock: exit $rc: $out"
fi

finish
