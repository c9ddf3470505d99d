/* bglemu-report: the JSON report of a run (mpirun --report, bgl-traffic
 * --report) as a short summary, and its link heatmap redrawn (--svg,
 * --heatmap) with the same code mpirun draws it with. See docs/pictures.md.
 *
 * C rather than a Python script so that the picture comes from the very
 * functions mpirun uses (pictures/pic_svg.c): the two cannot drift apart.
 * The JSON reader is a small strict one (RFC 8259), enough for these
 * reports and exact for 64-bit counters, which a double would round. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "messagelayer/ml.h"
#include "torus-sim/tsim_matrix.h"
#include "pictures/pic.h"

static const char *prog = "bglemu-report";

static void usage(FILE *f)
{
    fputs("usage: bglemu-report [--svg OUT.svg] [--heatmap FILE] [--top N] [--pairs N]\n"
          "                     [--matrix OUT.svg] JOB.json\n"
          "Summarizes the JSON report of a run (mpirun --report, bgl-traffic --report):\n"
          "machine, simulated time, packets, per-rank times, messages by protocol and\n"
          "the busiest links, on stdout (docs/pictures.md).\n"
          "  --svg OUT.svg   also draw the link heatmap, as mpirun --heatmap OUT.svg does\n"
          "  --heatmap FILE  the heatmap by FILE's name, as mpirun: .svg a picture, any\n"
          "                  other name the text heatmap\n"
          "  --top N         list the N busiest links (default 5, 0: none)\n"
          "  --pairs N       list the N heaviest pairs of ranks (default 5, 0: none)\n"
          "  --matrix OUT.svg  draw the rank-to-rank traffic matrix\n"
          "  --help          this text\n"
          "FILE or OUT.svg '-' writes to stdout instead of the summary; JOB.json '-'\n"
          "reads stdin.\n"
          "Exit status: 0 done; 1 the report cannot be read or is not a report, or an\n"
          "output cannot be written; 2 bad options.\n",
          f);
}

#include "report_json.h"
#include "report_matrix.h"

typedef struct rank_info {
    int found;
    uint64_t cycles;
    uint64_t msgs[TSIM_NSW_KINDS];
    char state[16];
} rank_info;


/* Fills the link map and the ranks' figures from the report. */
static void load(const report *r, pic_linkmap *m, rank_info **ranks_out, int *deadlock)
{
    const jval *root = r->root;
    if (root->t != J_OBJ) rfail(r, root, "the file should hold one JSON object");
    jval *mach = need(r, root, "machine", J_OBJ);
    tsim_geom g;
    memset(&g, 0, sizeof g);
    get_ints(r, mach, "shape", 3, g.dim, TSIM_MAX_DIM);
    for (int d = 0; d < 3; d++)
        if (g.dim[d] < 1) rfail(r, member(mach, "shape"), "\"shape\" sides should be 1..%d", TSIM_MAX_DIM);
    get_ints(r, mach, "torus", 3, g.torus, 1);
    g.cpus = (int)get_u64(r, mach, "cpus_per_node", TSIM_CPUS);
    if (g.cpus < 1) rfail(r, member(mach, "cpus_per_node"), "\"cpus_per_node\" should be 1 or 2");
    g.nnodes = g.dim[0] * g.dim[1] * g.dim[2];
    if (g.nnodes * TSIM_CPUS > TSIM_MAX_PROCS)
        rfail(r, member(mach, "shape"), "a %dx%dx%d machine is larger than bglemu's %d nodes",
              g.dim[0], g.dim[1], g.dim[2], TSIM_MAX_PROCS / TSIM_CPUS);
    g.nranks = (int)get_u64(r, mach, "ranks", (uint64_t)(g.nnodes * g.cpus));
    if (pic_linkmap_init(m, &g) != 0) die(1, "out of memory");
    label(m->mapping, sizeof m->mapping, need(r, mach, "mapping", J_STR)->str);
    jval *job = member(root, "job");
    if (job) {
        if (job->t != J_STR) rfail(r, job, "\"job\" should be a string");
        label(m->job, sizeof m->job, job->str);
    }
    m->clock_mhz = get_u64(r, need(r, root, "params", J_OBJ), "clock_mhz", 1000000);
    if (!m->clock_mhz) rfail(r, member(member(root, "params"), "clock_mhz"), "\"clock_mhz\" is 0");
    jval *res = need(r, root, "result", J_OBJ);
    m->end_cycles = get_u64(r, res, "end_cycles", UINT64_MAX);
    m->packets_delivered = get_u64(r, res, "packets_delivered", UINT64_MAX);
    m->packet_hops = get_u64(r, res, "packet_hops", UINT64_MAX);
    *deadlock = (int)get_u64(r, res, "deadlock", 1);

    rank_info *ri = xcalloc((size_t)g.nranks + 1, sizeof *ri);
    jval *procs = need(r, root, "processors", J_ARR);
    for (jval *p = procs->kid; p; p = p->next) {
        if (p->t != J_OBJ) rfail(r, p, "\"processors\" should hold objects");
        int c[4];
        get_ints(r, p, "coords", 4, c, TSIM_MAX_DIM);
        for (int d = 0; d < 3; d++)
            if (c[d] >= g.dim[d]) rfail(r, p, "processor coordinates outside the shape");
        if (c[3] >= TSIM_CPUS) rfail(r, p, "processor t=%d: at most %d per node", c[3], TSIM_CPUS);
        jval *rk = need(r, p, "rank", J_NUM);
        if (rk->str[0] == '-') continue; /* not a rank */
        int rank = (int)num_u64(r, rk, "rank", INT_MAX);
        /* a CO node's coprocessor carries its rank's number but is not the rank */
        if (c[3] >= g.cpus || rank >= g.nranks) continue;
        int node = tsim_node_of(&g, c[0], c[1], c[2]);
        m->rank[node * TSIM_CPUS + c[3]] = rank;
        rank_info *x = &ri[rank];
        if (x->found) rfail(r, p, "rank %d appears twice", rank);
        x->found = 1;
        x->cycles = get_u64(r, p, "cycles", UINT64_MAX);
        label(x->state, sizeof x->state, need(r, p, "state", J_STR)->str);
        jval *ms = need(r, p, "msgs_sent", J_ARR);
        int k = 0;
        for (jval *e = ms->kid; e && k < TSIM_NSW_KINDS; e = e->next)
            x->msgs[k++] = num_u64(r, e, "msgs_sent", UINT64_MAX);
    }

    jval *links = need(r, root, "links", J_ARR);
    unsigned char *seen = xcalloc((size_t)g.nnodes * TSIM_NPORTS, 1);
    for (jval *l = links->kid; l; l = l->next) {
        if (l->t != J_OBJ) rfail(r, l, "\"links\" should hold objects");
        int c[3];
        get_ints(r, l, "node", 3, c, TSIM_MAX_DIM);
        for (int d = 0; d < 3; d++)
            if (c[d] >= g.dim[d]) rfail(r, l, "link of a node outside the shape");
        jval *dir = need(r, l, "dir", J_STR);
        int port = -1;
        for (int q = 0; q < TSIM_NPORTS; q++)
            if (!strcmp(dir->str, tsim_port_name(q))) port = q;
        if (port < 0) rfail(r, dir, "\"dir\" should be one of x+ x- y+ y- z+ z-");
        int node = tsim_node_of(&g, c[0], c[1], c[2]);
        if (tsim_neighbor(&g, node, port) < 0)
            rfail(r, l, "the machine has no link %s of <%d,%d,%d>", tsim_port_name(port), c[0], c[1], c[2]);
        if (seen[node * TSIM_NPORTS + port]) rfail(r, l, "link %s of <%d,%d,%d> appears twice",
                                                   tsim_port_name(port), c[0], c[1], c[2]);
        seen[node * TSIM_NPORTS + port] = 1;
        tsim_link_stats *s = &m->link[node * TSIM_NPORTS + port];
        s->packets = get_u64(r, l, "packets", UINT64_MAX);
        s->bytes = get_u64(r, l, "bytes", UINT64_MAX);
        s->busy_cycles = get_u64(r, l, "busy_cycles", UINT64_MAX);
    }
    free(seen);
    *ranks_out = ri;
}

