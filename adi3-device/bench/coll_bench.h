/* What the MPI collective benchmarks (coll_bcast, coll_alltoall) share:
 * size options, the machine they run on, the link arithmetic and the
 * timing rule. Header-only: each program is one translation unit built with
 * mpicc against the installed headers. */
#ifndef COLL_BENCH_H
#define COLL_BENCH_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll_bounds.h"
#include "messagelayer/ml_size.h"

/* exported by the bgl netmod inside libmpi (bgl_clock.c) */
int MPIDI_BGL_machine(tsim_geom *geom, tsim_params *prm) __attribute__((weak));


/* The options both programs take. */
typedef struct cb_opts {
    const char *prog;
    const char *const *algos; /* names for --algo */
    int nalgo;
    int algo;                 /* -1: all */
    size_t min, max, step, maxsize;
    int iters;
    int root;                 /* -1: the program takes no --root */
} cb_opts;

static inline int cb_bad(const cb_opts *o, const char *what, const char *v)
{
    fprintf(stderr, "%s: %s '%s'; see --help\n", o->prog, what, v);
    return 2;
}

/* Parses argv into o (defaults set by the caller): 0 to go on, 1 after
 * --help (usage printed), 2 after one error line on stderr. */
static inline int cb_parse(cb_opts *o, int argc, char **argv, void (*usage)(FILE *))
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (i + 1 >= argc) return cb_bad(o, "unknown option or missing value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--algo")) {
            o->algo = -1;
            for (int k = 0; k < o->nalgo; k++)
                if (!strcmp(v, o->algos[k])) o->algo = k;
            if (o->algo < 0) {
                fprintf(stderr, "%s: unknown algorithm '%s' (", o->prog, v);
                for (int k = 0; k < o->nalgo; k++)
                    fprintf(stderr, "%s%s", k ? (k == o->nalgo - 1 ? " or " : ", ") : "", o->algos[k]);
                fprintf(stderr, ")\n");
                return 2;
            }
        } else if (!strcmp(a, "--min") || !strcmp(a, "--max")) {
            size_t sz;
            if (ml_parse_size(v, &sz) != 0 || sz < 1 || sz > o->maxsize) {
                fprintf(stderr, "%s: %s must be 1..%zu bytes (K, M suffixes), not '%s'\n", o->prog,
                        a, o->maxsize, v);
                return 2;
            }
            *(!strcmp(a, "--min") ? &o->min : &o->max) = sz;
        } else if (!strcmp(a, "--step")) {
            if (ml_parse_size(v, &o->step) != 0 || o->step < 2) return cb_bad(o, "--step must be >= 2, not", v);
        } else if (!strcmp(a, "--iters")) {
            o->iters = atoi(v);
            if (o->iters < 1) return cb_bad(o, "--iters must be >= 1, not", v);
        } else if (!strcmp(a, "--root") && o->root >= 0) {
            char *e;
            long r = strtol(v, &e, 10);
            if (*e || e == v || r < 0 || r > 1 << 20) return cb_bad(o, "--root must be a rank, not", v);
            o->root = (int)r;
        } else {
            return cb_bad(o, "unknown option", a);
        }
    }
    if (o->min > o->max) {
        fprintf(stderr, "%s: --min is larger than --max\n", o->prog);
        return 2;
    }
    return 0;
}

/* Fills geom and prm from the netmod; 0, or -1 with a message from rank 0
 * when the program does not run on bglemu's MPI. */
static inline int cb_machine(const char *prog, tsim_geom *geom, tsim_params *prm)
{
    if (MPIDI_BGL_machine && MPIDI_BGL_machine(geom, prm) == 0) return 0;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (!me)
        fprintf(stderr, "%s: not running on bglemu's MPI (start it with bglemu's mpirun)\n", prog);
    return -1;
}

/* MPI_Init, this rank and the job's size, the machine; aborts the job
 * (exit 1) when not on bglemu's MPI. */
static inline void cb_start(const char *prog, int *argc, char ***argv, int *me, int *n,
                            tsim_geom *geom, tsim_params *prm)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, me);
    MPI_Comm_size(MPI_COMM_WORLD, n);
    if (cb_machine(prog, geom, prm) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Simulated seconds of one collective on comm: from the first rank's start
 * (everyone leaves a barrier first) to the last rank's end. The clocks are
 * one timeline, so max(end) - min(start) is the collective's span. */
static inline double cb_span(double t0, double t1, MPI_Comm comm)
{
    double t[2] = {-t0, t1}, r[2];
    MPI_Allreduce(t, r, 2, MPI_DOUBLE, MPI_MAX, comm);
    return r[0] + r[1];
}

/* Every rank agrees whether any rank saw wrong data. */
static inline int cb_any(int bad, MPI_Comm comm)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, comm);
    return any;
}

/* The next size of a sweep min, min*step, ..., always ending at max. */
static inline size_t cb_next_size(size_t s, size_t step, size_t max)
{
    return s < max && s * step > max ? max : s * step;
}

#endif
