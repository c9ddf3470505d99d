/* The engine running blocked processors' alltoall loops
 * (torus-sim/tsim_proxy_a2a.c, coll_a2a_wait): each job runs twice, with
 * BGLEMU_PROXY=0 (every packet wakes its rank) and with the engine running
 * the loops, and must give the same clocks, events, link counters, stats
 * and bytes, while the engine really moved packets and the ranks woke
 * less. The jobs run several alltoalls back to back, so that a later one's
 * packets arrive while a rank's loop is in the engine's hands (it must hand
 * the rank back for those), in the partition and in a group of half the
 * ranks. Ranks are threads on an anonymous segment. */
#include <stdlib.h>
#include <string.h>

#include "coll_world.h"
#include "suite.h"

#define MAXR CW_MAXR
#define ROUNDS 3

typedef struct world world;

typedef cw_rank rk;

struct world {
    int n, order;
    int layouts;  /* most blocks are layouts (coll_alltoallw_in), with gaps */
    size_t scale; /* block sizes: up to this many bytes */
    rk r[MAXR];
};

/* Rank s sends d a block of this many bytes in round k: zero, one packet,
 * a part packet, many. */
static size_t count(const world *w, int s, int d, int k)
{
    return (size_t)((s * 131 + d * 71 + k * 29) % 5 == 0 ? 0 : (s * 37 + d * 101 + k * 13) % w->scale);
}

static uint8_t byte(int s, int d, int k, size_t i) { return (uint8_t)(s * 7 + d * 13 + k * 31 + i * 3 + 1); }

/* A layout of len bytes in area: segments of seg bytes, each followed by a
 * 3-byte gap; the segment count. area needs lay_span(len, seg) bytes. */
static size_t lay_span(size_t len, size_t seg) { return (len + seg - 1) / seg * (seg + 3); }
static size_t lay_make(uint8_t *area, size_t len, size_t seg, struct iovec *v)
{
    size_t k = 0;
    for (size_t off = 0; off < len; off += seg, k++)
        v[k] = (struct iovec){area + k * (seg + 3), len - off < seg ? len - off : seg};
    return k;
}

/* Layout rounds: block j of rank me is a layout unless (me + j) % 3 == 0
 * (those stay plain buffers), segments of 40..99 bytes sending and
 * 33..82 receiving, so that the two sides' segments never line up. */
static void run_layouts(rk *r, coll_group *g, int grp, int gn, const int *half, int k)
{
    world *w = r->w;
    int me = r->rank;
    coll_layout sl[MAXR], rl[MAXR];
    struct iovec *sv[MAXR], *rv[MAXR];
    uint8_t *sa[MAXR], *ra[MAXR];
    size_t rseg[MAXR], rspan[MAXR];
    for (int j = 0; j < gn; j++) {
        int sj = grp ? half[j] : j, lay = (me + sj) % 3 != 0;
        size_t sc = 8 * count(w, me, sj, k), rc = 8 * count(w, sj, me, k); /* up to 36 packets */
        size_t ss = 40 + (size_t)(me * 3 + sj) % 60;
        rseg[j] = 33 + (size_t)(me + sj * 5) % 50;
        sa[j] = malloc(lay_span(sc, ss) + 1);
        rspan[j] = lay_span(rc, rseg[j]);
        ra[j] = malloc(rspan[j] + 1);
        sv[j] = malloc((sc / ss + 1) * sizeof **sv);
        rv[j] = malloc((rc / rseg[j] + 1) * sizeof **rv);
        memset(ra[j], 0xEE, rspan[j] + 1);
        size_t sn = lay_make(sa[j], sc, ss, sv[j]), b = 0;
        if (lay) {
            for (size_t i = 0; i < sn; i++)
                for (size_t q = 0; q < sv[j][i].iov_len; q++) ((uint8_t *)sv[j][i].iov_base)[q] = byte(me, sj, k, b++);
            sl[j] = (coll_layout){NULL, sv[j], sn, sc};
        } else { /* a plain buffer */
            for (size_t i = 0; i < sc; i++) sa[j][i] = byte(me, sj, k, i);
            sl[j] = (coll_layout){sa[j], NULL, 0, sc};
        }
        size_t rn = lay_make(ra[j], rc, rseg[j], rv[j]);
        rl[j] = lay && rc ? (coll_layout){NULL, rv[j], rn, rc} : (coll_layout){ra[j], NULL, 0, rc};
    }
    if (coll_alltoallw_in(r->c, grp ? g : coll_world(r->c), sl, rl) != 0) r->bad++;
    for (int j = 0; j < gn; j++) {
        int sj = grp ? half[j] : j;
        size_t rc = 8 * count(w, sj, me, k);
        if (rl[j].niov) { /* through the layout; the gaps untouched */
            size_t b = 0;
            for (size_t i = 0; i < rl[j].niov; i++) {
                const uint8_t *p = rv[j][i].iov_base;
                for (size_t q = 0; q < rv[j][i].iov_len; q++, b++) {
                    if (p[q] != byte(sj, me, k, b)) r->bad++;
                    r->sum = r->sum * 31 + p[q];
                }
                for (size_t q = rv[j][i].iov_len; q < rseg[j] + 3 && p + q < ra[j] + rspan[j]; q++)
                    if (p[q] != 0xEE) r->bad++;
            }
        } else {
            for (size_t i = 0; i < rc; i++) {
                if (ra[j][i] != byte(sj, me, k, i)) r->bad++;
                r->sum = r->sum * 31 + ra[j][i];
            }
            if (ra[j][rc] != 0xEE) r->bad++;
        }
        free(sa[j]), free(ra[j]), free(sv[j]), free(rv[j]);
    }
}

