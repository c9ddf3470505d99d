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
#include "tsim_watch.h"

/* A wake call the engine left to the ranks' watcher (tsim_watch.h): its
 * own record of it, which no rank can touch. */
static void left_to_watcher(tsim_engine *e, int i)
{
    e->left++;
    e->left_mask[i >> 6] |= 1ull << (i & 63);
    if (!e->left_at) e->left_at = eng_mono_s();
}

/* Keys order events of one time: the engine's steps for blocked processors
 * first (what a processor sees at vt is everything before vt, and nothing
 * of vt itself), then the engine's own events in processing order
 * (KEY_ENGINE, tsim_engine_priv.h), then the processors' in (processor,
 * FIFO, slot) order. */
#define KEY_PROXY 0ull
#define KEY_PROC (1ull << 62)

uint64_t eng_proc_key(int proc, int ring, uint32_t seq)
{
    return KEY_PROC | (uint64_t)proc << 40 | (uint64_t)ring << 32 | seq;
}

uint64_t eng_proxy_key(int proc) { return KEY_PROXY | (uint64_t)proc; }

/* ---- which processors a round looks at -------------------------------- *
 * drain and wake_if_ready look only at the processors that may have
 * changed (look_drain, look_wake: tsim_engine_priv.h), in ascending order
 * as the loops over every processor did. A processor writes its words
 * only while RUNNING and leaves BLOCKED only through eng_wake, so every
 * processor skipped is one the full loop would have found nothing at; the
 * sets trust nothing a processor writes (the horizon adds every RUNNING
 * processor and every changed state, every 256th round looks at everyone)
 * and BGLEMU_SCAN=all|check looks at everyone or verifies (look_check):
 * docs/torus-sim.md, "Who may write what". */
#define LOOK_ALL_EVERY 256

static inline void look_set(tsim_engine *e, int proc)
{
    uint64_t b = 1ull << (proc & 63);
    e->look_drain[proc >> 6] |= b;
    e->look_wake[proc >> 6] |= b;
}

static void present_scan(tsim_engine *e)
{
    for (int i = 0; i < e->nprocs; i++)
        if (atomic_load_explicit(&e->seg->procs[i].state, memory_order_relaxed) != TSIM_P_ABSENT) {
            e->present[i >> 6] |= 1ull << (i & 63);
            int mate = i ^ 1;
            if (mate < e->nprocs) e->present[mate >> 6] |= 1ull << (mate & 63);
        }
}

static void look_all(tsim_engine *e)
{
    present_scan(e);
    for (int w = 0; w < e->look_words; w++) {
        int n = e->nprocs - 64 * w;
        uint64_t m = n >= 64 ? ~0ull : (1ull << n) - 1;
        e->look_drain[w] = e->look_wake[w] = m;
    }
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
    look_set(e, proc); /* it may write again, and block again */
    atomic_store(&p->wake_mask, 0);
    atomic_store(&p->state, TSIM_P_RUNNING);
    atomic_fetch_add(&p->bell, 1);
    if (tsim_watch_wake(e->seg, proc)) left_to_watcher(e, proc); /* not while it spins */
}

/* What a blocked processor waits for (its wake mask) that is there
 * already: a packet in reception FIFO f (f), room in injection FIFO f
 * (-1 - f, prx_trigger's numbering), the collective networks' (READY_TREE)
 * or nothing (READY_NONE). */
enum { READY_NONE = -100, READY_TREE };
static int ready_for(tsim_engine *e, int proc, const tsim_proc *p)
{
    uint32_t mask = atomic_load(&p->wake_mask);
    for (int f = 0; f < TSIM_NREC; f++)
        if ((mask & TSIM_WAKE_REC(f)) && atomic_load(&p->rec[f].head) != atomic_load(&p->rec[f].tail))
            return f;
    for (int f = 0; f < TSIM_NINJ; f++)
        if ((mask & TSIM_WAKE_INJ(f)) && tsim_ring_room(&p->inj[f]) >= atomic_load(&p->inj_need)) return -1 - f;
    return tree_ready(e, proc, mask) ? READY_TREE : READY_NONE;
}

