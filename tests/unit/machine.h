/* The machine the engine suites run on: an anonymous segment whose
 * processors are threads of the test, the engine in the test's own thread
 * (or driven by engine-side traffic). Each suite keeps its own ranks and
 * what it checks; this is the set-up they share. */
#ifndef UNIT_MACHINE_H
#define UNIT_MACHINE_H

#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "torus-sim/tsim.h"
#include "traffic/trf_traffic.h"

#define UM_MAXT 128 /* threads a run starts at the most */

/* x*y*z nodes, cpus processor slots used per node, wrap-around links in
 * every dimension (torus) or none (a mesh); prm NULL: the defaults. */
static inline tsim_seg *um_seg(int x, int y, int z, int torus, int cpus, const tsim_params *prm)
{
    tsim_geom g = {{x, y, z}, {torus, torus, torus}, cpus, 0, 0};
    tsim_params p;
    if (!prm) tsim_params_default(&p), prm = &p;
    char err[256];
    tsim_seg *s = tsim_seg_create(&g, prm, 0, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    return s;
}

/* Ranks 0..n-1 on processor slots slot[i] (node slot / cpus, cpu slot %
 * cpus), or slot i without a list: XYZT in CO mode, TXYZ in VN mode. */
static inline void um_ranks(tsim_seg *s, int n, const int *slot)
{
    int cpus = s->geom.cpus;
    s->geom.nranks = n;
    for (int i = 0; i < n; i++) {
        int k = slot ? slot[i] : i;
        s->rank_proc[i] = tsim_proc_index(k / cpus, k % cpus);
        s->procs[s->rank_proc[i]].rank = i;
    }
}

/* Runs fn on n threads, thread i given (char *)args + i * size, while
 * engine e runs in this thread: the engine's status. */
static inline int um_go(tsim_engine *e, int n, void *(*fn)(void *), void *args, size_t size,
                        tsim_result *res)
{
    pthread_t th[UM_MAXT];
    ck_assert_int_le(n, UM_MAXT);
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, fn, (char *)args + (size_t)i * size);
    int rc = tsim_engine_run(e, res);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    return rc;
}

/* The same with a new engine, which must end well (a deadlock is shown):
 * the engine, for the caller to read and free. */
static inline tsim_engine *um_run(tsim_seg *s, int n, void *(*fn)(void *), void *args, size_t size,
                                  tsim_result *res)
{
    tsim_engine *e = tsim_engine_new(s);
    ck_assert_ptr_nonnull(e);
    int rc = um_go(e, n, fn, args, size, res);
    if (rc == 2) tsim_engine_print_deadlock(e, stderr);
    ck_assert_int_eq(rc, 0);
    return e;
}

/* Every link's packets and busy cycles, each folded into one number. */
static inline void um_links(tsim_engine *e, const tsim_seg *s, uint64_t *pkts, uint64_t *busy)
{
    *pkts = *busy = 0;
    for (int n = 0; n < s->geom.nnodes; n++)
        for (int port = 0; port < TSIM_NPORTS; port++) {
            const tsim_link_stats *ls = tsim_engine_link(e, n, port);
            *pkts = *pkts * 31 + ls->packets;
            *busy = *busy * 31 + ls->busy_cycles;
        }
}

/* A rank's failures: how many, and the first one's words (the test asserts
 * them in its own thread). */
typedef struct um_fails {
    int fails;
    char why[240];
} um_fails;

static inline void um_fail(um_fails *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void um_fail(um_fails *f, const char *fmt, ...)
{
    if (f->fails++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
}

static inline void um_no_fails(const um_fails *f, int rank)
{
    ck_assert_msg(f->fails == 0, "rank %d: %d failures, first: %s", rank, f->fails, f->why);
}

/* Engine-side traffic cfg on machine g: its segment and engine, the
 * traffic attached; um_traffic_free ends all three. */
typedef struct um_traffic {
    trf_traffic *t;
    tsim_seg *seg;
    tsim_engine *e;
} um_traffic;

static inline um_traffic um_traffic_new(const tsim_geom *g, const tsim_params *prm,
                                        const trf_cfg *cfg)
{
    char err[256];
    um_traffic u;
    u.t = trf_new(g, prm, cfg, err, sizeof err);
    ck_assert_msg(u.t, "%s", err);
    u.seg = tsim_seg_create(g, prm, 0, err, sizeof err);
    ck_assert_msg(u.seg, "%s", err);
    u.e = tsim_engine_new(u.seg);
    ck_assert_ptr_nonnull(u.e);
    trf_attach(u.t, u.seg, u.e);
    return u;
}

static inline void um_traffic_free(um_traffic *u)
{
    tsim_engine_free(u->e);
    tsim_seg_destroy(u->seg);
    trf_free(u->t);
}

#endif
