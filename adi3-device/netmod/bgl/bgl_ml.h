/* bglemu CH4 netmod "bgl": the netmod's state over bglemu's own layers.
 * Included only by the netmod's .c files, so the rest of MPICH never sees
 * bglemu's headers (they come from PREFIX/include/bglemu). */
#ifndef BGL_ML_H_INCLUDED
#define BGL_ML_H_INCLUDED

#include "messagelayer/ml.h"
#include "collectives/coll.h"

/* What the netmod puts in front of MPIDIG's header in every message:
 * the handler id, padded so that MPIDIG's header stays 8-byte aligned. */
#define MPIDI_BGL_PREFIX 8

typedef enum { MPIDI_BGL_CLOCK_NONE, MPIDI_BGL_CLOCK_CPUTIME } MPIDI_BGL_clock_mode;

/* The application's MPI call under way, as the preloaded wrappers tell it
 * (bgl_clock.c): a wait (MPI_Wait, MPI_Waitall) may take up an advance the
 * call before it left stopped, and a wait or a blocking point-to-point
 * call (MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Recv), whose last act is its
 * wait, may leave one (bgl_am.c, MPIDI_BGL_end_advance). */
typedef enum { MPIDI_BGL_CALL_OTHER, MPIDI_BGL_CALL_BLOCKING, MPIDI_BGL_CALL_WAIT } MPIDI_BGL_call_kind;

/* A rendezvous that arrived before its receive was posted: ml_accept(token)
 * once MPIDIG matches it (bgl_am.c). */
typedef struct MPIDI_BGL_deferred {
    struct MPIDI_BGL_deferred *next;
    MPIR_Request *rreq;
    unsigned token;
    size_t len;
} MPIDI_BGL_deferred_t;

typedef struct {
    ml_ctx *ml;
    coll_ctx *coll;             /* torus collectives, NULL if unavailable */
    pl_proc *pp;
    const tsim_params *prm;
    ml_proto force;             /* BGLMPI_PROTOCOL: protocol of data messages, ML_AUTO */
    int empty_polls;            /* consecutive progress calls that moved nothing */
    MPIDI_BGL_deferred_t *deferred;
    int rx_inflight;            /* receptions whose data is still arriving */
    int ssend_acks;             /* synchronous sends whose acknowledgement is still to come */
    MPIDI_BGL_clock_mode clock;
    int hooked;                 /* the preloaded wrappers mark MPI's entry and exit */
    MPIDI_BGL_call_kind call;   /* the application's MPI call under way */
    int advance_left;           /* the last call left its advance stopped */
    uint64_t cpu_mark_ns;       /* thread CPU time when MPI last returned */
    uint64_t wall_mark_ns;      /* wall-clock time then */
    uint64_t cpu_read_ns;       /* what a thread CPU clock read costs */
} MPIDI_BGL_global_t;

extern MPIDI_BGL_global_t MPIDI_BGL_global;

/* Host CPU time between two MPI calls above which the application is
 * taken to have worked (cputime mode): its polls are not "empty in a row". */
#define MPIDI_BGL_APP_WORK_NS 2000
/* Gaps between MPI calls shorter than this are timed on the wall clock,
 * longer ones in thread CPU time (bgl_clock.c): a preemption, which takes
 * longer, is never charged. */
#define MPIDI_BGL_SHORT_GAP_NS 2000
/* What a short gap holds besides the application's work: reading the
 * clocks and crossing the wrappers, 40-80 ns on the reference host, more
 * just after the rank was woken (cold caches). Not charged: the clock's
 * resolution. */
#define MPIDI_BGL_GAP_SLACK_NS 100

/* Derived datatypes (bgl_dt.c): BGLMPI_DATATYPE, read per call. */
enum { MPIDI_BGL_DT_PACK, MPIDI_BGL_DT_ZEROCOPY, MPIDI_BGL_DT_MEMO };
int MPIDI_BGL_dt_mode(int *mode);
/* Charges cycles of datatype work to this rank (and its ddt_cycles). */
void MPIDI_BGL_dt_charge(uint64_t cycles);
/* Charges packing or unpacking bytes of count x dt: the walk over the type
 * and the copy. */
void MPIDI_BGL_dt_charge_copy(MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes);
/* A layout: count x dt at buf as segments, for the message layer. */
typedef struct {
    struct iovec *iov;
    size_t n, bytes;
    uint64_t key;               /* memo: the layout's identity (ml_msg.layout_key), else 0 */
} MPIDI_BGL_layout_t;
/* Translates (zerocopy) or looks up and translates on a miss (memo),
 * charging either. */
int MPIDI_BGL_dt_layout(const void *buf, MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes,
                        int mode, MPIDI_BGL_layout_t * out);
void MPIDI_BGL_dt_layout_free(MPIDI_BGL_layout_t * l);
int MPIDI_BGL_dt_commit_hook(MPIR_Datatype * dtp);
int MPIDI_BGL_dt_free_hook(MPIR_Datatype * dtp);
void MPIDI_BGL_dt_finalize(void);

/* Clock (bgl_clock.c): entering MPI charges the compute time spent since
 * MPI last returned (cputime mode); leaving marks the time. Called by the
 * preloaded wrappers (MPIDI_BGL_mpi_enter / _leave); the netmod's own
 * entry and exit (clock_enter / clock_leave) do it only without them. */
void MPIDI_BGL_clock_init(void);
void MPIDI_BGL_clock_enter(void);
void MPIDI_BGL_clock_leave(void);
/* Ends the advance the last MPI call left stopped (bgl_am.c), if any. */
void MPIDI_BGL_end_advance(void);
/* The job cannot go on (deadlock found by the engine, or mpirun aborts it). */
void MPIDI_BGL_job_aborted(const char *where) __attribute__((noreturn));

#endif /* BGL_ML_H_INCLUDED */
