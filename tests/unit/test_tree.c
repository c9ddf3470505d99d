/* The collective network and the global interrupt (torus-sim/tsim_tree.c)
 * through the packet layer (packetlayer/pl_tree.c): processors are threads
 * on an anonymous segment, the engine runs in the test's thread. Times are
 * checked to the cycle against the model's formulas (docs/collectives.md). */
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "packetlayer/pl_tree.h"
#include "torus-sim/tsim_tree.h"
#include "suite.h"

#define MAXP 64
typedef struct tjob tjob;
typedef void (*tbody)(tjob *j, int k, pl_proc *pp);
typedef struct targ {
    tjob *j;
    int k;
} targ;
struct tjob {
    tsim_seg *seg;
    tsim_engine *eng;
    tsim_result res;
    tbody body;
    pl_proc pp[MAXP];
    targ ta[MAXP];
    int n;
    /* what the bodies record, per processor */
    uint64_t t[MAXP][64];
    uint64_t v[MAXP][64];
    int count[MAXP];
    uint64_t end_vt[MAXP];
    /* parameters of the bodies */
    int npkts, root, op;
};

/* One processor (cpu 0) on every node listed (NULL: all); `ranked`: mapped
 * as ranks (rank_proc, as mpirun does), else the partition is the
 * processors present when the engine is made. */
static tjob *tjob_new(int x, int y, int z, const int *nodes, int n, int ranked, tbody body)
{
    tjob *j = calloc(1, sizeof *j);
    j->seg = um_seg(x, y, z, 1, 1, NULL);
    int nn = x * y * z;
    j->n = nodes ? n : nn;
    for (int k = 0; k < j->n; k++) {
        int proc = tsim_proc_index(nodes ? nodes[k] : k, 0);
        pl_open(&j->pp[k], j->seg, proc, 0);
        if (ranked) {
            j->seg->procs[proc].rank = k;
            j->seg->rank_proc[k] = proc;
        }
    }
    if (ranked) j->seg->geom.nranks = j->n;
    j->body = body;
    return j;
}

static void *runner(void *a)
{
    targ *t = a;
    tjob *j = t->j;
    j->body(j, t->k, &j->pp[t->k]);
    j->end_vt[t->k] = j->pp[t->k].vt;
    pl_close(&j->pp[t->k], 0);
    return NULL;
}

static int tjob_run(tjob *j)
{
    j->eng = tsim_engine_new(j->seg);
    ck_assert_ptr_nonnull(j->eng);
    for (int k = 0; k < j->n; k++) j->ta[k] = (targ){j, k};
    return um_go(j->eng, j->n, runner, j->ta, sizeof *j->ta, &j->res);
}

static void tjob_free(tjob *j)
{
    tsim_engine_free(j->eng);
    tsim_seg_destroy(j->seg);
    free(j);
}

/* Arrival of a result at tree level L when every node injected at t0:
 * D * (hop + alu) up (a combine at every router on the deepest path, the
 * root's included), L hops down, one serialization. */
static uint64_t combine_arrival(const tsim_params *p, int depth, int level, uint64_t t0)
{
    return t0 + (uint64_t)depth * (p->tree_hop_latency + p->tree_alu_cycles) +
           (uint64_t)level * p->tree_hop_latency + tsim_tree_ser(p);
}

