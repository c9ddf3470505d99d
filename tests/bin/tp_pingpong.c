/* Rank program for mpirun tests: ranks 0 and 1 ping-pong ROUNDS messages of
 * SIZE bytes (one packet each) through the packet layer and check every
 * byte; other ranks just attach and close. Usage: tp_pingpong [ROUNDS] [SIZE]
 * Prints one line per rank 0 with the simulated half round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packetlayer/pl.h"

static void recv_check(pl_proc *pp, int round, int from, size_t size)
{
    int f;
    while ((f = pl_poll(pp, TSIM_WAKE_REC_ALL)) < 0)
        if (pl_block(pp, TSIM_WAKE_REC_ALL, "tp_pingpong: the next ping") != 0) {
            fprintf(stderr, "tp_pingpong: job aborted while waiting\n");
            exit(3);
        }
    uint8_t buf[TSIM_PAYLOAD_MAX];
    pl_read(pp, f, 0, buf, size);
    for (size_t i = 0; i < size; i++)
        if (buf[i] != (uint8_t)(round * 31 + from * 7 + (int)i)) {
            fprintf(stderr, "tp_pingpong: round %d byte %zu corrupted\n", round, i);
            exit(4);
        }
    pl_consume(pp, f);
}

static void send(pl_proc *pp, int dst_proc, int round, int me, size_t size)
{
    uint8_t buf[TSIM_PAYLOAD_MAX];
    for (size_t i = 0; i < size; i++) buf[i] = (uint8_t)(round * 31 + me * 7 + (int)i);
    tsim_hwhdr hw;
    pl_header(pp, &hw, dst_proc, size, 0);
    pl_inject_wait(pp, 0, &hw, NULL, buf, size);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    size_t size = argc > 2 ? (size_t)atoi(argv[2]) : 64;
    if (rounds < 1 || size < 1 || size > TSIM_PAYLOAD_MAX) {
        fprintf(stderr, "usage: tp_pingpong [ROUNDS >= 1] [SIZE 1..240]\n");
        return 2;
    }
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_pingpong: %s\n", err);
        return 2;
    }
    int me = pp.p->rank, n = pp.seg->geom.nranks;
    if (me < 2 && n >= 2) {
        int peer = 1 - me, dst = pp.seg->rank_proc[peer];
        for (int i = 0; i < rounds; i++) {
            if (me == 0) {
                send(&pp, dst, i, me, size);
                recv_check(&pp, i, peer, size);
            } else {
                recv_check(&pp, i, peer, size);
                send(&pp, dst, i, me, size);
            }
        }
        if (me == 0)
            printf("tp_pingpong: %d round trips of %zu bytes, %llu cycles per half round trip\n",
                   rounds, size, (unsigned long long)(pl_now(&pp) / (2 * (uint64_t)rounds)));
    }
    pl_close(&pp, 0);
    return 0;
}
