/* What the MPI collective benchmarks (coll_bcast, coll_alltoall) share:
 * size options, the machine they run on, the link arithmetic and the
 * timing rule. Header-only: each program is one translation unit built with
 * mpicc against the installed headers. */
#ifndef COLL_BENCH_H
#define COLL_BENCH_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torus-sim/tsim.h"

/* exported by the bgl netmod inside libmpi (bgl_clock.c) */
int MPIDI_BGL_machine(tsim_geom *geom, tsim_params *prm) __attribute__((weak));

/* "4096", "4K", "64k", "4M" -> bytes; -1 if malformed */
static inline int cb_parse_size(const char *s, size_t *out)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 0);
    if (e == s || *s == '-') return -1;
    if (*e == 'k' || *e == 'K') v <<= 10, e++;
    else if (*e == 'm' || *e == 'M') v <<= 20, e++;
    if (*e) return -1;
    *out = (size_t)v;
    return 0;
}

/* Fills geom and prm from the netmod; 0, or -1 with a message from rank 0
 * when the program does not run on bglemu's MPI. */
static inline int cb_machine(const char *prog, tsim_geom *geom, tsim_params *prm)
{
    if (MPIDI_BGL_machine && MPIDI_BGL_machine(geom, prm) == 0) return 0;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (!me)
        fprintf(stderr, "%s: not running on bglemu's MPI (start it with bglemu's mpirun)\n", prog);
    return -1;
}

/* Link cycles to carry m bytes of one message as packets: full 240-byte
 * payloads, the last one rounded up to 32-byte chunks, plus each packet's
 * wire overhead. */
static inline double cb_wire_cycles(const tsim_params *p, size_t m)
{
    double w = 0;
    for (size_t off = 0; off < m; off += TSIM_PAYLOAD_MAX) {
        size_t n = m - off < TSIM_PAYLOAD_MAX ? m - off : TSIM_PAYLOAD_MAX;
        size_t chunks = (TSIM_HDR_BYTES + n + TSIM_CHUNK - 1) / TSIM_CHUNK;
        w += (double)(chunks * TSIM_CHUNK + p->wire_overhead) * (double)p->link_cycles_per_byte;
    }
    return w;
}

/* One link's payload bandwidth in bytes per cycle (full packets). */
static inline double cb_link_bytes_per_cycle(const tsim_params *p)
{
    return TSIM_PAYLOAD_MAX / ((double)(TSIM_PKT_BYTES + p->wire_overhead) *
                               (double)p->link_cycles_per_byte);
}

/* Simulated seconds of one collective on comm: from the first rank's start
 * (everyone leaves a barrier first) to the last rank's end. The clocks are
 * one timeline, so max(end) - min(start) is the collective's span. */
static inline double cb_span(double t0, double t1, MPI_Comm comm)
{
    double t[2] = {-t0, t1}, r[2];
    MPI_Allreduce(t, r, 2, MPI_DOUBLE, MPI_MAX, comm);
    return r[0] + r[1];
}

/* Every rank agrees whether any rank saw wrong data. */
static inline int cb_any(int bad, MPI_Comm comm)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, comm);
    return any;
}

/* The next size of a sweep min, min*step, ..., always ending at max. */
static inline size_t cb_next_size(size_t s, size_t step, size_t max)
{
    return s < max && s * step > max ? max : s * step;
}

#endif
