/* The engine: conservative discrete-event simulation of the torus.
 *
 * Each round: snapshot the horizon H (min vt of RUNNING processors), then
 * collect what processors did (injections, consumed reception slots) —
 * everything they do happens at or after the vt they published, so at or
 * after H — then process every event earlier than H in (time, key) order and
 * publish done = H. Keys of processor-originated events derive from the
 * processor, FIFO and slot sequence; keys of engine events from a counter
 * advanced in processing order. Neither depends on host timing. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsim_engine_priv.h"
#include "tsim_futex.h"

/* Keys order events of one time: the engine's steps for blocked processors
 * first (what a processor sees at vt is everything before vt, and nothing
 * of vt itself), then the engine's own events in processing order
 * (KEY_ENGINE, tsim_engine_priv.h), then the processors' in (processor,
 * FIFO, slot) order. */
#define KEY_PROXY 0ull
#define KEY_PROC (1ull << 62)

static uint64_t proc_key(int proc, int ring, uint32_t seq)
{
    return KEY_PROC | (uint64_t)proc << 40 | (uint64_t)ring << 32 | seq;
}

uint64_t eng_proc_key(int proc, int ring, uint32_t seq) { return proc_key(proc, ring, seq); }
uint64_t eng_proxy_key(int proc) { return KEY_PROXY | (uint64_t)proc; }

void ev_push_proxy(tsim_engine *e, uint64_t t, int proc)
{
    ev_push_key(e, t, KEY_PROXY | (uint64_t)proc, EV_PROXY, proc, 0, 0);
}

/* ---- processors ------------------------------------------------------ */
void eng_wake(tsim_engine *e, int proc, uint64_t t)
{
    tsim_proc *p = &e->seg->procs[proc];
    uint64_t vt = atomic_load(&p->vt);
    if (t > vt) atomic_store(&p->vt, t);
    else t = vt;
    if (t < e->woke_min) e->woke_min = t;
    e->stop = 0; /* the run loop looks at woke_min after this event */
    e->wakes++;
    e->ep[proc].settled = 0;
    atomic_store(&p->wake_mask, 0);
    atomic_store(&p->state, TSIM_P_RUNNING);
    atomic_fetch_add(&p->bell, 1);
    if (atomic_load(&p->asleep)) tsim_futex_wake(&p->bell); /* not while it spins */
}

static int inj_room(const tsim_ring *r, uint32_t need)
{
    return r->cap - atomic_load(&r->used) >= need;
}

/* A blocked processor waiting for something that is already there. A
 * processor whose loop the engine runs is looked after by tsim_handoff.c. */
static void wake_if_ready(tsim_engine *e, int proc, uint64_t t)
{
    tsim_proc *p = &e->seg->procs[proc];
    if (atomic_load(&p->state) != TSIM_P_BLOCKED) return;
    e->ep[proc].settled = 1; /* until a wake below */
    int taken = prx_start(e, proc);
    if (taken < 0) eng_wake(e, proc, t);
    if (taken) return;
    uint32_t mask = atomic_load(&p->wake_mask);
    for (int f = 0; f < TSIM_NREC; f++) {
        tsim_ring *r = &p->rec[f];
        if ((mask & TSIM_WAKE_REC(f)) && atomic_load(&r->head) != atomic_load(&r->tail)) {
            if (!prx_trigger(e, proc, t, f)) eng_wake(e, proc, t);
            return;
        }
    }
    for (int f = 0; f < TSIM_NINJ; f++)
        if ((mask & TSIM_WAKE_INJ(f)) && inj_room(&p->inj[f], atomic_load(&p->inj_need))) {
            if (!prx_trigger(e, proc, t, -1 - f)) eng_wake(e, proc, t);
            return;
        }
    if (tree_ready(e, proc, mask) && !prx_tree_trigger(e, proc, t, 0)) eng_wake(e, proc, t);
}

static void src_pull(tsim_engine *e, int proc);

/* Adds to a counter only the engine thread writes (readers load it): a
 * relaxed load and store, not a locked read-modify-write per packet. */
