/* The host's price of one hand-off between two processes on one core: the
 * least a rank-to-rank hand-off can cost here, whatever the engine does
 * (make bench, section handoff: the floor each hand-off-bound job is
 * measured against, docs/simulated-time.md "What the goals need").
 *
 * Two processes pinned to the first core take turns on a shared word, as
 * two rank processes on the ranks' core do: by futex (the one whose turn
 * ends wakes the other, then sleeps: a rank that blocks) and by
 * sched_yield (each spins on the word, yielding: the watcher's turns).
 * Prints "futex X us, yield Y us per hand-off", medians of 5 trials.
 *
 * usage: switch_cost [HANDOFFS]   (default 100000 per trial) */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TRIALS = 5 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void futex_wait(atomic_uint *w, unsigned seen)
{
    syscall(SYS_futex, w, FUTEX_WAIT, seen, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *w)
{
    syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Side `me` (0 or 1) takes the turns 2k + me, k < n; the word counts turns. */
static void take_turns(atomic_uint *w, unsigned n, int me, int by_yield)
{
    for (unsigned k = 0; k < n; k++) {
        unsigned mine = 2 * k + (unsigned)me, seen;
        while ((seen = atomic_load(w)) != mine) {
            if (by_yield) sched_yield();
            else futex_wait(w, seen);
        }
        atomic_store(w, mine + 1);
        if (!by_yield) futex_wake(w);
    }
}

/* One trial: us per hand-off, or a negative value if it failed. */
static double trial(atomic_uint *w, unsigned n, int by_yield)
{
    atomic_store(w, 0);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        take_turns(w, n, 1, by_yield);
        _exit(0);
    }
    double t0 = now_s();
    take_turns(w, n, 0, by_yield);
    double t = now_s() - t0;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return -1;
    return 1e6 * t / (2.0 * n);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(atomic_uint *w, unsigned n, int by_yield)
{
    double v[TRIALS];
    for (int i = 0; i < TRIALS; i++)
        if ((v[i] = trial(w, n, by_yield)) < 0) return -1;
    qsort(v, TRIALS, sizeof v[0], cmp);
    return v[TRIALS / 2];
}

int main(int argc, char **argv)
{
    unsigned n = 100000;
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: switch_cost [HANDOFFS]\n"
                        "  the host's cost of a hand-off between two processes on one core\n");
        return argc == 2 ? 0 : 2;
    }
    if (argc == 2) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end || v == 0 || v > 100000000) {
            fprintf(stderr, "switch_cost: HANDOFFS must be 1..100000000, got '%s'\n", argv[1]);
            return 2;
        }
        n = (unsigned)v;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one)) {
        fprintf(stderr, "switch_cost: sched_setaffinity: %s\n", strerror(errno));
        return 1;
    }
    atomic_uint *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        fprintf(stderr, "switch_cost: mmap: %s\n", strerror(errno));
        return 1;
    }
    double fx = median(w, n, 0), yd = median(w, n, 1);
    if (fx < 0 || yd < 0) {
        fprintf(stderr, "switch_cost: a trial failed\n");
        return 1;
    }
    printf("futex %.2f us, yield %.2f us per hand-off\n", fx, yd);
    return 0;
}
