/* The ranks' core watched by one of its waiting ranks (TSIM_WAIT_WATCH).
 * The design, its measurements and why it pays are in
 * docs/simulated-time.md, "Costs on the host" (**Cores**).
 *
 * In short: one waiting rank takes the `watcher` word and keeps the
 * ranks' core by taking turns instead of sleeping; the engine, waking a
 * rank that sleeps while a watcher is there, bumps its bell and sets its
 * bit in `wake_req` instead of making the system call, and the watcher
 * wakes the rung rank with the lowest clock from the ranks' own core and
 * passes it the watch.
 *
 * No wake is lost: the engine sets the bit, then looks at `watcher`; a
 * leaving watcher clears `watcher`, then takes the bits (both sides store,
 * then load), so one of them sees the other and makes the call. None of
 * this page is trusted (any rank can write it): the bell is the wake, and
 * the engine keeps its own list of the wakes it left and makes the call
 * for each one still asleep by the rank's own words once the watcher's
 * `watch_beat` stood still for TSIM_WATCH_LATE_S (tsim_watch_missed;
 * tsim_engine.c, serve_left). A false watcher costs host time, never a
 * simulated result (tests/bin/tp_corrupt.c, `watcher`). */
#ifndef TSIM_WATCH_H
#define TSIM_WATCH_H

#include "tsim.h"
#include "tsim_futex.h"

/* How long a watcher takes turns before it sleeps. Longer than a pair of
 * ranks' turns (TSIM_TURNS_NS): the engine, moving data for many waiting
 * ranks, often answers after more than 100 us, and each answer that
 * finds the ranks' core halted is a wake system call that interrupts it. */
#define TSIM_WATCH_NS 1000000L

/* How long a wake left to the watcher may wait before the engine makes
 * the call itself: a watcher that yields to a running rank sees the
 * request at its next turn, within microseconds when that rank blocks. */
#define TSIM_WATCH_LATE_S 200e-6

/* Word w of wake_req as read, less a stray bit past the last processor. */
static inline uint64_t tsim_watch_bits(uint64_t m, int w, int nprocs)
{
    return nprocs - 64 * w < 64 ? m & ((1ull << (nprocs - 64 * w)) - 1) : m;
}

/* Wakes every sleeper whose bit is set (the watcher's side): how many. */
static inline int tsim_watch_serve(tsim_seg *s)
{
    if (!atomic_exchange(&s->wake_any, 0)) return 0;
    int nprocs = s->geom.nnodes * TSIM_CPUS, n = 0;
    for (int w = 0; 64 * w < nprocs; w++) {
        uint64_t m = atomic_load_explicit(&s->wake_req[w], memory_order_relaxed)
                         ? tsim_watch_bits(atomic_exchange(&s->wake_req[w], 0), w, nprocs)
                         : 0;
        for (; m; m &= m - 1, n++) tsim_futex_wake(&s->procs[64 * w + __builtin_ctzll(m)].bell);
    }
    return n;
}

/* The rung sleeper with the lowest clock below `below` (the watcher's
 * side), its request taken: its index, or -1. */
static inline int tsim_watch_pick(tsim_seg *s, uint64_t below)
{
    if (!atomic_load_explicit(&s->wake_any, memory_order_acquire)) return -1;
    int nprocs = s->geom.nnodes * TSIM_CPUS, best = -1;
    uint64_t best_vt = below;
    for (int w = 0; 64 * w < nprocs; w++) {
        uint64_t m = tsim_watch_bits(atomic_load_explicit(&s->wake_req[w], memory_order_relaxed), w, nprocs);
        for (; m; m &= m - 1) {
            int i = 64 * w + __builtin_ctzll(m);
            uint64_t vt = atomic_load_explicit(&s->procs[i].vt, memory_order_relaxed);
            if (vt < best_vt) best_vt = vt, best = i;
        }
    }
    if (best < 0) return -1;
    uint64_t bit = 1ull << (best % 64);
    /* the engine's late call may have taken it meanwhile */
    return atomic_fetch_and(&s->wake_req[best / 64], ~bit) & bit ? best : -1;
}

/* The watcher hands the core and the watch to processor `to`. */
static inline void tsim_watch_pass(tsim_seg *s, int to)
{
    atomic_store(&s->watcher, (uint32_t)to + 1);
    tsim_futex_wake(&s->procs[to].bell);
}

