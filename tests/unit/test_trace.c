/* The link sampler of the timeline trace (torus-sim/tsim_trace.c): the
 * simulation is the same with and without it; every link's samples add up
 * to its counters exactly; a saturated link is busy 100% of every interval
 * it is saturated in; the bound and the window hold. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "torus-sim/tsim_trace.h"
#include "suite.h"

typedef struct run {
    tsim_result res;
    tsim_link_stats link[64][TSIM_NPORTS];
    tsim_link_sample *s;
    size_t n;
    uint64_t dropped;
} run;

/* 4x4x4 uniform adaptive traffic at load 0.5; interval 0: no sampler. */
static void traffic(run *r, uint64_t interval, uint64_t from, uint64_t to, size_t max)
{
    tsim_geom g = {{4, 4, 4}, {1, 1, 1}, 1, 0, 0};
    tsim_params prm;
    tsim_params_default(&prm);
    trf_cfg c;
    trf_cfg_default(&c);
    c.pattern = TRF_UNIFORM;
    c.nprocs = 64;
    c.load = 0.5;
    c.routing = TRF_ADAPTIVE;
    c.packets = 100;
    c.seed = 3;
    um_traffic u = um_traffic_new(&g, &prm, &c);
    tsim_engine *e = u.e;
    if (interval) ck_assert_int_eq(tsim_engine_trace_links(e, interval, from, to, max), 0);
    ck_assert_int_eq(tsim_engine_run(e, &r->res), 0);
    for (int n = 0; n < 64; n++)
        for (int p = 0; p < TSIM_NPORTS; p++) r->link[n][p] = *tsim_engine_link(e, n, p);
    r->n = 0;
    r->s = NULL;
    if (interval) {
        const tsim_link_sample *s = tsim_engine_link_samples(e, r->res.end_time, &r->n, &r->dropped);
        r->s = malloc((r->n + 1) * sizeof *r->s);
        for (size_t i = 0; i < r->n; i++) r->s[i] = s[i];
    }
    um_traffic_free(&u);
}

START_TEST(sampler_changes_nothing_and_adds_up)
{
    run a, b;
    traffic(&a, 0, 0, UINT64_MAX, 0);
    traffic(&b, 500, 0, UINT64_MAX, 10000000);
    printf("trace: 4x4x4 uniform adaptive load 0.5: %llu cycles, %llu events, %llu hops with and "
           "without the sampler (every 500 cycles, %zu samples); each link's samples add up to "
           "its packets, bytes and busy cycles; no interval over 100%%\n",
           (unsigned long long)b.res.end_time, (unsigned long long)b.res.events,
           (unsigned long long)b.res.packet_hops, b.n);
    ck_assert_uint_eq(a.res.end_time, b.res.end_time);
    ck_assert_uint_eq(a.res.events, b.res.events);
    ck_assert_uint_eq(a.res.packet_hops, b.res.packet_hops);
    ck_assert_uint_eq(a.res.packets_delivered, b.res.packets_delivered);
    ck_assert_int_eq(memcmp(a.link, b.link, sizeof a.link), 0);
    ck_assert_uint_eq(b.dropped, 0);
    ck_assert_uint_gt(b.n, 100);
    tsim_link_stats sum[64][TSIM_NPORTS] = {{{0}}};
    uint64_t last_t = 0;
    for (size_t i = 0; i < b.n; i++) {
        const tsim_link_sample *s = &b.s[i];
        ck_assert_uint_ge(s->t, last_t); /* time order */
        last_t = s->t;
        ck_assert_uint_le(s->busy, s->len ? s->len : 0);
        if (s->t + s->len < b.res.end_time && s->len) ck_assert_uint_eq(s->t % 500, 0);
        sum[s->node][s->port].packets += s->packets;
        sum[s->node][s->port].bytes += s->bytes;
        sum[s->node][s->port].busy_cycles += s->busy;
    }
    for (int n = 0; n < 64; n++)
        for (int p = 0; p < TSIM_NPORTS; p++) {
            ck_assert_uint_eq(sum[n][p].packets, b.link[n][p].packets);
            ck_assert_uint_eq(sum[n][p].bytes, b.link[n][p].bytes);
            ck_assert_uint_eq(sum[n][p].busy_cycles, b.link[n][p].busy_cycles);
        }
    free(b.s);
}
END_TEST

