/* MPI_Wtime in simulated time, preloaded by mpirun into MPI ranks.
 *
 * MPICH's MPI_Wtime reads the host clock, and nothing in a netmod can
 * change that without editing MPICH. This small library is preloaded
 * instead: its MPI_Wtime and PMPI_Wtime (which MPICH's Fortran MPI_WTIME
 * calls) win over libmpi's and return the rank's simulated time, which the
 * bgl netmod inside libmpi provides. Before MPI_Init, after MPI_Finalize,
 * or in a process without the netmod, they fall back to the host clock. */
#include <time.h>

double MPIDI_BGL_wtime(void) __attribute__((weak));
double MPI_Wtime(void);
double PMPI_Wtime(void);

double PMPI_Wtime(void)
{
    if (MPIDI_BGL_wtime) {
        double t = MPIDI_BGL_wtime();
        if (t >= 0) return t;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double MPI_Wtime(void)
{
    return PMPI_Wtime();
}
