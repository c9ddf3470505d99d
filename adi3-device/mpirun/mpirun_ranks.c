/* Rank processes: start them, reap them, and tear the job down on a crash,
 * a signal to mpirun, a deadlock or the timeout. mpirun's signals are
 * blocked in every thread and taken synchronously here (sigtimedwait), so
 * teardown runs in ordinary code, never in a handler. */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mpirun.h"

extern char **environ;

#define GRACE_S 2.0 /* SIGTERM, then SIGKILL after this long */
#define MPIRUN_CSEL_PATH_LEN 1023 /* the collective selection file's path, padded */

/* hwloc 2's plugins: I/O devices (the topology below has none) and XML
 * through libxml2; each is a dlopen of its library and dependencies */
#define MPIRUN_HWLOC_PLUGINS \
    "hwloc_pci,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero,hwloc_gl,hwloc_xml_libxml"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int name_matches(const char *entry, const char *assignment)
{
    size_t n = strcspn(assignment, "=");
    return !strncmp(entry, assignment, n) && entry[n] == '=';
}

/* environ without the names we set (ours[0..nours), NAME=VALUE each, and
 * BGLEMU_RANK: a stale one must not reach a rank), then the -env values,
 * then ours. Built before fork: the child only calls async-signal-safe code. */
static char **build_env(mpirun_job *j, char **ours, int nours)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + (size_t)j->o->nenv + (size_t)nours + 1, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int drop = name_matches(environ[i], "BGLEMU_RANK=") || name_matches(environ[i], "BGLEMU_TRACE=");
        for (int q = 0; q < nours; q++) drop |= name_matches(environ[i], ours[q]);
        for (int q = 0; q < j->o->nenv; q++) drop |= name_matches(environ[i], j->o->env[q]);
        if (!drop) env[k++] = environ[i];
    }
    for (int q = 0; q < j->o->nenv; q++) { /* a later -env NAME wins */
        int later = 0;
        for (int r = q + 1; r < j->o->nenv; r++) later |= name_matches(j->o->env[r], j->o->env[q]);
        if (!later) env[k++] = j->o->env[q];
    }
    for (int q = 0; q < nours; q++) env[k++] = ours[q];
    env[k] = NULL;
    return env;
}

/* Forks a child that execs path with argv and env; it dies with mpirun. */
static pid_t start(const char *path, char **argv, char **env, int devnull, int quiet_stdin)
{
    pid_t me = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != me) _exit(127);
    if (quiet_stdin && devnull >= 0) dup2(devnull, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, env);
    static const char msg[] = "mpirun: exec of the rank program failed\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(127);
}

/* the user set NAME (in mpirun's environment or with -env) */
static int user_sets(const mpirun_job *j, const char *name)
{
    char assignment[128];
    snprintf(assignment, sizeof assignment, "%s=", name);
    int user = getenv(name) != NULL;
    for (int q = 0; q < j->o->nenv; q++) user |= name_matches(j->o->env[q], assignment);
    return user;
}

/* MPI programs: one mpiexec.hydra starts every rank (it gives each its
 * PMI_RANK and runs MPICH's process-management protocol); the environment
 * it passes on names the machine and preloads bglemu's MPI_Wtime. */
