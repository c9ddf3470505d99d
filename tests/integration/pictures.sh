#!/usr/bin/env bash
# Heatmap pictures and bglemu-report (docs/pictures.md): the SVG parses as
# XML and has exactly one coloured element per existing link (torus, mesh,
# mixed), each with the utilization class and colour the JSON report's
# counters give, the busiest link computed from the packets a ping-pong
# sends; bglemu-report's summary matches mpirun's own lines and redraws the
# same SVG and text heatmap byte for byte; bad paths and bad reports give
# one-line errors, mpirun's before the job starts.
# Prints "ok <what>" / "not ok <what>" per check.
. "$(dirname "$0")/lib/checks.sh"
needs mpirun tp_pingpong ml_pong bgl-traffic bglemu-report

# check.py SVG JSON [name=value...]: prints ok/not ok lines, exits 1 on any
# failure. Expectations: links=N (count), busiest="x+ 0,0,0" busy=CYCLES
# (its busy cycles), ranks="x,y,z:LABEL;..." (rank labels), title=TEXT.
cat >"$tmp/check.py" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
svg, js = sys.argv[1], sys.argv[2]
want = dict(a.split("=", 1) for a in sys.argv[3:])
fails = 0
def check(cond, what):
    global fails
    print(("ok " if cond else "not ok ") + what)
    fails += not cond
try:
    root = ET.parse(svg).getroot()
except ET.ParseError as e:
    print("not ok %s does not parse as XML: %s" % (svg, e)); sys.exit(1)
rep = json.load(open(js))
NS = "{http://www.w3.org/2000/svg}"
check(root.tag == NS + "svg", "%s: the root is an SVG element" % svg)
m = rep["machine"]
dim, tor = m["shape"], m["torus"]
# the links that exist, computed here from the shape alone
exist = set()
for z in range(dim[2]):
    for y in range(dim[1]):
        for x in range(dim[0]):
            c = (x, y, z)
            for d in range(3):
                for s, sign in ((1, "+"), (-1, "-")):
                    v = c[d] + s
                    if dim[d] == 1 or (not tor[d] and not 0 <= v < dim[d]):
                        continue
                    exist.add("%s%s %d,%d,%d" % ("xyz"[d], sign, x, y, z))
links = [e for e in root.iter() if "link" in e.get("class", "").split()]
names = [e.get("data-link") for e in links]
check(len(links) == len(exist) and set(names) == exist,
      "one coloured element per link: %d elements, %d links on %s %s" %
      (len(links), len(exist), "x".join(map(str, dim)), tor))
if "links" in want:
    check(len(exist) == int(want["links"]), "the machine has %s links" % want["links"])
# the colour of each class, from the scale
scale = {}
for e in root.iter():
    cl = e.get("class", "").split()
    if "scale" in cl:
        scale[cl[1]] = e.get("fill")
check(len(scale) == 11 and len(set(scale.values())) == 11,
      "the scale has idle and ten deciles, eleven colours")
end = rep["result"]["end_cycles"] or 1
byname = {"%s %d,%d,%d" % (l["dir"], *l["node"]): l for l in rep["links"]}
wrong = []
for e in links:
    l = byname[e.get("data-link")]
    cls = "idle" if l["packets"] == 0 and l["busy_cycles"] == 0 else \
          "u%d" % min(9, int(10 * l["busy_cycles"] / end))
    got = e.get("class").split()[1]
    if got != cls or e.get("fill") != scale.get(cls):
        wrong.append("%s: %s %s, want %s %s" % (e.get("data-link"), got, e.get("fill"), cls, scale.get(cls)))
classes = sorted(set(e.get("class").split()[1] for e in links))
check(not wrong, "every link has the class and colour of its utilization (classes %s)%s" %
      (" ".join(classes), "; " + "; ".join(wrong[:3]) if wrong else ""))
