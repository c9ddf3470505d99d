/* coll_alltoall_ml: alltoall in simulated time, per-pair sizes 1 B to 64 KiB,
 * as a fraction of the bisection bound: the packet-scheduled alltoall
 * (torus) against every rank sending a message to every other in rank
 * order (p2p, standing in for MPICH's default), on the message layer alone
 * (no MPICH; coll_alltoall is the MPI benchmark). Time = from the first
 * rank leaving a barrier to the last rank's completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_bench.h"
#include "collectives/coll_bounds.h"

#define MAXPP (1u << 20)

static const char *const algos[] = {"torus", "p2p"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-connect TORUS|MESH] [-mode CO|VN] coll_alltoall_ml\n"
            "           [--algo torus|p2p] [--min BYTES] [--max BYTES] [--step F]\n"
            "           [--order stagger|random|rank] [--window W] [--iters K]\n"
            "Alltoall time in simulated cycles for per-pair sizes min, min*F, ... max\n"
            "(default 1 B .. 64 KiB, F = 4), and its fraction of the bisection bound: the\n"
            "time the links across the tightest half cut need to carry the packets that\n"
            "must cross it (cut across the dimension where that time is largest).\n"
            "  torus  packet-scheduled alltoall: packets interleaved across destinations,\n"
            "         adaptive routing; --order sets each source's destination order\n"
            "         (default random: a per-source random permutation; stagger:\n"
            "         me+1, me+2, ...; rank: 0, 1, 2, ...)\n"
            "  p2p    every rank sends one message to every other rank in rank order, at\n"
            "         most W outstanding (--window, default 8; 0: all at once)\n"
            "Both when --algo is not given.\n"
            "Example: mpirun -np 64 -shape 4x4x4 coll_alltoall_ml\n");
}

static uint8_t byte_of(int src, int dst, size_t i, unsigned seed)
{
    return (uint8_t)(i * 131u + (unsigned)src * 7u + (unsigned)dst * 17u + seed + (i >> 8));
}

/* Link bound in cycles: minimal routing fixes how many hops each pair
 * makes in each dimension and direction (a tie on an even ring at best
 * half each way), so the busiest class of links (dimension, direction)
 * carries at least its share even with perfect adaptive spreading. */
static double link_bound(const tsim_geom *g, const tsim_params *p, int nranks, size_t m)
{
    double hops[3][2] = {{0}}, per_node = (double)nranks / g->nnodes, best = 0;
    for (int a = 0; a < g->nnodes; a++) {
        int ca[3], cb[3];
        tsim_coords(g, a, ca);
        for (int b = 0; b < g->nnodes; b++) {
            tsim_coords(g, b, cb);
            for (int d = 0; d < 3; d++) {
                int dd = tsim_delta(ca[d], cb[d], g->dim[d], g->torus[d]);
                if (g->torus[d] && 2 * dd == g->dim[d]) {
                    hops[d][0] += dd / 2.0;
                    hops[d][1] += dd / 2.0;
                } else {
                    hops[d][dd < 0] += dd < 0 ? -dd : dd;
                }
            }
        }
    }
    for (int d = 0; d < 3; d++) {
        int n = g->dim[d];
        if (n < 2) continue;
        double links = g->torus[d] ? g->nnodes : (double)g->nnodes / n * (n - 1);
        for (int s = 0; s < 2; s++) {
            double t = hops[d][s] * per_node * per_node * coll_wire_cycles(p, m) / links;
            if (t > best) best = t;
        }
    }
    return best;
}

typedef struct opts {
    int algo, order, window;
} opts;

static int own(const char *a, const char *v, void *arg)
{
    opts *o = arg;
    if (!strcmp(a, "--algo")) {
        o->algo = !strcmp(v, "torus") ? 0 : !strcmp(v, "p2p") ? 1 : -2;
        if (o->algo >= 0) return 1;
        fprintf(stderr, "coll_alltoall_ml: unknown algorithm '%s' (torus or p2p)\n", v);
        return -1;
    }
    if (!strcmp(a, "--order")) {
        o->order = !strcmp(v, "stagger") ? COLL_A2A_STAGGER
                   : !strcmp(v, "random") ? COLL_A2A_RANDOM
                   : !strcmp(v, "rank")   ? COLL_A2A_RANKORDER : -1;
        if (o->order >= 0) return 1;
        fprintf(stderr, "coll_alltoall_ml: unknown order '%s' (stagger, random or rank)\n", v);
        return -1;
    }
    if (strcmp(a, "--window")) return 0;
    o->window = atoi(v);
    return 1;
}

