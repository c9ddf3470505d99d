/* bglemu CH4 netmod "bgl": process identities. A communicator rank maps to a
 * world rank through CH4's address-vector tables; no node is "local" (no
 * shared-memory module: every byte crosses the emulated torus). */
#ifndef BGL_PROC_H_INCLUDED
#define BGL_PROC_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rank_is_local(int target, MPIR_Comm * comm)
{
    return MPIDIU_rank_is_local(target, comm);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_comm_get_gpid(MPIR_Comm * comm_ptr, int idx,
                                                    uint64_t * gpid_ptr, bool is_remote)
{
    int avtid = 0, lpid = 0;

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTRACOMM || is_remote)
        MPIDIU_comm_rank_to_pid(comm_ptr, idx, &lpid, &avtid);
    else
        MPIDIU_comm_rank_to_pid_local(comm_ptr, idx, &lpid, &avtid);
    *gpid_ptr = MPIDIU_GPID_CREATE(avtid, lpid);
    return MPI_SUCCESS;
}

#endif /* BGL_PROC_H_INCLUDED */
