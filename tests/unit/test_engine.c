/* The engine through the packet layer: processors are threads on an
 * anonymous segment, the engine runs in the test's thread. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "packetlayer/pl.h"
#include "pictures/pic.h"
#include "suite.h"

typedef struct job job;
typedef void (*body_fn)(job *j, pl_proc *pp);

#define MAXP 64
typedef struct targ {
    job *j;
    int k;
} targ;

struct job {
    tsim_seg *seg;
    tsim_engine *eng;
    tsim_result res;
    body_fn body[MAXP];
    pl_proc pp[MAXP];
    targ ta[MAXP];
    int idx[MAXP], n;
    /* scratch results the bodies record */
    uint64_t t[4096];
    uint32_t v[4096];
    int count;
    uint64_t end_vt[MAXP];
};

static job *job_new(int x, int y, int z, int torus, int cpus)
{
    job *j = calloc(1, sizeof *j);
    j->seg = um_seg(x, y, z, torus, cpus, NULL);
    return j;
}

static void job_add(job *j, int proc, body_fn fn)
{
    j->idx[j->n] = proc;
    j->body[j->n] = fn;
    pl_open(&j->pp[j->n], j->seg, proc, 0);
    j->n++;
}

static void *runner(void *a)
{
    targ *t = a;
    job *j = t->j;
    j->body[t->k](j, &j->pp[t->k]);
    j->end_vt[t->k] = j->pp[t->k].vt;
    pl_close(&j->pp[t->k], 0);
    return NULL;
}

/* Runs the bodies on engine e (NULL: a new one): its status. */
static int job_run_on(job *j, tsim_engine *e)
{
    j->eng = e ? e : tsim_engine_new(j->seg);
    for (int k = 0; k < j->n; k++) j->ta[k] = (targ){j, k};
    return um_go(j->eng, j->n, runner, j->ta, sizeof *j->ta, &j->res);
}

static int job_run(job *j) { return job_run_on(j, NULL); }

static void job_free(job *j)
{
    tsim_engine_free(j->eng);
    tsim_seg_destroy(j->seg);
    free(j);
}

static int proc_at(tsim_seg *s, int x, int y, int z, int cpu)
{
    return tsim_proc_index(tsim_node_of(&s->geom, x, y, z), cpu);
}

/* Receives n packets from any FIFO, recording arrival and first payload word. */
static void recv_n(job *j, pl_proc *pp, int n)
{
    for (int i = 0; i < n; i++) {
        int f;
        while ((f = pl_poll(pp, TSIM_WAKE_REC_ALL)) < 0) pl_block(pp, TSIM_WAKE_REC_ALL, "test recv");
        const tsim_slot *s = pl_peek(pp, f);
        uint32_t v;
        memcpy(&v, s->p.payload, sizeof v);
        j->t[j->count] = s->m.t_arrive;
        j->v[j->count] = v;
        j->count++;
        pl_consume(pp, f);
    }
}

/* ---- single packet timing -------------------------------------------- */
static int g_dst;
static void send_one(job *j, pl_proc *pp)
{
    (void)j;
    tsim_hwhdr hw;
    uint32_t v = 7;
    pl_header(pp, &hw, g_dst, 1, 0);
    pl_inject_wait(pp, 0, &hw, NULL, &v, 1);
}
static void recv_one(job *j, pl_proc *pp) { recv_n(j, pp, 1); }

START_TEST(single_packet_time)
{
    printf("engine: one 1-chunk packet over 3 hops arrives at injection + 3 x hop + serialization\n");
    job *j = job_new(4, 4, 4, 1, 1);
    int src = proc_at(j->seg, 0, 0, 0, 0);
    g_dst = proc_at(j->seg, 2, 3, 0, 0); /* x +2, y -1 (wraps) */
    job_add(j, src, send_one);
    job_add(j, g_dst, recv_one);
    ck_assert_int_eq(job_run(j), 0);
    const tsim_params *p = &j->seg->params;
    uint64_t t_inj = p->pkt_write_cycles;
    uint64_t expect = t_inj + 3 * p->hop_latency + (32 + p->wire_overhead) * p->link_cycles_per_byte;
    ck_assert_int_eq(j->count, 1);
    ck_assert_uint_eq(j->t[0], expect);
    /* the receiver sees it one cycle after arrival, then pays the read */
    ck_assert_uint_eq(j->end_vt[1], expect + 1 + p->pkt_read_cycles);
    ck_assert_uint_eq(j->res.packet_hops, 3);
    job_free(j);
}
END_TEST