/* A blocked processor waiting for something that is already there. A
 * processor whose loop the engine runs is looked after by tsim_handoff.c.
 * 1 if the next rounds need not look at it (settled, exited, absent). */
static int wake_if_ready(tsim_engine *e, int proc, uint64_t t)
{
    tsim_proc *p = &e->seg->procs[proc];
    uint32_t st = atomic_load(&p->state);
    if (st != TSIM_P_BLOCKED)
        return st == TSIM_P_EXITED || st == TSIM_P_ABSENT || st == TSIM_P_ENGINE;
    e->ep[proc].settled = 1; /* until a wake below */
    int taken = prx_start(e, proc);
    if (taken < 0) eng_wake(e, proc, t);
    if (taken) return e->ep[proc].settled;
    int r = ready_for(e, proc, p);
    if (r == READY_TREE ? !prx_tree_trigger(e, proc, t, 0) : r != READY_NONE && !prx_trigger(e, proc, t, r))
        eng_wake(e, proc, t);
    return e->ep[proc].settled;
}

/* Would wake_if_ready have done anything for a processor the round left
 * out (BGLEMU_SCAN=check)? Its checks, without their effects. */
static int wake_would_act(tsim_engine *e, int proc)
{
    tsim_proc *p = &e->seg->procs[proc];
    if (atomic_load(&p->state) != TSIM_P_BLOCKED) return 0;
    if (!e->ep[proc].settled) return 1;
    const prx_state *x = &e->ep[proc].prx;
    if (x->on) return 0;
    if (p->handoff.start && atomic_load(&p->handoff.gen) != x->gen) return 1;
    return ready_for(e, proc, p) != READY_NONE;
}

/* Every round: wake_if_ready for each processor in look_wake, in order. */
static void wake_ready(tsim_engine *e)
{
    tsim_seg *s = e->seg;
    e->woke_min = UINT64_MAX;
    for (int w = 0; w < e->look_words; w++) {
        uint64_t left = 0;
        for (uint64_t m = e->look_wake[w]; m; m &= m - 1) {
            int i = 64 * w + __builtin_ctzll(m);
            if (wake_if_ready(e, i, atomic_load(&s->procs[i].vt))) left |= m & -m;
        }
        e->look_wake[w] &= ~left; /* a wake above set its bit again: never in left */
    }
}

static void src_pull(tsim_engine *e, int proc);

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

