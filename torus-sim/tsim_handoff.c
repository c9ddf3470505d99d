/* The engine runs the loop a blocked processor handed over (tsim_prog.h).
 *
 * The runtime knows no program: it adopts a hand-off (a copy of the state,
 * checked by its program), steps the program whenever the processor's
 * view at its clock is final, keeps it asleep while it is blocked and
 * wakes it, the state handed back, where the processor's own code must
 * run.
 *
 * Every observation a program makes at clock vt (is a packet visible, is
 * there room) is made once the engine has done everything before vt: the
 * step runs in an EV_PROXY event at time vt, whose key puts it before every
 * other event of that time, or at once when nothing earlier is left
 * (prx_settled). The processor would see exactly the same at vt
 * (docs/simulated-time.md), so a loop run here gives the results it would
 * give on the processor. */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"

static const tsim_prog *progs[TSIM_PROGS];

int tsim_prog_register(const tsim_prog *prog)
{
    if (!prog || prog->id == 0 || prog->id >= TSIM_PROGS || !prog->step || !prog->adopt ||
        prog->state_size > TSIM_HANDOFF_BYTES)
        return -1;
    if (progs[prog->id] && progs[prog->id] != prog) return -1;
    progs[prog->id] = prog;
    return 0;
}

const tsim_prog *tsim_prog_find(uint32_t id) { return id < TSIM_PROGS ? progs[id] : NULL; }

int prx_active(const tsim_engine *e, int proc) { return e->ep[proc].prx.on; }

void prx_free(tsim_engine *e)
{
    for (int i = 0; e->ep && i < e->nprocs; i++) {
        prx_state *x = &e->ep[i].prx;
        free(x->wr);
        free(x->state);
        for (int k = 0; k < TSIM_PROGS; k++)
            if (x->priv[k] && progs[k] && progs[k]->free) progs[k]->free(x->priv[k]);
    }
}

void prx_arm(tsim_engine *e, int proc, uint64_t t)
{
    prx_state *x = &e->ep[proc].prx;
    if (x->armed) return;
    x->armed = 1;
    if (eng_take_next(e, t, eng_proxy_key(proc))) {
        e->defer_proc = proc;
        return;
    }
    ev_push_key(e, t, eng_proxy_key(proc), EV_PROXY, proc, 0, 0);
}

/* Takes the processor's hand-off if its program is registered here and
 * takes its state; anything else wakes the processor as before. The state
 * is copied first and only the copy is checked and used: the processor's
 * page can change under the engine (a stray write, another thread). The
 * engine's own process is written directly only for in-process machines
 * (tests). */
static int adopt(tsim_engine *e, int proc)
{
    tsim_proc *p = &e->seg->procs[proc];
    prx_state *x = &e->ep[proc].prx;
    uint32_t gen = atomic_load_explicit(&p->handoff.gen, memory_order_acquire);
    if (e->prx_off || !gen || gen == x->gen) return 0;
    x->gen = gen;
    const tsim_prog *prog = tsim_prog_find(p->handoff.prog);
    int start = p->handoff.start != 0;
    uint32_t mask = atomic_load(&p->wake_mask);
    /* What it wrote before it blocked, taken now if the rounds have not yet
     * (with its pid, frozen at first sight: never whoever it names later):
     * the program then writes behind it, and whether a loop is taken never
     * hangs on how far the rounds got on the host. */
    if (!prog || eng_take_proc(e, proc) != 0) return 0;
    int pid = e->ep[proc].pid;
    if (pid <= 0 || (pid == e->self_pid && e->seg->name[0]) ||
        atomic_load(&p->inj_need) != TSIM_MAX_CHUNKS)
        return 0;
    if (!x->state && !(x->state = malloc(TSIM_HANDOFF_BYTES))) return 0;
    memcpy(x->state, (const void *)p->handoff.state, prog->state_size);
    x->pid = pid;
    x->self = pid == e->self_pid;
    x->vt = atomic_load(&p->vt);
    x->armed = 0;
    x->wait = mask;
    prx_port_init(e, proc);
    if (!prog->adopt(&x->port, x->state, &x->priv[prog->id], &x->wait, start)) return 0;
    x->prog = prog;
    x->on = 1;
    x->blocked = !start;
    x->blocked_at = start ? UINT64_MAX : x->vt;
    if (start) prx_arm(e, proc, x->vt);
    return 1;
}