START_TEST(report_json_and_heatmap)
{
    printf("engine: the JSON report escapes the mapping string and counts the links used; "
           "the heatmap shows the busy links\n");
    job *j = job_new(4, 1, 1, 0, 1);
    snprintf(j->seg->mapping, sizeof j->seg->mapping, "odd \"name\" \\ here");
    g_dst = proc_at(j->seg, 3, 0, 0, 0);
    job_add(j, proc_at(j->seg, 0, 0, 0, 0), send_one);
    job_add(j, g_dst, recv_one);
    ck_assert_int_eq(job_run(j), 0);
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    tsim_engine_report_json(j->eng, &j->res, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"mapping\": \"odd \\\"name\\\" \\\\ here\""));
    int used = 0;
    for (char *q = buf; (q = strstr(q, "\"packets\": 1,")); q++) used++;
    ck_assert_int_eq(used, 3); /* x+ links of nodes 0, 1, 2 on the mesh line */
    free(buf);
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(pic_run_heatmap(j->seg, j->eng, &j->res, NULL, PIC_HEAT_TEXT, f), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "link utilization"));
    ck_assert_ptr_nonnull(strstr(buf, "mean by direction: x+"));
    free(buf);
    job_free(j);
}
END_TEST

/* ---- deposit bit ------------------------------------------------------ */
static void send_deposit(job *j, pl_proc *pp)
{
    (void)j;
    tsim_hwhdr hw;
    uint32_t v = 42;
    pl_header(pp, &hw, g_dst, 4, TSIM_F_DEPOSIT);
    pl_inject_wait(pp, 0, &hw, NULL, &v, 4);
}

START_TEST(deposit_bit_line)
{
    printf("engine: a deposit-bit packet along x leaves a copy at every node of the line\n");
    job *j = job_new(4, 2, 1, 0, 1); /* mesh: the line 0..3 has no wrap */
    g_dst = proc_at(j->seg, 3, 0, 0, 0);
    job_add(j, proc_at(j->seg, 0, 0, 0, 0), send_deposit);
    for (int x = 1; x <= 3; x++) job_add(j, proc_at(j->seg, x, 0, 0, 0), recv_one);
    ck_assert_int_eq(job_run(j), 0);
    ck_assert_int_eq(j->count, 3);
    const tsim_params *p = &j->seg->params;
    uint64_t ser = (32 + p->wire_overhead) * p->link_cycles_per_byte;
    uint64_t seen[4] = {0};
    for (int k = 1; k <= 3; k++) seen[k] = j->pp[k].p->pkts_received;
    for (int k = 1; k <= 3; k++) ck_assert_uint_eq(seen[k], 1);
    /* copies arrive one hop apart */
    uint64_t ts[3];
    memcpy(ts, j->t, sizeof ts);
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (ts[b] < ts[a]) { uint64_t x = ts[a]; ts[a] = ts[b]; ts[b] = x; }
    for (int k = 0; k < 3; k++)
        ck_assert_uint_eq(ts[k], p->pkt_write_cycles + (k + 1) * p->hop_latency + ser);
    for (int k = 0; k < 3; k++) ck_assert_uint_eq(j->v[k], 42);
    job_free(j);
}
END_TEST

/* ---- VN scratchpad ---------------------------------------------------- */
static void sp_send(job *j, pl_proc *pp)
{
    (void)j;
    tsim_hwhdr hw;
    uint8_t buf[240];
    for (int i = 0; i < 240; i++) buf[i] = (uint8_t)i;
    uint32_t v = 99;
    memcpy(buf, &v, 4);
    pl_header(pp, &hw, pp->index ^ 1, 240, 0);
    pl_inject_wait(pp, TSIM_INJ_SP, &hw, NULL, buf, 240);
}
static void sp_recv(job *j, pl_proc *pp)
{
    int f;
    while ((f = pl_poll(pp, TSIM_WAKE_REC(TSIM_REC_SP))) < 0)
        pl_block(pp, TSIM_WAKE_REC(TSIM_REC_SP), "scratchpad");
    ck_assert_int_eq(f, TSIM_REC_SP);
    uint8_t buf[240];
    pl_read(pp, f, 0, buf, 240);
    for (int i = 4; i < 240; i++) ck_assert_int_eq(buf[i], (uint8_t)i);
    j->t[j->count++] = pl_peek(pp, f)->m.t_arrive;
    pl_consume(pp, f);
}