static void eng_deliver(tsim_engine *e, int proc, int fifo, uint32_t pk, uint64_t t)
{
    npkt *n = &e->pool[pk];
    n->s.m.t_arrive = t;
    n->s.m.hops = n->hops;
    e->delivered++;
    tsim_proc *p = &e->seg->procs[proc];
    int c = n->s.p.hw.chunks;
    tsim_count_add(&p->pkts_received, 1); /* the engine's alone */
    tsim_count_add(&p->bytes_received, (uint64_t)c * TSIM_CHUNK);
    tsim_matrix_add(e, n->proc, proc, c);
    uint32_t st = atomic_load(&p->state);
    if (st == TSIM_P_ENGINE) {
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
    eng_add32(&r->used, (uint32_t)c, st == TSIM_P_BLOCKED);
    /* the read-only copy first: a reader that sees the head sees it too */
    atomic_store_explicit(&p->eng.rec_head[fifo], h + 1, memory_order_relaxed);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    pkt_free(e, pk);
    if (atomic_load(&p->state) == TSIM_P_BLOCKED &&
        (prx_active(e, proc) || (atomic_load(&p->wake_mask) & TSIM_WAKE_REC(fifo))) &&
        !trigger_last(e, proc, t + 1, fifo))
        eng_wake(e, proc, t + 1); /* visible to a processor at vt > arrival */
}

static void eng_inj_freed(tsim_engine *e, int proc, int fifo, int chunks, uint64_t t)
{
    e->ep[proc].inj_used[fifo] -= chunks;
    tsim_proc *p = &e->seg->procs[proc];
    if (atomic_load(&p->state) == TSIM_P_ENGINE) {
        src_pull(e, proc);
        return;
    }
    tsim_ring *r = &p->inj[fifo];
    uint32_t st = atomic_load(&p->state);
    eng_add32(&r->used, -(uint32_t)chunks, st == TSIM_P_BLOCKED);
    eng_add32(&r->tail, 1, st == TSIM_P_BLOCKED);
    if (st != TSIM_P_BLOCKED) return;
    if (prx_active(e, proc)) {
        trigger_last(e, proc, t, -1 - fifo);
    } else if ((atomic_load(&p->wake_mask) & TSIM_WAKE_INJ(fifo)) &&
               tsim_ring_room(r) >= atomic_load(&p->inj_need) && !trigger_last(e, proc, t, -1 - fifo)) {
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
                ev_push_key(e, q->src_t, eng_proc_key(proc, 15, 0), EV_SRC, proc, 0, 0);
            }
            return;
        }
        memset(&n->s.m, 0, sizeof n->s.m);
        n->s.m.t_inject = q->src_t;
        n->s.m.src = (uint32_t)proc;
        /* an engine-driven processor has no process to inject beside it */
        tsim_count_add(&e->seg->procs[proc].pkts_injected, 1);
        tsim_count_add(&e->seg->procs[proc].bytes_injected, (uint64_t)c * TSIM_CHUNK);
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
            ev_push_key(e, t, eng_proc_key(i, 15, 0), EV_SRC, i, 0, 0);
        } else {
            q->src_live = 0;
        }
    }
}

/* ---- collecting what processors did ---------------------------------- */
/* Aborts the job's segment and rings every processor's bell: every waiter
 * is released (pl_block returns -1). */
static void abort_all(tsim_engine *e)
{
    tsim_seg *s = e->seg;
    atomic_store(&s->abort, 1);
    for (int i = 0; i < e->nprocs; i++) {
        atomic_fetch_add(&s->procs[i].bell, 1);
        tsim_futex_wake(&s->procs[i].bell);
    }
}

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
    abort_all(e);
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

/* Has processor i anything drain or tree_drain would take (BGLEMU_SCAN=check;
 * the promises, tsim_quiet.c)? */
int eng_would_take(tsim_engine *e, int i)
{
    tsim_proc *p = &e->seg->procs[i];
    uint32_t st = atomic_load(&p->state);
    if (st == TSIM_P_ABSENT || st == TSIM_P_ENGINE) return 0;
    for (int f = 0; f < TSIM_NINJ; f++)
        if (atomic_load(&p->inj[f].head) != e->ep[i].inj_seen[f]) return 1;
    for (int f = 0; f < TSIM_NREC; f++)
        if (atomic_load(&p->rec[f].tail) != e->ep[i].rec_seen[f]) return 1;
    return tree_would_take(e, i);
}

/* BGLEMU_SCAN=check: what the round left out (skip: its look set as the
 * round began) had nothing, of the processors BLOCKED or EXITED as the
 * engine last saw them (look_st). One whose state changed since (a
 * coprocessor opened and blocked after the horizon looked) is the next
 * round's, as it would be had it changed after this look. */
static void look_check(tsim_engine *e, const uint64_t *skip, int wake)
{
    for (int i = 0; i < e->nprocs; i++) {
        if (skip[i >> 6] >> (i & 63) & 1) continue;
        uint32_t st = atomic_load(&e->seg->procs[i].state);
        if ((st != TSIM_P_BLOCKED && st != TSIM_P_EXITED) || st != e->look_st[i]) continue;
        if (wake ? wake_would_act(e, i) : eng_would_take(e, i)) {
            fprintf(stderr, "bglemu: BGLEMU_SCAN=check: %s left out processor %d (state %u), "
                    "which had something\n", wake ? "wake_if_ready" : "drain", i, st);
            abort();
        }
    }
}

