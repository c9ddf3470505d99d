/* Soak: random mixed traffic (deterministic + adaptive + some high-priority,
 * 1..8 chunks) through the engine with the smallest buffers the bubble rule
 * allows, on a torus and a mesh; every packet must arrive exactly once,
 * intact, and the network must never deadlock. Plus the link-bandwidth check: a saturated link delivers a
 * full packet every (256 + 14) * 4 = 1080 cycles.
 *
 * SOAK_PACKETS (env) sets packets per source for the soak runs; the default
 * keeps `make check` at >= 10^6 packets in total. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "machine.h"
#include "suite.h"

static uint64_t soak_packets(void)
{
    const char *s = getenv("SOAK_PACKETS");
    return s && atoll(s) > 0 ? (uint64_t)atoll(s) : 4000;
}

/* Runs one traffic configuration; returns the engine's status. */
static int run_traffic(int torus, const tsim_params *prm, const trf_cfg *cfg,
                       trf_stats *st, tsim_result *res)
{
    tsim_geom g = {{4, 4, 4}, {torus, torus, torus}, 1, 0, 0};
    um_traffic u = um_traffic_new(&g, prm, cfg);
    int rc = tsim_engine_run(u.e, res);
    trf_get_stats(u.t, st);
    if (rc || trf_ok(st)) { /* show what went wrong */
        trf_print(u.t, st, stdout);
        if (res->deadlock) tsim_engine_print_deadlock(u.e, stdout);
    }
    um_traffic_free(&u);
    return rc;
}

static void minimal_params(tsim_params *p)
{
    tsim_params_default(p);
    p->vc_chunks = 2 * TSIM_MAX_CHUNKS; /* bubble: entering a ring needs two packets */
    p->fifo_chunks = TSIM_MAX_CHUNKS;   /* one full packet */
}

static void soak(int torus, int pattern, uint64_t consume, uint64_t jitter, uint64_t seed)
{
    tsim_params prm;
    minimal_params(&prm);
    trf_cfg c;
    trf_cfg_default(&c);
    c.pattern = pattern;
    c.nprocs = 64;
    c.load = 0; /* saturate: everything offered at once, maximal pressure */
    c.routing = TRF_MIXED;
    c.chunks = 0;
    c.packets = soak_packets();
    c.seed = seed;
    c.consume_cycles = consume;
    c.consume_jitter = jitter;
    c.hp_frac = 0.1; /* the high-priority VC has its own bubble: stress it too */
    printf("soak: 4x4x4 %s, %s, det+adaptive+10%% high-priority, 1..8 chunks, vc_chunks %llu, fifo_chunks %llu, "
           "consumer %llu+0..%llu cycles, %llu packets: none lost/duplicated/corrupted, "
           "det order kept, no deadlock\n",
           torus ? "torus" : "mesh", trf_pattern_name(pattern),
           (unsigned long long)prm.vc_chunks, (unsigned long long)prm.fifo_chunks,
           (unsigned long long)consume, (unsigned long long)jitter,
           (unsigned long long)(64 * c.packets));
    trf_stats st;
    tsim_result res;
    int rc = run_traffic(torus, &prm, &c, &st, &res);
    ck_assert_int_eq(res.deadlock, 0);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(st.generated, 64 * c.packets);
    ck_assert_uint_eq(st.delivered, st.generated);
    ck_assert_uint_eq(res.packets_delivered, st.generated);
    ck_assert_uint_eq(st.lost, 0);
    ck_assert_uint_eq(st.duplicated, 0);
    ck_assert_uint_eq(st.corrupted, 0);
    ck_assert_uint_eq(st.misrouted, 0);
    ck_assert_uint_eq(st.reordered_det, 0);
}

START_TEST(soak_torus_uniform) { soak(1, TRF_UNIFORM, 0, 0, 11); }
END_TEST
START_TEST(soak_mesh_uniform) { soak(0, TRF_UNIFORM, 0, 0, 12); }
END_TEST
/* A hotspot behind a slow, jittery consumer: reception backpressure builds
 * a congestion tree back into the network, the classic deadlock trap. */
START_TEST(soak_torus_hotspot_slow) { soak(1, TRF_HOTSPOT, 100, 400, 13); }
END_TEST
START_TEST(soak_mesh_hotspot_slow) { soak(0, TRF_HOTSPOT, 100, 400, 14); }
END_TEST

/* ---- bandwidth of one link -------------------------------------------- */
#define BW_K 200
typedef struct bw {
    int sent, got, flags, dst_node;
    uint64_t t[BW_K];
    const tsim_geom *g;
} bw;

