/* Packet layer: one processor's view of its FIFOs, in simulated time. */
#include "pl.h"
#include "pl_internal.h"
#include "pl_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../torus-sim/tsim_watch.h"

#define WAIT_MS 200 /* re-check the abort flag this often while sleeping */

/* News for the engine at time t (a packet injected, a slot freed; UINT64_MAX
 * for none, only a clock that moved), after the clock was published. The
 * engine processes events earlier than every running processor's clock, so
 * while it sleeps it can do nothing until this clock passes both its own
 * earliest event (engine_wait) and the news it has not seen: a kick before
 * that only costs it two context switches (in a ping-pong, as many as the
 * rest of the round trip). The news is kept until a kick carries it; block,
 * sync and exit always kick. Host time only: the engine's order of events,
 * and so every simulated result, is the same whenever it runs. */
void pl_kick_lazy(pl_proc *pp, uint64_t t)
{
    if (t < pp->unseen) pp->unseen = t;
    uint64_t need = atomic_load(&pp->seg->engine_wait);
    if (pp->unseen < need) need = pp->unseen;
    if (pp->vt <= need) return;
    pp->unseen = UINT64_MAX;
    tsim_kick(pp->seg);
}

static void kick(pl_proc *pp)
{
    pp->unseen = UINT64_MAX;
    tsim_kick(pp->seg);
}

void pl_publish(pl_proc *pp)
{
    if (atomic_load_explicit(&pp->p->vt, memory_order_relaxed) != pp->vt) {
        atomic_store(&pp->p->vt, pp->vt);
        pl_kick_lazy(pp, UINT64_MAX);
    }
}

/* BGLEMU_QUIET=check: each answer a promise gave is held against the one a
 * sync gives, and a difference ends the run (abort) with both. Host time
 * only: the sync charges nothing, so a run that passes has every simulated
 * result of one without the check. The process's environment, as read by
 * its last pl_open. */
static _Atomic int check_promises;

int pl_open(pl_proc *pp, tsim_seg *seg, int index, uint64_t vt)
{
    const char *q = getenv("BGLEMU_QUIET");
    atomic_store_explicit(&check_promises, q && strcmp(q, "check") == 0, memory_order_relaxed);
    if (index < 0 || index >= seg->geom.nnodes * TSIM_CPUS) return -1;
    memset(pp, 0, sizeof *pp);
    pp->seg = seg;
    pp->p = &seg->procs[index];
    pp->index = index;
    pp->node = index / TSIM_CPUS;
    pp->cpu = index % TSIM_CPUS;
    tsim_coords(&seg->geom, pp->node, pp->coord);
    pp->vt = vt;
    pp->unseen = UINT64_MAX;
    pp->qinj_t = UINT64_MAX;
    atomic_store(&pp->p->vt, vt);
    pl_trace_attach(pp); /* before the pid: mpirun removes the trace's name once every rank has one */
    pp->p->pid = (int32_t)getpid();
    atomic_store(&pp->p->state, TSIM_P_RUNNING);
    tsim_kick(seg);
    return 0;
}

void pl_close(pl_proc *pp, int exit_code)
{
    tsim_watch_leave(pp->seg, pp->index);
    pl_publish(pp);
    pp->p->exit_code = exit_code;
    atomic_store(&pp->p->state, TSIM_P_EXITED);
    kick(pp);
}

int pl_aborting(const pl_proc *pp)
{
    return atomic_load_explicit(&pp->seg->abort, memory_order_relaxed) != 0;
}

void pl_header(const pl_proc *pp, tsim_hwhdr *hw, int dst_index, size_t payload, unsigned flags)
{
    int c[3];
    tsim_coords(&pp->seg->geom, dst_index / TSIM_CPUS, c);
    memset(hw, 0, sizeof *hw);
    hw->dst[0] = (uint8_t)c[0];
    hw->dst[1] = (uint8_t)c[1];
    hw->dst[2] = (uint8_t)c[2];
    size_t chunks = (TSIM_HDR_BYTES + payload + TSIM_CHUNK - 1) / TSIM_CHUNK;
    hw->chunks = (uint8_t)(chunks ? chunks : 1);
    hw->flags = (uint8_t)flags;
    hw->group = (uint8_t)(dst_index % TSIM_CPUS);
}

