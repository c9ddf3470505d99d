/* bglemu CH4 netmod "bgl": RMA windows, all through MPIDIG (active messages). */
#include "mpidimpl.h"
#include "bgl_impl.h"

int MPIDI_BGL_mpi_win_set_info(MPIR_Win * win, MPIR_Info * info)
{
    return MPIDIG_mpi_win_set_info(win, info);
}

int MPIDI_BGL_mpi_win_get_info(MPIR_Win * win, MPIR_Info ** info_p)
{
    return MPIDIG_mpi_win_get_info(win, info_p);
}

int MPIDI_BGL_mpi_win_free(MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_free(win_p);
}

int MPIDI_BGL_mpi_win_create(void *base, MPI_Aint length, int disp_unit, MPIR_Info * info,
                             MPIR_Comm * comm_ptr, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_p);
}

int MPIDI_BGL_mpi_win_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDIG_mpi_win_attach(win, base, size);
}

int MPIDI_BGL_mpi_win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                                      MPIR_Comm * comm_ptr, void **baseptr_p, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_allocate_shared(size, disp_unit, info, comm_ptr, baseptr_p, win_p);
}

int MPIDI_BGL_mpi_win_detach(MPIR_Win * win, const void *base)
{
    return MPIDIG_mpi_win_detach(win, base);
}

int MPIDI_BGL_mpi_win_allocate(MPI_Aint size, int disp_unit, MPIR_Info * info, MPIR_Comm * comm,
                               void *baseptr, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_allocate(size, disp_unit, info, comm, baseptr, win_p);
}

int MPIDI_BGL_mpi_win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_create_dynamic(info, comm, win_p);
}

/* Hooks: nothing netmod-specific in a window (no native RMA). */
int MPIDI_BGL_mpi_win_create_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_allocate_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_allocate_shared_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_create_dynamic_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_attach_hook(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_detach_hook(MPIR_Win * win, const void *base)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_free_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}
