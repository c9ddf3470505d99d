/* What ml_bw and ml_multilink time: messages to several destinations at
 * once, the answers, and the sends' completion. */
#ifndef ML_EXCHANGE_H
#define ML_EXCHANGE_H

#include "messagelayer/ml_bench.h"

#define ML_EXCHANGE_MAX 8

static void ml_exchange_count(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

/* Posts n messages of *size bytes (their header: the size), message i to
 * dst[i] (dst NULL: all to peer), then waits until recv messages arrived
 * and the sends are done. */
static inline int ml_exchange(ml_ctx *ml, ml_bench *b, const int *dst, int peer, int n, ml_proto proto,
                              size_t *size, int recv, const char *who)
{
    ml_msg m[ML_EXCHANGE_MAX];
    volatile int done = 0;
    for (int i = 0; i < n; i++) {
        m[i] = (ml_msg){.dst = dst ? dst[i] : peer, .hdr = size, .hdrlen = sizeof *size, .buf = b->sbuf, .len = *size,
                        .proto = proto, .done = ml_exchange_count, .arg = (void *)&done};
        if (ml_send(ml, &m[i]) != 0) return -1;
    }
    if (ml_bench_recv(ml, b, recv) != 0) return -1;
    while (done < n)
        if (!ml_advance(ml) && ml_wait_idle(ml, who, 1) != 0) return -1;
    return 0;
}

#endif