static void *rk_main(void *arg)
{
    rk *r = arg;
    world *w = r->w;
    int n = w->n, me = r->rank, half[MAXR], nh = 0;
    for (int i = 0; i < n; i += 2) half[nh++] = i;
    coll_group *g = me % 2 == 0 ? coll_group_new(r->c, nh, half, 7) : NULL;
    coll_set_a2a_order(r->c, w->order);
    for (int k = 0; k < ROUNDS * 2; k++) {
        int grp = k % 2 == 1; /* every other round: the even ranks only */
        if (grp && !g) continue;
        int gn = grp ? nh : n;
        if (w->layouts) {
            run_layouts(r, g, grp, gn, half, k);
            continue;
        }
        size_t sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR], st = 0, rt = 0;
        for (int j = 0; j < gn; j++) {
            int sj = grp ? half[j] : j;
            sc[j] = count(w, me, sj, k), sd[j] = st, st += sc[j] + 1;
            rc[j] = count(w, sj, me, k), rd[j] = rt, rt += rc[j] + 1;
        }
        uint8_t *s = malloc(st + 1), *d = malloc(rt + 1);
        for (int j = 0; j < gn; j++)
            for (size_t i = 0; i < sc[j]; i++) s[sd[j] + i] = byte(me, grp ? half[j] : j, k, i);
        memset(d, 0xEE, rt + 1);
        int rc_ = grp ? coll_alltoallv_in(r->c, g, s, sc, sd, d, rc, rd)
                      : coll_alltoallv(r->c, s, sc, sd, d, rc, rd);
        if (rc_ != 0) r->bad++;
        for (int j = 0; j < gn; j++) {
            int sj = grp ? half[j] : j;
            for (size_t i = 0; i < rc[j]; i++)
                if (d[rd[j] + i] != byte(sj, me, k, i)) r->bad++;
            if (d[rd[j] + rc[j]] != 0xEE) r->bad++; /* nothing past the block */
            for (size_t i = 0; i < rc[j]; i++) r->sum = r->sum * 31 + d[rd[j] + i];
        }
        free(s);
        free(d);
    }
    cw_rank_end(r, g);
    return NULL;
}

typedef cw_outcome outcome;

static void check_same_l(int x, int y, int z, ml_mode mode, int order, size_t scale, int layouts,
                         const char *what)
{
    static world w;
    static outcome a, b;
    w.layouts = layouts;
    w.order = order;
    w.scale = scale;
    cw_run(x, y, z, mode, &w, w.r, &w.n, rk_main, 0, &a);
    cw_run(x, y, z, mode, &w, w.r, &w.n, rk_main, 1, &b);
    cw_compare(&a, &b, w.n, layouts, 1, what);
    printf("proxy_a2a: %-30s %d ranks, end %llu cycles, wakes %llu -> %llu, engine read %llu sent %llu "
           "of %llu packets\n",
           what, w.n, (unsigned long long)b.res.end_time, (unsigned long long)a.res.wakes,
           (unsigned long long)b.res.wakes, (unsigned long long)b.res.proxy_read,
           (unsigned long long)b.res.proxy_sent, (unsigned long long)b.res.packets_delivered);
}

static void check_same(int x, int y, int z, ml_mode mode, int order, size_t scale, const char *what)
{
    check_same_l(x, y, z, mode, order, scale, 0, what);
}

START_TEST(a2a_co_random) { check_same(2, 2, 2, ML_MODE_CO, COLL_A2A_RANDOM, 3000, "CO, random order"); }
END_TEST
START_TEST(a2a_vn_stagger) { check_same(2, 2, 2, ML_MODE_VN, COLL_A2A_STAGGER, 2000, "VN, staggered order"); }
END_TEST
START_TEST(a2a_4x4x2_rank)
{
    check_same(4, 4, 2, ML_MODE_HEATER, COLL_A2A_RANKORDER, 5000, "4x4x2, rank order");
}
END_TEST

/* Layouts (coll_alltoallw_in): the engine gathers from the senders'
 * segments and scatters into the receivers' exactly as the ranks would. */
START_TEST(a2a_layouts_co) { check_same_l(2, 2, 2, ML_MODE_CO, COLL_A2A_RANDOM, 3000, 1, "CO, layouts"); }
END_TEST
START_TEST(a2a_layouts_vn) { check_same_l(2, 2, 1, ML_MODE_VN, COLL_A2A_STAGGER, 2000, 1, "VN, layouts"); }
END_TEST

Suite *proxy_a2a_suite(void)
{
    Suite *s = suite_create("proxy_a2a");
    UM_TCASE(s, "same", 600, a2a_co_random, a2a_vn_stagger, a2a_4x4x2_rank, a2a_layouts_co, a2a_layouts_vn);
    return s;
}
