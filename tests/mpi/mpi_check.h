/* Shared by the MPI test programs: each check prints one line,
 * "ok <rank> - what" or "not ok <rank> - what", and the program exits
 * non-zero if any failed (run.sh counts the lines). */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int mc_failed;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        int mc_r_;                                                                \
        MPI_Comm_rank(MPI_COMM_WORLD, &mc_r_);                                    \
        int mc_ok_ = !!(cond);                                                    \
        if (!mc_ok_) mc_failed = 1;                                               \
        printf("%s %d - ", mc_ok_ ? "ok" : "not ok", mc_r_);                      \
        printf(__VA_ARGS__);                                                      \
        printf("\n");                                                             \
        fflush(stdout);                                                           \
    } while (0)

/* Ends the program: every rank's verdict. */
static inline int mc_finish(void)
{
    MPI_Finalize();
    return mc_failed ? 1 : 0;
}

/* Simulated cycles at 700 MHz from MPI_Wtime seconds. */
static inline double mc_cycles(double seconds) { return seconds * 700e6; }

#endif
