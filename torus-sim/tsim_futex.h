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

static inline void tsim_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

#endif
