/* Process-shared futex waits on words in the machine segment. */
#ifndef TSIM_FUTEX_H
#define TSIM_FUTEX_H

#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *w == expect (or until timeout_ms > 0 elapses). */
static inline void tsim_futex_wait(_Atomic uint32_t *w, uint32_t expect, int timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, expect, timeout_ms > 0 ? &ts : NULL, NULL, 0);
}

#include <stdlib.h>

/* A spin count from the environment variable `name`, read once into
 * *cache: `dflt` pauses on multi-core hosts, 0 on one core (nobody could
 * answer while we spin). Racing first calls compute the same value. */
static inline int tsim_spin_setting(_Atomic int *cache, const char *name, int dflt)
{
    int s = atomic_load_explicit(cache, memory_order_relaxed);
    if (s < 0) {
        const char *v = getenv(name);
        s = v ? atoi(v) : (sysconf(_SC_NPROCESSORS_ONLN) > 1 ? dflt : 0);
        if (s < 0) s = 0;
        atomic_store_explicit(cache, s, memory_order_relaxed);
    }
    return s;
}

/* A rank's spin before it sleeps: BGLEMU_SPIN, default 300 pauses. */
static inline int tsim_spins(void)
{
    static _Atomic int spins = -1;
    return tsim_spin_setting(&spins, "BGLEMU_SPIN", 300);
}

/* A rank's turns while the ranks share one core (tsim_cores.c), each one
 * handing the core to any other runnable rank (sched_yield): BGLEMU_SPIN,
 * default 200, and no more than 100 us (where others are runnable a turn
 * lasts their slice). Only in jobs of two rank processes. A pausing spin
 * would hold the core the next rank to wake needs; sleeping at once makes
 * every hand-off wake a halted core (measured in docs/simulated-time.md,
 * "Costs on the host", **Cores**). */
#define TSIM_TURNS_NS 100000L /* the turns' limit in wall time */

/* Nanoseconds from t0 to t (CLOCK_MONOTONIC): the turns' limits. */
static inline long tsim_ns_since(const struct timespec *t0, const struct timespec *t)
{
    return (t->tv_sec - t0->tv_sec) * 1000000000L + (t->tv_nsec - t0->tv_nsec);
}
static inline int tsim_spins_one_core(void)
{
    static _Atomic int spins = -1;
    return tsim_spin_setting(&spins, "BGLEMU_SPIN", 200);
}

/* The engine's spin before it sleeps: BGLEMU_ENGINE_SPIN, default 20000
 * pauses (about 1 ms on the hosts of docs/simulated-time.md). Only taken
 * while a core is left for it (tsim_engine.c), so it costs no rank a
 * core; with more running ranks than spare cores it would take one. A
 * rank that runs alone answers within microseconds (it blocks or syncs),
 * but 64 ranks sharing one core answer in hundreds: the engine's sleeps
 * in a multi-partition exchange last 0.26 ms at the median, and each one
 * it sleeps through costs the ranks' busy core a wake system call that
 * interrupts the engine's halted one. */
static inline int tsim_engine_spins(void)
{
    static _Atomic int spins = -1;
    return tsim_spin_setting(&spins, "BGLEMU_ENGINE_SPIN", 20000);
}

/* Spins briefly (the waker is often just about to answer on the other
 * core; with `yield`, giving the core to whoever else is runnable at each
 * turn instead of pausing), then sleeps, with *asleep set to 1 only while in the kernel: a
 * waker bumps *w, then looks at *asleep, and makes the wake system call
 * only if it is set — not while this side still spins (in a ping-pong the
 * engine spins through every rank's blocking kick, and a spinning rank
 * needs no wake either). We set *asleep, then look at *w once more (both
 * sides store, then load). Host-time tuning only: simulated time is
 * unaffected. */
static inline void tsim_wait_change_then(_Atomic uint32_t *w, uint32_t expect, int timeout_ms,
                                         int spins, int yield, _Atomic uint32_t *asleep,
                                         void (*before_sleep)(void *), void *arg)
{
    struct timespec t0 = {0, 0}, t;
    if (yield && spins) clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < spins; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) != expect) return;
        if (!yield) {
            __builtin_ia32_pause();
            continue;
        }
        sched_yield();
        /* turns are for a core nobody else needs: where other ranks run,
         * one turn lasts their whole slice, and the turns end */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (tsim_ns_since(&t0, &t) > TSIM_TURNS_NS) break;
    }
    if (before_sleep) before_sleep(arg);
    atomic_store(asleep, 1);
    if (atomic_load(w) == expect) tsim_futex_wait(w, expect, timeout_ms);
    atomic_store(asleep, 0);
}

static inline void tsim_wait_change(_Atomic uint32_t *w, uint32_t expect, int timeout_ms, int spins,
                                    int yield, _Atomic uint32_t *asleep)
{
    tsim_wait_change_then(w, expect, timeout_ms, spins, yield, asleep, NULL, NULL);
}

static inline void tsim_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

#endif
