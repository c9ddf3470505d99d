/* The coprocessor (CO mode): a second thread on cpu 1 of the node with its
 * own clock. Its permanent work unit receives rendezvous data sent to its
 * FIFO group (a whole message, or a split's whole lines: ml_recv.c's
 * grant); transient units come from ml_costart. It talks to the main
 * processor only through the scratchpad FIFOs, so every hand-over is timed
 * and deterministic. */
#include <stdlib.h>
#include <string.h>

#include "ml_internal.h"

int ml_co_tell(tsim_port *pt, uint8_t type, uint16_t id)
{
    int room = tsim_port_room(pt, TSIM_INJ_SP, 1);
    if (room != 1) return room == TSIM_PORT_WAIT ? TSIM_RUN_WAIT : 0;
    /* the main processor reads what this one wrote once it sees the notice */
    if (pt->ops->publish(pt) != 0) return TSIM_RUN_FAIL;
    int main_proc = pt->proc - 1;
    tsim_hwhdr hw;
    tsim_header(pt->g, &hw, main_proc, 0, 0, (unsigned)(main_proc % TSIM_CPUS));
    ml_sw sw = {type, 0, id, 0};
    uint8_t sw8[8];
    memcpy(sw8, &sw, sizeof sw8);
    pt->ops->inject(pt, TSIM_INJ_SP, &hw, sw8, NULL, 0);
    return 1;
}

void ml_co_send(ml_ctx *ml, uint8_t type, uint16_t id)
{
    while (ml_co_tell(&ml->co_port, type, id) == 0)
        if (pl_block_need(&ml->co, TSIM_WAKE_INJ(TSIM_INJ_SP), 1, "room in an injection FIFO") != 0) return;
}

/* A reception the coprocessor took a packet of: tracked while data is to
 * come (the list only ever holds what this thread wrote to itself). */
static void co_track(ml_ctx *ml, ml_rx *rx, uint16_t id)
{
    int i = 0;
    while (i < ml->co_nact && ml->co_act[i] != rx) i++;
    if (rx->got >= rx->len) {
        if (i < ml->co_nact) {
            ml->co_act[i] = ml->co_act[--ml->co_nact];
            ml->co_act_id[i] = ml->co_act_id[ml->co_nact];
        }
    } else if (i == ml->co_nact && i < ML_HO_RX) {
        ml->co_act[i] = rx;
        ml->co_act_id[i] = id;
        ml->co_nact++;
    }
}

/* Nothing to read: block. While it is blocked the engine runs its loop
 * (ml_engine.c's, flat: poll until a poll finds nothing, then block): it
 * takes the data packets of the receptions the coprocessor is in the
 * middle of and of those the main processor grants it meanwhile, and sends
 * the notice of each one it completes, so that a rendezvous message wakes
 * the coprocessor for none of its packets. With `start` the loop is handed
 * over before its next poll instead (co_main, after a data packet). */
static int co_idle(ml_ctx *ml, int start)
{
    pl_proc *co = &ml->co;
    if (!ml->proxy) return pl_block(co, TSIM_WAKE_REC_ALL, "coprocessor idle");
    return ml_coproc_handoff(ml, co, start);
}

static void *co_main(void *arg)
{
    ml_ctx *ml = arg;
    pl_proc *co = &ml->co;
    for (;;) {
        int f = pl_poll(co, TSIM_WAKE_REC_ALL);
        if (f < 0) {
            if (co_idle(ml, 0) != 0) break;
            continue;
        }
        tsim_slot s = *pl_peek(co, f);
        pl_consume(co, f);
        ml_sw sw;
        memcpy(&sw, s.p.sw, sizeof sw);
        pl_charge(co, ml->prm->ml_dispatch_cycles);
        if (sw.type == T_CO_STOP) { /* say so, then leave the simulation */
            ml_co_send(ml, T_CO_DONE, 0);
            break;
        }
        if (sw.type == T_CO_WORK) {
            ml->co_fn(co, ml->co_arg);
            ml_co_send(ml, T_CO_DONE, 0);
        } else if (sw.type == T_RZV_DATA) {
            /* the slot (or a split's part) was set up by the main processor
             * before its grant */
            ml_rx *rx = ml_co_rx(ml->slots, ml->co_part, sw.id);
            unsigned segs = ml_rx_write(&ml->co_port, rx, &ml->co_reordered, sw.w, s.p.payload,
                        rx->len - sw.w < TSIM_PAYLOAD_MAX ? rx->len - sw.w : TSIM_PAYLOAD_MAX);
            ml_charge_ddt(co, (uint64_t)segs * ml->prm->ddt_seg_cycles);
            co_track(ml, rx, sw.id);
            if (rx->got >= rx->len) ml_co_send(ml, T_CO_RZV_DONE, sw.id);
            /* more data is most likely next, from several links at once
             * when neighbours send together: then a poll seldom finds the
             * FIFOs empty and the coprocessor never blocks. The engine
             * reads such packets at the same times, so hand it the loop
             * (only to the engine: without its help the loop goes on here,
             * with its poll, as it always did). */
            else if (ml->proxy && ml->co_nact && co_idle(ml, 1) != 0) break;
        }
    }
    pl_close(co, 0);
    return NULL;
}

int ml_coproc_start(ml_ctx *ml)
{
    int idx = ml->pp->node * TSIM_CPUS + 1;
    if (atomic_load(&ml->pp->seg->procs[idx].state) != TSIM_P_ABSENT) return 0; /* taken: no coprocessor */
    pl_open(&ml->co, ml->pp->seg, idx, ml->pp->vt);
    pl_port_init(&ml->co, &ml->co_port);
    ml->co.p->rank = ml->rank;
    if (pthread_create(&ml->co_thread, NULL, co_main, ml) != 0) {
        pl_close(&ml->co, 1);
        return -1;
    }
    ml->co_running = 1;
    return 0;
}

/* The main processor waits for the coprocessor's answer in simulated time
 * (a host-level join alone would hold the engine's horizon at its clock). */
void ml_coproc_stop(ml_ctx *ml)
{
    if (!ml->co_running) return;
    ml_sw sw = {T_CO_STOP, 0, 0, 0};
    ml->co_done = 0;
    ml_inject(ml, ml->co.index, TSIM_INJ_SP, 0, 0, &sw, NULL, 0, NULL, 0);
    ml_wait(ml, &ml->co_done);
    pthread_join(ml->co_thread, NULL);
    ml->st.reordered += ml->co_reordered; /* the thread is gone: safe to read */
    ml->co_running = 0;
}

int ml_costart(ml_ctx *ml, ml_cowork_fn fn, void *arg)
{
    if (!ml->co_running) return -1;
    ml->co_fn = fn;
    ml->co_arg = arg;
    ml->co_done = 0;
    ml_sw sw = {T_CO_WORK, 0, 0, 0};
    ml_inject(ml, ml->co.index, TSIM_INJ_SP, 0, 0, &sw, NULL, 0, NULL, 0);
    return 0;
}

int ml_cojoin(ml_ctx *ml)
{
    if (!ml->co_running) return -1;
    return ml_wait(ml, &ml->co_done);
}

int ml_coproc_running(const ml_ctx *ml) { return ml->co_running; }
