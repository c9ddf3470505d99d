/* What the generated PMPI wrappers (gen_pmpi.py) need from mpi_wtime.c. */
#ifndef PMPI_WRAP_H
#define PMPI_WRAP_H

#define BGLEMU_HIDDEN __attribute__((visibility("hidden")))

/* libmpi's definition of a PMPI function (the next one after this
 * library); ends the process with a message if there is none. */
BGLEMU_HIDDEN void *bglemu_pmpi_next(const char *name);
/* The calling thread enters / leaves MPI (nested calls count once). */
BGLEMU_HIDDEN void bglemu_mpi_enter(void);
BGLEMU_HIDDEN void bglemu_mpi_leave(void);

#endif
