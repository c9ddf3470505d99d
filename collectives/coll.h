/* collectives: message-layer collectives that use the torus hardware.
 *
 *  - coll_bcast: deposit-bit broadcast over the whole partition (or, with
 *    coll_bcast_in, over a group whose nodes form a box). The root
 *    sends each packet along a line with the deposit bit, so every node on
 *    the line keeps a copy; nodes of that line forward along the next
 *    dimension, and so on, pipelined per packet. With routes = 3 the message
 *    is split in up to three parts sent over edge-disjoint spanning trees
 *    (dimension orders X-Y-Z, Y-Z-X, Z-X-Y). VN mode: cpu 0 of each node
 *    takes part in the tree and hands every packet to cpu 1 over the
 *    scratchpad FIFO.
 *  - coll_alltoall / coll_alltoallv: every rank injects its packets itself,
 *    interleaved across destinations in a per-source random (or staggered)
 *    order,
 *    adaptively routed; receivers place data by offset.
 *
 * Packets are the collectives' own software-header types (COLL_T_*,
 * >= ML_TYPE_USER), delivered by ml_advance through ml_register_packet, so
 * collectives coexist with ordinary message-layer traffic. Every call is a
 * collective: all ranks make the same calls in the same order (a sequence
 * number in each packet keeps consecutive collectives apart). Blocking.
 * Design and figures: docs/collectives.md. */
#ifndef COLL_H
#define COLL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../messagelayer/ml.h"

/* Software-header types used by the collectives. */
#define COLL_T_BCAST 64
#define COLL_T_A2A   65

typedef struct coll_ctx coll_ctx;

/* Opens the collectives on a message layer; registers the packet types.
 * Call it on every rank right after ml_init, before the first ml_advance
 * that could see a collective packet. NULL on error (types taken, memory). */
coll_ctx *coll_init(ml_ctx *ml);
/* Frees the state (call before ml_finalize). */
void coll_finalize(coll_ctx *c);

/* 1 if the hardware algorithms can serve this machine: every processor slot
 * the mode uses (cpu 0 of every node, and cpu 1 in VN mode) runs a rank. */
int coll_hw_ok(const coll_ctx *c);

/* Returned when a call needs the p2p baseline but the context was opened
 * with coll_init (no coll_upcall): nothing was sent; use another algorithm. */
#define COLL_ENOTSUP (-2)

/* Broadcast of len bytes from root's buf into everyone's buf.
 * routes: 1 (one dimension-ordered tree) or 3 (up to three edge-disjoint
 * trees, one per dimension of size > 1). When coll_hw_ok is 0 it falls
 * back to coll_bcast_p2p (COLL_ENOTSUP without coll_init_with: check
 * coll_hw_ok first). Returns 0, or -1 (bad argument, job aborting). */
int coll_bcast(coll_ctx *c, void *buf, size_t len, int root, int routes);

/* Baseline: binomial tree of message-layer sends (ML_AUTO protocols).
 * This and the other *_p2p calls need coll_init_with and coll_upcall as
 * the message layer's upcall; else they return COLL_ENOTSUP. */
int coll_bcast_p2p(coll_ctx *c, void *buf, size_t len, int root);

/* Alltoall: per_pair bytes from sbuf + d*per_pair to rank d, into
 * rbuf + s*per_pair from rank s. */
int coll_alltoall(coll_ctx *c, const void *sbuf, void *rbuf, size_t per_pair);

/* Alltoallv, counts and displacements in bytes (arrays of nranks). The
 * receiver's rcounts[s] must equal sender s's scounts[me]. */
int coll_alltoallv(coll_ctx *c, const void *sbuf, const size_t *scounts, const size_t *sdispls,
                   void *rbuf, const size_t *rcounts, const size_t *rdispls);

/* A block of an alltoallw (or a broadcast's data) described as a layout:
 * len bytes at buf, or (niov > 0: buf unused) the niov segments of iov,
 * whose lengths add up to len (a derived datatype translated). Packets are
 * gathered straight from the sender's segments and scattered straight into
 * the receiver's (each segment a packet touches costs ddt_seg_cycles, also
 * counted in the processor's ddt_cycles); no block is staged. */
typedef struct coll_layout {
    void *buf;
    const struct iovec *iov;
    size_t niov, len;
} coll_layout;

/* Baseline: every rank ml_sends to every other in rank order. */
int coll_alltoall_p2p(coll_ctx *c, const void *sbuf, void *rbuf, size_t per_pair);

/* Element-wise maximum of n values over all ranks, result everywhere
 * (binomial reduce to rank 0 over message-layer sends, then coll_bcast_p2p).
 * Also a barrier: nobody returns before everyone has entered. */
int coll_allreduce_max_p2p(coll_ctx *c, uint64_t *v, int n);

/* ---- groups: collectives among some of the ranks (an MPI communicator) ----
 * Every member calls coll_group_new with the same ranks (message-layer
 * ranks, in group order) and the same id: 1..65535, different from that of
 * any other group that shares a rank with this one while both exist (an
 * MPI context id is). Each group orders its own collectives; collectives of
 * different groups may run in any order across ranks, one at a time per
 * rank. NULL on a bad argument (not a member, a rank twice) or no memory. */
