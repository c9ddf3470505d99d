/* mpirun: validates the job, builds the machine (named segment + engine
 * thread), runs the ranks, reports, and removes everything it created on
 * every exit path. See docs/mpirun.md. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mpirun.h"
#include "../../collectives/coll.h"
#include "pictures/pic.h"

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mpirun_mark(mpirun_job *j, int k)
{
    if (!j->t[k]) j->t[k] = wall_s() - j->t0;
}

/* BGLEMU_TIMES=1: where the job's wall time went, one line */
static void print_times(const mpirun_job *j)
{
    const char *v = getenv("BGLEMU_TIMES");
    if (!v || strcmp(v, "1")) return;
    static const char *const name[MPIRUN_NT] = {"machine", "attached", "first left", "last left",
                                                "reaped", "engine joined", "done"};
    fprintf(stderr, "mpirun: host times (s):");
    for (int k = 0; k < MPIRUN_NT; k++) fprintf(stderr, "%s %s %.2f", k ? "," : "", name[k], j->t[k]);
    fputc('\n', stderr);
}

/* PROGRAM as execve needs it: a path, searched in PATH when it has no '/'. */
static char *resolve(const char *prog)
{
    struct stat st;
    if (strchr(prog, '/')) {
        if (stat(prog, &st) != 0) mpirun_die("%s: %s", prog, strerror(errno));
        if (!S_ISREG(st.st_mode) || access(prog, X_OK) != 0)
            mpirun_die("%s: not an executable file", prog);
        return strdup(prog);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char *cand = malloc(n + strlen(prog) + 3);
        if (!cand) mpirun_die("out of memory");
        sprintf(cand, "%.*s/%s", (int)n, n ? path : ".", prog);
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) return cand;
        free(cand);
        path += n + (path[n] == ':');
    }
    mpirun_die("%s: command not found in PATH", prog);
}

/* Is PROGRAM an MPI program (dynamically linked with MPICH's libmpi, or its
 * Fortran library)? Its dynamic string table names the library. */
static int links_libmpi(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    static const char *const names[] = {"libmpi.so.", "libmpifort.so.", "libmpich.so."};
    int found = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        found |= memmem(m, (size_t)st.st_size, names[i], strlen(names[i])) != NULL;
    munmap(m, (size_t)st.st_size);
    return found;
}

/* MPI programs start through MPICH's mpiexec.hydra, installed next to this
 * mpirun, with bglemu's MPI_Wtime (PREFIX/lib) preloaded. */
static void choose_launcher(mpirun_job *j)
{
    const mpirun_opts *o = j->o;
    if (o->launcher == MPIRUN_FORK || (o->launcher == MPIRUN_AUTO && !links_libmpi(j->path)))
        return;
    static char hydra[4096], wtime[4096], csel[4096];
    char self[3800];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) mpirun_die("cannot find mpirun's own directory (/proc/self/exe)");
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(hydra, sizeof hydra, "%s/mpiexec.hydra", self);
    snprintf(wtime, sizeof wtime, "%s/../lib/libbglemu-wtime.so", self);
    snprintf(csel, sizeof csel, "%s/../share/bglemu/ch4-coll.json", self);
    if (access(hydra, X_OK) != 0)
        mpirun_die("%s: not found: MPI programs need MPICH with the bgl netmod (make mpich)", hydra);
    if (access(wtime, R_OK) != 0)
        mpirun_die("%s: not found (make install)", wtime);
    if (access(csel, R_OK) != 0)
        mpirun_die("%s: not found (make install)", csel);
    j->hydra = hydra;
    j->wtime_lib = wtime;
    j->coll_json = csel;
    if (o->trace) { /* MPI calls on the timeline: wrappers preloaded before everything */
        static char tlib[4096];
        snprintf(tlib, sizeof tlib, "%s/../lib/libbglemu-trace.so", self);
        if (access(tlib, R_OK) == 0) j->trace_lib = tlib;
        else fprintf(stderr, "mpirun: --trace: %s not found (make mpich): MPI calls will not be "
                     "on the timeline\n", tlib);
    }
}

/* The mapping as the JSON report shows it: no quote, backslash or control
 * character can break the report. */
