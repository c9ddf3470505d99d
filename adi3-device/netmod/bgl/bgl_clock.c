/* bglemu CH4 netmod "bgl": the rank's simulated clock seen from MPI.
 *
 * BGLEMU_CLOCK (set by mpirun -clock) says what computation between MPI
 * calls costs: "none" (communication only: runs are exactly reproducible)
 * or "cputime" (the host CPU time the application spends between MPI
 * calls, scaled by the cputime_scale_pct parameter, is charged when MPI is
 * next entered). MPI_Wtime returns the simulated time (mpirun preloads
 * bglemu's MPI_Wtime, which calls MPIDI_BGL_wtime).
 *
 * Where MPI is entered and left: the preloaded library wraps every MPI
 * entry point (adi3-device/wtime) and calls MPIDI_BGL_mpi_enter / _leave,
 * so MPICH's own code above the netmod (argument checks, requests,
 * matching, the Fortran binding) is not computation: MPI's software costs
 * are the model's parameters alone. Without those calls (a rank not
 * started by mpirun) the netmod's own entry and exit stand in for them, as
 * before, and MPICH's code is charged as computation. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

#include <time.h>

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* MPI returns: the gap starts. The thread CPU clock is a system call
 * (some 250 ns here), the wall clock a vDSO read; so when the last mark is
 * less than MPIDI_BGL_SHORT_GAP_NS of wall time ago (a short gap and a
 * short call since: nothing took the core away, as for the short gaps
 * themselves), the CPU clock is taken to have run with the wall clock.
 * A loop on MPI_Wtime then costs the host a tenth of what it did, and it
 * is exposed to a tenth of the host's interruptions (issue 26). */
static void mark(MPIDI_BGL_global_t * g)
{
    uint64_t w = wall_ns();
    if (g->wall_mark_ns && w - g->wall_mark_ns < MPIDI_BGL_SHORT_GAP_NS) {
        g->cpu_mark_ns += w - g->wall_mark_ns;
        g->wall_mark_ns = w;
        return;
    }
    g->cpu_mark_ns = thread_cpu_ns();
    g->wall_mark_ns = wall_ns();        /* last: the gap starts here */
}

void MPIDI_BGL_clock_init(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    const char *c = getenv("BGLEMU_CLOCK");
    g->clock = c && strcmp(c, "cputime") == 0 ? MPIDI_BGL_CLOCK_CPUTIME : MPIDI_BGL_CLOCK_NONE;
    /* A long gap is timed by two thread CPU clock reads, system calls
     * whose own cost (a few hundred ns in a virtual machine) is the
     * host's, not the application's: the median of 15 reads in a row. */
    uint64_t d[15];
    for (int i = 0; i < 15; i++) {
        uint64_t a = thread_cpu_ns();
        d[i] = thread_cpu_ns() - a;
    }
    for (int i = 1; i < 15; i++)        /* insertion sort */
        for (int j = i; j > 0 && d[j] < d[j - 1]; j--) {
            uint64_t t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    g->cpu_read_ns = d[7];
    g->wall_mark_ns = 0;
    mark(g);
}

/* Charges the computation since the mark. A short gap is measured on the
 * wall clock (a vDSO read, ~20 ns; the thread CPU clock is a system call
 * whose jitter, some 200 ns on a loaded host, would be several hundred
 * simulated cycles at the default scale), less MPIDI_BGL_GAP_SLACK_NS; a
 * gap longer than MPIDI_BGL_SHORT_GAP_NS in CPU time, less the cost of a
 * read, so time the host gave to other processes is not computation. */
static void charge_since_mark(MPIDI_BGL_global_t * g)
{
    uint64_t w = wall_ns(), ns;
    uint64_t gap = w > g->wall_mark_ns ? w - g->wall_mark_ns : 0;
    if (gap < MPIDI_BGL_SHORT_GAP_NS) {
        ns = gap > MPIDI_BGL_GAP_SLACK_NS ? gap - MPIDI_BGL_GAP_SLACK_NS : 0;
    } else {
        uint64_t c = thread_cpu_ns();
        ns = c > g->cpu_mark_ns + g->cpu_read_ns ? c - g->cpu_mark_ns - g->cpu_read_ns : 0;
    }
    if (ns > MPIDI_BGL_APP_WORK_NS)
        g->empty_polls = 0;     /* the application worked between two polls */
    /* ns * MHz / 1000 = cycles at the emulated clock */
    if (ns)
        pl_charge(g->pp, ns * g->prm->clock_mhz * g->prm->cputime_scale_pct / 100000);
}

/* The application calls MPI (the preloaded wrappers; nested calls count
 * once). From the first call on, the netmod's own entry and exit no
 * longer mark anything. An advance the last call left stopped ends first
 * (at the clock that call returned with), unless this call is a wait,
 * whose progress goes on with it. */
static void enter(MPIDI_BGL_call_kind call)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    g->hooked = 1;
    g->call = call;
    if (call != MPIDI_BGL_CALL_WAIT && g->ml)
        MPIDI_BGL_end_advance();
    if (g->clock == MPIDI_BGL_CLOCK_CPUTIME && g->pp)
        charge_since_mark(g);
}

