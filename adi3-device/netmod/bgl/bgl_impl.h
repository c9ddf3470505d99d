/* bglemu CH4 netmod "bgl": what the netmod's implementation files share. */
#ifndef BGL_IMPL_H_INCLUDED
#define BGL_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"

/* Limits of the active messages. MPIDIG's header rides in the message
 * layer's header (ML_HDR_MAX = 128 bytes) behind our 8-byte prefix. Every
 * size is sent as one message-layer message (am_check_eager), so the eager
 * limit only sizes MPIDIG's pack buffers. */
#define MPIDI_BGL_AM_HDR_MAX     (128 - 8)
#define MPIDI_BGL_EAGER_LIMIT    (16 * 1024)

/* Staging buffers the netmod receives into start on a 64-byte boundary:
 * where a receive buffer lies in its cache lines decides which cpu receives
 * it (ml_recv.c's grant), and malloc's placement is the host's, not the
 * simulation's (the heap differs with and without the engine's data path,
 * BGLEMU_PROXY). mem: MPL_malloc'd with MPIDI_BGL_LINE_ALIGN - 1 spare. */
#define MPIDI_BGL_LINE_ALIGN 64
static inline void *MPIDI_BGL_lines(void *mem)
{
    return (void *) (((uintptr_t) mem + MPIDI_BGL_LINE_ALIGN - 1) & ~(uintptr_t) (MPIDI_BGL_LINE_ALIGN - 1));
}

/* Out-of-line bodies of the inline netmod API (bgl_am.c): the inline wrappers
 * in bgl_am.h / bgl_progress.h only forward here, so a change to the netmod's
 * logic recompiles the netmod's own files, not the rest of MPICH. */
int MPIDI_BGL_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                          const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci, int dst_vci);
int MPIDI_BGL_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                       const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                       MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                       MPIR_Request * sreq);
int MPIDI_BGL_am_send_hdr_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                                const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci,
                                int dst_vci);
int MPIDI_BGL_am_isend_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                             const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                             MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                             MPIR_Request * sreq);
bool MPIDI_BGL_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz, const void *data,
                              MPI_Aint count, MPI_Datatype datatype, MPIR_Request * sreq);
int MPIDI_BGL_progress(int vci, int blocking);
/* MPIDIG's unpacking of an unexpected message into a non-contiguous receive,
 * charged (bgl_dt.c): as the receive is posted, or as the data completes. */
void MPIDI_BGL_dt_charge_unexp(MPIR_Request * rreq, MPI_Aint count, MPI_Datatype dt);
void MPIDI_BGL_dt_charge_unexp_late(MPIR_Request * rreq);
MPIDIG_recv_data_copy_cb MPIDI_BGL_data_copy_cb(uint32_t attr);
/* bgl_coll.c: MPI_Bcast / MPI_Alltoall (torus collectives or MPICH's) */
int MPIDI_BGL_mpi_bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag);
int MPIDI_BGL_mpi_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                           MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag);
int MPIDI_BGL_mpi_alltoallv(const void *sendbuf, const MPI_Aint * sendcounts,
                            const MPI_Aint * sdispls, MPI_Datatype sendtype, void *recvbuf,
                            const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                            MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag);
/* a communicator's collectives group goes with it; all go at finalize */
int MPIDI_BGL_mpi_barrier(MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag);
int MPIDI_BGL_mpi_allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count,
                            MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                            MPIR_Errflag_t * errflag);
int MPIDI_BGL_mpi_reduce(const void *sendbuf, void *recvbuf, MPI_Aint count,
                         MPI_Datatype datatype, MPI_Op op, int root, MPIR_Comm * comm_ptr,
                         MPIR_Errflag_t * errflag);
void MPIDI_BGL_coll_comm_free(MPIR_Comm * comm);
void MPIDI_BGL_coll_finalize(void);

#endif /* BGL_IMPL_H_INCLUDED */