unsigned pl_inj_room(const pl_proc *pp, int f) { return tsim_ring_room(&pp->p->inj[f]); }

/* Waits for the engine: pauses, or on a core the ranks share, turns that
 * yield it (tsim_futex.h) or watching it for the others (tsim_watch.h),
 * then sleeps. `below`: a sync's clock (the watcher hands the core only
 * to a rank behind it), UINT64_MAX for a block. */
static void wait_bell(const pl_proc *pp, uint32_t b, uint64_t below)
{
    tsim_proc *p = pp->p;
    int how = (int)atomic_load_explicit(&pp->seg->ranks_wait, memory_order_relaxed);
    if (how != TSIM_WAIT_WATCH) tsim_watch_leave(pp->seg, pp->index);
    switch (how) {
    case TSIM_WAIT_TURNS: tsim_wait_change(&p->bell, b, WAIT_MS, tsim_spins_one_core(), 1, &p->asleep); break;
    case TSIM_WAIT_WATCH:
        if (!tsim_watch(pp->seg, pp->index, &p->bell, b, below))
            tsim_wait_change(&p->bell, b, WAIT_MS, 0, 0, &p->asleep);
        break;
    default: tsim_wait_change(&p->bell, b, WAIT_MS, tsim_spins(), 0, &p->asleep);
    }
}

int pl_sync(pl_proc *pp)
{
    tsim_seg *s = pp->seg;
    pl_publish(pp);
    if (atomic_load(&s->done) >= pp->vt) return 0;
    atomic_store_explicit(&pp->p->syncs, ++pp->syncs, memory_order_relaxed);
    atomic_store(&pp->p->sync_target, pp->vt);
    kick(pp);
    for (;;) {
        uint32_t b = atomic_load(&pp->p->bell);
        if (atomic_load(&s->done) >= pp->vt) break;
        if (pl_aborting(pp)) return -1;
        wait_bell(pp, b, pp->vt);
    }
    atomic_store(&pp->p->sync_target, 0);
    return 0;
}

/* Has the engine promised that nothing reaches this processor before vt
 * (torus-sim/tsim_quiet.c)? Then what its FIFOs show is final, as after a
 * sync, without the round trip to the engine. The promise counts this
 * processor's injections up to the one it names. Before `quiet` nothing
 * else happens in the machine, so a later injection at t can bring a
 * packet here only through another node and back: two link crossings of at
 * least a hop latency each, the last one delivering no earlier than its
 * tail, a chunk's serialization after its head (unless it went to this
 * node: then only a sync answers). Polls keep the promise that far.
 * Injection room is another matter (a FIFO frees as its packet leaves, one
 * serialization later): after an uncounted injection only a sync answers. */
static int quiet_to_vt(pl_proc *pp, int for_poll)
{
    tsim_proc *p = pp->p;
    uint32_t seq = atomic_load_explicit(&p->quiet_seq, memory_order_acquire);
    if (seq & 1) return 0;
    uint64_t q = atomic_load_explicit(&p->quiet, memory_order_relaxed);
    uint32_t inj = atomic_load_explicit(&p->quiet_inj, memory_order_relaxed);
    uint32_t sib_absent = atomic_load_explicit(&p->quiet_sib_absent, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&p->quiet_seq, memory_order_relaxed) != seq || pp->vt > q) return 0;
    /* a coprocessor opened since starts at our clock, before the promise */
    if (sib_absent && atomic_load(&pp->seg->procs[pp->index ^ 1].state) != TSIM_P_ABSENT) return 0;
    /* the engine counts the same: torus and tree injections, barriers armed */
    uint32_t mine = atomic_load_explicit(&p->tinj.head, memory_order_relaxed) +
                    atomic_load_explicit(&p->gi_arm, memory_order_relaxed);
    for (int f = 0; f < TSIM_NINJ; f++)
        mine += atomic_load_explicit(&p->inj[f].head, memory_order_relaxed);
    if (mine == inj) { /* the promise counted every injection so far */
        pp->qinj_t = UINT64_MAX;
        pp->qvoid = 0;
        return 1;
    }
    if (!for_poll || pp->qvoid) return 0;
    const tsim_params *prm = &pp->seg->params;
    uint64_t reach = 2 * (uint64_t)prm->hop_latency + tsim_ser_cycles(prm, 1);
    return pp->vt <= pp->qinj_t + reach;
}

