/* collectives on the collective network and the global interrupt
 * (torus-sim/tsim_tree.c; packetlayer/pl_tree.h): allreduce, reduce and
 * broadcast through the tree's ALU, barrier on the global interrupt.
 *
 * Integer operations take one pass through the ALU. MAX/MIN of float and
 * double go through an order-preserving integer encoding (one pass). SUM
 * of float and double takes two, as on BG/L: the maximum of every
 * element's exponent, then the sum of the mantissas shifted to that
 * exponent as 128-bit fixed point, so the result does not depend on the
 * tree's shape, the mapping or the order of arrival and is the same on
 * every rank; error bound in docs/collectives.md. Long vectors are
 * pipelined packet by packet. In VN mode the two processors of a node
 * combine through the scratchpad first and cpu 0 injects once. While it
 * waits, a rank keeps its message
 * layer going (ml_advance). Every call is collective over the partition
 * and blocking. Returns 0; -1 if the job aborts or the arguments are bad;
 * COLL_ENOTSUP (nothing sent) when coll_tree_ok is 0 or the (type, op)
 * pair is not one the ALU takes. */
#ifndef COLL_TREE_H
#define COLL_TREE_H

#include "coll.h"

#define COLL_T_TREE 66 /* software header type of tree packets */

/* Element types: integers of 1, 2, 4 and 8 bytes (I8..U16 go through the
 * ALU widened to 4 bytes), float, double, and the MAXLOC/MINLOC pairs
 * {value; int index} laid out as C lays out the struct (MPI_2INT,
 * MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT with an 8-byte long,
 * MPI_SHORT_INT). */
enum { COLL_I32, COLL_U32, COLL_I64, COLL_U64, COLL_F32, COLL_F64,
       COLL_I8, COLL_U8, COLL_I16, COLL_U16,
       COLL_2I32, COLL_F32_I32, COLL_F64_I32, COLL_I64_I32, COLL_I16_I32, COLL_NTYPES };
/* Operations: LAND/LOR/LXOR give 0 or 1 (any non-zero is true); MAXLOC
 * and MINLOC take the pairs only, and give the smallest index among the
 * elements holding the extreme value. */
enum { COLL_SUM, COLL_MAX, COLL_MIN, COLL_BAND, COLL_BOR, COLL_BXOR,
       COLL_LAND, COLL_LOR, COLL_LXOR, COLL_MAXLOC, COLL_MINLOC, COLL_NOPS };

/* 1 if the tree serves this machine: every processor slot of the mode
 * runs a rank (in VN mode the node mates combine over the scratchpad
 * first, cpu 0 injects once). */
int coll_tree_ok(const coll_ctx *c);
/* 1 if the ALU does (type, op): integers with every operation but the
 * LOC ones, floats with SUM/MAX/MIN, the pairs with MAXLOC/MINLOC. */
int coll_tree_takes(int type, int op);
/* Element size of a type (a pair's: the struct's, padding included), bytes. */
size_t coll_type_size(int type);

/* count elements of sbuf combined over all ranks into rbuf (sbuf may be
 * rbuf: in place). */
int coll_tree_allreduce(coll_ctx *c, const void *sbuf, void *rbuf, size_t count, int type, int op);
/* The same, the result at root only (rbuf is ignored elsewhere). */
int coll_tree_reduce(coll_ctx *c, const void *sbuf, void *rbuf, size_t count, int type, int op,
                     int root);
/* len bytes from root's buf into everyone's buf. */
int coll_tree_bcast(coll_ctx *c, void *buf, size_t len, int root);
/* The same of data described by a layout (coll.h: root's data, everyone's
 * place for it; a buffer when niov is 0: coll_tree_bcast). The root
 * gathers each 256-byte packet's payload from its segments, every other
 * rank scatters each packet into its own; each segment a packet touches
 * costs ddt_seg_cycles (also counted in ddt_cycles) to the root before
 * the packet's first FIFO try, to a receiver after it took the packet.
 * The host moves the bytes through the pass's whole-payload buffers (the
 * engine's replica of the loop reads and writes those): the root gathers
 * every packet before the pass, a receiver scatters each as it is taken;
 * those copies cost nothing, the per-packet charges are the model's. */
int coll_tree_bcast_layout(coll_ctx *c, const coll_layout *blk, int root);
/* Barrier on the global interrupt: nobody returns before all entered.
 * Works in CO and VN mode on any partition. */
int coll_gi_barrier(coll_ctx *c);

/* Tree packets this rank sent and received so far. */
void coll_tree_counts(const coll_ctx *c, uint64_t *sent, uint64_t *recv);

#endif