static inline void own_add(_Atomic uint64_t *c, uint64_t x)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + x, memory_order_relaxed);
}

/* prx_trigger as the last thing an event does: the step it queues, if it
 * would be the very next event popped, runs at once instead (now its time,
 * as the pop would make it), with no trip through the queue (about one a
 * packet in an MPI stream; the queue takes such a push, earlier than its
 * top, on its slow path). */
static int trigger_last(tsim_engine *e, int proc, uint64_t t, int rec_fifo)
{
    e->prx_defer = 1;
    int r = prx_trigger(e, proc, t, rec_fifo);
    e->prx_defer = 0;
    int d = e->defer_proc;
    if (d >= 0) {
        e->defer_proc = -1;
        e->now = e->defer_t;
        prx_step(e, d);
    }
    return r;
}

int eng_take_next(tsim_engine *e, uint64_t t, uint64_t key)
{
    if (!e->prx_defer || e->defer_proc >= 0 || t >= e->stop) return 0;
    const ev *top = &e->q.top; /* none: t UINT64_MAX */
    if (t > top->t || (t == top->t && key >= top->key)) return 0;
    if (e->nest_t != UINT64_MAX && (t > e->nest_t || (t == e->nest_t && key >= e->nest_key))) return 0;
    e->defer_t = t;
    return 1;
}

void eng_deliver(tsim_engine *e, int proc, int fifo, uint32_t pk, uint64_t t)
{
    npkt *n = &e->pool[pk];
    n->s.m.t_arrive = t;
    n->s.m.hops = n->hops;
    e->delivered++;
    tsim_proc *p = &e->seg->procs[proc];
    int c = n->s.p.hw.chunks;
    own_add(&p->pkts_received, 1); /* the engine's alone */
    own_add(&p->bytes_received, (uint64_t)c * TSIM_CHUNK);
    if (atomic_load(&p->state) == TSIM_P_ENGINE) {
        uint64_t done = t;
        if (e->has_src && e->src.sink)
            done = e->src.sink(e->src.ctx, proc, fifo, &n->s.m, &n->s.p);
        pkt_free(e, pk);
        if (done <= t) net_rec_free(e, proc, fifo, c, t); /* an instant consumer */
        else ev_push(e, done, EV_REC_FREE, proc, fifo, (uint32_t)c);
        return;
    }
    tsim_ring *r = &p->rec[fifo];
    eproc *q = &e->ep[proc];
    uint32_t h = q->rec_head[fifo]; /* never the ring's head: the processor can write that */
    r->slot[h % TSIM_RING_SLOTS] = n->s;
    q->rec_chunks[fifo][h % TSIM_RING_SLOTS] = (uint8_t)c;
    p->eng.rec_sum[fifo][h % TSIM_RING_SLOTS] = tsim_slot_sum(&n->s);
    q->rec_head[fifo] = h + 1;
    q->rec_pending |= 1u << fifo;
    atomic_fetch_add(&r->used, (uint32_t)c);
    /* the read-only copy first: a reader that sees the head sees it too */
    atomic_store_explicit(&p->eng.rec_head[fifo], h + 1, memory_order_relaxed);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    pkt_free(e, pk);
    if (atomic_load(&p->state) == TSIM_P_BLOCKED &&
        (prx_active(e, proc) || (atomic_load(&p->wake_mask) & TSIM_WAKE_REC(fifo))) &&
        !trigger_last(e, proc, t + 1, fifo))
        eng_wake(e, proc, t + 1); /* visible to a processor at vt > arrival */
}

void eng_inj_freed(tsim_engine *e, int proc, int fifo, int chunks, uint64_t t)
{
    e->ep[proc].inj_used[fifo] -= chunks;
    tsim_proc *p = &e->seg->procs[proc];
    if (atomic_load(&p->state) == TSIM_P_ENGINE) {
        src_pull(e, proc);
        return;
    }
    tsim_ring *r = &p->inj[fifo];
    atomic_store(&r->t_free, t);
    atomic_fetch_sub(&r->used, (uint32_t)chunks);
    atomic_fetch_add_explicit(&r->tail, 1, memory_order_release);
    if (atomic_load(&p->state) != TSIM_P_BLOCKED) return;
    if (prx_active(e, proc)) {
        trigger_last(e, proc, t, -1 - fifo);
    } else if ((atomic_load(&p->wake_mask) & TSIM_WAKE_INJ(fifo)) &&
               inj_room(r, atomic_load(&p->inj_need)) && !trigger_last(e, proc, t, -1 - fifo)) {
        eng_wake(e, proc, t);
    }
}

