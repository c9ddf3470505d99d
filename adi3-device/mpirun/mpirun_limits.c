/* What the host must give a job, checked before anything is created
 * (issue 26; docs/mpirun.md, "Limits"): a request this host cannot run
 * fails at once, with one line naming the limit and the numbers, instead
 * of part way through the start-up (a fork refused at the 900th rank, a
 * rank killed by SIGBUS when it first touches a page of the segment that
 * /dev/shm cannot back, the OOM killer choosing a process).
 *
 * The figures per rank are measured (docs/mpirun.md): the memory a rank
 * adds to the host, the tasks (processes and threads) and descriptors it
 * costs. Each is what a rank needs at least, so only what is certain to
 * fail is refused: a job that grows later (its own buffers) may still run
 * short, but no job that would have run is stopped. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "adi3-device/mpirun/mpirun.h"

/* Host memory a rank adds, measured (docs/mpirun.md, "Limits"): an MPI
 * rank's private pages 1.3 MiB, its page tables 84 KiB, a kernel stack
 * per thread; a message-layer program's 0.1 MiB and 40 KiB. The shared
 * libraries' pages (7.5 MiB of an MPI rank's 8.9 MiB resident set) exist
 * once. And the engine's own memory per processor in mpirun (13 KiB at
 * 4,096 processors). */
#define MEM_MPI_RANK   (1536ull << 10)
#define MEM_PLAIN_RANK (256ull << 10)
#define MEM_ENGINE_PROC (16ull << 10)
/* Descriptors: mpirun's own, and a pidfd per MPI rank it watches. */
#define FDS_BASE 16

static double mib(uint64_t b) { return (double)b / (1 << 20); }

/* MemAvailable in /proc/meminfo, bytes; UINT64_MAX if unknown. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    uint64_t kb = UINT64_MAX;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb == UINT64_MAX ? kb : kb << 10;
}

static uint64_t read_u64(const char *path)
{
    FILE *f = fopen(path, "r");
    uint64_t v = UINT64_MAX;
    if (f && fscanf(f, "%" SCNu64, &v) != 1) v = UINT64_MAX;
    if (f) fclose(f);
    return v;
}

/* Room left under this process's memory cgroup limit (v2 memory.max, v1
 * memory.limit_in_bytes), bytes; UINT64_MAX if none. *where names it. */
static uint64_t cgroup_room(char *where, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4096];
    uint64_t room = UINT64_MAX;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) continue;
        char lim[4600], use[4600];
        if (a == line + 1 && line[0] == '0' && b == a + 1) { /* v2: "0::/path" */
            snprintf(lim, sizeof lim, "/sys/fs/cgroup%s/memory.max", b + 1);
            snprintf(use, sizeof use, "/sys/fs/cgroup%s/memory.current", b + 1);
        } else if (!strncmp(a + 1, "memory:", 7)) {
            snprintf(lim, sizeof lim, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", b + 1);
            snprintf(use, sizeof use, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", b + 1);
        } else {
            continue;
        }
        uint64_t l = read_u64(lim), u = read_u64(use);
        if (l >= (1ull << 60) || u == UINT64_MAX) continue; /* "max" or no limit */
        uint64_t r = l > u ? l - u : 0;
        if (r < room) room = r, snprintf(where, len, "%s", lim);
    }
    if (f) fclose(f);
    return room;
}

/* Tasks (processes and threads) whose real user is uid, and all tasks. */
static void count_tasks(uid_t uid, long *mine, long *all)
{
    *mine = *all = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long uid_real = -1, threads = 1;
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "Uid:", 4)) uid_real = strtol(line + 4, NULL, 10);
            else if (!strncmp(line, "Threads:", 8)) threads = strtol(line + 8, NULL, 10);
        }
        fclose(f);
        *all += threads;
        if (uid_real == (long)uid) *mine += threads;
    }
    if (d) closedir(d);
}

