/* bglemu-map's graph and mapping code (mapfiles/map.h): the graph, the
 * predicted routes and costs, Scotch's mapping made one-to-one, the
 * refinement, on cases whose optimum is known. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adi3-device/bin/report_matrix.h"
#include "mapfiles/map.h"
#include "messagelayer/ml_map.h"
#include "torus-sim/tsim_matrix.h"
#include "suite.h"

static tsim_geom geom(int x, int y, int z, int cpus, int nranks)
{
    tsim_geom g = {{x, y, z}, {1, 1, 1}, cpus, x * y * z, nranks};
    return g;
}

/* A periodic 3-D stencil of X x Y x Z ranks (rank x + X(y + Yz)), b bytes
 * to each of the six neighbours. */
static int stencil3d(map_edge *e, int X, int Y, int Z, uint64_t b)
{
    int k = 0;
    static const int d[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    for (int z = 0; z < Z; z++)
        for (int y = 0; y < Y; y++)
            for (int x = 0; x < X; x++)
                for (int j = 0; j < 6; j++)
                    e[k++] = (map_edge){x + X * (y + Y * z),
                                        (x + d[j][0] + X) % X + X * ((y + d[j][1] + Y) % Y +
                                                                     Y * ((z + d[j][2] + Z) % Z)), b};
    return k;
}

/* A periodic 2-D halo of X x Y ranks (rank x + X y). */
static int halo2d(map_edge *e, int X, int Y, uint64_t b)
{
    int k = 0;
    for (int y = 0; y < Y; y++)
        for (int x = 0; x < X; x++) {
            int r = x + X * y;
            e[k++] = (map_edge){r, (x + 1) % X + X * y, b};
            e[k++] = (map_edge){r, (x + X - 1) % X + X * y, b};
            e[k++] = (map_edge){r, x + X * ((y + 1) % Y), b};
            e[k++] = (map_edge){r, x + X * ((y + Y - 1) % Y), b};
        }
    return k;
}

static void one_to_one(const int *proc, int n, const map_machine *m)
{
    char *used = calloc((size_t)m->nprocs, 1);
    for (int r = 0; r < n; r++) {
        ck_assert_int_ge(proc[r], 0);
        ck_assert_int_lt(proc[r], m->nprocs);
        ck_assert_int_lt(proc[r] % TSIM_CPUS, m->g.cpus);
        ck_assert_msg(!used[proc[r]], "rank %d on a processor already taken", r);
        used[proc[r]] = 1;
    }
    free(used);
}

START_TEST(graph_merges_and_rejects)
{
    printf("mapping: the graph adds repeated pairs, drops self pairs and zero bytes, "
           "rejects ranks out of range\n");
    map_edge e[] = {{0, 1, 10}, {1, 0, 5}, {0, 1, 7}, {2, 2, 99}, {2, 0, 0}};
    map_graph gr;
    char err[128];
    ck_assert_int_eq(map_graph_build(&gr, 3, e, 5, err, sizeof err), 0);
    ck_assert_int_eq(gr.nedges, 2);
    ck_assert_int_eq(gr.e[0].from, 0);
    ck_assert_uint_eq(gr.e[0].bytes, 17);
    ck_assert_uint_eq(gr.e[1].bytes, 5);
    ck_assert_int_eq(gr.off[1] - gr.off[0], 2); /* rank 0 touches both */
    ck_assert_int_eq(gr.off[3] - gr.off[2], 0); /* rank 2 none */
    map_graph_free(&gr);
    map_edge bad[] = {{0, 3, 1}};
    ck_assert_int_eq(map_graph_build(&gr, 3, bad, 1, err, sizeof err), -1);
    ck_assert_str_eq(err, "pair 0 -> 3 outside ranks 0..2");
}
END_TEST

/* A machine and a communication graph on it; with xyzt, also the XYZT
 * mapping's processors (x.proc). */
typedef struct fix {
    tsim_geom g;
    map_machine m;
    map_graph gr;
    ml_map x;
    int xyzt;
    char err[256];
} fix;

static void fix_init(fix *f, int X, int Y, int Z, int cpus, int nranks, const map_edge *e, int ne, int xyzt)
{
    f->g = geom(X, Y, Z, cpus, nranks);
    ck_assert_int_eq(map_machine_init(&f->m, &f->g), 0);
    ck_assert_int_eq(map_graph_build(&f->gr, nranks, e, ne, f->err, sizeof f->err), 0);
    f->xyzt = xyzt;
    if (xyzt) ck_assert_int_eq(ml_map_build(&f->x, "XYZT", &f->g, f->err, sizeof f->err), 0);
}

static void fix_free(fix *f)
{
    if (f->xyzt) ml_map_free(&f->x);
    map_graph_free(&f->gr);
    map_machine_free(&f->m);
}

/* Scotch's mapping of the graph's n ranks, then pair swaps, each one to
 * one; its cost in c. */
static void scotch_swaps(fix *f, int *proc, int n, map_cost *c)
{
    ck_assert_int_eq(map_scotch(&f->gr, &f->m, proc, f->err, sizeof f->err), 0);
    one_to_one(proc, n, &f->m);
    map_refine(&f->gr, &f->m, proc, 20, 10.0);
    one_to_one(proc, n, &f->m);
    map_cost_eval(&f->gr, &f->m, proc, c);
}

START_TEST(cost_follows_deterministic_routes)
{
    printf("mapping: costs follow dimension-order routes, a tie on a ring of 4 goes +\n");
    map_edge e[] = {{0, 1, 1000}, {1, 0, 500}};
    fix f;
    fix_init(&f, 4, 4, 1, 1, 2, e, 2, 0);
    /* rank 0 on <0,0,0>, rank 1 on <2,1,0>: x+ x+ y+ there, x+ (tie) y- back */
    int proc[2] = {0, tsim_node_of(&f.g, 2, 1, 0) * TSIM_CPUS};
    map_cost c;
    ck_assert_int_eq(map_cost_eval(&f.gr, &f.m, proc, &c), 0);
    ck_assert_uint_eq(c.bytes, 1500);
    ck_assert_uint_eq(c.hop_bytes, 3 * 1000 + 3 * 500);
    ck_assert_uint_eq(c.max_link, 1000);
    ck_assert_int_eq(c.max_node, 0);
    ck_assert_int_eq(c.max_port, 0); /* x+ of <0,0,0>, first of the 1000-byte links */
    int links[3 * TSIM_MAX_DIM];
    ck_assert_int_eq(map_route(&f.m, tsim_node_of(&f.g, 2, 1, 0), 0, links), 3);
    ck_assert_int_eq(links[0] % TSIM_NPORTS, 0); /* x+: the tie, through the wrap-around */
    ck_assert_int_eq(links[2] % TSIM_NPORTS, 3); /* then y- */
    fix_free(&f);
}
END_TEST

START_TEST(stencil_identity_is_found)
{
    printf("mapping: a 3-D stencil laid out as the 4x4x4 torus: Scotch (+ swaps) comes back "
           "at the identity's hop-bytes (every pair 1 hop)\n");
    map_edge *e = malloc(sizeof *e * 64 * 6);
    fix f;
    fix_init(&f, 4, 4, 4, 1, 64, e, stencil3d(e, 4, 4, 4, 4096), 1);
    map_cost ci, cs;
    map_cost_eval(&f.gr, &f.m, f.x.proc, &ci);
    ck_assert_uint_eq(ci.hop_bytes, ci.bytes);
    int proc[64];
    scotch_swaps(&f, proc, 64, &cs);
    printf("  identity %llu hop-bytes, Scotch + swaps %llu\n", (unsigned long long)ci.hop_bytes,
           (unsigned long long)cs.hop_bytes);
    ck_assert_uint_eq(cs.hop_bytes, ci.hop_bytes);
    ck_assert_uint_eq(cs.max_link, ci.max_link);
    fix_free(&f);
    free(e);
}
END_TEST

START_TEST(halo2d_folds_onto_torus)
{
    printf("mapping: an 8x8 halo on 4x4x4: Scotch + swaps puts every grid neighbour one hop "
           "away (the shipped fold's value), XYZT needs 1.875 hops a byte\n");
    map_edge e[256];
    fix f;
    fix_init(&f, 4, 4, 4, 1, 64, e, halo2d(e, 8, 8, 4096), 1);
    map_cost cx, cs;
    map_cost_eval(&f.gr, &f.m, f.x.proc, &cx);
    ck_assert_uint_eq(cx.hop_bytes * 8, cx.bytes * 15);
    int proc[64];
    scotch_swaps(&f, proc, 64, &cs);
    ck_assert_uint_eq(cs.hop_bytes, cs.bytes);
    ck_assert_uint_eq(cs.max_link, 4096);
    fix_free(&f);
}
END_TEST

START_TEST(refine_lowers_congestion)
{
    printf("mapping: pair swaps from XYZT on the 8x8 halo lower the congestion, the busiest "
           "link and the hop-bytes, and keep one rank per processor\n");
    map_edge e[256];
    fix f;
    fix_init(&f, 4, 4, 4, 1, 64, e, halo2d(e, 8, 8, 4096), 1);
    map_cost c0, c1;
    map_cost_eval(&f.gr, &f.m, f.x.proc, &c0);
    long sw = map_refine(&f.gr, &f.m, f.x.proc, 20, 10.0);
    one_to_one(f.x.proc, 64, &f.m);
    map_cost_eval(&f.gr, &f.m, f.x.proc, &c1);
    printf("  %ld swaps: hop-bytes %llu -> %llu, busiest link %llu -> %llu\n", sw,
           (unsigned long long)c0.hop_bytes, (unsigned long long)c1.hop_bytes,
           (unsigned long long)c0.max_link, (unsigned long long)c1.max_link);
    ck_assert_int_gt(sw, 0);
    ck_assert(c1.sumsq < c0.sumsq);
    ck_assert_uint_lt(c1.max_link, c0.max_link);
    ck_assert_uint_lt(c1.hop_bytes, c0.hop_bytes);
    fix_free(&f);
}
END_TEST

START_TEST(vn_two_per_node)
{
    printf("mapping: VN, 128 ranks of a 4x4x8 stencil on 4x4x4: one rank per processor, "
           "heavy pairs share nodes or neighbour nodes\n");
    map_edge *e = malloc(sizeof *e * 128 * 6);
    fix f;
    fix_init(&f, 4, 4, 4, 2, 128, e, stencil3d(e, 4, 4, 8, 4096), 0);
    int proc[128];
    map_cost c;
    scotch_swaps(&f, proc, 128, &c);
    printf("  %.3f hops a byte\n", (double)c.hop_bytes / (double)c.bytes);
    /* XYZT in VN puts z neighbours 4 planes apart: 2 hops; anything good is below 1 */
    ck_assert_uint_lt(c.hop_bytes, c.bytes);
    free(e);
    fix_free(&f);
}
END_TEST

START_TEST(fewer_ranks_and_too_many)
{
    printf("mapping: 20 ranks on 4x4x4 get 20 distinct processors; 65 ranks in CO mode "
           "are refused with a reason\n");
    map_edge e[40];
    for (int i = 0; i < 20; i++) {
        e[2 * i] = (map_edge){i, (i + 1) % 20, 100};
        e[2 * i + 1] = (map_edge){i, (i + 7) % 20, 10};
    }
    fix f;
    fix_init(&f, 4, 4, 4, 1, 20, e, 40, 0);
    int proc[65];
    ck_assert_int_eq(map_scotch(&f.gr, &f.m, proc, f.err, sizeof f.err), 0);
    one_to_one(proc, 20, &f.m);
    map_graph_free(&f.gr);
    ck_assert_int_eq(map_graph_build(&f.gr, 65, e, 40, f.err, sizeof f.err), 0);
    ck_assert_int_eq(map_scotch(&f.gr, &f.m, proc, f.err, sizeof f.err), -1);
    ck_assert_str_eq(f.err, "65 ranks do not fit 64 processors (4x4x4, CO)");
    fix_free(&f);
}
END_TEST

START_TEST(rankmatrix_top_json_svg)
{
    printf("mapping: the rank matrix's heaviest pairs by bytes (ties: lower sender, then "
           "receiver), its JSON lines and its SVG cells (the heaviest at the top of the scale)\n");
    tsim_rankmatrix m;
    ck_assert_int_eq(tsim_rankmatrix_init(&m, 3), 0);
    m.p[0 * 3 + 1] = (tsim_pair){2, 512};
    m.p[2 * 3 + 0] = (tsim_pair){4, 1024};
    m.p[1 * 3 + 2] = (tsim_pair){2, 512};
    m.p[1 * 3 + 1] = (tsim_pair){1, 32};
    int top[8];
    ck_assert_int_eq(report_matrix_top(&m, 8, top), 4);
    ck_assert_int_eq(top[0], 2 * 3 + 0);
    ck_assert_int_eq(top[1], 0 * 3 + 1);
    ck_assert_int_eq(top[2], 1 * 3 + 2);
    ck_assert_int_eq(top[3], 1 * 3 + 1);
    ck_assert_int_eq(report_matrix_top(&m, 1, top), 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsim_rankmatrix_json(&m, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"ranks\": 3"));
    ck_assert_ptr_nonnull(strstr(buf, "{\"from\": 2, \"to\": 0, \"packets\": 4, \"bytes\": 1024}"));
    ck_assert_ptr_null(strstr(buf, "\"from\": 0, \"to\": 2"));
    free(buf);
    f = open_memstream(&buf, &len);
    report_matrix_svg(&m, "t <&>", f);
    fclose(f);
    int cells = 0;
    for (const char *q = buf; (q = strstr(q, "class=\"pair ")); q++) cells++;
    ck_assert_int_eq(cells, 4);
    ck_assert_ptr_nonnull(strstr(buf, "class=\"pair u9\" x=\"60\""));
    ck_assert_ptr_nonnull(strstr(buf, "data-pair=\"2 0\" data-bytes=\"1024\""));
    ck_assert_ptr_nonnull(strstr(buf, "t &lt;&amp;&gt;"));
    free(buf);
    tsim_rankmatrix_free(&m);
}
END_TEST

Suite *mapping_suite(void)
{
    Suite *s = suite_create("mapping");
    UM_TCASE(s, "mapping", 60, graph_merges_and_rejects, cost_follows_deterministic_routes,
             stencil_identity_is_found, halo2d_folds_onto_torus, refine_lowers_congestion, vn_two_per_node,
             fewer_ranks_and_too_many, rankmatrix_top_json_svg);
    return s;
}
