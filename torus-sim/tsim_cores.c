/* Where the engine and the ranks run on the host: host time only, the
 * simulated result never sees it.
 *
 * The plan and why (docs/simulated-time.md, "Costs on the host",
 * **Cores**): the engine keeps one core of its own and, while the job is
 * latency-bound (at almost every one of the engine's sleeps, no more
 * running ranks than the other cores), the ranks share the other cores
 * ("split"): a rank hands its core straight to the next rank when it
 * blocks. As soon as ranks run side by side (the engine asleep with more
 * running ranks than cores beside it for over half a window), every core
 * is theirs again ("shared"). The engine's idle time decides, not the
 * running ranks it counts at its sleeps (NPB CG wakes a crowd at once).
 *
 * BGLEMU_CORES=auto (default), shared (never split: ranks anywhere) or split
 * (always). mpirun enables the plan (tsim_engine_plan_cores); engines that
 * run ranks as threads of their own process (unit tests) never move anyone. */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tsim_engine_priv.h"

struct tsim_cores {
    int mode;              /* TSIM_CORES_* requested */
    int split;             /* ranks confined to `ranks` now */
    int engine_cpu;
    int nrank_cpus;
    cpu_set_t all, ranks;
    unsigned few, many;    /* the engine's sleeps this window, by running ranks */
    double slept_many;     /* this window's time the engine waited while more ranks ran than
                              the cores beside it */
    double sleep_at;       /* the engine's wait began (0: with few ranks running) */
    int npids;             /* processes placed at the last change */
    double window_end;
};

enum { TSIM_CORES_AUTO, TSIM_CORES_SHARED, TSIM_CORES_SPLIT };

/* A window: long enough to see a job's phase, short enough to follow it. */
#define CORES_WINDOW_S 0.02
#define CORES_MIN_SLEEPS 64

void tsim_engine_plan_cores(tsim_engine *e)
{
    const char *v = getenv("BGLEMU_CORES");
    int mode = TSIM_CORES_AUTO;
    if (v && strcmp(v, "shared") == 0) mode = TSIM_CORES_SHARED;
    else if (v && strcmp(v, "split") == 0) mode = TSIM_CORES_SPLIT;
    else if (v && *v && strcmp(v, "auto") != 0) {
        fprintf(stderr, "bglemu: BGLEMU_CORES=%s: want auto, shared or split; using auto\n", v);
    }
    cpu_set_t all;
    if (mode == TSIM_CORES_SHARED || sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2)
        return;
    struct tsim_cores *c = calloc(1, sizeof *c);
    if (!c) return;
    c->mode = mode;
    c->all = c->ranks = all;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
        if (CPU_ISSET(cpu, &all)) {
            c->engine_cpu = cpu;
            break;
        }
    CPU_CLR(c->engine_cpu, &c->ranks);
    c->nrank_cpus = CPU_COUNT(&c->ranks);
    c->window_end = eng_mono_s() + CORES_WINDOW_S;
    e->cores = c;
}

static int known_pids(const tsim_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->nprocs; i++) n += e->ep[i].pid > 0;
    return n;
}

/* Processor i is the first of its process (a CO rank's coprocessor shares
 * its rank's). */
static int first_of_process(const tsim_engine *e, int i)
{
    int pid = e->ep[i].pid;
    for (int j = 0; j < i; j++)
        if (e->ep[j].pid == pid) return 0;
    return pid > 0;
}

static int rank_processes(const tsim_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->nprocs; i++) n += first_of_process(e, i);
    return n;
}

/* Every thread of every rank process (a CO rank's coprocessor is a thread). */
static void place_ranks(tsim_engine *e, const cpu_set_t *set)
{
    int self = (int)getpid();
    for (int i = 0; i < e->nprocs; i++) {
        int pid = e->ep[i].pid;
        /* an exited rank's pid may name someone else by now */
        if (pid == self || atomic_load(&e->seg->procs[i].state) == TSIM_P_EXITED ||
            !first_of_process(e, i))
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", pid);
        DIR *d = opendir(dir);
        if (!d) continue; /* gone: nothing to place */
        struct dirent *t;
        while ((t = readdir(d)))
            if (t->d_name[0] != '.') sched_setaffinity(atoi(t->d_name), sizeof *set, set);
        closedir(d);
    }
}

static void set_split(tsim_engine *e, int split)
{
    struct tsim_cores *c = e->cores;
    c->split = split;
    c->npids = known_pids(e);
    place_ranks(e, split ? &c->ranks : &c->all);
    /* one core for all ranks: a pausing rank would hold its peer's core;
     * turns that yield it pay only while the rank woken next is likely one
     * in its turns (a 4- to 64-rank halo exchange lost 3-7 % to them) */
    uint32_t how = TSIM_WAIT_SPIN;
    if (split && c->nrank_cpus == 1) how = rank_processes(e) <= 2 ? TSIM_WAIT_TURNS : TSIM_WAIT_WATCH;
    atomic_store(&e->seg->ranks_wait, how);
}

void tsim_cores_start(tsim_engine *e)
{
    struct tsim_cores *c = e->cores;
    if (!c) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c->engine_cpu, &one);
    sched_setaffinity(0, sizeof one, &one); /* this thread: the engine */
}

/* The window's verdict, at `now`: split while the engine's core is the
 * critical path, shared when ranks have more work than their cores. */
static void cores_decide(tsim_engine *e, double now)
{
    struct tsim_cores *c = e->cores;
    double len = now - (c->window_end - CORES_WINDOW_S);
    int want = c->mode == TSIM_CORES_SPLIT ? 1
             : c->split ? c->slept_many * 2 <= len      /* the engine's core idle under half the time */
                        : c->many * 20 <= c->few + c->many; /* split when ranks almost never overlap */
    /* a rank that attached since was started with every core */
    if (want != c->split || (want && known_pids(e) != c->npids)) set_split(e, want);
    c->few = c->many = 0;
    c->slept_many = 0;
    c->window_end = now + CORES_WINDOW_S;
}

void tsim_cores_woke(tsim_engine *e)
{
    struct tsim_cores *c = e->cores;
    if (!c || !c->sleep_at) return;
    double now = eng_mono_s();
    c->slept_many += now - c->sleep_at;
    c->sleep_at = 0;
    /* ranks computing side by side leave the engine asleep for long
     * stretches, few sleeps a window: the verdict need not wait for them */
    if (c->split && now >= c->window_end) cores_decide(e, now);
}

void tsim_cores_note(tsim_engine *e, int running)
{
    struct tsim_cores *c = e->cores;
    if (!c) return;
    if (running <= c->nrank_cpus) c->few++;
    else c->many++, c->sleep_at = eng_mono_s();
    /* forced: the rank processes known are placed every few sleeps, not
     * only once a window */
    if (c->mode == TSIM_CORES_SPLIT && (c->few + c->many) % 8 == 0 && known_pids(e) != c->npids)
        set_split(e, 1);
    if ((c->few + c->many) % CORES_MIN_SLEEPS) return;
    double now = c->sleep_at ? c->sleep_at : eng_mono_s();
    if (now >= c->window_end) cores_decide(e, now);
}

void tsim_cores_free(tsim_engine *e)
{
    free(e->cores);
    e->cores = NULL;
}
