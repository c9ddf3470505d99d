/* ml_multilink: rank 0 exchanges messages with k = 1..6 torus neighbours at
 * once (each neighbour sends the same amount back), per protocol; prints the
 * aggregate bandwidth rank 0 sees in simulated MB/s. Run it in CO mode and
 * with -env BGLEMU_MODE=HEATER to compare with and without the coprocessor.
 * Needs a shape whose dimensions are at least 3 (e.g. -np 27 -shape 3x3x3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ml_exchange.h"

/* Ranks of rank 0's six neighbours in port order x+ x- y+ y- z+ z-. */
static int neighbours(ml_ctx *ml, int nb[6])
{
    const ml_map *m = ml_get_map(ml);
    const tsim_geom *g = &ml_proc(ml)->seg->geom;
    int node0 = m->proc[0] / TSIM_CPUS, n = 0;
    for (int port = 0; port < TSIM_NPORTS; port++) {
        int node = tsim_neighbor(g, node0, port);
        int r = node < 0 ? -1 : m->rank[tsim_proc_index(node, 0)];
        for (int j = 0; j < n; j++)
            if (nb[j] == r) r = -1; /* a 2-wide ring reaches one node twice */
        if (r > 0) nb[n++] = r;
    }
    return n;
}

int main(int argc, char **argv)
{
    size_t size = 65536;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: mpirun -np 27 -shape 3x3x3 [-env BGLEMU_MODE=HEATER] ml_multilink "
                   "[--size BYTES]\nRank 0 exchanges BYTES (default 65536) with k = 1..6 "
                   "neighbours at once, per protocol.\n");
            return 0;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            size = strtoul(argv[++i], NULL, 0);
        } else {
            fprintf(stderr, "ml_multilink: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    ml_bench b;
    ml_bench_init(&b, size);
    char err[256];
    ml_ctx *ml = ml_init_env(ml_bench_upcall(), &b, err, sizeof err);
    if (!ml) {
        fprintf(stderr, "ml_multilink: %s\n", err);
        return 1;
    }
    int nb[6], n = neighbours(ml, nb), me = ml_rank(ml), rc = 0;
    int mine = 0; /* am I rank 0's k-th neighbour? */
    for (int j = 0; j < n; j++)
        if (nb[j] == me) mine = j + 1;
    pl_proc *pp = ml_proc(ml);
    double mhz = (double)pp->seg->params.clock_mhz;
    if (me == 0)
        printf("%-15s %2s %12s %10s  (%zu bytes each way per neighbour, %s)\n", "protocol", "k",
               "cycles", "MB/s", size, ml_coproc_running(ml) ? "coprocessor on" : "no coprocessor");
    const ml_proto protos[] = {ML_EAGER, ML_ADAPTIVE, ML_RZV};
    for (int pi = 0; pi < 3 && !rc; pi++) {
        ml_proto p = protos[pi];
        if (p != ML_RZV && size > 65536) continue;
        for (int k = 1; k <= n && !rc; k++) {
            int peers = me == 0 ? k : (mine && mine <= k);
            uint64_t t0 = pl_now(pp);
            if (ml_exchange(ml, &b, me == 0 ? nb : NULL, 0, peers, p, &size, peers, "ml_multilink") != 0) rc = 1;
            uint64_t dt = pl_now(pp) - t0;
            if (me == 0)
                printf("%-15s %2d %12llu %10.2f\n", ml_proto_name(p), k, (unsigned long long)dt,
                       2.0 * k * (double)size * mhz / (double)dt);
            /* a barrier through rank 0 keeps the rounds apart */
            if (me == 0)
                for (int r = 1; r < ml_nranks(ml); r++) rc |= ml_bench_send(ml, &b, r, ML_ONEPKT, 0);
            else
                rc |= ml_bench_recv(ml, &b, 1);
        }
    }
    ml_finalize(ml);
    ml_bench_free(&b);
    return rc ? 1 : 0;
}