int main(int argc, char **argv)
{
    opts o = {-1, COLL_A2A_RANDOM, 8};
    cb_sweep sw = {1, 64u << 10, 4, MAXPP, 1};
    int st = cb_options(argc, argv, "coll_alltoall_ml", usage, &sw, own, &o);
    if (st >= 0) return st;
    int algo = o.algo;
    coll_upcall_arg ua = {0};
    ml_ctx *ml;
    coll_ctx *c = coll_open_env("coll_alltoall_ml", &ua, &ml);
    if (!c) return 1;
    coll_set_a2a_order(c, o.order);
    coll_set_p2p_window(c, o.window);
    int me = ml_rank(ml), n = ml_nranks(ml), rc = 0;
    pl_proc *pp = ml_proc(ml);
    const tsim_params *prm = &pp->seg->params;
    const tsim_geom *g = &pp->seg->geom;
    double mhz = (double)prm->clock_mhz;
    uint8_t *sbuf = malloc((size_t)n * sw.max), *rbuf = malloc((size_t)n * sw.max);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "coll_alltoall_ml: out of memory (%zu bytes per buffer)\n", (size_t)n * sw.max);
        return 1;
    }
    if (me == 0) {
        printf("# coll_alltoall_ml: %d ranks on a %dx%dx%d %s, %s mode\n", n, g->dim[0], g->dim[1],
               g->dim[2], g->torus[0] ? "torus" : "mesh", g->cpus == 2 ? "VN" : "CO");
        printf("# bisection: the cut bound; links: the busiest (dimension, direction) class of\n"
               "# links under minimal routing (ties on even rings split); fraction = bound / cycles\n");
        printf("%-6s %8s %12s %12s %9s %12s %9s %10s\n", "algo", "bytes", "cycles", "bisection",
               "fraction", "links", "fraction", "MB/s/rank");
    }
    unsigned seed = 1;
    for (int k = 0; k < 2 && !rc; k++) {
        if (algo >= 0 && algo != k) continue;
        for (size_t m = sw.min; m && !rc; m = cb_next(&sw, m)) {
            uint64_t worst = 0;
            for (int it = 0; it < sw.iters && !rc; it++, seed++) {
                for (int d = 0; d < n; d++)
                    for (size_t i = 0; i < m; i++) sbuf[(size_t)d * m + i] = byte_of(me, d, i, seed);
                memset(rbuf, 0, (size_t)n * m);
                rc |= cb_barrier(c);
                uint64_t t0 = pl_now(pp);
                rc |= k == 0 ? coll_alltoall(c, sbuf, rbuf, m) : coll_alltoall_p2p(c, sbuf, rbuf, m);
                uint64_t t1 = pl_now(pp);
                int bad = 0;
                for (int s = 0; s < n && !bad; s++)
                    for (size_t i = 0; i < m; i++)
                        if (rbuf[(size_t)s * m + i] != byte_of(s, me, i, seed)) {
                            fprintf(stderr, "coll_alltoall_ml: rank %d: %s %zu bytes: wrong data from %d\n",
                                    me, algos[k], m, s);
                            bad = 1;
                            break;
                        }
                uint64_t dt = cb_span(c, t0, t1, bad, &rc);
                if (dt > worst) worst = dt;
            }
            if (me == 0 && !rc) {
                double bound = coll_bisection_cycles(g, prm, n, m), lb = link_bound(g, prm, n, m);
                printf("%-6s %8zu %12llu %12.0f %9.3f %12.0f %9.3f %10.2f\n", algos[k], m,
                       (unsigned long long)worst, bound, bound / (double)worst, lb,
                       lb / (double)worst, (double)m * (n - 1) * mhz / (double)worst);
                fflush(stdout);
            }
        }
    }
    free(sbuf);
    free(rbuf);
    coll_finalize(c);
    ml_finalize(ml);
    return rc ? 1 : 0;
}