/* ---- the summary: mpirun's report lines, then the busiest links ----------- */

/* The rank-to-rank traffic ("traffic", tsim_matrix.h), if the report has
 * one (reports of older bglemu do not): 1, else 0. */
static int load_traffic(const report *r, int nranks, tsim_rankmatrix *tm)
{
    jval *tr = member(r->root, "traffic");
    if (!tr) return 0;
    if (tr->t != J_OBJ) rfail(r, tr, "\"traffic\" should be an object");
    int n = (int)get_u64(r, tr, "ranks", INT_MAX);
    if (n != nranks) rfail(r, member(tr, "ranks"), "the traffic matrix has %d ranks, the machine %d", n, nranks);
    if (tsim_rankmatrix_init(tm, n) != 0) die(1, "out of memory");
    for (jval *p = need(r, tr, "pairs", J_ARR)->kid; p; p = p->next) {
        if (p->t != J_OBJ) rfail(r, p, "\"pairs\" should hold objects");
        int a = (int)get_u64(r, p, "from", INT_MAX), b = (int)get_u64(r, p, "to", INT_MAX);
        if (a >= n || b >= n) rfail(r, p, "pair %d -> %d: ranks are 0..%d", a, b, n - 1);
        tsim_pair *c = &tm->p[(size_t)a * (size_t)n + (size_t)b];
        if (c->packets) rfail(r, p, "pair %d -> %d appears twice", a, b);
        c->packets = get_u64(r, p, "packets", UINT64_MAX);
        c->bytes = get_u64(r, p, "bytes", UINT64_MAX);
    }
    return 1;
}