/* ---- engine-side sources --------------------------------------------- */
/* The source writes each packet straight into the pool packet that will
 * carry it (no copy). 0 when the source has no more (nothing held). */
static int src_gen(tsim_engine *e, int proc, uint64_t *t)
{
    eproc *q = &e->ep[proc];
    uint32_t pk = pkt_alloc(e);
    if (!e->src.next(e->src.ctx, proc, t, &e->pool[pk].s.p, &q->src_fifo)) {
        pkt_free(e, pk);
        return 0;
    }
    q->src_pk = pk;
    return 1;
}

/* Moves the pending generated packet into its FIFO when there is room, then
 * asks the source for the next one. Latency counts from generation. */
static void src_pull(tsim_engine *e, int proc)
{
    eproc *q = &e->ep[proc];
    while (q->src_has) {
        uint32_t pk = q->src_pk;
        npkt *n = &e->pool[pk];
        int c = n->s.p.hw.chunks;
        if (q->inj_used[q->src_fifo] + c > (int)e->prm.fifo_chunks) return;
        if (q->src_t > e->now) { /* not generated yet: one wake-up suffices */
            if (q->src_armed != q->src_t) {
                q->src_armed = q->src_t;
                ev_push_key(e, q->src_t, proc_key(proc, 15, 0), EV_SRC, proc, 0, 0);
            }
            return;
        }
        memset(&n->s.m, 0, sizeof n->s.m);
        n->s.m.t_inject = q->src_t;
        n->s.m.src = (uint32_t)proc;
        /* an engine-driven processor has no process to inject beside it */
        own_add(&e->seg->procs[proc].pkts_injected, 1);
        own_add(&e->seg->procs[proc].bytes_injected, (uint64_t)c * TSIM_CHUNK);
        int fifo = q->src_fifo;
        q->src_has = 0;
        if (q->src_live) {
            uint64_t t = q->src_t;
            if (src_gen(e, proc, &t)) { /* n may have moved: only pk is used below */
                if (t < q->src_t) t = q->src_t;
                q->src_t = t;
                q->src_has = 1;
            } else {
                q->src_live = 0;
            }
        }
        net_inject(e, proc, fifo, pk, e->now);
    }
}

static void start_sources(tsim_engine *e)
{
    if (!e->has_src) return;
    for (int i = 0; i < e->nprocs; i++) {
        if (atomic_load(&e->seg->procs[i].state) != TSIM_P_ENGINE) continue;
        eproc *q = &e->ep[i];
        uint64_t t = 0;
        q->src_live = 1;
        if (src_gen(e, i, &t)) {
            q->src_t = t;
            q->src_has = 1;
            ev_push_key(e, t, proc_key(i, 15, 0), EV_SRC, i, 0, 0);
        } else {
            q->src_live = 0;
        }
    }
}

/* ---- collecting what processors did ---------------------------------- */
/* Ends the job for something processor proc wrote: the engine uses none of
 * it, and every waiter is released (pl_block returns -1). */
void eng_violation(tsim_engine *e, int proc, const char *fmt, ...)
{
    if (atomic_load(&e->violation_proc) >= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->violation, sizeof e->violation, fmt, ap);
    va_end(ap);
    atomic_store(&e->violation_proc, proc);
    tsim_seg *s = e->seg;
    atomic_store(&s->abort, 1);
    for (int i = 0; i < e->nprocs; i++) {
        atomic_fetch_add(&s->procs[i].bell, 1);
        tsim_futex_wake(&s->procs[i].bell);
    }
}

