/* bglemu CH4 netmod "bgl": communicator hooks. The torus collectives'
 * group of a communicator is made on its first MPI_Bcast/MPI_Alltoall
 * (bgl_coll.c) and freed here. */
#include "mpidimpl.h"
#include "bgl_impl.h"

int MPIDI_BGL_mpi_comm_commit_pre_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_comm_commit_post_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_comm_free_hook(MPIR_Comm * comm)
{
    MPIDI_BGL_coll_comm_free(comm);
    return MPI_SUCCESS;
}