static int spawn_hydra(mpirun_job *j, char **ours, int nours)
{
    static char preload[4200];
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s%s%s%s", j->trace_lib ? j->trace_lib : "",
             j->trace_lib ? " " : "", j->wtime_lib, old && *old ? " " : "", old && *old ? old : "");
    ours[nours++] = preload;
    /* CH4 hands MPI_Bcast / MPI_Alltoall to the netmod (torus collectives)
     * unless the user chose a selection file. MPI_Init copies the path to
     * the heap, and a rank's heap addresses must not follow where bglemu is
     * installed (docs/mpi.md, "A reproducible address space"): slashes pad
     * it to one length (a shorter one only for a longer install path). */
    static char csel[4200];
    const char *cv = "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE";
    if (!user_sets(j, cv)) {
        const char *base = strrchr(j->coll_json, '/');
        size_t dir = (size_t)(base - j->coll_json), len = strlen(j->coll_json);
        int pad = len < MPIRUN_CSEL_PATH_LEN ? (int)(MPIRUN_CSEL_PATH_LEN - len) : 0;
        snprintf(csel, sizeof csel, "%s=%.*s%*s%s", cv, (int)dir, j->coll_json, pad, "", base);
        for (char *c = csel + strlen(cv) + 1 + dir; *c == ' '; c++) *c = '/';
        ours[nours++] = csel;
    }
    /* MPI_Init's hardware topology (hwloc) is a BG/L node's, not the
     * host's: discovering the host's (PCI config space, read through a
     * hypervisor in a virtual machine, and every I/O plugin loaded) cost a
     * rank 15 ms of host CPU and 40 ms of wall, and its size moved the
     * addresses of MPICH's later heap buffers with the host's hardware
     * (docs/mpirun.md, "Start and end"). A topology the user gives wins. */
    if (!user_sets(j, "HWLOC_SYNTHETIC") && !user_sets(j, "HWLOC_XMLFILE") &&
        !user_sets(j, "HWLOC_COMPONENTS"))
        ours[nours++] = (char *)"HWLOC_SYNTHETIC=package:1 core:2 pu:1";
    if (!user_sets(j, "HWLOC_PLUGINS_BLACKLIST"))
        ours[nours++] = (char *)"HWLOC_PLUGINS_BLACKLIST=" MPIRUN_HWLOC_PLUGINS;
    char **env = build_env(j, ours, nours);
    int argc = 0;
    while (j->o->argv[argc]) argc++;
    char **argv = calloc((size_t)argc + 13, sizeof *argv);
    if (!env || !argv) {
        free(env);
        free(argv);
        fprintf(stderr, "mpirun: out of memory\n");
        return -1;
    }
    static char np[16];
    snprintf(np, sizeof np, "%d", j->g.nranks);
    int k = 0;
    argv[k++] = (char *)j->hydra;
    argv[k++] = "-n";
    argv[k++] = np;
    argv[k++] = "-launcher";
    argv[k++] = "fork";
    argv[k++] = "-bind-to";
    argv[k++] = "none";
    /* no MPIR_CVAR_CH3_INTERFACE_HOSTNAME=<host> in the ranks (CH3's; CH4
     * only copies it to the heap, where its length would move MPICH's
     * later buffers with the host's name) */
    argv[k++] = "-disable-hostname-propagation";
    argv[k++] = (char *)j->path;
    for (int a = 1; a < argc; a++) argv[k++] = j->o->argv[a];
    argv[k] = NULL;
    int rc = 0;
    /* how the ranks are watched, before any exists (watch_hydra_ranks) */
    int n = j->g.nranks;
    j->pidfd = malloc(sizeof *j->pidfd * (size_t)n);
    j->pidfd_ev = malloc(sizeof *j->pidfd_ev * (size_t)n);
    j->pidfd_ep = epoll_create1(EPOLL_CLOEXEC);
    for (int r = 0; j->pidfd && r < n; r++) j->pidfd[r] = -1;
    if (!j->pidfd || !j->pidfd_ev || j->pidfd_ep < 0) {
        fprintf(stderr, "mpirun: cannot watch the ranks: %s\n",
                j->pidfd_ep < 0 ? strerror(errno) : "out of memory");
        rc = -1;
    } else {
        j->hydra_pid = start(j->hydra, argv, env, -1, 0);
        if (j->hydra_pid < 0) {
            fprintf(stderr, "mpirun: cannot start %s: fork: %s\n", j->hydra, strerror(errno));
            j->hydra_pid = 0;
            rc = -1;
        } else {
            j->live = 1;
        }
    }
    free(env);
    free(argv);
    return rc;
}

