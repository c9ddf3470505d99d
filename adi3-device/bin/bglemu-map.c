/* bglemu-map: a mapping from a run's traffic. Reads the traffic matrix of a
 * report (mpirun --report) or a matrix file, maps the communication graph
 * onto the machine with Scotch, refines it by pair swaps, writes a file
 * mpirun -mapfile takes, and compares it with the run's own mapping, every
 * standard order and every shipped mapping file that fits: hop-bytes,
 * hops per byte, the predicted busiest link. See docs/mapping.md. */
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mapfiles/map.h"
#include "messagelayer/ml_map.h"

static const char *prog = "bglemu-map";

static void usage(FILE *f)
{
    fputs("usage: bglemu-map [options] REPORT.json|MATRIX.txt [-o FILE.map]\n"
          "Maps a run's traffic onto the torus with Scotch and prints, for the run's own\n"
          "mapping, every order, every shipped mapping file that fits and the new one:\n"
          "hop-bytes, hops per byte and the predicted busiest link (docs/mapping.md).\n"
          "  -o FILE.map        write the new mapping (x y z t per rank) for mpirun -mapfile\n"
          "  -np N              ranks (a report's own; a matrix file: its size)\n"
          "  -mode CO|VN        one or two ranks per node (default: the report's, else CO)\n"
          "  -shape XxYxZ       the machine (default: the report's, else the most cubic)\n"
          "  -connect TORUS|MESH|X,Y,Z  wrap-around links (default: the report's, else TORUS)\n"
          "  -mapfile FILE|ORDER  the current mapping to compare (default: the report's)\n"
          "  --mapfiles DIR     shipped mapping files to compare (default\n"
          "                     PREFIX/share/bglemu/mapfiles; '' none)\n"
          "  --passes N         refinement passes of pair swaps (default 20, 0: Scotch alone)\n"
          "  --help             this text\n"
          "A matrix file holds N lines of N non-negative integers: bytes from the line's\n"
          "rank to the column's; '#' starts a comment.\n"
          "Exit status: 0 done; 1 bad input or no mapping; 2 bad options.\n",
          f);
}

#include "report_json.h"

/* What the input says: the machine (if a report), the current placement
 * (if a report), the pairs. */
typedef struct input {
    int have_machine;
    tsim_geom g;
    char mapping[256];
    int *cur;  /* rank -> processor as the run placed it, NULL if unknown */
    map_edge *e;
    int ne;
} input;

