/* Message layer over the real engine: ranks are threads on an anonymous
 * machine segment, the engine runs in the test's thread. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "messagelayer/ml.h"

#define MAXR 16
#define NSLOT 4096

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
    uint8_t *rbuf;   /* where data goes (rbuf + rx index * stride) */
    size_t stride;
    uint64_t t0, t1;
    void *user;
};

typedef struct world {
    tsim_seg *seg;
    rk r[MAXR];
    int n;
    ml_mode mode;
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
    out->buf = r->rbuf + (size_t)k * r->stride;
    out->cap = r->stride;
    out->done = on_done;
    out->arg = x;
}

static void *rk_main(void *a)
{
    rk *r = a;
    r->fn(r);
    ml_finalize(r->ml);
    pl_close(&r->pp, 0);
    return NULL;
}

/* A machine x*y*z with n ranks placed XYZT (VN: two per node). */
static world *world_new(int x, int y, int z, int n, ml_mode mode)
{
    world *w = calloc(1, sizeof *w);
    tsim_geom g = {{x, y, z}, {1, 1, 1}, mode == ML_MODE_VN ? 2 : 1, 0, n};
    tsim_params p;
    tsim_params_default(&p);
    char err[256];
    w->seg = tsim_seg_create(&g, &p, 0, err, sizeof err);
    ck_assert_msg(w->seg, "%s", err);
    w->seg->geom.nranks = n;
    int cpus = g.cpus;
    for (int i = 0; i < n; i++) {
        int node = cpus == 2 ? i / 2 : i, cpu = cpus == 2 ? i % 2 : 0; /* TXYZ in VN, XYZT in CO */
        w->seg->rank_proc[i] = tsim_proc_index(node, cpu);
        w->seg->procs[w->seg->rank_proc[i]].rank = i;
    }
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
        r->rbuf = aligned_alloc(64, 64 * (stride + 64)); /* cache-line aligned slots */
        memset(r->rbuf, 0, 64 * (stride + 64));
        pl_open(&r->pp, w->seg, w->seg->rank_proc[i], 0);
    }
    for (int i = 0; i < w->n; i++) {
        rk *r = &w->r[i];
        r->ml = ml_init(&r->pp, i, w->mode, on_up, r);
        ck_assert_ptr_nonnull(r->ml);
    }
    tsim_engine *e = tsim_engine_new(w->seg);
    pthread_t th[MAXR];
    for (int i = 0; i < w->n; i++) pthread_create(&th[i], NULL, rk_main, &w->r[i]);
    int rc = tsim_engine_run(e, &w->res);
    for (int i = 0; i < w->n; i++) pthread_join(th[i], NULL);
    if (rc == 2) tsim_engine_print_deadlock(e, stderr);
    ck_assert_int_eq(rc, 0);
    tsim_engine_free(e);
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

Suite *ml_suite(void)
{
    Suite *s = suite_create("ml");
    TCase *tc = tcase_create("protocols");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, proto_onepkt);
    tcase_add_test(tc, proto_eager);
    tcase_add_test(tc, proto_adaptive);
    tcase_add_test(tc, proto_rzv);
    tcase_add_test(tc, proto_rzv_coproc);
    tcase_add_test(tc, proto_vn);
    tcase_add_test(tc, proto_vn_fallback);
    tcase_add_test(tc, matching_order_mixed);
    suite_add_tcase(s, tc);
    return s;
}