/* Takes what processor i wrote into its injection FIFOs and freed of its
 * reception FIFOs: 1 if anything, -1 after eng_violation(). */
static int drain_proc(tsim_engine *e, int i, tsim_proc *p)
{
    int got = 0;
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
            return -1;
        }
        for (; *seen != h; (*seen)++) {
            const tsim_slot *sl = &r->slot[*seen % TSIM_RING_SLOTS];
            if (inj_packet_ok(e, i, f, *seen, sl) != 0) return -1;
            uint32_t pk = pkt_alloc(e);
            npkt *n = &e->pool[pk];
            n->s = *sl;
            n->s.m.src = (uint32_t)i;
            ev_push_key(e, n->s.m.t_inject, eng_proc_key(i, f, *seen), EV_INJ, i, f, pk);
            got = 1;
        }
    }
    eproc *q = &e->ep[i];
    for (int f = 0; f < TSIM_NREC; f++) {
        tsim_ring *r = &p->rec[f];
        uint32_t tl = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (tl == q->rec_seen[f]) continue;
        if (rec_cursor_bad(e, i, f, tl)) return -1;
        uint64_t vt = atomic_load(&p->vt); /* published before any slot was freed */
        for (; q->rec_seen[f] != tl; q->rec_seen[f]++) {
            unsigned k = q->rec_seen[f] % TSIM_RING_SLOTS;
            uint64_t t = r->slot[k].m.t_done;
            if (t > vt) {
                eng_violation(e, i, "reception FIFO %d: slot %u freed at %llu cycles, after "
                              "its clock %llu", f, k, (unsigned long long)t,
                              (unsigned long long)vt);
                return -1;
            }
            ev_push_key(e, t, eng_proc_key(i, 8 + f, q->rec_seen[f]), EV_REC_FREE, i, f,
                        q->rec_chunks[f][k]);
            got = 1;
        }
    }
    return got;
}

int eng_take_proc(tsim_engine *e, int proc)
{
    if (drain_proc(e, proc, &e->seg->procs[proc]) < 0) return -1;
    return tree_take_proc(e, proc) < 0 ? -1 : 0;
}

/* Collects what the processors in look_drain did, in processor order
 * (then their tree FIFOs, tree_drain: the processors in e->take), and
 * leaves out from then on those it found BLOCKED, EXITED, ABSENT or the
 * engine's: whatever they wrote was written before that state, and is
 * taken now. A running processor whose write count has not moved since
 * its writes were last taken has nothing new: its FIFOs are not read,
 * but for a round every FULL_LOOK_S of host time, which reads every one's:
 * a stray write into its own FIFOs' words (a tail moved back) counts
 * nothing, and a rank that then computes for ever is found and named all
 * the same (tests/bin/tp_corrupt.c). */
