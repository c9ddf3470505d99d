/* Process-shared futex waits on words in the machine segment. */
#ifndef TSIM_FUTEX_H
#define TSIM_FUTEX_H

#include <linux/futex.h>
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

/* Spin iterations before sleeping: BGLEMU_SPIN, default 0 on one core. */
static inline int tsim_spins(void)
{
    static _Atomic int spins = -1; /* racing first calls compute the same value */
    int s = atomic_load_explicit(&spins, memory_order_relaxed);
    if (s < 0) {
        const char *v = getenv("BGLEMU_SPIN");
        s = v ? atoi(v) : (sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 300 : 0);
        if (s < 0) s = 0;
        atomic_store_explicit(&spins, s, memory_order_relaxed);
    }
    return s;
}

/* The engine's spin before it sleeps: BGLEMU_ENGINE_SPIN, default 2000
 * pauses (about 100 us) on multi-core hosts, 0 on one core. Only taken
 * while a core is left for it (tsim_engine.c): a rank that runs alone
 * answers within microseconds (it blocks or syncs), and a futex hand-off
 * costs as much as the rank's whole turn; with more running ranks than
 * spare cores the spin would take a core from one of them. */
static inline int tsim_engine_spins(void)
{
    static _Atomic int spins = -1;
    int s = atomic_load_explicit(&spins, memory_order_relaxed);
    if (s < 0) {
        const char *v = getenv("BGLEMU_ENGINE_SPIN");
        s = v ? atoi(v) : (sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2000 : 0);
        if (s < 0) s = 0;
        atomic_store_explicit(&spins, s, memory_order_relaxed);
    }
    return s;
}

/* Spins briefly (the waker is often just about to answer on the other
 * core), then sleeps. Host-time tuning only: simulated time is unaffected. */
static inline void tsim_wait_change(_Atomic uint32_t *w, uint32_t expect, int timeout_ms, int spins)
{
    for (int i = 0; i < spins; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) != expect) return;
        __builtin_ia32_pause();
    }
    tsim_futex_wait(w, expect, timeout_ms);
}

static inline void tsim_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

#endif