/* The heaviest pairs, by bytes, with the hops between their nodes. */
static void pairs(const pic_linkmap *m, const tsim_rankmatrix *tm, int top, FILE *f)
{
    int n = tm->nranks, npairs = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++)
        if (tm->p[i].packets) npairs++, total += tm->p[i].bytes;
    if (!npairs || top <= 0) return;
    int *node = xcalloc((size_t)n, sizeof *node);
    for (int i = 0; i < n; i++) node[i] = -1;
    for (int p = 0; p < m->g.nnodes * TSIM_CPUS; p++)
        if (m->rank[p] >= 0 && m->rank[p] < n) node[m->rank[p]] = p / TSIM_CPUS;
    int *pick = xcalloc((size_t)top, sizeof *pick);
    int k = report_matrix_top(tm, top, pick);
    fprintf(f, "heaviest pairs (%d pairs sent %llu bytes over the torus):\n", npairs,
            (unsigned long long)total);
    for (int i = 0; i < k; i++) {
        int a = pick[i] / n, b = pick[i] % n;
        const tsim_pair *c = &tm->p[pick[i]];
        fprintf(f, "  %d -> %d: %llu bytes (%.1f%%), %llu packets", a, b,
                (unsigned long long)c->bytes, 100.0 * (double)c->bytes / (double)total,
                (unsigned long long)c->packets);
        if (node[a] >= 0 && node[b] >= 0) {
            int h = tsim_hops(&m->g, node[a], node[b]);
            fprintf(f, ", %d hop%s", h, h == 1 ? "" : "s");
        }
        fputc('\n', f);
    }
    free(pick);
    free(node);
}

