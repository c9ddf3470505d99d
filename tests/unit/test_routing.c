/* Routing arithmetic (torus-sim/tsim_route.c), checked against brute force:
 * hop counts equal breadth-first distances over tsim_neighbor, deterministic
 * paths go X then Y then Z along one minimal direction per dimension, and
 * every profitable (adaptive) port shortens the distance by exactly one.
 * Also where synthetic traffic sends its packets (traffic/trf_traffic.h patterns),
 * its PRNG and its offered load. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torus-sim/tsim.h"
#include "traffic/trf_traffic.h"
#include "suite.h"

static tsim_geom geom(int x, int y, int z, int tx, int ty, int tz)
{
    tsim_geom g = {{x, y, z}, {tx, ty, tz}, 1, x * y * z, x * y * z};
    return g;
}

static void dst_of(const tsim_geom *g, int node, uint8_t d[3])
{
    int c[3];
    tsim_coords(g, node, c);
    for (int i = 0; i < 3; i++) d[i] = (uint8_t)c[i];
}

/* Breadth-first distances from a over the links tsim_neighbor reports. */
static void bfs(const tsim_geom *g, int a, int *dist)
{
    int n = g->nnodes, *q = malloc((size_t)n * sizeof *q), qh = 0, qt = 0;
    for (int i = 0; i < n; i++) dist[i] = -1;
    dist[a] = 0;
    q[qt++] = a;
    while (qh < qt) {
        int u = q[qh++];
        for (int p = 0; p < TSIM_NPORTS; p++) {
            int v = tsim_neighbor(g, u, p);
            if (v >= 0 && dist[v] < 0) {
                dist[v] = dist[u] + 1;
                q[qt++] = v;
            }
        }
    }
    free(q);
}

/* The shapes every exhaustive check runs on: even and odd rings, mesh,
 * mixed torus/mesh dimensions, a degenerate dimension. */
static const int shapes[][6] = {
    {4, 4, 4, 1, 1, 1}, {4, 4, 4, 0, 0, 0}, {5, 3, 2, 1, 1, 1},
    {6, 2, 3, 1, 0, 1}, {8, 1, 1, 1, 1, 1}, {3, 4, 1, 0, 1, 1},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])
static tsim_geom shape(int s)
{
    return geom(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4], shapes[s][5]);
}

START_TEST(delta_minimal_direction)
{
    printf("routing: tsim_delta: minimal signed distance, wrap-around, tie goes + at n/2, "
           "mesh never wraps\n");
    /* torus, even ring of 8 */
    ck_assert_int_eq(tsim_delta(0, 3, 8, 1), 3);
    ck_assert_int_eq(tsim_delta(0, 4, 8, 1), 4);   /* tie: + */
    ck_assert_int_eq(tsim_delta(4, 0, 8, 1), 4);   /* tie: + even going "down" */
    ck_assert_int_eq(tsim_delta(0, 5, 8, 1), -3);  /* wrap the other way */
    ck_assert_int_eq(tsim_delta(6, 1, 8, 1), 3);   /* + through the wrap link */
    ck_assert_int_eq(tsim_delta(1, 6, 8, 1), -3);
    ck_assert_int_eq(tsim_delta(3, 3, 8, 1), 0);
    /* ring of 4: the tie at 2 goes + from every start */
    for (int a = 0; a < 4; a++) ck_assert_int_eq(tsim_delta(a, (a + 2) % 4, 4, 1), 2);
    /* odd ring: no ties */
    ck_assert_int_eq(tsim_delta(0, 2, 5, 1), 2);
    ck_assert_int_eq(tsim_delta(0, 3, 5, 1), -2);
    /* mesh: plain difference */
    ck_assert_int_eq(tsim_delta(0, 7, 8, 0), 7);
    ck_assert_int_eq(tsim_delta(7, 0, 8, 0), -7);
    ck_assert_int_eq(tsim_delta(2, 6, 8, 0), 4);
    /* exhaustive: |delta| <= n/2 on a torus, and a + delta lands on b */
    for (int n = 1; n <= 9; n++)
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                int d = tsim_delta(a, b, n, 1);
                ck_assert_int_le(2 * abs(d), n);
                if (2 * abs(d) == n) ck_assert_int_gt(d, 0);
                ck_assert_int_eq(((a + d) % n + n) % n, b);
                ck_assert_int_eq(tsim_delta(a, b, n, 0), b - a);
            }
}
END_TEST