if "busiest" in want:
    top = max(rep["links"], key=lambda l: l["busy_cycles"])
    name = "%s %d,%d,%d" % (top["dir"], *top["node"])
    e = [x for x in links if x.get("data-link") == want["busiest"]]
    busy = int(want["busy"])
    cls = "u%d" % min(9, int(10 * busy / end))
    check(name == want["busiest"] and top["busy_cycles"] == busy and e and
          e[0].get("class") == "link " + cls and e[0].get("fill") == scale[cls],
          "busiest link %s: %d busy cycles of %d, drawn %s" % (want["busiest"], busy, end, cls))
    others = [x for x in links if byname[x.get("data-link")]["busy_cycles"] < busy]
    check(all(x.get("class") == "link idle" for x in others) == (want.get("others") == "idle"),
          "the links the ping-pong does not use are idle")
if "ranks" in want:
    labels = {e.get("data-node"): e.text for e in root.iter() if e.get("class") == "ranks"}
    exp = dict(p.split(":") for p in want["ranks"].split(";"))
    check(all(labels.get(k) == v for k, v in exp.items()),
          "rank labels %s (drawn %s)" % (want["ranks"],
          ";".join("%s:%s" % (k, labels.get(k)) for k in exp)))
if "title" in want:
    text = " ".join("".join(e.itertext()) for e in root.iter(NS + "text"))
    for t in want["title"].split("|"):
        check(t in text, "the title says %r" % t)
sys.exit(1 if fails else 0)
EOF
pycheck() { python3 "$tmp/check.py" "$@" || fails=$((fails + 1)); }

# ---- a ping-pong on 2x2x2: the busiest links are known ----------------------
# Ranks 0 and 1 sit on <0,0,0> and <1,0,0>; on a ring of 2 both ways are one
# hop and ties go the + way: every ping crosses x+ of <0,0,0>, every pong x+
# of <1,0,0> (the wrap link). A 64-byte packet is 96 bytes on the wire (3
# chunks of 32), so each link is busy rounds*(96+wire_overhead)*cycles_per_byte.
mpirun -np 8 -shape 2x2x2 --report "$tmp/pp.json" --heatmap "$tmp/pp.svg" tp_pingpong 10 64 \
  >"$tmp/pp.out" 2>"$tmp/pp.err"; rc=$?
[ $rc -eq 0 ] && ok "mpirun --heatmap FILE.svg: exit 0" || bad "mpirun --heatmap svg: exit $rc: $(cat "$tmp/pp.err")"
busy=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["params"]; print(10*(96+p["wire_overhead"])*p["link_cycles_per_byte"])' "$tmp/pp.json")
busiest=$(sed -n 's/^mpirun: links: .*busiest \(.*\)$/\1/p' "$tmp/pp.err")
pycheck "$tmp/pp.svg" "$tmp/pp.json" links=48 busiest="x+ 0,0,0" busy="$busy" others=idle \
  ranks="0,0,0:0;1,0,0:1;1,1,1:7" \
  title="tp_pingpong 10 64|8 ranks on 2x2x2 torus, CO mode, mapping XYZT|simulated time|busiest $busiest"
python3 -c 'import json,sys; l=[x for x in json.load(open(sys.argv[1]))["links"] if x["packets"]]; sys.exit(not (len(l)==2 and {(x["dir"],tuple(x["node"])) for x in l}=={("x+",(0,0,0)),("x+",(1,0,0))}))' "$tmp/pp.json" &&
  ok "the ping-pong used exactly x+ of <0,0,0> and x+ of <1,0,0>" || bad "the ping-pong used other links"

# ---- mesh and mixed machines: fewer links, VN rank labels -------------------
mpirun -np 8 -shape 2x2x2 -connect MESH --heatmap "$tmp/mesh.svg" --report "$tmp/mesh.json" tp_pingpong 5 \
  >/dev/null 2>&1 || bad "mesh run failed"
