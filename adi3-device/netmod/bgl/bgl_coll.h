/* bglemu CH4 netmod "bgl": MPI_Bcast, MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw on the torus,
 * MPI_Barrier, MPI_Allreduce and MPI_Reduce (and MPI_Bcast, BGLMPI_BCAST=tree)
 * on the collective network and the global interrupt.
 * CH4 reaches these through the collective selection file mpirun points
 * MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE at (share/bglemu/ch4-coll.json);
 * bgl_coll.c decides per call between bglemu's collectives and MPICH's
 * algorithms (MPIR_*_impl, what MPICH's fallbacks call). */
#ifndef BGL_COLL_H_INCLUDED
#define BGL_COLL_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype,
                                                int root, MPIR_Comm * comm_ptr,
                                                MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_bcast(buffer, count, datatype, root, comm_ptr, errflag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_alltoall(const void *sendbuf, MPI_Aint sendcount,
                                                   MPI_Datatype sendtype, void *recvbuf,
                                                   MPI_Aint recvcount, MPI_Datatype recvtype,
                                                   MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm_ptr, errflag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_alltoallv(const void *sendbuf,
                                                    const MPI_Aint * sendcounts,
                                                    const MPI_Aint * sdispls,
                                                    MPI_Datatype sendtype, void *recvbuf,
                                                    const MPI_Aint * recvcounts,
                                                    const MPI_Aint * rdispls,
                                                    MPI_Datatype recvtype, MPIR_Comm * comm_ptr,
                                                    MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm_ptr, errflag);
}

int MPIDI_BGL_mpi_alltoallw(const void *sendbuf, const MPI_Aint * sendcounts,
                            const MPI_Aint * sdispls, const MPI_Datatype * sendtypes,
                            void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                            const MPI_Datatype * recvtypes, MPIR_Comm * comm_ptr,
                            MPIR_Errflag_t * errflag);

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_alltoallw(const void *sendbuf,
                                                    const MPI_Aint sendcounts[],
                                                    const MPI_Aint sdispls[],
                                                    const MPI_Datatype sendtypes[], void *recvbuf,
                                                    const MPI_Aint recvcounts[],
                                                    const MPI_Aint rdispls[],
                                                    const MPI_Datatype recvtypes[],
                                                    MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm_ptr, errflag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_barrier(MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_barrier(comm_ptr, errflag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_allreduce(const void *sendbuf, void *recvbuf,
                                                    MPI_Aint count, MPI_Datatype datatype,
                                                    MPI_Op op, MPIR_Comm * comm_ptr,
                                                    MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_allreduce(sendbuf, recvbuf, count, datatype, op, comm_ptr, errflag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_reduce(const void *sendbuf, void *recvbuf, MPI_Aint count,
                                                 MPI_Datatype datatype, MPI_Op op, int root,
                                                 MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_mpi_reduce(sendbuf, recvbuf, count, datatype, op, root, comm_ptr, errflag);
}

#endif /* BGL_COLL_H_INCLUDED */
