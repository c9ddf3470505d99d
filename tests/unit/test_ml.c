/* Message layer over the real engine: ranks are threads on an anonymous
 * machine segment, the engine runs in the test's thread. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "messagelayer/ml_bench.h"
#include "messagelayer/ml_internal.h" /* ml_layout_copy */
#include "suite.h"

#define MAXR 16
#define NSLOT 3000

typedef struct rk rk;
typedef void (*rk_fn)(rk *r);

typedef struct rxrec {
    int src;
    size_t len;
    uint8_t hdr[ML_HDR_MAX];
    size_t hdrlen;
    int done;
} rxrec;

struct rk {
    ml_ctx *ml;
    pl_proc pp;
    int rank;
    rk_fn fn;
    /* receptions, in upcall order */
    rxrec rx[NSLOT];
    volatile int nup, ndone;
    uint8_t *rbuf;   /* where data goes (rbuf + (rx index % nslots) * stride) */
    size_t stride;
    int nslots;
    uint64_t t0, t1;
    ml_stats st; /* copied before finalize */
    void *user;
};

typedef struct world {
    tsim_seg *seg;
    rk r[MAXR];
    int n;
    ml_mode mode;
    ml_upcall_fn up; /* NULL: on_up */
    tsim_result res;
} world;

static void on_done(ml_ctx *ml, void *arg)
{
    (void)ml;
    rxrec *x = arg;
    x->done = 1;
}

static void on_up(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                  void *uarg)
{
    (void)ml;
    rk *r = uarg;
    int k = r->nup++;
    ck_assert_int_lt(k, NSLOT);
    rxrec *x = &r->rx[k];
    x->src = src;
    x->len = len;
    x->hdrlen = hdrlen;
    memcpy(x->hdr, hdr, hdrlen);
    out->buf = r->rbuf + (size_t)(k % r->nslots) * r->stride;
    out->cap = r->stride;
    out->done = on_done;
    out->arg = x;
}

static void *rk_main(void *a)
{
    rk *r = a;
    r->fn(r);
    r->st = *ml_get_stats(r->ml);
    ml_finalize(r->ml);
    pl_close(&r->pp, 0);
    return NULL;
}

/* A machine x*y*z with n ranks placed XYZT (VN: two per node, TXYZ). */
static world *world_new(int x, int y, int z, int n, ml_mode mode)
{
    world *w = calloc(1, sizeof *w);
    w->seg = um_seg(x, y, z, 1, mode == ML_MODE_VN ? 2 : 1, NULL);
    um_ranks(w->seg, n, NULL);
    w->n = n;
    w->mode = mode;
    return w;
}

static void world_run(world *w, rk_fn fn, size_t stride)
{
    for (int i = 0; i < w->n; i++) {
        rk *r = &w->r[i];
        r->rank = i;
        r->fn = fn;
        r->stride = stride;
        r->nslots = stride > 65536 ? 64 : NSLOT;
        r->rbuf = aligned_alloc(64, (size_t)r->nslots * stride); /* cache-line aligned slots */
        memset(r->rbuf, 0, (size_t)r->nslots * stride);
        pl_open(&r->pp, w->seg, w->seg->rank_proc[i], 0);
    }
    for (int i = 0; i < w->n; i++) {
        rk *r = &w->r[i];
        r->ml = ml_init(&r->pp, i, w->mode, w->up ? w->up : on_up, r);
        ck_assert_ptr_nonnull(r->ml);
    }
    tsim_engine_free(um_run(w->seg, w->n, rk_main, w->r, sizeof *w->r, &w->res));
}

static void world_free(world *w)
{
    for (int i = 0; i < w->n; i++) free(w->r[i].rbuf);
    tsim_seg_destroy(w->seg);
    free(w);
}

static int all_done(rk *r, int n)
{
    for (int i = 0; i < n; i++)
        if (!r->rx[i].done) return 0;
    return r->nup >= n;
}

static void wait_rx(rk *r, int n)
{
    while (!all_done(r, n)) {
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: waiting for messages") != 0) return;
    }
}

static void sent(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

/* ---- each protocol, sizes across packet boundaries ------------------- */
static const size_t sizes[] = {0, 1, 239, 240, 241, 4095, 1 << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])
static ml_proto g_proto;
static uint8_t *g_src; /* random data; sends start at odd offsets (unaligned) */

static void proto_sender(rk *r)
{
    if (r->rank != 0) {
        if (r->rank == 1) wait_rx(r, NSIZES);
        return;
    }
    ml_msg m[NSIZES];
    uint32_t h[NSIZES]; /* headers stay valid until the sends complete */
    volatile int nsent = 0;
    for (size_t i = 0; i < NSIZES; i++) {
        h[i] = (uint32_t)i * 7919u;
        m[i] = (ml_msg){.dst = 1, .hdr = &h[i], .hdrlen = sizeof h[i], .buf = g_src + 1 + i,
                        .len = sizes[i], .proto = g_proto, .done = sent, .arg = (void *)&nsent};
        if (g_proto == ML_ONEPKT && sizes[i] + sizeof h[i] > TSIM_PAYLOAD_MAX) {
            m[i].proto = ML_EAGER; /* too big for one packet: keep the count */
        }
        ck_assert_int_eq(ml_send(r->ml, &m[i]), 0);
    }
    while (nsent < (int)NSIZES)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
}

