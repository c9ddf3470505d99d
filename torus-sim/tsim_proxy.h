/* The engine running a blocked processor's loop: what the loops share
 * (tsim_proxy.c: the message layer's wait loop; tsim_proxy_a2a.c: the
 * packet-scheduled alltoall's). Engine-private. */
#ifndef TSIM_PROXY_H
#define TSIM_PROXY_H

#include <sys/uio.h>

#include "tsim_engine_priv.h"

enum {
    PH_BLOCKED, /* blocked until a packet arrives or a full FIFO has room */
    /* the message layer's loop */
    PH_SP_HEAD, PH_POLL, PH_SP_TAIL,
    /* the alltoall's loop (coll_run with a2a_push) */
    PH_A_TOP, PH_A_POLL, PH_A_HPUSH, PH_A_PUSH2,
    /* a tree collective's loop (coll_tree.c, run_pass) */
    PH_T_TOP, PH_T_INJ, PH_T_POLL, PH_T_ADV,
};

/* Can the processor's view at vt be taken as final? */
int prx_settled(tsim_engine *e, uint64_t vt);
/* Queues the processor's next step at t (once). */
void prx_arm(tsim_engine *e, int proc, uint64_t t);
/* Copies n bytes to the processor's address addr when it wakes; -1 if the
 * job is failing. */
int prx_wr_add(tsim_engine *e, int proc, uint64_t addr, const void *src, size_t n);
/* Makes sure the write batch exists (before a packet is taken). */
int prx_wr_ready(tsim_engine *e, int proc);
/* Reads cnt pieces of the processor's memory; -1 (the job fails, the
 * processor named) if it can't. */
int prx_read(tsim_engine *e, int proc, const struct iovec *loc, const struct iovec *rem, int cnt,
             size_t total, const char *what);
static inline unsigned prx_room(const tsim_ring *r) { return r->cap - atomic_load(&r->used); }
/* Chunks a packet of n payload bytes takes (pl_header). */
static inline unsigned prx_chunks(uint64_t n)
{
    unsigned c = (unsigned)((TSIM_HDR_BYTES + n + TSIM_CHUNK - 1) / TSIM_CHUNK);
    return c ? c : 1;
}
/* What pl_inject does at the processor's clock, and the event drain would
 * make of it. The caller checked the room. */
void prx_inject(tsim_engine *e, int proc, int fifo, uint32_t dst, unsigned flags, unsigned group,
                const uint8_t sw[8], const void *data, size_t n);
/* What pl_consume does with the oldest packet of reception FIFO f. */
void prx_consume(tsim_engine *e, int proc, int f);
/* The reception FIFO whose oldest packet a poll at vt would take, or -1. */
int prx_visible(tsim_engine *e, int proc);
/* After the loop blocked: is what it waits for already there? */
int prx_ready(tsim_engine *e, int proc);
/* Writes the answer the loops share, then wakes the processor at its clock. */
void prx_handover(tsim_engine *e, int proc, int resume);

/* tsim_proxy_a2a.c */
int a2a_adopt(tsim_engine *e, int proc, const tsim_prx *d);
void a2a_step(tsim_engine *e, int proc);
void a2a_answer(tsim_engine *e, int proc, tsim_prx *d);
void a2a_free(prx_state *x);

/* tsim_proxy_tree.c: a pass through the collective network (coll_tree.c) */
int tree_prx_adopt(tsim_engine *e, int proc, const tsim_prx *d);
void tree_prx_step(tsim_engine *e, int proc);
void tree_prx_answer(tsim_engine *e, int proc, tsim_prx *d);
/* Does the blocked loop wait for what bits say happened? */
int tree_prx_wants(const tsim_engine *e, int proc, uint32_t bits);
void tree_prx_free(prx_state *x);
/* tsim_tree.c: the processor's tree FIFOs as the engine sees them */
/* Has the engine taken everything the processor wrote into them? */
int tree_prx_synced(const tsim_engine *e, int proc);
/* Free slots in its injection FIFO. */
unsigned tree_inj_room(const tsim_engine *e, int proc);
/* What pl_tree_inject does at clock t (the caller checked the room). */
void tree_prx_inject(tsim_engine *e, int proc, const tsim_thdr *h, const uint8_t *payload,
                     uint64_t t);
/* The oldest packet delivered and not yet read, or NULL. */
const tsim_tslot *tree_rec_oldest(const tsim_engine *e, int proc);
/* What pl_tree_consume does at clock t (the slot read frees at t). */
void tree_prx_consume(tsim_engine *e, int proc, uint64_t t);
/* A header tree_drain would take (tpkt_ok's rules). */
int tree_hdr_ok(const tsim_thdr *h);

#endif
