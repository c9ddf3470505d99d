/* A 3-D halo exchange: every rank posts its six receives and six sends
 * (MPI_Irecv / MPI_Isend to its torus neighbours), waits for all twelve,
 * then checks every received byte. Rendezvous-sized faces arrive from
 * several links at once, which keeps a CO rank's coprocessor reading data
 * packets back to back: programs.sh checks that the engine reads them for
 * it (BGLEMU_PROXY_STATS) with the same report as without its help.
 *   halo [--iters N] [DOUBLES]     (default 3 iterations of 4096 doubles a face)
 * Faces start on 64-byte boundaries, so the simulated result does not
 * depend on the heap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static double value(int from, int face, int it, long i) { return from * 1e6 + face * 1e5 + it * 1e4 + (double)i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long len = 4096, iters = 3;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = parse_size(argv[++a]);
        else len = parse_size(argv[a]);
    }
    if (len < 1 || len > (1L << 24) || iters < 1) {
        if (!rank) fprintf(stderr, "halo: usage: mpirun -np N halo [--iters N] [DOUBLES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Dims_create(n, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    size_t face = ((size_t)len * sizeof(double) + 63) / 64 * 64;
    char *sbuf = aligned_alloc(64, 6 * face), *rbuf = aligned_alloc(64, 6 * face);
    long bad = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request rq[12];
        int m = 0, from[6];
        for (int d = 0; d < 3; d++) {
            int lo, hi;
            MPI_Cart_shift(cart, d, 1, &lo, &hi);
            from[2 * d] = lo; /* face 2d comes from below, 2d+1 from above */
            from[2 * d + 1] = hi;
            double *up = (double *)(sbuf + (2 * d) * face), *down = (double *)(sbuf + (2 * d + 1) * face);
            for (long i = 0; i < len; i++) up[i] = value(rank, 2 * d, it, i), down[i] = value(rank, 2 * d + 1, it, i);
            MPI_Irecv(rbuf + (2 * d) * face, (int)len, MPI_DOUBLE, lo, d, cart, &rq[m++]);
            MPI_Irecv(rbuf + (2 * d + 1) * face, (int)len, MPI_DOUBLE, hi, d + 3, cart, &rq[m++]);
            MPI_Isend(up, (int)len, MPI_DOUBLE, hi, d, cart, &rq[m++]);
            MPI_Isend(down, (int)len, MPI_DOUBLE, lo, d + 3, cart, &rq[m++]);
        }
        MPI_Status st[12]; /* not MPI_STATUSES_IGNORE: gcc 12 takes it for an empty array */
        MPI_Waitall(m, rq, st);
        for (int f = 0; f < 6; f++) {
            const double *r = (const double *)(rbuf + f * face);
            for (long i = 0; i < len; i++) bad += r[i] != value(from[f], f, it, i);
        }
    }
    CHECK(bad == 0, "halo: %ld x 6 faces of %ld doubles from the torus neighbours intact (%ld wrong)",
          iters, len, bad);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&cart);
    return mc_finish();
}