START_TEST(vn_scratchpad)
{
    printf("engine: VN scratchpad FIFO carries a full packet between the two cpus of a node, "
           "timed as a zero-hop channel, without touching any link\n");
    job *j = job_new(2, 1, 1, 1, 2);
    job_add(j, 0, sp_send);
    job_add(j, 1, sp_recv);
    ck_assert_int_eq(job_run(j), 0);
    const tsim_params *p = &j->seg->params;
    ck_assert_uint_eq(j->t[0], p->pkt_write_cycles + p->sp_latency + 256 * p->sp_cycles_per_byte);
    ck_assert_uint_eq(j->res.packet_hops, 0);
    job_free(j);
}
END_TEST

/* ---- backpressure ----------------------------------------------------- */
#define BP_N 40
#define BP_IDLE 1000000
static void bp_send(job *j, pl_proc *pp)
{
    (void)j;
    tsim_hwhdr hw;
    for (uint32_t i = 0; i < BP_N; i++) {
        pl_header(pp, &hw, g_dst, 240, 0);
        pl_inject_wait(pp, 0, &hw, NULL, &i, 4);
    }
}
static void bp_recv(job *j, pl_proc *pp)
{
    pl_charge(pp, BP_IDLE); /* busy elsewhere: nothing is read for a while */
    recv_n(j, pp, BP_N);
}

START_TEST(backpressure_full_reception)
{
    printf("engine: a full reception FIFO holds packets back in the network and stalls the "
           "sender; none is lost and order holds\n");
    job *j = job_new(2, 1, 1, 0, 1);
    g_dst = 1 * TSIM_CPUS;
    job_add(j, 0, bp_send);
    job_add(j, g_dst, bp_recv);
    ck_assert_int_eq(job_run(j), 0);
    ck_assert_int_eq(j->count, BP_N);
    int before = 0;
    for (int i = 0; i < BP_N; i++) {
        ck_assert_uint_eq(j->v[i], (uint32_t)i);
        if (j->t[i] < BP_IDLE) before++;
    }
    /* 1 KB reception FIFO = 4 full packets arrive before the reader starts */
    ck_assert_int_eq(before, (int)j->seg->params.fifo_chunks / 8);
    /* the sender was held back until the reader made room */
    ck_assert_uint_gt(j->end_vt[0], BP_IDLE);
    job_free(j);
}
END_TEST

/* ---- order under cross traffic --------------------------------------- */
#define ORD_N 300
static unsigned g_flags;
static void ord_send(job *j, pl_proc *pp)
{
    (void)j;
    tsim_hwhdr hw;
    for (uint32_t i = 0; i < ORD_N; i++) {
        pl_header(pp, &hw, g_dst, 100, g_flags);
        pl_inject_wait(pp, (int)(i % 3), &hw, NULL, &i, 4);
    }
}
static void ord_recv(job *j, pl_proc *pp) { recv_n(j, pp, ORD_N); }

typedef struct xsrc {
    uint64_t state;
    int left[MAXP * 2];
    const tsim_geom *g;
    unsigned flags;
    int avoid[2]; /* nodes that run real processors */
} xsrc;
static uint64_t xs_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int x_next(void *ctx, int proc, uint64_t *t, tsim_pkt *pkt, int *fifo)
{
    xsrc *x = ctx;
    if (x->left[proc]-- <= 0) return 0;
    uint64_t r;
    int dst;
    do {
        r = xs_next(&x->state);
        dst = (int)(r % (uint64_t)x->g->nnodes);
    } while (dst == x->avoid[0] || dst == x->avoid[1]);
    int c[3];
    tsim_coords(x->g, dst, c);
    memset(pkt, 0, sizeof *pkt);
    pkt->hw.dst[0] = (uint8_t)c[0];
    pkt->hw.dst[1] = (uint8_t)c[1];
    pkt->hw.dst[2] = (uint8_t)c[2];
    pkt->hw.chunks = 8;
    pkt->hw.flags = (uint8_t)x->flags;
    *t += (r >> 32) % 600;
    *fifo = (int)((r >> 20) % 3);
    return 1;
}
static uint64_t x_sink(void *ctx, int proc, int fifo, const tsim_meta *m, const tsim_pkt *p)
{
    (void)ctx, (void)proc, (void)fifo, (void)p;
    return m->t_arrive;
}

