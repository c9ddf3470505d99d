/* The collective network's shape and counters (torus-sim/tsim_tree.c).
 *
 * The tree: node i's parent is node (i - 1) / 2 (node index, x fastest),
 * node 0 is the root. Every node uses at most three tree links (one up,
 * two down), as BG/L's routers have, and the tree is as shallow as a tree
 * of such nodes can be: depth floor(log2(nodes)), 6 on 4x4x4, 9 on 8x8x8,
 * 16 on the full 64x32x32 machine. docs/collectives.md. */
#ifndef TSIM_TREE_H
#define TSIM_TREE_H

#include "tsim.h"

/* Parent of node in the collective network, -1 for the root. */
static inline int tsim_tree_parent(const tsim_geom *g, int node)
{
    (void)g;
    return node > 0 ? (node - 1) / 2 : -1;
}

/* Tree links between node and the root. */
static inline int tsim_tree_level(int node)
{
    int d = 0;
    for (; node > 0; node = (node - 1) / 2) d++;
    return d;
}

/* Longest path from the root to a node. */
static inline int tsim_tree_depth(const tsim_geom *g)
{
    return tsim_tree_level(g->dim[0] * g->dim[1] * g->dim[2] - 1);
}

/* Cycles a packet occupies a tree link: 256 bytes plus the wire overhead. */
static inline uint64_t tsim_tree_ser(const tsim_params *p)
{
    return (TSIM_TREE_PAYLOAD + p->tree_wire_overhead) * p->tree_cycles_per_byte;
}

/* Global interrupt latency of a partition: up and down the tree's depth. */
static inline uint64_t tsim_gi_latency(const tsim_geom *g, const tsim_params *p)
{
    return 2 * (uint64_t)tsim_tree_depth(g) * p->gi_hop_latency;
}

/* The ALU: acc = acc op in, element by element over a packet's payload
 * (op TSIM_TOP_*, operands of width 4, 8 or 16 bytes, sign 0 or 1). */
void tsim_tree_alu(uint8_t *acc, const uint8_t *in, int op, int width, int sign);

/* A header the collective network carries (class, ALU operation, operand
 * width and sign, virtual channel, group): 1, else 0. */
int tsim_thdr_ok(const tsim_thdr *h);

/* What the collective networks carried, valid after the run. */
typedef struct tsim_tree_stats {
    uint64_t injected;   /* packets processors wrote into their tree FIFOs */
    uint64_t combined;   /* ALU combines (a router joining two or more packets) */
    uint64_t delivered;  /* packets written into tree reception FIFOs */
    uint64_t barriers;   /* global interrupts fired */
} tsim_tree_stats;
void tsim_engine_tree_stats(tsim_engine *e, tsim_tree_stats *s);
/* Counters of the tree link between node and its parent: up (towards the
 * root) when up is 1, down otherwise. NULL for the root. */
const tsim_link_stats *tsim_engine_tree_link(tsim_engine *e, int node, int up);

#endif
