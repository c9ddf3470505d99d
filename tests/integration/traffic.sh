#!/usr/bin/env bash
# bgl-traffic end to end: reproducible output (same seed, same bytes), every
# pattern delivers every packet, and bad options give one error line and a
# non-zero exit. Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
needs bgl-traffic

# ---- reproducibility ------------------------------------------------------
base=(-np 64 -shape 4x4x4 --pattern uniform --load 0.7 --packets 100)
for r in det adaptive mixed; do
  bgl-traffic "${base[@]}" --routing "$r" --seed 5 --report "$tmp/a.json" >"$tmp/a" 2>&1; ra=$?
  bgl-traffic "${base[@]}" --routing "$r" --seed 5 --report "$tmp/b.json" >"$tmp/b" 2>&1; rb=$?
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/a.json" "$tmp/b.json"; then
    ok "same seed twice, routing $r: identical output and JSON report"
  else
    bad "same seed twice, routing $r: outputs differ or failed (exit $ra/$rb)"; diff "$tmp/a" "$tmp/b" | head -5
  fi
done
bgl-traffic "${base[@]}" --seed 6 >"$tmp/c" 2>&1
bgl-traffic "${base[@]}" --seed 5 >"$tmp/d" 2>&1
if ! cmp -s "$tmp/c" "$tmp/d"; then ok "a different seed changes the output"; else bad "seed ignored"; fi
if grep -q '^accepted throughput' "$tmp/a" && grep -q '^latency .*p99' "$tmp/a"; then
  ok "output reports accepted throughput and latency mean/p99"
else
  bad "output lacks throughput or latency lines"; cat "$tmp/a"
fi
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/a.json" 2>/dev/null; then
  ok "--report writes valid JSON"
else
  bad "--report JSON does not parse"
fi
bgl-traffic "${base[@]}" --timing >"$tmp/t" 2>&1
if grep -q '^host timing .*packet-hops/s' "$tmp/t" && ! grep -q 'host timing' "$tmp/a"; then
  ok "host timing only with --timing"
else
  bad "host timing line missing with --timing, or present without it"
fi

# ---- every pattern, torus and mesh: all packets arrive once, intact -------
for conn in TORUS MESH; do
  for p in uniform transpose bitrev neighbor hotspot alltoall; do
    # transpose and bitrev have fixed points (packets to self): mixed sizes
    # there check that the loopback path keeps deterministic order.
    size=mixed
    out=$(bgl-traffic -np 64 -shape 4x4x4 -connect $conn --pattern $p --load 0.5 --packets 60 \
          --routing mixed --chunks $size 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q '3840 generated, 3840 delivered, 0 lost, 0 duplicated, 0 corrupted, 0 misrouted' <<<"$out" \
       && grep -q '^order  *0 det out of order' <<<"$out"; then
      ok "$conn $p ($size chunks): 3840 packets delivered once, intact, det order kept"
    else
      bad "$conn $p (exit $rc)"; echo "$out" | sed 's/^/    /'
    fi
  done
done

# Low load: the network accepts what is offered.
out=$(bgl-traffic -np 64 -shape 4x4x4 --pattern uniform --load 0.2 --packets 400 2>&1)
acc=$(sed -n 's/^accepted throughput \([0-9.]*\) .*/\1/p' <<<"$out")
if awk -v a="$acc" 'BEGIN { exit !(a > 0.18 && a < 0.22) }'; then
  ok "load 0.2 uniform: accepted $acc of link bandwidth (offered 0.2)"
else
  bad "load 0.2 uniform: accepted '$acc'"; echo "$out"
fi

# ---- bad options: one line on stderr, nothing on stdout, exit != 0 --------
badcase() {
  local what=$1; shift
  bgl-traffic "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/e")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/o" ] && grep -q '^bgl-traffic: ' "$tmp/e"; then
    ok "bad option ($what): $(cat "$tmp/e")"
  else
    bad "bad option ($what): exit $rc, $lines stderr lines"; sed 's/^/    /' "$tmp/e" "$tmp/o"
  fi
}
P=(--pattern uniform)
badcase "unknown pattern"        -np 8 --pattern zigzag
badcase "missing pattern"        -np 8
badcase "missing -np and shape"  "${P[@]}"
badcase "-np 0"                  -np 0 "${P[@]}"
badcase "-np not a number"       -np abc "${P[@]}"
badcase "-np without value"      "${P[@]}" -np
badcase "-np larger than shape"  -np 65 -shape 4x4x4 "${P[@]}"
badcase "shape with two dims"    -np 8 -shape 4x4 "${P[@]}"
badcase "shape with a zero"      -np 8 -shape 0x4x4 "${P[@]}"
badcase "shape too large"        -np 8 -shape 65x1x1 "${P[@]}"
badcase "unknown -connect"       -np 8 -connect RING "${P[@]}"
badcase "load above 6"           -np 8 --load 7 "${P[@]}"
badcase "negative load"          -np 8 --load -1 "${P[@]}"
badcase "load not a number"      -np 8 --load fast "${P[@]}"
badcase "unknown routing"        -np 8 --routing zigzag "${P[@]}"
badcase "zero packets"           -np 8 --packets 0 "${P[@]}"
badcase "negative packets"       -np 8 --packets -5 "${P[@]}"
badcase "chunks 9"               -np 8 --chunks 9 "${P[@]}"
badcase "seed not a number"      -np 8 --seed 1x "${P[@]}"
badcase "unknown option"         -np 8 --bogus "${P[@]}"
badcase "transpose needs 2^k"    -np 48 -shape 4x4x3 --pattern transpose
badcase "neighbor needs all nodes" -np 32 -shape 4x4x4 --pattern neighbor
badcase "uniform needs 2 procs"  -np 1 "${P[@]}"
badcase "unknown parameter"      -np 8 -p nosuch=1 "${P[@]}"
badcase "params file missing"    -np 8 --params "$tmp/none.conf" "${P[@]}"
printf 'vc_chunks = 4\n' >"$tmp/small.conf"
badcase "params out of range"    -np 8 --params "$tmp/small.conf" "${P[@]}"
badcase "report unwritable"      -np 8 --packets 5 --report /nonexistent/dir/r.json "${P[@]}"

if bgl-traffic --help 2>&1 | grep -q '^usage: bgl-traffic'; then ok "--help prints usage, exit 0"; else bad "--help"; fi

finish
