/* What the network allows a collective at best, in link cycles: pure
 * arithmetic on the machine's geometry and parameters, header-only so that
 * programs at any level (the message-layer programs in collectives/bin, the
 * MPI benchmarks in adi3-device/bench) print the same bounds. */
#ifndef COLL_BOUNDS_H
#define COLL_BOUNDS_H

#include <stddef.h>

#include "../torus-sim/tsim.h"

/* Link cycles to carry m bytes of one message as packets: full 240-byte
 * payloads, the last one rounded up to 32-byte chunks, plus each packet's
 * wire overhead. */
static inline double coll_wire_cycles(const tsim_params *p, size_t m)
{
    double w = 0;
    for (size_t off = 0; off < m; off += TSIM_PAYLOAD_MAX) {
        size_t n = m - off < TSIM_PAYLOAD_MAX ? m - off : TSIM_PAYLOAD_MAX;
        w += (double)tsim_ser_cycles(p, (int)((TSIM_HDR_BYTES + n + TSIM_CHUNK - 1) / TSIM_CHUNK));
    }
    return w;
}

/* One link's payload bandwidth in bytes per cycle (full packets). */
static inline double coll_link_bytes_per_cycle(const tsim_params *p)
{
    return TSIM_PAYLOAD_MAX / (double)tsim_ser_cycles(p, TSIM_PKT_BYTES / TSIM_CHUNK);
}

/* Bisection bound in cycles of an alltoall of m bytes per pair among
 * nranks ranks spread evenly over the machine: for every dimension, cut it
 * in two halves; the pairs across the cut send |A||B| messages each way
 * over the links that cross it (two per line on a torus ring longer than
 * 2, else one). The largest such time bounds any alltoall. */
static inline double coll_bisection_cycles(const tsim_geom *g, const tsim_params *p, int nranks,
                                           size_t m)
{
    double best = 0, w = coll_wire_cycles(p, m);
    for (int d = 0; d < 3; d++) {
        int n = g->dim[d];
        if (n < 2) continue;
        double per_plane = (double)nranks / n;
        double a = per_plane * (n / 2), b = per_plane * (n - n / 2);
        double links = (double)(g->nnodes / n) * (g->torus[d] && n > 2 ? 2 : 1);
        double t = a * b * w / links;
        if (t > best) best = t;
    }
    return best;
}

#endif