static void check_proto(ml_proto proto, ml_mode mode)
{
    g_proto = proto;
    g_src = malloc((1 << 20) + 64);
    srand(12345 + proto);
    for (size_t i = 0; i < (1 << 20) + 64; i++) g_src[i] = (uint8_t)rand();
    world *w = proto == ML_VN ? world_new(1, 1, 1, 2, ML_MODE_VN) : world_new(2, 1, 1, 2, mode);
    world_run(w, proto_sender, (1 << 20) + 64);
    rk *r = &w->r[1];
    ck_assert_int_eq(r->nup, (int)NSIZES);
    for (size_t i = 0; i < NSIZES; i++) {
        uint32_t h;
        memcpy(&h, r->rx[i].hdr, sizeof h);
        ck_assert_uint_eq(h, (uint32_t)i * 7919u); /* matching order = send order */
        ck_assert_uint_eq(r->rx[i].len, sizes[i]);
        ck_assert_int_eq(r->rx[i].done, 1);
        ck_assert_int_eq(memcmp(r->rbuf + i * r->stride, g_src + 1 + i, sizes[i]), 0);
    }
    const tsim_proc *snd = &w->seg->procs[w->seg->rank_proc[0]];
    const tsim_proc *co1 = &w->seg->procs[w->seg->rank_proc[1] + 1];
    if (proto == ML_RZV && mode == ML_MODE_CO) /* the data went to the coprocessor's FIFOs */
        ck_assert_uint_gt(co1->pkts_received, (1u << 20) / TSIM_PAYLOAD_MAX);
    if (proto == ML_RZV && mode != ML_MODE_CO) ck_assert_uint_eq(co1->pkts_received, 0);
    if (proto == ML_VN && getenv("BGLEMU_VN_NOCOPY")) /* streamed over the scratchpad */
        ck_assert_uint_gt(snd->pkts_injected, (1u << 20) / TSIM_PAYLOAD_MAX);
    else if (proto == ML_VN) /* addresses only */
        ck_assert_uint_le(snd->pkts_injected, 2 * NSIZES);
    world_free(w);
    free(g_src);
}

START_TEST(proto_onepkt)
{
    printf("ml: one-packet (larger sizes fall back to eager), sizes 0..1 MiB, unaligned, byte for byte\n");
    check_proto(ML_ONEPKT, ML_MODE_HEATER);
}
END_TEST
START_TEST(proto_eager)
{
    printf("ml: eager, sizes 0, 1, 239, 240, 241, 4095, 1 MiB from unaligned buffers, byte for byte\n");
    check_proto(ML_EAGER, ML_MODE_HEATER);
}
END_TEST
START_TEST(proto_adaptive)
{
    printf("ml: adaptive eager, same sizes, byte for byte, confirmations between messages\n");
    check_proto(ML_ADAPTIVE, ML_MODE_HEATER);
}
END_TEST
START_TEST(proto_rzv)
{
    printf("ml: rendezvous, same sizes, byte for byte\n");
    check_proto(ML_RZV, ML_MODE_HEATER);
}
END_TEST
START_TEST(proto_rzv_coproc)
{
    printf("ml: rendezvous in CO mode: aligned buffers are received by the coprocessor thread\n");
    check_proto(ML_RZV, ML_MODE_CO);
}
END_TEST
START_TEST(proto_vn)
{
    printf("ml: VN protocol between the two cpus of a node (direct copy), same sizes\n");
    check_proto(ML_VN, ML_MODE_VN);
}
END_TEST
START_TEST(proto_vn_fallback)
{
    printf("ml: VN protocol without direct copy falls back to the scratchpad FIFOs\n");
    setenv("BGLEMU_VN_NOCOPY", "1", 1);
    check_proto(ML_VN, ML_MODE_VN);
    unsetenv("BGLEMU_VN_NOCOPY");
}
END_TEST

/* ---- VN messages answered later (an MPI receive posted after arrival) ---- */
static unsigned g_token[NSIZES];

static void defer_up(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len,
                     ml_recv *out, void *uarg)
{
    rk *r = uarg;
    int k = r->nup;
    on_up(ml, src, hdr, hdrlen, len, out, uarg);
    ck_assert_int_eq(out->proto, ML_VN);
    g_token[k] = out->token;
    out->defer = 1;
}

static void defer_receiver(rk *r)
{
    if (r->rank == 0) {
        proto_sender(r);
        return;
    }
    while (r->nup < (int)NSIZES) /* every address arrives: the copies wait */
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: addresses") != 0) return;
    for (size_t i = 0; i < NSIZES; i++) ck_assert_int_eq(r->rx[i].done, 0);
    ck_assert_int_eq(ml_accept(r->ml, 9999, NULL, 0, NULL, NULL), -1);
    for (int i = (int)NSIZES - 1; i >= 0; i--) /* answered in reverse order */
        ck_assert_int_eq(ml_accept(r->ml, g_token[i], r->rbuf + (size_t)i * r->stride, r->stride,
                                   on_done, &r->rx[i]),
                         0);
    wait_rx(r, NSIZES);
}

static void check_vn_deferred(void)
{
    g_proto = ML_VN;
    g_src = malloc((1 << 20) + 64);
    for (size_t i = 0; i < (1 << 20) + 64; i++) g_src[i] = (uint8_t)(i * 131 + 7);
    world *w = world_new(1, 1, 1, 2, ML_MODE_VN);
    w->up = defer_up;
    world_run(w, defer_receiver, (1 << 20) + 64);
    rk *r = &w->r[1];
    ck_assert_int_eq(r->nup, (int)NSIZES);
    for (size_t i = 0; i < NSIZES; i++) {
        ck_assert_uint_eq(r->rx[i].len, sizes[i]);
        ck_assert_int_eq(r->rx[i].done, 1);
        ck_assert_int_eq(memcmp(r->rbuf + i * r->stride, g_src + 1 + i, sizes[i]), 0);
    }
    world_free(w);
    free(g_src);
}

