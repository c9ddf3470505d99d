/* Layouts: data described as a list of segments (a derived datatype
 * translated) rather than one buffer. The message layer gathers packets
 * from and scatters them into such lists, whoever drives its loop (the
 * processor, or the engine: tsim_prog.h). Both walk them
 * here, piece by piece, so their segment counts — which cost simulated
 * time — are the same by construction. */
#include <string.h>
#include <sys/uio.h>

#include "tsim.h"
#include "tsim_layout.h"

size_t tsim_layout_piece(const struct iovec *iov, size_t niov, tsim_lcur *c, size_t off, size_t n,
                         uint64_t *addr)
{
    if (off < c->base) *c = (tsim_lcur){0, 0}; /* behind the cursor: from the start */
    while (c->i < niov && off >= c->base + iov[c->i].iov_len) c->base += iov[c->i++].iov_len;
    if (c->i == niov || !n) return 0;
    size_t in = off - c->base, k = iov[c->i].iov_len - in;
    *addr = (uint64_t)(uintptr_t)iov[c->i].iov_base + in;
    return k < n ? k : n;
}

unsigned tsim_layout_segs(const struct iovec *iov, size_t niov, tsim_lcur *c, size_t off, size_t n)
{
    unsigned segs = 0;
    uint64_t a;
    for (size_t done = 0, k; done < n && (k = tsim_layout_piece(iov, niov, c, off + done, n - done, &a));
         done += k)
        segs++;
    return segs;
}

unsigned tsim_layout_copy(const struct iovec *iov, size_t niov, tsim_lcur *c, size_t off,
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