pycheck "$tmp/mesh.svg" "$tmp/mesh.json" links=24
mpirun -np 4 -mode VN -shape 3x2x2 -connect MESH,TORUS,MESH -mapfile TXYZ --heatmap "$tmp/mix.svg" \
  --report "$tmp/mix.json" tp_pingpong 5 >/dev/null 2>"$tmp/mix.err" || bad "mixed run failed: $(cat "$tmp/mix.err")"
pycheck "$tmp/mix.svg" "$tmp/mix.json" links=52 ranks="0,0,0:0,1;1,0,0:2,3" \
  title="4 ranks on 3x2x2 mesh,torus,mesh, VN mode, mapping TXYZ"

# ---- a loaded network: many classes; bgl-traffic draws the same way ---------
bgl-traffic -np 8 -shape 2x2x2 --pattern uniform --load sat --packets 300 --seed 3 \
  --report "$tmp/tr.json" --heatmap "$tmp/tr.svg" >/dev/null 2>&1 || bad "bgl-traffic --heatmap failed"
pycheck "$tmp/tr.svg" "$tmp/tr.json" links=48 title="bgl-traffic -np 8 -shape 2x2x2 --pattern uniform"
bgl-traffic -np 8 -shape 2x2x2 --pattern uniform --load sat --packets 300 --seed 3 \
  --report "$tmp/tr2.json" --heatmap "$tmp/tr2.svg" >/dev/null 2>&1
if cmp -s "$tmp/tr.svg" "$tmp/tr2.svg" && cmp -s "$tmp/tr.json" "$tmp/tr2.json"; then
  ok "bgl-traffic twice: identical SVG and JSON (the job names no output file)"
else
  bad "bgl-traffic twice: SVG or JSON differ"
fi

bglemu-report "$tmp/tr.json" >"$tmp/got"
grep -qx 'processors: 8 driven by the engine (bgl-traffic), no program clocks' "$tmp/got" &&
  ! grep -q 'not exited' "$tmp/got" && ok "bglemu-report of a bgl-traffic report: engine-driven processors named once" ||
  bad "bglemu-report of bgl-traffic: $(cat "$tmp/got")"

# ---- bglemu-report: the run's own figures, the same pictures ----------------
# mpirun's report lines (wall time and exit line aside) are the summary's
same_summary() { # what, mpirun stderr, JSON
  sed -n 's/^mpirun: //p' "$2" | grep -v -e 'exited 0$' -e '^job failed' | sed 's/; [0-9.]* s wall$//' >"$tmp/want"
  bglemu-report "$3" >"$tmp/got" 2>&1; local rc=$?
  if [ $rc -eq 0 ] && grep -v -e '^job: ' -e '^busiest links:' -e '^heaviest pairs' -e '^  ' "$tmp/got" | cmp -s - "$tmp/want"; then
    ok "bglemu-report $1: summary matches mpirun's lines ($(wc -l <"$tmp/want") lines)"
  else
    bad "bglemu-report $1 (exit $rc): $(diff <(grep -v -e '^job: ' -e '^busiest links:' -e '^heaviest pairs' -e '^  ' "$tmp/got") "$tmp/want")"
  fi
}
same_summary "ping-pong 8 ranks" "$tmp/pp.err" "$tmp/pp.json"
mpirun -np 2 -shape 2x1x1 --report "$tmp/ml.json" ml_pong >/dev/null 2>"$tmp/ml.err" || bad "ml_pong failed"
same_summary "ml_pong (protocols)" "$tmp/ml.err" "$tmp/ml.json"
mpirun -np 27 -shape 3x3x3 --report "$tmp/27.json" tp_pingpong 5 >/dev/null 2>"$tmp/27.err" || bad "27 ranks failed"
same_summary "27 ranks (min/mean/max)" "$tmp/27.err" "$tmp/27.json"
bglemu-report "$tmp/pp.json" >"$tmp/got"
if python3 - "$tmp/got" "$tmp/pp.json" <<'EOF'
import json, sys
out = open(sys.argv[1]).read().splitlines()
rep = json.load(open(sys.argv[2]))
end = rep["result"]["end_cycles"]
used = sorted([l for l in rep["links"] if l["packets"]], key=lambda l: -l["busy_cycles"])
want = ["  %s of <%d,%d,%d> to <%d,%d,%d>: %.1f%% busy, %d packets, %d bytes" %
        (l["dir"], *l["node"], *[(c + (1 if l["dir"][0] == "xyz"[d] else 0)) % 2 for d, c in enumerate(l["node"])],
         100 * l["busy_cycles"] / end, l["packets"], l["bytes"]) for l in used]