START_TEST(vn_deferred)
{
    printf("ml: VN messages deferred by the upcall (0 B..1 MiB), copied when ml_accept answers "
           "them in reverse order\n");
    check_vn_deferred();
}
END_TEST

START_TEST(vn_deferred_fallback)
{
    printf("ml: the same without direct copy: streamed over the scratchpad after ml_accept\n");
    setenv("BGLEMU_VN_NOCOPY", "1", 1);
    check_vn_deferred();
    unsetenv("BGLEMU_VN_NOCOPY");
}
END_TEST

/* ---- matching order with a protocol mix ------------------------------ */
#define MIX_N 60
static void mix_sender(rk *r)
{
    if (r->rank == 1) {
        wait_rx(r, MIX_N);
        return;
    }
    if (r->rank != 0) return;
    static ml_msg m[MIX_N];
    static uint32_t h[MIX_N];
    volatile int nsent = 0;
    const ml_proto mix[] = {ML_RZV, ML_ONEPKT, ML_ADAPTIVE, ML_EAGER, ML_AUTO};
    for (int i = 0; i < MIX_N; i++) {
        h[i] = (uint32_t)i;
        size_t len = (size_t)(i * 997) % 5000;
        ml_proto p = mix[i % 5];
        if (p == ML_ONEPKT) len %= 200;
        m[i] = (ml_msg){.dst = 1, .hdr = &h[i], .hdrlen = 4, .buf = g_src, .len = len,
                        .proto = p, .done = sent, .arg = (void *)&nsent};
        ck_assert_int_eq(ml_send(r->ml, &m[i]), 0);
    }
    while (nsent < MIX_N)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
}

START_TEST(matching_order_mixed)
{
    printf("ml: %d messages mixing rendezvous, one-packet, adaptive, eager: upcalls in send order\n",
           MIX_N);
    g_src = malloc(8192);
    for (int i = 0; i < 8192; i++) g_src[i] = (uint8_t)(i * 31);
    world *w = world_new(4, 2, 1, 8, ML_MODE_HEATER);
    world_run(w, mix_sender, 8192);
    rk *r = &w->r[1];
    ck_assert_int_eq(r->nup, MIX_N);
    for (int i = 0; i < MIX_N; i++) {
        uint32_t h;
        memcpy(&h, r->rx[i].hdr, 4);
        ck_assert_uint_eq(h, (uint32_t)i);
        ck_assert_int_eq(memcmp(r->rbuf + (size_t)i * r->stride, g_src, r->rx[i].len), 0);
    }
    world_free(w);
    free(g_src);
}
END_TEST

/* ---- Table 1 --------------------------------------------------------- */
static ml_proto g_pong;
static uint64_t g_half;
static void pong(rk *r)
{
    if (r->rank > 1) return;
    ml_bench *b = r->user;
    uint64_t c = ml_pingpong(r->ml, b, 1 - r->rank, r->rank == 0, g_pong, 1, 10);
    if (r->rank == 0) g_half = c;
}

static void on_bench(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                     void *uarg)
{
    ml_bench_upcall()(ml, src, hdr, hdrlen, len, out, ((rk *)uarg)->user);
}

static uint64_t run_pong(ml_proto p, int x, ml_mode mode)
{
    world *w = world_new(x, 1, 1, 2, mode);
    ml_bench b[2];
    g_pong = p;
    for (int i = 0; i < 2; i++) {
        ml_bench_init(&b[i], 64);
        w->r[i].user = &b[i];
    }
    w->up = on_bench;
    world_run(w, pong, 64);
    for (int i = 0; i < 2; i++) ml_bench_free(&b[i]);
    world_free(w);
    return g_half;
}

START_TEST(table1_calibration)
{
    printf("ml: Table 1 (Almasi et al. 2005), nearest neighbours, 1 byte, half round trip: "
           "exact cycles and within 10%% of the paper\n");
    const struct { ml_proto p; uint64_t paper, ours; } t[] = {
        {ML_ONEPKT, 1600, 1600}, {ML_EAGER, 2700, 2700},
        {ML_ADAPTIVE, 3300, 3300}, {ML_RZV, 12000, 12107}};
    for (int i = 0; i < 4; i++) {
        uint64_t c = run_pong(t[i].p, 2, ML_MODE_CO); /* CO: mpirun's default mode */
        printf("  %-15s %6llu cycles (paper %llu)\n", ml_proto_name(t[i].p),
               (unsigned long long)c, (unsigned long long)t[i].paper);
        ck_assert_uint_eq(c, t[i].ours);
        ck_assert_uint_le(c * 10, t[i].paper * 11);
        ck_assert_uint_ge(c * 10, t[i].paper * 9);
    }
}
END_TEST

/* ---- adaptive packets out of order under cross traffic --------------- */
#define XT_MSGS 6
#define XT_LEN 4000
/* rank 0 -> rank 10 (two hops in x and in y): adaptive eager; everyone
 * else floods another rank with dynamically routed rendezvous data */
static int xt_dst(int s)
{
    if (s == 0) return 10;
    int d = (s + 8) % 16;
    while (d == 0 || d == 10 || d == s) d = (d + 1) % 16;
    return d;
}

