/* Layouts, additions beside tsim.h's walk (tsim_layout.c): a copy
 * between a layout and flat memory in the caller's address space. (The
 * alltoall's per-peer layouts, which its engine program reads, are the
 * collectives': coll_a2a_lay, collectives/coll_internal.h.) */
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

#endif
