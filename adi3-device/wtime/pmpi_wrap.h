/* What the generated PMPI wrappers (gen_pmpi.py) need from mpi_wtime.c. */
#ifndef PMPI_WRAP_H
#define PMPI_WRAP_H

#include <stdint.h>

#define BGLEMU_HIDDEN __attribute__((visibility("hidden")))

/* libmpi's definition of a PMPI function (the next one after this
 * library); ends the process with a message if there is none. */
BGLEMU_HIDDEN void *bglemu_pmpi_next(const char *name);
/* The calling thread enters / leaves MPI (nested calls count once). */
BGLEMU_HIDDEN void bglemu_mpi_enter(void);
BGLEMU_HIDDEN void bglemu_mpi_enter_blocking(void);
BGLEMU_HIDDEN void bglemu_mpi_enter_wait(void);
BGLEMU_HIDDEN void bglemu_mpi_leave(void);

/* The Fortran wrappers pass on this many integer-class arguments: more
 * than any MPICH Fortran entry point takes (its arguments, ierr, and a
 * hidden length per CHARACTER argument: at most 14 in MPICH 4.0.2, e.g.
 * MPI_RGET_ACCUMULATE).
 * Extra arguments are harmless under the x86-64 System V and AArch64
 * calling conventions (the callee never reads them, the caller pops
 * them). */
#define BGLEMU_F77_NARGS 16
#define BGLEMU_F77_PARAMS                                                                   \
    intptr_t a0, intptr_t a1, intptr_t a2, intptr_t a3, intptr_t a4, intptr_t a5,           \
        intptr_t a6, intptr_t a7, intptr_t a8, intptr_t a9, intptr_t a10, intptr_t a11,     \
        intptr_t a12, intptr_t a13, intptr_t a14, intptr_t a15
#define BGLEMU_F77_ARGS a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15
typedef intptr_t (*bglemu_f77_fn)(BGLEMU_F77_PARAMS);

#endif