START_TEST(sampler_bound_and_window)
{
    run a, w;
    traffic(&a, 500, 0, UINT64_MAX, 50);
    ck_assert_uint_eq(a.n, 50);
    ck_assert_uint_gt(a.dropped, 0);
    traffic(&w, 500, 20000, 30000, 10000000);
    printf("trace: --trace-max 50 keeps 50 samples and counts %llu dropped; window 20000:30000 "
           "keeps %zu samples, all overlapping it\n", (unsigned long long)a.dropped, w.n);
    ck_assert_uint_gt(w.n, 0);
    for (size_t i = 0; i < w.n; i++) {
        ck_assert_uint_le(w.s[i].t, 30000);
        ck_assert_uint_gt(w.s[i].t + w.s[i].len, 20000);
    }
    free(a.s);
    free(w.s);
}
END_TEST

/* One source streams full packets over one link: busy 100% while it lasts. */
#define SAT_K 100
static int sat_sent;
static int sat_next(void *ctx, int proc, uint64_t *t, tsim_pkt *k, int *fifo)
{
    (void)ctx;
    if (proc != 0 || sat_sent == SAT_K) return 0;
    *k = (tsim_pkt){0};
    k->hw.dst[0] = 1;
    k->hw.chunks = TSIM_MAX_CHUNKS;
    sat_sent++;
    *t = 0;
    *fifo = 0;
    return 1;
}

static uint64_t sat_sink(void *ctx, int proc, int fifo, const tsim_meta *m, const tsim_pkt *k)
{
    (void)ctx, (void)proc, (void)fifo, (void)k;
    return m->t_arrive;
}

START_TEST(sampler_saturated_link)
{
    tsim_params prm;
    tsim_params_default(&prm);
    uint64_t ser = (TSIM_PKT_BYTES + prm.wire_overhead) * prm.link_cycles_per_byte;
    tsim_seg *seg = um_seg(2, 1, 1, 0, 1, &prm);
    atomic_store(&seg->procs[0].state, TSIM_P_ENGINE);
    atomic_store(&seg->procs[tsim_proc_index(1, 0)].state, TSIM_P_ENGINE);
    tsim_engine *e = tsim_engine_new(seg);
    sat_sent = 0;
    tsim_source src = {sat_next, sat_sink, NULL};
    tsim_engine_set_source(e, &src);
    ck_assert_int_eq(tsim_engine_trace_links(e, 1000, 0, UINT64_MAX, 100000), 0);
    tsim_result res;
    ck_assert_int_eq(tsim_engine_run(e, &res), 0);
    size_t n;
    uint64_t dropped;
    const tsim_link_sample *s = tsim_engine_link_samples(e, res.end_time, &n, &dropped);
    /* the link is busy from the first packet's start (t0) to t0 + K * ser */
    uint64_t t0 = UINT64_MAX, full = 0, busy = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].busy && s[i].t < t0) t0 = s[i].t;
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(s[i].node, 0);
        ck_assert_uint_eq(s[i].port, TSIM_XP);
        busy += s[i].busy;
        if (s[i].t > t0 && s[i].t + s[i].len < (uint64_t)SAT_K * ser) {
            ck_assert_uint_eq(s[i].busy, s[i].len); /* 100% */
            full++;
        }
    }
    printf("trace: %d full packets over one link, sampled every 1000 cycles: %llu full intervals "
           "at 100%%, %llu busy cycles = %d x %llu\n", SAT_K, (unsigned long long)full,
           (unsigned long long)busy, SAT_K, (unsigned long long)ser);
    ck_assert_uint_eq(busy, (uint64_t)SAT_K * ser);
    ck_assert_uint_ge(full, (uint64_t)SAT_K * ser / 1000 - 3);
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
}
END_TEST

Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    UM_TCASE(s, "link sampler", 120, sampler_changes_nothing_and_adds_up, sampler_bound_and_window,
             sampler_saturated_link);
    return s;
}