static void summary(const pic_linkmap *m, const rank_info *ri, int deadlock, int top,
                    const tsim_rankmatrix *tm, int top_pairs, FILE *f)
{
    const tsim_geom *g = &m->g;
    char conn[32];
    int nt = g->torus[0] + g->torus[1] + g->torus[2];
    if (nt == 3 || nt == 0)
        snprintf(conn, sizeof conn, "%s", nt ? "torus" : "mesh");
    else
        snprintf(conn, sizeof conn, "%s,%s,%s", g->torus[0] ? "torus" : "mesh",
                 g->torus[1] ? "torus" : "mesh", g->torus[2] ? "torus" : "mesh");
    if (m->job[0]) fprintf(f, "job: %s\n", m->job);
    fprintf(f, "%d rank%s on %dx%dx%d %s, %s mode, mapping %s\n", g->nranks,
            g->nranks == 1 ? "" : "s", g->dim[0], g->dim[1], g->dim[2], conn,
            g->cpus == 2 ? "VN" : "CO", m->mapping);
    fprintf(f, "simulated time %llu cycles = %.3f us at %llu MHz; %llu packets delivered, "
               "%llu packet-hops\n",
            (unsigned long long)m->end_cycles, (double)m->end_cycles / (double)m->clock_mhz,
            (unsigned long long)m->clock_mhz, (unsigned long long)m->packets_delivered,
            (unsigned long long)m->packet_hops);

    int n = g->nranks, found = 0, rlo = 0, rhi = 0, others = 0, traffic = 0;
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0, msgs[TSIM_NSW_KINDS] = {0}, total = 0;
    for (int r = 0; r < n; r++) {
        if (!ri[r].found) continue;
        found++;
        uint64_t t = ri[r].cycles;
        if (t < lo) lo = t, rlo = r;
        if (t > hi) hi = t, rhi = r;
        sum += t;
        for (int k = 0; k < ML_NPROTO; k++) msgs[k] += ri[r].msgs[k];
        /* bgl-traffic's processors are driven by the engine: no clock, no exit */
        traffic += !strcmp(ri[r].state, "traffic");
        others += strcmp(ri[r].state, "exited") && strcmp(ri[r].state, "traffic");
    }
    if (traffic && traffic == found) {
        fprintf(f, "processors: %d driven by the engine (bgl-traffic), no program clocks\n", traffic);
    } else if (n <= 8) {
        fprintf(f, "per rank (cycles):");
        for (int r = 0; r < n; r++)
            if (ri[r].found) fprintf(f, " %d:%llu", r, (unsigned long long)ri[r].cycles);
            else fprintf(f, " %d:?", r);
        fputc('\n', f);
    } else if (found) {
        fprintf(f, "per rank (cycles): min %llu (rank %d), mean %llu, max %llu (rank %d)\n",
                (unsigned long long)lo, rlo, (unsigned long long)(sum / (uint64_t)n),
                (unsigned long long)hi, rhi);
    }
    if (found < n) fprintf(f, "ranks missing from the report: %d of %d\n", n - found, n);
    if (others) {
        /* the first few are enough to start looking */
        fprintf(f, "ranks that had not exited at the end: %d:", others);
        for (int r = 0, shown = 0; r < n && shown < 8; r++)
            if (ri[r].found && strcmp(ri[r].state, "exited") && strcmp(ri[r].state, "traffic"))
                fprintf(f, " %d (%s)", r, ri[r].state), shown++;
        fputs(others > 8 ? " ...\n" : "\n", f);
    }
    if (deadlock) fprintf(f, "the job ended in an application deadlock\n");
    for (int k = 1; k < ML_NPROTO; k++) total += msgs[k];
    if (total) {
        fprintf(f, "messages by protocol:");
        for (int k = 1; k < ML_NPROTO; k++)
            if (msgs[k])
                fprintf(f, " %s %llu (%.0f%%)", ml_proto_name((ml_proto)k),
                        (unsigned long long)msgs[k], 100.0 * (double)msgs[k] / (double)total);
        fputc('\n', f);
    }

    char line[256];
    int used = pic_linkmap_summary(m, line, sizeof line);
    fprintf(f, "%s\n", line);
    if (tm) pairs(m, tm, top_pairs, f);

    /* the busiest links: by busy cycles, ties in node and port order */
    if (top > used) top = used;
    if (top <= 0) return;
    int *pick = xcalloc((size_t)top, sizeof *pick);
    int npick = 0;
    for (int i = 0; i < g->nnodes * TSIM_NPORTS; i++) {
        if (tsim_neighbor(g, i / TSIM_NPORTS, i % TSIM_NPORTS) < 0 || !m->link[i].packets) continue;
        uint64_t b = m->link[i].busy_cycles;
        int at = npick;
        while (at > 0 && m->link[pick[at - 1]].busy_cycles < b) at--;
        if (at >= top) continue;
        if (npick < top) npick++;
        memmove(pick + at + 1, pick + at, (size_t)(npick - 1 - at) * sizeof *pick);
        pick[at] = i;
    }
    fprintf(f, "busiest links:\n");
    for (int k = 0; k < npick; k++) {
        int node = pick[k] / TSIM_NPORTS, port = pick[k] % TSIM_NPORTS, c[3], d[3];
        tsim_coords(g, node, c);
        tsim_coords(g, tsim_neighbor(g, node, port), d);
        const tsim_link_stats *l = &m->link[pick[k]];
        fprintf(f, "  %s of <%d,%d,%d> to <%d,%d,%d>: %.1f%% busy, %llu packets, %llu bytes\n",
                tsim_port_name(port), c[0], c[1], c[2], d[0], d[1], d[2],
                100.0 * pic_linkmap_util(m, node, port), (unsigned long long)l->packets,
                (unsigned long long)l->bytes);
    }
    free(pick);
}

/* Opened before anything is printed: a bad path is the only output. */
static FILE *open_out(const char *opt, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) die(1, "%s %s: cannot open: %s", opt, path, strerror(errno));
    return f;
}

static void write_heatmap(const pic_linkmap *m, const char *opt, const char *path, FILE *f, int svg)
{
    if (svg) pic_linkmap_svg(m, f);
    else pic_linkmap_text(m, f);
    if (f == stdout ? fflush(f) != 0 : fclose(f) != 0)
        die(1, "%s %s: write failed: %s", opt, path, strerror(errno));
}

