/* Determinism: the same traffic gives byte-identical reports (the engine's
 * JSON: per processor, per link, result; plus the traffic tool's summary),
 * whether the host is idle or busy and whether the engine runs in the
 * caller's thread or its own. A different seed must change the bytes, which
 * shows the comparison can fail. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "machine.h"
#include "suite.h"

typedef struct report {
    char *buf;
    size_t len;
} report;

/* One run of a mixed, moderately loaded workload on a 4x4x4 torus. */
static report run_once(uint64_t seed, int threaded, int pattern)
{
    tsim_geom g = {{4, 4, 4}, {1, 1, 1}, 1, 0, 0};
    tsim_params prm;
    tsim_params_default(&prm);
    trf_cfg c;
    trf_cfg_default(&c);
    c.pattern = pattern;
    c.nprocs = 64;
    c.load = 0.9;
    c.arrivals = TRF_EXPONENTIAL;
    c.routing = TRF_MIXED;
    c.chunks = 0;
    c.packets = 150;
    c.seed = seed;
    c.consume_cycles = 50;
    c.consume_jitter = 300;
    um_traffic u = um_traffic_new(&g, &prm, &c);
    tsim_engine *e = u.e;
    tsim_result res;
    int rc;
    if (threaded) {
        ck_assert_int_eq(tsim_engine_start(e), 0);
        rc = tsim_engine_join(e, &res);
    } else {
        rc = tsim_engine_run(e, &res);
    }
    ck_assert_int_eq(rc, 0);
    report r = {0};
    FILE *f = open_memstream(&r.buf, &r.len);
    ck_assert_ptr_nonnull(f);
    tsim_engine_report_json(e, &res, f);
    trf_stats st;
    trf_get_stats(u.t, &st);
    ck_assert_int_eq(trf_ok(&st), 0);
    trf_print(u.t, &st, f);
    fclose(f);
    um_traffic_free(&u);
    return r;
}

static void assert_same(const report *a, const report *b)
{
    ck_assert_uint_gt(a->len, 1000);
    ck_assert_uint_eq(a->len, b->len);
    if (memcmp(a->buf, b->buf, a->len)) {
        size_t i = 0;
        while (a->buf[i] == b->buf[i]) i++;
        ck_abort_msg("reports differ at byte %zu: ...%.60s... vs ...%.60s...", i, a->buf + i,
                     b->buf + i);
    }
}

/* ---- host load -------------------------------------------------------- */
static atomic_int burning;
static void *burn(void *arg)
{
    volatile uint64_t x = (uint64_t)(uintptr_t)arg;
    while (atomic_load_explicit(&burning, memory_order_relaxed))
        for (int i = 0; i < 100000; i++) x = x * 6364136223846793005ull + 1;
    return NULL;
}

START_TEST(same_traffic_same_bytes)
{
    printf("determinism: two runs of the same mixed traffic (exponential arrivals, det+adaptive, "
           "1..8 chunks, jittery consumers) give byte-identical JSON and summary\n");
    report a = run_once(42, 0, TRF_UNIFORM), b = run_once(42, 0, TRF_UNIFORM);
    assert_same(&a, &b);
    free(a.buf);
    free(b.buf);
}
END_TEST

START_TEST(same_bytes_with_host_loaded)
{
    printf("determinism: identical bytes with the engine in its own thread while 3 threads and a "
           "child process burn CPU on the shared cores\n");
    report a = run_once(7, 0, TRF_HOTSPOT);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) { /* a separate process competing for the cores; it dies
                       * with the test even if an assertion ends the test early */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(120);
        volatile uint64_t x = 1;
        for (;;) x = x * 3 + 1;
    }
    pthread_t th[3];
    atomic_store(&burning, 1);
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, burn, (void *)(uintptr_t)(i + 1));
    report b = run_once(7, 1, TRF_HOTSPOT);
    atomic_store(&burning, 0);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_same(&a, &b);
    free(a.buf);
    free(b.buf);
}
END_TEST

START_TEST(different_seed_different_bytes)
{
    printf("determinism: a different seed changes the report (the comparison is sensitive)\n");
    report a = run_once(1, 0, TRF_UNIFORM), b = run_once(2, 0, TRF_UNIFORM);
    ck_assert(a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0);
    free(a.buf);
    free(b.buf);
}
END_TEST

Suite *determinism_suite(void)
{
    Suite *s = suite_create("determinism");
    UM_TCASE(s, "determinism", 120, same_traffic_same_bytes, same_bytes_with_host_loaded,
             different_seed_different_bytes);
    return s;
}
