/* The shared segment: created by the launcher (named, 0600, unique per job)
 * or anonymous for in-process runs, attached by ranks. */
#include "tsim.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tsim_build_id.h" /* generated: the Makefile's BUILD_ID_H */

size_t tsim_seg_bytes(int nnodes)
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
    r->cap = cap;
}

const char *tsim_build_id(void) { return TSIM_BUILD_ID; }

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
        p->vc_chunks < 2 * TSIM_MAX_CHUNKS || p->vc_chunks > TSIM_MAX_VC_CHUNKS ||
        p->link_cycles_per_byte == 0 || p->clock_mhz == 0) {
        snprintf(err, errlen, "parameters out of range: fifo_chunks %d..%d, vc_chunks %d..%d, "
                 "link_cycles_per_byte and clock_mhz > 0", TSIM_MAX_CHUNKS, TSIM_RING_SLOTS,
                 2 * TSIM_MAX_CHUNKS, TSIM_MAX_VC_CHUNKS);
        return NULL;
    }
    if (p->tree_fifo_packets < 1 || p->tree_fifo_packets > TSIM_TREE_SLOTS || p->tree_vc_packets < 1 ||
        p->tree_vc_packets > TSIM_TREE_SLOTS || p->tree_cycles_per_byte == 0) {
        snprintf(err, errlen, "parameters out of range: tree_fifo_packets and tree_vc_packets 1..%d, "
                 "tree_cycles_per_byte > 0", TSIM_TREE_SLOTS);
        return NULL;
    }
    size_t sz = tsim_seg_bytes(g.nnodes);
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
    snprintf(s->build, sizeof s->build, "%s", tsim_build_id());
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
    if (strncmp(s->build, tsim_build_id(), sizeof s->build) != 0) {
        snprintf(err, errlen, "machine segment %s is bglemu build %.*s, this program build %s: "
                 "relink it (make mpich) or run its own build's mpirun", name,
                 (int)sizeof s->build, s->build, tsim_build_id());
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

/* ---- who may write what (docs/torus-sim.md) ---------------------------- */
_Static_assert(offsetof(tsim_seg, engine_bell) % TSIM_PAGE == 0, "the bell starts a page");
_Static_assert(offsetof(tsim_seg, procs) == offsetof(tsim_seg, engine_bell) + TSIM_PAGE,
               "the bell has its page to itself");
_Static_assert(sizeof(tsim_proc) % TSIM_PAGE == 0 && offsetof(tsim_proc, eng) % TSIM_PAGE == 0,
               "a processor is whole pages, its engine part the last");

/* The processor slot of cpu 1 of proc's node serves proc as its
 * coprocessor when proc is cpu 0 and no rank runs there. */
static int coproc_of(const tsim_seg *s, int proc)
{
    if (proc % TSIM_CPUS != 0) return -1;
    for (int r = 0; r < s->geom.nranks && r < TSIM_MAX_PROCS; r++)
        if (s->rank_proc[r] == proc + 1) return -1;
    return proc + 1;
}

int tsim_seg_protect(tsim_seg *s, int proc, char *err, size_t errlen)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || TSIM_PAGE % pg != 0) return 0; /* larger host pages: unprotected */
    size_t own = offsetof(tsim_proc, eng);
    int co = coproc_of(s, proc);
    if (mprotect(s, s->size, PROT_READ) != 0 ||
        mprotect((void *)&s->engine_bell, TSIM_PAGE, PROT_READ | PROT_WRITE) != 0 ||
        mprotect(&s->procs[proc], own, PROT_READ | PROT_WRITE) != 0 ||
        (co >= 0 && mprotect(&s->procs[co], own, PROT_READ | PROT_WRITE) != 0)) {
        snprintf(err, errlen, "cannot protect the machine segment: mprotect: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int tsim_seg_where(const tsim_seg *s, uint64_t off, char *buf, size_t len)
{
    static const struct { size_t at; const char *what; } hdr[] = {
        {offsetof(tsim_seg, params), "segment header"}, /* (end of a part, the part) */
        {offsetof(tsim_seg, geom), "parameters"},
        {offsetof(tsim_seg, done), "geometry"},
        {offsetof(tsim_seg, rank_proc), "simulated-time horizon and job flags"},
        {offsetof(tsim_seg, mapping), "rank map"},
        {offsetof(tsim_seg, engine_bell), "mapping name"},
        {offsetof(tsim_seg, procs), "engine bell and wake requests"},
    };
    if (off < offsetof(tsim_seg, procs)) {
        const char *w = "segment header";
        for (size_t i = 0; i < sizeof hdr / sizeof *hdr; i++)
            if (off < hdr[i].at) { w = hdr[i].what; break; }
        snprintf(buf, len, "the machine's %s", w);
        return -1;
    }
    uint64_t rel = off - offsetof(tsim_seg, procs);
    int proc = (int)(rel / sizeof(tsim_proc));
    size_t in = (size_t)(rel % sizeof(tsim_proc));
    if (proc >= s->geom.nnodes * TSIM_CPUS) {
        snprintf(buf, len, "the end of the machine segment");
        return -1;
    }
    size_t ring = sizeof(tsim_ring);
    if (in >= offsetof(tsim_proc, eng))
        snprintf(buf, len, "engine page");
    else if (in >= offsetof(tsim_proc, rec))
        snprintf(buf, len, "reception FIFO %zu", (in - offsetof(tsim_proc, rec)) / ring);
    else if (in >= offsetof(tsim_proc, inj))
        snprintf(buf, len, "injection FIFO %zu", (in - offsetof(tsim_proc, inj)) / ring);
    else if (in >= offsetof(tsim_proc, handoff))
        snprintf(buf, len, "hand-off to the engine");
    else
        snprintf(buf, len, "clock and state");
    return proc;
}
