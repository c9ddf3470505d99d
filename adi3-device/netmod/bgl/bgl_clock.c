/* bglemu CH4 netmod "bgl": the rank's simulated clock seen from MPI.
 *
 * BGLEMU_CLOCK (set by mpirun -clock) says what computation between MPI
 * calls costs: "none" (communication only: runs are exactly reproducible)
 * or "cputime" (the thread's CPU time outside the netmod, scaled by the
 * cputime_scale_pct parameter, is charged when the netmod is next entered).
 * MPI_Wtime returns the simulated time (mpirun preloads bglemu's MPI_Wtime,
 * which calls MPIDI_BGL_wtime). */
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

void MPIDI_BGL_clock_init(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    const char *c = getenv("BGLEMU_CLOCK");
    g->clock = c && strcmp(c, "cputime") == 0 ? MPIDI_BGL_CLOCK_CPUTIME : MPIDI_BGL_CLOCK_NONE;
    g->cpu_mark_ns = thread_cpu_ns();
}

void MPIDI_BGL_clock_enter(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->clock != MPIDI_BGL_CLOCK_CPUTIME || !g->pp)
        return;
    uint64_t now = thread_cpu_ns();
    if (now > g->cpu_mark_ns + MPIDI_BGL_APP_WORK_NS)
        g->empty_polls = 0;     /* the application worked between two polls */
    if (now > g->cpu_mark_ns) {
        /* ns * MHz / 1000 = cycles at the emulated clock */
        uint64_t cycles = (now - g->cpu_mark_ns) * g->prm->clock_mhz / 1000 *
            g->prm->cputime_scale_pct / 100;
        pl_charge(g->pp, cycles);
    }
    g->cpu_mark_ns = now;
}

void MPIDI_BGL_clock_leave(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->clock == MPIDI_BGL_CLOCK_CPUTIME)
        g->cpu_mark_ns = thread_cpu_ns();
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
