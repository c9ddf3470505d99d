/* Rank program for mpirun tests: rank VICTIM (default 1) SIGKILLs itself
 * after attaching (nothing recorded: mpirun names it from its wait status),
 * or with "segv" writes through a NULL pointer (recorded by pl_fate); the
 * others wait for a packet that never comes, so only mpirun's teardown ends
 * them. Usage: tp_crash [VICTIM [segv]] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
    if (pp.p->rank == victim) {
        if (argc > 2 && !strcmp(argv[2], "segv")) {
            /* a page it may not write, and the default action: a real
             * SIGSEGV kill even under make check-asan (UBSan catches a
             * store through NULL first, ASan's handler a fault) */
            volatile int *bad = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            signal(SIGSEGV, SIG_DFL);
            *bad = 1;
        }
        raise(SIGKILL);
    }
    pl_block(&pp, TSIM_WAKE_REC_ALL, "a packet from the crashed rank");
    return 1;
}