START_TEST(neighbors_and_mesh_edges)
{
    printf("routing: tsim_neighbor: +/- steps per port, wrap on torus, -1 at mesh edges and on "
           "1-wide dimensions\n");
    tsim_geom t = geom(4, 4, 4, 1, 1, 1), m = geom(4, 4, 4, 0, 0, 0);
    int n0 = tsim_node_of(&t, 0, 2, 3), n3 = tsim_node_of(&t, 3, 2, 3);
    ck_assert_int_eq(tsim_neighbor(&t, n0, TSIM_XM), n3);
    ck_assert_int_eq(tsim_neighbor(&t, n3, TSIM_XP), n0);
    ck_assert_int_eq(tsim_neighbor(&m, n0, TSIM_XM), -1);
    ck_assert_int_eq(tsim_neighbor(&m, n3, TSIM_XP), -1);
    ck_assert_int_eq(tsim_neighbor(&m, n0, TSIM_XP), tsim_node_of(&m, 1, 2, 3));
    ck_assert_int_eq(tsim_neighbor(&m, n0, TSIM_ZP), -1);
    ck_assert_int_eq(tsim_neighbor(&m, n0, TSIM_ZM), tsim_node_of(&m, 0, 2, 2));
    tsim_geom line = geom(8, 1, 1, 1, 1, 1);
    for (int p = TSIM_YP; p < TSIM_NPORTS; p++) ck_assert_int_eq(tsim_neighbor(&line, 5, p), -1);
    /* every link has its reverse */
    for (int s = 0; s < NSHAPES; s++) {
        tsim_geom g = shape(s);
        for (int u = 0; u < g.nnodes; u++)
            for (int p = 0; p < TSIM_NPORTS; p++) {
                int v = tsim_neighbor(&g, u, p);
                if (v >= 0) ck_assert_int_eq(tsim_neighbor(&g, v, p ^ 1), u);
            }
    }
}
END_TEST

START_TEST(hops_equal_bfs)
{
    printf("routing: tsim_hops equals the breadth-first distance for every pair on %d shapes "
           "(torus, mesh, mixed, odd)\n", NSHAPES);
    for (int s = 0; s < NSHAPES; s++) {
        tsim_geom g = shape(s);
        int *dist = malloc((size_t)g.nnodes * sizeof *dist);
        for (int a = 0; a < g.nnodes; a++) {
            bfs(&g, a, dist);
            for (int b = 0; b < g.nnodes; b++)
                ck_assert_msg(tsim_hops(&g, a, b) == dist[b], "shape %d: hops(%d,%d)=%d, bfs %d",
                              s, a, b, tsim_hops(&g, a, b), dist[b]);
        }
        free(dist);
    }
    /* a few by hand: 4x4x4 torus diameter 6, mesh diameter 9 */
    tsim_geom t = geom(4, 4, 4, 1, 1, 1), m = geom(4, 4, 4, 0, 0, 0);
    ck_assert_int_eq(tsim_hops(&t, 0, tsim_node_of(&t, 2, 2, 2)), 6);
    ck_assert_int_eq(tsim_hops(&t, 0, tsim_node_of(&t, 3, 3, 3)), 3);
    ck_assert_int_eq(tsim_hops(&m, 0, tsim_node_of(&m, 3, 3, 3)), 9);
}
END_TEST