/* The watcher's beat: its host clock in units of 65.5 us, stored only when
 * it moves. The engine reads the word from its own core, so a store at
 * every turn moved the cache line to and fro (in NPB LU a quarter of the
 * watcher's own time); 200 us tell a watcher at work from one gone. */
static inline void tsim_watch_beat(tsim_seg *s, const struct timespec *t)
{
    uint32_t v = (uint32_t)(((uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec) >> 16);
    if (atomic_load_explicit(&s->watch_beat, memory_order_relaxed) != v)
        atomic_store_explicit(&s->watch_beat, v, memory_order_relaxed);
}

/* The engine rang processor i's bell: wakes it if it sleeps, through the
 * watcher when the ranks may have one (TSIM_WAIT_WATCH, the engine's word)
 * and there is one. 1 if the wake was left to the watcher: the engine
 * then checks with tsim_watch_missed that it came. */
static inline int tsim_watch_wake(tsim_seg *s, int i)
{
    tsim_proc *p = &s->procs[i];
    if (!atomic_load(&p->asleep)) return 0; /* it spins, or sees the bell before it sleeps */
    if (atomic_load(&s->ranks_wait) == TSIM_WAIT_WATCH) {
        uint32_t none = 0;
        if (atomic_load(&s->watcher)) {
            uint64_t bit = 1ull << (i % 64);
            atomic_fetch_or(&s->wake_req[i / 64], bit);
            atomic_store(&s->wake_any, 1);
            if (atomic_load(&s->watcher)) return 1;
            atomic_fetch_and(&s->wake_req[i / 64], ~bit); /* it left meanwhile */
        } else {
            /* nobody watches: the rank woken now does, so that the wakes
             * after it wait for its turn and go in clock order */
            atomic_compare_exchange_strong(&s->watcher, &none, (uint32_t)i + 1);
        }
    }
    tsim_futex_wake(&p->bell);
    return 0;
}

/* Is processor i, woken or answered by the engine (RUNNING, no sync
 * pending), still asleep in the kernel? Read from its own words only,
 * which no other rank can write: whatever the shared words say, a wake
 * the watcher has not made is found here. */
static inline int tsim_watch_missed(const tsim_seg *s, int i)
{
    const tsim_proc *p = &s->procs[i];
    return atomic_load(&p->asleep) && atomic_load(&p->state) == TSIM_P_RUNNING &&
           !atomic_load(&p->sync_target);
}

/* Processor self gives up the watch if it has it (it leaves the ranks'
 * core, or waits in another way): no wake is left to it after this. */
static inline void tsim_watch_leave(tsim_seg *s, int self)
{
    uint32_t me = (uint32_t)self + 1;
    if (atomic_load_explicit(&s->watcher, memory_order_relaxed) != me ||
        !atomic_compare_exchange_strong(&s->watcher, &me, 0))
        return;
    tsim_watch_serve(s);
}

/* Processor self waits for its bell to leave b: as the core's watcher if
 * nobody is (or it still is), for up to TSIM_WATCH_NS. 1 if the bell rang
 * meanwhile, 0 if the caller is to sleep. A watcher whose own bell rang
 * keeps the watch while it runs: the engine's wakes meanwhile wait for its
 * next wait, and the core goes from it to the rank woken in one switch,
 * without a system call from the engine's core or a woken rank preempting
 * it. It holds them up only while it runs, at most TSIM_WATCH_LATE_S
 * before the engine makes them itself. It hands the core to a rung
 * sleeper whose clock is below `below` (its own, when it waits for a
 * sync; UINT64_MAX when it blocks), the lowest first, and then sleeps;
 * at the end of its turns, to the lowest of any. */
static inline int tsim_watch(tsim_seg *s, int self, _Atomic uint32_t *bell, uint32_t b, uint64_t below)
{
    uint32_t none = 0, me = (uint32_t)self + 1;
    if (atomic_load(&s->watcher) != me && !atomic_compare_exchange_strong(&s->watcher, &none, me)) return 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tsim_watch_beat(s, &t0);
    for (;;) {
        if (atomic_load_explicit(bell, memory_order_acquire) != b) return 1;
        int to = tsim_watch_pick(s, below);
        if (to >= 0) {
            tsim_watch_pass(s, to);
            return 0;
        }
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        tsim_watch_beat(s, &t);
        if (tsim_ns_since(&t0, &t) > TSIM_WATCH_NS) break;
    }
    int to = tsim_watch_pick(s, UINT64_MAX);
    if (to >= 0) tsim_watch_pass(s, to);
    else tsim_watch_leave(s, self);
    return 0;
}

#endif
