/* coll_alltoall: MPI_Alltoall in simulated time as a fraction of the
 * bisection bound, MPICH's default algorithm against the netmod's
 * packet-scheduled alltoall, chosen per call through BGLMPI_ALLTOALL. */
#include "coll_bench.h"

#define MAXPP (1u << 20)

static const char *const algos[] = {"mpich", "torus"};
enum { NALGO = 2 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-connect TORUS|MESH] [-mode CO|VN] coll_alltoall\n"
            "           [--algo mpich|torus] [--min BYTES] [--max BYTES] [--step F] [--iters K]\n"
            "MPI_Alltoall on MPI_COMM_WORLD in simulated time for per-pair sizes min,\n"
            "min*F, ... max (default 1 B .. 64 KiB, F = 4; K and M suffixes):\n"
            "  mpich  MPICH's default algorithm (Bruck, isend/irecv, pairwise exchange)\n"
            "  torus  packet-scheduled alltoall: every rank injects its own packets,\n"
            "         interleaved across destinations, adaptively routed\n"
            "Both when --algo is not given. Prints cycles (first rank leaving a barrier to\n"
            "the last rank done; the slowest of K iterations), the bisection bound (the\n"
            "time the links across the tightest half cut need for the packets that must\n"
            "cross it), the fraction bound/cycles, and each rank's receive bandwidth.\n"
            "Every rank checks its data. Example (the table of docs/collectives.md):\n"
            "  mpirun -np 64 -shape 4x4x4 -clock none coll_alltoall\n");
}

static unsigned char byte_of(int src, int dst, size_t i, unsigned seed)
{
    return (unsigned char)(i * 131u + (unsigned)src * 7u + (unsigned)dst * 17u + seed + (i >> 8));
}

int main(int argc, char **argv)
{
    /* options first: --help and errors need no MPI job */
    cb_opts o = {.prog = "coll_alltoall", .algos = algos, .nalgo = NALGO, .algo = -1, .min = 1,
                 .max = 64u << 10, .step = 4, .maxsize = MAXPP, .iters = 1, .root = -1};
    int prc = cb_parse(&o, argc, argv, usage);
    if (prc) return prc == 1 ? 0 : prc;
    const int algo = o.algo, iters = o.iters;
    const size_t min = o.min, max = o.max, step = o.step;

    int me, n;
    tsim_geom g;
    tsim_params prm;
    cb_start("coll_alltoall", &argc, &argv, &me, &n, &g, &prm);
    unsigned char *sbuf = malloc((size_t)n * max), *rbuf = malloc((size_t)n * max);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "coll_alltoall: out of memory (%zu bytes per buffer)\n", (size_t)n * max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double hz = (double)prm.clock_mhz * 1e6;
    if (!me) {
        printf("# coll_alltoall: MPI_Alltoall, %d ranks on a %dx%dx%d %s, %s mode\n", n, g.dim[0],
               g.dim[1], g.dim[2], g.torus[0] ? "torus" : "mesh", g.cpus == 2 ? "VN" : "CO");
        printf("%-6s %8s %12s %12s %9s %10s\n", "algo", "bytes", "cycles", "bisection", "fraction",
               "MB/s/rank");
    }
    int failed = 0;
    unsigned seed = 1;
    for (int k = 0; k < NALGO && !failed; k++) {
        if (algo >= 0 && algo != k) continue;
        setenv("BGLMPI_ALLTOALL", algos[k], 1);
        for (size_t m = min; !failed; m = cb_next_size(m, step, max)) {
            double worst = 0;
            for (int it = 0; it < iters && !failed; it++, seed++) {
                for (int d = 0; d < n; d++)
                    for (size_t i = 0; i < m; i++) sbuf[(size_t)d * m + i] = byte_of(me, d, i, seed);
                memset(rbuf, 0, (size_t)n * m);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD);
                double t1 = MPI_Wtime();
                int bad = 0;
                for (int s = 0; s < n && !bad; s++)
                    for (size_t i = 0; i < m && !bad; i++)
                        if (rbuf[(size_t)s * m + i] != byte_of(s, me, i, seed)) {
                            fprintf(stderr, "coll_alltoall: rank %d: %s %zu bytes: wrong data from %d\n",
                                    me, algos[k], m, s);
                            bad = 1;
                        }
                failed = cb_any(bad, MPI_COMM_WORLD);
                double t = cb_span(t0, t1, MPI_COMM_WORLD);
                if (t > worst) worst = t;
            }
            if (!me && !failed) {
                double cycles = worst * hz, bound = coll_bisection_cycles(&g, &prm, n, m);
                printf("%-6s %8zu %12.0f %12.0f %9.3f %10.2f\n", algos[k], m, cycles, bound,
                       bound / cycles, (double)m * (n - 1) / worst / 1e6);
                fflush(stdout);
            }
            if (m >= max) break;
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return failed;
}
