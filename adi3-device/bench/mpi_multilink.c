/* mpi_multilink: one node exchanging with k = 1..6 torus neighbours at once,
 * over MPI. The rank at the centre of a 3x3x3 torus posts, for each of k
 * neighbours, MPI_Irecv and MPI_Isend of SIZE bytes (each neighbour sends the
 * same back), ITERS times; prints per k the simulated time and the
 * aggregate bandwidth the centre sees (both directions). Buffers start
 * OFFSET bytes past a 64-byte boundary (0: 32-byte aligned, which lets the
 * coprocessor receive rendezvous data in CO mode; 16: what glibc's malloc
 * returns above its mmap threshold). Every byte is checked.
 *   mpirun -np 27 -shape 3x3x3 [-protocol P] [-env BGLEMU_MODE=HEATER] -clock none \
 *     mpi_multilink [--size B] [--iters K] [--offset B] [--k K]
 * --k K runs only k = K (so that a --report covers that case alone). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "coll_bench.h"

static unsigned char byte_of(int src, int k, long i) { return (unsigned char)(i * 31 + src * 7 + k); }

int main(int argc, char **argv)
{
    long size = 65536, iters = 4, offset = 0, only = 0;
    for (int i = 1; i < argc; i++) {
        long *v = !strcmp(argv[i], "--size") ? &size : !strcmp(argv[i], "--iters") ? &iters
                  : !strcmp(argv[i], "--offset") ? &offset : !strcmp(argv[i], "--k") ? &only : NULL;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: mpirun -np 27 -shape 3x3x3 [-protocol P] [-env BGLEMU_MODE=HEATER] "
                   "-clock none mpi_multilink [--size B] [--iters K] [--offset B] [--k K]\n");
            return 0;
        }
        size_t sz;
        if (!v || i + 1 >= argc || ml_parse_size(argv[++i], &sz) != 0 || sz > LONG_MAX) {
            fprintf(stderr, "mpi_multilink: bad option '%s' (try --help)\n", argv[i]);
            return 2;
        }
        *v = (long)sz;
    }
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 27) {
        if (!rank) fprintf(stderr, "mpi_multilink: needs 27 ranks on 3x3x3\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* XYZT on 3x3x3: rank = x + 3y + 9z; the centre <1,1,1> is 13; its
     * neighbours in port order x+ x- y+ y- z+ z- */
    const int centre = 13, nb[6] = {14, 12, 16, 10, 22, 4};
    size_t slot = ((size_t)size + (size_t)offset + 63) / 64 * 64;
    unsigned char *base = aligned_alloc(64, 12 * slot + 64);
    unsigned char *sbuf[6], *rbuf[6];
    for (int j = 0; j < 6; j++) {
        sbuf[j] = base + (size_t)j * slot + (size_t)offset;
        rbuf[j] = base + (size_t)(6 + j) * slot + (size_t)offset;
    }
    int me = -1;
    for (int j = 0; j < 6; j++)
        if (nb[j] == rank) me = j;
    int bad = 0;
    if (rank == centre) printf("# k  bytes  offset  cycles  MB/s (both directions, the centre's view)\n");
    if (only > 6) only = 6;
    for (int k = only ? (int)only : 1; k <= (only ? only : 6); k++) {
        for (int j = 0; j < 6; j++)
            for (long i = 0; i < size; i++) sbuf[j][i] = byte_of(rank, k, i);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long it = 0; it < iters; it++) {
            MPI_Request rq[12];
            MPI_Status st[12];
            int nr = 0;
            if (rank == centre) {
                for (int j = 0; j < k; j++)
                    MPI_Irecv(rbuf[j], (int)size, MPI_BYTE, nb[j], k, MPI_COMM_WORLD, &rq[nr++]);
                for (int j = 0; j < k; j++)
                    MPI_Isend(sbuf[j], (int)size, MPI_BYTE, nb[j], k, MPI_COMM_WORLD, &rq[nr++]);
            } else if (me >= 0 && me < k) {
                MPI_Irecv(rbuf[0], (int)size, MPI_BYTE, centre, k, MPI_COMM_WORLD, &rq[nr++]);
                MPI_Isend(sbuf[0], (int)size, MPI_BYTE, centre, k, MPI_COMM_WORLD, &rq[nr++]);
            }
            MPI_Waitall(nr, rq, st);
        }
        double t = MPI_Wtime() - t0;
        if (rank == centre) {
            for (int j = 0; j < k; j++)
                for (long i = 0; i < size; i++) bad += rbuf[j][i] != byte_of(nb[j], k, i);
            double cycles = t * 700e6;
            printf("%d %ld %ld %.0f %.0f\n", k, size, offset, cycles,
                   2.0 * k * (double)size * (double)iters / t / 1e6);
        } else if (me >= 0 && me < k) {
            for (long i = 0; i < size; i++) bad += rbuf[0][i] != byte_of(centre, k, i);
        }
    }
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank && all) fprintf(stderr, "mpi_multilink: %d bytes wrong\n", all);
    free(base);
    MPI_Finalize();
    return all ? 1 : 0;
}
