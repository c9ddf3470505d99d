/* A rank's own account of how it ended (tsim_proc.fate_*), so that mpirun
 * can name the rank that failed first. Under hydra the ranks are not
 * mpirun's children: it never sees their wait statuses, and the order in
 * which it notices processes vanish says little (hydra SIGKILLs the rest
 * within milliseconds of the first death, and a core dump delays it). The
 * process itself knows: a fatal signal is caught here for an instant and
 * recorded with its time, then delivered again with its default action,
 * so the process still dies of it (same status, same core); an exit()
 * while the processor is still in the machine (no pl_close: MPI_Finalize
 * never ran) is recorded from on_exit.
 *
 * The record goes through a second mapping of the processor's first pages
 * (mremap of size 0 on the shared segment), private to this code and never
 * unmapped: MPI_Finalize detaches the segment, and a crash after that (in
 * an atexit handler, a destructor) must neither be lost nor fault again in
 * the handler. */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pl.h"

static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
#define NFATAL (int)(sizeof fatal / sizeof *fatal)

/* Set before any handler is installed, read by the handlers. */
static tsim_proc *fate_proc; /* the processor, through the private mapping */
static pid_t fate_pid;       /* a forked child inherits the handlers: not its end */
static int fate_hooked;      /* on_exit registered (once per process) */
static uintptr_t fate_seg;   /* the segment's mapping: a fault there is a stray write */
static size_t fate_seg_size;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Async-signal-safe: getpid, clock_gettime and plain stores only. */
static void record(uint32_t kind, int sig, int status, uint64_t addr)
{
    tsim_proc *p = fate_proc;
    if (!p || getpid() != fate_pid) return;
    if (atomic_load(&p->state) == TSIM_P_EXITED) {
        if (kind == TSIM_FATE_EXIT) return; /* left the machine properly */
        kind |= TSIM_FATE_CLOSED;
    }
    p->fate_signal = sig;
    p->fate_status = status;
    p->fate_addr = addr;
    p->fate_ns = mono_ns();
    atomic_store(&p->fate_kind, kind); /* last: the fields above are complete */
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    /* a write into a page of the segment this process may only read */
    uintptr_t a = (uintptr_t)si->si_addr;
    uint64_t off = sig == SIGSEGV && si->si_code == SEGV_ACCERR && a >= fate_seg &&
                   a - fate_seg < fate_seg_size ? a - fate_seg + 1 : 0;
    record(TSIM_FATE_SIGNAL, sig, 0, off);
    /* SA_RESETHAND restored the default action. A fault (si_code > 0 for
     * SIGSEGV, SIGBUS, SIGILL, SIGFPE) happens again when the instruction
     * re-executes, and the core shows it where it was; anything sent
     * (raise, kill, abort) or trapped past its instruction (int3, seccomp)
     * is sent again. */
    int fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
    if (!fault || si->si_code <= 0) raise(sig);
}

static void on_exit_hook(int status, void *arg)
{
    (void)arg;
    record(TSIM_FATE_EXIT, 0, status, 0);
}

/* The thread that attaches gets an alternate signal stack, so that a stack
 * overflow (the commonest crash of a recursive student program) is still
 * recorded. An existing one (the program's, a sanitizer's) is kept. */
static void alt_stack(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;
    long min = sysconf(_SC_SIGSTKSZ);
    size_t sz = 64 * 1024;
    if (min > 0 && (size_t)min * 4 > sz) sz = (size_t)min * 4;
    void *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    stack_t ss = {.ss_sp = mem, .ss_size = sz, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) munmap(mem, sz);
}

int pl_fate_install(pl_proc *pp)
{
    /* the pages holding the processor's state and fate, mapped once more */
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return -1;
    uintptr_t lo = (uintptr_t)pp->p, hi = (uintptr_t)(&pp->p->fate_ns + 1);
    uintptr_t start = lo & ~((uintptr_t)page - 1);
    size_t len = (size_t)(hi - start + (uintptr_t)page - 1) & ~((size_t)page - 1);
    void *alias = mremap((void *)start, 0, len, MREMAP_MAYMOVE);
    if (alias == MAP_FAILED) return -1;

    /* a second attach in one process (or in a forked child): the newest
     * processor and process are the ones; on_exit is inherited by fork */
    fate_pid = getpid();
    fate_seg = (uintptr_t)pp->seg;
    fate_seg_size = pp->seg->size;
    fate_proc = (tsim_proc *)((char *)alias + (lo - start));
    if (!fate_hooked) {
        if (on_exit(on_exit_hook, NULL) != 0) return -1;
        fate_hooked = 1;
    }
    alt_stack();
    for (int i = 0; i < NFATAL; i++) {
        struct sigaction cur, sa;
        if (sigaction(fatal[i], NULL, &cur) != 0) continue;
        /* the program's own handler (or SIG_IGN) wins: it may be a debugger
         * hook or a sanitizer's, and it knows better */
        int ours = (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fatal;
        if (!ours && ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)) continue;
        sa.sa_sigaction = on_fatal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
        sigaction(fatal[i], &sa, NULL);
    }
    return 0;
}

static _Noreturn void damaged(pl_proc *pp, uint32_t kind, int status, const char *fmt, va_list ap)
{
    tsim_proc *p = pp->p;
    vsnprintf(p->fate_why, sizeof p->fate_why, fmt, ap);
    p->fate_signal = 0;
    p->fate_status = status;
    p->fate_addr = 0;
    p->fate_ns = mono_ns();
    atomic_store(&p->fate_kind, kind);
    tsim_kick(pp->seg);
    _exit(PL_EXIT_DAMAGED); /* no atexit code: it would run on the damaged state */
}

_Noreturn void pl_damaged(pl_proc *pp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    damaged(pp, TSIM_FATE_CORRUPT, PL_EXIT_DAMAGED, fmt, ap);
}

_Noreturn void pl_bad_packet(pl_proc *pp, const tsim_slot *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    damaged(pp, TSIM_FATE_PEER, (int)s->m.src, fmt, ap);
}