static void copy_mapping(char *dst, size_t len, const char *spec)
{
    size_t i = 0;
    for (; spec[i] && i + 1 < len; i++) {
        unsigned char c = (unsigned char)spec[i];
        dst[i] = (c < 32 || c == '"' || c == '\\' || c == 127) ? '?' : (char)c;
    }
    dst[i] = '\0';
}

static void describe_status(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
}

/* " writing into rank 0's reception FIFO 3, which it may only read" for a
 * rank that died writing into a protected page of the segment (its fate
 * record has the offset, pl_fate.c), "" otherwise. */
static void describe_fault(const mpirun_job *j, const tsim_proc *p, char *buf, size_t len)
{
    buf[0] = '\0';
    uint32_t kind = atomic_load(&p->fate_kind) & ~TSIM_FATE_CLOSED;
    if (kind != TSIM_FATE_SIGNAL || !p->fate_addr) return;
    char part[96];
    int proc = tsim_seg_where(j->seg, p->fate_addr - 1, part, sizeof part), r = -1;
    for (int q = 0; q < j->g.nranks && proc >= 0 && r < 0; q++)
        if (j->map.proc[q] == proc) r = q;
    if (proc < 0)
        snprintf(buf, len, " writing into %s, which it may only read", part);
    else if (r >= 0)
        snprintf(buf, len, " writing into rank %d's %s, which it may only read", r, part);
    else
        snprintf(buf, len, " writing into processor %d's %s, which it may only read", proc, part);
}

/* What a rank recorded of its own end (pl_fate.c), "" if nothing. */
static void describe_fate(const tsim_proc *p, char *buf, size_t len)
{
    uint32_t kind = atomic_load(&p->fate_kind) & ~TSIM_FATE_CLOSED;
    if (kind == TSIM_FATE_SIGNAL)
        snprintf(buf, len, "killed by signal %d (%s)", p->fate_signal, strsignal(p->fate_signal));
    else if (kind == TSIM_FATE_EXIT)
        snprintf(buf, len, "exited with status %d", p->fate_status & 0xff);
    else
        buf[0] = '\0';
}

static void report(const mpirun_job *j, FILE *f)
{
    const tsim_geom *g = &j->g;
    const tsim_params *p = &j->o->params;
    char conn[32];
    int nt = g->torus[0] + g->torus[1] + g->torus[2];
    if (nt == 3 || nt == 0)
        snprintf(conn, sizeof conn, "%s", nt ? "torus" : "mesh");
    else
        snprintf(conn, sizeof conn, "%s,%s,%s", g->torus[0] ? "torus" : "mesh",
                 g->torus[1] ? "torus" : "mesh", g->torus[2] ? "torus" : "mesh");
    fprintf(f, "mpirun: %d rank%s on %dx%dx%d %s, %s mode, mapping %s\n", g->nranks,
            g->nranks == 1 ? "" : "s", g->dim[0], g->dim[1], g->dim[2], conn,
            g->cpus == 2 ? "VN" : "CO", j->seg->mapping);
    fprintf(f, "mpirun: simulated time %llu cycles = %.3f us at %llu MHz; %llu packets delivered, "
               "%llu packet-hops; %.2f s wall\n",
            (unsigned long long)j->res.end_time, (double)j->res.end_time / (double)p->clock_mhz,
            (unsigned long long)p->clock_mhz, (unsigned long long)j->res.packets_delivered,
            (unsigned long long)j->res.packet_hops, j->res.wall_seconds);

    /* per rank: every clock for a small job, the spread for a large one */
    const tsim_seg *s = j->seg;
    uint64_t lo = UINT64_MAX, hi = 0, sum = 0, msgs[ML_NPROTO] = {0}, total = 0;
    int rlo = 0, rhi = 0, n = g->nranks;
    for (int r = 0; r < n; r++) {
        const tsim_proc *pr = &s->procs[j->map.proc[r]];
        uint64_t t = atomic_load(&pr->vt);
        if (t < lo) lo = t, rlo = r;
        if (t > hi) hi = t, rhi = r;
        sum += t;
        for (int k = 0; k < ML_NPROTO; k++) msgs[k] += atomic_load(&pr->msgs_sent[k]);
    }
    if (n <= 8) {
        fprintf(f, "mpirun: per rank (cycles):");
        for (int r = 0; r < n; r++)
            fprintf(f, " %d:%llu", r, (unsigned long long)atomic_load(&s->procs[j->map.proc[r]].vt));
        fputc('\n', f);
    } else {
        fprintf(f, "mpirun: per rank (cycles): min %llu (rank %d), mean %llu, max %llu (rank %d)\n",
                (unsigned long long)lo, rlo, (unsigned long long)(sum / (uint64_t)n),
                (unsigned long long)hi, rhi);
    }
    for (int k = 1; k < ML_NPROTO; k++) total += msgs[k];
    if (total) {
        fprintf(f, "mpirun: messages by protocol:");
        for (int k = 1; k < ML_NPROTO; k++)
            if (msgs[k])
                fprintf(f, " %s %llu (%.0f%%)", ml_proto_name((ml_proto)k),
                        (unsigned long long)msgs[k], 100.0 * (double)msgs[k] / (double)total);
        fputc('\n', f);
    }
    /* links: how many carried traffic, mean and busiest utilization */
    static const char *const dir[TSIM_NPORTS] = {"x+", "x-", "y+", "y-", "z+", "z-"};
    int links = 0, used = 0, bnode = 0, bport = 0;
    double usum = 0, umax = -1, span = j->res.end_time ? (double)j->res.end_time : 1;
    for (int node = 0; node < g->nnodes; node++)
        for (int port = 0; port < TSIM_NPORTS; port++) {
            if (tsim_neighbor(g, node, port) < 0) continue;
            const tsim_link_stats *l = tsim_engine_link(j->eng, node, port);
            double u = (double)l->busy_cycles / span;
            links++;
            used += l->packets > 0;
            usum += u;
            if (u > umax) umax = u, bnode = node, bport = port;
        }
    if (used) {
        int c[3];
        tsim_coords(g, bnode, c);
        fprintf(f, "mpirun: links: %d of %d carried packets; utilization mean %.1f%%, busiest %.1f%% "
                   "(%s of <%d,%d,%d>)\n", used, links, 100.0 * usum / links, 100.0 * umax, dir[bport],
                c[0], c[1], c[2]);
    }
}

