/* bgl-traffic: the BookSim-style experiment on the emulated torus. N engine-
 * side processors inject packets in a pattern at an offered load; the tool
 * prints accepted throughput and latency in simulated cycles. Everything it
 * prints is simulated, hence byte-for-byte reproducible for a given seed;
 * host timing appears only with --timing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "torus-sim/tsim.h"
#include "pictures/pic.h"
#include "traffic/trf_traffic.h"

static const char usage[] =
    "usage: bgl-traffic -np N [-shape XxYxZ] [-connect TORUS|MESH]\n"
    "         --pattern uniform|transpose|bitrev|neighbor|hotspot|alltoall\n"
    "         [--load F|sat] [--routing det|adaptive|mixed] [--packets K] [--seed S]\n"
    "         [--chunks 1..8|mixed] [--arrivals bernoulli|exponential] [--hot FRAC] [--hp FRAC]\n"
    "         [--consume CYCLES] [--warmup FRAC] [-p name=value] [--params FILE]\n"
    "         [--report FILE] [--heatmap FILE] [--timing] [--help]\n"
    "\n"
    "  -np N        processors, one per node (CO), ranks on nodes 0..N-1 in XYZ order\n"
    "  -shape       torus shape (default: the smallest near-cubic shape holding N)\n"
    "  --load F     offered load per node as a fraction of one link's bandwidth:\n"
    "               F / ((32*chunks+14)*4) packets per cycle (full packets: F/1080);\n"
    "               'sat' generates every packet at cycle 0. Default 0.5\n"
    "  --packets K  packets per source (default 1000)\n"
    "  --hot FRAC   hotspot: share of packets sent to rank 0 (default 0.25)\n"
    "  --hp FRAC    share of packets on the high-priority VC (default 0)\n"
    "  --consume C  each sink holds a packet C cycles before freeing it (default 0)\n"
    "  --warmup W   measure packets generated in [W, 1-W] x K/lambda (default 0.1)\n"
    "  --report F   write the engine's JSON report (params, per link, per processor)\n"
    "  --heatmap F  link utilization: F.svg a picture of the torus, any other name\n"
    "               a text heatmap ('-': stdout, after the results)\n"
    "  --timing     also print host wall time and packet-hops/s (not reproducible)\n"
    "See docs/traffic.md.\n";

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "bgl-traffic: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (try --help)\n");
    exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    if (!s) die("%s needs a value", opt);
    if (*s == '-' || !*s) die("bad number for %s", opt);
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) die("bad number for %s", opt);
    return v;
}

static double parse_double(const char *opt, const char *s)
{
    char *end;
    if (!s) die("%s needs a value", opt);
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s) die("bad number for %s", opt);
    return v;
}

static int parse_shape(const char *s, int dim[3])
{
    char tail;
    if (!s || sscanf(s, "%dx%dx%d%c", &dim[0], &dim[1], &dim[2], &tail) != 3) return -1;
    for (int i = 0; i < 3; i++)
        if (dim[i] < 1 || dim[i] > TSIM_MAX_DIM) return -1;
    return 0;
}

/* The most cubic shape holding n (smallest largest side), then the fewest
 * nodes: 7 -> 2x2x2 rather than a 7-node ring. */
static void default_shape(int n, int dim[3])
{
    int best = 0, bestmax = 0;
    for (int x = 1; x <= TSIM_MAX_DIM; x++)
        for (int y = 1; y <= x; y++)
            for (int z = 1; z <= y; z++) {
                int v = x * y * z;
                if (v < n || v > TSIM_MAX_PROCS / TSIM_CPUS) continue;
                if (!best || x < bestmax || (x == bestmax && v < best)) {
                    best = v;
                    bestmax = x;
                    dim[0] = x, dim[1] = y, dim[2] = z;
                }
            }
}