static int run_order(unsigned flags)
{
    job *j = job_new(4, 4, 1, 1, 1);
    g_flags = flags;
    int src = proc_at(j->seg, 0, 0, 0, 0);
    g_dst = proc_at(j->seg, 2, 2, 0, 0);
    job_add(j, src, ord_send);
    job_add(j, g_dst, ord_recv);
    static xsrc x;
    memset(&x, 0, sizeof x);
    x.state = 1;
    x.g = &j->seg->geom;
    x.flags = TSIM_F_DYNAMIC;
    x.avoid[0] = src / TSIM_CPUS;
    x.avoid[1] = g_dst / TSIM_CPUS;
    for (int n = 0; n < j->seg->geom.nnodes; n++) {
        int p = tsim_proc_index(n, 0);
        if (p == src || p == g_dst) continue;
        atomic_store(&j->seg->procs[p].state, TSIM_P_ENGINE);
        x.left[p] = 400;
    }
    tsim_engine *e = tsim_engine_new(j->seg);
    tsim_source s = {x_next, x_sink, &x};
    tsim_engine_set_source(e, &s);
    ck_assert_int_eq(job_run_on(j, e), 0);
    ck_assert_int_eq(j->count, ORD_N);
    int inversions = 0;
    for (int i = 1; i < ORD_N; i++) inversions += j->v[i] < j->v[i - 1];
    uint32_t seen[ORD_N] = {0};
    for (int i = 0; i < ORD_N; i++) seen[j->v[i]]++;
    for (int i = 0; i < ORD_N; i++) ck_assert_uint_eq(seen[i], 1);
    job_free(j);
    return inversions;
}

START_TEST(order_deterministic_kept)
{
    printf("engine: deterministic packets between one pair arrive in injection order under "
           "heavy adaptive cross traffic\n");
    ck_assert_int_eq(run_order(0), 0);
}
END_TEST

START_TEST(order_adaptive_may_reorder)
{
    printf("engine: adaptive packets between the same pair, same cross traffic, arrive out of "
           "order (all present exactly once)\n");
    int inv = run_order(TSIM_F_DYNAMIC);
    printf("  %d inversions among %d adaptive packets\n", inv, ORD_N);
    ck_assert_int_gt(inv, 0);
}
END_TEST

/* ---- loopback ---------------------------------------------------------- */
static void self_send(job *j, pl_proc *pp)
{
    tsim_hwhdr big, small;
    uint32_t a = 1, b = 2;
    pl_header(pp, &big, pp->index, 240, 0);
    pl_header(pp, &small, pp->index, 4, 0);
    pl_inject_wait(pp, 0, &big, NULL, &a, 4);
    pl_inject_wait(pp, 0, &small, NULL, &b, 4);
    recv_n(j, pp, 2);
}

START_TEST(loopback_serialized_in_order)
{
    printf("engine: packets to the own node stream through the loopback path one at a time at "
           "link speed, so a small packet does not overtake a full one\n");
    job *j = job_new(2, 1, 1, 1, 1);
    job_add(j, 0, self_send);
    ck_assert_int_eq(job_run(j), 0);
    const tsim_params *p = &j->seg->params;
    uint64_t full = (256 + p->wire_overhead) * p->link_cycles_per_byte;
    uint64_t one = (32 + p->wire_overhead) * p->link_cycles_per_byte;
    ck_assert_uint_eq(j->v[0], 1);
    ck_assert_uint_eq(j->v[1], 2);
    ck_assert_uint_eq(j->t[0], p->pkt_write_cycles + full);
    ck_assert_uint_eq(j->t[1], j->t[0] + one);
    ck_assert_uint_eq(j->res.packet_hops, 0);
    job_free(j);
}
END_TEST

/* ---- deadlock report -------------------------------------------------- */
static void wait_forever(job *j, pl_proc *pp)
{
    (void)j;
    ck_assert_int_ne(pl_block(pp, TSIM_WAKE_REC_ALL, "a message that never comes"), 0);
}

START_TEST(deadlock_detected)
{
    printf("engine: two processors that both wait for a packet are reported as a deadlock\n");
    job *j = job_new(2, 1, 1, 1, 1);
    job_add(j, 0, wait_forever);
    job_add(j, 2, wait_forever);
    ck_assert_int_eq(job_run(j), 2);
    ck_assert_int_eq(j->res.deadlock, 1);
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    /* the report, taken when the deadlock was found, names both waiters */
    tsim_engine_print_deadlock(j->eng, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "deadlock"));
    ck_assert_ptr_nonnull(strstr(buf, "<0,0,0,0>"));
    ck_assert_ptr_nonnull(strstr(buf, "<1,0,0,0>"));
    ck_assert_ptr_nonnull(strstr(buf, "a message that never comes"));
    free(buf);
    job_free(j);
}
END_TEST

Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    UM_TCASE(s, "engine", 60, single_packet_time, report_json_and_heatmap, deposit_bit_line, vn_scratchpad,
             backpressure_full_reception, order_deterministic_kept, order_adaptive_may_reorder,
             loopback_serialized_in_order, deadlock_detected);
    return s;
}
