/* The in-process machine the collectives' parity suites run on
 * (test_proxy_a2a.c, test_proxy_bcast.c): ranks as threads on an
 * anonymous segment, one job with the engine's help (BGLEMU_PROXY=1) or
 * without, and what the two runs are compared by. */
#ifndef COLL_WORLD_H
#define COLL_WORLD_H

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"

#define CW_MAXR 64

typedef struct cw_rank {
    void *w; /* the suite's world */
    pl_proc pp;
    ml_ctx *ml;
    coll_ctx *c;
    coll_upcall_arg ua;
    int rank, bad;
    uint64_t end;
    coll_stats st;
    uint64_t sum; /* of what it received, position-weighted */
} cw_rank;

typedef struct cw_outcome {
    uint64_t end[CW_MAXR], sum[CW_MAXR], ddt[CW_MAXR], links;
    coll_stats st[CW_MAXR];
    tsim_result res;
} cw_outcome;

/* Runs rk_main on every rank of an x*y*z machine in mode (ranks[i].w =
 * world), *nranks of them, and fills o. */
static void cw_run(int x, int y, int z, ml_mode mode, void *world, cw_rank *ranks, int *nranks,
                   void *(*rk_main)(void *), int proxy, cw_outcome *o)
{
    setenv("BGLEMU_PROXY", proxy ? "1" : "0", 1);
    int cpus = mode == ML_MODE_VN ? 2 : 1;
    int n = *nranks = x * y * z * cpus;
    ck_assert_int_le(n, CW_MAXR);
    tsim_geom geo = {{x, y, z}, {1, 1, 1}, cpus, 0, n};
    tsim_params p;
    tsim_params_default(&p);
    char err[256];
    tsim_seg *seg = tsim_seg_create(&geo, &p, 0, err, sizeof err);
    ck_assert_msg(seg, "%s", err);
    seg->geom.nranks = n;
    for (int i = 0; i < n; i++) {
        seg->rank_proc[i] = tsim_proc_index(cpus == 2 ? i / 2 : i, cpus == 2 ? i % 2 : 0);
        seg->procs[seg->rank_proc[i]].rank = i;
    }
    memset(ranks, 0, (size_t)n * sizeof *ranks);
    for (int i = 0; i < n; i++) {
        cw_rank *r = &ranks[i];
        r->w = world;
        r->rank = i;
        pl_open(&r->pp, seg, seg->rank_proc[i], 0);
    }
    for (int i = 0; i < n; i++) {
        cw_rank *r = &ranks[i];
        r->ml = ml_init(&r->pp, i, mode, coll_upcall, &r->ua);
        ck_assert_ptr_nonnull(r->ml);
        r->c = coll_init_with(r->ml, &r->ua);
        ck_assert_ptr_nonnull(r->c);
    }
    tsim_engine *e = tsim_engine_new(seg);
    pthread_t th[CW_MAXR];
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, rk_main, &ranks[i]);
    int rc = tsim_engine_run(e, &o->res);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(rc, 0);
    o->links = 0;
    for (int nd = 0; nd < seg->geom.nnodes; nd++)
        for (int port = 0; port < TSIM_NPORTS; port++) {
            const tsim_link_stats *ls = tsim_engine_link(e, nd, port);
            o->links = (o->links * 31 + ls->packets) * 31 + ls->busy_cycles;
        }
    for (int i = 0; i < n; i++) {
        ck_assert_msg(ranks[i].bad == 0, "rank %d: %d wrong bytes or failed calls (engine's help %d)", i,
                      ranks[i].bad, proxy);
        o->end[i] = ranks[i].end;
        o->sum[i] = ranks[i].sum;
        o->st[i] = ranks[i].st;
        o->ddt[i] = atomic_load(&seg->procs[seg->rank_proc[i]].ddt_cycles);
    }
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
    unsetenv("BGLEMU_PROXY");
}

#endif
