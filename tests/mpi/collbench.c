/* MPI_Bcast and MPI_Alltoall bandwidth in simulated time, per algorithm
 * (BGLMPI_BCAST / BGLMPI_ALLTOALL set between calls): MPICH's default
 * algorithms against bglemu's torus collectives.
 *   collbench bcast|alltoall SIZE...   (bytes: per broadcast / per pair) */
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int a2a = argc > 1 && !strcmp(argv[1], "alltoall");
    static const char *const balgos[] = {"mpich", "torus1", "torus3"};
    static const char *const aalgos[] = {"mpich", "torus"};
    int nalgo = a2a ? 2 : 3;
    for (int i = 2; i < argc; i++) {
        size_t sz = (size_t)atol(argv[i]);
        char *sb = malloc(a2a ? sz * (size_t)n : sz), *rb = malloc(a2a ? sz * (size_t)n : 1);
        memset(sb, rank, a2a ? sz * (size_t)n : sz);
        if (rank == 0) printf("collbench: %s %zu B on %d ranks:", a2a ? "alltoall" : "bcast", sz, n);
        for (int a = 0; a < nalgo; a++) {
            setenv(a2a ? "BGLMPI_ALLTOALL" : "BGLMPI_BCAST", a2a ? aalgos[a] : balgos[a], 1);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (a2a) MPI_Alltoall(sb, (int)sz, MPI_BYTE, rb, (int)sz, MPI_BYTE, MPI_COMM_WORLD);
            else MPI_Bcast(sb, (int)sz, MPI_BYTE, 0, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0, tmax;
            MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf(" %s %.0f cycles %.1f MB/s", a2a ? aalgos[a] : balgos[a], tmax * 700e6,
                       (a2a ? (double)sz * n * n : (double)sz) / tmax / 1e6);
        }
        if (rank == 0) printf("\n");
        free(sb), free(rb);
    }
    MPI_Finalize();
    return 0;
}