int mpirun_spawn(mpirun_job *j)
{
    int n = j->g.nranks;
    static char seg_var[96], np_var[32], map_var[4200], clock_var[64], proto_var[64];
    char *ours[16];
    int nours = 0;
    snprintf(seg_var, sizeof seg_var, "BGLEMU_SEG=%s", j->seg->name);
    snprintf(np_var, sizeof np_var, "BGLEMU_NRANKS=%d", n);
    snprintf(map_var, sizeof map_var, "BGLMPI_MAPPING=%s", j->o->mapspec);
    snprintf(clock_var, sizeof clock_var, "BGLEMU_CLOCK=%s", j->o->clock);
    snprintf(proto_var, sizeof proto_var, "BGLMPI_PROTOCOL=%s",
             j->o->protocol ? j->o->protocol : "auto");
    ours[nours++] = seg_var;
    ours[nours++] = np_var;
    ours[nours++] = map_var;
    ours[nours++] = clock_var;
    ours[nours++] = proto_var;
    if (mpirun_trace_env(j)) ours[nours++] = (char *)mpirun_trace_env(j);
    if (j->hydra) return spawn_hydra(j, ours, nours);

    static char rank_var[32];
    ours[nours++] = rank_var;
    char **env = build_env(j, ours, nours);
    if (!env) {
        fprintf(stderr, "mpirun: out of memory\n");
        return -1;
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int rc = 0;
    for (int r = 0; r < n; r++) {
        snprintf(rank_var, sizeof rank_var, "BGLEMU_RANK=%d", r);
        pid_t pid = start(j->path, j->o->argv, env, devnull, r > 0); /* stdin to rank 0 */
        if (pid < 0) {
            fprintf(stderr, "mpirun: cannot start rank %d: fork: %s\n", r, strerror(errno));
            rc = -1;
            break;
        }
        j->pid[r] = pid;
        j->live++;
    }
    if (devnull >= 0) close(devnull);
    free(env);
    return rc;
}

static int rank_of_pid(const mpirun_job *j, pid_t pid)
{
    for (int r = 0; r < j->g.nranks; r++)
        if (j->pid[r] == pid) return r;
    return -1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* From here on, whatever a rank records of its end is a consequence (its
 * pl_block returned -1, it got our SIGTERM), not a cause. */
static void mark_abort(mpirun_job *j)
{
    if (!j->abort_ns) j->abort_ns = now_ns();
    atomic_store(&j->seg->abort, 1);
}

int mpirun_culprit(const mpirun_job *j)
{
    int best = -1, best_sig = 0;
    uint64_t best_ns = 0;
    for (int r = 0; r < j->g.nranks; r++) {
        const tsim_proc *p = &j->seg->procs[j->map.proc[r]];
        uint32_t kind = atomic_load(&p->fate_kind);
        uint32_t what = kind & ~TSIM_FATE_CLOSED;
        int found = what == TSIM_FATE_CORRUPT || what == TSIM_FATE_PEER;
        if (what != TSIM_FATE_SIGNAL && what != TSIM_FATE_EXIT && !found) continue;
        if (j->abort_ns && p->fate_ns >= j->abort_ns && !found) continue;
        /* under fork an exit 0 without pl_close is a normal end */
        if (what == TSIM_FATE_EXIT && !j->hydra && (p->fate_status & 0xff) == 0) continue;
        int sig = found ? 2 : what == TSIM_FATE_SIGNAL;
        /* damage a rank found in its own pages (pl_damaged), then a crash,
         * are causes before any exit: nothing makes a rank crash because
         * another left, while ranks do leave after a peer crashed; and only
         * the rank itself can write its own pages */
        if (best < 0 || sig > best_sig || (sig == best_sig && p->fate_ns < best_ns)) {
            best = r;
            best_sig = sig;
            best_ns = p->fate_ns;
        }
    }
    return best;
}

static void abort_job(mpirun_job *j)
{
    mark_abort(j);
    tsim_kick(j->seg);
}

static void signal_live(mpirun_job *j, int sig)
{
    if (j->hydra) {
        if (j->hydra_pid > 0) kill(j->hydra_pid, sig);
        if (sig == SIGKILL) /* what hydra left behind */
            for (int r = 0; r < j->g.nranks; r++) {
                tsim_proc *p = &j->seg->procs[j->map.proc[r]];
                if (mpirun_pid(p) > 0 && atomic_load(&p->state) != TSIM_P_EXITED)
                    kill(mpirun_pid(p), sig);
            }
        return;
    }
    for (int r = 0; r < j->g.nranks; r++)
        if (j->pid[r] > 0 && !j->reaped[r]) kill(j->pid[r], sig);
}

/* Once every rank has attached (pl_open stores its pid) or exited, nobody
 * needs the name: remove it so even a SIGKILLed mpirun leaves nothing. */
static void unlink_when_attached(mpirun_job *j)
{
    if (j->unlinked) return;
    for (int r = 0; r < j->g.nranks; r++) {
        if (j->hydra) {
            if (j->live && j->seg->procs[j->map.proc[r]].pid == 0) return;
            continue;
        }
        if (j->pid[r] <= 0) continue;
        if (!j->reaped[r] && j->seg->procs[j->map.proc[r]].pid == 0) return;
    }
    shm_unlink(j->seg->name);
    mpirun_trace_unlink(j);
    j->unlinked = 1;
    mpirun_mark(j, MPIRUN_T_ATTACHED);
}

/* The ranks that left the machine (MPI_Finalize, pl_close) so far: for the
 * host times only (BGLEMU_TIMES). */
static void count_left(mpirun_job *j)
{
    if (j->left == j->g.nranks) return;
    int n = 0;
    for (int r = 0; r < j->g.nranks; r++)
        n += atomic_load(&j->seg->procs[j->map.proc[r]].state) == TSIM_P_EXITED;
    j->left = n;
    if (n) mpirun_mark(j, MPIRUN_T_FIRST_LEFT);
    if (n == j->g.nranks) mpirun_mark(j, MPIRUN_T_LAST_LEFT);
}

/* Under hydra the ranks are not our children, so their exit statuses never
 * reach mpirun. Each rank's process is watched through a pidfd, opened once
 * it has attached (its pid is in the segment): what mpirun saw is the
 * fallback when no rank recorded its end (mpirun_culprit). The pidfds sit
 * in one epoll set, so a look costs what ended, not every rank (poll on
 * 1,024 pidfds every 10 ms took 0.45 s of CPU from a 12 s job). Waits up
 * to ms milliseconds. */
static int by_rank(const void *a, const void *b)
{
    uint32_t x = ((const struct epoll_event *)a)->data.u32, y = ((const struct epoll_event *)b)->data.u32;
    return (x > y) - (x < y);
}

static void watch_hydra_ranks(mpirun_job *j, int ms)
{
    int n = j->g.nranks, dead = -1, dead_running = -1;
    for (int r = j->pidfd_next; r < n; r++) {
        tsim_proc *p = &j->seg->procs[j->map.proc[r]];
        if (j->pidfd[r] == -1 && p->pid > 0) {
            j->pidfd[r] = (int)syscall(SYS_pidfd_open, (pid_t)p->pid, 0);
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)r};
            if (j->pidfd[r] >= 0 && epoll_ctl(j->pidfd_ep, EPOLL_CTL_ADD, j->pidfd[r], &ev) != 0) {
                close(j->pidfd[r]);
                j->pidfd[r] = -2; /* not watchable: its records still tell */
            } else if (j->pidfd[r] < 0) { /* not watchable: gone already (attached and died at once) */
                uint32_t st = atomic_load(&p->state);
                if (errno == ESRCH && st != TSIM_P_EXITED) {
                    if (dead < 0) dead = r;
                    if (dead_running < 0 && st == TSIM_P_RUNNING) dead_running = r;
                }
                j->pidfd[r] = -2;
            }
        }
    }
    while (j->pidfd_next < n && j->pidfd[j->pidfd_next] != -1) j->pidfd_next++;
    int got = 0;
    if (dead < 0) {
        got = epoll_wait(j->pidfd_ep, j->pidfd_ev, n, ms);
        if (got <= 0) return;
    }
    /* Several may end before mpirun looks, and hydra may kill the others
     * before the crashed rank is seen to end (it notices the closed pipes
     * first, and a core dump takes time): the one that was running (not
     * blocked in the network) is the one that crashed. Within one look,
     * in rank order. */
    qsort(j->pidfd_ev, (size_t)got, sizeof *j->pidfd_ev, by_rank);
    for (int i = 0; i < got; i++) {
        int r = (int)j->pidfd_ev[i].data.u32;
        close(j->pidfd[r]); /* leaves the epoll set with it */
        j->pidfd[r] = -2;
        uint32_t st = atomic_load(&j->seg->procs[j->map.proc[r]].state);
        if (st == TSIM_P_EXITED) continue;
        if (dead < 0) dead = r;
        if (dead_running < 0 && st == TSIM_P_RUNNING) dead_running = r;
    }
    if (j->first_dead < 0) j->first_dead = dead;
    if (j->first_dead_running < 0) j->first_dead_running = dead_running;
}

