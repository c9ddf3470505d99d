/* A delay written the common way, on the clock (issue 26, item 4):
 *
 *     double t0 = MPI_Wtime(); while (MPI_Wtime() - t0 < 0.0001);
 *
 * must end after the simulated time it asks for. Under -clock none only
 * the modelled cost of MPI_Wtime (mpi_wtime_cycles) moves the clock; under
 * -clock cputime the host time of the loop, scaled, moves it too.
 *
 *   wtime_delay [DELAYS [MICROS]]     (default 10 delays of 100 us)
 *
 * Every rank runs the delays; rank 0 prints, per delay, the simulated time
 * from t0 to the MPI_Wtime that ended the loop, and the calls it took:
 *
 *   wtime_delay: delay 3: 70042 cycles, 1167 calls
 *   wtime_delay: 10 delays of 100 us: 700420 cycles in all (7004 min, ...)
 *
 * tests/mpi/wtime.sh asserts on these lines. */
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 10;
    double micros = argc > 2 ? atof(argv[2]) : 100;
    if (n < 1 || n > 1000 || micros <= 0) {
        fprintf(stderr, "usage: wtime_delay [DELAYS 1..1000 [MICROS > 0]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double d = micros * 1e-6, *took = malloc(sizeof *took * (size_t)n);
    long *calls = malloc(sizeof *calls * (size_t)n);
    if (!took || !calls) MPI_Abort(MPI_COMM_WORLD, 1);
    double all0 = MPI_Wtime();
    for (int k = 0; k < n; k++) { /* nothing but the loop between the delays: printing is after */
        long c = 2;
        double t0 = MPI_Wtime(), t;
        while ((t = MPI_Wtime()) - t0 < d) c++;
        took[k] = t - t0, calls[k] = c;
    }
    double all = mc_cycles(MPI_Wtime() - all0), lo = 1e30, hi = 0;
    for (int k = 0; k < n; k++) {
        double c = mc_cycles(took[k]);
        if (c < lo) lo = c;
        if (c > hi) hi = c;
        if (rank == 0) printf("wtime_delay: delay %d: %.0f cycles, %ld calls\n", k, c, calls[k]);
    }
    if (rank == 0)
        printf("wtime_delay: %d delays of %g us: %.0f cycles in all (%.0f min, %.0f max per delay, "
               "%.0f asked)\n",
               n, micros, all, lo, hi, mc_cycles(d));
    free(took);
    free(calls);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
