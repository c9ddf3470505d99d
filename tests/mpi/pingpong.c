/* MPI ping-pong between ranks 0 and 1: half round-trip time in simulated
 * cycles (MPI_Wtime is simulated time) per message size. With mpirun
 * -protocol NAME every message uses that message-layer protocol (Table 1's
 * MPI column); sizes default to one per protocol class.
 *   pingpong [--iters N] [SIZE...] */
#include <string.h>

#include "mpi_check.h"

/* One round trip between ranks 0 and 1. */
static void round_trip(int rank, char *buf, int size, int tag)
{
    if (rank == 0) {
        MPI_Send(buf, size, MPI_CHAR, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(buf, size, MPI_CHAR, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(buf, size, MPI_CHAR, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, size, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
    }
}

static double pingpong(int rank, char *buf, int size, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < 2; w++) round_trip(rank, buf, size, 1); /* warm-up */
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) round_trip(rank, buf, size, 0);
    return (MPI_Wtime() - t0) / (2.0 * iters);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int iters = 10, sizes[64], ns = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = atoi(argv[++a]);
        else if (ns < 64) sizes[ns++] = atoi(argv[a]);
    }
    if (!ns) {
        int dflt[] = {1, 200, 1000, 10000, 1000000};
        for (ns = 0; ns < 5; ns++) sizes[ns] = dflt[ns];
    }
    if (n < 2) {
        if (!rank) fprintf(stderr, "pingpong: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int max = 0;
    for (int i = 0; i < ns; i++) max = sizes[i] > max ? sizes[i] : max;
    /* 16 bytes past a 64-byte boundary, whatever the heap looks like: a
     * rendezvous into a 32-byte aligned buffer is received by the
     * coprocessor (ml_coproc_align), which changes the time; Table 1's MPI
     * column is calibrated with the main processor receiving */
    char *base = aligned_alloc(64, ((size_t)max + 16 + 63) / 64 * 64), *buf = base + 16;
    for (int i = 0; i < ns; i++) {
        memset(buf, rank == 0 ? 'a' + i : 0, (size_t)sizes[i]);
        double t = pingpong(rank, buf, sizes[i], iters);
        if (rank <= 1) {
            int good = 1;
            for (int k = 0; k < sizes[i]; k++) good &= buf[k] == 'a' + i;
            CHECK(good, "pingpong %d bytes: data intact after %d round trips", sizes[i], iters + 2);
        }
        if (rank == 0)
            printf("pingpong: %d bytes: %.0f cycles per half round trip, %.2f MB/s\n", sizes[i],
                   mc_cycles(t), t > 0 ? sizes[i] / t / 1e6 : 0.0);
    }
    free(base);
    return mc_finish();
}
