/* Routing arithmetic (torus-sim/tsim_route.c), checked against brute force:
 * hop counts equal breadth-first distances over tsim_neighbor, deterministic
 * paths go X then Y then Z along one minimal direction per dimension, and
 * every profitable (adaptive) port shortens the distance by exactly one. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torus-sim/tsim.h"

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
        tsim_geom g = geom(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4],
                           shapes[s][5]);
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
        tsim_geom g = geom(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4],
                           shapes[s][5]);
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
        tsim_geom g = geom(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4],
                           shapes[s][5]);
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
           "distance by one, one port per unfinished dimension, random adaptive walks take "
           "exactly hops steps\n");
    uint64_t rng = 12345;
    for (int s = 0; s < NSHAPES; s++) {
        tsim_geom g = geom(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4],
                           shapes[s][5]);
        for (int a = 0; a < g.nnodes; a++)
            for (int b = 0; b < g.nnodes; b++) {
                uint8_t d[3];
                dst_of(&g, b, d);
                int h = tsim_hops(&g, a, b);
                unsigned m = tsim_route_profitable(&g, a, d);
                ck_assert_int_eq(m != 0, a != b);
                for (int i = 0; i < 3; i++) /* never both directions of a dimension */
                    ck_assert_uint_ne((m >> (2 * i)) & 3u, 3u);
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

Suite *routing_suite(void)
{
    Suite *s = suite_create("routing");
    TCase *tc = tcase_create("routing");
    tcase_add_test(tc, delta_minimal_direction);
    tcase_add_test(tc, neighbors_and_mesh_edges);
    tcase_add_test(tc, hops_equal_bfs);
    tcase_add_test(tc, det_paths_dimension_order);
    tcase_add_test(tc, adaptive_stays_minimal);
    suite_add_tcase(s, tc);
    return s;
}
