/* The traffic matrix: packets and bytes the torus delivered, per ordered
 * pair of processors, counted by the engine at delivery.
 *
 * Protocol-blind on purpose: the source is the processor whose injection
 * FIFO the packet left (the engine knows it, the packet does not say it),
 * the destination the processor whose reception FIFO it reached; bytes are
 * the packet's chunks x 32 (headers included), the figure the per-link
 * counters use. It lives in the engine's own memory, so no rank can forge
 * another's traffic. The report turns processors into ranks with the job's
 * map (seg->rank_proc); the collective network is not a torus pair and is
 * not in it (its totals are in the report's "collective").
 *
 * tsim_rankmatrix is the plain rank x rank copy the report, bglemu-report
 * and bglemu-map share (docs/mapping.md). */
#ifndef TSIM_MATRIX_H
#define TSIM_MATRIX_H

#include <stdint.h>
#include <stdio.h>

#include "tsim.h"

typedef struct tsim_pair {
    uint64_t packets, bytes;
} tsim_pair;

/* nranks x nranks, index from * nranks + to. */
typedef struct tsim_rankmatrix {
    int nranks;
    tsim_pair *p;
} tsim_rankmatrix;

int tsim_rankmatrix_init(tsim_rankmatrix *m, int nranks);
void tsim_rankmatrix_free(tsim_rankmatrix *m);
/* Folds the engine's processor matrix into ranks: a CO node's coprocessor
 * counts as its rank; processors no rank runs on are left out. */
int tsim_rankmatrix_from_engine(tsim_rankmatrix *m, tsim_engine *e);

/* The report's "traffic" member (one line per nonzero pair, rank order). */
void tsim_rankmatrix_json(const tsim_rankmatrix *m, FILE *f);

#endif