static int bw_next(void *ctx, int proc, uint64_t *t, tsim_pkt *k, int *fifo)
{
    bw *b = ctx;
    if (proc != 0 || b->sent == BW_K) return 0;
    int c[3];
    tsim_coords(b->g, b->dst_node, c);
    *k = (tsim_pkt){0};
    for (int i = 0; i < 3; i++) k->hw.dst[i] = (uint8_t)c[i];
    k->hw.chunks = TSIM_MAX_CHUNKS;
    k->hw.flags = (uint8_t)b->flags;
    b->sent++;
    *t = 0; /* all offered at once: the link is the only limit */
    *fifo = 0;
    return 1;
}

static uint64_t bw_sink(void *ctx, int proc, int fifo, const tsim_meta *m, const tsim_pkt *k)
{
    (void)proc, (void)fifo, (void)k;
    bw *b = ctx;
    b->t[b->got++] = m->t_arrive;
    return m->t_arrive;
}

static void link_bandwidth(int flags, int hops)
{
    tsim_params prm;
    tsim_params_default(&prm);
    uint64_t ser = (TSIM_PKT_BYTES + prm.wire_overhead) * prm.link_cycles_per_byte; /* 1080 */
    printf("bandwidth: %d full packets over %d hop(s) (%s): arrivals exactly %llu cycles apart, "
           "first at %d x hop_latency + %llu; payload rate 0.25 x 240/270 B/cycle\n",
           BW_K, hops, flags ? "adaptive" : "det", (unsigned long long)ser, hops,
           (unsigned long long)ser);
    tsim_seg *seg = um_seg(8, 1, 1, 0, 1, &prm);
    atomic_store(&seg->procs[0].state, TSIM_P_ENGINE);
    atomic_store(&seg->procs[tsim_proc_index(hops, 0)].state, TSIM_P_ENGINE);
    tsim_engine *e = tsim_engine_new(seg);
    bw b = {0, 0, flags, hops, {0}, &seg->geom};
    tsim_source src = {bw_next, bw_sink, &b};
    tsim_engine_set_source(e, &src);
    tsim_result res;
    ck_assert_int_eq(tsim_engine_run(e, &res), 0);
    ck_assert_int_eq(b.got, BW_K);
    /* virtual cut-through: the head pays hop_latency per hop, the tail
     * follows one serialization later */
    ck_assert_uint_eq(b.t[0], hops * prm.hop_latency + ser);
    for (int i = 1; i < BW_K; i++)
        ck_assert_msg(b.t[i] == b.t[0] + (uint64_t)i * ser, "packet %d at %llu, want %llu", i,
                      (unsigned long long)b.t[i], (unsigned long long)(b.t[0] + i * ser));
    /* payload bytes per cycle on the saturated link, exactly 240/1080 */
    uint64_t span = b.t[BW_K - 1] - b.t[0];
    ck_assert_uint_eq((uint64_t)(BW_K - 1) * TSIM_PAYLOAD_MAX * 270 * 4, span * 240);
    for (int n = 0; n < hops; n++) {
        const tsim_link_stats *l = tsim_engine_link(e, n, TSIM_XP);
        ck_assert_uint_eq(l->packets, BW_K);
        ck_assert_uint_eq(l->busy_cycles, BW_K * ser);
    }
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
}

START_TEST(bandwidth_one_link_det) { link_bandwidth(0, 1); }
END_TEST
START_TEST(bandwidth_one_link_adaptive) { link_bandwidth(TSIM_F_DYNAMIC, 1); }
END_TEST
START_TEST(bandwidth_three_hops_det) { link_bandwidth(0, 3); }
END_TEST

/* The sink's integrity check, driven directly: an intact packet counts as
 * delivered; one word of fill changed, two fill words swapped, or a
 * header field changed each count as corrupted. */
