/* Timeline trace, rank side: what a processor did, in simulated time,
 * recorded into a buffer of its own for mpirun to merge (mpirun --trace,
 * docs/trace.md).
 *
 * mpirun creates one shared object per job (mode 0600, not the machine
 * segment) and names it in BGLEMU_TRACE: a header page, then one region
 * per processor. pl_open maps the region of the processor it opens, and
 * nothing else; a processor records only into its own region. Without
 * BGLEMU_TRACE nothing is mapped and every hook is one untaken branch:
 * tracing never changes what the simulation does, only what it remembers. */
#ifndef PL_TRACE_H
#define PL_TRACE_H

#include <stdint.h>

#include "pl.h"

#define PL_TRACE_MAGIC 0x42474c5452433031ull /* "BGLTRC01" */

enum pl_trace_kind {
    PLT_BLOCK = 1, /* blocked in the network: sub 0 a reception, 1 room to inject */
    PLT_SEND,      /* message layer: a message posted to peer (sub: protocol, a: bytes,
                      n: its number among this processor's messages to peer) */
    PLT_RECV,      /* message layer: a message from peer arrived (its upcall); n as PLT_SEND */
    PLT_COLL,      /* a torus collective (sub: PLT_COLL_*, n: its sequence number in the
                      group, x: group id << 16 | group size, a: bytes this rank sends) */
    PLT_MPI,       /* an MPI call (sub: PL_TRACE_MPI_*, peer, a: bytes, x: communicator size) */
    PLT_NKINDS
};

enum { PLT_COLL_BCAST = 1, PLT_COLL_A2A };

/* The MPI calls the preloaded tracing library wraps, in a fixed order: the
 * record carries the index. */
#define PL_TRACE_MPI_CALLS(X)                                                                  \
    X(Send) X(Ssend) X(Rsend) X(Bsend) X(Isend) X(Issend) X(Irecv) X(Recv) X(Sendrecv)       \
    X(Sendrecv_replace) X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Probe) X(Barrier)        \
    X(Bcast) X(Reduce) X(Allreduce) X(Alltoall) X(Alltoallv) X(Allgather) X(Allgatherv)      \
    X(Gather) X(Gatherv) X(Scatter) X(Scatterv) X(Reduce_scatter) X(Scan) X(Exscan)
enum {
    PL_TRACE_MPI_NONE = 0,
#define PL_TRACE_MPI_ENUM(n) PL_TRACE_MPI_##n,
    PL_TRACE_MPI_CALLS(PL_TRACE_MPI_ENUM)
#undef PL_TRACE_MPI_ENUM
    PL_TRACE_MPI_N
};

typedef struct pl_trace_rec {
    uint64_t t0, t1; /* simulated cycles: start and end (equal for an instant) */
    uint64_t a;      /* bytes */
    int32_t peer;    /* rank, -1 for none */
    uint32_t n;
    uint32_t x;
    uint16_t kind;   /* PLT_* */
    uint16_t sub;
} pl_trace_rec;

/* The object's first page. */
typedef struct pl_trace_head {
    uint64_t magic;
    uint64_t region;  /* bytes per processor region (page multiple) */
    uint32_t nprocs;  /* regions, by processor index */
    uint32_t resv;
} pl_trace_head;

/* One processor's region, at page (1 + proc * region / page). */
typedef struct pl_trace_buf {
    uint64_t magic;
    uint64_t cap;           /* records it holds; 0: this processor is not traced */
    uint64_t from, to;      /* window, cycles: records overlapping [from, to] are kept */
    uint32_t nranks;
    uint32_t resv;
    _Atomic uint64_t n;     /* records written */
    _Atomic uint64_t lost;  /* records in the window that did not fit */
    uint64_t resv2[2];
    pl_trace_rec rec[];
} pl_trace_buf;

/* Nonzero once a processor of this process is traced. */
extern int pl_trace_live;

/* Called by pl_open: maps pp's region if BGLEMU_TRACE names a trace. */
void pl_trace_attach(pl_proc *pp);
/* Records one event of processor pp (any thread may record for its own
 * processor). */
void pl_trace_put(const pl_proc *pp, unsigned kind, unsigned sub, uint64_t t0, uint64_t t1,
                  int peer, uint64_t a, uint32_t n, uint32_t x);
/* Message-layer sends and arrivals, numbered per peer (pairs them up). */
void pl_trace_msg(const pl_proc *pp, unsigned kind, unsigned proto, uint64_t t0, uint64_t t1,
                  int peer, uint64_t bytes);

/* The process's rank processor (the first pl_open), for the MPI wrappers:
 * its clock in cycles, UINT64_MAX when there is none or it is not traced. */
uint64_t pl_trace_clock(void);
void pl_trace_mpi(unsigned call, uint64_t t0, int peer, uint64_t bytes, int comm_size);

static inline int pl_tracing(void) { return __builtin_expect(pl_trace_live, 0); }

#endif
