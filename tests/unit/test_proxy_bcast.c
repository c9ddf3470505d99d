/* The engine running blocked processors' deposit-bit broadcast loops
 * (collectives/coll_bcast_engine.c, coll_bcast_wait): each job runs twice,
 * with BGLEMU_PROXY=0 (every packet wakes its rank) and with the engine
 * running the loops, and must give the same clocks, events, link counters,
 * stats and bytes, while the engine really moved packets and the ranks
 * woke less. Each job runs several broadcasts back to back (roots, sizes
 * from one packet to many, 1 and 3 routes), so that a later one's packets
 * arrive while a rank's loop is in the engine's hands (it must hand the
 * rank back for those), in the partition and in a group of half the
 * machine; with layouts, every rank receives into (the root sends from)
 * segments of its own size. Ranks are threads on an anonymous segment. */
#include <stdlib.h>
#include <string.h>

#include "coll_world.h"
#include "suite.h"

#define MAXR CW_MAXR

typedef struct world world;

typedef cw_rank rk;

struct world {
    int n;
    int routes;   /* 1 or 3 */
    int layouts;  /* the broadcasts go through layouts */
    size_t big;   /* the largest broadcast */
    rk r[MAXR];
};

static uint8_t byte(int k, size_t i) { return (uint8_t)(k * 31 + i * 7 + (i >> 8) + 1); }

/* One broadcast of len bytes from root (group rank) over g, checked. */
static void one(rk *r, coll_group *g, int root, size_t len, int k)
{
    world *w = r->w;
    int me = coll_group_rank(g);
    if (!w->layouts) {
        uint8_t *b = malloc(len + 1);
        for (size_t i = 0; i < len; i++) b[i] = me == root ? byte(k, i) : 0xEE;
        b[len] = 0x5A;
        if (coll_bcast_in(r->c, g, b, len, root, w->routes) != 0) r->bad++;
        for (size_t i = 0; i < len; i++) {
            if (b[i] != byte(k, i)) r->bad++;
            r->sum = r->sum * 31 + b[i];
        }
        if (b[len] != 0x5A) r->bad++;
        free(b);
        return;
    }
    /* segments of seg bytes, each followed by a 3-byte gap */
    size_t seg = 17 + (size_t)(r->rank * 7 + k) % 90, nseg = (len + seg - 1) / seg;
    uint8_t *area = malloc(nseg * (seg + 3) + 1);
    struct iovec *v = malloc((nseg + 1) * sizeof *v);
    memset(area, 0xEE, nseg * (seg + 3) + 1);
    for (size_t j = 0, off = 0; j < nseg; j++, off += seg)
        v[j] = (struct iovec){area + j * (seg + 3), len - off < seg ? len - off : seg};
    size_t b = 0;
    if (me == root)
        for (size_t j = 0; j < nseg; j++)
            for (size_t q = 0; q < v[j].iov_len; q++) ((uint8_t *)v[j].iov_base)[q] = byte(k, b++);
    coll_layout blk = {NULL, v, nseg, len};
    if (coll_bcast_layout_in(r->c, g, &blk, root, w->routes) != 0) r->bad++;
    b = 0;
    for (size_t j = 0; j < nseg; j++) {
        const uint8_t *p = v[j].iov_base;
        for (size_t q = 0; q < v[j].iov_len; q++, b++) {
            if (p[q] != byte(k, b)) r->bad++;
            r->sum = r->sum * 31 + p[q];
        }
        for (size_t q = v[j].iov_len; q < seg + 3 && p + q < area + nseg * (seg + 3); q++)
            if (p[q] != 0xEE) r->bad++;
    }
    free(area);
    free(v);
}

static void *rk_main(void *arg)
{
    rk *r = arg;
    world *w = r->w;
    int n = w->n, me = r->rank, half[MAXR], nh = 0;
    for (int i = 0; i < n; i++) /* the nodes of x < 1 (a box: the whole machine's first plane) */
        if (i < n / 2) half[nh++] = i;
    (void)me;
    coll_group *g = me < n / 2 ? coll_group_new(r->c, nh, half, 9) : NULL;
    if (g && !coll_group_hw_ok(g)) {
        coll_group_free(g);
        g = NULL;
    }
    const size_t sizes[] = {1, 240, 241, 5000, w->big};
    int k = 0;
    for (int s = 0; s < 5; s++)
        for (int root = 0; root < n; root += n / 4 + 1, k++) {
            one(r, coll_world(r->c), root, sizes[s], k);
            if (g && s >= 2) one(r, g, root % nh, sizes[s] / 2 + 1, k + 1000);
        }
    cw_rank_end(r, g);
    return NULL;
}

typedef cw_outcome outcome;

static void check_same(int x, int y, int z, ml_mode mode, int routes, int layouts, size_t big, const char *what)
{
    static world w;
    static outcome a, b;
    w.routes = routes;
    w.layouts = layouts;
    w.big = big;
    cw_run(x, y, z, mode, &w, w.r, &w.n, rk_main, 0, &a);
    cw_run(x, y, z, mode, &w, w.r, &w.n, rk_main, 1, &b);
    cw_compare(&a, &b, w.n, layouts, 2, what);
    printf("proxy_bcast: %-34s %d ranks, end %llu cycles, same clocks/events/links/stats/bytes/ddt; wakes %llu -> %llu, "
           "engine read %llu sent %llu of %llu packets\n",
           what, w.n, (unsigned long long)b.res.end_time, (unsigned long long)a.res.wakes,
           (unsigned long long)b.res.wakes, (unsigned long long)b.res.proxy_read,
           (unsigned long long)b.res.proxy_sent, (unsigned long long)b.res.packets_delivered);
}

START_TEST(bcast_co_1route) { check_same(4, 2, 2, ML_MODE_HEATER, 1, 0, 100000, "4x2x2 CO, 1 route"); }
END_TEST
START_TEST(bcast_co_3routes) { check_same(4, 2, 2, ML_MODE_HEATER, 3, 0, 100000, "4x2x2 CO, 3 routes"); }
END_TEST
START_TEST(bcast_vn_3routes) { check_same(2, 2, 2, ML_MODE_VN, 3, 0, 60000, "2x2x2 VN, 3 routes"); }
END_TEST
START_TEST(bcast_vn_1route) { check_same(2, 2, 2, ML_MODE_VN, 1, 0, 60000, "2x2x2 VN, 1 route"); }
END_TEST
START_TEST(bcast_layouts_co) { check_same(2, 2, 2, ML_MODE_CO, 3, 1, 30000, "2x2x2 CO, layouts, 3 routes"); }
END_TEST
START_TEST(bcast_layouts_vn) { check_same(2, 2, 1, ML_MODE_VN, 1, 1, 30000, "2x2x1 VN, layouts, 1 route"); }
END_TEST

Suite *proxy_bcast_suite(void)
{
    Suite *s = suite_create("proxy_bcast");
    UM_TCASE(s, "same", 600, bcast_co_1route, bcast_co_3routes, bcast_vn_3routes, bcast_vn_1route,
             bcast_layouts_co, bcast_layouts_vn);
    return s;
}