int tsim_engine_violation(tsim_engine *e, char *buf, size_t len)
{
    int proc = atomic_load(&e->violation_proc);
    if (proc >= 0 && buf && len) snprintf(buf, len, "%s", e->violation);
    return proc;
}

/* What the engine reads from a processor's injection FIFO before using it:
 * a packet the hardware could carry (1..8 chunks, a destination inside the
 * machine, flags and hint bits that exist, a processor slot for the
 * reception group), written no earlier than the time already simulated.
 * 0, or -1 after eng_violation(). */
static int inj_packet_ok(tsim_engine *e, int proc, int f, uint32_t seq, const tsim_slot *s)
{
    const tsim_hwhdr *hw = &s->p.hw;
    unsigned slot = seq % TSIM_RING_SLOTS;
    if (hw->chunks < 1 || hw->chunks > TSIM_MAX_CHUNKS)
        eng_violation(e, proc, "injection FIFO %d: packet of %u chunks at slot %u", f, hw->chunks, slot);
    else if (hw->dst[0] >= e->g.dim[0] || hw->dst[1] >= e->g.dim[1] || hw->dst[2] >= e->g.dim[2])
        eng_violation(e, proc, "injection FIFO %d: packet to <%u,%u,%u>, outside the %dx%dx%d machine, "
                  "at slot %u", f, hw->dst[0], hw->dst[1], hw->dst[2], e->g.dim[0], e->g.dim[1],
                  e->g.dim[2], slot);
    else if (hw->flags & ~(TSIM_F_DYNAMIC | TSIM_F_DEPOSIT | TSIM_F_HP))
        eng_violation(e, proc, "injection FIFO %d: packet with unknown flags %#x at slot %u", f,
                  hw->flags, slot);
    else if (hw->hints & ~((1u << TSIM_NPORTS) - 1))
        eng_violation(e, proc, "injection FIFO %d: packet with unknown hint bits %#x at slot %u", f,
                  hw->hints, slot);
    else if (hw->group >= TSIM_CPUS)
        eng_violation(e, proc, "injection FIFO %d: packet for reception group %u at slot %u", f,
                  hw->group, slot);
    else if (s->m.t_inject < e->published)
        eng_violation(e, proc, "injection FIFO %d: packet injected at %llu cycles, before the %llu "
                  "already simulated, at slot %u", f, (unsigned long long)s->m.t_inject,
                  (unsigned long long)e->published, slot);
    else
        return 0;
    return -1;
}

/* A processor's reception cursor (tail) that moved, checked against what
 * the engine itself delivered and saw freed: 1 after eng_violation(). */
static int rec_cursor_bad(tsim_engine *e, int proc, int f, uint32_t tl)
{
    const eproc *q = &e->ep[proc];
    if ((int32_t)(tl - q->rec_seen[f]) < 0)
        eng_violation(e, proc, "reception FIFO %d: tail %u moved %u slots back, to packets it "
                      "had freed already", f, tl, q->rec_seen[f] - tl);
    else if ((int32_t)(tl - q->rec_head[f]) > 0)
        eng_violation(e, proc, "reception FIFO %d: tail %u is %u slots past the head (%u packets "
                      "delivered)", f, tl, tl - q->rec_head[f], q->rec_head[f]);
    else
        return 0;
    return 1;
}