int main(int argc, char **argv)
{
    trf_cfg cfg;
    trf_cfg_default(&cfg);
    tsim_params prm;
    tsim_params_default(&prm);
    tsim_geom g = {{0, 0, 0}, {1, 1, 1}, 1, 0, 0};
    const char *report = NULL, *heatmap = NULL;
    int heat_svg = 0;
    /* the job as reports name it: the command without its output files, so
     * equal experiments give equal reports */
    char *jobv[argc + 1]; /* on the stack: no leak on the early exits */
    memset(jobv, 0, sizeof jobv);
    int njob = 0;
    jobv[njob++] = "bgl-traffic";
    int np = 0, have_shape = 0, have_pattern = 0, timing = 0;
    char err[256];

    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int first = i;
#define TAKE() (v ? (i++, v) : (die("%s needs a value", o), v))
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(o, "-np")) {
            uint64_t n = parse_u64(o, TAKE());
            if (n < 1 || n > TSIM_MAX_PROCS / TSIM_CPUS) die("-np must be 1..2048, not %s", v);
            np = (int)n;
        } else if (!strcmp(o, "-shape")) {
            if (parse_shape(TAKE(), g.dim)) die("bad -shape '%s': want XxYxZ, each 1..64", v);
            have_shape = 1;
        } else if (!strcmp(o, "-connect")) {
            TAKE();
            int t = !strcasecmp(v, "TORUS") ? 1 : !strcasecmp(v, "MESH") ? 0 : -1;
            if (t < 0) die("bad -connect '%s': want TORUS or MESH", v);
            g.torus[0] = g.torus[1] = g.torus[2] = t;
        } else if (!strcmp(o, "--pattern")) {
            cfg.pattern = trf_pattern_parse(TAKE());
            if (cfg.pattern < 0)
                die("unknown --pattern '%s': want uniform, transpose, bitrev, neighbor, hotspot "
                    "or alltoall", v);
            have_pattern = 1;
        } else if (!strcmp(o, "--load")) {
            TAKE();
            cfg.load = !strcmp(v, "sat") ? 0 : parse_double(o, v);
            if (strcmp(v, "sat") && !(cfg.load > 0 && cfg.load <= TSIM_NPORTS))
                die("--load %s out of range: want 0 < F <= 6 (fraction of a link) or sat", v);
        } else if (!strcmp(o, "--routing")) {
            TAKE();
            cfg.routing = !strcmp(v, "det") ? TRF_DET
                          : !strcmp(v, "adaptive") ? TRF_ADAPTIVE
                          : !strcmp(v, "mixed") ? TRF_MIXED : -1;
            if (cfg.routing < 0) die("bad --routing '%s': want det, adaptive or mixed", v);
        } else if (!strcmp(o, "--packets")) {
            cfg.packets = parse_u64(o, TAKE());
            if (cfg.packets < 1 || cfg.packets > UINT32_MAX) die("--packets %s out of range", v);
        } else if (!strcmp(o, "--seed")) {
            cfg.seed = parse_u64(o, TAKE());
        } else if (!strcmp(o, "--chunks")) {
            TAKE();
            cfg.chunks = !strcmp(v, "mixed") ? 0 : (int)parse_u64(o, v);
            if (strcmp(v, "mixed") && (cfg.chunks < 1 || cfg.chunks > TSIM_MAX_CHUNKS))
                die("--chunks %s out of range: want 1..8 or mixed", v);
        } else if (!strcmp(o, "--arrivals")) {
            TAKE();
            cfg.arrivals = !strcmp(v, "bernoulli") ? TRF_BERNOULLI
                           : !strcmp(v, "exponential") ? TRF_EXPONENTIAL : -1;
            if (cfg.arrivals < 0) die("bad --arrivals '%s': want bernoulli or exponential", v);
        } else if (!strcmp(o, "--hot")) {
            cfg.hot_frac = parse_double(o, TAKE());
            if (!(cfg.hot_frac >= 0 && cfg.hot_frac <= 1)) die("--hot %s out of range 0..1", v);
        } else if (!strcmp(o, "--hp")) {
            cfg.hp_frac = parse_double(o, TAKE());
            if (!(cfg.hp_frac >= 0 && cfg.hp_frac <= 1)) die("--hp %s out of range 0..1", v);
        } else if (!strcmp(o, "--consume")) {
            cfg.consume_cycles = parse_u64(o, TAKE());
        } else if (!strcmp(o, "--warmup")) {
            cfg.warmup = parse_double(o, TAKE());
            if (!(cfg.warmup >= 0 && cfg.warmup < 0.5)) die("--warmup %s out of range [0, 0.5)", v);
        } else if (!strcmp(o, "-p")) {
            if (tsim_params_set(&prm, TAKE(), err, sizeof err)) die("%s", err);
        } else if (!strcmp(o, "--params")) {
            if (tsim_params_load(&prm, TAKE(), err, sizeof err)) die("%s", err);
        } else if (!strcmp(o, "--report")) {
            report = TAKE();
            continue;
        } else if (!strcmp(o, "--heatmap")) {
            heatmap = TAKE();
            if (strcmp(heatmap, "-") && (heat_svg = pic_heatmap_format(heatmap, err, sizeof err)) < 0)
                die("--heatmap %s", err);
            continue;
        } else if (!strcmp(o, "--timing")) {
            timing = 1;
            continue;
        } else {
            die("unknown option '%s'", o);
        }