/* ---- shape and ALU ------------------------------------------------------ */
START_TEST(tree_shape)
{
    printf("tree: parent (i-1)/2, at most 3 tree links per node; depth 3 on 2x2x2, 6 on 4x4x4, "
           "9 on 8x8x8, 16 on 64x32x32\n");
    tsim_geom g = {{4, 4, 4}, {1, 1, 1}, 1, 64, 64};
    ck_assert_int_eq(tsim_tree_depth(&g), 6);
    int links[64] = {0};
    for (int n = 1; n < 64; n++) {
        int p = tsim_tree_parent(&g, n);
        ck_assert_int_ge(p, 0);
        ck_assert_int_lt(p, n);
        links[n]++;
        links[p]++;
    }
    for (int n = 0; n < 64; n++) ck_assert_int_le(links[n], 3);
    ck_assert_int_eq(tsim_tree_parent(&g, 0), -1);
    tsim_geom g2 = {{2, 2, 2}, {1, 1, 1}, 1, 8, 8}, g8 = {{8, 8, 8}, {1, 1, 1}, 1, 0, 0},
              gbig = {{64, 32, 32}, {1, 1, 1}, 1, 0, 0};
    ck_assert_int_eq(tsim_tree_depth(&g2), 3);
    ck_assert_int_eq(tsim_tree_depth(&g8), 9);
    ck_assert_int_eq(tsim_tree_depth(&gbig), 16);
    tsim_params p;
    tsim_params_default(&p);
    ck_assert_uint_eq(tsim_tree_ser(&p), 532); /* 266 bytes at 4 bits a cycle */
    /* 1.5 us on 64K nodes: 2 x 16 levels x 33 = 1,056 cycles at 700 MHz */
    ck_assert_uint_eq(tsim_gi_latency(&gbig, &p), 1056);
}
END_TEST

START_TEST(alu_ops)
{
    printf("tree: the ALU adds with carry across 32-bit words (16-byte operands), compares signed "
           "and unsigned, and/or/xor bitwise\n");
    uint8_t a[TSIM_TREE_PAYLOAD] = {0}, b[TSIM_TREE_PAYLOAD] = {0};
    uint64_t x[2] = {UINT64_MAX, 1}, y[2] = {1, 2};
    memcpy(a, x, 16);
    memcpy(b, y, 16);
    tsim_tree_alu(a, b, TSIM_TOP_ADD, 16, 0);
    uint64_t r[2];
    memcpy(r, a, 16);
    ck_assert_uint_eq(r[0], 0);
    ck_assert_uint_eq(r[1], 4);
    int32_t s1 = -5, s2 = 3;
    memcpy(a, &s1, 4);
    memcpy(b, &s2, 4);
    tsim_tree_alu(a, b, TSIM_TOP_MAX, 4, 1);
    int32_t o;
    memcpy(&o, a, 4);
    ck_assert_int_eq(o, 3);
    memcpy(a, &s1, 4);
    tsim_tree_alu(a, b, TSIM_TOP_MAX, 4, 0); /* unsigned: 0xfffffffb is larger */
    memcpy(&o, a, 4);
    ck_assert_int_eq(o, -5);
    int64_t l1 = -7, l2 = 9;
    memcpy(a, &l1, 8);
    memcpy(b, &l2, 8);
    tsim_tree_alu(a, b, TSIM_TOP_MIN, 8, 1);
    int64_t lo;
    memcpy(&lo, a, 8);
    ck_assert_int_eq(lo, -7);
    uint32_t u1 = 0xf0f0, u2 = 0x0ff0;
    memcpy(a, &u1, 4);
    memcpy(b, &u2, 4);
    tsim_tree_alu(a, b, TSIM_TOP_XOR, 4, 0);
    uint32_t uo;
    memcpy(&uo, a, 4);
    ck_assert_uint_eq(uo, 0xff00);
    tsim_tree_alu(a, b, TSIM_TOP_OR, 4, 0);
    memcpy(&uo, a, 4);
    ck_assert_uint_eq(uo, 0xfff0);
    tsim_tree_alu(a, b, TSIM_TOP_AND, 4, 0);
    memcpy(&uo, a, 4);
    ck_assert_uint_eq(uo, 0x0ff0);
}
END_TEST

/* ---- combine ------------------------------------------------------------ */
/* npkts packets of 32 uint64: element i of packet w is (k + 1) * (w + i + 1);
 * injects while there is room, reads whenever a result is there. */
