/* MPI calls on the timeline (mpirun --trace, docs/trace.md): preloaded by
 * mpirun into MPI ranks, before everything else, only when tracing. Each
 * wrapper reads the rank's simulated clock, calls the next definition of
 * the same function (another preloaded wrapper, or libmpi's) and records
 * the call with its peer, bytes and communicator size into the rank's
 * trace buffer (packetlayer/pl_trace.c, inside libmpi). Reading the clock
 * and recording change no simulated time; without tracing this library is
 * not loaded at all. Nested MPI calls count once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "packetlayer/pl_trace.h"

/* From libmpi: the netmod's view of the clock (compute time charged first,
 * as the call's own entry would), else the packet layer's. */
uint64_t MPIDI_BGL_trace_clock(void) __attribute__((weak));
uint64_t pl_trace_clock(void) __attribute__((weak));
void pl_trace_mpi(unsigned call, uint64_t t0, int peer, uint64_t bytes, int comm_size)
    __attribute__((weak));

/* Nesting per thread, in a pthread key, not thread-local storage: a
 * library with TLS enlarges every thread's TLS block and vector and so
 * moves the program's buffers, and simulated results follow their
 * addresses (docs/mpi.md, "A reproducible address space"); tracing must
 * change no simulated number. A key below 32 allocates nothing. */
static pthread_key_t depth_key;
static pthread_once_t depth_once = PTHREAD_ONCE_INIT;

static void depth_init(void) { pthread_key_create(&depth_key, NULL); }

/* The thread's nesting after adding d. */
static unsigned depth_add(int d)
{
    pthread_once(&depth_once, depth_init);
    uintptr_t v = (uintptr_t)pthread_getspecific(depth_key) + (uintptr_t)(intptr_t)d;
    pthread_setspecific(depth_key, (void *)v);
    return (unsigned)v;
}

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "libbglemu-trace: %s not found in the MPI library\n", name);
        exit(127);
    }
    return f;
}

static uint64_t enter(void)
{
    if (depth_add(1) > 1 || !pl_trace_mpi) return UINT64_MAX;
    if (MPIDI_BGL_trace_clock) return MPIDI_BGL_trace_clock();
    return pl_trace_clock ? pl_trace_clock() : UINT64_MAX;
}

static uint64_t bytes_of(int count, MPI_Datatype t)
{
    int sz = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &sz) != MPI_SUCCESS || sz < 0)
        return 0;
    return (uint64_t)count * (uint64_t)sz;
}

static int size_of(MPI_Comm c)
{
    int n = 0;
    if (c == MPI_COMM_NULL || PMPI_Comm_size(c, &n) != MPI_SUCCESS) return 0;
    return n;
}

/* A peer as a rank of MPI_COMM_WORLD (what the timeline's tracks are). */
static int world_rank(MPI_Comm c, int r)
{
    if (r < 0 || c == MPI_COMM_NULL) return -1;
    if (c == MPI_COMM_WORLD) return r;
    MPI_Group g, w;
    int out = -1;
    if (PMPI_Comm_group(c, &g) != MPI_SUCCESS) return -1;
    if (PMPI_Comm_group(MPI_COMM_WORLD, &w) == MPI_SUCCESS) {
        if (PMPI_Group_translate_ranks(g, 1, &r, w, &out) != MPI_SUCCESS || out == MPI_UNDEFINED)
            out = -1;
        PMPI_Group_free(&w);
    }
    PMPI_Group_free(&g);
    return out;
}

static void leave(unsigned call, uint64_t t0, int peer, uint64_t bytes, int size)
{
    if (depth_add(-1) == 0 && t0 != UINT64_MAX) pl_trace_mpi(call, t0, peer, bytes, size);
}

#define NEXT(name, ...) static int (*f)(__VA_ARGS__); if (!f) f = (int (*)(__VA_ARGS__))next(#name)