typedef struct coll_group coll_group;
coll_group *coll_group_new(coll_ctx *c, int n, const int *ranks, uint16_t id);
void coll_group_free(coll_group *g);
/* The whole partition, id 0: what coll_bcast and coll_alltoall(v) use. */
coll_group *coll_world(coll_ctx *c);
int coll_group_size(const coll_group *g);
int coll_group_rank(const coll_group *g);
/* 1 if the deposit broadcast can serve g: its nodes form a box (the whole
 * partition or a sub-box; along a torus ring either the whole ring or at
 * most n/2 nodes, so that minimal routes stay in the box) and its ranks
 * fill every processor slot the mode uses in the box. */
int coll_group_hw_ok(const coll_group *g);
/* coll_bcast / coll_alltoall(v) within g; root, counts and displacements
 * by group rank. coll_bcast_in returns COLL_ENOTSUP, sending nothing, when
 * coll_group_hw_ok(g) is 0 (coll_bcast on the partition falls back to the
 * p2p baseline instead). */
int coll_bcast_in(coll_ctx *c, coll_group *g, void *buf, size_t len, int root, int routes);
int coll_alltoall_in(coll_ctx *c, coll_group *g, const void *sbuf, void *rbuf, size_t per_pair);
int coll_alltoallv_in(coll_ctx *c, coll_group *g, const void *sbuf, const size_t *scounts,
                      const size_t *sdispls, void *rbuf, const size_t *rcounts,
                      const size_t *rdispls);

/* Alltoallw: send[d] to group rank d, recv[s] from group rank s (arrays of
 * the group's size, by group rank). recv[s].len must equal sender s's
 * send[me].len. The layouts must stay valid and unchanged until it
 * returns. Contiguous blocks (niov 0) cost exactly what coll_alltoallv_in's
 * do. */
int coll_alltoallw_in(coll_ctx *c, coll_group *g, const coll_layout *send, const coll_layout *recv);

/* Broadcast of data described by the layout blk (root's data, everyone's
 * destination; the same len everywhere): the root gathers each packet from
 * its segments, every other rank scatters each packet into its own and
 * forwards from there (gathering again). blk with niov 0 is coll_bcast_in. */
int coll_bcast_layout_in(coll_ctx *c, coll_group *g, const coll_layout *blk, int root, int routes);

/* Destination order of the packet-scheduled alltoall (default RANDOM: a
 * per-source random permutation; STAGGER: me+1, me+2, ...; RANKORDER). */
enum { COLL_A2A_RANDOM = 0, COLL_A2A_STAGGER = 1, COLL_A2A_RANKORDER = 2 };
void coll_set_a2a_order(coll_ctx *c, int order);
/* coll_alltoall_p2p: at most this many sends outstanding (default 8, as
 * MPICH throttles its isend/irecv alltoall; <= 0: all at once). */
void coll_set_p2p_window(coll_ctx *c, int window);

/* Counters of this rank. pkts_early: packets that arrived before their
 * collective started (kept, then used); pkts_held: those still kept. */
typedef struct coll_stats {
    uint64_t bcasts, alltoalls, pkts_sent, pkts_recv, pkts_early, pkts_held;
} coll_stats;
const coll_stats *coll_get_stats(const coll_ctx *c);

/* The message layer's upcall for the p2p baselines: pass it (with the
 * coll_ctx's address holder) to ml_init when the program uses
 * coll_bcast_p2p / coll_alltoall_p2p; other messages are handed to `next`
 * (may be NULL). Use coll_upcall_arg() to build the upcall argument before
 * ml_init, then coll_init_with(). */
typedef struct coll_upcall_arg {
    coll_ctx *c;            /* set by coll_init_with */
    ml_upcall_fn next;      /* messages that are not the collectives' */
    void *next_arg;
} coll_upcall_arg;
void coll_upcall(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                 void *uarg);
/* coll_init, and binds ua (the argument passed to ml_init with coll_upcall). */
coll_ctx *coll_init_with(ml_ctx *ml, coll_upcall_arg *ua);

/* For a program started by mpirun: the message layer from the environment
 * with coll_upcall, then coll_init_with. NULL after printing
 * "prog: why" on stderr. */
coll_ctx *coll_open_env(const char *prog, coll_upcall_arg *ua, ml_ctx **ml);

/* The loops the engine can run for a blocked rank (torus-sim/tsim_prog.h):
 * the collectives' programs, registered by coll_engine_register. */
extern const tsim_prog coll_a2a_prog;  /* the packet-scheduled alltoall (coll_a2a_engine.c) */
extern const tsim_prog coll_tree_prog; /* a pass through the collective network (coll_tree_engine.c) */
extern const tsim_prog coll_tree_vn_prog; /* the same in VN mode (coll_tree_vn.c) */
extern const tsim_prog coll_bcast_prog; /* the deposit-bit broadcast (coll_bcast_engine.c) */
/* Registers every program of the layers a rank runs (the message layer's
 * and the collectives'), for mpirun's engine: 0, or -1 if an id is taken. */
int coll_engine_register(void);

#endif