#define FULL_LOOK_S 0.05
static int drain(tsim_engine *e)
{
    int got = 0;
    int full = 0;
    double now = eng_mono_s();
    if (now >= e->full_look_at) {
        full = 1;
        e->full_look_at = now + FULL_LOOK_S;
    }
    for (int w = 0; w < e->look_words; w++) {
        uint64_t done = 0;
        e->take[w] = 0;
        for (uint64_t m = e->look_drain[w]; m; m &= m - 1) {
            int i = 64 * w + __builtin_ctzll(m);
            tsim_proc *p = &e->seg->procs[i];
            uint32_t st = atomic_load(&p->state); /* before anything it wrote is read */
            uint32_t wr = atomic_load_explicit(&p->writes, memory_order_acquire);
            if (st == TSIM_P_RUNNING && wr == e->ep[i].writes_seen && !full) continue;
            e->ep[i].writes_seen = wr; /* read before the writes it counts */
            if (st != TSIM_P_RUNNING && st <= TSIM_P_ENGINE) {
                done |= m & -m;
                e->look_st[i] = (uint8_t)st; /* the horizon looks for a change from here */
                /* the rounds go on looking at its node mate only while it
                 * is in the sets (FOR_LOOKED): a coprocessor it opened
                 * before it stopped running is looked at from here */
                int mate = i ^ 1;
                if (mate < e->nprocs && atomic_load(&e->seg->procs[mate].state) != e->look_st[mate])
                    look_set(e, mate);
            }
            if (st == TSIM_P_ABSENT || st == TSIM_P_ENGINE) continue;
            e->take[w] |= m & -m;
            int g = drain_proc(e, i, p);
            if (g < 0) return got;
            got |= g;
        }
        e->look_done[w] = done;
    }
    if (tree_drain(e)) got = 1;
    if (atomic_load(&e->violation_proc) >= 0) return got;
    for (int w = 0; w < e->look_words; w++) e->look_drain[w] &= ~e->look_done[w];
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
/* What one look at every present processor finds. */
typedef struct {
    int running, blocked;
    int idle; /* running, but needing no core now (see horizon) */
} scan_t;

/* The lowest clock of the running processors, and the scan's counts.
 *
 * Running processors that need no core now (`idle`): those that wait in a
 * sync (pl_sync) for a clock the engine has not reached, and those asleep
 * in the kernel, woken by the engine but not yet by the ranks' watcher,
 * which wakes them one at a time in clock order (tsim_watch.h). For the
 * engine's spin and the cores' plan (tsim_cores.c) they are not running
 * ranks. In VN mode a node mate's round trip leaves the two ranks running
 * in turn, one always syncing while the other computes; counted as
 * running, the engine slept through every hand-off and the ranks never
 * shared a core. Host time only: a rank that lies here costs only host
 * time. */
static void horizon_at(tsim_engine *e, scan_t *c, int i, uint64_t *h)
{
    tsim_proc *p = &e->seg->procs[i];
    uint32_t st = atomic_load(&p->state);
    /* the rounds look at every processor that runs, or that changed
     * state since the last look (such as one opened and blocked since) */
    if (st == TSIM_P_RUNNING || st != e->look_st[i]) {
        look_set(e, i);
        e->look_st[i] = (uint8_t)(st < 0xff ? st : 0xff);
    }
    if (st == TSIM_P_RUNNING) {
        uint64_t vt = atomic_load(&p->vt);
        if (vt < *h) *h = vt;
        c->running++;
        c->idle += atomic_load_explicit(&p->sync_target, memory_order_relaxed) > e->published ||
                   atomic_load_explicit(&p->asleep, memory_order_relaxed);
    } else if (st == TSIM_P_BLOCKED) {
        c->blocked++;
    } else if (st > TSIM_P_EXITED && (st != TSIM_P_ENGINE || !e->ep[i].engine_driven)) {
        eng_violation(e, i, "state word: %u is %s", st,
                      st == TSIM_P_ENGINE ? "the state of the engine's own traffic sources"
                                          : "not a processor state");
    }
}

/* BGLEMU_SCAN=check: no processor the horizon and the promises left out
 * runs, waits unsettled, or has anything to take. */
static void looked_check(tsim_engine *e)
{
    for (int w = 0; w < e->look_words; w++)
        for (uint64_t m = e->present[w] & ~looked_word(e, w); m; m &= m - 1) {
            int i = 64 * w + __builtin_ctzll(m);
            uint32_t st = atomic_load(&e->seg->procs[i].state);
            if (st == TSIM_P_RUNNING || (st == TSIM_P_BLOCKED && !e->ep[i].settled) || eng_would_take(e, i)) {
                fprintf(stderr, "bglemu: BGLEMU_SCAN=check: the horizon left out processor %d "
                        "(state %u), which %s\n", i, st, st == TSIM_P_RUNNING ? "runs" : "had something");
                abort();
            }
        }
}

/* `all`: every present processor, for counts of blocked ones too (a
 * deadlock); else those a round looks at (FOR_LOOKED), among which every
 * RUNNING one is. */
static uint64_t horizon(tsim_engine *e, scan_t *c, int all)
{
    uint64_t h = UINT64_MAX;
    *c = (scan_t){0};
    if (all) {
        FOR_PRESENT(e, i) horizon_at(e, c, i, &h);
    } else {
        FOR_LOOKED(e, i) horizon_at(e, c, i, &h);
        if (e->look_mode == 2) looked_check(e);
    }
    return h;
}

/* While the engine sleeps, nothing can move until a running processor's
 * clock passes the earliest queued event, or reaches a clock another
 * processor waits for the horizon to reach (pl_sync). */
static uint64_t sleep_until(tsim_engine *e)
{
    uint64_t t = evq_count(&e->q) ? evq_min_time(&e->q) : UINT64_MAX;
    FOR_LOOKED(e, i) { /* a sync is a RUNNING processor's */
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
    FOR_LOOKED(e, i) {
        tsim_proc *p = &e->seg->procs[i];
        uint64_t want = atomic_load(&p->sync_target);
        if (want && want <= h) {
            atomic_store(&p->sync_target, 0);
            atomic_fetch_add(&p->bell, 1);
            if (tsim_watch_wake(e->seg, i)) left_to_watcher(e, i);
        }
    }
}

/* What a round does first: drain, then wake_if_ready, over the processors
 * that may have changed. */
static int look(tsim_engine *e)
{
    if (e->look_mode == 1 || ++e->look_rounds % LOOK_ALL_EVERY == 0) look_all(e);
    int check = e->look_mode == 2;
    if (check) memcpy(e->look_snap, e->look_drain, (size_t)e->look_words * sizeof(uint64_t));
    int got = drain(e);
    if (check && atomic_load(&e->violation_proc) < 0) look_check(e, e->look_snap, 0);
    if (check) memcpy(e->look_snap, e->look_wake, (size_t)e->look_words * sizeof(uint64_t));
    wake_ready(e);
    if (check) look_check(e, e->look_snap, 1);
    return got;
}

/* The last look before the engine ends or reports a deadlock, at every
 * processor: drain, and if it took nothing, wake_if_ready (woke_min). 1 if
 * the engine has work after all: something drained, or the first step of
 * a loop adopted now (a processor that handed its loop over as it blocked,
 * after the round's own look) is queued. */
static int look_final(tsim_engine *e)
{
    look_all(e);
    if (drain(e)) return 1;
    wake_ready(e);
    return evq_count(&e->q) > 0;
}


/* Long runs say how far simulated time has got (stderr, host-timed). */
static void report_progress(tsim_engine *e)
{
    double t = eng_mono_s(), t0 = e->prog_t0;
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

/* Wakes left to the ranks' watcher (tsim_watch.h) that it may not have
 * made. `all`: every rank the engine woke that its own words still show
 * asleep, TSIM_WATCH_LATE_S after the first was left, and at the end.
 * Otherwise (before the engine sleeps) only those whose request the
 * watcher has not taken yet: a watcher that took one makes the call, and
 * a rank woken so but not yet run still shows asleep; calling it again
 * cost a tenth of the wakes a system call each. Those left out stay in
 * the engine's own list for the late look, which no shared word can
 * stop, and the engine sleeps at most 1 ms while any is there. */
static void serve_left(tsim_engine *e, int all)
{
    if (!e->left_at) return;
    uint64_t keep = 0;
    for (int w = 0; w < e->look_words; w++) {
        uint64_t rest = 0;
        for (uint64_t m = e->left_mask[w]; m; m &= m - 1) {
            int i = 64 * w + __builtin_ctzll(m);
            if (!tsim_watch_missed(e->seg, i)) continue;
            if (!all && !(atomic_load(&e->seg->wake_req[w]) & (m & -m))) {
                rest |= m & -m;
                continue;
            }
            /* a watcher that comes to its request later need not repeat the call */
            atomic_fetch_and(&e->seg->wake_req[w], ~(m & -m));
            tsim_futex_wake(&e->seg->procs[i].bell);
            e->left_late++;
        }
        e->left_mask[w] = rest;
        keep |= rest;
    }
    if (!keep) e->left_at = 0;
}

/* The watcher at work: its beat moved within TSIM_WATCH_LATE_S. The
 * wakes it has not made yet are then its own (it makes them in clock
 * order, one at a time), not the engine's. */
static int watcher_busy(tsim_engine *e, double now)
{
    uint32_t beat = atomic_load_explicit(&e->seg->watch_beat, memory_order_relaxed);
    if (beat != e->beat_seen) {
        e->beat_seen = beat;
        e->beat_at = now;
    }
    return atomic_load(&e->seg->watcher) && now - e->beat_at <= TSIM_WATCH_LATE_S;
}

static void serve_before_sleep(void *arg)
{
    tsim_engine *e = arg;
    if (e->left_at && !watcher_busy(e, eng_mono_s())) serve_left(e, 0);
}

/* The engine's wait for news, out of line: a profile then names the
 * engine's waiting apart from its work (make bench, section handoff). */
static __attribute__((noinline)) void engine_wait(tsim_engine *e, uint32_t bell, int spins)
{
    tsim_seg *s = e->seg;
    tsim_wait_change_then(&s->engine_bell, bell, e->left_at ? 1 : 100, spins, 0, &s->engine_idle,
                          serve_before_sleep, e);
}

static void serve_late_wakes(tsim_engine *e)
{
    if (!e->left_at) return;
    double now = eng_mono_s();
    if (now - e->left_at > TSIM_WATCH_LATE_S && !watcher_busy(e, now)) serve_left(e, 1);
}

/* Why the programs that name their reasons handed processors back, one
 * line each: "bglemu: ml-wait handed back 120: 80 new message, 40 ...". */
static void print_backs(const tsim_engine *e)
{
    for (uint32_t id = 1; id < TSIM_PROGS; id++) {
        const tsim_prog *pg = tsim_prog_find(id);
        uint64_t n = 0;
        for (int k = 0; k < TSIM_BACKS; k++) n += e->backs[id][k];
        if (!pg || !pg->backs || !n) continue;
        fprintf(stderr, "bglemu: %s handed processors back %llu times:", pg->name, (unsigned long long)n);
        for (int k = 0; k < TSIM_BACKS && pg->backs[k]; k++)
            fprintf(stderr, "%s %llu %s", k ? "," : "", (unsigned long long)e->backs[id][k], pg->backs[k]);
        fputc('\n', stderr);
    }
}

int tsim_engine_run(tsim_engine *e, tsim_result *res)
{
    tsim_seg *s = e->seg;
    double t0 = eng_mono_s();
    e->prog_t0 = t0;
    e->prog_next = t0 + s->progress_secs;
    for (int i = 0; i < e->nprocs; i++)
        e->ep[i].engine_driven = atomic_load(&s->procs[i].state) == TSIM_P_ENGINE;
    present_scan(e);
    start_sources(e);
    for (;;) {
        uint32_t bell = atomic_load(&s->engine_bell);
        if (atomic_load(&s->abort)) {
            e->aborted = 1;
            break;
        }
        serve_late_wakes(e);
        scan_t sc;
        uint64_t h = horizon(e, &sc, 0), h0 = h;
        int progress = look(e);
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
            /* nothing can move: finished, or every live processor waits
             * (then counted at every processor, the blocked ones too) */
            horizon(e, &sc, 0);
            if (!sc.running) horizon(e, &sc, 1);
            if (!sc.running && !look_final(e)) {
                if (e->woke_min == UINT64_MAX) {
                    /* the abort flag is read after the states: a job torn
                     * down (its ranks marked gone one by one) is not a
                     * deadlock */
                    if (atomic_load(&s->abort)) e->aborted = 1;
                    else if (sc.blocked) e->deadlock = 1;
                    break;
                }
            }
            if (sc.running) goto sleep;
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
            scan_t s2;
            uint64_t h2 = horizon(e, &s2, 0);
            int r2 = s2.running - s2.idle; /* the ranks that want a core */
            tsim_cores_note(e, r2);
            /* a wake the watcher has not passed on by then is the engine's */
            if (h2 == h0) engine_wait(e, bell, r2 <= e->ncpu ? tsim_engine_spins() : 0);
            tsim_cores_woke(e);
            atomic_store(&s->engine_wait, 0);
        }
    }
    serve_left(e, 1);
    if (e->deadlock) {
        report_snapshot_deadlock(e);
        atomic_store(&s->deadlock, 1);
        abort_all(e);
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
    memcpy(r.backs, e->backs, sizeof r.backs);
    if (getenv("BGLEMU_PROXY_STATS")) {
        fprintf(stderr, "bglemu: engine read %llu and sent %llu packets for blocked processors; "
                "%llu wakes; %llu wake calls left to the ranks' watcher, %llu of them made by the "
                "engine after all\n", (unsigned long long)r.proxy_read, (unsigned long long)r.proxy_sent,
                (unsigned long long)r.wakes, (unsigned long long)e->left, (unsigned long long)e->left_late);
        uint64_t syncs = 0, spared = 0; /* the processors' own counts: statistics only */
        for (int i = 0; i < e->nprocs; i++) {
            syncs += atomic_load_explicit(&s->procs[i].syncs, memory_order_relaxed);
            spared += atomic_load_explicit(&s->procs[i].syncs_spared, memory_order_relaxed);
        }
        fprintf(stderr, "bglemu: the processors synced %llu times with the engine; its promises spared "
                "%llu more\n", (unsigned long long)syncs, (unsigned long long)spared);
        print_backs(e);
    }
    r.wall_seconds = eng_mono_s() - t0;
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
    e->look_words = (e->nprocs + 63) / 64;
    e->look_drain = calloc((size_t)e->look_words * 7, sizeof(uint64_t));
    e->look_st = malloc((size_t)e->nprocs);
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
    const char *sc = getenv("BGLEMU_SCAN");
    e->look_mode = !sc ? 0 : !strcmp(sc, "all") ? 1 : !strcmp(sc, "check") ? 2 : 0;
    if (e->look_drain) {
        e->look_wake = e->look_drain + e->look_words;
        e->look_done = e->look_wake + e->look_words;
        e->look_snap = e->look_done + e->look_words;
        e->take = e->look_snap + e->look_words;
        e->left_mask = e->take + e->look_words;
        e->present = e->left_mask + e->look_words;
        look_all(e); /* everyone, until looked at */
    }
    if (e->look_st) memset(e->look_st, 0xff, (size_t)e->nprocs); /* no state yet */
    for (int i = 0; e->ep && i < e->nprocs; i++) e->ep[i].writes_seen = UINT32_MAX; /* each drained once */
    if (!e->rt || !e->ep || !e->look_drain || !e->look_st || evq_init(&e->q) != 0 ||
        tree_new(e) != 0 || tsim_matrix_new(e) != 0) {
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
    free(e->look_drain);
    free(e->look_st);
    evq_free(&e->q);
    free(e->route);
    free(e->pool);
    free(e->deadlock_report);
    tsim_matrix_free(e);
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
