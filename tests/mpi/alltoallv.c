/* An MPI_Alltoallv-heavy round loop, the shape of the applications issue 9
 * measured: every round all ranks exchange TOTAL integers in all (uneven
 * per pair: between half and one and a half times the mean), then check
 * every element. Prints the simulated time per round (rank 0's MPI_Wtime).
 *   alltoallv [--rounds R] [--total INTS]     (default 10 rounds, 2^23 ints) */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static int val(int src, int dst, int round, long i) { return (int)(i * 7 + src * 131 + dst * 17 + round); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long rounds = 10, total = 1L << 23;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--rounds")) rounds = atol(argv[a + 1]);
        else if (!strcmp(argv[a], "--total")) total = atol(argv[a + 1]);
    }
    long mean = total / ((long)n * n);
    int *scount = malloc(sizeof(int) * (size_t)n), *rcount = malloc(sizeof(int) * (size_t)n);
    int *sdisp = malloc(sizeof(int) * (size_t)n), *rdisp = malloc(sizeof(int) * (size_t)n);
    long ssum = 0, rsum = 0;
    for (int p = 0; p < n; p++) { /* count(src, dst): 0.5 .. 1.5 times the mean */
        scount[p] = (int)(mean / 2 + mean * ((me * 5 + p * 3) % n) / n);
        rcount[p] = (int)(mean / 2 + mean * ((p * 5 + me * 3) % n) / n);
        sdisp[p] = (int)ssum;
        rdisp[p] = (int)rsum;
        ssum += scount[p];
        rsum += rcount[p];
    }
    int *sbuf = malloc(sizeof(int) * (size_t)(ssum + 1)), *rbuf = malloc(sizeof(int) * (size_t)(rsum + 1));
    long bad = 0;
    double t0 = 0;
    for (long r = 0; r < rounds; r++) {
        for (int p = 0; p < n; p++)
            for (long i = 0; i < scount[p]; i++) sbuf[sdisp[p] + i] = val(me, p, (int)r, i);
        if (r == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Alltoallv(sbuf, scount, sdisp, MPI_INT, rbuf, rcount, rdisp, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < n; p++)
            for (long i = 0; i < rcount[p]; i++) bad += rbuf[rdisp[p] + i] != val(p, me, (int)r, i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    long allbad = 0;
    MPI_Reduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("alltoallv: %d ranks, %ld rounds of %ld ints: %.1f us simulated per round\n", n,
               rounds, total, t / (double)rounds * 1e6);
        CHECK(allbad == 0, "alltoallv: every element of every round arrived (%ld wrong)", allbad);
    }
    free(sbuf), free(rbuf), free(scount), free(rcount), free(sdisp), free(rdisp);
    return mc_finish();
}
