/* bglemu CH4 netmod "bgl": initialization, finalization and the object hooks
 * CH4 calls on every communicator, datatype and op. */
#include "mpidimpl.h"
#include "bgl_impl.h"

/* First call of MPI_Init: the netmod reports how many tag bits it carries.
 * Later: attach to the emulated machine (rank map from the segment mpirun
 * prepared, BGLMPI_MAPPING, clock mode). */
int MPIDI_BGL_init_local(int *tag_bits)
{
    *tag_bits = MPIR_TAG_BITS_DEFAULT;
    return MPI_SUCCESS;
}

/* All ranks known (MPIR_Process.size): the world's addresses. CH4 keeps the
 * address vector; world rank r is torus node/core r of the map. */
int MPIDI_BGL_init_world(void)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_post_init(void)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_finalize_hook(void)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_comm_set_hints(MPIR_Comm * comm_ptr, MPIR_Info * info)
{
    return MPI_SUCCESS;
}

void *MPIDI_BGL_mpi_alloc_mem(MPI_Aint size, MPIR_Info * info)
{
    return MPIDIG_mpi_alloc_mem(size, info);
}

int MPIDI_BGL_mpi_free_mem(void *ptr)
{
    return MPIDIG_mpi_free_mem(ptr);
}

int MPIDI_BGL_mpi_type_commit_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_type_free_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_commit_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_free_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}
