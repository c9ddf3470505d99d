/* What the collectives' benchmarks on the message layer share
 * (coll_alltoall_ml, coll_bcast_ml, coll_tree_ml): the options of their
 * size sweep, and one collective's time across the ranks. */
#ifndef COLL_BENCH_H
#define COLL_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "messagelayer/ml_bench.h"

/* The sizes a sweep measures: min, min * step, ... and max last; iters
 * runs of each (0: the program has no --iters). */
typedef struct cb_sweep {
    size_t min, max, step;
    size_t limit; /* the largest --min and --max */
    int iters;
} cb_sweep;

/* The size after `size`, 0 after max. */
static inline size_t cb_next(const cb_sweep *s, size_t size)
{
    return size >= s->max ? 0 : size * s->step > s->max ? s->max : size * s->step;
}

/* The command line: --help prints usage; every option takes a value, the
 * sweep's (--min, --max, --step, --iters) or the program's own, which
 * own() takes (1), does not know (0) or refuses, saying why (-1). -1 to
 * go on, else the status to exit with (0 after --help, 2: a bad option). */
static inline int cb_options(int argc, char **argv, const char *prog, void (*usage)(FILE *), cb_sweep *s,
                             int (*own)(const char *opt, const char *val, void *arg), void *arg)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: unknown option or missing value '%s' (try --help)\n", prog, a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--min") || !strcmp(a, "--max")) {
            size_t n;
            if (ml_parse_size(v, &n) != 0 || n < 1 || n > s->limit) {
                fprintf(stderr, "%s: %s must be 1..%zu bytes (K, M suffixes), not '%s'\n", prog, a, s->limit, v);
                return 2;
            }
            *(!strcmp(a, "--min") ? &s->min : &s->max) = n;
        } else if (!strcmp(a, "--step")) {
            if (ml_parse_size(v, &s->step) != 0 || s->step < 2) {
                fprintf(stderr, "%s: --step must be >= 2\n", prog);
                return 2;
            }
        } else if (!strcmp(a, "--iters") && s->iters) {
            s->iters = atoi(v);
            if (s->iters < 1) {
                fprintf(stderr, "%s: --iters must be >= 1\n", prog);
                return 2;
            }
        } else {
            int r = own(a, v, arg);
            if (r < 0) return 2;
            if (!r) {
                fprintf(stderr, "%s: unknown option '%s' (try --help)\n", prog, a);
                return 2;
            }
        }
    }
    if (s->min > s->max) {
        fprintf(stderr, "%s: --min is larger than --max\n", prog);
        return 2;
    }
    return -1;
}

/* A barrier over the torus: everyone leaves it before a measured
 * collective starts. */
static inline int cb_barrier(coll_ctx *c)
{
    uint64_t t[1] = {0};
    return coll_allreduce_max_p2p(c, t, 1);
}

/* One collective that ran from t0 to t1 here: the span from the earliest
 * start to the latest end over every rank. A rank's bad data stops every
 * rank (*rc = 1). */
static inline uint64_t cb_span(coll_ctx *c, uint64_t t0, uint64_t t1, int bad, int *rc)
{
    uint64_t r[3] = {t1, UINT64_MAX - t0, (uint64_t)bad};
    *rc |= coll_allreduce_max_p2p(c, r, 3);
    if (r[2]) *rc = 1;
    return r[0] - (UINT64_MAX - r[1]);
}

#endif
