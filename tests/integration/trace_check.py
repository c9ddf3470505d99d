#!/usr/bin/env python3
"""Checks an mpirun --trace file (docs/trace.md) against the rules viewers
enforce and against what the job did. Python's standard library only.

  trace_check.py TRACE.json [--report REPORT.json] [--sends R=N,...]
                 [--recvs R=N,...] [--mpi R:CALL=N,...] [--colls N]
                 [--blocked R,...] [--ranks R,...] [--cut]

Always: the file parses; every event is well formed for its phase (M, X,
s, f, C); per track (pid, tid) slices come in time order and nest
strictly (a slice that starts inside another ends inside it); every flow
start has exactly one end, later and on a slice of its track, and the
other way round; counters are numbers, in time order per counter.
--report: every link's counter samples add up to the report's bytes and
packets exactly, and busy cycles within rounding; the message-layer sends
per rank and protocol are the report's msgs_sent. --sends / --recvs:
message-layer sends / receptions per rank. --mpi: MPI calls per rank by
name. --colls: torus collective instances on the collectives track.
--blocked: these ranks have "blocked" slices. --ranks: exactly these ranks
have tracks. --cut: the trace says it was cut (cut_events > 0).
Prints "ok ..." / "not ok ..." lines; exit 1 on any failure."""
import json
import sys
from decimal import Decimal

args = sys.argv[1:]
if not args:
    print(__doc__)
    sys.exit(2)
path = args.pop(0)
opt = {}
while args:
    k = args.pop(0)
    if k == "--cut":
        opt["cut"] = True
    else:
        opt[k.lstrip("-")] = args.pop(0)

fails = 0


def check(cond, what):
    global fails
    print(("ok " if cond else "not ok ") + what)
    fails += not cond
    return cond


def kv(s):
    out = {}
    for item in s.split(","):
        k, v = item.split("=")
        out[k] = int(v)
    return out


try:
    doc = json.load(open(path), parse_float=Decimal)
except (OSError, ValueError) as e:
    print("not ok %s does not parse as JSON: %s" % (path, e))
    sys.exit(1)
check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
      "%s: a JSON object with a traceEvents list" % path)
evs = doc["traceEvents"]
meta = doc.get("otherData", {})
num = (int, Decimal)

# ---- well-formed events -----------------------------------------------
need = {"M": ("name", "pid", "args"), "X": ("name", "cat", "pid", "tid", "ts", "dur"),
        "s": ("name", "cat", "id", "pid", "tid", "ts"), "f": ("name", "cat", "id", "pid", "tid", "ts"),
        "C": ("name", "pid", "ts", "args")}
bad = []
for i, e in enumerate(evs):
    ph = e.get("ph")
    if ph not in need or any(k not in e for k in need[ph]):
        bad.append((i, "phase %r or a field missing" % ph))
        continue
    if ph != "M" and (not isinstance(e["ts"], num) or e["ts"] < 0):
        bad.append((i, "ts %r" % e["ts"]))
    if ph == "X" and (not isinstance(e["dur"], num) or e["dur"] < 0):
        bad.append((i, "dur %r" % e["dur"]))
    if ph == "C" and (not e["args"] or not all(isinstance(v, num) for v in e["args"].values())):
        bad.append((i, "counter args %r" % e["args"]))
    if ph == "f" and e.get("bp") != "e":
        bad.append((i, "flow end without bp=e"))
check(not bad, "%d events well formed%s" % (len(evs), (": event %d: %s" % bad[0]) if bad else ""))

# ---- slices: time order and strict nesting per track ------------------
tracks = {}
for e in evs:
    if e.get("ph") == "X":
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
order_bad = nest_bad = None
for key, xs in sorted(tracks.items()):
    stack = []
    last = None
    for e in xs:
        t0, t1 = e["ts"], e["ts"] + e["dur"]
        if last is not None and t0 < last and order_bad is None:
            order_bad = (key, e["name"], t0, last)
        last = t0
        while stack and stack[-1][1] <= t0 and not (stack[-1][1] == t0 and t1 == t0 and stack[-1][0] == t0):
            stack.pop()
        if stack and t1 > stack[-1][1] and nest_bad is None:
            nest_bad = (key, e["name"], t0, t1, stack[-1][2], stack[-1][0], stack[-1][1])
        stack.append((t0, t1, e["name"]))