int prx_start(tsim_engine *e, int proc)
{
    tsim_proc *p = &e->seg->procs[proc];
    prx_state *x = &e->ep[proc].prx;
    if (x->on || !p->handoff.start ||
        atomic_load_explicit(&p->handoff.gen, memory_order_acquire) == x->gen)
        return x->on;
    /* a loop handed over before its next step that the engine won't run
     * must run on the processor, now */
    return adopt(e, proc) ? 1 : -1;
}

/* The blocked loop goes on at t. */
static void unblock(tsim_engine *e, int proc, uint64_t t)
{
    prx_state *x = &e->ep[proc].prx;
    if (t > x->vt) x->vt = t;
    x->blocked = 0;
    prx_arm(e, proc, x->vt);
}

int prx_trigger(tsim_engine *e, int proc, uint64_t t, int rec_fifo)
{
    prx_state *x = &e->ep[proc].prx;
    if (!x->on && !adopt(e, proc)) return 0;
    if (!x->blocked) return 1; /* the running loop will see it */
    if (rec_fifo < 0) { /* room in injection FIFO -1 - rec_fifo */
        int f = -1 - rec_fifo;
        if (!(x->wait & TSIM_WAKE_INJ(f)) || tsim_ring_room(&e->seg->procs[proc].inj[f]) < TSIM_MAX_CHUNKS)
            return 1;
    } else if (!(x->wait & TSIM_WAKE_REC(rec_fifo))) {
        return 1;
    }
    unblock(e, proc, t);
    return 1;
}

int prx_tree_trigger(tsim_engine *e, int proc, uint64_t t, uint32_t bits)
{
    prx_state *x = &e->ep[proc].prx;
    if (!x->on && !adopt(e, proc)) return 0;
    const uint32_t tree = TSIM_WAKE_TREE_REC | TSIM_WAKE_TREE_INJ | TSIM_WAKE_GI;
    if (!x->blocked || !(x->wait & (bits ? bits : tree))) return 1;
    unblock(e, proc, t);
    return 1;
}

/* Gives the processor back at its clock, the state as the program left it. */
static void hand_back(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    prx_wr_flush(e, proc);
    memcpy((void *)p->handoff.state, x->state, x->prog->state_size);
    p->handoff.blocked_at = x->blocked_at;
    p->handoff.back = 1;
    x->on = 0;
    atomic_store(&p->vt, x->vt);
    eng_wake(e, proc, x->vt); /* publishes the answer (seq_cst) before the state */
}

void prx_step(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    x->armed = 0;
    if (!x->on || x->blocked) return;
    for (;;) {
        if (!prx_settled(e, x->vt)) { /* what it sees at vt needs the engine at vt */
            /* the events before its step's (vt, key) run now, as they
             * would before that step's EV_PROXY, which then need not be
             * queued and popped */
            if (eng_run_before(e, x->vt, eng_proxy_key(proc))) continue;
            prx_arm(e, proc, x->vt);
            return;
        }
        int rc = x->prog->step(&x->port, x->state, x->priv[x->prog->id], &x->wait);
        if (rc == TSIM_RUN_WAIT) continue;
        if (rc == TSIM_RUN_FAIL) return; /* the violation ends the job */
        if (rc == TSIM_RUN_BACK) {
            e->backs[x->prog->id][x->prog->backs && x->wait < TSIM_BACKS ? x->wait : 0]++;
            hand_back(e, proc);
            return;
        }
        /* blocked until something in wait happens; it may be there already */
        x->blocked = 1;
        if (x->blocked_at == UINT64_MAX) x->blocked_at = x->vt;
        atomic_store(&e->seg->procs[proc].vt, x->vt);
        if (!prx_ready(e, proc, x->wait)) return;
        x->blocked = 0;
    }
}
