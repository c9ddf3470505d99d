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

static int bad_option(const char *fmt, const char *v)
{
    fprintf(stderr, "coll_bcast: ");
    fprintf(stderr, fmt, v);
    fprintf(stderr, "; see --help\n");
    return 2;
}

int main(int argc, char **argv)
{
    int algo = -1, root = 0, iters = 1;
    size_t min = 1, max = 4u << 20, step = 4;
    /* options first: --help and errors need no MPI job */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) return bad_option("unknown option or missing value '%s'", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--algo")) {
            algo = -1;
            for (int k = 0; k < NALGO; k++)
                if (!strcmp(v, algos[k])) algo = k;
            if (algo < 0) return bad_option("unknown algorithm '%s' (mpich, torus1 or torus3)", v);
        } else if (!strcmp(a, "--min") || !strcmp(a, "--max")) {
            size_t s;
            if (cb_parse_size(v, &s) != 0 || s < 1 || s > MAXSZ)
                return bad_option("sizes must be 1 B..64 MiB, not '%s'", v);
            *(!strcmp(a, "--min") ? &min : &max) = s;
        } else if (!strcmp(a, "--step")) {
            if (cb_parse_size(v, &step) != 0 || step < 2)
                return bad_option("--step must be >= 2, not '%s'", v);
        } else if (!strcmp(a, "--root")) {
            char *e;
            root = (int)strtol(v, &e, 10);
            if (*e || e == v || root < 0) return bad_option("--root must be a rank, not '%s'", v);
        } else if (!strcmp(a, "--iters")) {
            iters = atoi(v);
            if (iters < 1) return bad_option("--iters must be >= 1, not '%s'", v);
        } else {
            return bad_option("unknown option '%s'", a);
        }
    }
    if (min > max) return bad_option("--min is larger than --max%s", "");

    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    tsim_geom g;
    tsim_params prm;
    if (cb_machine("coll_bcast", &g, &prm) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    if (root >= n) {
        if (!me) fprintf(stderr, "coll_bcast: --root must be 0..%d\n", n - 1);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc(max), *ref = malloc(max);
    if (!buf || !ref) {
        fprintf(stderr, "coll_bcast: out of memory (%zu bytes)\n", max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double hz = (double)prm.clock_mhz * 1e6, link = cb_link_bytes_per_cycle(&prm);
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