i = out.index("busiest links:")
sys.exit(0 if out[0] == "job: tp_pingpong 10 64" and out[i + 1:] == want else 1)
EOF
then ok "bglemu-report: the job and the busiest links with their figures"
else bad "bglemu-report busiest links: $(cat "$tmp/got")"; fi
# the same pictures from the JSON
mpirun -np 8 -shape 2x2x2 --heatmap "$tmp/pp.txt" tp_pingpong 10 64 >/dev/null 2>&1
bglemu-report "$tmp/pp.json" --svg "$tmp/r.svg" --heatmap "$tmp/r.txt" >/dev/null
bglemu-report "$tmp/tr.json" --svg "$tmp/rtr.svg" >/dev/null
if cmp -s "$tmp/pp.svg" "$tmp/r.svg" && cmp -s "$tmp/pp.txt" "$tmp/r.txt" && cmp -s "$tmp/tr.svg" "$tmp/rtr.svg"; then
  ok "bglemu-report --svg / --heatmap .txt: byte-identical to mpirun's and bgl-traffic's"
else
  bad "bglemu-report redraws differ: $(cmp "$tmp/pp.svg" "$tmp/r.svg"; cmp "$tmp/pp.txt" "$tmp/r.txt"; cmp "$tmp/tr.svg" "$tmp/rtr.svg")"
fi
bglemu-report --svg - "$tmp/pp.json" >"$tmp/stdout.svg"
cmp -s "$tmp/stdout.svg" "$tmp/pp.svg" && ok "bglemu-report --svg -: the SVG alone on stdout" ||
  bad "bglemu-report --svg - differs"

# ---- labels that need escaping ------------------------------------------------
mpirun -np 2 --report "$tmp/esc.json" --heatmap "$tmp/esc.svg" tp_pingpong 2 64 '<a&b>"' $'\xff\x01' \
  >/dev/null 2>&1 || bad "escape run failed"
if python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["job"]; sys.exit(j != "tp_pingpong 2 64 <a&b>\" ??")' "$tmp/esc.json" &&
   python3 "$tmp/check.py" "$tmp/esc.svg" "$tmp/esc.json" title='tp_pingpong 2 64 <a&b>" ??' >/dev/null &&
   bglemu-report "$tmp/esc.json" | grep -qx 'job: tp_pingpong 2 64 <a&b>" ??'; then
  ok "a job with <&\" and bad bytes: valid JSON and XML, shown as given ('?' for bad bytes)"
else
  bad "escaping: $(head -3 "$tmp/esc.json")"
fi

# ---- mpirun: bad heatmap paths stop it before the job -----------------------
one_line "--heatmap .png" 2 "--heatmap $tmp/h.png: only .svg pictures" \
  mpirun -np 2 --report "$tmp/png.json" --heatmap "$tmp/h.png" tp_pingpong
[ ! -e "$tmp/png.json" ] && [ ! -e "$tmp/h.png" ] && ok "--heatmap .png: no file created" ||
  bad "--heatmap .png left files"
one_line "--heatmap unwritable .svg" 2 "--heatmap $tmp/no/dir/h.svg: cannot open" \
  mpirun -np 2 --report "$tmp/r1.json" --heatmap "$tmp/no/dir/h.svg" tp_pingpong
[ ! -e "$tmp/r1.json" ] && ok "--heatmap unwritable: the report opened first is removed" ||
  bad "--heatmap unwritable left $tmp/r1.json"