nx = sum(len(v) for v in tracks.values())
check(order_bad is None, "%d slices on %d tracks in time order per track%s" %
      (nx, len(tracks), "" if order_bad is None else ": %s %s at %s after %s" % order_bad))
check(nest_bad is None, "slices nest strictly per track%s" %
      ("" if nest_bad is None else ": %s %s [%s, %s] overlaps %s [%s, %s]" % nest_bad))


def enclosing(pid, tid, ts):
    """The innermost slice open at ts ([start, end), or a zero-length one at ts)."""
    best = None
    for e in tracks.get((pid, tid), ()):
        if e["ts"] <= ts and (ts < e["ts"] + e["dur"] or ts == e["ts"]):
            best = e  # in file order: later starts are deeper
    return best


# ---- flows --------------------------------------------------------------
starts, ends = {}, {}
dup = []
for e in evs:
    if e.get("ph") in ("s", "f"):
        d = starts if e["ph"] == "s" else ends
        if e["id"] in d:
            dup.append(e["id"])
        d[e["id"]] = e
unpaired = set(starts) ^ set(ends)
check(not dup and not unpaired, "%d flows: every start has exactly one end and every end a start%s" %
      (len(starts), "" if not (dup or unpaired) else ": ids %s" % sorted(set(dup) | unpaired)[:5]))
late = [i for i in starts if i in ends and ends[i]["ts"] < starts[i]["ts"]]
check(not late, "flows end no earlier than they start%s" % (": id %s" % late[0] if late else ""))
unbound = [i for i, e in list(starts.items()) + list(ends.items())
           if enclosing(e["pid"], e["tid"], e["ts"]) is None]
check(not unbound, "every flow end sits on a slice of its track%s" %
      (": id %s" % unbound[0] if unbound else ""))
# the arrow goes from a send to the reception of the same message
mism = []
for i, s in starts.items():
    f = ends.get(i)
    if not f:
        continue
    a, b = enclosing(s["pid"], s["tid"], s["ts"]), enclosing(f["pid"], f["tid"], f["ts"])
    if a and b and a.get("cat") == "ml" and b.get("cat") == "ml":
        sa, rb = a["args"], b["args"]
        if not (sa.get("to") == f["pid"] - 1 and rb.get("from") == s["pid"] - 1 and
                sa.get("message") == rb.get("message") and sa.get("bytes") == rb.get("bytes")):
            mism.append(i)
check(not mism, "each flow joins a send to the reception of the same message%s" %
      (": id %s" % mism[0] if mism else ""))

# ---- counters -------------------------------------------------------------
ctr = {}
for e in evs:
    if e.get("ph") == "C":
        ctr.setdefault((e["pid"], e["name"]), []).append(e)
cbad = [k for k, v in ctr.items() if any(b["ts"] < a["ts"] for a, b in zip(v, v[1:]))]
check(not cbad, "%d counter tracks, samples in time order%s" % (len(ctr), ": %s" % (cbad[:1],) if cbad else ""))

# ---- what the job did ----------------------------------------------------
def per_rank(pred):
    n = {}
    for e in evs:
        if e.get("ph") == "X" and pred(e):
            n[e["pid"] - 1] = n.get(e["pid"] - 1, 0) + 1
    return n


