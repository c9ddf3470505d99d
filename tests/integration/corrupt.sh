#!/usr/bin/env bash
# A buggy rank can only hurt itself (issue 15): rank 1 of a 4-rank job
# damages the machine segment the way a stray write would (tests/bin/
# tp_corrupt.c: its own FIFOs and state, others' pages, the header, a bogus
# buffer for the engine, a receive described to the engine that its upcall
# does not take, seeded random bytes anywhere or in its own pages only).
# For each case: the job ends
# within 20 s of wall time, mpirun exits 1 with one line naming rank 1 and
# what it damaged, and neither a segment in /dev/shm nor a rank process is
# left. The injection-FIFO fields one by one are in launcher.sh. The long
# random soak is tests/bench/bench_corrupt.sh (make bench).
# Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
needs mpirun tp_corrupt
# under ASan (make check-asan) the fault must reach the rank's own record
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"

# case, the line's text after "(pid N) ", mpirun options
check() {
  local what=$1 want=$2; shift 2
  local t0=$(date +%s)
  mpirun --timeout 60 "$@" -np 4 tp_corrupt 1 $what >"$tmp/out" 2>&1 &
  local pid=$!
  wait $pid; local rc=$?
  local secs=$(( $(date +%s) - t0 )) out left
  out=$(cat "$tmp/out")
  left=$(leftovers $pid)
  local line
  line=$(grep '^mpirun: job failed: ' <<<"$out" | sed 's/(pid [0-9]*)/(pid N)/; s/0x[0-9a-f]*/0xADDR/g')
  local who="rank 1 <1,0,0,0>"
  [[ " $* " == *" -mapfile TXYZ "* ]] && who="rank 1 <0,0,0,1>"
  if [ "$rc" -eq 1 ] && [ "$secs" -lt 20 ] && [ -z "$left" ] &&
     [ "$line" = "mpirun: job failed: $who (pid N) $want" ]; then
    ok "${*:+$* }$what: '$want', exit 1, ${secs} s, nothing left"
  else
    bad "${*:+$* }$what: exit $rc, ${secs} s, leftovers '$left', want '$want': $(tail -4 <<<"$out")"
  fi
}

seg="was killed by signal 11 (Segmentation fault) writing into"
check header "corrupted its injection FIFO 0: packet of 0 chunks at slot 0"
check rec-past "corrupted its reception FIFO 0: tail 6 is 5 slots past the head (1 packets delivered)"
check rec-reuse "corrupted its reception FIFO 0: tail 0 moved 1 slots back, to packets it had freed already"
check rec-garbage "corrupted its reception FIFO 0: head 2, but the engine delivered 1 packets (slot 1 holds a packet it never delivered)"
check rec-future "corrupted its reception FIFO 0: packet at slot 0 arrives at 1152921504606846976 cycles, after the 10000 already simulated"
check state "corrupted its state word: 9 is not a processor state"
check bad-type "sent rank 0 a packet of software type 30, which no protocol of the message layer has"
check inj-cap "corrupted its injection FIFO 0: capacity word 0, but the FIFO holds 32 chunks"
check bogus-buf "corrupted its hand-off: a send buffer the engine cannot read: Bad address"
# the engine took a message's first packet into the receive rank 1
# described; its upcall, replayed when it wakes, puts the message elsewhere
check replay "corrupted its hand-off: a receive described at 0xADDR, 512 B, 0 cycles; its upcall's at 0xADDR, 512 B, 0"
check other-rec "$seg rank 0's reception FIFO 0, which it may only read"
check other-state "$seg rank 0's clock and state, which it may only read"
check seg-header "$seg the machine's geometry, which it may only read"
check engine-page "$seg rank 1's engine page, which it may only read"
# VN: rank 1 is rank 0's node mate; they share the scratchpad, not pages
check other-rec "$seg rank 0's reception FIFO 0, which it may only read" -mode VN -mapfile TXYZ
check other-state "$seg rank 0's clock and state, which it may only read" -mode VN -mapfile TXYZ
check rec-past "corrupted its reception FIFO 0: tail 6 is 5 slots past the head (1 packets delivered)" -mode VN -mapfile TXYZ

