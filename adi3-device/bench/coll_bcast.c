/* coll_bcast: MPI_Bcast bandwidth in simulated time, MPICH's default
 * algorithm against the netmod's deposit-bit broadcast with one route
 * (torus1) or three (torus3), chosen per call through BGLMPI_BCAST. */
#include "coll_bench.h"

#define MAXSZ (64u << 20)

static const char *const algos[] = {"mpich", "torus1", "torus3"};
enum { NALGO = 3 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-connect TORUS|MESH] [-mode CO|VN] coll_bcast\n"
            "           [--algo mpich|torus1|torus3] [--min BYTES] [--max BYTES] [--step F]\n"
            "           [--root R] [--iters K]\n"
            "MPI_Bcast on MPI_COMM_WORLD in simulated time for sizes min, min*F, ... max\n"
            "(default 1 B .. 4 MiB, F = 4; K and M suffixes), root R (default 0):\n"
            "  mpich   MPICH's default algorithm (binomial tree, scatter + allgather)\n"
            "  torus1  deposit-bit broadcast along one dimension-ordered tree\n"
            "  torus3  the message split over up to three edge-disjoint trees\n"
            "All three when --algo is not given. Prints cycles (first rank leaving a barrier\n"
            "to the last rank done; the slowest of K iterations), MB/s at the machine's clock\n"
            "and links' worth of payload (one link: 0.25 x 240/270 B/cycle). Every rank\n"
            "checks its data. Example (the table of docs/collectives.md):\n"
            "  mpirun -np 32 -shape 4x4x2 -connect MESH -clock none coll_bcast\n");
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 9));
}

int main(int argc, char **argv)
{
    /* options first: --help and errors need no MPI job */
    cb_opts o = {.prog = "coll_bcast", .algos = algos, .nalgo = NALGO, .algo = -1, .min = 1,
                 .max = 4u << 20, .step = 4, .maxsize = MAXSZ, .iters = 1, .root = 0};
    int prc = cb_parse(&o, argc, argv, usage);
    if (prc) return prc == 1 ? 0 : prc;
    const int algo = o.algo, iters = o.iters, root = o.root;
    const size_t min = o.min, max = o.max, step = o.step;

    int me, n;
    tsim_geom g;
    tsim_params prm;
    cb_start("coll_bcast", &argc, &argv, &me, &n, &g, &prm);
    if (root >= n) {
        if (!me) fprintf(stderr, "coll_bcast: --root must be 0..%d\n", n - 1);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc(max), *ref = malloc(max);
    if (!buf || !ref) {
        fprintf(stderr, "coll_bcast: out of memory (%zu bytes)\n", max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double hz = (double)prm.clock_mhz * 1e6, link = coll_link_bytes_per_cycle(&prm);
    if (!me) {
        printf("# coll_bcast: MPI_Bcast, %d ranks on a %dx%dx%d %s, %s mode, root %d\n", n,
               g.dim[0], g.dim[1], g.dim[2], g.torus[0] ? "torus" : "mesh",
               g.cpus == 2 ? "VN" : "CO", root);
        printf("%-7s %10s %12s %10s %7s\n", "algo", "bytes", "cycles", "MB/s", "links");
    }
    int failed = 0;
    unsigned seed = 1;
    for (int k = 0; k < NALGO && !failed; k++) {
        if (algo >= 0 && algo != k) continue;
        setenv("BGLMPI_BCAST", algos[k], 1);
        for (size_t size = min; !failed; size = cb_next_size(size, step, max)) {
            double worst = 0;
            for (int it = 0; it < iters && !failed; it++, seed++) {
                if (me == root) fill(buf, size, seed);
                else memset(buf, 0, size);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                MPI_Bcast(buf, (int)size, MPI_BYTE, root, MPI_COMM_WORLD);
                double t1 = MPI_Wtime();
                fill(ref, size, seed);
                int bad = memcmp(buf, ref, size) != 0;
                if (bad) fprintf(stderr, "coll_bcast: rank %d: %s %zu bytes: wrong data\n", me, algos[k], size);
                failed = cb_any(bad, MPI_COMM_WORLD);
                double t = cb_span(t0, t1, MPI_COMM_WORLD);
                if (t > worst) worst = t;
            }
            if (!me && !failed) {
                double cycles = worst * hz, bpc = (double)size / cycles;
                printf("%-7s %10zu %12.0f %10.2f %7.2f\n", algos[k], size, cycles, bpc * prm.clock_mhz,
                       bpc / link);
                fflush(stdout);
            }
            if (size >= max) break;
        }
    }
    free(buf);
    free(ref);
    MPI_Finalize();
    return failed;
}