static void combine_body(tjob *j, int k, pl_proc *pp)
{
    int sent = 0, got = 0;
    while (got < j->npkts) {
        if (sent < j->npkts && pl_tree_room(pp)) {
            uint64_t v[32];
            for (int i = 0; i < 32; i++) v[i] = (uint64_t)(k + 1) * (uint64_t)(sent + i + 1);
            uint8_t sw[8] = {(uint8_t)sent};
            tsim_thdr h;
            pl_tree_header(&h, TSIM_TC_COMBINE, j->op, 8, 0, 0, 0, sw);
            if (pl_tree_inject(pp, &h, v, sizeof v) == 0) {
                sent++;
                continue;
            }
        }
        if (pl_tree_poll(pp)) {
            const tsim_tslot *s = pl_tree_peek(pp);
            uint64_t v[32];
            memcpy(v, s->payload, sizeof v);
            ck_assert_uint_eq(s->h.sw[0], (uint8_t)got);
            if (got < 64) {
                j->t[k][got] = s->m.t_arrive;
                j->v[k][got] = v[got % 32];
            }
            pl_tree_consume(pp);
            got++;
            continue;
        }
        unsigned mask = TSIM_WAKE_TREE_REC | (sent < j->npkts ? TSIM_WAKE_TREE_INJ : 0);
        if (pl_block(pp, mask, "test combine") != 0) return;
    }
    j->count[k] = got;
}

START_TEST(combine_one_packet_time)
{
    printf("tree: one combine packet from each of 8 nodes (2x2x2, depth 3): every node gets the "
           "sum at inject + D(hop+alu) + L hop + 532, L its level\n");
    tjob *j = tjob_new(2, 2, 2, NULL, 0, 0, combine_body);
    j->npkts = 1;
    j->op = TSIM_TOP_ADD;
    ck_assert_int_eq(tjob_run(j), 0);
    const tsim_params *p = &j->seg->params;
    for (int k = 0; k < 8; k++) {
        ck_assert_int_eq(j->count[k], 1);
        ck_assert_uint_eq(j->v[k][0], 36); /* (1 + ... + 8) x 1 */
        uint64_t want = combine_arrival(p, 3, tsim_tree_level(k), p->tree_write_cycles);
        ck_assert_uint_eq(j->t[k][0], want);
        ck_assert_uint_eq(j->end_vt[k], want + 1 + p->tree_read_cycles);
    }
    tsim_tree_stats st;
    tsim_engine_tree_stats(j->eng, &st);
    ck_assert_uint_eq(st.injected, 8);
    ck_assert_uint_eq(st.delivered, 8);
    /* routers with more than one input combine: 0 (two children), 1, 2, 3 (one) */
    ck_assert_uint_eq(st.combined, 4);
    ck_assert_uint_eq(tsim_engine_tree_link(j->eng, 7, 1)->packets, 1);
    ck_assert_uint_eq(tsim_engine_tree_link(j->eng, 7, 0)->busy_cycles, 532);
    ck_assert_uint_eq(j->res.packets_delivered, 0); /* nothing crossed the torus */
    tjob_free(j);
}
END_TEST

START_TEST(combine_pipelined_max)
{
    printf("tree: 40 pipelined MAX packets (5 FIFOs' worth) on 4x4x4: results exact and in order, "
           "link occupancy 40 x 532 cycles, two runs give the same cycles\n");
    uint64_t end[2];
    for (int run = 0; run < 2; run++) {
        tjob *j = tjob_new(4, 4, 4, NULL, 0, 0, combine_body);
        j->npkts = 40;
        j->op = TSIM_TOP_MAX;
        ck_assert_int_eq(tjob_run(j), 0);
        for (int k = 0; k < 64; k++) {
            ck_assert_int_eq(j->count[k], 40);
            for (int w = 0; w < 40; w++)
                ck_assert_uint_eq(j->v[k][w], 64u * (uint64_t)(w + w % 32 + 1));
            for (int w = 1; w < 40; w++) ck_assert_uint_ge(j->t[k][w], j->t[k][w - 1] + 532);
        }
        ck_assert_uint_eq(tsim_engine_tree_link(j->eng, 63, 1)->busy_cycles, 40 * 532);
        end[run] = j->res.end_time;
        tjob_free(j);
    }
    ck_assert_uint_eq(end[0], end[1]);
    printf("  40 x 256 bytes in %llu cycles\n", (unsigned long long)end[0]);
}
END_TEST