static void read_report(const char *path, char *buf, size_t len, input *in)
{
    report r = {{buf, buf, buf + len, path, 0}, NULL};
    r.root = parse_value(&r.jp);
    skip_ws(&r.jp);
    if (r.jp.p != r.jp.end) jfail(&r.jp, r.jp.p, "unexpected %s after the report", what_is(&r.jp));
    if (r.root->t != J_OBJ) rfail(&r, r.root, "the file should hold one JSON object");
    jval *mach = need(&r, r.root, "machine", J_OBJ);
    tsim_geom *g = &in->g;
    get_ints(&r, mach, "shape", 3, g->dim, TSIM_MAX_DIM);
    for (int d = 0; d < 3; d++)
        if (g->dim[d] < 1) rfail(&r, member(mach, "shape"), "\"shape\" sides should be 1..%d", TSIM_MAX_DIM);
    get_ints(&r, mach, "torus", 3, g->torus, 1);
    g->cpus = (int)get_u64(&r, mach, "cpus_per_node", TSIM_CPUS);
    if (g->cpus < 1) rfail(&r, member(mach, "cpus_per_node"), "\"cpus_per_node\" should be 1 or 2");
    g->nnodes = g->dim[0] * g->dim[1] * g->dim[2];
    if (g->nnodes * TSIM_CPUS > TSIM_MAX_PROCS)
        rfail(&r, member(mach, "shape"), "a %dx%dx%d machine is larger than bglemu's %d nodes",
              g->dim[0], g->dim[1], g->dim[2], TSIM_MAX_PROCS / TSIM_CPUS);
    g->nranks = (int)get_u64(&r, mach, "ranks", (uint64_t)(g->nnodes * g->cpus));
    if (g->nranks < 1) rfail(&r, member(mach, "ranks"), "no ranks");
    snprintf(in->mapping, sizeof in->mapping, "%s", need(&r, mach, "mapping", J_STR)->str);
    in->have_machine = 1;
    /* where the run put each rank: the report's processors */
    in->cur = xcalloc((size_t)g->nranks, sizeof *in->cur);
    for (int i = 0; i < g->nranks; i++) in->cur[i] = -1;
    for (jval *p = need(&r, r.root, "processors", J_ARR)->kid; p; p = p->next) {
        if (p->t != J_OBJ) rfail(&r, p, "\"processors\" should hold objects");
        int c[4];
        get_ints(&r, p, "coords", 4, c, TSIM_MAX_DIM);
        for (int d = 0; d < 3; d++)
            if (c[d] >= g->dim[d]) rfail(&r, p, "processor coordinates outside the shape");
        jval *rk = need(&r, p, "rank", J_NUM);
        if (rk->str[0] == '-' || c[3] >= g->cpus || c[3] >= TSIM_CPUS) continue;
        int rank = (int)num_u64(&r, rk, "rank", INT_MAX);
        if (rank >= g->nranks) continue;
        in->cur[rank] = tsim_node_of(g, c[0], c[1], c[2]) * TSIM_CPUS + c[3];
    }
    for (int i = 0; i < g->nranks; i++)
        if (in->cur[i] < 0) {
            free(in->cur); /* e.g. a job that failed early: compare without it */
            in->cur = NULL;
            break;
        }
    jval *tr = member(r.root, "traffic");
    if (!tr) die(1, "%s: no traffic matrix (\"traffic\"): a report of an older bglemu? run the "
                 "job again with mpirun --report", path);
    if (tr->t != J_OBJ) rfail(&r, tr, "\"traffic\" should be an object");
    int n = (int)get_u64(&r, tr, "ranks", INT_MAX);
    if (n != g->nranks)
        rfail(&r, member(tr, "ranks"), "the traffic matrix has %d ranks, the machine %d", n, g->nranks);
    jval *pairs = need(&r, tr, "pairs", J_ARR);
    in->e = xcalloc((size_t)pairs->n + 1, sizeof *in->e);
    for (jval *p = pairs->kid; p; p = p->next) {
        if (p->t != J_OBJ) rfail(&r, p, "\"pairs\" should hold objects");
        map_edge *e = &in->e[in->ne++];
        e->from = (int)get_u64(&r, p, "from", INT_MAX);
        e->to = (int)get_u64(&r, p, "to", INT_MAX);
        e->bytes = get_u64(&r, p, "bytes", UINT64_MAX / 4096);
        if (e->from >= n || e->to >= n)
            rfail(&r, p, "pair %d -> %d: ranks are 0..%d", e->from, e->to, n - 1);
    }
    jfree(r.root);
}

