/* mpirun's command line, BG/L style: single-dash options; the long ones
 * also take two dashes. Every mistake is one line and exit status 2, before
 * anything is created. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mpirun.h"
#include "pictures/pic.h"

void mpirun_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mpirun: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(MPIRUN_USAGE);
}

void mpirun_usage(FILE *f)
{
    fputs("usage: mpirun -np N [options] PROGRAM [ARGS...]\n"
          "Runs N ranks of PROGRAM on an emulated Blue Gene/L torus (see docs/mpirun.md).\n"
          "  -np N              number of ranks (required; -n N too, as mpiexec)\n"
          "  -mode CO|VN        coprocessor (1 rank per node, default) or virtual node (2)\n"
          "  -shape XxYxZ       torus shape (default: the most cubic shape holding the ranks)\n"
          "  -connect TORUS|MESH  wrap-around links or not (default TORUS); per dimension\n"
          "                     as X,Y,Z, e.g. TORUS,MESH,TORUS\n"
          "  -mapfile FILE|ORDER  rank placement: a file of 'x y z t' lines, one per rank,\n"
          "                     or a permutation of XYZT, first letter fastest (default XYZT)\n"
          "  -env NAME=VALUE    set in every rank's environment (repeatable)\n"
          "  -clock none|cputime  MPI programs: compute time between MPI calls is free\n"
          "                     (none: exactly reproducible) or thread CPU time scaled by\n"
          "                     the cputime_scale_pct parameter (default cputime)\n"
          "  -protocol NAME     MPI programs: force the message-layer protocol of every\n"
          "                     MPI message (one-packet, eager, adaptive-eager, rendezvous;\n"
          "                     default auto: chosen by size)\n"
          "  -launcher hydra|fork  start ranks through MPICH's mpiexec.hydra (MPI programs)\n"
          "                     or directly (default: hydra for programs linked with libmpi)\n"
          "  --params FILE      engine parameters, one 'name = value' per line\n"
          "  -p name=value      one engine parameter (repeatable, applied in order)\n"
          "  --report FILE      write the engine's JSON report (per processor, per link)\n"
          "  --heatmap FILE     link utilization: FILE.svg a picture of the torus, any\n"
          "                     other name a text heatmap ('-': stderr)\n"
          "  --trace FILE.json  timeline of the run in simulated time (Chrome trace-event\n"
          "                     JSON, open in ui.perfetto.dev): MPI calls, message-layer\n"
          "                     sends and receptions, waits, collectives, link utilization;\n"
          "                     FILE.otf2: the same as an OTF2 archive (Vampir, ViTE)\n"
          "  --trace-ranks LIST only these ranks, e.g. 0,2,4-7 (default: all)\n"
          "  --trace-window FROM:TO  only events overlapping these cycles (either may be\n"
          "                     empty: 100000: or :5000000)\n"
          "  --trace-max EVENTS at most this many events, the earliest (default 1000000);\n"
          "                     a line on stderr says when the trace was cut\n"
          "  --trace-interval CYCLES  link utilization sampling interval (default 5000)\n"
          "  --progress SECONDS a progress line on stderr this often in long runs\n"
          "                     (default 30, 0: off)\n"
          "  --timeout SECONDS  wall-clock limit, then the job is killed (default none;\n"
          "                     0: none); a deadlock ends the job without it\n"
          "  --help             this text\n"
          "Ranks get BGLEMU_SEG, BGLEMU_RANK (PMI_RANK under hydra), BGLEMU_NRANKS,\n"
          "BGLMPI_MAPPING and BGLEMU_CLOCK (and BGLEMU_TRACE with --trace).\n"
          "Exit status: 0 all ranks exited 0; 1 a rank failed; 2 bad options; 3 deadlock;\n"
          "124 timeout; 128+signal if mpirun was interrupted.\n",
          f);
}

static long parse_int(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        mpirun_die("%s '%s': want an integer %ld..%ld", opt, v, lo, hi);
    return n;
}

static void parse_shape(const char *v, int dim[3])
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *c = buf; *c; c++)
        if (*c == 'X') *c = 'x';
    char tail;
    if (sscanf(buf, "%dx%dx%d%c", &dim[0], &dim[1], &dim[2], &tail) != 3)
        mpirun_die("-shape '%s': want XxYxZ, e.g. 4x4x2", v);
    for (int i = 0; i < 3; i++)
        if (dim[i] < 1 || dim[i] > TSIM_MAX_DIM)
            mpirun_die("-shape '%s': each side must be 1..%d", v, TSIM_MAX_DIM);
}

static int eq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* TORUS or MESH for all three dimensions, or one word per dimension X,Y,Z. */
static void parse_connect(const char *v, int torus[3])
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    char *w[4], *save = NULL;
    int n = 0;
    for (char *s = strtok_r(buf, ",", &save); s && n < 4; s = strtok_r(NULL, ",", &save))
        w[n++] = s;
    size_t commas = 0;
    for (const char *c = v; *c; c++) commas += *c == ',';
    if (!((n == 1 && commas == 0) || (n == 3 && commas == 2)) || strlen(v) >= sizeof buf)
        mpirun_die("-connect '%s': want TORUS or MESH, or one per dimension like TORUS,MESH,TORUS", v);
    for (int d = 0; d < 3; d++) {
        const char *x = w[n == 1 ? 0 : d];
        if (eq(x, "TORUS")) torus[d] = 1;
        else if (eq(x, "MESH")) torus[d] = 0;
        else mpirun_die("-connect '%s': want TORUS or MESH, or one per dimension like TORUS,MESH,TORUS", v);
    }
}