/* ---- broadcast ---------------------------------------------------------- */
static void bcast_body(tjob *j, int k, pl_proc *pp)
{
    if (k == j->root) {
        for (int w = 0; w < j->npkts; w++) {
            uint64_t v[32];
            for (int i = 0; i < 32; i++) v[i] = (uint64_t)w * 1000 + (uint64_t)i;
            tsim_thdr h;
            pl_tree_header(&h, TSIM_TC_BCAST, TSIM_TOP_NONE, 8, 0, 1, 0, NULL);
            if (pl_tree_inject_wait(pp, &h, v, sizeof v) != 0) return;
        }
        return;
    }
    for (int w = 0; w < j->npkts; w++) {
        if (pl_tree_recv_wait(pp) != 0) return;
        const tsim_tslot *s = pl_tree_peek(pp);
        uint64_t v[32];
        memcpy(v, s->payload, sizeof v);
        for (int i = 0; i < 32; i++) ck_assert_uint_eq(v[i], (uint64_t)w * 1000 + (uint64_t)i);
        if (w < 64) j->t[k][w] = s->m.t_arrive;
        pl_tree_consume(pp);
        j->count[k]++;
    }
}

START_TEST(bcast_time)
{
    printf("tree: a broadcast from node 5 of 2x2x2 goes up 2 hops and down to every other node "
           "(not back to 5): arrival = inject + 2 hop + L hop + 532; 12 pipelined packets\n");
    tjob *j = tjob_new(2, 2, 2, NULL, 0, 0, bcast_body);
    j->npkts = 12;
    j->root = 5;
    ck_assert_int_eq(tjob_run(j), 0);
    const tsim_params *p = &j->seg->params;
    for (int k = 0; k < 8; k++) {
        if (k == 5) {
            ck_assert_int_eq(j->count[k], 0);
            continue;
        }
        ck_assert_int_eq(j->count[k], 12);
        uint64_t want = p->tree_write_cycles + (2 + (uint64_t)tsim_tree_level(k)) * p->tree_hop_latency +
                        tsim_tree_ser(p);
        ck_assert_uint_eq(j->t[k][0], want);
    }
    tsim_tree_stats st;
    tsim_engine_tree_stats(j->eng, &st);
    ck_assert_uint_eq(st.delivered, 7 * 12);
    ck_assert_uint_eq(st.combined, 0);
    tjob_free(j);
}
END_TEST

/* ---- partial partition --------------------------------------------------- */
START_TEST(combine_partial_partition)
{
    printf("tree: ranks on 5 of 8 nodes (0, 2, 3, 6, 7): the combine waits for those only and "
           "every one of them gets their sum\n");
    int nodes[5] = {0, 2, 3, 6, 7};
    tjob *j = tjob_new(2, 2, 2, nodes, 5, 1, combine_body);
    j->npkts = 3;
    j->op = TSIM_TOP_ADD;
    ck_assert_int_eq(tjob_run(j), 0);
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(j->count[k], 3);
        for (int w = 0; w < 3; w++) ck_assert_uint_eq(j->v[k][w], 15u * (uint64_t)(w + w + 1));
    }
    tjob_free(j);
}
END_TEST

/* ---- violations ------------------------------------------------------------ */
/* The job of body on x*y*z fails, naming processor proc and saying want. */
static void violation(int x, int y, int z, tbody body, int proc, const char *want)
{
    tjob *j = tjob_new(x, y, z, NULL, 0, 0, body);
    ck_assert_int_ne(tjob_run(j), 0);
    char why[200];
    ck_assert_int_eq(tsim_engine_violation(j->eng, why, sizeof why), proc);
    printf("  %s\n", why);
    ck_assert_ptr_nonnull(strstr(why, want));
    tjob_free(j);
}

static void mismatch_body(tjob *j, int k, pl_proc *pp)
{
    (void)j;
    tsim_thdr h;
    uint64_t v[32] = {0};
    pl_tree_header(&h, TSIM_TC_COMBINE, k == 7 ? TSIM_TOP_MAX : TSIM_TOP_ADD, 8, 0, 0, 0, NULL);
    pl_tree_inject(pp, &h, v, sizeof v);
    pl_tree_recv_wait(pp);
}

START_TEST(combine_mismatch_violation)
{
    printf("tree: node 7 combines with MAX where the others ADD: the job ends naming processor 14\n");
    violation(2, 2, 2, mismatch_body, 14, "collective network");
}
END_TEST

