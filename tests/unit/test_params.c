/* The named parameter table: defaults, overrides, files and their errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "torus-sim/tsim.h"
#include "suite.h"

START_TEST(defaults_are_bgl)
{
    printf("params: defaults are the BG/L numbers (700 MHz, 0.25 B/cycle, 14 wire bytes, 1 KB FIFOs)\n");
    tsim_params p;
    tsim_params_default(&p);
    ck_assert_uint_eq(p.clock_mhz, 700);
    ck_assert_uint_eq(p.link_cycles_per_byte, 4);
    ck_assert_uint_eq(p.wire_overhead, 14);
    ck_assert_uint_eq(p.fifo_chunks, 32);
}
END_TEST

START_TEST(set_and_reject)
{
    printf("params: name=value sets a value; unknown names, negatives and junk are refused with a reason\n");
    tsim_params p;
    char err[256];
    tsim_params_default(&p);
    ck_assert_int_eq(tsim_params_set(&p, "hop_latency = 100", err, sizeof err), 0);
    ck_assert_uint_eq(p.hop_latency, 100);
    ck_assert_int_eq(tsim_params_set(&p, "hop_latency=0x20", err, sizeof err), 0);
    ck_assert_uint_eq(p.hop_latency, 32);
    ck_assert_int_ne(tsim_params_set(&p, "no_such=1", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "unknown parameter 'no_such'"));
    ck_assert_int_ne(tsim_params_set(&p, "hop_latency=-3", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "not a non-negative integer"));
    ck_assert_int_ne(tsim_params_set(&p, "hop_latency=12x", err, sizeof err), 0);
    ck_assert_int_ne(tsim_params_set(&p, "hop_latency", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "expected name=value"));
    ck_assert_uint_eq(p.hop_latency, 32); /* failures change nothing */
}
END_TEST

START_TEST(file_errors_name_line)
{
    printf("params: a parameter file's error names file:line and the reason; comments and blanks pass\n");
    char path[] = "/tmp/bglemu-params-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# a comment\n\nhop_latency = 70  # trailing comment\nvc_chunks = lots\n");
    fclose(f);
    tsim_params p;
    char err[512];
    tsim_params_default(&p);
    ck_assert_int_ne(tsim_params_load(&p, path, err, sizeof err), 0);
    char want[600];
    snprintf(want, sizeof want, "%s:4: parameter vc_chunks: 'lots'", path);
    ck_assert_msg(strstr(err, want), "got: %s", err);
    ck_assert_uint_eq(p.hop_latency, 70);
    unlink(path);
    ck_assert_int_ne(tsim_params_load(&p, "/nonexistent/params", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/params: cannot open"));
}
END_TEST

START_TEST(segment_rejects_bad_sizes)
{
    printf("params: a machine with FIFOs or VC buffers too small for a full packet and the bubble, "
           "or VC buffers beyond TSIM_MAX_VC_CHUNKS (adaptive routing's scores), is refused\n");
    tsim_geom g = {{2, 2, 2}, {1, 1, 1}, 1, 0, 0};
    tsim_params p;
    char err[256];
    tsim_params_default(&p);
    p.vc_chunks = 12;
    ck_assert_ptr_null(tsim_seg_create(&g, &p, 0, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "vc_chunks 16..1048576"));
    p.vc_chunks = TSIM_MAX_VC_CHUNKS + 1;
    ck_assert_ptr_null(tsim_seg_create(&g, &p, 0, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "vc_chunks 16..1048576"));
    p.vc_chunks = TSIM_MAX_VC_CHUNKS;
    tsim_seg *s = tsim_seg_create(&g, &p, 0, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    tsim_seg_destroy(s);
    tsim_params_default(&p);
    g.dim[1] = 0;
    ck_assert_ptr_null(tsim_seg_create(&g, &p, 0, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "dimension 1"));
}
END_TEST

/* A named 2x1x1 machine segment, as mpirun makes one. */
static tsim_seg *named_segment(void)
{
    tsim_geom g = {{2, 1, 1}, {1, 1, 1}, 1, 0, 0};
    tsim_params p;
    char err[256];
    tsim_params_default(&p);
    tsim_seg *s = tsim_seg_create(&g, &p, 1, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    return s;
}

START_TEST(named_segment_private)
{
    printf("params: a named machine segment is mode 0600 in /dev/shm and gone after destroy\n");
    tsim_seg *s = named_segment();
    char err[256];
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", s->name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    tsim_seg *a = tsim_seg_attach(s->name, err, sizeof err);
    ck_assert_msg(a, "%s", err);
    ck_assert_int_eq(a->geom.nnodes, 2);
    tsim_seg_detach(a);
    tsim_seg_destroy(s);
    ck_assert_int_ne(stat(path, &st), 0);
}
END_TEST

START_TEST(segment_of_another_build)
{
    printf("params: a segment made by another build (an mpirun and a libmpi not built together) is "
           "not attached, and the error names both builds\n");
    tsim_seg *s = named_segment();
    char err[256];
    ck_assert_str_eq(s->build, tsim_build_id());
    ck_assert_uint_eq(strlen(tsim_build_id()), 16);
    char mine[TSIM_BUILD_ID_LEN];
    snprintf(mine, sizeof mine, "%s", s->build);
    s->build[0] = s->build[0] == '0' ? '1' : '0'; /* as another build's mpirun wrote it */
    ck_assert_ptr_null(tsim_seg_attach(s->name, err, sizeof err));
    ck_assert_msg(strstr(err, s->build) && strstr(err, mine) && strstr(err, "make mpich"), "%s", err);
    memcpy(s->build, mine, sizeof mine);
    tsim_seg *a = tsim_seg_attach(s->name, err, sizeof err);
    ck_assert_msg(a, "%s", err);
    tsim_seg_detach(a);
    tsim_seg_destroy(s);
}
END_TEST

Suite *params_suite(void)
{
    Suite *s = suite_create("params");
    UM_TCASE(s, "params", 0, defaults_are_bgl, set_and_reject, file_errors_name_line,
             segment_rejects_bad_sizes, named_segment_private, segment_of_another_build);
    return s;
}