void mpirun_limits(const mpirun_job *j)
{
    const mpirun_opts *o = j->o;
    const tsim_geom *g = &j->g;
    char what[160];
    snprintf(what, sizeof what, "-np %d -mode %s -shape %dx%dx%d", o->np, o->cpus == 2 ? "VN" : "CO",
             g->dim[0], g->dim[1], g->dim[2]);
    int mpi = j->hydra != NULL;

    /* the machine's segment: a POSIX shm object, a file in /dev/shm */
    uint64_t seg = tsim_seg_bytes(g->nnodes);
    const char *shm = "/dev/shm";
    struct statvfs vfs;
    if (statvfs(shm, &vfs) == 0) {
        uint64_t room = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        if (room < seg)
            mpirun_die("%s: %s has %.1f MiB free, the machine's segment for %d nodes needs %.1f MiB "
                       "(%llu KiB a node): free or enlarge %s, or run fewer nodes",
                       what, shm, mib(room), g->nnodes, mib(seg),
                       (unsigned long long)(TSIM_CPUS * sizeof(tsim_proc) >> 10), shm);
    }

    /* memory: the ranks, the segment (shared, every page may be touched),
     * the engine */
    uint64_t per = mpi ? MEM_MPI_RANK : MEM_PLAIN_RANK;
    uint64_t need = (uint64_t)o->np * per + seg + (uint64_t)g->nnodes * TSIM_CPUS * MEM_ENGINE_PROC;
    char cg[4700] = "";
    uint64_t avail = mem_available(), room = cgroup_room(cg, sizeof cg);
    const char *fake = getenv("BGLEMU_MEM_AVAILABLE"); /* tests: pretend the host has this much */
    if (fake) avail = strtoull(fake, NULL, 10), room = UINT64_MAX;
    if (avail != UINT64_MAX && need > avail)
        mpirun_die("%s: needs at least %.0f MiB of memory (%.2f MiB a rank, %.1f MiB the segment), "
                   "the host has %.0f MiB available (MemAvailable%s): run fewer ranks",
                   what, mib(need), mib(per), mib(seg), mib(avail), fake ? ", BGLEMU_MEM_AVAILABLE" : "");
    if (room != UINT64_MAX && need > room)
        mpirun_die("%s: needs at least %.0f MiB of memory (%.2f MiB a rank, %.1f MiB the segment), "
                   "%.0f MiB are left under the memory cgroup's limit (%s): run fewer ranks",
                   what, mib(need), mib(per), mib(seg), mib(room), cg);

    /* tasks: every rank a process, a CO rank's coprocessor a thread of it;
     * mpiexec.hydra and its proxy; the engine's thread */
    long tasks = (long)o->np * (o->cpus == 2 ? 1 : 2) + (mpi ? 2 : 0) + 1, mine, all;
    count_tasks(getuid(), &mine, &all);
    struct rlimit rl;
    /* RLIMIT_NPROC binds every user but root (the kernel lets root's real
     * user fork past it) */
    if (getuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)(mine + tasks) > (uint64_t)rl.rlim_cur)
        mpirun_die("%s: needs %ld processes and threads, and user %u runs %ld already: ulimit -u "
                   "(RLIMIT_NPROC) is %llu; raise it (ulimit -u %ld) or run fewer ranks",
                   what, tasks, (unsigned)getuid(), mine, (unsigned long long)rl.rlim_cur, mine + tasks);
    long pid_max = (long)read_u64("/proc/sys/kernel/pid_max");
    long threads_max = (long)read_u64("/proc/sys/kernel/threads-max");
    long sys_max = pid_max > 0 && (threads_max <= 0 || pid_max < threads_max) ? pid_max : threads_max;
    if (sys_max > 0 && all + tasks > sys_max)
        mpirun_die("%s: needs %ld processes and threads, the host runs %ld of at most %ld "
                   "(kernel.%s): run fewer ranks",
                   what, tasks, all, sys_max, sys_max == pid_max ? "pid_max" : "threads-max");

    /* descriptors: a pidfd per MPI rank in mpirun (hydra's own are its
     * business: it inherits the limit raised here) */
    long fds = FDS_BASE + (mpi ? o->np : 0);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)fds > (uint64_t)rl.rlim_cur) {
        if (rl.rlim_max != RLIM_INFINITY && (uint64_t)fds > (uint64_t)rl.rlim_max)
            mpirun_die("%s: needs %ld open files, ulimit -n (RLIMIT_NOFILE) allows at most %llu: "
                       "run fewer ranks", what, fds, (unsigned long long)rl.rlim_max);
        rl.rlim_cur = rl.rlim_max; /* as far as allowed: hydra's proxy holds pipes per rank too */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}