START_TEST(det_paths_dimension_order)
{
    printf("routing: tsim_route_det paths for every pair: length = hops, dimensions in order "
           "X->Y->Z, one direction per dimension, -1 at the destination\n");
    for (int s = 0; s < NSHAPES; s++) {
        tsim_geom g = shape(s);
        for (int a = 0; a < g.nnodes; a++)
            for (int b = 0; b < g.nnodes; b++) {
                uint8_t d[3];
                dst_of(&g, b, d);
                int u = a, steps = 0, last_dim = 0, dir[3] = {-1, -1, -1};
                for (;;) {
                    int p = tsim_route_det(&g, u, d);
                    if (p < 0) break;
                    ck_assert_int_ge(p / 2, last_dim); /* never back to an earlier dimension */
                    last_dim = p / 2;
                    if (dir[p / 2] < 0) dir[p / 2] = p;
                    ck_assert_int_eq(dir[p / 2], p); /* never turns around */
                    ck_assert_msg(tsim_route_profitable(&g, u, d) & (1u << p),
                                  "det port not profitable");
                    u = tsim_neighbor(&g, u, p);
                    ck_assert_int_ge(u, 0); /* never off a mesh edge */
                    ck_assert_int_le(++steps, 3 * TSIM_MAX_DIM);
                }
                ck_assert_int_eq(u, b);
                ck_assert_int_eq(steps, tsim_hops(&g, a, b));
                ck_assert_uint_eq(tsim_route_profitable(&g, b, d), 0);
            }
    }
    /* by hand on a ring of 8: wrap-around minimal direction and the tie */
    tsim_geom ring = geom(8, 1, 1, 1, 1, 1), line = geom(8, 1, 1, 0, 1, 1);
    uint8_t d6[3] = {6, 0, 0}, d4[3] = {4, 0, 0}, d1[3] = {1, 0, 0};
    ck_assert_int_eq(tsim_route_det(&ring, 0, d6), TSIM_XM); /* 0 -> 7 -> 6 */
    ck_assert_int_eq(tsim_route_det(&ring, 0, d4), TSIM_XP); /* tie at n/2: + */
    ck_assert_int_eq(tsim_route_det(&ring, 6, d1), TSIM_XP); /* 6 -> 7 -> 0 -> 1 */
    ck_assert_int_eq(tsim_route_det(&line, 0, d6), TSIM_XP); /* mesh: no wrap */
    ck_assert_int_eq(tsim_route_det(&line, 6, d1), TSIM_XM);
    /* 4x4x4 torus, (0,0,0) -> (1,3,2): X+ first, then Y- (wrap), then Z+ (tie) */
    tsim_geom t = geom(4, 4, 4, 1, 1, 1);
    uint8_t d[3] = {1, 3, 2};
    int u = 0, want[] = {TSIM_XP, TSIM_YM, TSIM_ZP, TSIM_ZP, -1};
    for (int i = 0; i < 5; i++) {
        int p = tsim_route_det(&t, u, d);
        ck_assert_int_eq(p, want[i]);
        if (p >= 0) u = tsim_neighbor(&t, u, p);
    }
}
END_TEST

START_TEST(adaptive_stays_minimal)
{
    printf("routing: tsim_route_profitable for every pair: each profitable port shortens the "
           "distance by one, one port per unfinished dimension (both at a tie on an even "
           "ring), random adaptive walks take exactly hops steps\n");
    uint64_t rng = 12345;
    for (int s = 0; s < NSHAPES; s++) {
        tsim_geom g = shape(s);
        for (int a = 0; a < g.nnodes; a++)
            for (int b = 0; b < g.nnodes; b++) {
                uint8_t d[3];
                dst_of(&g, b, d);
                int h = tsim_hops(&g, a, b);
                unsigned m = tsim_route_profitable(&g, a, d);
                ck_assert_int_eq(m != 0, a != b);
                int ca[3], cb[3];
                tsim_coords(&g, a, ca);
                tsim_coords(&g, b, cb);
                for (int i = 0; i < 3; i++) /* both directions exactly at a tie */
                    ck_assert_int_eq(((m >> (2 * i)) & 3u) == 3u,
                                     g.torus[i] && g.dim[i] % 2 == 0 &&
                                         abs(ca[i] - cb[i]) == g.dim[i] / 2);
                for (int p = 0; p < TSIM_NPORTS; p++) {
                    if (!(m & (1u << p))) continue;
                    int v = tsim_neighbor(&g, a, p);
                    ck_assert_int_ge(v, 0);
                    ck_assert_int_eq(tsim_hops(&g, v, b), h - 1);
                }
                /* a random walk over profitable ports (what adaptive routing
                 * may do, whatever the tokens say) */
                int u = a, steps = 0;
                while (u != b) {
                    unsigned mm = tsim_route_profitable(&g, u, d);
                    int choices[TSIM_NPORTS], nc = 0;
                    for (int p = 0; p < TSIM_NPORTS; p++)
                        if (mm & (1u << p)) choices[nc++] = p;
                    ck_assert_int_gt(nc, 0);
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    u = tsim_neighbor(&g, u, choices[(rng >> 33) % (unsigned)nc]);
                    steps++;
                }
                ck_assert_int_eq(steps, h);
            }
    }
}
END_TEST

