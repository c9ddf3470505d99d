/* How a rank started by mpirun finds its processor: BGLEMU_SEG names the
 * machine segment, BGLEMU_RANK its rank (or, under hydra, PMI_RANK: the
 * world rank hydra gave the process); the segment maps rank -> processor. */
#include <stdlib.h>
#include <string.h>

#include "pl.h"

int pl_attach_env(pl_proc *pp, char *err, size_t errlen)
{
    const char *name = getenv("BGLEMU_SEG"), *rk = getenv("BGLEMU_RANK");
    if (!rk) rk = getenv("PMI_RANK");
    if (!name || !rk) {
        snprintf(err, errlen, "BGLEMU_SEG and BGLEMU_RANK (or PMI_RANK) not set: run this program with bglemu's mpirun");
        return -1;
    }
    char *end;
    long rank = strtol(rk, &end, 10);
    tsim_seg *seg = tsim_seg_attach(name, err, errlen);
    if (!seg) return -1;
    if (*end || rank < 0 || rank >= seg->geom.nranks || seg->rank_proc[rank] < 0) {
        snprintf(err, errlen, "BGLEMU_RANK=%s is not a rank of this job (%d ranks)", rk,
                 seg->geom.nranks);
        tsim_seg_detach(seg);
        return -1;
    }
    /* read-only but for its own pages, before it runs any of its code */
    if (tsim_seg_protect(seg, seg->rank_proc[rank], err, errlen) != 0 ||
        pl_open(pp, seg, seg->rank_proc[rank], 0) != 0) {
        tsim_seg_detach(seg);
        return -1;
    }
    /* best effort: without it mpirun falls back to what it saw */
    (void)pl_fate_install(pp);
    return 0;
}
