/* The shared segment: created by the launcher (named, 0600, unique per job)
 * or anonymous for in-process runs, attached by ranks. */
#include "tsim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t seg_size(int nnodes)
{
    size_t sz = sizeof(tsim_seg) + (size_t)nnodes * TSIM_CPUS * sizeof(tsim_proc);
    long pg = sysconf(_SC_PAGESIZE);
    return (sz + pg - 1) / pg * pg;
}

static void ring_init(tsim_ring *r, uint32_t cap)
{
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->used, 0);
    atomic_init(&r->t_free, 0);
    r->cap = cap;
    r->seen = 0;
}

tsim_seg *tsim_seg_create(const tsim_geom *gin, const tsim_params *p, int named,
                          char *err, size_t errlen)
{
    tsim_geom g = *gin;
    for (int i = 0; i < 3; i++) {
        if (g.dim[i] < 1 || g.dim[i] > TSIM_MAX_DIM) {
            snprintf(err, errlen, "dimension %d of the shape is %d, must be 1..%d", i, g.dim[i],
                     TSIM_MAX_DIM);
            return NULL;
        }
    }
    if (g.cpus < 1 || g.cpus > TSIM_CPUS) {
        snprintf(err, errlen, "cpus per node must be 1 or 2");
        return NULL;
    }
    g.nnodes = g.dim[0] * g.dim[1] * g.dim[2];
    if (g.nnodes * TSIM_CPUS > TSIM_MAX_PROCS) {
        snprintf(err, errlen, "machine too large: %d nodes", g.nnodes);
        return NULL;
    }
    if (g.nranks < 0 || g.nranks > g.nnodes * g.cpus) {
        snprintf(err, errlen, "%d ranks do not fit %d nodes x %d cpus", g.nranks, g.nnodes, g.cpus);
        return NULL;
    }
    if (p->fifo_chunks < TSIM_MAX_CHUNKS || p->fifo_chunks > TSIM_RING_SLOTS ||
        p->vc_chunks < 2 * TSIM_MAX_CHUNKS || p->link_cycles_per_byte == 0 || p->clock_mhz == 0) {
        snprintf(err, errlen, "parameters out of range: fifo_chunks %d..%d, vc_chunks >= %d, "
                 "link_cycles_per_byte and clock_mhz > 0", TSIM_MAX_CHUNKS, TSIM_RING_SLOTS,
                 2 * TSIM_MAX_CHUNKS);
        return NULL;
    }
    if (p->tree_fifo_packets < 1 || p->tree_fifo_packets > TSIM_TREE_SLOTS || p->tree_vc_packets < 1 ||
        p->tree_vc_packets > TSIM_TREE_SLOTS || p->tree_cycles_per_byte == 0) {
        snprintf(err, errlen, "parameters out of range: tree_fifo_packets and tree_vc_packets 1..%d, "
                 "tree_cycles_per_byte > 0", TSIM_TREE_SLOTS);
        return NULL;
    }
    size_t sz = seg_size(g.nnodes);
    char name[64] = "";
    void *mem;
    if (named) {
        static int counter;
        int fd = -1;
        for (int tries = 0; tries < 100 && fd < 0; tries++) {
            snprintf(name, sizeof name, "/bglemu.%u.%d.%d", (unsigned)getuid(), (int)getpid(),
                     counter++);
            fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
            if (fd < 0 && errno != EEXIST) break;
        }
        if (fd < 0) {
            snprintf(err, errlen, "shm_open %s: %s", name, strerror(errno));
            return NULL;
        }
        if (ftruncate(fd, (off_t)sz) != 0) {
            snprintf(err, errlen, "ftruncate %s: %s", name, strerror(errno));
            close(fd);
            shm_unlink(name);
            return NULL;
        }
        mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    } else {
        mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    }
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "mmap of %zu bytes: %s", sz, strerror(errno));
        if (named) shm_unlink(name);
        return NULL;
    }
    tsim_seg *s = mem; /* fresh mappings are zeroed */
    s->size = sz;
    strcpy(s->name, name);
    s->params = *p;
    s->geom = g;
    for (int i = 0; i < TSIM_MAX_PROCS; i++) s->rank_proc[i] = -1;
    for (int i = 0; i < g.nnodes * TSIM_CPUS; i++) {
        tsim_proc *pr = &s->procs[i];
        pr->rank = -1;
        for (int f = 0; f < TSIM_NINJ; f++) ring_init(&pr->inj[f], (uint32_t)p->fifo_chunks);
        for (int f = 0; f < TSIM_NREC; f++) ring_init(&pr->rec[f], (uint32_t)p->fifo_chunks);
        pr->tinj.cap = pr->trec.cap = (uint32_t)p->tree_fifo_packets;
    }
    atomic_thread_fence(memory_order_seq_cst);
    s->magic = TSIM_MAGIC;
    return s;
}

tsim_seg *tsim_seg_attach(const char *name, char *err, size_t errlen)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot attach machine segment %s: %s", name, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(tsim_seg)) {
        snprintf(err, errlen, "machine segment %s is truncated", name);
        close(fd);
        return NULL;
    }
    void *mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "mmap %s: %s", name, strerror(errno));
        return NULL;
    }
    tsim_seg *s = mem;
    if (s->magic != TSIM_MAGIC || s->size != (size_t)st.st_size) {
        snprintf(err, errlen, "%s is not a bglemu machine segment of this version", name);
        munmap(mem, (size_t)st.st_size);
        return NULL;
    }
    return s;
}

void tsim_seg_detach(tsim_seg *s)
{
    if (s) munmap(s, s->size);
}

void tsim_seg_destroy(tsim_seg *s)
{
    if (!s) return;
    if (s->name[0]) shm_unlink(s->name);
    munmap(s, s->size);
}
