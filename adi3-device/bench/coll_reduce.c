/* coll_reduce: MPI_Barrier, MPI_Allreduce and MPI_Bcast on the collective
 * network and the global interrupt against MPICH's algorithms over the
 * torus (and torus3 for the broadcast), chosen per call through
 * BGLMPI_BARRIER, BGLMPI_ALLREDUCE and BGLMPI_BCAST, in simulated time:
 * from a global-interrupt barrier everyone leaves at the same cycle to the
 * last rank's end. Results are checked. */
#include <math.h>

#include "coll_bench.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N [-shape XxYxZ] [-mode CO|VN] -clock none coll_reduce [--min BYTES]\n"
            "           [--max BYTES] [--step F]\n"
            "MPI_Barrier (gi vs mpich), MPI_Allreduce of MPI_INT and MPI_DOUBLE sums (tree vs\n"
            "mpich) and MPI_Bcast (tree vs torus3 vs mpich) for sizes min, min*F, ... max\n"
            "(default 8 B .. 64 KiB, F = 8), in simulated microseconds and MB/s.\n"
            "Example: mpirun -np 64 -shape 4x4x4 -clock none coll_reduce\n");
}

static int me, n;
static double mhz;

static void sync_start(double *t0)
{
    setenv("BGLMPI_BARRIER", "gi", 1);
    MPI_Barrier(MPI_COMM_WORLD);
    *t0 = MPI_Wtime();
}

static void report(const char *what, const char *algo, const char *type, size_t bytes, double t0,
                   int bad)
{
    double t1 = MPI_Wtime(), span = cb_span(t0, t1, MPI_COMM_WORLD);
    if (cb_any(bad, MPI_COMM_WORLD)) {
        if (!me) fprintf(stderr, "coll_reduce: %s %s %s %zu bytes: wrong result\n", what, algo, type, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!me) {
        double us = span * 1e6;
        printf("%-9s %-6s %-6s %9zu %11.0f %10.2f %9.2f\n", what, algo, type, bytes, span * mhz * 1e6,
               us, bytes ? (double)bytes / us : 0.0);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    static const char *const none[] = {"-"};
    cb_opts o = {.prog = "coll_reduce", .algos = none, .nalgo = 1, .algo = -1, .min = 8,
                 .max = 64 << 10, .step = 8, .maxsize = 16u << 20, .iters = 1, .root = -1};
    tsim_geom geom;
    tsim_params prm;
    cb_start("coll_reduce", &argc, &argv, &me, &n, &geom, &prm);
    int rc = cb_parse(&o, argc, argv, usage);
    if (rc) {
        MPI_Finalize();
        return rc == 1 ? 0 : rc;
    }
    mhz = (double)prm.clock_mhz;
    if (!me) {
        printf("# coll_reduce: %d ranks on a %dx%dx%d, %s mode\n", n, geom.dim[0], geom.dim[1],
               geom.dim[2], geom.cpus == 2 ? "VN" : "CO");
        printf("%-9s %-6s %-6s %9s %11s %10s %9s\n", "what", "algo", "type", "bytes", "cycles", "us",
               "MB/s");
    }
    double t0;
    for (int k = 0; k < 2; k++) {
        const char *a = k ? "mpich" : "gi";
        sync_start(&t0);
        setenv("BGLMPI_BARRIER", a, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        report("barrier", a, "-", 0, t0, 0);
    }
    size_t maxn = o.max / 4 + 1;
    int *iv = malloc(maxn * sizeof *iv);
    double *dv = malloc(maxn * sizeof *dv), *dr = malloc(maxn * sizeof *dr);
    char *buf = malloc(o.max);
    for (size_t size = o.min; size <= o.max; size = size * o.step > o.max && size < o.max ? o.max : size * o.step) {
        size_t ni = size / 4 ? size / 4 : 1, nd = size / 8 ? size / 8 : 1;
        for (int k = 0; k < 2; k++) {
            const char *a = k ? "mpich" : "tree";
            for (size_t i = 0; i < ni; i++) iv[i] = (int)i - me;
            sync_start(&t0);
            setenv("BGLMPI_ALLREDUCE", a, 1);
            MPI_Allreduce(MPI_IN_PLACE, iv, (int)ni, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            int bad = 0;
            for (size_t i = 0; i < ni; i++) bad |= iv[i] != (int)i * n - n * (n - 1) / 2;
            report("allreduce", a, "int", ni * 4, t0, bad);
            for (size_t i = 0; i < nd; i++) dv[i] = ldexp(1.0 + 0.001 * me, (int)(i % 64) - 32);
            sync_start(&t0);
            MPI_Allreduce(dv, dr, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double w = 0;
            for (int r = 0; r < n; r++) w += ldexp(1.0 + 0.001 * r, -32);
            report("allreduce", a, "double", nd * 8, t0, fabs(dr[0] - w) > 1e-14 * w);
        }
        for (int k = 0; k < 3; k++) {
            const char *a = k == 0 ? "tree" : k == 1 ? "torus3" : "mpich";
            for (size_t i = 0; i < size; i++) buf[i] = me == 0 ? (char)(i * 131 + (size_t)k) : 0;
            sync_start(&t0);
            setenv("BGLMPI_BCAST", a, 1);
            MPI_Bcast(buf, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
            int bad = 0;
            for (size_t i = 0; i < size; i++) bad |= buf[i] != (char)(i * 131 + (size_t)k);
            report("bcast", a, "byte", size, t0, bad);
        }
        if (size == o.max) break;
    }
    setenv("BGLMPI_ALLREDUCE", "mpich", 1);
    setenv("BGLMPI_BCAST", "torus3", 1);
    setenv("BGLMPI_BARRIER", "mpich", 1);
    free(iv);
    free(dv);
    free(dr);
    free(buf);
    MPI_Finalize();
    return 0;
}