/* ---- point to point ---------------------------------------------------- */
#define SEND_LIKE(NAME)                                                                        \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c)  \
    {                                                                                          \
        NEXT(MPI_##NAME, const void *, int, MPI_Datatype, int, int, MPI_Comm);                 \
        uint64_t t0 = enter();                                                                 \
        int rc = f(buf, count, t, dest, tag, c);                                               \
        leave(PL_TRACE_MPI_##NAME, t0, t0 == UINT64_MAX ? -1 : world_rank(c, dest),           \
              t0 == UINT64_MAX ? 0 : bytes_of(count, t), t0 == UINT64_MAX ? 0 : size_of(c));  \
        return rc;                                                                             \
    }
SEND_LIKE(Send)
SEND_LIKE(Ssend)
SEND_LIKE(Rsend)
SEND_LIKE(Bsend)

#define ISEND_LIKE(NAME)                                                                       \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,  \
                   MPI_Request *req)                                                           \
    {                                                                                          \
        NEXT(MPI_##NAME, const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);  \
        uint64_t t0 = enter();                                                                 \
        int rc = f(buf, count, t, dest, tag, c, req);                                          \
        leave(PL_TRACE_MPI_##NAME, t0, t0 == UINT64_MAX ? -1 : world_rank(c, dest),           \
              t0 == UINT64_MAX ? 0 : bytes_of(count, t), t0 == UINT64_MAX ? 0 : size_of(c));  \
        return rc;                                                                             \
    }
ISEND_LIKE(Isend)
ISEND_LIKE(Issend)

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *req)
{
    NEXT(MPI_Irecv, void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    uint64_t t0 = enter();
    int rc = f(buf, count, t, src, tag, c, req);
    int on = t0 != UINT64_MAX;
    leave(PL_TRACE_MPI_Irecv, t0, on ? world_rank(c, src) : -1, on ? bytes_of(count, t) : 0,
          on ? size_of(c) : 0);
    return rc;
}

/* A reception's peer and size from its status (the source it matched). */
static void from_status(MPI_Comm c, const MPI_Status *st, MPI_Datatype t, int *peer, uint64_t *b)
{
    int n = 0;
    *peer = world_rank(c, st->MPI_SOURCE);
    *b = PMPI_Get_count(st, t, &n) == MPI_SUCCESS && n != MPI_UNDEFINED ? bytes_of(n, t) : 0;
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Recv, void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    MPI_Status mine;
    if (st == MPI_STATUS_IGNORE) st = &mine;
    uint64_t t0 = enter();
    int rc = f(buf, count, t, src, tag, c, st);
    int peer = -1;
    uint64_t b = 0;
    if (t0 != UINT64_MAX && rc == MPI_SUCCESS) from_status(c, st, t, &peer, &b);
    leave(PL_TRACE_MPI_Recv, t0, peer, b, t0 != UINT64_MAX ? size_of(c) : 0);
    return rc;
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st_, int dest, int stag, void *rb, int rc_,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Sendrecv, const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int,
         int, MPI_Comm, MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, c, st);
    int on = t0 != UINT64_MAX;
    leave(PL_TRACE_MPI_Sendrecv, t0, on ? world_rank(c, dest) : -1, on ? bytes_of(sc, st_) : 0,
          on ? size_of(c) : 0);
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest, int stag, int src,
                         int rtag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Sendrecv_replace, void *, int, MPI_Datatype, int, int, int, int, MPI_Comm,
         MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(buf, count, t, dest, stag, src, rtag, c, st);
    int on = t0 != UINT64_MAX;
    leave(PL_TRACE_MPI_Sendrecv_replace, t0, on ? world_rank(c, dest) : -1,
          on ? bytes_of(count, t) : 0, on ? size_of(c) : 0);
    return rc;
}

int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Probe, int, int, MPI_Comm, MPI_Status *);
    MPI_Status mine;
    if (st == MPI_STATUS_IGNORE) st = &mine;
    uint64_t t0 = enter();
    int rc = f(src, tag, c, st);
    int on = t0 != UINT64_MAX && rc == MPI_SUCCESS;
    leave(PL_TRACE_MPI_Probe, t0, on ? world_rank(c, st->MPI_SOURCE) : -1, 0, on ? size_of(c) : 0);
    return rc;
}

