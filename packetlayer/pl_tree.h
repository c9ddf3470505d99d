/* packetlayer: the collective network's FIFOs and the global interrupt,
 * one processor's view, in simulated time (torus-sim/tsim_tree.c models
 * both networks). Same rules as pl.h: every call acts at the processor's
 * clock and charges its modelled cost; an answer never depends on how far
 * the engine has got (a "no" is given only once the engine has finished
 * everything before vt). */
#ifndef PL_TREE_H
#define PL_TREE_H

#include "pl.h"

/* Fills a tree header: class TSIM_TC_*, ALU op TSIM_TOP_* (TSIM_TOP_NONE
 * for a broadcast), operand width 4, 8 or 16 bytes, sign 0/1, virtual
 * channel, reception cpu at every node, 8 bytes of software header (NULL:
 * zeros). */
void pl_tree_header(tsim_thdr *h, int cls, int op, int width, int sign, int vc, int group,
                    const void *sw8);
/* Free slots in this processor's tree injection FIFO, as seen now. */
unsigned pl_tree_room(const pl_proc *pp);
/* Writes one packet (len <= 256 payload bytes, the rest zero) into the tree
 * injection FIFO. 0, or -1 if the FIFO is full at vt. Charges
 * tree_write_cycles. */
int pl_tree_inject(pl_proc *pp, const tsim_thdr *h, const void *payload, size_t len);
/* Same, blocking (in simulated time) until there is room; -1 if the job
 * is aborting. */
int pl_tree_inject_wait(pl_proc *pp, const tsim_thdr *h, const void *payload, size_t len);
/* 1 if a packet is visible at vt in the tree reception FIFO, else 0
 * (charges poll_cycles). */
int pl_tree_poll(pl_proc *pp);
/* The head packet (after a successful poll). */
const tsim_tslot *pl_tree_peek(const pl_proc *pp);
/* Frees the head packet; charges tree_read_cycles. */
void pl_tree_consume(pl_proc *pp);
/* Blocks until a packet is visible; -1 if the job is aborting. */
int pl_tree_recv_wait(pl_proc *pp);

/* Arms this processor's global interrupt wire for the next barrier
 * (charges poll_cycles: a register write). */
void pl_gi_arm(pl_proc *pp);
/* 1 once the barrier armed last has fired, as seen at vt; else 0
 * (charges poll_cycles). */
int pl_gi_poll(pl_proc *pp);
/* Blocks until it has fired; 0, or -1 if the job is aborting. */
int pl_gi_wait(pl_proc *pp);
/* Arm, then wait: the hardware barrier. */
int pl_gi_barrier(pl_proc *pp);

#endif
