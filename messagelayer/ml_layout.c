/* Layouts: a message's data as a list of segments (a derived datatype
 * translated by the layer above) instead of one buffer. Packets are
 * gathered from it and scattered into it where they lie, with a cursor
 * that remembers the segment the last packet ended in, so that packets in
 * order (all but the dynamic ones) never search. Each segment a packet
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
    if (off < c->base) *c = (ml_cursor){0, 0}; /* behind the cursor: from the start */
    while (c->i < niov && off >= c->base + iov[c->i].iov_len) c->base += iov[c->i++].iov_len;
    unsigned segs = 0;
    size_t i = c->i, base = c->base, done = 0;
    while (done < n && i < niov) {
        size_t in = off + done - base, k = iov[i].iov_len - in;
        if (k > n - done) k = n - done;
        if (k) {
            char *seg = (char *)iov[i].iov_base + in, *f = (char *)flat + done;
            if (gather) memcpy(f, seg, k);
            else memcpy(seg, f, k);
            done += k;
            segs++;
        }
        if (in + k == iov[i].iov_len) base += iov[i++].iov_len;
    }
    c->i = i;
    c->base = base;
    return segs;
}

void ml_charge_ddt(pl_proc *pp, uint64_t cycles)
{
    if (!cycles) return;
    pl_charge(pp, cycles);
    atomic_fetch_add_explicit(&pp->p->ddt_cycles, cycles, memory_order_relaxed);
}