static void xtraffic(rk *r)
{
    static volatile int nsent[MAXR];
    static ml_msg m[MAXR][XT_MSGS];
    static uint32_t h[MAXR][XT_MSGS];
    int me = r->rank;
    if (me != 10)
        for (int k = 0; k < XT_MSGS; k++) {
            h[me][k] = (uint32_t)k;
            m[me][k] = (ml_msg){.dst = xt_dst(me), .hdr = &h[me][k], .hdrlen = 4, .buf = g_src,
                                .len = me == 0 ? XT_LEN : 20000,
                                .proto = me == 0 ? ML_ADAPTIVE : ML_RZV, .done = sent,
                                .arg = (void *)&nsent[me]};
            ck_assert_int_eq(ml_send(r->ml, &m[me][k]), 0);
        }
    while (nsent[me] < (me == 10 ? 0 : XT_MSGS))
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: cross traffic") != 0) return;
    int want = 0;
    for (int s2 = 0; s2 < 16; s2++)
        if (s2 != 10 && xt_dst(s2) == me) want += XT_MSGS;
    wait_rx(r, want);
}

START_TEST(adaptive_out_of_order)
{
    printf("ml: adaptive-eager data packets overtake each other under cross traffic on a 4x4 torus; "
           "the receiver reassembles them by offset, byte for byte\n");
    g_src = malloc(20000);
    for (int i = 0; i < 20000; i++) g_src[i] = (uint8_t)(i * 7 + 1);
    world *w = world_new(4, 4, 1, 16, ML_MODE_HEATER);
    world_run(w, xtraffic, 20032);
    rk *r = &w->r[10];
    int from0 = 0;
    for (int i = 0; i < r->nup; i++) {
        if (r->rx[i].src != 0) continue;
        uint32_t h;
        memcpy(&h, r->rx[i].hdr, 4);
        ck_assert_uint_eq(h, (uint32_t)from0++); /* rank 0's messages in send order */
        ck_assert_int_eq(memcmp(r->rbuf + (size_t)i * r->stride, g_src, XT_LEN), 0);
    }
    ck_assert_int_eq(from0, XT_MSGS);
    printf("  %llu packets arrived out of order at rank 10\n", (unsigned long long)r->st.reordered);
    ck_assert_uint_gt(r->st.reordered, 0);
    world_free(w);
    free(g_src);
}
END_TEST

/* ---- VN mode: VN protocol and torus at once -------------------------- */
static void vn_mix(rk *r)
{
    /* ranks 0,1 share node 0; 2,3 share node 1: everyone sends to its node
     * mate (VN protocol) and to the same cpu of the other node (torus) */
    static volatile int nsent[4];
    static ml_msg m[4][2];
    static uint32_t h[4][2];
    int me = r->rank;
    int peers[2] = {me ^ 1, me ^ 2};
    for (int k = 0; k < 2; k++) {
        h[me][k] = (uint32_t)(me * 10 + k);
        m[me][k] = (ml_msg){.dst = peers[k], .hdr = &h[me][k], .hdrlen = 4, .buf = g_src,
                            .len = 50000, .proto = ML_AUTO, .done = sent, .arg = (void *)&nsent[me]};
        ck_assert_int_eq(ml_send(r->ml, &m[me][k]), 0);
    }
    while (nsent[me] < 2)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: vn") != 0) return;
    wait_rx(r, 2);
    r->t0 = ml_get_stats(r->ml)->msgs[ML_VN];
    r->t1 = ml_get_stats(r->ml)->msgs[ML_RZV];
}

START_TEST(vn_mode_both_paths)
{
    printf("ml: VN mode, 4 ranks on 2 nodes: each rank exchanges 50 kB with its node mate (VN "
           "protocol) and with the other node (torus) at the same time\n");
    g_src = malloc(50000);
    for (int i = 0; i < 50000; i++) g_src[i] = (uint8_t)(i * 3);
    world *w = world_new(2, 1, 1, 4, ML_MODE_VN);
    world_run(w, vn_mix, 50048);
    for (int i = 0; i < 4; i++) {
        rk *r = &w->r[i];
        ck_assert_int_eq(r->nup, 2);
        ck_assert_uint_eq(r->t0, 1); /* one message by the VN protocol */
        ck_assert_uint_eq(r->t1, 1); /* one by rendezvous over the torus */
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(r->rx[k].done, 1);
            ck_assert_int_eq(memcmp(r->rbuf + (size_t)k * r->stride, g_src, 50000), 0);
        }
    }
    ck_assert_uint_gt(w->res.packet_hops, 0);
    world_free(w);
    free(g_src);
}
END_TEST

/* ---- coprocessor: transient work unit -------------------------------- */
static volatile int g_cowork;
static void cowork(pl_proc *co, void *arg)
{
    pl_charge(co, 5000); /* work on the coprocessor's own clock */
    *(int *)arg = 42;
}
static void costart_join(rk *r)
{
    if (r->rank != 0) return;
    static int out;
    uint64_t t0 = pl_now(&r->pp);
    ck_assert_int_eq(ml_costart(r->ml, cowork, &out), 0);
    pl_charge(&r->pp, 1000); /* main processor works meanwhile */
    ck_assert_int_eq(ml_cojoin(r->ml), 0);
    r->t0 = t0;
    r->t1 = pl_now(&r->pp);
    g_cowork = out;
}

START_TEST(coproc_costart_cojoin)
{
    printf("ml: costart runs a work unit on the coprocessor's clock while the main processor "
           "works; cojoin waits for it (main clock >= start + 5000 cycles)\n");
    world *w = world_new(2, 1, 1, 2, ML_MODE_CO);
    world_run(w, costart_join, 64);
    ck_assert_int_eq(g_cowork, 42);
    ck_assert_uint_ge(w->r[0].t1, w->r[0].t0 + 5000);
    ck_assert_uint_lt(w->r[0].t1, w->r[0].t0 + 5000 + 2000); /* overlap, not 5000 + 1000 + ... */
    world_free(w);
}
END_TEST

