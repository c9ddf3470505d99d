/* bglemu CH4 netmod "bgl": active messages and progress.
 *
 * Skeleton: every transfer fails with "<function> is not yet implemented in
 * the bgl netmod"; progress has nothing to do. The next step puts the
 * message layer (messagelayer/ml.h) under these functions:
 *   am_isend / am_send_hdr (+ _reply): one ml message per active message;
 *     its completion runs MPIDIG_global.origin_cbs[handler_id](sreq);
 *   arrival: MPIDIG_global.target_msg_cbs[handler_id](...) matches (or
 *     queues as unexpected) and hands back the buffer the data lands in;
 *   progress: advance the message layer; after repeated empty polls yield,
 *     then block on the engine's doorbell. */
#include "mpidimpl.h"
#include "bgl_impl.h"

int MPIDI_BGL_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                          const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci, int dst_vci)
{
    return MPIDI_BGL_NOTIMPL("am_send_hdr");
}

int MPIDI_BGL_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                       const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                       MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                       MPIR_Request * sreq)
{
    return MPIDI_BGL_NOTIMPL("am_isend");
}

int MPIDI_BGL_am_send_hdr_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                                const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci,
                                int dst_vci)
{
    return MPIDI_BGL_NOTIMPL("am_send_hdr_reply");
}

int MPIDI_BGL_am_isend_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                             const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                             MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                             MPIR_Request * sreq)
{
    return MPIDI_BGL_NOTIMPL("am_isend_reply");
}

bool MPIDI_BGL_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz, const void *data,
                              MPI_Aint count, MPI_Datatype datatype, MPIR_Request * sreq)
{
    return am_hdr_sz + data_sz <= MPIDI_BGL_EAGER_LIMIT;
}

int MPIDI_BGL_progress(int vci, int blocking)
{
    return MPI_SUCCESS;
}
