/* Rank-to-rank hand-off latency among many ranks (issue 25): ranks 0 and
 * 1 ping-pong 1-byte messages while every other rank waits, blocked in
 * MPI_Barrier (default) or in an MPI_Recv that the last round trip's
 * message ends. Prints the host microseconds per round trip
 * (CLOCK_MONOTONIC around the loop: start-up left out; MPI_Wtime is
 * simulated) and the simulated cycles per half round trip.
 *   handoff [--iters N] [--idle barrier|recv]   (default 2000, barrier)
 * Runs with 2 ranks too (no one idle). */
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long iters = 2000;
    int idle_recv = 0;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--iters")) iters = parse_size(argv[a + 1]);
        else if (!strcmp(argv[a], "--idle") && !strcmp(argv[a + 1], "recv")) idle_recv = 1;
        else if (!strcmp(argv[a], "--idle") && !strcmp(argv[a + 1], "barrier")) idle_recv = 0;
        else iters = -1;
    }
    if ((argc - 1) % 2 || iters < 1 || n < 2) {
        if (!rank) fprintf(stderr, "handoff: usage: mpirun -np N>=2 handoff [--iters N] [--idle barrier|recv]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char b = 0;
    int ok = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2) {
        int peer = 1 - rank;
        for (int w = 0; w < 10; w++) { /* warm-up */
            if (rank == 0) {
                MPI_Send(&b, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(&b, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            }
        }
        double h0 = host_now(), s0 = MPI_Wtime();
        for (long it = 0; it < iters; it++) {
            if (rank == 0) {
                b = (char)it;
                MPI_Send(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ok &= b == (char)(it + 1);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                b++;
                MPI_Send(&b, 1, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            }
        }
        double h1 = host_now(), s1 = MPI_Wtime();
        if (rank == 0)
            printf("handoff: %d ranks (%d idle in %s), %ld round trips of 1 byte: host %.1f us per round trip, "
                   "simulated %.0f cycles per half round trip\n", n, n - 2, idle_recv ? "MPI_Recv" : "MPI_Barrier",
                   iters, (h1 - h0) * 1e6 / (double)iters, mc_cycles(s1 - s0) / (2.0 * (double)iters));
        if (idle_recv && rank == 0)
            for (int r = 2; r < n; r++) MPI_Send(&b, 1, MPI_CHAR, r, 2, MPI_COMM_WORLD);
    } else if (idle_recv) {
        MPI_Recv(&b, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(ok, "handoff: every reply carried the incremented byte");
    return mc_finish();
}