/* N lines of N non-negative integers. */
static void read_matrix(const char *path, char *buf, input *in)
{
    int n = -1, row = 0, line = 0, cap = 0;
    for (char *s = buf, *next; s && *s; s = next) {
        next = strchr(s, '\n');
        if (next) *next++ = 0;
        line++;
        char *hash = strchr(s, '#');
        if (hash) *hash = 0;
        int col = 0;
        for (char *t = strtok(s, " \t\r,"); t; t = strtok(NULL, " \t\r,"), col++) {
            char *end;
            errno = 0;
            if (*t == '-') die(1, "%s:%d: negative entry '%s' (bytes from rank %d to rank %d)", path,
                               line, t, row, col);
            unsigned long long v = strtoull(t, &end, 10);
            if (errno || *end || end == t)
                die(1, "%s:%d: entry '%s' is not a non-negative integer", path, line, t);
            if (n >= 0 && col >= n) die(1, "%s:%d: more than %d entries on the line", path, line, n);
            if (!v) continue;
            if (in->ne == cap) {
                cap = cap ? 2 * cap : 1024;
                in->e = realloc(in->e, sizeof *in->e * (size_t)cap);
                if (!in->e) die(1, "out of memory");
            }
            in->e[in->ne++] = (map_edge){row, col, v};
        }
        if (!col) continue;
        if (n < 0) n = col; /* the first row sets the size */
        if (col < n) die(1, "%s:%d: missing entries: %d of %d on rank %d's line", path, line, col, n, row);
        if (++row > n) die(1, "%s:%d: more than %d lines for %d ranks", path, line, n, n);
    }
    if (n < 0) die(1, "%s: empty matrix", path);
    if (row < n) die(1, "%s: missing lines: %d of %d ranks", path, row, n);
    in->g.nranks = n;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void row(const char *name, const map_cost *c, const map_machine *m)
{
    char link[64] = "-";
    if (c->max_node >= 0) {
        int xyz[3];
        tsim_coords(&m->g, c->max_node, xyz);
        snprintf(link, sizeof link, "%s of <%d,%d,%d>", tsim_port_name(c->max_port), xyz[0], xyz[1], xyz[2]);
    }
    printf("%-34s %14llu %9.3f %14llu  %s\n", name, (unsigned long long)c->hop_bytes,
           c->bytes ? (double)c->hop_bytes / (double)c->bytes : 0.0,
           (unsigned long long)c->max_link, link);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The placement kept as the best so far: the least loaded busiest link,
 * then the lowest congestion (sum of squared link loads), then the first
 * considered: the current mapping (nothing predicted better: no reason to
 * move), Scotch's, then the orders and files compared. */
typedef struct best {
    int *proc;
    map_cost c;
    char name[300];
} best;

static void consider(best *b, const char *name, const int *proc, const map_cost *c, int n)
{
    if (b->name[0] && (c->max_link > b->c.max_link ||
                       (c->max_link == b->c.max_link && c->sumsq >= b->c.sumsq)))
        return;
    memcpy(b->proc, proc, sizeof *proc * (size_t)n);
    b->c = *c;
    snprintf(b->name, sizeof b->name, "%s", name);
}

static void eval_row(const map_graph *gr, const map_machine *m, const char *name, const int *proc,
                     best *b)
{
    map_cost c;
    if (map_cost_eval(gr, m, proc, &c) != 0) die(1, "out of memory");
    row(name, &c, m);
    consider(b, name, proc, &c, gr->n);
}

static void parse_geom_opts(tsim_geom *g, const char *shape, const char *mode, const char *connect)
{
    if (mode) {
        if (!strcasecmp(mode, "CO")) g->cpus = 1;
        else if (!strcasecmp(mode, "VN")) g->cpus = 2;
        else die(2, "-mode '%s': want CO or VN", mode);
    }
    if (shape) {
        char t;
        char buf[64];
        snprintf(buf, sizeof buf, "%s", shape);
        for (char *c = buf; *c; c++) if (*c == 'X') *c = 'x';
        if (sscanf(buf, "%dx%dx%d%c", &g->dim[0], &g->dim[1], &g->dim[2], &t) != 3)
            die(2, "-shape '%s': want XxYxZ, e.g. 4x4x2", shape);
        for (int d = 0; d < 3; d++)
            if (g->dim[d] < 1 || g->dim[d] > TSIM_MAX_DIM)
                die(2, "-shape '%s': each side must be 1..%d", shape, TSIM_MAX_DIM);
    }
    if (connect) {
        char buf[64], *w[4], *save = NULL;
        snprintf(buf, sizeof buf, "%s", connect);
        int k = 0;
        for (char *s = strtok_r(buf, ",", &save); s && k < 4; s = strtok_r(NULL, ",", &save)) w[k++] = s;
        if (k != 1 && k != 3) die(2, "-connect '%s': want TORUS or MESH, or one per dimension like TORUS,MESH,TORUS", connect);
        for (int d = 0; d < 3; d++) {
            const char *x = w[k == 1 ? 0 : d];
            if (!strcasecmp(x, "TORUS")) g->torus[d] = 1;
            else if (!strcasecmp(x, "MESH")) g->torus[d] = 0;
            else die(2, "-connect '%s': want TORUS or MESH, or one per dimension like TORUS,MESH,TORUS", connect);
        }
    }
}

int main(int argc, char **argv)
{
    const char *in_path = NULL, *out = NULL, *shape = NULL, *mode = NULL, *connect = NULL;
    const char *mapspec = NULL, *mapdir = NULL;
    int np = 0, passes = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *n = a[0] == '-' && a[1] == '-' && a[2] ? a + 2 : a[0] == '-' && a[1] ? a + 1 : NULL;
        if (!n) {
            if (in_path) die(2, "one report or matrix, not '%s' too (see --help)", a);
            in_path = a;
            continue;
        }
        if (!strcmp(n, "help") || !strcmp(n, "h")) {
            usage(stdout);
            return 0;
        }
        static const char *const opts[] = {"o", "np", "n", "mode", "shape", "connect", "mapfile",
                                           "mapfiles", "passes"};
        int known = 0;
        for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) known |= !strcmp(n, opts[k]);
        if (!known) die(2, "unknown option '%s' (see --help)", a);
        if (i + 1 >= argc) die(2, "option %s needs a value", a);
        const char *v = argv[++i];
        char *end;
        if (!strcmp(n, "o")) out = v;
        else if (!strcmp(n, "np") || !strcmp(n, "n")) {
            np = (int)strtol(v, &end, 10);
            if (*end || end == v || np < 1 || np > TSIM_MAX_PROCS) die(2, "%s '%s': want 1..%d", a, v, TSIM_MAX_PROCS);
        } else if (!strcmp(n, "mode")) mode = v;
        else if (!strcmp(n, "shape")) shape = v;
        else if (!strcmp(n, "connect")) connect = v;
        else if (!strcmp(n, "mapfile")) mapspec = v;
        else if (!strcmp(n, "mapfiles")) mapdir = v;
        else if (!strcmp(n, "passes")) {
            passes = (int)strtol(v, &end, 10);
            if (*end || end == v || passes < 0 || passes > 100000) die(2, "--passes '%s': want 0..100000", v);
        }
    }
    if (!in_path) die(2, "no report or matrix to read (see --help)");
    tsim_geom g0;
    memset(&g0, 0, sizeof g0);
    g0.torus[0] = g0.torus[1] = g0.torus[2] = 1;
    g0.cpus = 1;
    parse_geom_opts(&g0, shape, mode, connect); /* options checked before reading anything */
    /* the output is opened first: a bad path is the only output */
    FILE *of = NULL;
    if (out && !(of = fopen(out, "w"))) die(1, "-o %s: cannot open: %s", out, strerror(errno));

    size_t len;
    char *buf = slurp(in_path, &len);
    input in;
    memset(&in, 0, sizeof in);
    const char *p = buf;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    if (*p == '{') read_report(in_path, buf, len, &in);
    else read_matrix(in_path, buf, &in);
    free(buf);

    tsim_geom g = in.g;
    int same_machine = in.have_machine;
    if (!in.have_machine) g = g0, g.nranks = in.g.nranks;
    if (np && np != g.nranks)
        die(1, "%s: the traffic is of %d ranks, -np %d asks for another rank count", in_path,
            g.nranks, np);
    if (mode || shape || connect) {
        tsim_geom h = g;
        parse_geom_opts(&h, shape, mode, connect);
        if (memcmp(h.dim, g.dim, sizeof h.dim) || memcmp(h.torus, g.torus, sizeof h.torus) ||
            h.cpus != g.cpus)
            same_machine = 0;
        g = h;
    }
    if (!shape && !in.have_machine && ml_shape_default(g.nranks, g.cpus, g.dim) != 0)
        die(1, "%s: no machine holds %d ranks", in_path, g.nranks);
    g.nnodes = g.dim[0] * g.dim[1] * g.dim[2];
    if (g.nranks > g.nnodes * g.cpus)
        die(1, "%s: %d ranks do not fit %dx%dx%d in %s mode (%d processors)", in_path, g.nranks,
            g.dim[0], g.dim[1], g.dim[2], g.cpus == 2 ? "VN" : "CO", g.nnodes * g.cpus);

    char err[512];
    map_graph gr;
    if (map_graph_build(&gr, g.nranks, in.e, in.ne, err, sizeof err) != 0) die(1, "%s: %s", in_path, err);
    map_machine m;
    if (map_machine_init(&m, &g) != 0) die(1, "out of memory");
    uint64_t total = 0;
    for (int i = 0; i < gr.nedges; i++) total += gr.e[i].bytes;
    char conn[32];
    int mixed = g.torus[0] != g.torus[1] || g.torus[1] != g.torus[2];
    if (mixed) snprintf(conn, sizeof conn, "%s,%s,%s", g.torus[0] ? "torus" : "mesh",
                        g.torus[1] ? "torus" : "mesh", g.torus[2] ? "torus" : "mesh");
    else snprintf(conn, sizeof conn, "%s", g.torus[0] ? "torus" : "mesh");
    printf("%s: %d ranks on %dx%dx%d %s, %s mode; %d pairs sent %llu bytes between ranks\n",
           in_path, g.nranks, g.dim[0], g.dim[1], g.dim[2], conn, g.cpus == 2 ? "VN" : "CO",
           gr.nedges, (unsigned long long)total);
    printf("%-34s %14s %9s %14s  %s\n", "mapping", "hop-bytes", "hops/byte", "busiest link",
           "(bytes, deterministic routes)");

    best b = {xcalloc((size_t)g.nranks, sizeof(int)), {0}, ""};
    best known = {xcalloc((size_t)g.nranks, sizeof(int)), {0}, ""};
    ml_map mm;
    char name[300];
    /* the run's own mapping, or the one named */
    if (mapspec) {
        if (ml_map_build(&mm, mapspec, &g, err, sizeof err) != 0) die(1, "-mapfile: %s", err);
        snprintf(name, sizeof name, "current (%s)", mapspec);
        eval_row(&gr, &m, name, mm.proc, &known);
        consider(&b, name, mm.proc, &known.c, g.nranks);
        ml_map_free(&mm);
    } else if (in.cur && same_machine) {
        snprintf(name, sizeof name, "current (%.280s)", in.mapping);
        eval_row(&gr, &m, name, in.cur, &known);
        consider(&b, name, in.cur, &known.c, g.nranks);
    }
    /* every order: T last only in CO mode, where T is always 0 */
    static const char *const dims = "XYZT";
    for (int a = 0; a < 4; a++)
        for (int bb = 0; bb < 4; bb++)
            for (int c = 0; c < 4; c++) {
                int d = 6 - a - bb - c;
                if (a == bb || a == c || bb == c || d < 0 || d > 3 || d == a || d == bb || d == c) continue;
                if (g.cpus == 1 && d != 3) continue;
                char ord[5] = {dims[a], dims[bb], dims[c], dims[d], 0};
                if (ml_map_build(&mm, ord, &g, err, sizeof err) != 0) die(1, "%s", err);
                snprintf(name, sizeof name, "order %s", ord);
                eval_row(&gr, &m, name, mm.proc, &known);
                ml_map_free(&mm);
            }
    /* the shipped files that fit this machine and rank count */
    char dirbuf[PATH_MAX + 64];
    if (!mapdir) {
        char exe[PATH_MAX];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[k > 0 ? k : 0] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(dirbuf, sizeof dirbuf, "%s/../share/bglemu/mapfiles", exe);
        mapdir = dirbuf;
    }
    DIR *dir = *mapdir ? opendir(mapdir) : NULL;
    if (dir) {
        char *names[256];
        int nn = 0;
        for (struct dirent *de; (de = readdir(dir)) && nn < 256;) {
            size_t l = strlen(de->d_name);
            if (l > 4 && !strcmp(de->d_name + l - 4, ".map")) names[nn++] = strdup(de->d_name);
        }
        closedir(dir);
        qsort(names, (size_t)nn, sizeof *names, cmp_str);
        for (int i = 0; i < nn; i++) {
            char path[PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", mapdir, names[i]);
            if (ml_map_build(&mm, path, &g, err, sizeof err) == 0) { /* the rest do not fit */
                snprintf(name, sizeof name, "file %.280s", names[i]);
                eval_row(&gr, &m, name, mm.proc, &known);
                ml_map_free(&mm);
            }
            free(names[i]);
        }
    }

    /* Scotch, then swaps; and swaps from the best known placement, so the
     * new mapping is never predicted worse than what was compared */
    int *sp = xcalloc((size_t)g.nranks, sizeof *sp);
    double t0 = now();
    if (map_scotch(&gr, &m, sp, err, sizeof err) != 0) die(1, "%s: %s", in_path, err);
    double t1 = now();
    map_cost c;
    map_cost_eval(&gr, &m, sp, &c);
    row("scotch", &c, &m);
    consider(&b, "scotch", sp, &c, g.nranks);
    long sw = map_refine(&gr, &m, sp, passes, 5.0);
    double t2 = now();
    map_cost_eval(&gr, &m, sp, &c);
    snprintf(name, sizeof name, "scotch + %ld swaps", sw);
    row(name, &c, &m);
    consider(&b, name, sp, &c, g.nranks);
    /* ties go to Scotch's: the compared placements must do strictly better */
    if (known.name[0]) consider(&b, known.name, known.proc, &known.c, g.nranks);
    long sw2 = map_refine(&gr, &m, known.proc, passes, 5.0);
    map_cost_eval(&gr, &m, known.proc, &c);
    if (sw2) {
        snprintf(name, sizeof name, "%.200s + %ld swaps", known.name, sw2);
        row(name, &c, &m);
        consider(&b, name, known.proc, &c, g.nranks);
    }
    double t3 = now();
    printf("new: %s%s%s\n", b.name, of ? " -> " : "", of ? out : "");
    if (!strncmp(b.name, "current", 7))
        printf("nothing is predicted better than the current mapping: keep it\n");
    if (g.cpus == 2) /* docs/mapping.md, "VN mode: a limitation" */
        printf("VN: two ranks on one node count as 0 hops, yet their packets cost the node's "
               "scratchpad and processors: run the new and the current mapping to compare\n");
    fprintf(stderr, "%s: Scotch %.2f s, swaps %.2f s, in all %.2f s\n", prog, t1 - t0,
            (t2 - t1) + (t3 - t2), t3 - t0);
    if (of) {
        fprintf(of, "# bglemu-map %s: %d ranks on %dx%dx%d %s, %s mode\n", in_path, g.nranks,
                g.dim[0], g.dim[1], g.dim[2], conn, g.cpus == 2 ? "VN" : "CO");
        fprintf(of, "# %s: hop-bytes %llu, busiest link %llu bytes\n# x y z t, one line per rank\n",
                b.name, (unsigned long long)b.c.hop_bytes, (unsigned long long)b.c.max_link);
        for (int r = 0; r < g.nranks; r++) {
            int xyz[3];
            tsim_coords(&g, b.proc[r] / TSIM_CPUS, xyz);
            fprintf(of, "%d %d %d %d\n", xyz[0], xyz[1], xyz[2], b.proc[r] % TSIM_CPUS);
        }
        if (fclose(of) != 0) die(1, "-o %s: cannot write: %s", out, strerror(errno));
    }
    free(sp);
    free(b.proc);
    free(known.proc);
    free(in.cur);
    free(in.e);
    map_graph_free(&gr);
    map_machine_free(&m);
    return 0;
}
