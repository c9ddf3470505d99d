/* Rank program for mpirun tests: rank VICTIM damages its own injection
 * FIFO 0 the way a stray write would (straight into the ring, not through
 * pl_inject); the others wait for a packet that never comes. The engine
 * must refuse what it reads and mpirun name the rank.
 * Usage: tp_corrupt VICTIM chunks0|chunks9|dst|flags|group|head|back|past */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packetlayer/pl.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tp_corrupt VICTIM chunks0|chunks9|dst|flags|group|head|back|past\n");
        return 2;
    }
    int victim = atoi(argv[1]);
    const char *what = argv[2];
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_corrupt: %s\n", err);
        return 2;
    }
    if (pp.p->rank != victim) {
        pl_block(&pp, TSIM_WAKE_REC_ALL, "a packet from the damaged rank");
        pl_close(&pp, 1);
        return 1;
    }
    /* simulated time moves on first, so that "past" has a past */
    pl_charge(&pp, 10000);
    pl_sync(&pp);
    tsim_ring *r = &pp.p->inj[0];
    uint32_t h = atomic_load(&r->head);
    tsim_slot *s = &r->slot[h % TSIM_RING_SLOTS];
    pl_header(&pp, &s->p.hw, 0, 8, 0); /* a good packet to rank 0's processor... */
    s->m.t_inject = pp.vt;
    s->m.src = (uint32_t)pp.index;
    if (!strcmp(what, "chunks0")) s->p.hw.chunks = 0; /* ...then the damage */
    else if (!strcmp(what, "chunks9")) s->p.hw.chunks = 201;
    else if (!strcmp(what, "dst")) memset(s->p.hw.dst, 255, 3);
    else if (!strcmp(what, "flags")) s->p.hw.flags = 0x80;
    else if (!strcmp(what, "group")) s->p.hw.group = 7;
    else if (!strcmp(what, "past")) s->m.t_inject = 5;
    if (!strcmp(what, "head")) h += 100000;
    else if (!strcmp(what, "back")) h -= 3;
    else h += 1;
    atomic_store(&r->head, h);
    tsim_kick(pp.seg);
    pl_block(&pp, TSIM_WAKE_REC_ALL, "the end of the job");
    pl_close(&pp, 1);
    return 1;
}
