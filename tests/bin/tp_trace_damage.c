/* Rank program for the trace tests (issue 12): the last rank damages its
 * own trace region (mpirun --trace) the way a stray write would — its
 * record count and capacity made huge, one valid record, one of an unknown
 * kind, one that ends before it starts, the rest zeros — then leaves
 * normally; the others just attach and leave. mpirun must read no more
 * than it gave, keep the valid record, leave the others out and say so.
 * Usage: tp_trace_damage (under mpirun --trace) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "packetlayer/pl_trace.h"

int main(void)
{
    const char *name = getenv("BGLEMU_TRACE");
    /* opened before attaching: mpirun removes the name once every rank has */
    int fd = name ? shm_open(name, O_RDWR, 0) : -1;
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_trace_damage: %s\n", err);
        return 1;
    }
    int last = pp.seg->geom.nranks - 1;
    if (pp.p->rank == last) {
        pl_trace_head h;
        long pg = sysconf(_SC_PAGESIZE);
        if (fd < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
            fprintf(stderr, "tp_trace_damage: no trace (run under mpirun --trace)\n");
            return 1;
        }
        pl_trace_buf *b = mmap(NULL, h.region, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                               (off_t)((uint64_t)pg + (uint64_t)pp.index * h.region));
        if (b == MAP_FAILED) {
            perror("tp_trace_damage: mmap");
            return 1;
        }
        b->rec[0] = (pl_trace_rec){100, 200, 0, -1, 0, 0, PLT_BLOCK, 0};
        b->rec[1] = (pl_trace_rec){100, 200, 0, -1, 0, 0, 77, 0};
        b->rec[2] = (pl_trace_rec){300, 200, 0, -1, 0, 0, PLT_BLOCK, 0};
        atomic_store(&b->n, UINT64_MAX / 2);
        b->cap = UINT64_MAX / 64;
    }
    pl_close(&pp, 0);
    return 0;
}