one_line "--report unwritable with --heatmap .svg" 2 "--report $tmp/no/dir/r.json: cannot open" \
  mpirun -np 2 --report "$tmp/no/dir/r.json" --heatmap "$tmp/h2.svg" tp_pingpong
[ ! -e "$tmp/h2.svg" ] && ok "--report unwritable: no heatmap file created" || bad "heatmap created"
one_line "--heatmap a directory" 2 "--heatmap $tmp: cannot open" mpirun -np 2 --heatmap "$tmp" tp_pingpong
# no rank ran: tp_pingpong would have printed
! grep -q tp_pingpong "$tmp/o" && ok "no rank started after a bad path" || bad "a rank ran"
mpirun -np 2 --heatmap "$tmp/h.TXT" tp_pingpong 2 >/dev/null 2>&1 && grep -q '^link utilization' "$tmp/h.TXT" &&
  ok "--heatmap other extension: the text heatmap" || bad "--heatmap .TXT not text"
bgl-traffic -np 8 --pattern uniform --packets 5 --heatmap "$tmp/t.png" >"$tmp/o" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'only .svg pictures' "$tmp/o" && ok "bgl-traffic --heatmap .png: exit 2" ||
  bad "bgl-traffic --heatmap .png: exit $rc: $(cat "$tmp/o")"

# ---- bglemu-report: bad input and options -------------------------------------
printf '{"machine": {"shape": [2, 2, 2],\n  "torus": [1, 1 1]}}\n' >"$tmp/bad.json"
one_line "bad JSON" 1 "$tmp/bad.json:2:18: expected ',' or ']', found '1'" bglemu-report --svg "$tmp/bad.svg" "$tmp/bad.json"
[ ! -e "$tmp/bad.svg" ] && ok "bad JSON: no SVG written" || bad "bad JSON left an SVG"
head -c 200 "$tmp/pp.json" >"$tmp/cut.json"
one_line "truncated JSON" 1 "$tmp/cut.json:" bglemu-report "$tmp/cut.json"
echo '{"machine": {"shape": [2,2,2]}}' >"$tmp/nr.json"
one_line "JSON that is no report" 1 "not a bglemu report: no \"torus\" in \"machine\"" bglemu-report "$tmp/nr.json"
sed 's/"dir": "z-"/"dir": "q+"/' "$tmp/mesh.json" >"$tmp/dir.json"
one_line "unknown link direction" 1 '"dir" should be one of' bglemu-report "$tmp/dir.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["links"].append({"node":[1,0,0],"dir":"x+","packets":0,"bytes":0,"busy_cycles":0}); json.dump(r, open(sys.argv[2],"w"), indent=1)' "$tmp/mesh.json" "$tmp/nolink.json"
one_line "a link the mesh does not have" 1 "no link x+ of <1,0,0>" bglemu-report "$tmp/nolink.json"
one_line "missing report" 1 "$tmp/none.json: cannot open: No such file" bglemu-report "$tmp/none.json"
one_line "unwritable --svg" 1 "--svg $tmp/no/dir/x.svg: cannot open" bglemu-report --svg "$tmp/no/dir/x.svg" "$tmp/pp.json"
one_line "--svg .png" 2 "--svg $tmp/x.png: only .svg pictures" bglemu-report --svg "$tmp/x.png" "$tmp/pp.json"
one_line "no report" 2 "no report given" bglemu-report
one_line "unknown option" 2 "unknown option '--frob'" bglemu-report --frob "$tmp/pp.json"
one_line "--top x" 2 "--top 'x'" bglemu-report --top x "$tmp/pp.json"
bglemu-report --help >"$tmp/o" 2>&1 && grep -q '^usage: bglemu-report' "$tmp/o" && ok "bglemu-report --help: usage, exit 0" ||
  bad "bglemu-report --help"
bglemu-report - <"$tmp/pp.json" | cmp -s - <(bglemu-report "$tmp/pp.json") && ok "bglemu-report -: reads stdin" ||
  bad "bglemu-report - differs"

finish
