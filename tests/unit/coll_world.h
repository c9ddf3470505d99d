/* The in-process machine the collectives' parity suites run on
 * (test_proxy_a2a.c, test_proxy_bcast.c): ranks as threads on an
 * anonymous segment, one job with the engine's help (BGLEMU_PROXY=1) or
 * without, and what the two runs are compared by. */
#ifndef COLL_WORLD_H
#define COLL_WORLD_H

#include <stdlib.h>
#include <string.h>

#include "collectives/coll.h"
#include "machine.h"

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
    uint64_t end[CW_MAXR], sum[CW_MAXR], ddt[CW_MAXR], link_pkts, link_busy;
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
    tsim_seg *seg = um_seg(x, y, z, 1, cpus, NULL);
    um_ranks(seg, n, NULL);
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
    tsim_engine *e = um_run(seg, n, rk_main, ranks, sizeof *ranks, &o->res);
    um_links(e, seg, &o->link_pkts, &o->link_busy);
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

/* A rank's end: its statistics and clock kept, its group (may be NULL)
 * and layers closed. */
static void cw_rank_end(cw_rank *r, coll_group *g)
{
    r->st = *coll_get_stats(r->c);
    r->end = pl_now(&r->pp);
    coll_group_free(g);
    coll_finalize(r->c);
    ml_finalize(r->ml);
    pl_close(&r->pp, 0);
}

/* The same job without (a) and with (b) the engine's help: the same
 * clocks, bytes, datatype cycles (some with layouts, none without),
 * statistics, events, hops, deliveries and links, while the engine moved
 * packets and the ranks woke at least `fewer` times less. */
static void cw_compare(const cw_outcome *a, const cw_outcome *b, int n, int layouts, int fewer,
                       const char *what)
{
    for (int i = 0; i < n; i++) {
        ck_assert_msg(a->end[i] == b->end[i], "%s: rank %d ends at %llu with the engine's help, %llu without",
                      what, i, (unsigned long long)b->end[i], (unsigned long long)a->end[i]);
        ck_assert_uint_eq(a->sum[i], b->sum[i]);
        ck_assert_msg(a->ddt[i] == b->ddt[i], "%s: rank %d's ddt_cycles %llu with the engine's help, %llu without",
                      what, i, (unsigned long long)b->ddt[i], (unsigned long long)a->ddt[i]);
        ck_assert_msg(layouts ? a->ddt[i] > 0 : a->ddt[i] == 0, "%s: rank %d's ddt_cycles %llu", what, i,
                      (unsigned long long)a->ddt[i]);
        ck_assert_msg(!memcmp(&a->st[i], &b->st[i], sizeof a->st[i]), "%s: rank %d's statistics differ", what, i);
    }
    ck_assert_uint_eq(a->res.end_time, b->res.end_time);
    ck_assert_uint_eq(a->res.events, b->res.events);
    ck_assert_uint_eq(a->res.packet_hops, b->res.packet_hops);
    ck_assert_uint_eq(a->res.packets_delivered, b->res.packets_delivered);
    ck_assert_uint_eq(a->link_pkts, b->link_pkts);
    ck_assert_uint_eq(a->link_busy, b->link_busy);
    ck_assert_uint_eq(a->res.proxy_read + a->res.proxy_sent, 0);
    ck_assert_msg(b->res.proxy_read > 0 && b->res.proxy_sent > 0, "%s: the engine read %llu, sent %llu packets",
                  what, (unsigned long long)b->res.proxy_read, (unsigned long long)b->res.proxy_sent);
    ck_assert_msg(b->res.wakes * (uint64_t)fewer < a->res.wakes, "%s: %llu wakes with the engine's help, %llu without",
                  what, (unsigned long long)b->res.wakes, (unsigned long long)a->res.wakes);
}

#endif
