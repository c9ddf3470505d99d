/* Layouts: a message's data as a list of segments (a derived datatype
 * translated by the layer above) instead of one buffer. Packets are
 * gathered from it and scattered into it where they lie, with a cursor
 * that remembers the segment the last packet ended in, so that packets in
 * order (all but the dynamic ones) never search; the engine's data path
 * walks it with the same functions. Each segment a packet touches costs
 * ddt_seg_cycles on the processor that copies it. */
#include <stdlib.h>
#include <string.h>

#include "ml_internal.h"

size_t ml_layout_bytes(const struct iovec *iov, size_t niov)
{
    size_t n = 0;
    for (size_t i = 0; i < niov; i++) n += iov[i].iov_len;
    return n;
}

size_t ml_layout_piece(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, size_t n,
                       uint64_t *addr)
{
    if (off < c->base) *c = (ml_cursor){0, 0}; /* behind the cursor: from the start */
    while (c->i < niov && off >= c->base + iov[c->i].iov_len) c->base += iov[c->i++].iov_len;
    if (c->i == niov || !n) return 0;
    size_t in = off - c->base, k = iov[c->i].iov_len - in;
    *addr = (uint64_t)(uintptr_t)iov[c->i].iov_base + in;
    return k < n ? k : n;
}

unsigned ml_layout_segs(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, size_t n)
{
    unsigned segs = 0;
    uint64_t a;
    for (size_t done = 0, k; done < n && (k = ml_layout_piece(iov, niov, c, off + done, n - done, &a));
         done += k)
        segs++;
    return segs;
}

unsigned ml_layout_copy(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, void *flat,
                        size_t n, int gather)
{
    unsigned segs = 0;
    uint64_t a;
    for (size_t done = 0, k; done < n && (k = ml_layout_piece(iov, niov, c, off + done, n - done, &a));
         done += k, segs++) {
        char *seg = (char *)(uintptr_t)a, *f = (char *)flat + done;
        if (gather) memcpy(f, seg, k);
        else memcpy(seg, f, k);
    }
    return segs;
}

/* Host staging. A packet moved between a processor and a layout costs the
 * host one iovec per segment, and when the engine moves it for a blocked
 * processor (process_vm_readv / process_vm_writev) each remote iovec pins
 * its page again: 16,384 segments of 128 bytes made a 2 MiB transfer
 * several times slower on the host than the same bytes contiguous. So a
 * layout of many small segments gets one contiguous host buffer: a send
 * gathers into it once when it is posted (its data may not change until
 * the send completes), a receive scatters out of it once at completion
 * (nothing may read a receive buffer before). Packets then move to and
 * from the stage in one piece each, and adjacent ones merge. Their
 * segments are still walked, counted and charged as if each packet were
 * gathered or scattered where it lies: simulated time does not see the
 * stage. */
int ml_stage_wanted(const ml_ctx *ml, size_t niov, size_t bytes)
{
    return ml->stage && niov >= ML_STAGE_MIN_SEGS && bytes < (size_t)ML_STAGE_AVG_SEG * niov &&
           bytes <= ML_STAGE_MAX_BYTES;
}

uint8_t *ml_stage_gather(const struct iovec *iov, size_t niov, size_t bytes)
{
    uint8_t *stage = malloc(bytes ? bytes : 1); /* NULL: the packets gather piece by piece */
    ml_cursor c = {0, 0};
    if (stage) ml_layout_copy(iov, niov, &c, 0, stage, bytes, 1);
    return stage;
}

void ml_stage_scatter(const struct iovec *iov, size_t niov, const uint8_t *stage, size_t bytes)
{
    ml_cursor c = {0, 0};
    ml_layout_copy(iov, niov, &c, 0, (void *)stage, bytes, 0);
}

void ml_charge_ddt(pl_proc *pp, uint64_t cycles)
{
    if (!cycles) return;
    pl_charge(pp, cycles);
    atomic_fetch_add_explicit(&pp->p->ddt_cycles, cycles, memory_order_relaxed);
}
