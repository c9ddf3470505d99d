/* bglemu CH4 netmod "bgl": the clock the MPI calls on the timeline start
 * at (mpirun --trace, adi3-device/trace/mpi_trace.c). The tracing wrapper
 * runs before anything else of the call, so the computation since the last
 * MPI call is charged first, as the call's entry (the wtime library's
 * MPIDI_BGL_mpi_enter, or without it the netmod's own) would charge it,
 * and the mark moves on: that entry then finds nothing more to charge. A
 * rank that is not traced charges nothing here. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

#include "packetlayer/pl_trace.h"

void MPIDI_BGL_mpi_enter(void);       /* bgl_clock.c */
void MPIDI_BGL_mpi_leave(void);

__attribute__ ((visibility("default"))) uint64_t MPIDI_BGL_trace_clock(void);
uint64_t MPIDI_BGL_trace_clock(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->pp || pl_trace_clock() == UINT64_MAX)
        return UINT64_MAX;
    uint64_t t;
    if (g->hooked) {
        MPIDI_BGL_mpi_enter();
        t = pl_now(g->pp);
        MPIDI_BGL_mpi_leave();
    } else {
        MPIDI_BGL_clock_enter();
        t = pl_now(g->pp);
        MPIDI_BGL_clock_leave();
    }
    return t;
}