static void badclass_body(tjob *j, int k, pl_proc *pp)
{
    (void)j;
    tsim_thdr h;
    pl_tree_header(&h, k == 1 ? 7 : TSIM_TC_BCAST, TSIM_TOP_NONE, 8, 0, 0, 0, NULL);
    if (k == 1) pl_tree_inject(pp, &h, NULL, 0);
    else pl_tree_recv_wait(pp);
}

START_TEST(bad_header_violation)
{
    printf("tree: a packet of an unknown class ends the job naming its processor\n");
    violation(2, 1, 1, badclass_body, 2, "class 7");
}
END_TEST

/* ---- global interrupt ------------------------------------------------------ */
static void gi_body(tjob *j, int k, pl_proc *pp)
{
    for (int b = 0; b < 3; b++) {
        pl_charge(pp, (uint64_t)((k * 7 + b * 3) % 8) * 1000);
        j->t[k][2 * b] = pp->vt; /* entered */
        if (pl_gi_barrier(pp) != 0) return;
        j->t[k][2 * b + 1] = pp->vt; /* left */
    }
}

START_TEST(gi_barrier)
{
    printf("global interrupt: 3 barriers on 4x4x4 with ranks entering up to 7,000 cycles apart: "
           "nobody leaves before the last arms; all see it fire at last arm + 2 x 6 x 33\n");
    tjob *j = tjob_new(4, 4, 4, NULL, 0, 0, gi_body);
    ck_assert_int_eq(tjob_run(j), 0);
    const tsim_params *p = &j->seg->params;
    for (int b = 0; b < 3; b++) {
        uint64_t last = 0;
        for (int k = 0; k < 64; k++)
            if (j->t[k][2 * b] > last) last = j->t[k][2 * b];
        uint64_t fire = last + p->poll_cycles + 2 * 6 * p->gi_hop_latency;
        for (int k = 0; k < 64; k++) {
            ck_assert_uint_gt(j->t[k][2 * b + 1], last);
            /* armed, polled in vain, blocked: woken one cycle after the fire */
            ck_assert_uint_eq(j->t[k][2 * b + 1], fire + 1);
        }
    }
    tsim_tree_stats st;
    tsim_engine_tree_stats(j->eng, &st);
    ck_assert_uint_eq(st.barriers, 3);
    tjob_free(j);
}
END_TEST

static void gi_missing_body(tjob *j, int k, pl_proc *pp)
{
    (void)j;
    if (k != 2) pl_gi_barrier(pp);
}

START_TEST(gi_deadlock)
{
    printf("global interrupt: a rank that never arms: the others' wait is reported as a deadlock\n");
    tjob *j = tjob_new(2, 2, 1, NULL, 0, 0, gi_missing_body);
    ck_assert_int_eq(tjob_run(j), 2);
    tjob_free(j);
}
END_TEST

/* ---- the report -------------------------------------------------------------- */
static void noop_body(tjob *j, int k, pl_proc *pp)
{
    (void)j;
    (void)k;
    pl_charge(pp, 100);
}

START_TEST(report_only_when_used)
{
    printf("tree: the JSON report has a \"collective\" section and the tree_/gi_ parameters only "
           "for a job that used the collective networks\n");
    for (int used = 0; used < 2; used++) {
        tjob *j = tjob_new(2, 1, 1, NULL, 0, 0, used ? gi_body : noop_body);
        ck_assert_int_eq(tjob_run(j), 0);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        tsim_engine_report_json(j->eng, &j->res, f);
        fclose(f);
        ck_assert_int_eq(strstr(buf, "\"collective\"") != NULL, used);
        ck_assert_int_eq(strstr(buf, "tree_hop_latency") != NULL, used);
        ck_assert_int_eq(strstr(buf, "\"barriers\": 3") != NULL, used);
        free(buf);
        tjob_free(j);
    }
}
END_TEST

Suite *tree_suite(void)
{
    Suite *s = suite_create("tree");
    UM_TCASE(s, "tree", 60, tree_shape, alu_ops, combine_one_packet_time, combine_pipelined_max, bcast_time,
             combine_partial_partition, combine_mismatch_violation, bad_header_violation, gi_barrier,
             gi_deadlock, report_only_when_used);
    return s;
}
