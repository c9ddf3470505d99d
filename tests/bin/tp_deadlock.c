/* Rank program for mpirun tests: every rank waits for a packet nobody
 * sends. mpirun must report the deadlock (which ranks wait on what) and
 * exit non-zero instead of hanging. */
#include <stdio.h>

#include "packetlayer/pl.h"

int main(void)
{
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_deadlock: %s\n", err);
        return 2;
    }
    char why[64];
    snprintf(why, sizeof why, "a message from rank %d", (pp.p->rank + 1) % pp.seg->geom.nranks);
    if (pl_block(&pp, TSIM_WAKE_REC_ALL, why) != 0) return 1; /* released by the deadlock */
    pl_close(&pp, 0);
    return 0;
}
