/* Traffic with a shape a mapping can exploit, or cannot (docs/mapping.md):
 *   commpattern pairs [BYTES] [ITERS]     a few heavy pairs: ranks are paired
 *       at random (a fixed perfect matching, the same every run) and swap
 *       BYTES each iteration; every rank also sends BYTES/16 to its ring
 *       neighbours r +- 1. XYZT scatters the pairs over the torus; a mapping
 *       built from the traffic puts each pair side by side.
 *   commpattern alltoall [BYTES] [ITERS]  MPI_Alltoall of BYTES a pair: every
 *       pair talks equally, so no placement is much better than another.
 * Defaults 16K and 10 iterations. Every byte received is checked. */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

/* A fixed perfect matching of n ranks (n even): Fisher-Yates with a fixed
 * LCG, then neighbours in the shuffled order pair up. */
static int partner_of(int rank, int n)
{
    int *perm = malloc(sizeof *perm * (size_t)n), who = -1;
    uint32_t s = 12345;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        s = s * 1103515245u + 12345u;
        int j = (int)((s >> 8) % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < n; i++)
        if (perm[i] == rank) who = perm[i ^ 1];
    free(perm);
    return who;
}

static unsigned char fill(int from, int to, int it) { return (unsigned char)(from * 7 + to * 13 + it); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *what = argc > 1 ? argv[1] : "";
    long bytes = argc > 2 ? parse_size(argv[2]) : 16384, iters = argc > 3 ? parse_size(argv[3]) : 10;
    int pairs = !strcmp(what, "pairs"), a2a = !strcmp(what, "alltoall");
    if ((!pairs && !a2a) || bytes < 16 || bytes > (1L << 24) || iters < 1 || (pairs && n % 2)) {
        if (!rank) fprintf(stderr, "commpattern: usage: commpattern pairs|alltoall [BYTES] [ITERS] "
                                   "(pairs: an even number of ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (pairs) {
        int p = partner_of(rank, n), nb[2] = {(rank + 1) % n, (rank + n - 1) % n};
        long light = bytes / 16;
        unsigned char *out = malloc((size_t)(bytes + 2 * light)), *in = malloc((size_t)(bytes + 2 * light));
        for (int it = 0; it < iters; it++) {
            MPI_Request rq[6];
            MPI_Status st[6];
            MPI_Irecv(in, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &rq[0]);
            for (int k = 0; k < 2; k++)
                MPI_Irecv(in + bytes + k * light, (int)light, MPI_BYTE, nb[k ^ 1], 1 + k, MPI_COMM_WORLD, &rq[1 + k]);
            memset(out, fill(rank, p, it), (size_t)bytes);
            MPI_Isend(out, (int)bytes, MPI_BYTE, p, 0, MPI_COMM_WORLD, &rq[3]);
            for (int k = 0; k < 2; k++) {
                memset(out + bytes + k * light, fill(rank, nb[k], it), (size_t)light);
                MPI_Isend(out + bytes + k * light, (int)light, MPI_BYTE, nb[k], 1 + k, MPI_COMM_WORLD, &rq[4 + k]);
            }
            MPI_Waitall(6, rq, st);
            for (long i = 0; i < bytes; i++) bad += in[i] != fill(p, rank, it);
            for (int k = 0; k < 2; k++)
                for (long i = 0; i < light; i++) bad += in[bytes + k * light + i] != fill(nb[k ^ 1], rank, it);
        }
        free(out);
        free(in);
    } else {
        unsigned char *out = malloc((size_t)(bytes * n)), *in = malloc((size_t)(bytes * n));
        for (int it = 0; it < iters; it++) {
            for (int d = 0; d < n; d++) memset(out + d * bytes, fill(rank, d, it), (size_t)bytes);
            MPI_Alltoall(out, (int)bytes, MPI_BYTE, in, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
            for (int s = 0; s < n; s++)
                for (long i = 0; i < bytes; i++) bad += in[s * bytes + i] != fill(s, rank, it);
        }
        free(out);
        free(in);
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!rank) printf("commpattern %s: %ld bytes, %.1f us per iteration\n", what, bytes, tmax / (double)iters * 1e6);
    CHECK(bad == 0, "commpattern %s: %ld iterations of %ld bytes intact (%ld wrong)", what, iters, bytes, bad);
    return mc_finish();
}
