/* The packet-driven collectives' loop (coll_loop.h), once for both
 * drivers, and the rank's driver (coll_run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../messagelayer/ml_internal.h" /* ML_ADVANCE_BATCH: the advance's polls */
#include "../packetlayer/pl_trace.h"
#include "coll_internal.h"

static void enter(coll_loop_cur *k, int phase)
{
    k->phase = (uint8_t)phase;
    k->push.run = 0; /* every phase but the polls starts a push */
}

/* Hands the rank back: the collective complete (its loop's next done()
 * returns), or in its advance's polls at a packet its own code takes. */
static int back(coll_loop_cur *k, int complete)
{
    k->done = (uint8_t)complete;
    ml_resume_hand_back(&k->res, !complete);
    return TSIM_RUN_BACK;
}

void coll_loop_adopted(coll_loop_cur *k)
{
    memset(k, 0, sizeof *k);
    k->phase = COLL_LOOP_BLOCKED;
}

int coll_loop_step(tsim_port *pt, coll_loop_cur *k, const coll_loop_ops *ops, void *L, uint32_t *wait)
{
    if (k->phase == COLL_LOOP_BLOCKED) { /* woken: the loop's next iteration */
        enter(k, COLL_LOOP_TOP);
        k->res.moved = 0;
    }
    for (;;) {
        if (!pt->ops->settled(pt)) return TSIM_RUN_WAIT;
        int rc;
        switch (k->phase) {
        case COLL_LOOP_TOP:
            if ((rc = ops->push(pt, L, &k->push)) != 0) return rc < 0 ? TSIM_RUN_FAIL : TSIM_RUN_WAIT;
            k->moved = k->push.pushed;
            if (ops->done(L)) return back(k, 1);
            k->phase = COLL_LOOP_POLL;
            k->res.consumed = k->res.moved = 0;
            break;
        case COLL_LOOP_POLL:
            if (!pt->engine) return TSIM_RUN_BACK; /* the rank's own advance */
            if (k->res.consumed == ML_ADVANCE_BATCH) { /* the advance returns without an empty poll */
                enter(k, COLL_LOOP_PUSH2);
                break;
            }
            rc = ml_engine_idle_poll(pt, &k->res, ops->take, L);
            if (rc == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (rc < 0) return TSIM_RUN_FAIL;
            if (rc == 2) return back(k, 0);
            /* a packet: its handler pushes after it; none (the empty poll
             * charged): the iteration's second push */
            enter(k, rc > 0 ? COLL_LOOP_HPUSH : COLL_LOOP_PUSH2);
            break;
        case COLL_LOOP_HPUSH:
            if ((rc = ops->push(pt, L, &k->push)) != 0) return rc < 0 ? TSIM_RUN_FAIL : TSIM_RUN_WAIT;
            k->phase = COLL_LOOP_POLL;
            break;
        case COLL_LOOP_PUSH2:
            if ((rc = ops->push(pt, L, &k->push)) != 0) return rc < 0 ? TSIM_RUN_FAIL : TSIM_RUN_WAIT;
            k->moved += k->res.moved + k->push.pushed;
            if (ops->done(L)) return back(k, 1);
            if (k->moved) {
                enter(k, COLL_LOOP_TOP);
                break;
            }
            /* blocks until a packet arrives or a FIFO it found full has room */
            k->phase = COLL_LOOP_BLOCKED;
            *wait = TSIM_WAKE_REC_ALL | k->push.wait;
            return TSIM_RUN_BLOCK;
        default:
            return TSIM_RUN_FAIL;
        }
    }
}

/* ---- the rank's driver -------------------------------------------------- */

static void wait_note(coll_ctx *c, const char *why, char *note, size_t len)
{
    if (c->inj_wait) snprintf(note, len, "rank %d: %s (injection FIFO full)", c->rank, why);
    else ml_wait_note(c->ml, why, note, len);
}

int coll_block(coll_ctx *c, const char *why)
{
    if (!c->inj_wait) return ml_idle(c->ml, why);
    char note[112];
    wait_note(c, why, note, sizeof note);
    return pl_block_need(c->pp, TSIM_WAKE_REC_ALL | c->inj_wait, TSIM_MAX_CHUNKS, note);
}

void *coll_handoff_begin(coll_ctx *c)
{
    tsim_handoff *h = ml_handoff_begin(c->ml);
    if (!h) return NULL;
    memset(h->state, 0, sizeof h->state);
    return h->state;
}

int coll_handoff_block(coll_ctx *c, uint32_t prog, const char *why)
{
    char note[112];
    wait_note(c, why, note, sizeof note);
    return ml_handoff_block(c->ml, prog, note, c->inj_wait);
}

void coll_loop_resume(coll_ctx *c, coll_loop_cur *k, const coll_loop_cur *e)
{
    ml_resume_apply(c->ml, &e->res);
    k->moved = e->moved;
    k->phase = !e->done && e->res.point == ML_RESUME_POLL ? COLL_LOOP_POLL : COLL_LOOP_BLOCKED;
}

void coll_loop_take(coll_ctx *c, const coll_loop_ops *ops, void *L, const tsim_slot *s)
{
    unsigned segs = 0;
    if (ops->take(L, s, &segs) != 1) abort(); /* not the running collective's, or a second copy */
    coll_charge_ddt(c, (uint64_t)segs * c->pp->seg->params.ddt_seg_cycles);
}

void coll_loop_push(coll_ctx *c, const coll_loop_ops *ops, void *L)
{
    tsim_port pt;
    pl_port_init(c->pp, &pt);
    coll_push k = {0};
    ops->push(&pt, L, &k); /* the rank's own port never waits, its memory never fails */
}

static int rank_loop(coll_ctx *c, const coll_loop_ops *ops, void *L, coll_wait_fn wait, const char *why)
{
    tsim_port pt;
    pl_port_init(c->pp, &pt);
    coll_loop_cur k;
    coll_loop_adopted(&k);
    for (;;) {
        uint32_t mask;
        int rc = coll_loop_step(&pt, &k, ops, L, &mask);
        if (rc == TSIM_RUN_BACK) {
            if (k.done) return 0;
            k.res.moved = (uint32_t)ml_advance(c->ml); /* whatever the message layer has to do */
            enter(&k, COLL_LOOP_PUSH2);
            continue;
        }
        if (rc != TSIM_RUN_BLOCK) return -1; /* its own port never waits, its memory never fails */
        c->inj_wait = k.push.wait;
        rc = wait ? wait(c, &k, why) : coll_block(c, why);
        c->inj_wait = 0;
        if (rc < 0 || pl_aborting(c->pp)) return -1;
    }
}

/* The timeline shows each torus collective on its rank (pl_trace.h). */
int coll_run(coll_ctx *c, const coll_loop_ops *ops, void *L, coll_wait_fn wait, const char *why)
{
    if (!pl_tracing()) return rank_loop(c, ops, L, wait, why);
    uint64_t t0 = pl_now(c->pp);
    int op = c->op, rc = rank_loop(c, ops, L, wait, why);
    unsigned sub = op == OP_BCAST ? PLT_COLL_BCAST : op == OP_A2A ? PLT_COLL_A2A : 0;
    if (sub && c->grp)
        pl_trace_put(c->pp, PLT_COLL, sub, t0, pl_now(c->pp), -1, 0, c->cur,
                     (uint32_t)c->cur_gid << 16 | ((uint32_t)c->grp->n & 0xffff));
    return rc;
}
