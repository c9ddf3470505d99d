/* bglemu CH4 netmod "bgl": the clock the MPI calls on the timeline start
 * at (mpirun --trace, adi3-device/trace/mpi_trace.c). The wrapper runs
 * before the call enters MPICH, so the computation since the last MPI call
 * is charged first, as the call's own entry would charge it; a rank that is
 * not traced charges nothing here. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

#include "packetlayer/pl_trace.h"

__attribute__ ((visibility("default"))) uint64_t MPIDI_BGL_trace_clock(void);
uint64_t MPIDI_BGL_trace_clock(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->pp || pl_trace_clock() == UINT64_MAX)
        return UINT64_MAX;
    MPIDI_BGL_clock_enter();
    uint64_t t = pl_now(g->pp);
    MPIDI_BGL_clock_leave();
    return t;
}
