/* The rank map: rank <-> (x,y,z,t), from a named order or a mapping file.
 *
 * An ORDER is a permutation of the letters X, Y, Z, T; the first letter
 * varies fastest (XYZT, the default, fills a line of x first; TXYZ puts
 * ranks 2k and 2k+1 on the same node in VN mode). A mapping FILE has one
 * "x y z t" line per rank, in rank order; '#' starts a comment, blank lines
 * are ignored. Errors are one line "FILE:LINE: reason" (or "mapping order
 * 'S': reason"), ready to be prefixed with the program's name. */
#ifndef ML_MAP_H
#define ML_MAP_H

#include <stddef.h>

#include "../torus-sim/tsim.h"

typedef struct ml_map {
    int nranks;
    int cpus;           /* processors used per node: 1 (CO) or 2 (VN) */
    int nprocs;         /* processor slots in the machine: nnodes * TSIM_CPUS */
    int *proc;          /* rank -> processor index node * TSIM_CPUS + t */
    int *rank;          /* processor index -> rank, -1 where no rank runs */
    char order[5];      /* the order used, "" when read from a file */
} ml_map;

/* spec: an order (case-insensitive permutation of XYZT) or a file path;
 * NULL or "" means XYZT. g gives the shape, the mode (g->cpus) and the
 * number of ranks (g->nranks). Returns 0, or -1 with one line in err. */
int ml_map_build(ml_map *m, const char *spec, const tsim_geom *g, char *err, size_t errlen);
void ml_map_free(ml_map *m);
/* The map mpirun stored in the machine segment (seg->rank_proc), for a rank
 * that is already attached: no need to parse BGLMPI_MAPPING again. */
int ml_map_from_seg(ml_map *m, const tsim_seg *seg);

/* 1 if spec is a valid order; fills perm[k] = dimension (0 x, 1 y, 2 z,
 * 3 t) that varies k-th fastest. */
int ml_map_parse_order(const char *spec, int perm[4]);
/* 1 if spec looks like an order attempt (1..8 letters only) rather than a
 * path: such a spec that is not a valid order and names no file is a bad
 * order, not a missing file. */
int ml_map_looks_like_order(const char *spec);

/* Coordinates <x,y,z,t> of a rank. */
void ml_map_coords(const ml_map *m, const tsim_geom *g, int rank, int c[4]);

/* Default shape for nranks in mode cpus (1 CO, 2 VN): the most cubic X×Y×Z
 * (smallest largest side, then the fewest nodes, X >= Y >= Z) holding
 * ceil(nranks / cpus) nodes. Returns 0, or -1 if no shape within the
 * machine limits holds them. */
int ml_shape_default(int nranks, int cpus, int dim[3]);

#endif
