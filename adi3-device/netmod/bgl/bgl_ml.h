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
    MPIDI_BGL_clock_mode clock;
    uint64_t cpu_mark_ns;       /* thread CPU time when the netmod last returned */
} MPIDI_BGL_global_t;

extern MPIDI_BGL_global_t MPIDI_BGL_global;

/* Host CPU time between two netmod calls above which the application is
 * taken to have worked (cputime mode): its polls are not "empty in a row". */
#define MPIDI_BGL_APP_WORK_NS 2000

/* Clock (bgl_clock.c): entering the netmod charges the compute time spent
 * since it last returned (cputime mode); leaving marks the time. */
void MPIDI_BGL_clock_init(void);
void MPIDI_BGL_clock_enter(void);
void MPIDI_BGL_clock_leave(void);
/* The job cannot go on (deadlock found by the engine, or mpirun aborts it). */
void MPIDI_BGL_job_aborted(const char *where) __attribute__((noreturn));

#endif /* BGL_ML_H_INCLUDED */