static int drain(tsim_engine *e)
{
    int got = 0;
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &e->seg->procs[i];
        uint32_t st = atomic_load(&p->state);
        if (st == TSIM_P_ABSENT || st == TSIM_P_ENGINE) continue;
        if (!e->ep[i].pid && p->pid) { /* its pid from pl_open, frozen from here on */
            e->ep[i].pid = p->pid;
            atomic_store(&p->eng.pid, p->pid);
        }
        for (int f = 0; f < TSIM_NINJ; f++) {
            tsim_ring *r = &p->inj[f];
            uint32_t *seen = &e->ep[i].inj_seen[f]; /* never in the processor's pages */
            uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
            /* unsigned: a head moved back shows as a huge distance too */
            if (h - *seen > TSIM_RING_SLOTS) {
                if ((int32_t)(h - *seen) < 0)
                    eng_violation(e, i, "injection FIFO %d: head %u moved %u slots back, behind the "
                              "engine's cursor %u", f, h, *seen - h, *seen);
                else
                    eng_violation(e, i, "injection FIFO %d: head %u is %u slots past the engine's "
                              "cursor %u (a ring holds %d)", f, h, h - *seen, *seen,
                              TSIM_RING_SLOTS);
                return got;
            }
            for (; *seen != h; (*seen)++) {
                const tsim_slot *sl = &r->slot[*seen % TSIM_RING_SLOTS];
                if (inj_packet_ok(e, i, f, *seen, sl) != 0) return got;
                uint32_t pk = pkt_alloc(e);
                npkt *n = &e->pool[pk];
                n->s = *sl;
                n->s.m.src = (uint32_t)i;
                ev_push_key(e, n->s.m.t_inject, proc_key(i, f, *seen), EV_INJ, i, f, pk);
                got = 1;
            }
        }
        eproc *q = &e->ep[i];
        for (int f = 0; f < TSIM_NREC; f++) {
            tsim_ring *r = &p->rec[f];
            uint32_t tl = atomic_load_explicit(&r->tail, memory_order_acquire);
            if (tl == q->rec_seen[f]) continue;
            if (rec_cursor_bad(e, i, f, tl)) return got;
            uint64_t vt = atomic_load(&p->vt); /* published before any slot was freed */
            for (; q->rec_seen[f] != tl; q->rec_seen[f]++) {
                unsigned k = q->rec_seen[f] % TSIM_RING_SLOTS;
                uint64_t t = r->slot[k].m.t_done;
                if (t > vt) {
                    eng_violation(e, i, "reception FIFO %d: slot %u freed at %llu cycles, after "
                                  "its clock %llu", f, k, (unsigned long long)t,
                                  (unsigned long long)vt);
                    return got;
                }
                ev_push_key(e, t, proc_key(i, 8 + f, q->rec_seen[f]), EV_REC_FREE, i, f,
                            q->rec_chunks[f][k]);
                got = 1;
            }
        }
    }
    if (tree_drain(e)) got = 1;
    return got;
}

/* The run loop counts every event it processes into e->events; EV_PROXY
 * takes its own back (the network's events: the same whoever runs a loop). */
static inline __attribute__((always_inline)) void process(tsim_engine *e, const ev *v)
{
    e->now = v->t;
    switch (v->type) {
    case EV_HEAD: /* most events: one dispatch, not two */
        net_head(e, v->a, v->b, v->pkt, v->t);
        break;
    case EV_LINK_FREE:
        net_link_free(e, v->a, v->t);
        break;
    case EV_INJ:
        net_inject(e, v->a, v->b, v->pkt, v->t);
        break;
    case EV_INJ_FREE:
        eng_inj_freed(e, v->a, v->b, (int)v->pkt, v->t);
        break;
    case EV_DELIVER:
        eng_deliver(e, v->a, v->b, v->pkt, v->t);
        break;
    case EV_SRC:
        src_pull(e, v->a);
        break;
    case EV_PROXY:
        e->events--;
        prx_step(e, v->a);
        break;
    default: { /* a copy: the loop's own event never has its address taken, and
                * stays in registers from the queue to the handlers */
        ev w = *v;
        if (w.type >= EV_TREE_INJ) tree_event(e, &w);
        else net_event(e, &w);
    }
    }
}

/* ---- the loop -------------------------------------------------------- */
static uint64_t horizon(tsim_engine *e, int *running, int *blocked)
{
    uint64_t h = UINT64_MAX;
    *running = *blocked = 0;
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &e->seg->procs[i];
        uint32_t st = atomic_load(&p->state);
        if (st == TSIM_P_RUNNING) {
            uint64_t vt = atomic_load(&p->vt);
            if (vt < h) h = vt;
            (*running)++;
        } else if (st == TSIM_P_BLOCKED) {
            (*blocked)++;
        } else if (st > TSIM_P_EXITED && (st != TSIM_P_ENGINE || !e->ep[i].engine_driven)) {
            eng_violation(e, i, "state word: %u is %s", st,
                          st == TSIM_P_ENGINE ? "the state of the engine's own traffic sources"
                                              : "not a processor state");
        }
    }
    return h;
}