/* hydra ended: every rank that did not leave the machine (pl_close at
 * MPI_Finalize) failed; one of them is named as the job's failed rank. */
static void reap_hydra(mpirun_job *j, int st, int *failing)
{
    j->hydra_status = st;
    j->hydra_pid = 0;
    j->live = 0;
    int bad = -1, running = -1;
    for (int r = 0; r < j->g.nranks; r++) {
        uint32_t s = atomic_load(&j->seg->procs[j->map.proc[r]].state);
        if (s == TSIM_P_RUNNING && running < 0) running = r;
        if (s != TSIM_P_EXITED && bad < 0) bad = r;
    }
    /* A failed job is aborted before its ranks are marked gone: the engine,
     * reading the states while they change, could otherwise see only
     * blocked ranks left and call a crash a deadlock (it checks the abort
     * flag after reading the states). */
    if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0 || bad >= 0) && !atomic_load(&j->seg->deadlock))
        mark_abort(j);
    for (int r = 0; r < j->g.nranks; r++)
        atomic_store(&j->seg->procs[j->map.proc[r]].state, TSIM_P_EXITED);
    tsim_kick(j->seg);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && bad < 0) return;
    if (atomic_load(&j->seg->deadlock)) return;
    /* the crashed rank: the one whose own record says so (every rank is
     * gone, so every record is written); without one (SIGKILLed, _exit,
     * its own signal handler), the first seen dying while running, else one
     * that was running, else the first seen dying */
    int told = mpirun_culprit(j);
    if (told >= 0) bad = told;
    else if (j->first_dead_running >= 0) bad = j->first_dead_running;
    else if (running >= 0) bad = running;
    else if (j->first_dead >= 0) bad = j->first_dead;
    if (j->failed_rank < 0 && !j->signal_received && !j->timed_out)
        j->failed_rank = bad >= 0 ? bad : -3;
    if (!*failing) {
        *failing = 1;
        abort_job(j);
    }
}

