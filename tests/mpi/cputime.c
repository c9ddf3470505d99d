/* The clock modes: computation between MPI calls costs nothing with
 * -clock none, and its thread CPU time x cputime_scale_pct/100 with
 * -clock cputime. The program computes for about 50 ms of CPU between two
 * MPI_Wtime calls and compares the simulated interval with the CPU time it
 * measured itself.  cputime EXPECT_PCT   (0 for none mode) */
#include <time.h>

#include "mpi_check.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double pct = argc > 1 ? atof(argv[1]) : 100;
    volatile double x = 0;
    double c0 = cpu_now(), t0 = MPI_Wtime();
    while (cpu_now() - c0 < 0.05) x += 1.0;
    double t1 = MPI_Wtime(), c1 = cpu_now();
    double sim = t1 - t0, cpu = c1 - c0, want = cpu * pct / 100;
    if (pct == 0)
        CHECK(sim * 700e6 < 1000, "-clock none: %.0f ms of computation cost %.0f simulated cycles",
              cpu * 1e3, sim * 700e6);
    else
        CHECK(sim > 0.9 * want && sim < 1.1 * want + 1e-4,
              "-clock cputime at %.0f%%: %.1f ms of CPU became %.1f ms of simulated time", pct,
              cpu * 1e3, sim * 1e3);
    return mc_finish();
}
