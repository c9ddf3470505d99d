/* Layouts, additions beside tsim.h's walk (tsim_layout.c): a copy
 * between a layout and flat memory in the caller's address space, and the
 * alltoall's per-peer layouts as the engine's data path reads them
 * (collectives/coll_a2a.c writes them, tsim_proxy_a2a.c reads them). */
#ifndef TSIM_LAYOUT_H
#define TSIM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tsim.h"

/* Copies n bytes at data offset off between the layout and flat (gather:
 * layout to flat; else flat to layout). Returns the segments it touched,
 * tsim_layout_segs's count for the same bytes. */
unsigned tsim_layout_copy(const struct iovec *iov, size_t niov, tsim_lcur *c, size_t off,
                          void *flat, size_t n, int gather);

/* tsim_prx_a2a.resv (the alltoall's flags): */
/* the peer table is n tsim_prx_a2a_peer followed by n tsim_prx_a2a_lay */
#define TSIM_A2A_LAYOUTS 1u
/* the packet at the schedule's cursor was gathered (and charged) already */
#define TSIM_A2A_GATHERED 2u

/* One member's blocks as layouts: niov > 0 means its block to send (to
 * receive) is the siov (riov) list of sniov (rniov) struct iovec in the
 * processor's memory, scount (rcount) bytes in total; sbuf (rbuf) is then
 * unused. Packet w of a block is its bytes [w * TSIM_PAYLOAD_MAX, ...);
 * each costs ddt_seg_cycles per segment it touches to whoever gathers
 * (before its first FIFO try, once) or scatters it (after the dispatch). */
typedef struct tsim_prx_a2a_lay {
    uint64_t siov, sniov, riov, rniov;
} tsim_prx_a2a_lay;

#endif