static void reap(mpirun_job *j, pid_t pid, int st, int *failing)
{
    if (j->hydra) {
        if (pid == j->hydra_pid) reap_hydra(j, st, failing);
        return;
    }
    int r = rank_of_pid(j, pid);
    if (r < 0) return; /* not ours (cannot happen: we fork nothing else) */
    j->reaped[r] = 1;
    j->status[r] = st;
    j->live--;
    tsim_proc *p = &j->seg->procs[j->map.proc[r]];
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        /* exited without pl_close: it will never act again */
        uint32_t s = atomic_load(&p->state);
        if (s == TSIM_P_RUNNING || s == TSIM_P_BLOCKED) {
            atomic_store(&p->state, TSIM_P_EXITED);
            tsim_kick(j->seg);
        }
        return;
    }
    if (atomic_load(&j->seg->deadlock)) return; /* released by the engine: expected */
    if (j->failed_rank < 0 && !j->signal_received && !j->timed_out) j->failed_rank = r;
    if (!*failing) {
        *failing = 1;
        abort_job(j);
    }
}

void mpirun_wait(mpirun_job *j)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    double deadline = j->o->timeout > 0 ? now_s() + j->o->timeout : 0;
    double kill_at = 0;   /* nonzero: SIGKILL whatever lives at this time */
    int failing = 0, termed = 0;
    while (j->live > 0) {
        struct timespec ts = {0, (j->hydra ? 0 : 50) * 1000000L};
        if (j->hydra && j->live) watch_hydra_ranks(j, 10);
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &ts);
        if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !j->signal_received) {
            j->signal_received = sig;
            fprintf(stderr, "mpirun: received %s: killing the job\n", strsignal(sig));
            failing = 1;
            abort_job(j);
        }
        if (j->violation_proc < 0 && !failing &&
            (j->violation_proc = tsim_engine_violation(j->eng, j->violation,
                                                       sizeof j->violation)) >= 0) {
            /* the engine stopped the job already: the ranks go as on a crash */
            failing = 1;
            abort_job(j);
        }
        int st;
        pid_t pid;
        if (j->unlinked) count_left(j); /* before reap: reap_hydra marks every rank gone */
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) reap(j, pid, st, &failing);
        unlink_when_attached(j);
        if (!j->deadlock && atomic_load(&j->seg->deadlock)) {
            /* the engine released every waiter; give them time to exit */
            j->deadlock = 1;
            if (!kill_at) kill_at = now_s() + GRACE_S;
        }
        if (deadline && !j->timed_out && now_s() > deadline) {
            j->timed_out = 1;
            fprintf(stderr, "mpirun: timeout after %g s: killing the job\n", j->o->timeout);
            failing = 1;
            abort_job(j);
        }
        if (failing && !termed) {
            signal_live(j, SIGTERM);
            termed = 1;
            if (!kill_at) kill_at = now_s() + GRACE_S;
        }
        if (kill_at && now_s() > kill_at) signal_live(j, SIGKILL);
    }
    unlink_when_attached(j);
}