/* ---- thousands of outstanding messages ------------------------------- */
#define MANY 400
static void many(rk *r)
{
    int me = r->rank, n = 8;
    static ml_msg m[8][MANY * 7];
    static uint32_t h[8][MANY * 7];
    static volatile int nsent[8];
    int k = 0;
    for (int i = 0; i < MANY; i++)
        for (int d = 0; d < n; d++) {
            if (d == me) continue;
            h[me][k] = (uint32_t)i;
            size_t len = (size_t)((i * 37 + d * 11 + me) % 1200);
            m[me][k] = (ml_msg){.dst = d, .hdr = &h[me][k], .hdrlen = 4, .buf = g_src, .len = len,
                                .proto = ML_AUTO, .done = sent, .arg = (void *)&nsent[me]};
            ck_assert_int_eq(ml_send(r->ml, &m[me][k]), 0);
            k++;
        }
    wait_rx(r, MANY * (n - 1));
    while (nsent[me] < k)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: many") != 0) return;
}

START_TEST(thousands_outstanding)
{
    printf("ml: 8 ranks each post %d messages (0..1199 bytes) to every other rank before "
           "receiving: all %d arrive, per-pair order kept, no deadlock\n", MANY * 7, MANY * 56);
    g_src = malloc(1200);
    for (int i = 0; i < 1200; i++) g_src[i] = (uint8_t)(i + 5);
    world *w = world_new(2, 2, 2, 8, ML_MODE_HEATER);
    world_run(w, many, 1216);
    for (int i = 0; i < 8; i++) {
        rk *r = &w->r[i];
        uint32_t next[8] = {0};
        ck_assert_int_eq(r->nup, MANY * 7);
        for (int j = 0; j < r->nup; j++) {
            uint32_t h;
            memcpy(&h, r->rx[j].hdr, 4);
            ck_assert_uint_eq(h, next[r->rx[j].src]++);
            ck_assert_int_eq(r->rx[j].done, 1);
        }
    }
    world_free(w);
    free(g_src);
}
END_TEST

/* ---- injection FIFO by direction (no head-of-line blocking) ---------- */
/* On a 1x5x1 torus rank 0 sends 64 KiB eager to each of ranks 1 and 2 (both
 * leave by y+, which they share) and 4 KiB to rank 4 (y-). Pinned by
 * dst % 3, ranks 1 and 4 shared FIFO 1: each packet for rank 4 waited
 * behind one for rank 1, which waits for the shared y+ link, so the small
 * message crawled at half a link. By direction its packets have FIFO 0 to
 * themselves (y+ takes FIFO 2): it arrives as if alone. */
#define HOL_BIG (64 * 1024)
#define HOL_SMALL 4096
static int g_hol_big;
static uint64_t g_hol_t;

static void hol(rk *r)
{
    static volatile int nsent;
    static ml_msg m[3];
    static uint32_t h[3];
    if (r->rank == 0) {
        nsent = 0;
        int k = 0;
        for (int d = 1; g_hol_big && d <= 2; d++, k++)
            m[k] = (ml_msg){.dst = d, .hdr = &h[k], .hdrlen = 4, .buf = g_src, .len = HOL_BIG,
                            .proto = ML_EAGER, .done = sent, .arg = (void *)&nsent};
        m[k++] = (ml_msg){.dst = 4, .hdr = &h[2], .hdrlen = 4, .buf = g_src, .len = HOL_SMALL,
                          .proto = ML_EAGER, .done = sent, .arg = (void *)&nsent};
        for (int i = 0; i < k; i++) ck_assert_int_eq(ml_send(r->ml, &m[i]), 0);
        while (nsent < k)
            if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
    } else if (r->rank == 4 || (r->rank <= 2 && g_hol_big)) {
        wait_rx(r, 1);
        if (r->rank == 4) g_hol_t = r->pp.vt;
    }
}

static uint64_t run_hol(int big)
{
    g_hol_big = big;
    world *w = world_new(1, 5, 1, 5, ML_MODE_HEATER);
    world_run(w, hol, HOL_BIG);
    ck_assert_int_eq(w->r[4].nup, 1);
    ck_assert_uint_eq(w->r[4].rx[0].len, HOL_SMALL);
    world_free(w);
    return g_hol_t;
}

START_TEST(fifo_by_direction)
{
    printf("ml: injection FIFO by direction: 4 KiB to the y- neighbour, sent beside 2 x 64 KiB "
           "over the y+ link, arrives within 25%% of its time alone (pinned by dst %% 3: 1.77x)\n");
    g_src = malloc(HOL_BIG);
    memset(g_src, 7, HOL_BIG);
    uint64_t alone = run_hol(0), beside = run_hol(1);
    printf("  4 KiB to rank 4: %llu cycles alone, %llu beside the y+ traffic\n",
           (unsigned long long)alone, (unsigned long long)beside);
    ck_assert_uint_le(beside * 4, alone * 5);
    free(g_src);
}
END_TEST

/* ---- layouts: packets gathered from and scattered into segments -------- */
#define LAY_N 6
static const size_t lay_sizes[LAY_N] = {0, 100, 239, 4095, 20000, 300000};
#define LAY_TRUNC 4 /* this message's receive layout holds half of it */
#define LAY_SB 13   /* sender: blocks of 13 bytes, stride 26 */
#define LAY_RB 7    /* receiver: blocks of 7 bytes, stride 21 (a different layout, same bytes) */
static struct iovec *g_siov[LAY_N], *g_riov[LAY_N];
static size_t g_sn[LAY_N], g_rn[LAY_N];
static int g_lay_defer;