if "report" in opt:
    rep = json.load(open(opt["report"]))
    links = {}
    for l in rep["links"]:
        links["%s <%d,%d,%d>" % (l["dir"], *l["node"])] = l
    sums = {}
    for e in evs:
        if e.get("ph") == "C":
            s = sums.setdefault(e["name"], [0, 0, Decimal(0)])
            s[0] += int(e["args"]["bytes"])
            s[1] += int(e["args"]["packets"])
    busy_ok = True
    # busy: pct * interval length / 100, the interval up to the next sample
    for name, v in ctr.items():
        tot = Decimal(0)
        for a, b in zip(v, v[1:]):
            tot += a["args"]["busy_pct"] * (b["ts"] - a["ts"]) * int(meta["clock_mhz"]) / 100
        want = links[name[1]]["busy_cycles"]
        if abs(tot - want) > max(2, want / 200) + len(v):
            busy_ok = False
            busy_bad = (name[1], tot, want)
    carried = {k for k, l in links.items() if l["packets"]}
    wrong = [k for k in carried | set(sums) if k not in sums or k not in links or
             sums[k][0] != links[k]["bytes"] or sums[k][1] != links[k]["packets"]]
    check(not wrong and set(sums) == carried,
          "link counters of %d links add up to the report's bytes and packets%s" %
          (len(carried), ": %s" % wrong[0] if wrong else ""))
    check(busy_ok, "link utilization samples add up to the report's busy cycles%s" %
          ("" if busy_ok else ": %s %.0f vs %d" % busy_bad))
    protos = ["auto", "one-packet", "eager", "adaptive-eager", "rendezvous", "vn"]
    got = {}
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") == "ml" and e["name"].startswith("send "):
            k = (e["pid"] - 1, e["args"]["protocol"])
            got[k] = got.get(k, 0) + 1
    want = {}
    for p in rep["processors"]:
        for i, n in enumerate(p["msgs_sent"][:len(protos)]):
            if n and p["rank"] >= 0:
                want[(p["rank"], protos[i])] = want.get((p["rank"], protos[i]), 0) + n
    if "ranks" not in opt and "window" not in opt:
        check(got == want, "message-layer sends per rank and protocol are the report's (%d sends)" %
              sum(want.values()))
for name, pred in (("sends", lambda e: e.get("cat") == "ml" and e["name"].startswith("send ")),
                   ("recvs", lambda e: e.get("cat") == "ml" and e["name"].startswith("recv "))):
    if name in opt:
        want = {int(k): v for k, v in kv(opt[name]).items()}
        got = per_rank(pred)
        check(got == want, "message-layer %s per rank: %s (want %s)" % (name, got, want))
if "mpi" in opt:
    want = {}
    for item in opt["mpi"].split(","):
        rk, rest = item.split(":")
        call, n = rest.split("=")
        want[(int(rk), call)] = int(n)
    got = {}
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") == "mpi":
            k = (e["pid"] - 1, e["name"])
            if k in want:
                got[k] = got.get(k, 0) + 1
    check(got == want, "MPI calls per rank: %s" % ", ".join("%d:%s=%d" % (k[0], k[1], v) for k, v in sorted(got.items())))
if "colls" in opt:
    n = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "coll" and " (group " in e["name"])
    check(n == int(opt["colls"]), "%d torus collectives on the collectives track (want %s)" % (n, opt["colls"]))
if "blocked" in opt:
    b = per_rank(lambda e: e.get("cat") == "wait")
    want = [int(r) for r in opt["blocked"].split(",")]
    check(all(b.get(r) for r in want), "ranks %s have blocked slices (%s)" % (want, b))
if "ranks" in opt:
    want = sorted(int(r) for r in opt["ranks"].split(","))
    got = sorted({e["pid"] - 1 for e in evs if e.get("ph") == "X" and e.get("cat") != "coll" or
                  (e.get("ph") == "X" and e.get("cat") == "coll" and not " (group " in e["name"])})
    check(got == want, "only ranks %s have tracks (got %s)" % (want, got))
if opt.get("cut"):
    check(meta.get("cut_events", 0) > 0 and len(tracks) > 0 and nx <= int(meta["events"]),
          "the trace says it was cut: %s events not written" % meta.get("cut_events"))
sys.exit(1 if fails else 0)
