#!/usr/bin/env bash
# The traffic matrix and bglemu-map without MPICH (docs/mapping.md): the
# report's pairs add up to what the processors received; bglemu-report lists
# the heaviest pairs and draws the matrix; bglemu-map finds the known optimum
# of a 3-D stencil and of a 2-D halo, writes a file mpirun takes, and a run
# with it is what the map predicts; every bad input is one line and exit 1
# (2 for options).
. "$(dirname "$0")/lib/checks.sh"
needs mpirun bgl-traffic bglemu-report bglemu-map tp_pingpong

# ---- the matrix in the report ---------------------------------------------
bgl-traffic -np 64 -shape 4x4x4 --pattern uniform --load 0.3 --packets 200 --seed 3 --report "$tmp/u.json" >/dev/null
if python3 - "$tmp/u.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["traffic"]
got_b = sum(p["bytes"] for p in t["pairs"]); got_p = sum(p["packets"] for p in t["pairs"])
want_b = sum(p["bytes_received"] for p in r["processors"])
want_p = r["result"]["packets_delivered"]
recv = {}
for p in t["pairs"]: recv[p["to"]] = recv.get(p["to"], 0) + p["bytes"]
per = all(recv.get(p["rank"], 0) == p["bytes_received"] for p in r["processors"])
ok = t["ranks"] == 64 and got_b == want_b and got_p == want_p and per and 0 < len(t["pairs"]) <= 64 * 63
print("  %d pairs, %d packets, %d bytes" % (len(t["pairs"]), got_p, got_b))
sys.exit(0 if ok else 1)
PY
then ok "traffic matrix of uniform traffic: every pair at most once; packets and bytes add up to the packets delivered and to each processor's bytes received"
else bad "traffic matrix does not add up"; fi

