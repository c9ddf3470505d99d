/* bglemu CH4 netmod "bgl": dynamic processes. Blue Gene/L had none: spawn,
 * connect/accept and join fail with a clear MPI error, never a crash. */
#include "mpidimpl.h"
#include "bgl_impl.h"

#define MPIDI_BGL_NODYNAMIC(what) \
    MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__, \
                         MPI_ERR_SPAWN, "**bgl_nodynamic", "**bgl_nodynamic %s", (what))

int MPIDI_BGL_dynamic_send(uint64_t remote_gpid, int tag, const void *buf, int size, int timeout)
{
    return MPIDI_BGL_NODYNAMIC("dynamic_send");
}

int MPIDI_BGL_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    return MPIDI_BGL_NODYNAMIC("dynamic_recv");
}

int MPIDI_BGL_get_local_upids(MPIR_Comm * comm, int **local_upid_size, char **local_upids)
{
    return MPIDI_BGL_NODYNAMIC("get_local_upids");
}

int MPIDI_BGL_upids_to_gpids(int size, int *remote_upid_size, char *remote_upids,
                             uint64_t * remote_gpids)
{
    return MPIDI_BGL_NODYNAMIC("upids_to_gpids");
}
