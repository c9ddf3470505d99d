/* halo2d: the communication of a 2-D stencil. PX x PY ranks form a periodic
 * grid, rank = i + PX * j (i fastest, as mapfiles/grid2d-8x8-on-4x4x4.map
 * assumes); every iteration each rank swaps a halo of BYTES with its four
 * grid neighbours. How long that takes depends on where the ranks sit on
 * the torus: docs/pictures.md draws it for a good and a bad mapping.
 *
 *   mpicc -O2 -o halo2d docs/examples/halo2d.c
 *   mpirun -np 64 -shape 4x4x4 -clock none [-mapfile ...] ./halo2d [PX PY BYTES ITERS]
 *
 * Defaults 8 8 4096 20. Prints the simulated time per iteration and checks
 * every halo it receives. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int px = argc > 1 ? atoi(argv[1]) : 8, py = argc > 2 ? atoi(argv[2]) : 8;
    int bytes = argc > 3 ? atoi(argv[3]) : 4096, iters = argc > 4 ? atoi(argv[4]) : 20;
    if (px < 1 || py < 1 || px * py != size || bytes < 1 || iters < 1) {
        if (rank == 0) fprintf(stderr, "halo2d: want PX * PY = %d ranks, BYTES >= 1, ITERS >= 1\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int i = rank % px, j = rank / px;
    /* west, east, south, north: the grid wraps around */
    int nb[4] = {(i + px - 1) % px + px * j, (i + 1) % px + px * j,
                 i + px * ((j + py - 1) % py), i + px * ((j + 1) % py)};
    unsigned char *out = malloc((size_t)bytes * 4), *in = malloc((size_t)bytes * 4);
    if (!out || !in) MPI_Abort(MPI_COMM_WORLD, 3);
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Request rq[8];
        MPI_Status st[8]; /* not MPI_STATUSES_IGNORE: GCC 12 warns about it wrongly */
        for (int d = 0; d < 4; d++) {
            memset(out + (size_t)d * bytes, (rank * 4 + d + it) & 0xff, (size_t)bytes);
            /* what goes west arrives from the east: tags name the direction of travel */
            MPI_Irecv(in + (size_t)d * bytes, bytes, MPI_BYTE, nb[d], d ^ 1, MPI_COMM_WORLD, &rq[d]);
        }
        for (int d = 0; d < 4; d++)
            MPI_Isend(out + (size_t)d * bytes, bytes, MPI_BYTE, nb[d], d, MPI_COMM_WORLD, &rq[4 + d]);
        MPI_Waitall(8, rq, st);
        for (int d = 0; d < 4; d++) {
            unsigned char want = (unsigned char)((nb[d] * 4 + (d ^ 1) + it) & 0xff);
            for (int b = 0; b < bytes; b++) bad |= in[(size_t)d * bytes + b] != want;
        }
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int anybad;
    MPI_Reduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("halo2d: %dx%d grid, %d-byte halos: %.1f us per iteration%s\n", px, py, bytes,
               tmax / iters * 1e6, anybad ? " (BAD DATA)" : "");
    free(out);
    free(in);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
