/* bglemu CH4 netmod "bgl": communicator hooks. Later: recognize the
 * communicators the torus collectives can serve (COMM_WORLD, rectangular
 * sub-meshes) and record that in MPIDI_BGL_comm_t. */
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
    return MPI_SUCCESS;
}