/* ---- completion -------------------------------------------------------- */
int MPI_Wait(MPI_Request *r, MPI_Status *st)
{
    NEXT(MPI_Wait, MPI_Request *, MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(r, st);
    leave(PL_TRACE_MPI_Wait, t0, -1, 0, 0);
    return rc;
}

int MPI_Waitall(int n, MPI_Request rs[], MPI_Status sts[])
{
    NEXT(MPI_Waitall, int, MPI_Request *, MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(n, rs, sts);
    leave(PL_TRACE_MPI_Waitall, t0, -1, 0, n);
    return rc;
}

int MPI_Waitany(int n, MPI_Request rs[], int *idx, MPI_Status *st)
{
    NEXT(MPI_Waitany, int, MPI_Request *, int *, MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(n, rs, idx, st);
    leave(PL_TRACE_MPI_Waitany, t0, -1, 0, n);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request rs[], int *outn, int idx[], MPI_Status sts[])
{
    NEXT(MPI_Waitsome, int, MPI_Request *, int *, int *, MPI_Status *);
    uint64_t t0 = enter();
    int rc = f(n, rs, outn, idx, sts);
    leave(PL_TRACE_MPI_Waitsome, t0, -1, 0, n);
    return rc;
}

/* ---- collectives ------------------------------------------------------- */
int MPI_Barrier(MPI_Comm c)
{
    NEXT(MPI_Barrier, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(c);
    leave(PL_TRACE_MPI_Barrier, t0, -1, 0, t0 != UINT64_MAX ? size_of(c) : 0);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    NEXT(MPI_Bcast, void *, int, MPI_Datatype, int, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(buf, count, t, root, c);
    int on = t0 != UINT64_MAX;
    leave(PL_TRACE_MPI_Bcast, t0, on ? world_rank(c, root) : -1, on ? bytes_of(count, t) : 0,
          on ? size_of(c) : 0);
    return rc;
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    NEXT(MPI_Reduce, const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, rb, count, t, op, root, c);
    int on = t0 != UINT64_MAX;
    leave(PL_TRACE_MPI_Reduce, t0, on ? world_rank(c, root) : -1, on ? bytes_of(count, t) : 0,
          on ? size_of(c) : 0);
    return rc;
}

#define REDUCE_LIKE(NAME)                                                                      \
    int MPI_##NAME(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c) \
    {                                                                                          \
        NEXT(MPI_##NAME, const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);           \
        uint64_t t0 = enter();                                                                 \
        int rc = f(sb, rb, count, t, op, c);                                                   \
        int on = t0 != UINT64_MAX;                                                             \
        leave(PL_TRACE_MPI_##NAME, t0, -1, on ? bytes_of(count, t) : 0, on ? size_of(c) : 0);  \
        return rc;                                                                             \
    }
REDUCE_LIKE(Allreduce)
REDUCE_LIKE(Scan)
REDUCE_LIKE(Exscan)

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcounts[], MPI_Datatype t, MPI_Op op,
                       MPI_Comm c)
{
    NEXT(MPI_Reduce_scatter, const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, rb, rcounts, t, op, c);
    uint64_t b = 0;
    int n = t0 != UINT64_MAX ? size_of(c) : 0;
    for (int i = 0; i < n; i++) b += bytes_of(rcounts[i], t);
    leave(PL_TRACE_MPI_Reduce_scatter, t0, -1, b, n);
    return rc;
}

/* sendcount of sendtype to every member (alltoall) or to one (the rest) */
#define GATHER_LIKE(NAME, PER_MEMBER)                                                          \
    int MPI_##NAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, \
                   MPI_Comm c)                                                                 \
    {                                                                                          \
        NEXT(MPI_##NAME, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm); \
        uint64_t t0 = enter();                                                                 \
        int rc = f(sb, sc, st, rb, rc_, rt, c);                                                \
        int n = t0 != UINT64_MAX ? size_of(c) : 0;                                             \
        leave(PL_TRACE_MPI_##NAME, t0, -1, n ? bytes_of(sc, st) * (PER_MEMBER ? (uint64_t)n : 1) : 0, n); \
        return rc;                                                                             \
    }
GATHER_LIKE(Alltoall, 1)
GATHER_LIKE(Allgather, 0)

#define ROOTED_LIKE(NAME)                                                                      \
    int MPI_##NAME(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt, \
                   int root, MPI_Comm c)                                                       \
    {                                                                                          \
        NEXT(MPI_##NAME, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int,      \
             MPI_Comm);                                                                        \
        uint64_t t0 = enter();                                                                 \
        int rc = f(sb, sc, st, rb, rc_, rt, root, c);                                          \
        int n = t0 != UINT64_MAX ? size_of(c) : 0;                                             \
        leave(PL_TRACE_MPI_##NAME, t0, n ? world_rank(c, root) : -1, n ? bytes_of(sc, st) : 0, n); \
        return rc;                                                                             \
    }
ROOTED_LIKE(Gather)
ROOTED_LIKE(Scatter)

int MPI_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb,
                  const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm c)
{
    NEXT(MPI_Alltoallv, const void *, const int *, const int *, MPI_Datatype, void *, const int *,
         const int *, MPI_Datatype, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, sc, sd, st, rb, rcs, rd, rt, c);
    int n = t0 != UINT64_MAX ? size_of(c) : 0;
    uint64_t b = 0;
    for (int i = 0; i < n && sb != MPI_IN_PLACE; i++) b += bytes_of(sc[i], st);
    leave(PL_TRACE_MPI_Alltoallv, t0, -1, b, n);
    return rc;
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                   const int displs[], MPI_Datatype rt, MPI_Comm c)
{
    NEXT(MPI_Allgatherv, const void *, int, MPI_Datatype, void *, const int *, const int *,
         MPI_Datatype, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, sc, st, rb, rcs, displs, rt, c);
    int n = t0 != UINT64_MAX ? size_of(c) : 0;
    leave(PL_TRACE_MPI_Allgatherv, t0, -1, n ? bytes_of(sc, st) : 0, n);
    return rc;
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                const int displs[], MPI_Datatype rt, int root, MPI_Comm c)
{
    NEXT(MPI_Gatherv, const void *, int, MPI_Datatype, void *, const int *, const int *,
         MPI_Datatype, int, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, sc, st, rb, rcs, displs, rt, root, c);
    int n = t0 != UINT64_MAX ? size_of(c) : 0;
    leave(PL_TRACE_MPI_Gatherv, t0, n ? world_rank(c, root) : -1, n ? bytes_of(sc, st) : 0, n);
    return rc;
}

int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb,
                 int rc_, MPI_Datatype rt, int root, MPI_Comm c)
{
    NEXT(MPI_Scatterv, const void *, const int *, const int *, MPI_Datatype, void *, int,
         MPI_Datatype, int, MPI_Comm);
    uint64_t t0 = enter();
    int rc = f(sb, scs, displs, st, rb, rc_, rt, root, c);
    int n = t0 != UINT64_MAX ? size_of(c) : 0;
    leave(PL_TRACE_MPI_Scatterv, t0, n ? world_rank(c, root) : -1, n ? bytes_of(rc_, rt) : 0, n);
    return rc;
}