# seeded random bytes: the same writes, so the same line, every run
for seed in 1 2 3; do
  mpirun --timeout 60 -np 4 tp_corrupt 1 random $seed >"$tmp/r1" 2>&1; rc1=$?
  mpirun --timeout 60 -np 4 tp_corrupt 1 random $seed >"$tmp/r2" 2>&1; rc2=$?
  l1=$(grep '^mpirun: job failed: rank 1 <1,0,0,0> ' "$tmp/r1" | sed "s/ (pid [0-9]*)//")
  l2=$(grep '^mpirun: job failed: rank 1 <1,0,0,0> ' "$tmp/r2" | sed "s/ (pid [0-9]*)//")
  if [ $rc1 = 1 ] && [ $rc2 = 1 ] && [ -n "$l1" ] && [ "$l1" = "$l2" ]; then
    ok "random $seed twice: rank 1 named the same way, exit 1: ${l1#mpirun: job failed: }"
  else
    bad "random $seed: exit $rc1/$rc2: '$l1' vs '$l2'"
  fi
done
# random bytes into its own pages only, in the middle of a ping-pong with
# rank 0: caught and rank 1 named, or nothing the job could see (exit 0)
for seed in 8 9 10 11; do
  mpirun --timeout 60 -np 4 tp_corrupt 1 random-own $seed >"$tmp/r1" 2>&1 &
  pid=$!; wait $pid; rc=$?
  l1=$(grep '^mpirun: job failed: rank 1 <1,0,0,0> (pid [0-9]*) corrupted its ' "$tmp/r1" | sed "s/ (pid [0-9]*)//")
  left=$(leftovers $pid)
  if [ -z "$left" ] && { [ $rc = 0 ] || { [ $rc = 1 ] && [ -n "$l1" ]; }; }; then
    ok "random-own $seed: exit $rc${l1:+, ${l1#mpirun: job failed: }}"
  else
    bad "random-own $seed: exit $rc, left '$left': $(tail -2 "$tmp/r1")"
  fi
done
# a false watcher of the ranks' core (rank 1 names rank 0, which does not
# watch, and clears the wakes asked of a watcher): nobody passes on the
# engine's wakes, and nobody else may watch. With the ranks on one core
# (BGLEMU_CORES=split, where ranks watch) the engine finds each wake not
# made and makes it itself; with the ranks anywhere it leaves none to a
# watcher. Either way the job only costs host time: 2,000 rounds end as
# they would have (exit 0). Had the engine trusted the shared words, every
# hand-off would wait out a sleeper's 200 ms re-check: 800 s.
for cores in split shared; do
  BGLEMU_CORES=$cores BGLEMU_PROXY_STATS=1 mpirun --timeout 60 -np 4 tp_corrupt 1 watcher >"$tmp/w" 2>&1 &
  pid=$!; wait $pid; rc=$?
  left=$(sed -n "s/.*; \([0-9]*\) wake calls left to the ranks' watcher.*/\1/p" "$tmp/w")
  late=$(sed -n "s/.* \([0-9]*\) of them made by the engine after all/\1/p" "$tmp/w")
  if [ "$cores" = split ]; then want=$([ "$(nproc)" -ge 2 ] && [ "${late:-0}" -gt 0 ] && echo y)
  else want=$([ "${left:-x}" = 0 ] && echo y); fi
  if [ $rc = 0 ] && [ -n "$want" ] && [ -z "$(leftovers $pid)" ]; then
    ok "false watcher, BGLEMU_CORES=$cores: exit 0, ${left:-?} wake calls left to a watcher, ${late:-?} made by the engine"
  elif [ $rc = 0 ] && [ "$(nproc)" -lt 2 ]; then
    ok "false watcher, BGLEMU_CORES=$cores: exit 0 (one CPU: the ranks never watch)"
  else
    bad "false watcher, BGLEMU_CORES=$cores: exit $rc, left '${left:-}', late '${late:-}': $(tail -3 "$tmp/w")"
  fi
done
finish