int main(int argc, char **argv)
{
    const char *in = NULL, *svg = NULL, *heat = NULL, *mx = NULL;
    int top = 5, heat_svg = 0, top_pairs = 5;
    char err[4200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--svg") || !strcmp(a, "--heatmap") || !strcmp(a, "--top") ||
            !strcmp(a, "--pairs") || !strcmp(a, "--matrix")) {
            if (i + 1 >= argc) die(2, "option %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--top") || !strcmp(a, "--pairs")) {
                char *end;
                long t = strtol(v, &end, 10);
                if (end == v || *end || t < 0 || t > 100000)
                    die(2, "%s '%s': want an integer 0..100000", a, v);
                *(!strcmp(a, "--top") ? &top : &top_pairs) = (int)t;
            } else if (!strcmp(a, "--matrix")) {
                if (strcmp(v, "-") && pic_heatmap_format(v, err, sizeof err) != PIC_HEAT_SVG)
                    die(2, "--matrix %s: the matrix is drawn as an SVG picture (OUT.svg)", v);
                mx = v;
            } else if (!strcmp(a, "--svg")) {
                if (strcmp(v, "-") && pic_heatmap_format(v, err, sizeof err) < 0)
                    die(2, "--svg %s", err);
                svg = v;
            } else {
                heat = v;
                if (strcmp(v, "-") &&
                    (heat_svg = pic_heatmap_format(v, err, sizeof err)) < 0)
                    die(2, "--heatmap %s", err);
            }
            continue;
        }
        if (a[0] == '-' && a[1]) die(2, "unknown option '%s' (see bglemu-report --help)", a);
        if (in) die(2, "one report at a time: '%s' and '%s'", in, a);
        in = a;
    }
    if (!in) die(2, "no report given (see bglemu-report --help)");
    if ((svg && !strcmp(svg, "-")) + (heat && !strcmp(heat, "-")) + (mx && !strcmp(mx, "-")) > 1)
        die(2, "only one of --svg, --heatmap and --matrix can write to stdout ('-')");

    report r;
    memset(&r, 0, sizeof r);
    size_t len;
    char *buf = slurp(in, &len);
    r.jp.buf = r.jp.p = buf;
    r.jp.end = buf + len;
    r.jp.file = strcmp(in, "-") ? in : "<stdin>";
    r.root = parse_value(&r.jp);
    skip_ws(&r.jp);
    if (r.jp.p < r.jp.end) jfail(&r.jp, r.jp.p, "unexpected text after the JSON value");

    pic_linkmap m;
    rank_info *ri;
    int deadlock;
    load(&r, &m, &ri, &deadlock);
    tsim_rankmatrix tm = {0, NULL};
    int have_tm = load_traffic(&r, m.g.nranks, &tm);
    if (mx && !have_tm) die(1, "%s: no traffic matrix (\"traffic\"): a report of an older bglemu?", in);
    int to_stdout = (svg && !strcmp(svg, "-")) || (heat && !strcmp(heat, "-")) || (mx && !strcmp(mx, "-"));
    FILE *svg_f = svg ? open_out("--svg", svg) : NULL;
    FILE *heat_f = heat ? open_out("--heatmap", heat) : NULL;
    FILE *mx_f = mx ? open_out("--matrix", mx) : NULL;
    if (!to_stdout) {
        summary(&m, ri, deadlock, top, have_tm ? &tm : NULL, top_pairs, stdout);
        if (fflush(stdout) != 0) die(1, "stdout: write failed: %s", strerror(errno));
    }
    if (svg) write_heatmap(&m, "--svg", svg, svg_f, 1);
    if (heat) write_heatmap(&m, "--heatmap", heat, heat_f, heat_svg);
    if (mx) {
        char title[2 * PIC_LABEL_MAX + 16];
        snprintf(title, sizeof title, "%s%s%s", m.job, m.job[0] ? ", mapping " : "mapping ", m.mapping);
        report_matrix_svg(&tm, title, mx_f);
        if (mx_f == stdout ? fflush(mx_f) != 0 : fclose(mx_f) != 0)
            die(1, "--matrix %s: write failed: %s", mx, strerror(errno));
    }
    tsim_rankmatrix_free(&tm);
    pic_linkmap_free(&m);
    free(ri);
    jfree(r.root);
    free(buf);
    return 0;
}
