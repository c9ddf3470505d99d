/* A loop of MPI_Allreduce and MPI_Alltoall on MPI_COMM_WORLD (the 64-rank
 * job of the MPI tests and `make bench`), results checked every iteration.
 *   collectives [ITERATIONS [INTS_PER_PAIR]] */
#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int iters = argc > 1 ? atoi(argv[1]) : 10, per = argc > 2 ? atoi(argv[2]) : 16;
    int *sb = malloc(sizeof(int) * (size_t)(n * per)), *rb = malloc(sizeof(int) * (size_t)(n * per));
    int reduce_ok = 1, a2a_ok = 1;
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        double v = rank + it, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        reduce_ok &= sum == (double)n * (n - 1) / 2 + (double)n * it;
        for (int d = 0; d < n; d++)
            for (int k = 0; k < per; k++) sb[d * per + k] = (rank * n + d) * 1000 + k + it;
        MPI_Alltoall(sb, per, MPI_INT, rb, per, MPI_INT, MPI_COMM_WORLD);
        for (int s = 0; s < n; s++)
            for (int k = 0; k < per; k++) a2a_ok &= rb[s * per + k] == (s * n + rank) * 1000 + k + it;
    }
    double t = MPI_Wtime() - t0;
    CHECK(reduce_ok && a2a_ok, "%d iterations of allreduce + alltoall (%d ints per pair) on %d ranks: results right",
          iters, per, n);
    if (rank == 0)
        printf("collectives: %d ranks, %d iterations: %.0f cycles per iteration\n", n, iters,
               t * 700e6 / iters);
    free(sb), free(rb);
    return mc_finish();
}
