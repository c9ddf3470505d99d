/* bglemu CH4 netmod "bgl": active messages, the netmod's whole data path.
 * The inline API forwards to bgl_am.c; only the limits are inline. */
#ifndef BGL_AM_H_INCLUDED
#define BGL_AM_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                                                  const void *am_hdr, MPI_Aint am_hdr_sz,
                                                  int src_vci, int dst_vci)
{
    return MPIDI_BGL_am_send_hdr(rank, comm, handler_id, am_hdr, am_hdr_sz, src_vci, dst_vci);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                                               const void *am_hdr, MPI_Aint am_hdr_sz,
                                               const void *data, MPI_Aint count,
                                               MPI_Datatype datatype, int src_vci, int dst_vci,
                                               MPIR_Request * sreq)
{
    return MPIDI_BGL_am_isend(rank, comm, handler_id, am_hdr, am_hdr_sz, data, count, datatype,
                              src_vci, dst_vci, sreq);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr_reply(MPIR_Comm * comm, int src_rank,
                                                        int handler_id, const void *am_hdr,
                                                        MPI_Aint am_hdr_sz, int src_vci,
                                                        int dst_vci)
{
    return MPIDI_BGL_am_send_hdr_reply(comm, src_rank, handler_id, am_hdr, am_hdr_sz,
                                       src_vci, dst_vci);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend_reply(MPIR_Comm * comm, int src_rank,
                                                     int handler_id, const void *am_hdr,
                                                     MPI_Aint am_hdr_sz, const void *data,
                                                     MPI_Aint count, MPI_Datatype datatype,
                                                     int src_vci, int dst_vci,
                                                     MPIR_Request * sreq)
{
    return MPIDI_BGL_am_isend_reply(comm, src_rank, handler_id, am_hdr, am_hdr_sz, data, count,
                                    datatype, src_vci, dst_vci, sreq);
}

/* The largest MPIDIG header an active message carries. */
MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_hdr_max_sz(void)
{
    return MPIDI_BGL_AM_HDR_MAX;
}

/* Header + data up to this size go in one eager active message; above it
 * MPIDIG uses its rendezvous (RTS/CTS) unless am_check_eager says otherwise. */
MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_limit(void)
{
    return MPIDI_BGL_EAGER_LIMIT - MPIDI_BGL_AM_HDR_MAX;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_buf_limit(void)
{
    return MPIDI_BGL_EAGER_LIMIT;
}

/* Where the message layer's protocol choice (one-packet, eager, adaptive
 * eager, rendezvous) meets MPIDIG's eager/rendezvous decision. */
MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz,
                                                      const void *data, MPI_Aint count,
                                                      MPI_Datatype datatype, MPIR_Request * sreq)
{
    return MPIDI_BGL_am_check_eager(am_hdr_sz, data_sz, data, count, datatype, sreq);
}

/* For a rendezvous MPIDIG queued as unexpected: the callback that sends
 * the grant once a receive matches (bgl_am.c). */
MPL_STATIC_INLINE_PREFIX MPIDIG_recv_data_copy_cb MPIDI_NM_am_get_data_copy_cb(uint32_t attr)
{
    return MPIDI_BGL_data_copy_cb(attr);
}

#endif /* BGL_AM_H_INCLUDED */
