/* The data path every protocol shares: one data packet of a message out,
 * one data packet's bytes into its reception. Written once, run by two
 * drivers: the rank, through its own port (packetlayer/pl_port.c), and
 * the engine while the rank is blocked (ml_engine.c, through the engine's
 * port), at the same simulated times and costs. What differs between the
 * drivers is only where a message's bytes are read from (the rank's
 * memory in place, or read ahead from it by the engine): the caller's
 * ml_bytes_fn. */
#include <string.h>

#include "ml_internal.h"

void ml_data_charge(tsim_port *pt, ml_ho_tx *t, const struct iovec *iov, ml_cursor *cur, uint64_t off,
                    size_t n)
{
    if (!t->niov || t->charged == off + 1) return;
    t->charged = off + 1;
    tsim_port_charge_ddt(pt, (uint64_t)ml_layout_segs(iov, t->niov, cur, off, n) * pt->prm->ddt_seg_cycles);
}

int ml_data_put(tsim_port *pt, const ml_sink *k, uint64_t off, const void *data, size_t n)
{
    uint64_t w = off < k->cap ? (off + n <= k->cap ? n : k->cap - off) : 0;
    if (!w) return 0;
    if ((!k->niov || k->buf) && pt->ops->write(pt, k->buf + off, data, w) != 0) return -1;
    if (!k->niov) return 0;
    if (k->buf) return (int)ml_layout_segs(k->iov, k->niov, k->cur, off, w); /* its host stage */
    /* scattered into the layout: each piece its own write */
    int segs = 0;
    size_t got;
    uint64_t a;
    for (uint64_t done = 0; done < w; done += got, segs++) {
        got = ml_layout_piece(k->iov, k->niov, k->cur, off + done, w - done, &a);
        if (!got || pt->ops->write(pt, a, (const uint8_t *)data + done, got) != 0) return -1;
    }
    return segs;
}
