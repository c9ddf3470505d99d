/* Where ranks should go: the weighted communication graph of a run, what a
 * placement costs on the machine, and a placement built with Scotch and
 * refined by pair swaps. Used by bglemu-map (docs/mapping.md).
 *
 * A placement is what ml_map holds: rank -> processor index node *
 * TSIM_CPUS + t. Costs are predictions from the traffic matrix alone:
 * every pair's bytes follow the deterministic dimension-order route (the
 * one eager messages take; adaptive packets may spread). */
#ifndef MAP_H
#define MAP_H

#include <stddef.h>
#include <stdint.h>

#include "../torus-sim/tsim.h"

typedef struct map_edge {
    int from, to;
    uint64_t bytes;
} map_edge;

/* Directed traffic between distinct ranks, bytes > 0, and per rank the
 * edges that touch it (either end), for the refinement's deltas. */
typedef struct map_graph {
    int n;
    int nedges;
    map_edge *e;
    int *off, *inc; /* inc[off[r] .. off[r+1]): edges with r at either end */
} map_graph;

/* Builds the graph of n ranks from directed pairs (self pairs and zero
 * bytes are dropped; repeated pairs add up). 0, or -1 with a reason. */
int map_graph_build(map_graph *gr, int n, const map_edge *e, int ne, char *err, size_t len);
void map_graph_free(map_graph *gr);

/* The machine the graph is placed on: geometry with cpus (1 CO, 2 VN),
 * and the neighbour table routes walk. */
typedef struct map_machine {
    tsim_geom g;
    int nprocs;  /* nnodes * TSIM_CPUS */
    int *nbr;    /* node * TSIM_NPORTS + port -> node, -1 none */
} map_machine;

int map_machine_init(map_machine *m, const tsim_geom *g);
void map_machine_free(map_machine *m);

/* The links (node * TSIM_NPORTS + port) of the deterministic route from
 * node a to node b, into links (room for 3 * TSIM_MAX_DIM); their count. */
int map_route(const map_machine *m, int a, int b, int *links);

typedef struct map_cost {
    uint64_t bytes;      /* total over pairs */
    uint64_t hop_bytes;  /* bytes x hops of their route */
    uint64_t max_link;   /* bytes on the busiest link */
    int max_node, max_port;
    unsigned __int128 sumsq; /* sum over links of their bytes squared: the congestion */
} map_cost;

/* What placement proc (rank -> processor) costs. */
int map_cost_eval(const map_graph *gr, const map_machine *m, const int *proc, map_cost *c);

/* Pair swaps (and moves to free processors) while one lowers the
 * congestion (sum of squared link loads) and loads no link beyond the
 * busiest, at most passes passes and budget seconds; proc is updated.
 * Returns the swaps made. */
long map_refine(const map_graph *gr, const map_machine *m, int *proc, int passes, double budget);

/* Scotch's mapping of the graph onto the machine's torus or mesh (VN: a
 * fourth dimension of 2, the node's two processors), made one-to-one
 * (ranks Scotch put on a taken processor go to the nearest free one). 0,
 * or -1 with a reason. */
int map_scotch(const map_graph *gr, const map_machine *m, int *proc, char *err, size_t len);

#endif
