/* coll_tree_ml: the collective network and the global interrupt against
 * the torus, in simulated time, on the message layer alone (no MPICH):
 * barrier (global interrupt vs a p2p reduce + broadcast), allreduce of
 * ints and doubles (tree vs a p2p binomial reduce + broadcast of a uint64
 * maximum, what MPICH's algorithms do), broadcast (tree vs the torus's
 * deposit-bit trees vs p2p). Every result is checked. Time of one
 * collective = from its start (everyone leaves a global-interrupt barrier
 * at the same cycle first) to the last rank's completion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_bench.h"
#include "collectives/coll_tree.h"
#include "torus-sim/tsim_tree.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-mode CO|VN] coll_tree_ml [--what barrier|allreduce|bcast]\n"
            "           [--min BYTES] [--max BYTES] [--step F] [--algo all|hw|tree]\n"
            "Simulated time of barrier, allreduce (SUM of int32 and of double) and broadcast on\n"
            "the collective network and the global interrupt, against the torus: sizes min, min*F,\n"
            "... max (default 8 B .. 1 MiB, F = 8). Lines: what, algorithm, type, bytes, cycles,\n"
            "microseconds, MB/s. Results are checked (exact for integers, identical on every rank\n"
            "for doubles). --algo tree: the collective network and the global interrupt only;\n"
            "hw: and the torus broadcast (no p2p baselines: they take most of the host time at\n"
            "large sizes).\n"
            "Example: mpirun -np 64 -shape 4x4x4 coll_tree_ml\n");
}

typedef struct bench {
    coll_ctx *c;
    pl_proc *pp;
    int me, n, rc;
    int base; /* the p2p baselines too */
    int torus; /* the torus broadcast too */
    double mhz;
    uint64_t t0;
} bench;

/* Everyone leaves a global-interrupt barrier at the same cycle: the
 * measurement starts there. */
static void start(bench *b)
{
    b->rc |= coll_gi_barrier(b->c);
    b->t0 = pl_now(b->pp);
}

/* Ends a measurement: everyone learns the span and whether anyone failed. */
static void stop(bench *b, const char *what, const char *algo, const char *type, size_t bytes,
                 int bad)
{
    uint64_t dt = cb_span(b->c, b->t0, pl_now(b->pp), bad, &b->rc);
    if (b->me == 0 && !b->rc) {
        double us = (double)dt / b->mhz;
        printf("%-9s %-6s %-6s %9zu %11llu %10.2f %9.2f\n", what, algo, type, bytes,
               (unsigned long long)dt, us, bytes ? (double)bytes / us : 0.0);
        fflush(stdout);
    }
}

static void barriers(bench *b)
{
    start(b);
    b->rc |= coll_gi_barrier(b->c);
    stop(b, "barrier", "gi", "-", 0, 0);
    if (!b->base) return;
    start(b);
    b->rc |= cb_barrier(b->c);
    stop(b, "barrier", "p2p", "-", 0, 0);
}

static void allreduces(bench *b, const cb_sweep *sw, int tree)
{
    int n = b->n;
    for (size_t size = sw->min; size; size = cb_next(sw, size)) {
        size_t ni = size / 4 ? size / 4 : 1, nd = size / 8 ? size / 8 : 1;
        int32_t *iv = malloc(ni * 4);
        double *dv = malloc(nd * 8), *dr = malloc(nd * 8);
        uint64_t *uv = malloc(nd * 8);
        if (!iv || !dv || !dr || !uv) {
            b->rc = 1;
            return;
        }
        if (tree) {
            for (size_t i = 0; i < ni; i++) iv[i] = (int32_t)(i * 7) - b->me;
            start(b);
            b->rc |= coll_tree_allreduce(b->c, iv, iv, ni, COLL_I32, COLL_SUM);
            int bad = 0;
            for (size_t i = 0; i < ni; i++)
                bad |= iv[i] != (int32_t)((uint32_t)(i * 7) * (uint32_t)n - (uint32_t)(n * (n - 1) / 2));
            stop(b, "allreduce", "tree", "int", ni * 4, bad);
            for (size_t i = 0; i < nd; i++) dv[i] = ldexp(1.0 + 0.001 * b->me, (int)(i % 64) - 32) * (i % 3 ? 1 : -1);
            start(b);
            b->rc |= coll_tree_allreduce(b->c, dv, dr, nd, COLL_F64, COLL_SUM);
            double w = 0;
            for (int r = 0; r < n; r++) w += ldexp(1.0 + 0.001 * r, -32);
            stop(b, "allreduce", "tree", "double", nd * 8, fabs(-dr[0] - w) > 1e-15 * w);
            /* every rank must hold the same bits: their maximum and minimum agree */
            uint64_t h = 1469598103934665603ull;
            for (size_t i = 0; i < nd; i++) {
                uint64_t u;
                memcpy(&u, &dr[i], 8);
                h = (h ^ u) * 1099511628211ull;
            }
            uint64_t hh[2] = {h, ~h};
            b->rc |= coll_allreduce_max_p2p(b->c, hh, 2);
            if (hh[0] != ~hh[1]) {
                if (b->me == 0) fprintf(stderr, "coll_tree_ml: double sums differ between ranks\n");
                b->rc = 1;
            }
        }
        if (b->base) {
            for (size_t i = 0; i < nd; i++) uv[i] = i + (uint64_t)b->me;
            start(b);
            b->rc |= coll_allreduce_max_p2p(b->c, uv, (int)nd);
            int bad = 0;
            for (size_t i = 0; i < nd; i++) bad |= uv[i] != i + (uint64_t)(n - 1);
            stop(b, "allreduce", "p2p", "u64max", nd * 8, bad);
        }
        free(iv);
        free(dv);
        free(dr);
        free(uv);
    }
}