int main(int argc, char **argv)
{
    mpirun_opts o;
    mpirun_parse(argc, argv, &o);
    mpirun_job j;
    memset(&j, 0, sizeof j);
    j.t0 = wall_s();
    j.o = &o;
    j.failed_rank = -1;
    j.first_dead = -1;
    j.first_dead_running = -1;
    j.violation_proc = -1;
    j.pidfd_ep = -1;
    j.path = resolve(o.argv[0]);
    choose_launcher(&j);

    /* ---- validate the machine and the mapping ---- */
    tsim_geom *g = &j.g;
    g->cpus = o.cpus;
    if (o.have_shape) {
        memcpy(g->dim, o.dim, sizeof g->dim);
    } else if (ml_shape_default(o.np, o.cpus, g->dim) != 0) {
        mpirun_die("-np %d: too many ranks for the largest machine (%d processors)", o.np,
                   TSIM_MAX_PROCS / TSIM_CPUS * o.cpus);
    }
    memcpy(g->torus, o.torus, sizeof g->torus);
    g->nnodes = g->dim[0] * g->dim[1] * g->dim[2];
    g->nranks = o.np;
    if (g->nnodes * TSIM_CPUS > TSIM_MAX_PROCS)
        mpirun_die("-shape %dx%dx%d: too large (at most %d nodes)", g->dim[0], g->dim[1],
                   g->dim[2], TSIM_MAX_PROCS / TSIM_CPUS);
    if (o.np > g->nnodes * o.cpus)
        mpirun_die("-np %d does not fit -shape %dx%dx%d in %s mode (%d processors)", o.np,
                   g->dim[0], g->dim[1], g->dim[2], o.cpus == 2 ? "VN" : "CO",
                   g->nnodes * o.cpus);
    char err[1024];
    if (ml_map_build(&j.map, o.mapspec, g, err, sizeof err) != 0) mpirun_die("%s", err);
    mpirun_limits(&j);
    FILE *rep = NULL, *heat = NULL;
    /* the format was checked with the options; "-" is always text */
    int heat_svg = o.heatmap && strcmp(o.heatmap, "-") &&
                   pic_heatmap_format(o.heatmap, err, sizeof err) == PIC_HEAT_SVG;
    char job[PIC_LABEL_MAX];
    pic_job_label(job, sizeof job, o.argv);
    if (o.report && !(rep = fopen(o.report, "w")))
        mpirun_die("--report %s: cannot open: %s", o.report, strerror(errno));
    if (o.heatmap && strcmp(o.heatmap, "-") && !(heat = fopen(o.heatmap, "w"))) {
        if (rep) fclose(rep), unlink(o.report);
        mpirun_die("--heatmap %s: cannot open: %s", o.heatmap, strerror(errno));
    }
    if (o.heatmap && !heat) heat = stderr;
    FILE *trace = NULL;
    /* an OTF2 archive is a directory of files, written at the end (checked with the options) */
    if (o.trace && !mpirun_trace_otf2(o.trace) && !(trace = fopen(o.trace, "w"))) {
        if (rep) fclose(rep), unlink(o.report);
        if (heat && heat != stderr) fclose(heat), unlink(o.heatmap);
        mpirun_die("--trace %s: cannot open: %s", o.trace, strerror(errno));
    }

    /* ---- from here on, everything created is removed on every path ---- */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old); /* before the engine thread: it inherits the mask */

    int rc = MPIRUN_OK;
    j.seg = tsim_seg_create(g, &o.params, 1, err, sizeof err);
    if (!j.seg) {
        fprintf(stderr, "mpirun: cannot create the machine: %s\n", err);
        if (rep) fclose(rep), unlink(o.report);
        if (heat && heat != stderr) fclose(heat), unlink(o.heatmap);
        if (trace) fclose(trace), unlink(o.trace);
        return MPIRUN_RANK_FAILED;
    }
    tsim_seg *s = j.seg;
    mpirun_fatal_unlinks(s->name);
    s->geom.nranks = o.np;
    s->progress_secs = (uint32_t)o.progress;
    copy_mapping(s->mapping, sizeof s->mapping, o.mapspec);
    for (int r = 0; r < o.np; r++) {
        int p = j.map.proc[r];
        s->rank_proc[r] = p;
        s->procs[p].rank = r;
        atomic_store(&s->procs[p].vt, 0);
        /* RUNNING before the engine starts: it must wait for every rank */
        atomic_store(&s->procs[p].state, TSIM_P_RUNNING);
    }
    j.pid = calloc((size_t)o.np, sizeof *j.pid);
    j.status = calloc((size_t)o.np, sizeof *j.status);
    j.reaped = calloc((size_t)o.np, sizeof *j.reaped);
    /* the loops ranks may hand the engine: every layer's */
    if (coll_engine_register() != 0) {
        fprintf(stderr, "mpirun: the layers' engine programs could not be registered\n");
        rc = MPIRUN_RANK_FAILED;
        goto out;
    }
    j.eng = tsim_engine_new(s);
    if (!j.pid || !j.status || !j.reaped || !j.eng) {
        fprintf(stderr, "mpirun: out of memory\n");
        rc = MPIRUN_RANK_FAILED;
        goto out;
    }
    if (o.trace && mpirun_trace_setup(&j, err, sizeof err) != 0) {
        fprintf(stderr, "mpirun: --trace %s: %s\n", o.trace, err);
        rc = MPIRUN_RANK_FAILED;
        goto out;
    }
    tsim_engine_plan_cores(j.eng);
    if (tsim_engine_start(j.eng) != 0) {
        fprintf(stderr, "mpirun: cannot start the engine thread\n");
        rc = MPIRUN_RANK_FAILED;
        goto out;
    }
    j.engine_started = 1;
    mpirun_mark(&j, MPIRUN_T_MACHINE);
    if (mpirun_spawn(&j) != 0) {
        atomic_store(&s->abort, 1);
        tsim_kick(s);
        j.failed_rank = -2; /* launch failure, already reported */
    }
    mpirun_wait(&j);
    mpirun_mark(&j, MPIRUN_T_REAPED);
    if (!j.hydra && j.failed_rank >= 0) {
        /* the first rank reaped with a failure may only have died of the
         * first one's (a peer gone, a full FIFO); the ranks' own records
         * order them (under hydra, reap_hydra did this) */
        int told = mpirun_culprit(&j);
        if (told >= 0) j.failed_rank = told;
    }

    /* every rank is gone: no processor may hold the engine back */
    for (int r = 0; r < o.np; r++) {
        tsim_proc *p = &s->procs[j.map.proc[r]];
        if (atomic_load(&p->state) != TSIM_P_EXITED) atomic_store(&p->state, TSIM_P_EXITED);
    }
    tsim_kick(s);
    tsim_engine_join(j.eng, &j.res);
    j.engine_started = 0;
    mpirun_mark(&j, MPIRUN_T_JOINED);
    if (j.res.deadlock) j.deadlock = 1;

    report(&j, stderr);
    if (rep) {
        tsim_engine_report_json_job(j.eng, &j.res, job, rep);
        if (fclose(rep) != 0) fprintf(stderr, "mpirun: --report %s: write failed\n", o.report);
        rep = NULL;
    }
    if (heat) {
        if (pic_run_heatmap(j.seg, j.eng, &j.res, job, heat_svg ? PIC_HEAT_SVG : PIC_HEAT_TEXT, heat) != 0)
            fprintf(stderr, "mpirun: --heatmap %s: out of memory\n", o.heatmap);
        if (heat != stderr && fclose(heat) != 0)
            fprintf(stderr, "mpirun: --heatmap %s: write failed\n", o.heatmap);
        heat = NULL;
    }
    if (o.trace) {
        mpirun_trace_write(&j, trace);
        if (trace && fclose(trace) != 0) fprintf(stderr, "mpirun: --trace %s: write failed\n", o.trace);
        trace = NULL;
    }
    char why[128];
    if (j.violation_proc < 0) /* caught while the last ranks left */
        j.violation_proc = tsim_engine_violation(j.eng, j.violation, sizeof j.violation);
    const char *verb = "corrupted its";
    char to[40] = "";
    for (int r = 0; j.violation_proc < 0 && r < o.np; r++) {
        /* or found by the rank in its own pages (pl_damaged), or a packet
         * it received intact and could not take (pl_bad_packet): its sender */
        const tsim_proc *p = &s->procs[j.map.proc[r]];
        uint32_t kind = atomic_load(&p->fate_kind) & ~TSIM_FATE_CLOSED;
        if ((kind != TSIM_FATE_CORRUPT && kind != TSIM_FATE_PEER) || mpirun_culprit(&j) != r)
            continue;
        j.violation_proc = j.map.proc[r];
        if (kind == TSIM_FATE_PEER && p->fate_status >= 0 && p->fate_status < g->nnodes * TSIM_CPUS) {
            j.violation_proc = p->fate_status;
            verb = "sent";
            snprintf(to, sizeof to, " rank %d", r);
        }
        snprintf(j.violation, sizeof j.violation, "%.*s", (int)sizeof p->fate_why, p->fate_why);
    }
    if (j.violation_proc >= 0) {
        /* the cause, whatever followed (ranks released with -1, hydra's
         * kills, the timeout): the rank that wrote it. In CO mode the
         * coprocessor's slot belongs to the rank of its node. */
        int vp = j.violation_proc, r = -1, co = 0, c[4];
        for (int q = 0; q < o.np && r < 0; q++)
            if (j.map.proc[q] == vp) r = q;
        for (int q = 0; q < o.np && r < 0; q++)
            if (j.map.proc[q] / TSIM_CPUS == vp / TSIM_CPUS) r = q, co = 1;
        if (r >= 0) {
            ml_map_coords(&j.map, g, r, c);
            fprintf(stderr, "mpirun: job failed: rank %d <%d,%d,%d,%d> (pid %d)%s %s%s %s\n",
                    r, c[0], c[1], c[2], c[3], mpirun_pid(&s->procs[vp]),
                    co ? ", on its coprocessor," : "", verb, to, j.violation);
        } else {
            fprintf(stderr, "mpirun: job failed: processor %d, which runs no rank, %s%s %s\n",
                    vp, verb, to, j.violation);
        }
        rc = MPIRUN_RANK_FAILED;
    } else if (j.signal_received) {
        fprintf(stderr, "mpirun: job killed: mpirun received %s\n", strsignal(j.signal_received));
        rc = 128 + j.signal_received;
    } else if (j.timed_out) {
        fprintf(stderr, "mpirun: job killed: wall-clock timeout of %g s\n", o.timeout);
        rc = MPIRUN_TIMEOUT;
    } else if (j.deadlock) {
        tsim_engine_print_deadlock(j.eng, stderr);
        fprintf(stderr, "mpirun: job failed: application deadlock\n");
        rc = MPIRUN_DEADLOCK;
    } else if (j.failed_rank >= 0 && !j.hydra) {
        int r = j.failed_rank, c[4];
        ml_map_coords(&j.map, g, r, c);
        describe_status(j.status[r], why, sizeof why);
        char fault[200];
        describe_fault(&j, &s->procs[j.map.proc[r]], fault, sizeof fault);
        fprintf(stderr, "mpirun: job failed: rank %d <%d,%d,%d,%d> (pid %d) %s%s\n", r, c[0], c[1],
                c[2], c[3], (int)j.pid[r], why, fault);
        rc = MPIRUN_RANK_FAILED;
    } else if (j.failed_rank >= 0 && j.hydra) {
        int r = j.failed_rank, c[4];
        ml_map_coords(&j.map, g, r, c);
        describe_status(j.hydra_status, why, sizeof why);
        const tsim_proc *p = &s->procs[j.map.proc[r]];
        int pid = mpirun_pid(p);
        char how[300];
        describe_fate(p, how, sizeof how);
        describe_fault(&j, p, how + strlen(how), sizeof how - strlen(how));
        if (pid && (atomic_load(&p->fate_kind) & TSIM_FATE_CLOSED))
            fprintf(stderr, "mpirun: job failed: rank %d <%d,%d,%d,%d> (pid %d) was %s after "
                    "MPI_Finalize; mpiexec.hydra %s\n", r, c[0], c[1], c[2], c[3], pid, how, why);
        else if (pid)
            fprintf(stderr, "mpirun: job failed: rank %d <%d,%d,%d,%d> (pid %d) did not reach "
                    "MPI_Finalize%s%s; mpiexec.hydra %s\n", r, c[0], c[1], c[2], c[3], pid,
                    *how ? ": " : "", how, why);
        else
            fprintf(stderr, "mpirun: job failed: rank %d <%d,%d,%d,%d> never reached MPI_Init; "
                    "mpiexec.hydra %s\n", r, c[0], c[1], c[2], c[3], why);
        rc = MPIRUN_RANK_FAILED;
    } else if (j.failed_rank == -3) {
        describe_status(j.hydra_status, why, sizeof why);
        fprintf(stderr, "mpirun: job failed: mpiexec.hydra %s\n", why);
        rc = MPIRUN_RANK_FAILED;
    } else if (j.failed_rank == -2) {
        rc = MPIRUN_RANK_FAILED;
    } else if (j.hydra) {
        fprintf(stderr, "mpirun: all %d ranks exited 0\n", o.np);
    } else {
        for (int r = 0; r < o.np; r++)
            if (!WIFEXITED(j.status[r]) || WEXITSTATUS(j.status[r]) != 0) rc = MPIRUN_RANK_FAILED;
        if (rc == MPIRUN_OK) fprintf(stderr, "mpirun: all %d ranks exited 0\n", o.np);
    }
out:
    if (j.engine_started) { /* only on a launch failure before any rank ran */
        atomic_store(&s->abort, 1);
        tsim_kick(s);
        tsim_engine_join(j.eng, NULL);
    }
    if (rep) fclose(rep), unlink(o.report);
    if (heat && heat != stderr) fclose(heat), unlink(o.heatmap);
    if (trace) fclose(trace), unlink(o.trace);
    mpirun_trace_free(&j);
    tsim_engine_free(j.eng);
    tsim_seg_destroy(s); /* unlinks again: harmless if already gone */
    ml_map_free(&j.map);
    free(j.pid);
    free(j.status);
    free(j.reaped);
    if (j.pidfd)
        for (int r = 0; r < o.np; r++)
            if (j.pidfd[r] >= 0) close(j.pidfd[r]);
    free(j.pidfd);
    if (j.pidfd_ep >= 0) close(j.pidfd_ep);
    free(j.pidfd_ev);
    free((char *)j.path);
    free(o.env);
    sigprocmask(SIG_SETMASK, &old, NULL);
    mpirun_mark(&j, MPIRUN_T_DONE);
    print_times(&j);
    return rc;
}