/* ---- synthetic traffic destinations and load --------------------------- */
static trf_traffic *traffic(int pattern, int n, double load, int arrivals)
{
    tsim_geom g = geom(4, 4, 4, 1, 1, 1);
    tsim_params p;
    tsim_params_default(&p);
    trf_cfg c;
    trf_cfg_default(&c);
    c.pattern = pattern;
    c.nprocs = n;
    c.load = load;
    c.arrivals = arrivals;
    c.packets = 20000;
    char err[200];
    trf_traffic *t = trf_new(&g, &p, &c, err, sizeof err);
    ck_assert_msg(t, "%s", err);
    return t;
}

START_TEST(traffic_prng_vectors)
{
    printf("traffic: xoshiro256** and splitmix64 match their reference outputs\n");
    uint64_t s[4] = {1, 2, 3, 4}, st = 0;
    ck_assert_uint_eq(trf_rand(s), 11520u);
    ck_assert_uint_eq(trf_rand(s), 0u);
    ck_assert_uint_eq(trf_rand(s), 1509978240u);
    ck_assert_uint_eq(trf_rand(s), 1215971899390074240ull);
    ck_assert_uint_eq(trf_splitmix(&st), 0xe220a8397b1dcdafull);
}
END_TEST

START_TEST(traffic_pattern_destinations)
{
    printf("traffic: transpose/bitrev/neighbor are permutations (transpose, bitrev involutions "
           "for even bits), alltoall visits every other rank once per round, uniform never "
           "picks self, hotspot sends its share to rank 0\n");
    uint64_t rng[4] = {9, 8, 7, 6};
    int hit[64];
    for (int pat = TRF_TRANSPOSE; pat <= TRF_NEIGHBOR; pat++)
        for (int n = 2; n <= 64; n *= 2) {
            if (pat == TRF_NEIGHBOR && n != 64) continue;
            trf_traffic *t = traffic(pat, n, 0.5, TRF_BERNOULLI);
            memset(hit, 0, sizeof hit);
            for (int r = 0; r < n; r++) {
                int d = trf_dest(t, r, 0, rng);
                ck_assert_int_ge(d, 0);
                ck_assert_int_lt(d, n);
                hit[d]++;
                int bits = __builtin_ctz((unsigned)n);
                if (pat != TRF_NEIGHBOR && (pat == TRF_BITREV || bits % 2 == 0))
                    ck_assert_int_eq(trf_dest(t, d, 0, rng), r);
                if (pat == TRF_NEIGHBOR) {
                    tsim_geom g = geom(4, 4, 4, 1, 1, 1);
                    ck_assert_int_eq(tsim_hops(&g, r, d), 3);
                }
            }
            for (int r = 0; r < n; r++) ck_assert_int_eq(hit[r], 1);
            trf_free(t);
        }
    /* transpose on 64 = 4x4x4: rank bits z1z0y1y0x1x0 -> y0x1x0z1z0y1 */
    trf_traffic *t = traffic(TRF_TRANSPOSE, 64, 0.5, TRF_BERNOULLI);
    ck_assert_int_eq(trf_dest(t, 1, 0, rng), 8);
    ck_assert_int_eq(trf_dest(t, 8, 0, rng), 1);
    ck_assert_int_eq(trf_dest(t, 9, 0, rng), 9); /* a fixed point */
    trf_free(t);

    t = traffic(TRF_ALLTOALL, 64, 0.5, TRF_BERNOULLI);
    for (int r = 0; r < 64; r += 7) {
        memset(hit, 0, sizeof hit);
        for (uint64_t j = 0; j < 2 * 63; j++) hit[trf_dest(t, r, j, rng)]++;
        for (int d = 0; d < 64; d++) ck_assert_int_eq(hit[d], d == r ? 0 : 2);
    }
    trf_free(t);

    t = traffic(TRF_UNIFORM, 64, 0.5, TRF_BERNOULLI);
    memset(hit, 0, sizeof hit);
    for (int i = 0; i < 64000; i++) hit[trf_dest(t, 5, (uint64_t)i, rng)]++;
    for (int d = 0; d < 64; d++) {
        if (d == 5) ck_assert_int_eq(hit[d], 0);
        else ck_assert_msg(hit[d] > 850 && hit[d] < 1190, "uniform: %d hit %d times", d, hit[d]);
    }
    trf_free(t);

    t = traffic(TRF_HOTSPOT, 64, 0.5, TRF_BERNOULLI);
    int to0 = 0;
    for (int i = 0; i < 100000; i++) to0 += trf_dest(t, 3, (uint64_t)i, rng) == 0;
    /* 0.25 + 0.75/63 of 100000 = 26190; 5 sigma is about 700 */
    ck_assert_msg(to0 > 25490 && to0 < 26890, "hotspot: %d of 100000 to rank 0", to0);
    trf_free(t);
}
END_TEST

