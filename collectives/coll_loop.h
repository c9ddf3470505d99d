/* The loop of the packet-driven collectives (the packet-scheduled
 * alltoall, the deposit-bit broadcast), written once over a port
 * (torus-sim/tsim_prog.h) and run by two drivers: the rank (coll_run, its
 * own port) and the engine for a rank blocked in it (the collective's
 * program). One iteration:
 *
 *   push, done?, advance, push, done?, then block if nothing moved
 *
 * push sends what the FIFOs take (the collective's own schedule); the
 * advance is the message layer's: its send round, then polls until one
 * finds nothing or ML_ADVANCE_BATCH packets were read, each packet of the
 * collective taken and then pushed after (its packet handler keeps the
 * FIFOs fed). The rank runs its own ml_advance there (the step hands
 * back in COLL_LOOP_POLL), whatever the message layer has to do. The
 * engine has been handed a loop whose rank sends no message
 * (ml_handoff_begin's condition), so the send rounds have nothing; it runs
 * the polls itself and hands back at the first packet that is not one
 * this collective is waiting for. Every observation is made once the
 * engine has reached the clock (a poll or a full FIFO is believed only
 * then), so both drivers take the same steps at the same cycles. */
#ifndef COLL_LOOP_H
#define COLL_LOOP_H

#include "../messagelayer/ml.h"
#include "../torus-sim/tsim_prog.h"

/* A push's cursor: it goes on where it stood after a TSIM_PORT_WAIT. */
typedef struct coll_push {
    uint32_t wait;    /* TSIM_WAKE_INJ bits of the FIFOs this push found full */
    uint32_t pushed;  /* packets it sent */
    uint8_t f, any;   /* the broadcast's sweep: the FIFO whose turn it is, it sent something */
    uint8_t run;      /* 0: the next call starts a push */
    uint8_t resv;
} coll_push;

/* A collective's part of the loop, over its view L (its description and
 * cursor, wherever the driver keeps them). */
typedef struct coll_loop_ops {
    /* sends what the FIFOs take: 0 when it stopped, 1 when an observation
     * returned TSIM_PORT_WAIT (called again, it goes on where it stood),
     * -1 when the rank's memory failed */
    int (*push)(tsim_port *pt, void *L, coll_push *k);
    /* the packet s into place: 1, 0 when it is not one the collective is
     * waiting for (the rank's code must see it), -1 when the memory
     * failed. *segs: the scatter's segments, charged after the dispatch */
    int (*take)(void *L, const tsim_slot *s, unsigned *segs);
    int (*done)(const void *L);
} coll_loop_ops;

/* The loop's cursor. It begins with the advance's (ml_resume), as every
 * hand-off state of a loop above the message layer does. */
typedef struct coll_loop_cur {
    ml_resume res;   /* the engine's: where the rank's advance goes on */
    uint32_t moved;  /* what the iteration moved so far */
    uint8_t phase;   /* COLL_LOOP_* */
    uint8_t done;    /* the collective is complete */
    uint16_t resv;
    coll_push push;  /* the running push */
} coll_loop_cur;

/* Blocked (stepped again: the next iteration), the iteration's first push,
 * the advance's polls, the push after a packet was taken, the second push. */
enum { COLL_LOOP_BLOCKED, COLL_LOOP_TOP, COLL_LOOP_POLL, COLL_LOOP_HPUSH, COLL_LOOP_PUSH2 };

/* Runs the loop from k's cursor: TSIM_RUN_BLOCK (*wait: every reception
 * FIFO and the FIFOs the last push found full), TSIM_RUN_BACK where the
 * rank's code must run (k->done: the collective is complete; else in
 * COLL_LOOP_POLL, its advance), TSIM_RUN_WAIT (the engine's port only) or
 * TSIM_RUN_FAIL (the rank's memory failed the engine). */
int coll_loop_step(tsim_port *pt, coll_loop_cur *k, const coll_loop_ops *ops, void *L, uint32_t *wait);

/* A cursor as the engine adopts it: blocked, nothing moved. */
void coll_loop_adopted(coll_loop_cur *k);

#endif
