/* Shared by the MPI test programs: each check prints one line,
 * "ok <rank> - what" or "not ok <rank> - what", and the program exits
 * non-zero if any failed (run.sh counts the lines). */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int mc_failed;

/* One write per line: hydra forwards each rank's output as it comes. */
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        int mc_r_, mc_n_;                                                         \
        char mc_line_[512];                                                       \
        MPI_Comm_rank(MPI_COMM_WORLD, &mc_r_);                                    \
        int mc_ok_ = !!(cond);                                                    \
        if (!mc_ok_) mc_failed = 1;                                               \
        mc_n_ = snprintf(mc_line_, sizeof mc_line_, "%s %d - ", mc_ok_ ? "ok" : "not ok", mc_r_); \
        snprintf(mc_line_ + mc_n_, sizeof mc_line_ - (size_t)mc_n_, __VA_ARGS__);  \
        printf("%s\n", mc_line_);                                                 \
        fflush(stdout);                                                           \
    } while (0)

/* Ends the program: every rank's verdict. */
static inline int mc_finish(void)
{
    MPI_Finalize();
    return mc_failed ? 1 : 0;
}

/* A byte count with an optional K or M suffix; -1 if it is not one. */
static inline long parse_size(const char *s)
{
    char *e;
    long v = strtol(s, &e, 0);
    if (e == s || v < 0) return -1;
    if (*e == 'k' || *e == 'K') v <<= 10, e++;
    else if (*e == 'm' || *e == 'M') v <<= 20, e++;
    return *e ? -1 : v;
}

/* Simulated cycles at 700 MHz from MPI_Wtime seconds. */
static inline double mc_cycles(double seconds) { return seconds * 700e6; }

#endif