__attribute__ ((visibility("default"))) void MPIDI_BGL_mpi_enter(void);
void MPIDI_BGL_mpi_enter(void)
{
    enter(MPIDI_BGL_CALL_OTHER);
}

/* MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Recv */
__attribute__ ((visibility("default"))) void MPIDI_BGL_mpi_enter_blocking(void);
void MPIDI_BGL_mpi_enter_blocking(void)
{
    enter(MPIDI_BGL_CALL_BLOCKING);
}

/* MPI_Wait, MPI_Waitall */
__attribute__ ((visibility("default"))) void MPIDI_BGL_mpi_enter_wait(void);
void MPIDI_BGL_mpi_enter_wait(void)
{
    enter(MPIDI_BGL_CALL_WAIT);
}

__attribute__ ((visibility("default"))) void MPIDI_BGL_mpi_leave(void);
void MPIDI_BGL_mpi_leave(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    g->call = MPIDI_BGL_CALL_OTHER;
    if (g->clock == MPIDI_BGL_CLOCK_CPUTIME && g->pp)
        mark(g);
}

void MPIDI_BGL_clock_enter(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->clock == MPIDI_BGL_CLOCK_CPUTIME && g->pp && !g->hooked)
        charge_since_mark(g);
}

void MPIDI_BGL_clock_leave(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->clock == MPIDI_BGL_CLOCK_CPUTIME && !g->hooked)
        mark(g);
}

/* Seconds of simulated time of this rank; -1 before MPI_Init or after
 * MPI_Finalize (the caller then falls back to the host clock). */
__attribute__ ((visibility("default"))) double MPIDI_BGL_wtime(void);
double MPIDI_BGL_wtime(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->pp)
        return -1.0;
    /* a loop that polls until some simulated time has passed must not
     * block in progress: the time it waits for would never come */
    g->empty_polls = 0;
    MPIDI_BGL_clock_enter();
    /* Reading the clock takes time, in every clock mode: a loop that waits
     * for the clock to pass some time ends after that time even when
     * computation is free (-clock none), and in cputime mode it ends on a
     * step of this cost, not on whatever host interruption happened to fall
     * between two calls (the loop's own code is below the gap's slack). The
     * value is read at the end of the call, as a time base read would be. */
    pl_charge(g->pp, g->prm->mpi_wtime_cycles);
    double t = (double) pl_now(g->pp) / ((double) g->prm->clock_mhz * 1e6);
    MPIDI_BGL_clock_leave();
    return t;
}

/* The machine this rank runs on, for programs that print bounds and links'
 * worth (adi3-device/bench); -1 outside MPI_Init..MPI_Finalize. */
__attribute__ ((visibility("default")))
int MPIDI_BGL_machine(tsim_geom * geom, tsim_params * prm);
int MPIDI_BGL_machine(tsim_geom * geom, tsim_params * prm)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->pp)
        return -1;
    *geom = g->pp->seg->geom;
    *prm = *g->prm;
    return 0;
}

void MPIDI_BGL_job_aborted(const char *where)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int deadlock = g->pp && atomic_load(&g->pp->seg->deadlock);
    fprintf(stderr, "rank %d: bglemu %s in MPI %s; leaving\n", MPIR_Process.rank,
            deadlock ? "found an application deadlock" : "aborted the job", where);
    fflush(stderr);
    _exit(deadlock ? 3 : 1);
}
