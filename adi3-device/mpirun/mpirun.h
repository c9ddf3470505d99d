/* mpirun: the launcher that owns the emulated machine for one job. */
#ifndef MPIRUN_H
#define MPIRUN_H

#include <stdio.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include "messagelayer/ml.h"
#include "torus-sim/tsim.h"

/* A rank's pid as the engine froze it when it attached (tsim_proc.eng.pid:
 * a page the rank cannot write), its own word before that. */
static inline int mpirun_pid(const tsim_proc *p)
{
    int pid = atomic_load(&p->eng.pid);
    return pid > 0 ? pid : p->pid;
}

/* Exit statuses (docs/mpirun.md). */
enum {
    MPIRUN_OK = 0,
    MPIRUN_RANK_FAILED = 1, /* a rank exited non-zero or was killed */
    MPIRUN_USAGE = 2,       /* bad options or mapping: nothing was launched */
    MPIRUN_DEADLOCK = 3,
    MPIRUN_TIMEOUT = 124,   /* as timeout(1) */
};

typedef enum { MPIRUN_AUTO, MPIRUN_HYDRA, MPIRUN_FORK } mpirun_launcher;

typedef struct mpirun_opts {
    int np;
    int cpus;             /* 1 CO, 2 VN */
    int dim[3], have_shape;
    int torus[3];         /* per dimension: 1 wrap-around links, 0 mesh */
    const char *mapspec;  /* order or file; "XYZT" by default */
    char **env;           /* -env NAME=VALUE, in order */
    int nenv;
    tsim_params params;
    const char *report;
    const char *heatmap;  /* link-utilization text heatmap, "-" for stderr */
    int progress;         /* engine progress line every this many wall seconds, 0: off */
    double timeout;       /* wall-clock seconds, 0: none */
    const char *clock;    /* BGLEMU_CLOCK for MPI ranks: none or cputime */
    const char *protocol; /* BGLMPI_PROTOCOL, or NULL */
    mpirun_launcher launcher;
    /* timeline trace (docs/trace.md) */
    const char *trace;          /* --trace FILE.json, or NULL */
    const char *trace_ranks;    /* --trace-ranks LIST, NULL: every rank */
    uint64_t trace_from, trace_to; /* --trace-window FROM:TO, cycles */
    uint64_t trace_max;         /* --trace-max EVENTS */
    uint64_t trace_interval;    /* --trace-interval CYCLES: link sampling */
    char **argv;          /* PROGRAM ARGS... */
} mpirun_opts;

/* Parses the command line; prints one "mpirun: ..." line and exits
 * MPIRUN_USAGE on a bad option, prints the help and exits 0 on --help. */
void mpirun_parse(int argc, char **argv, mpirun_opts *o);
void mpirun_usage(FILE *f);
/* Prints "mpirun: <fmt>" and exits MPIRUN_USAGE (only before launching). */
void mpirun_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Where a job's wall time goes (BGLEMU_TIMES=1: one line at the end;
 * docs/mpirun.md, "Start and end"): host seconds from mpirun's start to
 * each moment, 0 while it has not come. */
enum {
    MPIRUN_T_MACHINE,  /* segment created, engine running: ranks start now */
    MPIRUN_T_ATTACHED, /* every rank attached (MPI_Init's netmod init) */
    MPIRUN_T_FIRST_LEFT, /* the first rank left the machine (MPI_Finalize) */
    MPIRUN_T_LAST_LEFT,  /* every rank left */
    MPIRUN_T_REAPED,   /* every rank process (and hydra) gone */
    MPIRUN_T_JOINED,   /* the engine finished */
    MPIRUN_T_DONE,     /* report written, machine removed */
    MPIRUN_NT
};