/* Blocks of b bytes every stride bytes from base, len bytes in all. */
static struct iovec *blocks(uint8_t *base, size_t len, size_t b, size_t stride, size_t *n)
{
    *n = (len + b - 1) / b;
    struct iovec *v = calloc(*n ? *n : 1, sizeof *v);
    for (size_t k = 0; k < *n; k++)
        v[k] = (struct iovec){base + k * stride, len - k * b < b ? len - k * b : b};
    return v;
}

static void lay_up(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                   void *uarg)
{
    rk *r = uarg;
    int k = r->nup;
    on_up(ml, src, hdr, hdrlen, len, out, uarg);
    size_t cap = k == LAY_TRUNC ? len / 2 : len;
    g_riov[k] = blocks(r->rbuf + (size_t)k * r->stride, cap, LAY_RB, 3 * LAY_RB, &g_rn[k]);
    out->buf = NULL;
    out->cap = 0; /* a layout of no segments is an empty buffer */
    out->iov = g_riov[k];
    out->niov = g_rn[k];
    if (g_lay_defer && out->proto == ML_VN) {
        g_token[k] = out->token;
        out->defer = 1;
    }
}

static void lay_sender(rk *r)
{
    if (r->rank == 1) {
        if (g_lay_defer) {
            while (r->nup < LAY_N)
                if (!ml_advance(r->ml) && ml_idle(r->ml, "test: layouts") != 0) return;
            for (int i = LAY_N - 1; i >= 0; i--)
                ck_assert_int_eq(ml_accept_iov(r->ml, g_token[i], g_riov[i], g_rn[i], on_done,
                                               &r->rx[i]), 0);
        }
        wait_rx(r, LAY_N);
        return;
    }
    if (r->rank != 0) return;
    ml_msg m[LAY_N];
    uint32_t h[LAY_N];
    volatile int nsent = 0;
    for (int i = 0; i < LAY_N; i++) {
        h[i] = (uint32_t)i;
        g_siov[i] = blocks(g_src + 1, lay_sizes[i], LAY_SB, 2 * LAY_SB, &g_sn[i]);
        ml_proto p = g_proto;
        if (p == ML_ONEPKT && lay_sizes[i] + sizeof h[i] > TSIM_PAYLOAD_MAX) p = ML_EAGER;
        m[i] = (ml_msg){.dst = 1, .hdr = &h[i], .hdrlen = sizeof h[i], .iov = g_siov[i],
                        .niov = g_sn[i], .len = lay_sizes[i], .proto = p, .done = sent,
                        .arg = (void *)&nsent};
        ck_assert_int_eq(ml_send(r->ml, &m[i]), 0);
    }
    while (nsent < LAY_N)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: layout sends") != 0) return;
}

static void check_layouts(ml_proto proto, ml_mode mode, int defer)
{
    g_proto = proto;
    g_lay_defer = defer;
    size_t srclen = 2 * 300000 + 64;
    g_src = malloc(srclen);
    for (size_t i = 0; i < srclen; i++) g_src[i] = (uint8_t)(i * 31 % 255 + 1); /* never 0 */
    world *w = proto == ML_VN ? world_new(1, 1, 1, 2, ML_MODE_VN) : world_new(2, 1, 1, 2, mode);
    w->up = lay_up;
    size_t stride = 3 * 300000 + 64;
    world_run(w, lay_sender, stride);
    rk *r = &w->r[1];
    ck_assert_int_eq(r->nup, LAY_N);
    uint8_t *want = malloc(300000), *got = malloc(300000);
    for (int i = 0; i < LAY_N; i++) {
        size_t len = lay_sizes[i], cap = i == LAY_TRUNC ? len / 2 : len;
        ck_assert_uint_eq(r->rx[i].len, len);
        ck_assert_int_eq(r->rx[i].done, 1);
        ml_cursor c = {0, 0};
        ml_layout_copy(g_siov[i], g_sn[i], &c, 0, want, len, 1);
        c = (ml_cursor){0, 0};
        ml_layout_copy(g_riov[i], g_rn[i], &c, 0, got, cap, 1);
        ck_assert_int_eq(memcmp(want, got, cap), 0);
        const uint8_t *slot = r->rbuf + (size_t)i * r->stride; /* the gaps stay untouched */
        for (size_t k = 0; k < 3 * cap; k++)
            if (k % (3 * LAY_RB) >= LAY_RB) ck_assert_uint_eq(slot[k], 0);
        free(g_siov[i]);
        free(g_riov[i]);
    }
    const tsim_proc *snd = &w->seg->procs[w->seg->rank_proc[0]];
    const tsim_proc *rcv = &w->seg->procs[w->seg->rank_proc[1]];
    const tsim_proc *co1 = &w->seg->procs[w->seg->rank_proc[1] + 1];
    printf("  %s: datatype work %llu cycles at the sender, %llu at the receiver (+%llu its "
           "coprocessor)\n", ml_proto_name(proto), (unsigned long long)snd->ddt_cycles,
           (unsigned long long)rcv->ddt_cycles, (unsigned long long)(mode == ML_MODE_CO ? co1->ddt_cycles : 0));
    if (proto != ML_VN || !getenv("BGLEMU_VN_NOCOPY")) /* segments cost where they are walked */
        ck_assert_uint_gt(rcv->ddt_cycles + (mode == ML_MODE_CO ? co1->ddt_cycles : 0), 0);
    if (proto == ML_RZV && mode == ML_MODE_CO) /* scattered by the coprocessor */
        ck_assert_uint_gt(co1->ddt_cycles, 0);
    free(want);
    free(got);
    world_free(w);
    free(g_src);
}

