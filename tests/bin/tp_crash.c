/* Rank program for mpirun tests: rank VICTIM (default 1) SIGKILLs itself
 * after attaching; the others wait for a packet that never comes, so only
 * mpirun's teardown ends them. Usage: tp_crash [VICTIM] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "packetlayer/pl.h"

int main(int argc, char **argv)
{
    int victim = argc > 1 ? atoi(argv[1]) : 1;
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_crash: %s\n", err);
        return 2;
    }
    if (pp.p->rank == victim) raise(SIGKILL);
    pl_block(&pp, TSIM_WAKE_REC_ALL, "a packet from the crashed rank");
    return 1;
}