/* A sync a promise spared, counted where the engine prints it. */
static void spared(pl_proc *pp)
{
    atomic_store_explicit(&pp->p->syncs_spared, ++pp->syncs_spared, memory_order_relaxed);
}

static int checking_promises(void) { return atomic_load_explicit(&check_promises, memory_order_relaxed); }

static _Noreturn void promise_broken(const pl_proc *pp, const char *what, long kept, long synced)
{
    fprintf(stderr, "bglemu: BGLEMU_QUIET=check: processor %d at %llu cycles: the engine's promise "
            "answered %s %ld, a sync answers %ld\n", pp->index, (unsigned long long)pp->vt, what, kept,
            synced);
    abort();
}

/* Room for `chunks` in injection FIFO f at vt. A full answer is only
 * trusted once the engine has caught up with vt. */
int pl_inj_has_room(pl_proc *pp, int f, unsigned chunks)
{
    if (pl_inj_room(pp, f) >= chunks) return 1;
    if (atomic_load(&pp->seg->done) < pp->vt) {
        if (!quiet_to_vt(pp, 0)) {
            pl_sync(pp);
        } else {
            spared(pp);
            unsigned kept = pl_inj_room(pp, f), synced;
            if (kept < chunks && checking_promises() && pl_sync(pp) == 0 && (synced = pl_inj_room(pp, f)) >= chunks)
                promise_broken(pp, "injection FIFO room (chunks)", (long)kept, (long)synced);
        }
    }
    if (pl_inj_room(pp, f) >= chunks) return 1;
    /* full: unless its words were damaged, and it would wait for room the
     * engine never sees missing */
    const tsim_ring *r = &pp->p->inj[f];
    uint32_t cap = r->cap, used = atomic_load(&r->used);
    if (cap != pp->seg->params.fifo_chunks)
        pl_damaged(pp, "injection FIFO %d: capacity word %u, but the FIFO holds %u chunks", f, cap,
                   (unsigned)pp->seg->params.fifo_chunks);
    if (used > cap)
        pl_damaged(pp, "injection FIFO %d: %u chunks in use, more than the %u it holds", f, used, cap);
    return 0;
}

int pl_inject(pl_proc *pp, int fifo, const tsim_hwhdr *hw, const void *sw8, const void *payload,
              size_t len)
{
    tsim_ring *r = &pp->p->inj[fifo];
    if (!pl_inj_has_room(pp, fifo, hw->chunks)) return -1;
    size_t max = (size_t)hw->chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
    if (len > max) len = max;
    pp->vt += pp->seg->params.pkt_write_cycles;
    atomic_store(&pp->p->vt, pp->vt); /* published before the packet is visible */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    tsim_slot *s = &r->slot[h % TSIM_RING_SLOTS];
    s->m.t_inject = pp->vt;
    s->m.src = (uint32_t)pp->index;
    s->p.hw = *hw;
    if (sw8) memcpy(s->p.sw, sw8, sizeof s->p.sw);
    else memset(s->p.sw, 0, sizeof s->p.sw);
    if (len) memcpy(s->p.payload, payload, len);
    atomic_fetch_add(&r->used, hw->chunks);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    pl_wrote(pp);
    if (pp->vt < pp->qinj_t) pp->qinj_t = pp->vt;
    if (fifo == TSIM_INJ_SP || tsim_node_of(&pp->seg->geom, hw->dst[0], hw->dst[1], hw->dst[2]) == pp->node)
        pp->qvoid = 1;
    tsim_count_add(&pp->p->pkts_injected, 1);
    tsim_count_add(&pp->p->bytes_injected, (uint64_t)hw->chunks * TSIM_CHUNK);
    pl_kick_lazy(pp, pp->vt);
    return 0;
}

