/* The clock modes: computation between MPI calls costs nothing with
 * -clock none, and its thread CPU time x cputime_scale_pct/100 with
 * -clock cputime. The program computes for about 50 ms of CPU between two
 * MPI_Wtime calls and compares the simulated interval with the CPU time it
 * measured itself.  cputime EXPECT_PCT   (0 for none mode)
 *
 *   cputime work PCT MICROS
 * A 1-byte ping-pong (2 ranks) in which each rank computes MICROS us of
 * CPU between its receive and its send: a half round trip must cost Table
 * 1's 2,350 cycles plus the work at PCT, within 5%. The host adds a few us
 * of its own to every gap (system calls, a wake-up's cold caches), so
 * MICROS must dwarf that for the bound to hold on any host: 1000 does.
 *
 *   cputime inside PCT
 * Time MPICH spends inside a call is MPI's, not computation: 20 calls of
 * MPI_Reduce_local on 1 Mi doubles (milliseconds of CPU inside MPI, none
 * of it communication) must cost less than 1% of what that CPU time would
 * be charged at PCT. The margin is a hundredfold either way: a gap between
 * two calls costs a few simulated cycles, and MPICH's time charged as
 * computation would be the whole. */
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin(double seconds)
{
    volatile double x = 0;
    double c0 = cpu_now();
    while (cpu_now() - c0 < seconds) x += 1.0;
}

static int work_pingpong(double pct, double micros)
{
    int rank;
    char b = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    enum { ITERS = 20 };
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0, work = micros * 1e-6;
    for (int i = -2; i < ITERS; i++) { /* two warm-ups */
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            spin(work);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            spin(work);
            MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    double half = mc_cycles(MPI_Wtime() - t0) / (2.0 * ITERS);
    double want = 2350 + work * 700e6 * pct / 100;
    if (rank == 0)
        CHECK(half > 0.95 * want && half < 1.05 * want,
              "-clock cputime at %.0f%%: %.0f us of work between the calls: %.0f cycles per half "
              "round trip (2,350 + %.0f, within 5%%)", pct, micros, half, want - 2350);
    return mc_finish();
}

static int mpich_inside(double pct)
{
    enum { N = 1 << 20, CALLS = 20 };
    double *in = malloc(N * sizeof *in), *inout = malloc(N * sizeof *inout);
    for (int i = 0; i < N; i++) in[i] = inout[i] = i;
    MPI_Reduce_local(in, inout, N, MPI_DOUBLE, MPI_SUM); /* first touch, pages and caches */
    double c0 = cpu_now(), t0 = MPI_Wtime();
    for (int k = 0; k < CALLS; k++) MPI_Reduce_local(in, inout, N, MPI_DOUBLE, MPI_SUM);
    double t1 = MPI_Wtime(), c1 = cpu_now();
    double sim = mc_cycles(t1 - t0), would = mc_cycles((c1 - c0) * pct / 100);
    CHECK(sim < 0.01 * would,
          "-clock cputime at %.0f%%: %.1f ms of CPU inside %d calls of MPI_Reduce_local cost %.0f "
          "simulated cycles (charged as computation: %.0f)", pct, (c1 - c0) * 1e3, CALLS, sim, would);
    CHECK(inout[N - 1] == (double)(N - 1) * (CALLS + 2), "MPI_Reduce_local summed");
    free(in);
    free(inout);
    return mc_finish();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc > 3 && !strcmp(argv[1], "work")) return work_pingpong(atof(argv[2]), atof(argv[3]));
    if (argc > 2 && !strcmp(argv[1], "inside")) return mpich_inside(atof(argv[2]));
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