START_TEST(layout_protocols)
{
    printf("ml: layouts (13-byte blocks, stride 26) into a different layout (7-byte blocks, "
           "stride 21), 0 B..300 kB, one truncated: byte for byte, gaps untouched, per protocol\n");
    const ml_proto ps[] = {ML_ONEPKT, ML_EAGER, ML_ADAPTIVE, ML_RZV};
    for (int i = 0; i < 4; i++) check_layouts(ps[i], ML_MODE_HEATER, 0);
}
END_TEST

START_TEST(layout_rzv_coproc)
{
    printf("ml: layouts by rendezvous in CO mode: scattered by the coprocessor\n");
    check_layouts(ML_RZV, ML_MODE_CO, 0);
}
END_TEST

START_TEST(layout_vn)
{
    printf("ml: layouts by the VN protocol: the receiver copies from the sender's layout into its "
           "own, now, deferred (ml_accept_iov) and without direct copy (scratchpad)\n");
    check_layouts(ML_VN, ML_MODE_VN, 0);
    check_layouts(ML_VN, ML_MODE_VN, 1);
    setenv("BGLEMU_VN_NOCOPY", "1", 1);
    check_layouts(ML_VN, ML_MODE_VN, 0);
    unsetenv("BGLEMU_VN_NOCOPY");
}
END_TEST

/* The VN layout exchange memoized: two messages with one layout key cost
 * the receiver the list read once, then a lookup. */
static uint64_t g_key;
static void two_keyed(rk *r)
{
    if (r->rank == 1) {
        wait_rx(r, 2);
        return;
    }
    static struct iovec v[2][100];
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 100; k++) v[m][k] = (struct iovec){g_src + 1000 * m + 10 * k, 5};
    uint32_t h = 1;
    volatile int nsent = 0;
    ml_msg a[2];
    for (int m = 0; m < 2; m++) {
        a[m] = (ml_msg){.dst = 1, .hdr = &h, .hdrlen = 4, .iov = v[m], .niov = 100, .len = 500,
                        .layout_key = g_key, .proto = ML_VN, .done = sent, .arg = (void *)&nsent};
        ck_assert_int_eq(ml_send(r->ml, &a[m]), 0);
    }
    while (nsent < 2)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
}

static uint64_t keyed_run(uint64_t key)
{
    g_key = key;
    world *w = world_new(1, 1, 1, 2, ML_MODE_VN);
    world_run(w, two_keyed, 1024);
    for (int m = 0; m < 2; m++) /* contiguous receive slots: the 5-byte pieces in order */
        for (int k = 0; k < 100; k++)
            ck_assert_int_eq(memcmp(w->r[1].rbuf + (size_t)m * 1024 + 5 * k, g_src + 1000 * m + 10 * k, 5), 0);
    uint64_t c = w->seg->procs[w->seg->rank_proc[1]].ddt_cycles;
    world_free(w);
    return c;
}

START_TEST(layout_vn_key)
{
    printf("ml: VN layout exchange memoized: two 100-segment messages with one layout key cost the "
           "receiver 1,600 list bytes at the copy rate once, then ddt_lookup_cycles\n");
    g_src = malloc(4096);
    for (int i = 0; i < 4096; i++) g_src[i] = (uint8_t)(i * 13 + 5);
    tsim_params p;
    tsim_params_default(&p);
    uint64_t plain = keyed_run(0), keyed = keyed_run(0x1234567);
    printf("  receiver datatype work: %llu cycles without a key, %llu with\n",
           (unsigned long long)plain, (unsigned long long)keyed);
    ck_assert_uint_eq(plain - keyed, 1600 * p.ml_copy_cycles_per_kb / 1024 - p.ddt_lookup_cycles);
    free(g_src);
}
END_TEST

/* The gather's cost, exactly: a one-packet message of 4 segments. */
static void four_segs(rk *r)
{
    if (r->rank == 1) {
        wait_rx(r, 2);
        return;
    }
    static struct iovec v[4];
    for (int k = 0; k < 4; k++) v[k] = (struct iovec){g_src + 100 * k, 50};
    uint32_t h = 1;
    volatile int nsent = 0;
    ml_msg a = {.dst = 1, .hdr = &h, .hdrlen = 4, .iov = v, .niov = 4, .len = 200,
                .proto = ML_ONEPKT, .done = sent, .arg = (void *)&nsent};
    ml_msg b = {.dst = 1, .hdr = &h, .hdrlen = 4, .buf = g_src, .len = 200, .proto = ML_ONEPKT,
                .done = sent, .arg = (void *)&nsent};
    ml_msg bad = a;
    bad.len = 199; /* not the segments' total */
    ck_assert_int_eq(ml_send(r->ml, &bad), -1);
    ck_assert_int_eq(ml_send(r->ml, &a), 0);
    ck_assert_int_eq(ml_send(r->ml, &b), 0);
    while (nsent < 2)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
}