static int block_on(pl_proc *pp, unsigned mask, unsigned need, const char *why)
{
    tsim_proc *p = pp->p;
    if (pl_aborting(pp)) return -1;
    if (why) snprintf(p->waiting_on, sizeof p->waiting_on, "%s", why);
    uint64_t t0 = pp->vt;
    atomic_store(&p->vt, pp->vt);
    atomic_store(&p->inj_need, need);
    atomic_store(&p->wake_mask, mask);
    uint32_t b = atomic_load(&p->bell);
    atomic_store(&p->state, TSIM_P_BLOCKED);
    kick(pp);
    while (atomic_load(&p->state) == TSIM_P_BLOCKED) {
        if (pl_aborting(pp)) return -1;
        wait_bell(pp, b, UINT64_MAX);
        b = atomic_load(&p->bell);
    }
    if (pl_tracing()) {
        /* the wait as the loop's own driver would show it: a loop the
         * engine ran waited from where it first blocked there (or not at
         * all); one it refused at its start did not wait */
        const tsim_handoff *h = &p->handoff;
        uint64_t t1 = atomic_load(&p->vt);
        if (h->prog && h->back) t0 = h->blocked_at;
        else if (h->prog && h->start && t1 == t0) t0 = UINT64_MAX;
        if (t0 <= t1) pl_trace_put(pp, PLT_BLOCK, !(mask & 0xffu), t0, t1, -1, 0, 0, 0);
    }
    pp->vt = atomic_load(&p->vt);
    p->waiting_on[0] = 0;
    return 0;
}

int pl_block(pl_proc *pp, unsigned mask, const char *why)
{
    return block_on(pp, mask & ~0xff00u, 0, why);
}

int pl_block_need(pl_proc *pp, unsigned mask, unsigned need, const char *why)
{
    return block_on(pp, mask, need, why);
}

void pl_inject_wait(pl_proc *pp, int fifo, const tsim_hwhdr *hw, const void *sw8,
                    const void *payload, size_t len)
{
    while (pl_inject(pp, fifo, hw, sw8, payload, len) != 0)
        if (block_on(pp, TSIM_WAKE_INJ(fifo), hw->chunks, "room in an injection FIFO") != 0)
            return;
}

/* A reception FIFO the engine could not have left so: a cursor past what
 * it delivered, a head it never wrote. The message layer would spin on
 * it, or read garbage as packets. */
static void rec_check(pl_proc *pp, int f, uint32_t tl, uint32_t h)
{
    uint32_t d = atomic_load_explicit(&pp->p->eng.rec_head[f], memory_order_relaxed);
    if ((int32_t)(h - d) > 0)
        pl_damaged(pp, "reception FIFO %d: head %u, but the engine delivered %u packets (slot %u "
                   "holds a packet it never delivered)", f, h, d, d % TSIM_RING_SLOTS);
    if ((int32_t)(tl - d) > 0) /* as the engine says it (drain) */
        pl_damaged(pp, "reception FIFO %d: tail %u is %u slots past the head (%u packets "
                   "delivered)", f, tl, tl - d, d);
    if (d - tl > TSIM_RING_SLOTS)
        pl_damaged(pp, "reception FIFO %d: tail %u is %u slots behind the %u packets delivered "
                   "(a ring holds %d)", f, tl, d - tl, d, TSIM_RING_SLOTS);
}

/* The packet about to be read is the one the engine delivered (its
 * headers and source): what software then cannot take was sent so. */
static int intact(pl_proc *pp, int f)
{
    const tsim_ring *r = &pp->p->rec[f];
    uint32_t k = atomic_load_explicit(&r->tail, memory_order_relaxed) % TSIM_RING_SLOTS;
    uint32_t sum = pp->p->eng.rec_sum[f][k];
    if (tsim_slot_sum(&r->slot[k]) != sum)
        pl_damaged(pp, "reception FIFO %d: the packet at slot %u is not the one the engine "
                   "delivered (its headers changed)", f, k);
    return f;
}

/* The reception FIFO in mask whose oldest packet arrived first (lowest
 * FIFO on a tie), its arrival in *best_t; -1 if none holds one. */
static int earliest(pl_proc *pp, unsigned mask, uint64_t *best_t)
{
    int best = -1;
    *best_t = UINT64_MAX;
    for (int f = 0; f < TSIM_NREC; f++) {
        if (!(mask & TSIM_WAKE_REC(f))) continue;
        tsim_ring *r = &pp->p->rec[f];
        uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        if (h == tl) continue;
        if (h - tl > TSIM_RING_SLOTS ||
            h != atomic_load_explicit(&pp->p->eng.rec_head[f], memory_order_relaxed))
            rec_check(pp, f, tl, h);
        uint64_t a = r->slot[tl % TSIM_RING_SLOTS].m.t_arrive;
        if (a < *best_t) *best_t = a, best = f;
    }
    return best;
}

