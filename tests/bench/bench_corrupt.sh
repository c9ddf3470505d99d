#!/usr/bin/env bash
# Soak of issue 15's random damage: rank 1 of a 4-rank job writes seeded
# random bytes at random offsets of its own pages and of the rest of the
# machine segment (tests/bin/tp_corrupt.c, case random), for
# BENCH_CORRUPT_SEEDS seeds (default 300). Every run must be "reported":
# mpirun exits 1 with a line naming rank 1, within the 60 s timeout, and
# leaves nothing in /dev/shm. Outcomes are counted by what caught the
# damage first: the engine or the packet layer ("corrupted its ...": its
# own pages), or the fault of a write into a page it may only read.
set -u
N=${BENCH_CORRUPT_SEEDS:-300}
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
declare -A seen
fault=0; caught=0; other=0; max=0
for seed in $(seq "$N"); do
  t0=$(date +%s%N)
  mpirun --timeout 60 -np 4 tp_corrupt 1 random "$seed" >"$tmp/out" 2>&1 &
  pid=$!; wait $pid; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 )); [ $ms -gt $max ] && max=$ms
  line=$(grep '^mpirun: job failed: rank 1 <1,0,0,0> (pid [0-9]*) ' "$tmp/out")
  left=$(ls /dev/shm 2>/dev/null | grep "^bglemu\.$(id -u)\.$pid\." || true)
  if [ $rc -ne 1 ] || [ -z "$line" ] || [ -n "$left" ]; then
    other=$((other + 1)); echo "  seed $seed NOT reported: exit $rc, left '$left': $(tail -2 "$tmp/out")"
  elif [[ $line == *"writing into"* ]]; then
    fault=$((fault + 1))
  else
    caught=$((caught + 1)); k=$(sed 's/.*corrupted its \([a-z ]*\).*/\1/' <<<"$line"); seen[$k]=1
  fi
done
echo "  seeds $N: reported $((fault + caught)) (fault in a read-only page $fault, caught in its own pages $caught${seen[*]+: $(IFS=,; echo "${!seen[*]}")}), not reported $other"
echo "  slowest run ${max} ms wall"
ofail=$other
declare -A kinds
clean=0; caught=0; other=0
for seed in $(seq "$N"); do
  mpirun --timeout 60 -np 4 tp_corrupt 1 random-own "$seed" >"$tmp/out" 2>&1 &
  pid=$!; wait $pid; rc=$?
  line=$(grep '^mpirun: job failed: rank 1 <1,0,0,0> (pid [0-9]*) corrupted its ' "$tmp/out")
  left=$(ls /dev/shm 2>/dev/null | grep "^bglemu\.$(id -u)\.$pid\." || true)
  if [ -n "$left" ] || { [ $rc -ne 0 ] && { [ $rc -ne 1 ] || [ -z "$line" ]; }; }; then
    other=$((other + 1)); echo "  random-own seed $seed NOT reported: exit $rc, left '$left': $(tail -2 "$tmp/out")"
  elif [ $rc -eq 0 ]; then
    clean=$((clean + 1))
  else
    caught=$((caught + 1)); k=$(sed 's/.*corrupted its \([a-z]* [A-Z]*[a-z ]*\).*/\1/; s/ [0-9]*$//' <<<"$line"); kinds[$k]=1
  fi
done
echo "  random-own seeds $N: reported $caught${kinds[*]+ ($(IFS=,; echo "${!kinds[*]}"))}, exit 0 (nothing the job could see) $clean, neither $other"
[ $ofail -eq 0 ] && [ $other -eq 0 ]
