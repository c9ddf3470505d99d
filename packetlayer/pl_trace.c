/* Timeline trace, rank side (pl_trace.h): each processor of this process
 * maps its own region of mpirun's trace object and appends records there. */
#include "pl_trace.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pl_trace_live;

/* A process holds at most the two processors of one node (CO: the rank and
 * its coprocessor thread; VN: one rank each): slot = cpu. */
typedef struct tslot {
    pl_trace_buf *b;
    int index;
    uint32_t *sent, *got; /* messages to / from each rank so far */
    uint32_t coll[PLT_COLL_N];
} tslot;

static tslot slots[TSIM_CPUS];
static const pl_proc *rank_pp; /* the first processor opened here */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1; /* kept: a coprocessor attaches after mpirun removed the name */

void pl_trace_attach(pl_proc *pp)
{
    const char *name = getenv("BGLEMU_TRACE");
    if (!name || !*name) return;
    pthread_mutex_lock(&lock);
    if (trace_fd < 0) trace_fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    long pg = sysconf(_SC_PAGESIZE);
    pl_trace_head h;
    if (trace_fd < 0 || pread(trace_fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        h.magic != PL_TRACE_MAGIC || (int)h.nprocs <= pp->index || !h.region ||
        h.region % (uint64_t)pg) {
        pthread_mutex_unlock(&lock);
        fprintf(stderr, "bglemu: BGLEMU_TRACE=%s: not a trace of this job; not tracing\n", name);
        return;
    }
    void *m = mmap(NULL, h.region, PROT_READ | PROT_WRITE, MAP_SHARED, trace_fd,
                   (off_t)((uint64_t)pg + (uint64_t)pp->index * h.region));
    pl_trace_buf *b = m == MAP_FAILED ? NULL : m;
    if (b && (b->magic != PL_TRACE_MAGIC || !b->cap ||
              sizeof *b + b->cap * sizeof(pl_trace_rec) > h.region)) {
        munmap(m, h.region); /* not traced (--trace-ranks), or damaged */
        b = NULL;
    }
    tslot *s = &slots[pp->cpu];
    if (b) {
        /* the counters off the heap: tracing must move no buffer of the
         * program's (simulated results follow their addresses, docs/mpi.md,
         * "A reproducible address space"; mmap hands out whole pages) */
        size_t n = b->nranks ? b->nranks : 1;
        void *c = mmap(NULL, 2 * n * sizeof *s->sent, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c == MAP_FAILED) {
            munmap(m, h.region);
            b = NULL;
        } else {
            s->sent = c;
            s->got = s->sent + n;
        }
    }
    if (b) {
        s->b = b;
        s->index = pp->index;
        pl_trace_live = 1;
    }
    if (!rank_pp) rank_pp = pp;
    pthread_mutex_unlock(&lock);
}

static pl_trace_buf *buf_of(const pl_proc *pp)
{
    const tslot *s = &slots[pp->cpu];
    return s->b && s->index == pp->index ? s->b : NULL;
}

void pl_trace_put(const pl_proc *pp, unsigned kind, unsigned sub, uint64_t t0, uint64_t t1,
                  int peer, uint64_t a, uint32_t n, uint32_t x)
{
    pl_trace_buf *b = buf_of(pp);
    if (!b || t1 < b->from || t0 > b->to) return;
    /* one writer per region: the processor's own thread */
    uint64_t i = atomic_load_explicit(&b->n, memory_order_relaxed);
    if (i >= b->cap) {
        atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
        return;
    }
    b->rec[i] = (pl_trace_rec){t0, t1, a, peer, n, x, (uint16_t)kind, (uint16_t)sub};
    atomic_store_explicit(&b->n, i + 1, memory_order_release);
}

void pl_trace_msg(const pl_proc *pp, unsigned kind, unsigned proto, uint64_t t0, uint64_t t1,
                  int peer, uint64_t bytes)
{
    pl_trace_buf *b = buf_of(pp);
    if (!b || peer < 0 || (uint32_t)peer >= b->nranks) return;
    /* counted in or out of the window: the n-th message of a pair is the
     * same message on both sides */
    tslot *s = &slots[pp->cpu];
    uint32_t k = kind == PLT_SEND ? s->sent[peer]++ : s->got[peer]++;
    pl_trace_put(pp, kind, proto, t0, t1, peer, bytes, k, 0);
}

uint64_t pl_trace_clock(void)
{
    const pl_proc *pp = rank_pp;
    return pp && buf_of(pp) ? pl_now(pp) : UINT64_MAX;
}

void pl_trace_mpi(unsigned call, uint64_t t0, int peer, uint64_t bytes, int comm_size)
{
    const pl_proc *pp = rank_pp;
    if (!pp || t0 == UINT64_MAX || call >= PL_TRACE_MPI_N) return;
    uint64_t t1 = pl_now(pp);
    pl_trace_put(pp, PLT_MPI, call, t0, t1 < t0 ? t0 : t1, peer, bytes, 0,
                 comm_size < 0 ? 0 : (uint32_t)comm_size);
}

uint32_t pl_trace_count(const pl_proc *pp, unsigned sub)
{
    return buf_of(pp) && sub < PLT_COLL_N ? slots[pp->cpu].coll[sub]++ : 0;
}
