/* Measurement kernels (simulated cycles) for the message-layer programs
 * and the calibration tests. */
#ifndef ML_BENCH_H
#define ML_BENCH_H

#include "ml.h"
#include "ml_size.h"

typedef struct ml_bench {
    uint8_t *sbuf, *rbuf; /* cache-line aligned, cap bytes each */
    size_t cap;
    volatile int sent, received;
    int expected; /* messages consumed by ml_bench_recv so far */
} ml_bench;

void ml_bench_init(ml_bench *b, size_t cap);
void ml_bench_free(ml_bench *b);
/* The upcall to pass to ml_init with the ml_bench as its argument. */
ml_upcall_fn ml_bench_upcall(void);
/* Sends one message and waits until its buffer is free. */
int ml_bench_send(ml_ctx *ml, ml_bench *b, int dst, ml_proto proto, size_t size);
/* Waits for the next n messages (counting from what earlier calls took, so a
 * message that arrived early is not counted twice). */
int ml_bench_recv(ml_ctx *ml, ml_bench *b, int n);
/* Half round trip in cycles between this rank and peer, averaged over
 * iters round trips after one warm-up; 0 if the job aborted. */
uint64_t ml_pingpong(ml_ctx *ml, ml_bench *b, int peer, int initiator, ml_proto proto, size_t size,
                     int iters);

#endif