START_TEST(layout_cost)
{
    printf("ml: a one-packet message gathered from 4 segments costs its sender 4 x ddt_seg_cycles; "
           "a contiguous one and a contiguous receive cost nothing more\n");
    g_src = malloc(400);
    memset(g_src, 9, 400);
    world *w = world_new(2, 1, 1, 2, ML_MODE_HEATER);
    world_run(w, four_segs, 256);
    tsim_params p;
    tsim_params_default(&p);
    ck_assert_uint_eq(w->seg->procs[w->seg->rank_proc[0]].ddt_cycles, 4 * p.ddt_seg_cycles);
    ck_assert_uint_eq(w->seg->procs[w->seg->rank_proc[1]].ddt_cycles, 0);
    world_free(w);
    free(g_src);
}
END_TEST

/* ---- CO mode: an unaligned buffer split between the two cpus ---------- */
/* Receive buffers 16 bytes past a 32-byte line (glibc's malloc above its
 * mmap threshold): a message's whole lines go to the coprocessor, the
 * partial lines at its ends to the main processor (ml_recv.c's grant). */
static const size_t split_sizes[] = {1 << 20, 20, 40, 56, 48};
#define NSPLIT (sizeof split_sizes / sizeof split_sizes[0])
#define SPLIT_OFF 16

static void split_up(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len,
                     ml_recv *out, void *uarg)
{
    on_up(ml, src, hdr, hdrlen, len, out, uarg);
    out->buf = (uint8_t *)out->buf + SPLIT_OFF;
    out->cap = len;
}

static void split_sender(rk *r)
{
    if (r->rank != 0) {
        wait_rx(r, NSPLIT);
        return;
    }
    ml_msg m[NSPLIT];
    uint32_t h[NSPLIT];
    volatile int nsent = 0;
    for (size_t i = 0; i < NSPLIT; i++) {
        h[i] = (uint32_t)i;
        m[i] = (ml_msg){.dst = 1, .hdr = &h[i], .hdrlen = sizeof h[i], .buf = g_src + 3 + i,
                        .len = split_sizes[i], .proto = ML_RZV, .done = sent, .arg = (void *)&nsent};
        ck_assert_int_eq(ml_send(r->ml, &m[i]), 0);
    }
    while (nsent < (int)NSPLIT)
        if (!ml_advance(r->ml) && ml_idle(r->ml, "test: sends") != 0) return;
}

START_TEST(coproc_split_unaligned)
{
    printf("ml: CO rendezvous into buffers 16 bytes past a line: 1 MiB's whole lines on the "
           "coprocessor, its partial lines (16 + 16 bytes) on the main processor; 20, 40 bytes "
           "(no whole line) on the main processor, 56 bytes split 16 + 32 + 8, 48 bytes 16 + 32 + none\n");
    size_t stride = (1 << 20) + 128;
    g_src = malloc(stride);
    srand(777);
    for (size_t i = 0; i < stride; i++) g_src[i] = (uint8_t)rand();
    world *w = world_new(2, 1, 1, 2, ML_MODE_CO);
    w->up = split_up;
    world_run(w, split_sender, stride);
    rk *r = &w->r[1];
    ck_assert_int_eq(r->nup, (int)NSPLIT);
    for (size_t i = 0; i < NSPLIT; i++) {
        const uint8_t *b = r->rbuf + i * r->stride;
        ck_assert_int_eq(r->rx[i].done, 1);
        ck_assert_msg(!memcmp(b + SPLIT_OFF, g_src + 3 + i, split_sizes[i]), "message %zu corrupted", i);
        for (size_t k = 0; k < SPLIT_OFF; k++) ck_assert_uint_eq(b[k], 0); /* nothing outside */
        for (size_t k = SPLIT_OFF + split_sizes[i]; k < SPLIT_OFF + split_sizes[i] + 32; k++)
            ck_assert_uint_eq(b[k], 0);
    }
    /* the coprocessor read the whole lines: 1 MiB - 32 bytes in 4,369
     * packets, the 56- and 48-byte messages' line in one each, and its stop
     * request */
    const tsim_proc *co1 = &w->seg->procs[w->seg->rank_proc[1] + 1];
    size_t mid = (1u << 20) - 32, co_pkts = (mid + TSIM_PAYLOAD_MAX - 1) / TSIM_PAYLOAD_MAX + 2;
    printf("    coprocessor %llu packets (%zu data), main processor %llu\n",
           (unsigned long long)co1->pkts_received, co_pkts, (unsigned long long)r->st.pkts_recv);
    ck_assert_uint_eq(co1->pkts_received, co_pkts + 1);
    /* 8 chunks a 1 MiB packet, 2 a one-line one, 1 the stop request */
    ck_assert_uint_eq(co1->bytes_received, (co_pkts - 2) * 8 * TSIM_CHUNK + 2 * 2 * TSIM_CHUNK + TSIM_CHUNK);
    /* the main processor (its counts taken before ml_finalize): 5 scouts;
     * the ends: 2 (1 MiB), 1, 1, 2 (56 bytes), 1 (48); the coprocessor's 3
     * completions */
    ck_assert_uint_eq(r->st.pkts_recv, 5 + 7 + 3);
    world_free(w);
    free(g_src);
}
END_TEST

Suite *ml_suite(void)
{
    Suite *s = suite_create("ml");
    UM_TCASE(s, "protocols", 120, proto_onepkt, proto_eager, proto_adaptive, proto_rzv, proto_rzv_coproc,
             proto_vn, proto_vn_fallback, vn_deferred, vn_deferred_fallback, matching_order_mixed,
             table1_calibration, adaptive_out_of_order, vn_mode_both_paths, coproc_costart_cojoin,
             thousands_outstanding, fifo_by_direction, coproc_split_unaligned);
    UM_TCASE(s, "layouts", 120, layout_protocols, layout_rzv_coproc, layout_vn, layout_cost, layout_vn_key);
    return s;
}
