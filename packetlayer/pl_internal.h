/* What the packet layer's files share and nothing above them uses. */
#ifndef PL_INTERNAL_H
#define PL_INTERNAL_H

#include "pl.h"

/* News for the engine at time t (a packet injected, a slot freed, a barrier
 * armed; UINT64_MAX for none, only a clock that moved): kicks the sleeping
 * engine only once it could move (pl.c). */
void pl_kick_lazy(pl_proc *pp, uint64_t t);

/* After each write the engine takes (tsim_proc.writes): one writer. */
static inline void pl_wrote(pl_proc *pp)
{
    atomic_store_explicit(&pp->p->writes, atomic_load_explicit(&pp->p->writes, memory_order_relaxed) + 1,
                          memory_order_release);
}

#endif