/* The FIFO a poll at vt takes given earliest()'s answer, or -1. */
static int taken_at(const pl_proc *pp, int best, uint64_t best_t)
{
    return best >= 0 && best_t < pp->vt ? best : -1;
}

/* pl_poll, which syncs when it must; with may_sync 0 it returns
 * PL_POLL_SYNC there instead, nothing charged.
 *
 * The engine's word is read before the FIFOs. done, and a promise, vouch
 * for the deliveries the engine made before it published them: a scan
 * that follows the read sees every one of those (the ring's head is
 * stored before either is published). A scan that came first could miss a
 * packet delivered between the two reads, which a promise published after
 * that delivery would then pass as final: an empty poll, or the later of
 * two packets, where a sync would have given the packet. */
static int poll_rec(pl_proc *pp, unsigned mask, int may_sync)
{
    tsim_seg *s = pp->seg;
    for (int attempt = 0;; attempt++) {
        uint64_t done = atomic_load(&s->done);
        int promised = done < pp->vt && attempt == 0 && quiet_to_vt(pp, 1);
        uint64_t best_t;
        int best = earliest(pp, mask, &best_t);
        /* Every delivery earlier than done is visible, so an earliest
         * candidate below done (and below vt) is final. */
        if (best >= 0 && best_t < pp->vt && best_t < done) return intact(pp, best);
        if (promised) spared(pp);
        if (promised && checking_promises() && pl_sync(pp) == 0) {
            uint64_t t2;
            int f2 = earliest(pp, mask, &t2);
            int kept = taken_at(pp, best, best_t), synced = taken_at(pp, f2, t2);
            if (synced != kept || (kept >= 0 && t2 != best_t))
                promise_broken(pp, "a poll with reception FIFO (-1: none)", kept, synced);
        }
        if (done >= pp->vt || attempt > 0 || promised) {
            if (taken_at(pp, best, best_t) >= 0) return intact(pp, best);
            /* a packet delivered to a running processor arrives before its
             * clock (the horizon never passes it), to a blocked one before
             * the time it is woken at: one "arriving" after everything
             * already simulated was written by no engine */
            if (best >= 0 && done >= pp->vt && best_t >= done)
                pl_damaged(pp, "reception FIFO %d: packet at slot %u arrives at %llu cycles, "
                           "after the %llu already simulated", best,
                           atomic_load(&pp->p->rec[best].tail) % TSIM_RING_SLOTS,
                           (unsigned long long)best_t, (unsigned long long)done);
            pp->vt += s->params.poll_cycles;
            return -1;
        }
        if (!may_sync) return PL_POLL_SYNC;
        if (pl_sync(pp) != 0) return -1;
    }
}

int pl_poll(pl_proc *pp, unsigned mask) { return poll_rec(pp, mask, 1); }

int pl_poll_nosync(pl_proc *pp, unsigned mask) { return poll_rec(pp, mask, 0); }

const tsim_slot *pl_peek(const pl_proc *pp, int f)
{
    const tsim_ring *r = &pp->p->rec[f];
    return &r->slot[atomic_load_explicit(&r->tail, memory_order_relaxed) % TSIM_RING_SLOTS];
}

void pl_read(const pl_proc *pp, int f, size_t offset, void *dst, size_t len)
{
    memcpy(dst, pl_peek(pp, f)->p.payload + offset, len);
}

void pl_consume(pl_proc *pp, int f)
{
    tsim_ring *r = &pp->p->rec[f];
    uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    tsim_slot *s = &r->slot[tl % TSIM_RING_SLOTS];
    pp->vt += pp->seg->params.pkt_read_cycles;
    atomic_store(&pp->p->vt, pp->vt);
    s->m.t_done = pp->vt;
    /* a freed slot is news only to a packet waiting for room. The ring's
     * fill level is a hint, not proof (packets on their way hold room in
     * the engine before they land): when it misses, the engine hears of the
     * slot at this rank's next sync or block, never with another result */
    uint32_t before = atomic_fetch_sub(&r->used, s->p.hw.chunks);
    atomic_store_explicit(&r->tail, tl + 1, memory_order_release);
    pl_wrote(pp);
    pl_kick_lazy(pp, before + TSIM_MAX_CHUNKS > r->cap ? pp->vt : UINT64_MAX);
}
