/* pl_fate: a rank process records how it ended in its processor (the
 * signal, or exit() before pl_close, and when), and still ends the way it
 * would have. Each case runs in a forked child over an anonymous segment
 * the parent reads afterwards. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "packetlayer/pl.h"
#include "suite.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static tsim_seg *machine(void)
{
    tsim_geom g = {.dim = {2, 1, 1}, .torus = {1, 1, 1}, .cpus = 1};
    tsim_params p;
    char err[256];
    tsim_params_default(&p);
    tsim_seg *s = tsim_seg_create(&g, &p, 0, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

/* A sanitizer (or a debugger) handles the fault signals in every process
 * already: then pl_fate rightly leaves them alone. */
static int signals_taken(void)
{
    struct sigaction cur;
    sigaction(SIGSEGV, NULL, &cur);
    return (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL;
}

typedef void (*ending)(pl_proc *pp);

/* Runs `end` in a child bound to processor 2 (node 1) of s, first (before
 * it is bound) `before` if not NULL; returns its wait status. */
static int run_child_after(tsim_seg *s, void (*before)(void), ending end)
{
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit none = {0, 0}; /* no core files from the crashes */
        setrlimit(RLIMIT_CORE, &none);
        if (before) before();
        pl_proc pp;
        if (pl_open(&pp, s, 2, 0) != 0 || pl_fate_install(&pp) != 0) _exit(100);
        end(&pp);
        _exit(101);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

static int run_child(tsim_seg *s, ending end) { return run_child_after(s, NULL, end); }

static void check_signal(tsim_seg *s, uint64_t t0, int st, int sig, uint32_t flags)
{
    const tsim_proc *p = &s->procs[2];
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sig, "wait status %#x, want signal %d", st, sig);
    uint32_t kind = atomic_load(&p->fate_kind), others = atomic_load(&s->procs[0].fate_kind);
    ck_assert_uint_eq(kind, TSIM_FATE_SIGNAL | flags);
    ck_assert_int_eq(p->fate_signal, sig);
    ck_assert_uint_ge(p->fate_ns, t0);
    ck_assert_uint_le(p->fate_ns, mono_ns());
    ck_assert_uint_eq(others, 0); /* nobody else's */
}

static void null_write(pl_proc *pp)
{
    (void)pp;
    volatile int *volatile bad = NULL;
    *bad = 1;
}
static void raise_segv(pl_proc *pp) { (void)pp; raise(SIGSEGV); }
static void call_abort(pl_proc *pp) { (void)pp; abort(); }
static void divide(pl_proc *pp)
{
    (void)pp;
    volatile int zero = 0, x = 7;
    x = x / zero;
}

static volatile int deeper = 1;
static int recurse(int n)
{
    volatile char frame[4096];
    frame[0] = (char)n;
    return deeper ? recurse(n + 1) + frame[0] : 0;
}
static void overflow(pl_proc *pp) { (void)pp; recurse(0); }

START_TEST(fatal_signals_recorded)
{
    printf("fate: a NULL write, raise(SIGSEGV), abort(), a division by zero and a stack overflow "
           "are recorded (signal, time) and still kill the process with that signal\n");
    if (signals_taken()) {
        printf("fate: fault signals already handled in this process (sanitizer): skipped\n");
        return;
    }
    struct { ending end; int sig; const char *what; } cases[] = {
        {null_write, SIGSEGV, "NULL write"}, {raise_segv, SIGSEGV, "raise"},
        {call_abort, SIGABRT, "abort"},      {divide, SIGFPE, "division by zero"},
        {overflow, SIGSEGV, "stack overflow"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tsim_seg *s = machine();
        uint64_t t0 = mono_ns();
        int st = run_child(s, cases[i].end);
        printf("fate:   %s: wait status %#x, fate %u signal %d\n", cases[i].what, st,
               atomic_load(&s->procs[2].fate_kind), s->procs[2].fate_signal);
        check_signal(s, t0, st, cases[i].sig, 0);
        tsim_seg_destroy(s);
    }
}
END_TEST

static void exit7(pl_proc *pp) { (void)pp; exit(7); }
static void close_exit0(pl_proc *pp) { pl_close(pp, 0); exit(0); }
static void return_from_main(pl_proc *pp) { (void)pp; exit(0); }

START_TEST(exits_recorded_unless_closed)
{
    printf("fate: exit(7) before pl_close is recorded with its status; exit(0) before pl_close too; "
           "an exit after pl_close is a normal end, not recorded\n");
    tsim_seg *s = machine();
    uint64_t t0 = mono_ns();
    int st = run_child(s, exit7);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    ck_assert_uint_eq(atomic_load(&s->procs[2].fate_kind), TSIM_FATE_EXIT);
    ck_assert_int_eq(s->procs[2].fate_status, 7);
    ck_assert_uint_ge(s->procs[2].fate_ns, t0);
    tsim_seg_destroy(s);

    s = machine();
    st = run_child(s, return_from_main);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_uint_eq(atomic_load(&s->procs[2].fate_kind), TSIM_FATE_EXIT);
    ck_assert_int_eq(s->procs[2].fate_status, 0);
    tsim_seg_destroy(s);

    s = machine();
    st = run_child(s, close_exit0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_uint_eq(atomic_load(&s->procs[2].fate_kind), 0);
    tsim_seg_destroy(s);
}
END_TEST

static void detach_then_crash(pl_proc *pp)
{
    pl_close(pp, 0);
    tsim_seg_detach(pp->seg); /* as MPI_Finalize does */
    raise(SIGSEGV);
}

START_TEST(crash_after_detach)
{
    printf("fate: a crash after pl_close and the segment's unmapping (MPI_Finalize) is still "
           "recorded, flagged as after leaving the machine\n");
    if (signals_taken()) {
        printf("fate: fault signals already handled in this process (sanitizer): skipped\n");
        return;
    }
    tsim_seg *s = machine();
    uint64_t t0 = mono_ns();
    int st = run_child(s, detach_then_crash);
    check_signal(s, t0, st, SIGSEGV, TSIM_FATE_CLOSED);
    tsim_seg_destroy(s);
}
END_TEST

static void own_handler_exit(int sig)
{
    (void)sig;
    _exit(9);
}

static void own_handler(void) { signal(SIGSEGV, own_handler_exit); }

static void with_own_handler(pl_proc *pp)
{
    (void)pp;
    raise(SIGSEGV);
}

/* The rank forks a helper that exits 5, then ends properly. */
static void helper_then_close(pl_proc *pp)
{
    pid_t h = fork();
    if (h == 0) exit(5);
    int hs;
    waitpid(h, &hs, 0);
    if (!WIFEXITED(hs) || WEXITSTATUS(hs) != 5) _exit(102);
    if (atomic_load(&pp->p->fate_kind) != 0) _exit(103);
    pl_close(pp, 0);
    exit(0);
}

START_TEST(program_handler_kept)
{
    printf("fate: a handler the program installed first is kept (nothing recorded); a forked "
           "child's exit is not the rank's\n");
    tsim_seg *s = machine();
    int st = run_child_after(s, own_handler, with_own_handler);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 9);
    ck_assert_uint_eq(atomic_load(&s->procs[2].fate_kind), 0);
    st = run_child(s, helper_then_close);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "wait status %#x", st);
    ck_assert_uint_eq(atomic_load(&s->procs[2].fate_kind), 0);
    tsim_seg_destroy(s);
}
END_TEST

Suite *fate_suite(void)
{
    Suite *s = suite_create("fate");
    UM_TCASE(s, "fate", 30, fatal_signals_recorded, exits_recorded_unless_closed, crash_after_detach,
             program_handler_kept);
    return s;
}
