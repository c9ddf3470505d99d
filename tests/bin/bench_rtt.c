/* Wall-clock cost of a round trip between two processes through the engine:
 * two forked processes ping-pong one-packet messages over one torus hop
 * while the engine runs in the parent. Prints host µs per round trip and
 * the simulated cycles per round trip. Usage: bench_rtt [ROUND_TRIPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "packetlayer/pl.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void recv_one(pl_proc *pp)
{
    int f;
    while ((f = pl_poll(pp, TSIM_WAKE_REC_ALL)) < 0)
        if (pl_block(pp, TSIM_WAKE_REC_ALL, "ping") != 0) _exit(3);
    pl_consume(pp, f);
}

static void player(tsim_seg *seg, int me, int peer, int first, long n)
{
    pl_proc pp;
    pl_open(&pp, seg, me, 0);
    tsim_hwhdr hw;
    pl_header(&pp, &hw, peer, 8, 0);
    uint64_t v = 0;
    for (long i = 0; i < n; i++) {
        if (!first) recv_one(&pp);
        pl_inject_wait(&pp, 0, &hw, NULL, &v, sizeof v);
        if (first) recv_one(&pp);
    }
    pl_close(&pp, 0);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: bench_rtt [ROUND_TRIPS]\n"
               "Host cost of a round trip through the engine: two processes ping-pong\n"
               "one-packet messages over one torus hop (default 20000 round trips);\n"
               "prints host us and simulated cycles per round trip (make bench, section rtt).\n");
        return 0;
    }
    long n = argc > 1 ? atol(argv[1]) : 20000;
    if (argc > 2 || n <= 0) {
        fprintf(stderr, "bench_rtt: ROUND_TRIPS must be a positive number (bench_rtt --help)\n");
        return 2;
    }
    tsim_geom g = {{2, 1, 1}, {1, 1, 1}, 1, 0, 2};
    tsim_params p;
    tsim_params_default(&p);
    char err[256];
    tsim_seg *seg = tsim_seg_create(&g, &p, 0, err, sizeof err);
    if (!seg) {
        fprintf(stderr, "bench_rtt: %s\n", err);
        return 1;
    }
    int a = tsim_proc_index(0, 0), b = tsim_proc_index(1, 0);
    atomic_store(&seg->procs[a].state, TSIM_P_RUNNING);
    atomic_store(&seg->procs[b].state, TSIM_P_RUNNING);
    tsim_engine *e = tsim_engine_new(seg);
    double t0 = now_s();
    pid_t pa = fork();
    if (pa == 0) player(seg, a, b, 1, n);
    pid_t pb = fork();
    if (pb == 0) player(seg, b, a, 0, n);
    tsim_result r;
    int rc = tsim_engine_run(e, &r);
    waitpid(pa, NULL, 0);
    waitpid(pb, NULL, 0);
    double wall = now_s() - t0;
    printf("round trip through the engine (2 processes, 1 hop, 1-chunk packets): "
           "%.2f us host time, %llu simulated cycles per round trip (%ld round trips, rc %d)\n",
           wall / (double)n * 1e6, (unsigned long long)(r.end_time / (uint64_t)n), n, rc);
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
    return rc;
}