/* One job: the machine segment, the engine, the rank processes. */
typedef struct mpirun_job {
    const mpirun_opts *o;
    const char *path;     /* resolved program path */
    ml_map map;
    tsim_geom g;
    tsim_seg *seg;
    tsim_engine *eng;
    tsim_result res;
    int engine_started;
    const char *hydra;    /* mpiexec.hydra that starts the ranks, or NULL (fork) */
    const char *wtime_lib; /* preloaded into MPI ranks: MPI_Wtime in simulated time */
    const char *coll_json; /* CH4's collective selection: bcast/alltoall to the netmod */
    pid_t hydra_pid;      /* its pid while it runs */
    int hydra_status;
    int first_dead;       /* hydra: first rank seen dead without leaving the machine, -1 */
    int first_dead_running; /* hydra: the same among ranks that were running, -1 */
    int *pidfd;           /* hydra: per rank, -1 not yet opened, -2 not watched */
    int pidfd_next;       /* hydra: every rank below has its pidfd opened (or -2) */
    int pidfd_ep;         /* hydra: the epoll set of the pidfds, -1 */
    struct epoll_event *pidfd_ev; /* scratch for epoll_wait */
    pid_t *pid;           /* per rank, 0 once reaped or never started (fork) */
    int *status;          /* per rank wait status */
    int *reaped;
    int live;             /* started and not yet reaped */
    int unlinked;         /* shm name removed (every rank attached) */
    /* how the job ended */
    int failed_rank;      /* first rank that failed, -1 */
    uint64_t abort_ns;    /* CLOCK_MONOTONIC when mpirun raised the abort flag, 0 */
    int violation_proc;   /* processor the engine caught breaking the segment's rules, -1 */
    char violation[160];  /* what it did (tsim_engine_violation) */
    int signal_received;  /* SIGINT/SIGTERM/SIGHUP to mpirun, 0 */
    int timed_out;
    int deadlock;
    struct mpirun_trace *trace; /* --trace: the ranks' buffers (mpirun_trace.c) */
    const char *trace_lib;      /* preloaded into MPI ranks first when tracing, or NULL */
    double t0, t[MPIRUN_NT];    /* mpirun's start and its moments (MPIRUN_T_*) */
    int left;                   /* ranks seen to have left the machine */
} mpirun_job;

/* Records moment k (MPIRUN_T_*) the first time it is reached. */
void mpirun_mark(mpirun_job *j, int k);

/* Starts every rank; returns 0, or -1 after printing why (the ranks started
 * so far are then torn down by mpirun_wait). */
int mpirun_spawn(mpirun_job *j);
/* Waits for the ranks, handling crashes, signals, deadlock and the timeout;
 * returns when every started rank has been reaped. */
void mpirun_wait(mpirun_job *j);
/* The rank whose own record (tsim_proc.fate_*) shows it failed first: the
 * earliest fatal signal, else the earliest exit before leaving the machine
 * (under fork, only a non-zero one); records made after mpirun aborted the
 * job are not causes. -1 if no rank recorded one. */
int mpirun_culprit(const mpirun_job *j);

/* Removes shared-memory object shm_name (as shm_open names it) if mpirun
 * dies of a fatal signal (mpirun_fatal.c); up to four names. */
void mpirun_fatal_unlinks(const char *shm_name);

/* What the host must give the job (memory, /dev/shm, processes, open
 * files), before anything is created: one line naming the limit and the
 * numbers, exit MPIRUN_USAGE (mpirun_limits.c). */
void mpirun_limits(const mpirun_job *j);

/* --trace (mpirun_trace.c). Checks the rank list against -np: one line and
 * exit MPIRUN_USAGE if it names a rank that does not exist. */
void mpirun_trace_check(const mpirun_opts *o);
/* 1 if path names an OTF2 archive (FILE.otf2) rather than a JSON file. */
int mpirun_trace_otf2(const char *path);
/* Creates the ranks' trace buffers (a shm object of its own, 0600) and
 * starts the engine's link sampler; 0, or -1 with the reason in err. */
int mpirun_trace_setup(mpirun_job *j, char *err, size_t len);
/* The BGLEMU_TRACE=name assignment for the ranks' environment. */
const char *mpirun_trace_env(const mpirun_job *j);
/* Removes the object's name (the ranks have attached, or the job ends). */
void mpirun_trace_unlink(mpirun_job *j);
/* After the run: merges the ranks' records and the link samples into f
 * (Chrome trace-event JSON), or, f NULL, into the OTF2 archive --trace
 * names; says on stderr when the trace was cut. */
int mpirun_trace_write(mpirun_job *j, FILE *f);
void mpirun_trace_free(mpirun_job *j);

#endif
