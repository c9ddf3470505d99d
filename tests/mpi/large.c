/* A 64 MiB message each way between ranks 0 and 1 (rendezvous, about
 * 280,000 packets), content checked; prints the simulated bandwidth.
 *   large [MiB] */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64, n = mib << 20, words = n / 8;
    uint64_t *buf = malloc(n);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
    if (rank <= 1) {
        for (size_t i = 0; i < words; i++) buf[i] = rank == 0 ? i * 2654435761u : 0;
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        double t = MPI_Wtime() - t0;
        size_t bad = 0;
        for (size_t i = 0; i < words; i++) bad += buf[i] != i * 2654435761u;
        CHECK(bad == 0, "%zu MiB there and back, every 8-byte word checked (%zu wrong)", mib, bad);
        if (rank == 0) printf("large: %zu MiB each way in %.0f cycles: %.1f MB/s simulated\n", mib, t * 700e6, 2.0 * n / t / 1e6);
    }
    free(buf);
    return mc_finish();
}