mpirun -np 8 -shape 2x2x2 -mapfile ZYXT --report "$tmp/pp.json" tp_pingpong 10 64 >/dev/null 2>&1
bglemu-report "$tmp/pp.json" --matrix "$tmp/pp.svg" >"$tmp/pp.out"
if grep -qx '  0 -> 1: 960 bytes (50.0%), 10 packets, 1 hop' "$tmp/pp.out" &&
   grep -qx '  1 -> 0: 960 bytes (50.0%), 10 packets, 1 hop' "$tmp/pp.out" &&
   [ "$(grep -c 'class="pair u9"' "$tmp/pp.svg")" = 2 ] && [ "$(grep -c 'class="pair' "$tmp/pp.svg")" = 2 ] &&
   grep -q 'data-pair="0 1" data-bytes="960"' "$tmp/pp.svg" &&
   python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" "$tmp/pp.svg"; then
  ok "ping-pong under ZYXT: bglemu-report lists 0 -> 1 and 1 -> 0 (960 bytes, 1 hop); the matrix SVG parses and has exactly those two cells, at the top of the scale"
else bad "ping-pong pairs or matrix: $(cat "$tmp/pp.out")"; fi

# ---- known optima ---------------------------------------------------------
python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
def write(name, n, pairs):
    m = [[0] * n for _ in range(n)]
    for a, b, w in pairs: m[a][b] += w
    open(d + "/" + name, "w").write("# bytes from row to column\n" + "\n".join(" ".join(map(str, r)) for r in m) + "\n")
X = Y = Z = 4
st = []
for z in range(Z):
    for y in range(Y):
        for x in range(X):
            r = x + X * (y + Y * z)
            for dx, dy, dz in ((1,0,0),(-1,0,0),(0,1,0),(0,-1,0),(0,0,1),(0,0,-1)):
                st.append((r, (x+dx) % X + X * ((y+dy) % Y + Y * ((z+dz) % Z)), 4096))
write("stencil.txt", 64, st)
h = []
for j in range(8):
    for i in range(8):
        r = i + 8 * j
        for di, dj in ((1,0),(-1,0),(0,1),(0,-1)):
            h.append((r, (i+di) % 8 + 8 * ((j+dj) % 8), 4096))
write("halo2d.txt", 64, h)
PY
bglemu-map "$tmp/stencil.txt" -shape 4x4x4 --mapfiles '' -o "$tmp/st.map" >"$tmp/st.out" 2>/dev/null
id=$(awk '$1 == "order" && $2 == "XYZT" {print $3}' "$tmp/st.out")
sc=$(awk '$1 == "scotch" && $2 ~ /^[0-9]/ {print $2}' "$tmp/st.out")
new=$(sed -n 's/^# .*: hop-bytes \([0-9]*\),.*/\1/p' "$tmp/st.map")
if [ -n "$id" ] && [ "$id" = 1572864 ] && [ "$sc" = "$id" ] && [ "$new" = "$id" ] && [ "$(grep -c '^[0-9]' "$tmp/st.map")" = 64 ]; then
  ok "3-D stencil laid out as the 4x4x4 torus: Scotch's mapping and the new one at the identity's hop-bytes ($id, 1 hop a byte)"
else bad "stencil: identity '$id', scotch '$sc', new '$new': $(cat "$tmp/st.out")"; fi
bglemu-map "$tmp/halo2d.txt" -shape 4x4x4 -o "$tmp/h.map" >"$tmp/h.out" 2>/dev/null
if grep -q '^order XYZT  *1966080  *1.875  *20480 ' "$tmp/h.out" && grep -q '^new: scotch' "$tmp/h.out" &&
   grep -q '^# scotch.*: hop-bytes 1048576, busiest link 4096 bytes' "$tmp/h.map"; then
  ok "8x8 halo on 4x4x4: XYZT 1.875 hops a byte, busiest link 20480; the new mapping every neighbour 1 hop, busiest 4096 (the shipped fold's figures)"
else bad "halo2d: $(cat "$tmp/h.out")"; fi

# ---- run, map, run again ---------------------------------------------------
mpirun -np 8 -shape 2x2x2 -mapfile ZYXT --report "$tmp/r1.json" tp_pingpong 10 64 >/dev/null 2>&1
bglemu-map "$tmp/r1.json" -o "$tmp/r1.map" >"$tmp/r1.out" 2>/dev/null
if mpirun -np 8 -shape 2x2x2 -mapfile "$tmp/r1.map" --report "$tmp/r2.json" tp_pingpong 10 64 >/dev/null 2>"$tmp/r2.err" &&
   grep -q '^current (ZYXT)' "$tmp/r1.out"; then
  ok "run, map, run: mpirun takes bglemu-map's file; the report's own mapping is the 'current' row"
else bad "run-map-run: $(cat "$tmp/r1.out" "$tmp/r2.err")"; fi
mpirun -np 16 -mode VN -shape 2x2x2 --report "$tmp/vn.json" tp_pingpong 10 64 >/dev/null 2>&1
if bglemu-map "$tmp/vn.json" -o "$tmp/vn.map" >"$tmp/vn.out" 2>/dev/null &&
   grep -q '^order TXYZ' "$tmp/vn.out" && [ "$(grep -c '^order' "$tmp/vn.out")" = 24 ] &&
   mpirun -np 16 -mode VN -shape 2x2x2 -mapfile "$tmp/vn.map" tp_pingpong 10 64 >/dev/null 2>&1; then
  ok "VN: all 24 orders compared, the new file is a valid VN mapping"
else bad "VN: $(cat "$tmp/vn.out")"; fi

# ---- bad input: one line, naming the file and the reason --------------------
printf '0 1\n-5 0\n' >"$tmp/neg.txt"
one_line "negative entry" 1 "$tmp/neg.txt:2: negative entry '-5'" bglemu-map "$tmp/neg.txt"
printf '0 1 2\n1 0\n2 1 0\n' >"$tmp/miss.txt"
one_line "missing entry" 1 "$tmp/miss.txt:2: missing entries: 2 of 3 on rank 1's line" bglemu-map "$tmp/miss.txt"
printf '0 1\n' >"$tmp/rows.txt"
one_line "missing line" 1 "$tmp/rows.txt: missing lines: 1 of 2 ranks" bglemu-map "$tmp/rows.txt"
printf '0 x\n1 0\n' >"$tmp/nan.txt"
one_line "not a number" 1 "$tmp/nan.txt:1: entry 'x' is not a non-negative integer" bglemu-map "$tmp/nan.txt"
one_line "rank count" 1 "$tmp/pp.json: the traffic is of 8 ranks, -np 16 asks for another rank count" bglemu-map "$tmp/pp.json" -np 16
one_line "shape too small" 1 "$tmp/pp.json: 8 ranks do not fit 2x2x1 in CO mode (4 processors)" bglemu-map "$tmp/pp.json" -shape 2x2x1
sed 's/"ranks": 8, "counted"/"ranks": 9, "counted"/' "$tmp/pp.json" >"$tmp/other.json"
one_line "matrix of another rank count" 1 "the traffic matrix has 9 ranks, the machine 8" bglemu-map "$tmp/other.json"
sed 's/"bytes": 960}/"bytes": -960}/' "$tmp/pp.json" >"$tmp/negj.json"
one_line "negative bytes in a report" 1 "not a bglemu report: bytes should be a non-negative integer" bglemu-map "$tmp/negj.json"
sed 's/"from": 1, "to": 0/"from": 1, "to": 8/' "$tmp/pp.json" >"$tmp/range.json"
one_line "pair outside the ranks" 1 "pair 1 -> 8: ranks are 0..7" bglemu-map "$tmp/range.json"
python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); del r['traffic']; json.dump(r, open(sys.argv[2],'w'))" "$tmp/pp.json" "$tmp/old.json"
one_line "report without a matrix" 1 "$tmp/old.json: no traffic matrix" bglemu-map "$tmp/old.json"
one_line "missing file" 1 "$tmp/none.json: cannot open: No such file" bglemu-map "$tmp/none.json"
printf '{"machine": 1 2}' >"$tmp/bad.json"
one_line "bad JSON" 1 "$tmp/bad.json:1:15: expected ',' or '}', found '2'" bglemu-map "$tmp/bad.json"
printf '{"machine": 1' >"$tmp/cut.json"
one_line "truncated JSON" 1 "$tmp/cut.json:1:" bglemu-map "$tmp/cut.json"
one_line "bad -mode" 2 "-mode 'XX': want CO or VN" bglemu-map -mode XX "$tmp/pp.json"
one_line "unwritable -o" 1 "-o $tmp/no/x.map: cannot open" bglemu-map "$tmp/pp.json" -o "$tmp/no/x.map"
one_line "bglemu-report --matrix .png" 2 "--matrix $tmp/m.png: the matrix is drawn as an SVG picture" bglemu-report --matrix "$tmp/m.png" "$tmp/pp.json"
one_line "bglemu-report --matrix, no matrix" 1 "$tmp/old.json: no traffic matrix" bglemu-report --matrix "$tmp/m.svg" "$tmp/old.json"
finish
