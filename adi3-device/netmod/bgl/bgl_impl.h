/* bglemu CH4 netmod "bgl": what the netmod's implementation files share. */
#ifndef BGL_IMPL_H_INCLUDED
#define BGL_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"

/* Limits of the active messages (placeholders until the message layer is
 * plugged in: the header must fit one torus packet's payload next to ours). */
#define MPIDI_BGL_AM_HDR_MAX     192
#define MPIDI_BGL_EAGER_LIMIT    (16 * 1024)

/* An error for what the skeleton does not do yet: the application sees
 * "<what> is not yet implemented in the bgl netmod". */
#define MPIDI_BGL_NOTIMPL(what) \
    MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__, \
                         MPI_ERR_OTHER, "**bgl_notimpl", "**bgl_notimpl %s", (what))

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

#endif /* BGL_IMPL_H_INCLUDED */
