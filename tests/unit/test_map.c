/* The rank map: orders, mapping files, every rejection and its message,
 * and the default shape rule. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "messagelayer/ml_map.h"
#include "suite.h"

static tsim_geom geom(int x, int y, int z, int cpus, int nranks)
{
    tsim_geom g = {{x, y, z}, {1, 1, 1}, cpus, x * y * z, nranks};
    return g;
}

static char path[64];

/* Writes text to a fresh temporary file named in `path`. */
static const char *mapfile(const char *text)
{
    strcpy(path, "/tmp/test_map.XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* Builds from spec (an order, or a file's path: file) and expects a
 * failure whose message contains every string in want (NULL-terminated),
 * a file's in one line naming it; prints the message. */
static void refused(const char *spec, tsim_geom g, int file, const char *const *want)
{
    ml_map m;
    char err[512] = "";
    int rc = ml_map_build(&m, spec, &g, err, sizeof err);
    if (file) unlink(spec);
    printf("  -> %s\n", err);
    ck_assert_int_eq(rc, -1);
    if (file) {
        ck_assert_ptr_null(strchr(err, '\n'));
        ck_assert_ptr_nonnull(strstr(err, spec)); /* names the file */
    }
    for (int i = 0; want[i]; i++) ck_assert_msg(strstr(err, want[i]), "'%s' lacks '%s'", err, want[i]);
}
#define EXPECT_ERROR(text, g, ...) refused(mapfile(text), g, 1, (const char *const[]){__VA_ARGS__, NULL})
#define SPEC_REFUSED(spec, g, ...) refused(spec, g, 0, (const char *const[]){__VA_ARGS__, NULL})

START_TEST(order_xyzt_default)
{
    printf("map: XYZT (and the empty spec) puts rank r at x = r mod X first, then y, z, t\n");
    tsim_geom g = geom(2, 3, 2, 2, 24);
    ml_map m;
    char err[256];
    ck_assert_int_eq(ml_map_build(&m, NULL, &g, err, sizeof err), 0);
    ck_assert_str_eq(m.order, "XYZT");
    for (int r = 0; r < 24; r++) {
        int c[4];
        ml_map_coords(&m, &g, r, c);
        ck_assert_int_eq(c[0], r % 2);
        ck_assert_int_eq(c[1], r / 2 % 3);
        ck_assert_int_eq(c[2], r / 6 % 2);
        ck_assert_int_eq(c[3], r / 12);
        ck_assert_int_eq(m.rank[m.proc[r]], r);
    }
    ml_map_free(&m);
}
END_TEST

START_TEST(order_txyz_and_zyxt)
{
    printf("map: TXYZ puts ranks 2k, 2k+1 on one node in VN; zyxt (lower case) varies z fastest\n");
    tsim_geom g = geom(2, 2, 2, 2, 16);
    ml_map m;
    char err[256];
    ck_assert_int_eq(ml_map_build(&m, "TXYZ", &g, err, sizeof err), 0);
    for (int r = 0; r < 16; r++) {
        ck_assert_int_eq(m.proc[r], r); /* proc index = node*2 + t, node in x-fastest order */
    }
    ml_map_free(&m);
    g = geom(2, 2, 3, 1, 12);
    ck_assert_int_eq(ml_map_build(&m, "zyxt", &g, err, sizeof err), 0);
    ck_assert_str_eq(m.order, "ZYXT");
    int c[4];
    ml_map_coords(&m, &g, 1, c);
    ck_assert_int_eq(c[2], 1);
    ck_assert_int_eq(c[0], 0);
    ml_map_coords(&m, &g, 3, c);
    ck_assert_int_eq(c[1], 1);
    ck_assert_int_eq(c[2], 0);
    ml_map_coords(&m, &g, 11, c);
    ck_assert(c[0] == 1 && c[1] == 1 && c[2] == 2);
    ml_map_free(&m);
}
END_TEST

START_TEST(order_fewer_ranks)
{
    printf("map: fewer ranks than processors leaves the rest unmapped (rank -1)\n");
    tsim_geom g = geom(2, 2, 2, 1, 3);
    ml_map m;
    char err[256];
    ck_assert_int_eq(ml_map_build(&m, "XYZT", &g, err, sizeof err), 0);
    int mapped = 0;
    for (int p = 0; p < m.nprocs; p++) mapped += m.rank[p] >= 0;
    ck_assert_int_eq(mapped, 3);
    ml_map_free(&m);
}
END_TEST

START_TEST(from_seg)
{
    printf("map: a rank rebuilds the map mpirun stored in the segment (rank_proc, mapping)\n");
    tsim_geom g = geom(2, 2, 1, 2, 6);
    tsim_params p;
    tsim_params_default(&p);
    char err[256];
    tsim_seg *seg = tsim_seg_create(&g, &p, 0, err, sizeof err);
    ck_assert_ptr_nonnull(seg);
    ml_map a, b;
    ck_assert_int_eq(ml_map_build(&a, "tzyx", &g, err, sizeof err), 0);
    for (int r = 0; r < 6; r++) seg->rank_proc[r] = a.proc[r];
    strcpy(seg->mapping, "tzyx");
    ck_assert_int_eq(ml_map_from_seg(&b, seg), 0);
    ck_assert_str_eq(b.order, "TZYX");
    ck_assert_int_eq(b.nranks, 6);
    for (int r = 0; r < 6; r++) ck_assert_int_eq(b.proc[r], a.proc[r]);
    for (int q = 0; q < a.nprocs; q++) ck_assert_int_eq(b.rank[q], a.rank[q]);
    ml_map_free(&a);
    ml_map_free(&b);
    tsim_seg_destroy(seg);
}
END_TEST

START_TEST(order_bad)
{
    printf("map: bad orders (XXYZ, XYZ, XYZTT, ABCD) get one line naming the order\n");
    tsim_geom g = geom(2, 2, 2, 1, 8);
    const char *bad[] = {"XXYZ", "XYZ", "XYZTT", "ABCD"};
    for (int i = 0; i < 4; i++) SPEC_REFUSED(bad[i], g, bad[i], "permutation of X, Y, Z and T");
}
END_TEST

START_TEST(order_too_many_ranks)
{
    printf("map: more ranks than processors is refused\n");
    SPEC_REFUSED("XYZT", geom(2, 2, 2, 1, 9), "9 ranks do not fit 2x2x2 in CO mode");
}
END_TEST

START_TEST(file_good)
{
    printf("map: a file with comments, blank lines and tabs maps rank r to its r-th line\n");
    tsim_geom g = geom(2, 2, 1, 2, 3);
    ml_map m;
    char err[256] = "";
    const char *p = mapfile("# three ranks\n\n1 1 0 1   # rank 0\n\t0 0 0 0\n  \n1 0 0 1\r\n");
    ck_assert_int_eq(ml_map_build(&m, p, &g, err, sizeof err), 0);
    unlink(p);
    ck_assert_str_eq(m.order, "");
    int c[4];
    ml_map_coords(&m, &g, 0, c);
    ck_assert(c[0] == 1 && c[1] == 1 && c[2] == 0 && c[3] == 1);
    ck_assert_int_eq(m.proc[1], 0);
    ck_assert_int_eq(m.proc[2], 3);
    ck_assert_int_eq(m.rank[3], 2);
    ml_map_free(&m);
}
END_TEST

START_TEST(file_too_few)
{
    printf("map: too few lines for -np\n");
    EXPECT_ERROR("0 0 0 0\n1 0 0 0\n", geom(2, 2, 1, 1, 4), ":2: ", "too few lines", "2 ranks mapped, -np 4");
}
END_TEST

START_TEST(file_too_many)
{
    printf("map: too many lines for -np names the first extra line\n");
    EXPECT_ERROR("0 0 0 0\n# c\n1 0 0 0\n0 1 0 0\n", geom(2, 2, 1, 1, 2), ":4: ", "too many lines",
                 "rank 2, but -np 2");
}
END_TEST

START_TEST(file_outside_shape)
{
    printf("map: coordinates outside the shape (x, y, z, negative)\n");
    EXPECT_ERROR("0 0 0 0\n2 0 0 0\n", geom(2, 2, 2, 1, 2), ":2: ", "x=2 outside the shape 2x2x2",
                 "x must be 0..1");
    EXPECT_ERROR("0 3 0 0\n", geom(2, 3, 2, 1, 1), ":1: ", "y=3 outside the shape 2x3x2");
    EXPECT_ERROR("0 0 4 0\n", geom(2, 2, 4, 1, 1), ":1: ", "z=4 outside");
    EXPECT_ERROR("0 -1 0 0\n", geom(2, 2, 2, 1, 1), ":1: ", "y=-1 outside");
}
END_TEST

START_TEST(file_duplicate)
{
    printf("map: a duplicate names the earlier line and rank\n");
    EXPECT_ERROR("0 0 0 0\n\n1 0 0 0\n# x\n1 0 0 0\n", geom(2, 2, 2, 1, 3), ":5: ",
                 "duplicate <1,0,0,0>", "rank 1 on line 3");
}
END_TEST

START_TEST(file_t_range)
{
    printf("map: t out of range for the mode (CO: 0; VN: 0..1)\n");
    EXPECT_ERROR("0 0 0 0\n0 0 0 1\n", geom(2, 1, 1, 1, 2), ":2: ", "t=1 out of range for CO mode",
                 "t must be 0");
    EXPECT_ERROR("0 0 0 2\n", geom(2, 1, 1, 2, 1), ":1: ", "t=2 out of range for VN mode",
                 "t must be 0 or 1");
}
END_TEST

START_TEST(file_malformed)
{
    printf("map: malformed lines: non-numbers, wrong field count, trailing junk\n");
    tsim_geom g = geom(2, 2, 2, 1, 2);
    EXPECT_ERROR("0 0 0 0\n1 a 0 0\n", g, ":2: ", "y coordinate 'a' is not a number");
    EXPECT_ERROR("0 0 0 0\n1 0 0 0x\n", g, ":2: ", "t coordinate '0x' is not a number");
    EXPECT_ERROR("1.5 0 0 0\n", g, ":1: ", "x coordinate '1.5' is not a number");
    EXPECT_ERROR("0 0 0\n", g, ":1: ", "expected 4 numbers 'x y z t', found 3");
    EXPECT_ERROR("0 0 0 0 junk\n", g, ":1: ", "unexpected 'junk' after 'x y z t'");
    EXPECT_ERROR("0 0 0 0 0\n", g, ":1: ", "unexpected '0' after");
    EXPECT_ERROR("0 0 0 99999999999999999999\n", g, ":1: ", "t=99999999999999999999 out of range");
}
END_TEST

START_TEST(file_missing)
{
    printf("map: a missing file (a path, not an order) says it cannot be opened\n");
    SPEC_REFUSED("/nonexistent/x.map", geom(2, 2, 2, 1, 2), "/nonexistent/x.map: cannot open mapping file");
}
END_TEST

START_TEST(shape_default)
{
    printf("map: default shape is the most cubic X>=Y>=Z holding the nodes (VN halves them)\n");
    struct { int n, cpus, x, y, z; } c[] = {
        {1, 1, 1, 1, 1}, {2, 1, 2, 1, 1}, {3, 1, 2, 2, 1}, {7, 1, 2, 2, 2}, {8, 1, 2, 2, 2},
        {9, 1, 3, 3, 1}, {16, 1, 3, 3, 2}, {27, 1, 3, 3, 3}, {64, 1, 4, 4, 4}, {16, 2, 2, 2, 2},
        {17, 2, 3, 3, 1}, {2, 2, 1, 1, 1}, {512, 1, 8, 8, 8}, {1024, 2, 8, 8, 8},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int d[3];
        ck_assert_int_eq(ml_shape_default(c[i].n, c[i].cpus, d), 0);
        ck_assert_msg(d[0] == c[i].x && d[1] == c[i].y && d[2] == c[i].z,
                      "n=%d cpus=%d: got %dx%dx%d", c[i].n, c[i].cpus, d[0], d[1], d[2]);
    }
    int d[3];
    ck_assert_int_eq(ml_shape_default(TSIM_MAX_PROCS, 1, d), -1);
    ck_assert_int_eq(ml_shape_default(0, 1, d), -1);
}
END_TEST

Suite *map_suite(void)
{
    Suite *s = suite_create("map");
    UM_TCASE(s, "map", 0, order_xyzt_default, order_txyz_and_zyxt, order_fewer_ranks, order_bad, from_seg,
             order_too_many_ranks, file_good, file_too_few, file_too_many, file_outside_shape, file_duplicate,
             file_t_range, file_malformed, file_missing, shape_default);
    return s;
}