/* While the engine sleeps, nothing can move until a running processor's
 * clock passes the earliest queued event, or reaches a clock another
 * processor waits for the horizon to reach (pl_sync). */
static uint64_t sleep_until(tsim_engine *e)
{
    uint64_t t = evq_count(&e->q) ? evq_min_time(&e->q) : UINT64_MAX;
    for (int i = 0; i < e->nprocs; i++) {
        uint64_t want = atomic_load(&e->seg->procs[i].sync_target);
        if (want && want - 1 < t) t = want - 1;
    }
    return t;
}

static void publish_done(tsim_engine *e, uint64_t h)
{
    if (h <= atomic_load(&e->seg->done)) return;
    atomic_store(&e->seg->done, h);
    e->published = h;
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &e->seg->procs[i];
        uint64_t want = atomic_load(&p->sync_target);
        if (want && want <= h) {
            atomic_store(&p->sync_target, 0);
            atomic_fetch_add(&p->bell, 1);
            if (atomic_load(&p->asleep)) tsim_futex_wake(&p->bell);
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Long runs say how far simulated time has got (stderr, host-timed). */
static void report_progress(tsim_engine *e)
{
    double t = now_s(), t0 = e->prog_t0;
    if (t < e->prog_next) return;
    e->prog_next = t + e->seg->progress_secs;
    fprintf(stderr, "bglemu: %.0f s: simulated %llu cycles (%.1f us), %llu packets delivered\n",
            t - t0, (unsigned long long)e->now, (double)e->now / (double)e->prm.clock_mhz,
            (unsigned long long)e->delivered);
}

/* One popped event, counted and processed, as every run of events takes it
 * (the run loop's and eng_run_before's). */
static inline __attribute__((always_inline)) void run_one(tsim_engine *e, const ev *v)
{
    e->events++;
    process(e, v);
    if (!(e->events & 0xffff) && e->seg->progress_secs) report_progress(e);
}

int eng_run_before(tsim_engine *e, uint64_t t, uint64_t key)
{
    if (t >= e->stop || e->nest_t != UINT64_MAX) return 0; /* one at a time: no deep recursion */
    e->nest_t = t;
    e->nest_key = key;
    ev v;
    for (;;) {
        const ev *top = &e->q.top; /* none: t UINT64_MAX */
        if (top->t > t || (top->t == t && top->key > key)) break;
        if (!evq_pop_below(&e->q, e->stop, &v)) break; /* a wake ended the run */
        run_one(e, &v);
    }
    e->nest_t = UINT64_MAX;
    const ev *top = &e->q.top;
    if (t >= e->stop || top->t < t || (top->t == t && top->key <= key)) return 0;
    e->now = t;
    return 1;
}

int tsim_engine_run(tsim_engine *e, tsim_result *res)
{
    tsim_seg *s = e->seg;
    double t0 = now_s();
    e->prog_t0 = t0;
    e->prog_next = t0 + s->progress_secs;
    for (int i = 0; i < e->nprocs; i++)
        e->ep[i].engine_driven = atomic_load(&s->procs[i].state) == TSIM_P_ENGINE;
    start_sources(e);
    for (;;) {
        uint32_t bell = atomic_load(&s->engine_bell);
        if (atomic_load(&s->abort)) {
            e->aborted = 1;
            break;
        }
        int running, blocked;
        uint64_t h = horizon(e, &running, &blocked), h0 = h;
        int progress = drain(e);
        e->woke_min = UINT64_MAX;
        for (int i = 0; i < e->nprocs; i++) wake_if_ready(e, i, atomic_load(&s->procs[i].vt));
        if (e->woke_min < h) h = e->woke_min;
        ev v;
        e->h = h;
        /* Runs of events below stop: the horizon, or the link sampler's next
         * time if earlier, so that the events themselves need no test for
         * it; a wake (eng_wake) zeroes e->stop to end a run after its event,
         * for the horizon to come down to it before the next. */
        for (;;) {
            if (e->woke_min < h) { /* a wake lowers the horizon */
                h = e->woke_min;
                e->h = h;
            }
            uint64_t stop = h < e->trace_at ? h : e->trace_at;
            e->stop = stop;
            while (evq_pop_below(&e->q, e->stop, &v)) {
                run_one(e, &v);
                progress = 1;
            }
            if (e->stop != stop) continue;
            if (stop == h || !evq_pop_below(&e->q, h, &v)) break;
            tsim_trace_tick(e, v.t); /* nothing lies before trace_at: v.t is at or after it */
            run_one(e, &v);
            progress = 1;
        }
        if (h != UINT64_MAX) publish_done(e, h);
        if (!evq_count(&e->q) && !progress) {
            /* nothing can move: finished, or every live processor waits */
            horizon(e, &running, &blocked);
            if (!running && !drain(e)) {
                e->woke_min = UINT64_MAX;
                for (int i = 0; i < e->nprocs; i++)
                    wake_if_ready(e, i, atomic_load(&s->procs[i].vt));
                if (e->woke_min == UINT64_MAX) {
                    /* the abort flag is read after the states: a job torn
                     * down (its ranks marked gone one by one) is not a
                     * deadlock */
                    if (atomic_load(&s->abort)) e->aborted = 1;
                    else if (blocked) e->deadlock = 1;
                    break;
                }
            }
            if (running) goto sleep;
            continue;
        }
        if (!progress) {
        sleep:
            if (s->progress_secs) report_progress(e);
            /* running processors kick only once their clock passes this
             * (packetlayer/pl.c); one whose clock moved after we looked may
             * have read an older value and not kicked: look again after
             * publishing it (both sides store, then load) */
            eng_publish_quiet(e);
            atomic_store(&s->engine_wait, sleep_until(e));
            int r2, b2;
            uint64_t h2 = horizon(e, &r2, &b2);
            tsim_cores_note(e, r2);
            if (h2 == h0)
                tsim_wait_change(&s->engine_bell, bell, 100, r2 <= e->ncpu ? tsim_engine_spins() : 0,
                                 0, &s->engine_idle);
            atomic_store(&s->engine_wait, 0);
        }
    }
    if (e->deadlock) {
        report_snapshot_deadlock(e);
        atomic_store(&s->deadlock, 1);
        atomic_store(&s->abort, 1);
        for (int i = 0; i < e->nprocs; i++) { /* release everyone */
            atomic_fetch_add(&s->procs[i].bell, 1);
            tsim_futex_wake(&s->procs[i].bell);
        }
    }
    tsim_result r = {0};
    r.deadlock = e->deadlock;
    r.aborted = e->aborted;
    for (int i = 0; i < e->nprocs; i++) {
        uint64_t vt = atomic_load(&s->procs[i].vt);
        if (atomic_load(&s->procs[i].state) != TSIM_P_ABSENT && vt > r.end_time) r.end_time = vt;
    }
    if (e->now > r.end_time) r.end_time = e->now;
    r.events = e->events;
    r.packet_hops = e->hops;
    r.packets_delivered = e->delivered;
    r.proxy_read = e->prx_read;
    r.proxy_sent = e->prx_sent;
    r.wakes = e->wakes;
    if (getenv("BGLEMU_PROXY_STATS"))
        fprintf(stderr, "bglemu: engine read %llu and sent %llu packets for blocked processors; "
                "%llu wakes\n", (unsigned long long)r.proxy_read, (unsigned long long)r.proxy_sent,
                (unsigned long long)r.wakes);
    r.wall_seconds = now_s() - t0;
    e->result = r;
    if (res) *res = r;
    return e->deadlock ? 2 : e->aborted ? 1 : 0;
}

void tsim_kick(tsim_seg *s)
{
    atomic_fetch_add(&s->engine_bell, 1);
    if (atomic_load(&s->engine_idle)) tsim_futex_wake(&s->engine_bell);
}

/* ---- lifetime -------------------------------------------------------- */
tsim_engine *tsim_engine_new(tsim_seg *seg)
{
    tsim_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->seg = seg;
    e->self_pid = (int)getpid();
    e->g = seg->geom;
    e->prm = seg->params;
    e->nprocs = e->g.nnodes * TSIM_CPUS;
    void *rt = NULL; /* aligned: a router's hot fields in whole cache lines */
    if (!posix_memalign(&rt, 64, (size_t)e->g.nnodes * sizeof *e->rt))
        memset(rt, 0, (size_t)e->g.nnodes * sizeof *e->rt);
    e->rt = rt;
    e->ep = calloc((size_t)e->nprocs, sizeof *e->ep);
    e->freelist = NIL;
    e->trace_at = UINT64_MAX;
    e->nest_t = UINT64_MAX;
    e->defer_proc = -1;
    atomic_store(&e->violation_proc, -1);
    const char *px = getenv("BGLEMU_PROXY");
    e->prx_off = px && strcmp(px, "0") == 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    e->ncpu = ncpu > 1 ? (int)ncpu - 1 : 0; /* cores left beside the engine */
    const char *qt = getenv("BGLEMU_QUIET");
    e->quiet_off = qt && strcmp(qt, "0") == 0;
    if (!e->rt || !e->ep || evq_init(&e->q) != 0 || tree_new(e) != 0) {
        tsim_engine_free(e);
        return NULL;
    }
    for (int n = 0; n < e->g.nnodes; n++) {
        router *r = &e->rt[n];
        r->ret_min = UINT64_MAX;
        for (int port = 0; port < TSIM_NPORTS; port++)
            for (int v = 0; v < TSIM_NVC; v++) {
                r->inq[port][v].head = r->inq[port][v].tail = NIL;
                r->credits[v][port] = tsim_neighbor(&e->g, n, port) >= 0 ? (int32_t)e->prm.vc_chunks : 0;
            }
        for (int port = 0; port < TSIM_NPORTS; port++) r->nbr[port] = tsim_neighbor(&e->g, n, port);
        for (int c = 0; c < TSIM_CPUS; c++)
            for (int f = 0; f < TSIM_NINJ; f++) r->injq[c][f].head = r->injq[c][f].tail = NIL;
    }
    if (e->g.nnodes <= 1024) {
        size_t nn = (size_t)e->g.nnodes;
        e->route = malloc(nn * nn * sizeof *e->route);
        for (size_t a = 0; e->route && a < nn; a++)
            for (size_t b = 0; b < nn; b++) {
                int c[3];
                tsim_coords(&e->g, (int)b, c);
                uint8_t d[3] = {(uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2]};
                int det = tsim_route_det(&e->g, (int)a, d);
                e->route[a * nn + b] = (uint16_t)((det < 0 ? 7 : det) |
                                                  tsim_route_profitable(&e->g, (int)a, d) << 3);
            }
    }
    return e;
}

void tsim_engine_free(tsim_engine *e)
{
    if (!e) return;
    prx_free(e);
    tree_free(e);
    tsim_cores_free(e);
    tsim_trace_free(e);
    free(e->rt);
    free(e->ep);
    evq_free(&e->q);
    free(e->route);
    free(e->pool);
    free(e->deadlock_report);
    free(e);
}

void tsim_engine_set_source(tsim_engine *e, const tsim_source *src)
{
    e->src = *src;
    e->has_src = 1;
}

static void *engine_thread(void *arg)
{
    tsim_engine *e = arg;
    tsim_cores_start(e);
    tsim_engine_run(e, NULL);
    return NULL;
}

int tsim_engine_start(tsim_engine *e)
{
    return pthread_create(&e->thread, NULL, engine_thread, e) == 0 ? 0 : -1;
}

int tsim_engine_join(tsim_engine *e, tsim_result *r)
{
    pthread_join(e->thread, NULL);
    if (r) *r = e->result;
    return e->deadlock ? 2 : e->aborted ? 1 : 0;
}