START_TEST(sink_catches_damage)
{
    tsim_geom g = {{4, 4, 4}, {1, 1, 1}, 1, 0, 0};
    tsim_params prm;
    tsim_params_default(&prm);
    trf_cfg cfg;
    trf_cfg_default(&cfg);
    cfg.nprocs = 64;
    cfg.packets = 8;
    char err[256];
    trf_traffic *t = trf_new(&g, &prm, &cfg, err, sizeof err);
    ck_assert_msg(t, "%s", err);
    tsim_source src;
    trf_source(t, &src);
    trf_stats st;
    const char *what[] = {"intact", "fill word 100 changed", "fill words 40 and 48 swapped",
                          "last fill word changed", "flags changed"};
    for (int k = 0; k < 5; k++) {
        tsim_pkt p;
        uint64_t at = 0;
        int fifo;
        ck_assert(src.next(src.ctx, 0, &at, &p, &fifo));
        int len = p.hw.chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
        if (k == 1) p.payload[100] ^= 4;
        if (k == 2)
            for (int i = 0; i < 8; i++) {
                uint8_t x = p.payload[40 + i];
                p.payload[40 + i] = p.payload[48 + i];
                p.payload[48 + i] = x;
            }
        if (k == 3) p.payload[len - 1] ^= 0x80;
        if (k == 4) p.hw.flags ^= TSIM_F_DYNAMIC;
        int c[3] = {p.hw.dst[0], p.hw.dst[1], p.hw.dst[2]};
        tsim_meta m = {.t_inject = at, .t_arrive = at + 1000, .src = 0};
        src.sink(src.ctx, tsim_proc_index(tsim_node_of(&g, c[0], c[1], c[2]), 0), fifo, &m, &p);
        trf_get_stats(t, &st);
        ck_assert_uint_eq(st.delivered, 1);
        ck_assert_uint_eq(st.corrupted, (uint64_t)k);
        printf("sink: a packet of %d chunks, %s: %s\n", p.hw.chunks, what[k],
               k ? "counted corrupted" : "delivered");
    }
    trf_free(t);
}
END_TEST

/* Every packet size: the fill is checked in vector steps and then one
 * word (trf_traffic.c), so damage to the first fill word, the last word
 * of the steps and the last word of the packet must each show, in packets
 * of 1 to 8 chunks (1 chunk: one fill word, no step). */
START_TEST(sink_checks_every_size)
{
    tsim_geom g = {{4, 4, 4}, {1, 1, 1}, 1, 0, 0};
    tsim_params prm;
    tsim_params_default(&prm);
    for (int chunks = 1; chunks <= TSIM_MAX_CHUNKS; chunks++) {
        trf_cfg cfg;
        trf_cfg_default(&cfg);
        cfg.nprocs = 64;
        cfg.packets = 8;
        cfg.chunks = chunks;
        char err[256];
        trf_traffic *t = trf_new(&g, &prm, &cfg, err, sizeof err);
        ck_assert_msg(t, "%s", err);
        tsim_source src;
        trf_source(t, &src);
        int len = chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
        /* byte offsets damaged: none, first fill word, last step word, last word */
        int at[4] = {-1, 8, len - 9, len - 1};
        int corrupted = 0;
        for (int k = 0; k < 4; k++) {
            tsim_pkt p;
            uint64_t when = 0;
            int fifo;
            ck_assert(src.next(src.ctx, 0, &when, &p, &fifo));
            ck_assert_int_eq(p.hw.chunks, chunks);
            int hit = at[k] >= 8 && at[k] < len; /* a 1-chunk packet has one fill word */
            if (hit) p.payload[at[k]] ^= 0x10;
            corrupted += hit;
            tsim_meta m = {.t_inject = when, .t_arrive = when + 1000, .src = 0};
            src.sink(src.ctx, tsim_proc_index(tsim_node_of(&g, p.hw.dst[0], p.hw.dst[1], p.hw.dst[2]), 0),
                     fifo, &m, &p);
        }
        trf_stats st;
        trf_get_stats(t, &st);
        ck_assert_uint_eq(st.delivered, 4 - (uint64_t)corrupted);
        ck_assert_uint_eq(st.corrupted, (uint64_t)corrupted);
        printf("sink: packets of %d chunk%s, fill bytes 8..%d: intact delivered, %d damaged word%s "
               "counted corrupted\n", chunks, chunks > 1 ? "s" : "", len - 1, corrupted,
               corrupted == 1 ? "" : "s");
        trf_free(t);
    }
}
END_TEST

Suite *soak_suite(void)
{
    Suite *s = suite_create("soak");
    UM_TCASE(s, "bandwidth", 0, bandwidth_one_link_det, bandwidth_one_link_adaptive, bandwidth_three_hops_det,
             sink_catches_damage, sink_checks_every_size);
    /* shared 2-core hosts; normally seconds */
    UM_TCASE(s, "soak", 240, soak_torus_uniform, soak_mesh_uniform, soak_torus_hotspot_slow,
             soak_mesh_hotspot_slow);
    return s;
}
