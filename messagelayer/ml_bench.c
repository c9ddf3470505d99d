/* Measurement kernels shared by ml_pong, ml_bw, ml_multilink and the
 * calibration tests: all in simulated cycles, so they are exact. */
#include <stdlib.h>
#include <string.h>

#include "ml_bench.h"
#include "ml_internal.h"

static void count_done(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

/* Every message lands in one buffer; completions are counted. */
static void bench_upcall(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len,
                         ml_recv *out, void *uarg)
{
    (void)ml, (void)src, (void)hdr, (void)hdrlen;
    ml_bench *b = uarg;
    out->buf = b->rbuf;
    out->cap = len <= b->cap ? len : b->cap;
    out->done = count_done;
    out->arg = (void *)&b->received;
}

void ml_bench_init(ml_bench *b, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->cap = cap;
    b->rbuf = aligned_alloc(64, cap ? (cap + 63) / 64 * 64 : 64);
    b->sbuf = aligned_alloc(64, cap ? (cap + 63) / 64 * 64 : 64);
    if (!b->rbuf || !b->sbuf) abort();
    for (size_t i = 0; i < cap; i++) b->sbuf[i] = (uint8_t)(i * 13 + 7);
}

void ml_bench_free(ml_bench *b)
{
    free(b->rbuf);
    free(b->sbuf);
}

ml_upcall_fn ml_bench_upcall(void) { return bench_upcall; }

static int wait_count(ml_ctx *ml, volatile int *c, int n)
{
    while (*c < n)
        if (!ml_advance(ml) && ml_wait_idle(ml, "benchmark", 1) != 0) return -1;
    return 0;
}

int ml_bench_send(ml_ctx *ml, ml_bench *b, int dst, ml_proto proto, size_t size)
{
    ml_msg m = {.dst = dst, .hdr = &size, .hdrlen = sizeof size, .buf = b->sbuf, .len = size,
                .proto = proto, .done = count_done, .arg = (void *)&b->sent};
    int before = b->sent;
    if (ml_send(ml, &m) != 0) return -1;
    return wait_count(ml, &b->sent, before + 1);
}

int ml_bench_recv(ml_ctx *ml, ml_bench *b, int n)
{
    b->expected += n;
    return wait_count(ml, &b->received, b->expected);
}

uint64_t ml_pingpong(ml_ctx *ml, ml_bench *b, int peer, int initiator, ml_proto proto, size_t size,
                     int iters)
{
    pl_proc *pp = ml_proc(ml);
    uint64_t t0 = 0;
    for (int i = -1; i < iters; i++) { /* one warm-up round trip */
        if (i == 0) t0 = pl_now(pp);
        if (initiator) {
            if (ml_bench_send(ml, b, peer, proto, size) || ml_bench_recv(ml, b, 1)) return 0;
        } else {
            if (ml_bench_recv(ml, b, 1) || ml_bench_send(ml, b, peer, proto, size)) return 0;
        }
    }
    return (pl_now(pp) - t0) / (2 * (uint64_t)(iters > 0 ? iters : 1));
}
