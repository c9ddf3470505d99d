/* coll_bcast_ml: broadcast bandwidth in simulated time, 1 B to 4 MiB: the
 * deposit-bit broadcast with one route (torus1) or three (torus3) against a
 * binomial tree of message-layer sends (p2p, standing in for MPICH's
 * default), on the message layer alone (no MPICH; coll_bcast is the MPI
 * benchmark). Time of one broadcast = from the root's start (everyone
 * leaves a barrier first) to the last rank's completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_bench.h"
#include "collectives/coll_bounds.h"

#define MAXSZ (64u << 20)

static const char *const algos[] = {"torus1", "torus3", "p2p"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-connect TORUS|MESH] [-mode CO|VN] coll_bcast_ml\n"
            "           [--algo torus1|torus3|p2p] [--min BYTES] [--max BYTES] [--root R]\n"
            "           [--iters K] [--step F]\n"
            "Broadcast bandwidth in simulated time (MB/s at the machine's clock) for sizes\n"
            "min, min*F, ... up to max (default 1 B .. 4 MiB, F = 4), root R (default 0).\n"
            "  torus1  deposit-bit broadcast along one dimension-ordered tree\n"
            "  torus3  the message split over up to three edge-disjoint trees\n"
            "  p2p     binomial tree of message-layer sends (MPICH's default algorithm)\n"
            "All three when --algo is not given. Also prints the bandwidth in links'\n"
            "worth of payload (one link carries 0.25 x 240/270 B/cycle of payload).\n"
            "Example: mpirun -np 32 -shape 4x4x2 -connect MESH coll_bcast_ml\n");
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 9));
}

typedef struct opts {
    int algo, root;
} opts;

static int own(const char *a, const char *v, void *arg)
{
    opts *o = arg;
    if (!strcmp(a, "--root")) {
        o->root = atoi(v);
        return 1;
    }
    if (strcmp(a, "--algo")) return 0;
    o->algo = -1;
    for (int k = 0; k < 3; k++)
        if (!strcmp(v, algos[k])) o->algo = k;
    if (o->algo >= 0) return 1;
    fprintf(stderr, "coll_bcast_ml: unknown algorithm '%s' (torus1, torus3 or p2p)\n", v);
    return -1;
}

int main(int argc, char **argv)
{
    opts o = {-1, 0};
    cb_sweep sw = {1, 4u << 20, 4, MAXSZ, 1};
    int st = cb_options(argc, argv, "coll_bcast_ml", usage, &sw, own, &o);
    if (st >= 0) return st;
    int algo = o.algo, root = o.root;
    coll_upcall_arg ua = {0};
    ml_ctx *ml;
    coll_ctx *c = coll_open_env("coll_bcast_ml", &ua, &ml);
    if (!c) return 1;
    int me = ml_rank(ml), n = ml_nranks(ml), rc = 0;
    if (root < 0 || root >= n) {
        if (me == 0) fprintf(stderr, "coll_bcast_ml: --root must be 0..%d\n", n - 1);
        coll_finalize(c);
        ml_finalize(ml);
        return 2;
    }
    pl_proc *pp = ml_proc(ml);
    const tsim_params *prm = &pp->seg->params;
    const tsim_geom *g = &pp->seg->geom;
    double mhz = (double)prm->clock_mhz;
    double link = coll_link_bytes_per_cycle(prm);
    uint8_t *buf = malloc(sw.max), *ref = malloc(sw.max);
    if (!buf || !ref) {
        fprintf(stderr, "coll_bcast_ml: out of memory\n");
        return 1;
    }
    if (me == 0) {
        printf("# coll_bcast_ml: %d ranks on a %dx%dx%d %s, %s mode, root %d%s\n", n, g->dim[0],
               g->dim[1], g->dim[2], g->torus[0] ? "torus" : "mesh",
               g->cpus == 2 ? "VN" : "CO", root,
               coll_hw_ok(c) ? "" : " (machine not fully populated: torus algorithms fall back to p2p)");
        printf("%-7s %10s %12s %10s %7s\n", "algo", "bytes", "cycles", "MB/s", "links");
    }
    unsigned seed = 1;
    for (int k = 0; k < 3 && !rc; k++) {
        if (algo >= 0 && algo != k) continue;
        for (size_t size = sw.min; size && !rc; size = cb_next(&sw, size)) {
            uint64_t worst = 0;
            for (int it = 0; it < sw.iters && !rc; it++, seed++) {
                if (me == root) fill(buf, size, seed);
                else memset(buf, 0, size);
                rc |= cb_barrier(c);
                uint64_t t0 = pl_now(pp);
                if (k == 2) rc |= coll_bcast_p2p(c, buf, size, root);
                else rc |= coll_bcast(c, buf, size, root, k == 0 ? 1 : 3);
                uint64_t t1 = pl_now(pp);
                fill(ref, size, seed);
                int bad = memcmp(buf, ref, size) != 0;
                if (bad)
                    fprintf(stderr, "coll_bcast_ml: rank %d: %s %zu bytes: wrong data\n", me, algos[k],
                            size);
                uint64_t dt = cb_span(c, t0, t1, bad, &rc);
                if (dt > worst) worst = dt;
            }
            if (me == 0 && !rc) {
                double bps = (double)size / (double)worst; /* bytes per cycle */
                printf("%-7s %10zu %12llu %10.2f %7.2f\n", algos[k], size,
                       (unsigned long long)worst, bps * mhz, bps / link);
                fflush(stdout);
            }
        }
    }
    free(buf);
    free(ref);
    coll_finalize(c);
    ml_finalize(ml);
    return rc ? 1 : 0;
}