void mpirun_parse(int argc, char **argv, mpirun_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cpus = 1;
    o->torus[0] = o->torus[1] = o->torus[2] = 1;
    o->mapspec = "XYZT";
    o->timeout = 0; /* no limit unless asked: deadlocks are detected anyway */
    o->progress = 30;
    o->clock = "cputime";
    o->trace_to = UINT64_MAX;
    o->trace_max = 1000000;
    o->trace_interval = 5000;
    tsim_params_default(&o->params);
    o->env = calloc((size_t)argc, sizeof *o->env);
    if (!o->env) mpirun_die("out of memory");
    char err[512];
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') break;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        /* --name and -name are the same option */
        const char *n = a[1] == '-' ? a + 2 : a + 1;
        if (!strcmp(n, "help") || !strcmp(n, "h")) {
            mpirun_usage(stdout);
            exit(0);
        }
        static const char *const with_value[] = {"np", "n", "mode", "shape", "connect", "mapfile",
                                                   "env", "params", "p", "report", "timeout",
                                                   "heatmap", "progress", "clock",
                                                   "protocol", "launcher", "trace",
                                                   "trace-ranks", "trace-window", "trace-max",
                                                   "trace-interval"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(n, with_value[k]);
        if (!known) mpirun_die("unknown option '%s' (see mpirun --help)", a);
        if (i + 1 >= argc) mpirun_die("option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(n, "np") || !strcmp(n, "n")) {
            o->np = (int)parse_int(a, v, 1, TSIM_MAX_PROCS);
        } else if (!strcmp(n, "mode")) {
            if (eq(v, "CO")) o->cpus = 1;
            else if (eq(v, "VN")) o->cpus = 2;
            else mpirun_die("-mode '%s': want CO or VN", v);
        } else if (!strcmp(n, "shape")) {
            parse_shape(v, o->dim);
            o->have_shape = 1;
        } else if (!strcmp(n, "connect")) {
            parse_connect(v, o->torus);
        } else if (!strcmp(n, "mapfile")) {
            if (!*v) mpirun_die("-mapfile needs a file or an order such as XYZT");
            o->mapspec = v;
        } else if (!strcmp(n, "env")) {
            const char *eqs = strchr(v, '=');
            size_t len = eqs ? (size_t)(eqs - v) : 0;
            int ok = len > 0 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_") == len && !(v[0] >= '0' && v[0] <= '9');
            if (!ok) mpirun_die("-env '%s': want NAME=VALUE", v);
            o->env[o->nenv++] = (char *)v;
        } else if (!strcmp(n, "params")) {
            if (tsim_params_load(&o->params, v, err, sizeof err) != 0) mpirun_die("%s", err);
        } else if (!strcmp(n, "p")) {
            if (tsim_params_set(&o->params, v, err, sizeof err) != 0)
                mpirun_die("-p %s: %s", v, err);
        } else if (!strcmp(n, "clock")) {
            if (eq(v, "none")) o->clock = "none";
            else if (eq(v, "cputime")) o->clock = "cputime";
            else mpirun_die("-clock '%s': want none or cputime", v);
        } else if (!strcmp(n, "protocol")) {
            int p = ml_proto_parse(v);
            if (p < 0 || p == ML_VN)
                mpirun_die("-protocol '%s': want one-packet, eager, adaptive-eager, rendezvous or auto", v);
            o->protocol = v;
        } else if (!strcmp(n, "launcher")) {
            if (eq(v, "hydra")) o->launcher = MPIRUN_HYDRA;
            else if (eq(v, "fork")) o->launcher = MPIRUN_FORK;
            else mpirun_die("-launcher '%s': want hydra or fork", v);
        } else if (!strcmp(n, "report")) {
            o->report = v;
        } else if (!strcmp(n, "heatmap")) {
            if (strcmp(v, "-") && pic_heatmap_format(v, err, sizeof err) < 0)
                mpirun_die("--heatmap %s", err);
            o->heatmap = v;
        } else if (!strcmp(n, "trace")) {
            if (!*v || !strcmp(v, "-")) mpirun_die("--trace needs a file name (FILE.json)");
            o->trace = v;
        } else if (!strcmp(n, "trace-ranks")) {
            if (!*v || strspn(v, "0123456789,-") != strlen(v))
                mpirun_die("--trace-ranks '%s': want a list of ranks and ranges, e.g. 0,2,4-7", v);
            o->trace_ranks = v;
        } else if (!strcmp(n, "trace-window")) {
            const char *colon = strchr(v, ':');
            char *end;
            if (!colon) mpirun_die("--trace-window '%s': want FROM:TO in cycles", v);
            o->trace_from = 0;
            o->trace_to = UINT64_MAX;
            errno = 0;
            if (colon != v) {
                o->trace_from = strtoull(v, &end, 10);
                if (errno || end != colon || *v == '-') mpirun_die("--trace-window '%s': want FROM:TO in cycles", v);
            }
            if (colon[1]) {
                o->trace_to = strtoull(colon + 1, &end, 10);
                if (errno || *end || colon[1] == '-') mpirun_die("--trace-window '%s': want FROM:TO in cycles", v);
            }
            if (o->trace_from > o->trace_to) mpirun_die("--trace-window '%s': FROM is after TO", v);
        } else if (!strcmp(n, "trace-max")) {
            o->trace_max = (uint64_t)parse_int(a, v, 1, 1000000000L);
        } else if (!strcmp(n, "trace-interval")) {
            o->trace_interval = (uint64_t)parse_int(a, v, 1, 1000000000000L);
        } else if (!strcmp(n, "progress")) {
            o->progress = (int)parse_int(a, v, 0, 1000000);
        } else if (!strcmp(n, "timeout")) {
            char *end;
            errno = 0;
            o->timeout = strtod(v, &end);
            if (errno || end == v || *end || !(o->timeout >= 0) || o->timeout > 1e9)
                mpirun_die("--timeout '%s': want seconds >= 0 (0: no limit)", v);
        }
    }
    if (i >= argc) mpirun_die("no PROGRAM to run (see mpirun --help)");
    if (!o->np) mpirun_die("-np N is required");
    if ((o->trace_ranks || o->trace_from || o->trace_to != UINT64_MAX) && !o->trace)
        mpirun_die("--trace-ranks and --trace-window need --trace FILE.json");
    mpirun_trace_check(o);
    o->argv = argv + i;
}