#undef TAKE
        for (int k = first; k <= i; k++) jobv[njob++] = argv[k];
    }
    if (!have_pattern) die("%s", "--pattern is required");
    if (!np && !have_shape) die("%s", "-np N or -shape XxYxZ is required");
    if (!have_shape) default_shape(np, g.dim);
    if (!np) np = g.dim[0] * g.dim[1] * g.dim[2];
    cfg.nprocs = np;
    g.nranks = np; /* for the report: one rank per processor */

    trf_traffic *t = trf_new(&g, &prm, &cfg, err, sizeof err);
    if (!t) die("%s", err);
    /* opened before the run: a bad path fails at once, not after the work */
    FILE *rf = report ? fopen(report, "w") : NULL;
    if (report && !rf) {
        fprintf(stderr, "bgl-traffic: --report %s: %s\n", report, strerror(errno));
        trf_free(t);
        return 2;
    }
    FILE *hf = heatmap ? (strcmp(heatmap, "-") ? fopen(heatmap, "w") : stdout) : NULL;
    if (heatmap && !hf) {
        fprintf(stderr, "bgl-traffic: --heatmap %s: %s\n", heatmap, strerror(errno));
        if (rf) fclose(rf), unlink(report);
        trf_free(t);
        return 2;
    }
    char job[PIC_LABEL_MAX];
    pic_job_label(job, sizeof job, jobv);
    tsim_seg *seg = tsim_seg_create(&g, &prm, 0, err, sizeof err);
    if (!seg) die("%s", err);
    snprintf(seg->mapping, sizeof seg->mapping, "XYZT (bgl-traffic)");
    tsim_engine *e = tsim_engine_new(seg);
    if (!e) die("%s", "out of memory for the engine");
    trf_attach(t, seg, e);
    tsim_result res;
    int rc = tsim_engine_run(e, &res);

    trf_stats st;
    trf_get_stats(t, &st);
    trf_print(t, &st, stdout);
    printf("simulated           %llu cycles, %llu packet-hops, %llu events\n",
           (unsigned long long)res.end_time, (unsigned long long)res.packet_hops,
           (unsigned long long)res.events);
    if (timing)
        printf("host timing         engine %.3f s wall, %.2f M packet-hops/s, %.2f M events/s "
               "(varies run to run)\n",
               res.wall_seconds, res.wall_seconds > 0 ? res.packet_hops / res.wall_seconds / 1e6 : 0,
               res.wall_seconds > 0 ? res.events / res.wall_seconds / 1e6 : 0);
    int status = 0;
    if (rc) {
        fprintf(stderr, "bgl-traffic: engine stopped: %s\n", res.deadlock ? "deadlock" : "aborted");
        if (res.deadlock) tsim_engine_print_deadlock(e, stderr);
        status = 1;
    } else if (trf_ok(&st)) {
        fprintf(stderr, "bgl-traffic: packets lost, duplicated, corrupted, misrouted or out of "
                        "order (see above)\n");
        status = 1;
    }
    if (rf) {
        tsim_engine_report_json_job(e, &res, job, rf);
        if (fclose(rf)) {
            fprintf(stderr, "bgl-traffic: --report %s: %s\n", report, strerror(errno));
            status = 2;
        }
    }
    if (hf) {
        if (pic_run_heatmap(seg, e, &res, job, heat_svg ? PIC_HEAT_SVG : PIC_HEAT_TEXT, hf) != 0)
            fprintf(stderr, "bgl-traffic: --heatmap %s: out of memory\n", heatmap), status = 2;
        if (hf == stdout ? fflush(hf) : fclose(hf)) {
            fprintf(stderr, "bgl-traffic: --heatmap %s: %s\n", heatmap, strerror(errno));
            status = 2;
        }
    }
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
    trf_free(t);
    return status;
}