/* Generation times straight from the source callback, no engine: K packets
 * at load F span K / lambda = K * 1080 / F cycles. */
static void offered(int arrivals, double load)
{
    trf_traffic *t = traffic(TRF_UNIFORM, 64, load, arrivals);
    tsim_source src;
    trf_source(t, &src);
    uint64_t tt = 0, prev = 0;
    tsim_pkt k;
    int fifo, n = 0;
    while (src.next(src.ctx, 0, &tt, &k, &fifo)) {
        ck_assert_uint_ge(tt, prev);
        ck_assert_int_eq(k.hw.chunks, 8);
        ck_assert_int_ge(fifo, 0);
        ck_assert_int_lt(fifo, TSIM_INJ_HP);
        prev = tt;
        n++;
    }
    ck_assert_int_eq(n, 20000);
    double want = 20000 * 1080 / load, got = (double)prev;
    ck_assert_msg(got > 0.97 * want && got < 1.03 * want, "%s load %.2f: %.0f cycles for 20000 "
                  "packets, want %.0f", arrivals ? "exponential" : "Bernoulli", load, got, want);
    trf_free(t);
}

START_TEST(traffic_offered_load)
{
    printf("traffic: 20000 packets at load F span 20000 x 1080 / F cycles (+-3%%), Bernoulli "
           "and exponential, F = 0.1, 1, 6; times never decrease\n");
    double loads[] = {0.1, 1.0, 6.0};
    for (int i = 0; i < 3; i++) {
        offered(TRF_BERNOULLI, loads[i]);
        offered(TRF_EXPONENTIAL, loads[i]);
    }
}
END_TEST

Suite *routing_suite(void)
{
    Suite *s = suite_create("routing");
    UM_TCASE(s, "routing", 0, delta_minimal_direction, neighbors_and_mesh_edges, hops_equal_bfs,
             det_paths_dimension_order, adaptive_stays_minimal);
    /* 120,000 generated arrivals: seconds under a sanitizer on a loaded host */
    UM_TCASE(s, "traffic", 60, traffic_prng_vectors, traffic_pattern_destinations, traffic_offered_load);
    return s;
}