static void bcasts(bench *b, const cb_sweep *sw, int tree)
{
    uint8_t *buf = malloc(sw->max);
    if (!buf) {
        b->rc = 1;
        return;
    }
    for (size_t size = sw->min; size; size = cb_next(sw, size)) {
        for (int k = tree ? 0 : 1; k < (b->base ? 3 : b->torus ? 2 : 1); k++) {
            for (size_t i = 0; i < size; i++) buf[i] = b->me == 0 ? (uint8_t)(i * 131 + (size_t)k) : 0;
            start(b);
            if (k == 0) b->rc |= coll_tree_bcast(b->c, buf, size, 0);
            else if (k == 1) b->rc |= coll_bcast(b->c, buf, size, 0, 3);
            else b->rc |= coll_bcast_p2p(b->c, buf, size, 0);
            int bad = 0;
            for (size_t i = 0; i < size; i++) bad |= buf[i] != (uint8_t)(i * 131 + (size_t)k);
            stop(b, "bcast", k == 0 ? "tree" : k == 1 ? "torus3" : "p2p", "byte", size, bad);
        }
    }
    free(buf);
}

typedef struct opts {
    const char *what;
    int base, torus;
} opts;

static int own(const char *a, const char *v, void *arg)
{
    opts *o = arg;
    if (!strcmp(a, "--what")) {
        if (strcmp(v, "barrier") && strcmp(v, "allreduce") && strcmp(v, "bcast") && strcmp(v, "all")) {
            fprintf(stderr, "coll_tree_ml: --what must be barrier, allreduce, bcast or all, not '%s'\n", v);
            return -1;
        }
        o->what = v;
        return 1;
    }
    if (strcmp(a, "--algo")) return 0;
    if (strcmp(v, "all") && strcmp(v, "hw") && strcmp(v, "tree")) {
        fprintf(stderr, "coll_tree_ml: --algo must be all, hw or tree, not '%s'\n", v);
        return -1;
    }
    o->base = !strcmp(v, "all");
    o->torus = strcmp(v, "tree") != 0;
    return 1;
}

int main(int argc, char **argv)
{
    opts o = {"all", 1, 1};
    cb_sweep sw = {8, 1u << 20, 8, 64u << 20, 0};
    int st = cb_options(argc, argv, "coll_tree_ml", usage, &sw, own, &o);
    if (st >= 0) return st;
    const char *what = o.what;
    coll_upcall_arg ua = {0};
    ml_ctx *ml;
    coll_ctx *c = coll_open_env("coll_tree_ml", &ua, &ml);
    if (!c) return 1;
    bench b = {.c = c, .pp = ml_proc(ml), .me = ml_rank(ml), .n = ml_nranks(ml),
               .base = o.base, .torus = o.torus};
    const tsim_geom *g = &b.pp->seg->geom;
    b.mhz = (double)b.pp->seg->params.clock_mhz;
    int tree = coll_tree_ok(c);
    if (b.me == 0) {
        printf("# coll_tree_ml: %d ranks on a %dx%dx%d, %s mode, tree depth %d%s\n", b.n, g->dim[0],
               g->dim[1], g->dim[2], g->cpus == 2 ? "VN" : "CO", tsim_tree_depth(g),
               tree ? "" : " (the tree collectives need a rank in every processor slot: barrier only)");
        printf("%-9s %-6s %-6s %9s %11s %10s %9s\n", "what", "algo", "type", "bytes", "cycles", "us",
               "MB/s");
    }
    int all = !strcmp(what, "all");
    if (all || !strcmp(what, "barrier")) barriers(&b);
    if (!b.rc && (all || !strcmp(what, "allreduce"))) allreduces(&b, &sw, tree);
    if (!b.rc && (all || !strcmp(what, "bcast"))) bcasts(&b, &sw, tree);
    if (b.rc && b.me == 0) fprintf(stderr, "coll_tree_ml: a collective failed or gave a wrong result\n");
    coll_finalize(c);
    ml_finalize(ml);
    return b.rc ? 1 : 0;
}
