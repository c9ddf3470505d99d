/* Layouts: a message's data as a list of segments (a derived datatype
 * translated by the layer above) instead of one buffer. Packets are
 * gathered from it and scattered into it where they lie, with a cursor
 * that remembers the segment the last packet ended in, so that packets in
 * order (all but the dynamic ones) never search (the walk is
 * torus-sim/tsim_layout.c's, which the engine's data path shares). Each segment a packet
 * touches costs ddt_seg_cycles on the processor that copies it. */
#include <string.h>

#include "ml_internal.h"

size_t ml_layout_bytes(const struct iovec *iov, size_t niov)
{
    size_t n = 0;
    for (size_t i = 0; i < niov; i++) n += iov[i].iov_len;
    return n;
}

unsigned ml_layout_copy(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off,
                        void *flat, size_t n, int gather)
{
    unsigned segs = 0;
    uint64_t a;
    for (size_t done = 0, k; done < n && (k = tsim_layout_piece(iov, niov, c, off + done, n - done, &a));
         done += k, segs++) {
        char *seg = (char *)(uintptr_t)a, *f = (char *)flat + done;
        if (gather) memcpy(f, seg, k);
        else memcpy(seg, f, k);
    }
    return segs;
}

void ml_charge_ddt(pl_proc *pp, uint64_t cycles)
{
    if (!cycles) return;
    pl_charge(pp, cycles);
    atomic_fetch_add_explicit(&pp->p->ddt_cycles, cycles, memory_order_relaxed);
}
