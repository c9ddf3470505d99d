/* mpirun --trace: the ranks record into buffers of their own (a shm object
 * apart from the machine segment, packetlayer/pl_trace.h), the engine
 * samples the links (torus-sim/tsim_trace.h); after the run mpirun merges
 * both into one Chrome trace-event JSON file in simulated time
 * (docs/trace.md). Everything here is a function of the records, so the
 * same -clock none job gives the same file byte for byte. The writers of
 * the file (mpirun_trace_json.c) and of an OTF2 archive
 * (mpirun_trace_otf2.c) are apart: they take the merged events as they
 * are, and OTF2 needs a library this build may lack. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpirun_trace.h"

struct mpirun_trace {
    char name[96];
    char env[120];
    void *mem;
    size_t size, region, page;
    int nprocs;
    int named;
    /* mpirun's own copy of what it gave each processor: a rank can write
     * its region's header, never these */
    uint64_t cap;
    unsigned char *on;  /* per processor: traced */
    uint64_t *n;        /* per processor: records taken from it */
};

const char *const mpirun_trace_coll_names[PLT_COLL_N] = {
    "?", "torus broadcast", "torus alltoall", "tree allreduce", "tree reduce", "tree broadcast",
    "global interrupt barrier",
};

const char *const mpirun_trace_mpi_names[PL_TRACE_MPI_N] = {
    "MPI_?",
#define PL_TRACE_MPI_NAME(n) "MPI_" #n,
    PL_TRACE_MPI_CALLS(PL_TRACE_MPI_NAME)
#undef PL_TRACE_MPI_NAME
};

/* --trace-ranks LIST into want[0..np) (NULL list: all); -1 on a bad list. */
static int parse_ranks(const char *list, int np, unsigned char *want, char *bad, size_t len)
{
    if (!list) {
        memset(want, 1, (size_t)np);
        return 0;
    }
    memset(want, 0, (size_t)np);
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *end;
        long lo = strtol(w, &end, 10), hi = lo;
        if (end == w) goto bad;
        if (*end == '-') {
            char *e2;
            hi = strtol(end + 1, &e2, 10);
            if (e2 == end + 1 || *e2) goto bad;
        } else if (*end) {
            goto bad;
        }
        if (lo < 0 || hi < lo || hi >= np) {
            snprintf(bad, len, "'%s': rank %ld is not in 0..%d", w, hi >= np ? hi : lo, np - 1);
            return -1;
        }
        for (long r = lo; r <= hi; r++) want[r] = 1;
        continue;
    bad:
        snprintf(bad, len, "'%s': want a rank or a range such as 4-7", w);
        return -1;
    }
    return 0;
}

int mpirun_trace_otf2(const char *path)
{
    size_t l = strlen(path);
    return l > 5 && !strcmp(path + l - 5, ".otf2");
}

void mpirun_trace_check(const mpirun_opts *o)
{
    if (!o->trace) return;
    if (mpirun_trace_otf2(o->trace)) mpirun_trace_otf2_check(o);
    unsigned char *want = malloc((size_t)o->np);
    char bad[256];
    if (!want) mpirun_die("out of memory");
    if (parse_ranks(o->trace_ranks, o->np, want, bad, sizeof bad) != 0)
        mpirun_die("--trace-ranks %s", bad);
    free(want);
}

int mpirun_trace_setup(mpirun_job *j, char *err, size_t len)
{
    const mpirun_opts *o = j->o;
    tsim_seg *s = j->seg;
    struct mpirun_trace *t = calloc(1, sizeof *t);
    unsigned char *want = malloc((size_t)o->np);
    if (!t || !want) {
        free(t);
        free(want);
        snprintf(err, len, "out of memory");
        return -1;
    }
    parse_ranks(o->trace_ranks, o->np, want, err, len);
    j->trace = t;
    t->page = (size_t)sysconf(_SC_PAGESIZE);
    t->nprocs = j->g.nnodes * TSIM_CPUS;
    t->on = calloc((size_t)t->nprocs, 1);
    t->n = calloc((size_t)t->nprocs, sizeof *t->n);
    if (!t->on || !t->n) {
        snprintf(err, len, "out of memory");
        free(want);
        return -1;
    }
    /* the earliest --trace-max events overall are kept when they are
     * merged: a processor holds up to four times its share (all of it on
     * small jobs, at least 65536), and says when it overflows. A region is
     * sparse until written. */
    uint64_t traced = 0;
    for (int r = 0; r < o->np; r++) traced += want[r] ? (uint64_t)(j->g.cpus == 1 ? 2 : 1) : 0;
    uint64_t cap = traced ? 4 * o->trace_max / traced : o->trace_max;
    if (cap < 65536) cap = 65536;
    if (cap > o->trace_max) cap = o->trace_max;
    t->cap = cap;
    t->region = (sizeof(pl_trace_buf) + cap * sizeof(pl_trace_rec) + t->page - 1) / t->page * t->page;
    t->size = t->page + t->region * (size_t)t->nprocs;
    snprintf(t->name, sizeof t->name, "%s.trace", s->name);
    int fd = shm_open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, len, "shm_open %s: %s", t->name, strerror(errno));
        free(want);
        return -1;
    }
    t->named = 1;
    mpirun_fatal_unlinks(t->name);
    if (ftruncate(fd, (off_t)t->size) != 0 ||
        (t->mem = mmap(NULL, t->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        snprintf(err, len, "%s of %zu bytes: %s", t->name, t->size, strerror(errno));
        t->mem = NULL;
        close(fd);
        free(want);
        return -1;
    }
    close(fd);
    pl_trace_head *h = t->mem;
    h->magic = PL_TRACE_MAGIC;
    h->region = t->region;
    h->nprocs = (uint32_t)t->nprocs;
    for (int r = 0; r < o->np; r++) {
        if (!want[r]) continue;
        int p = j->map.proc[r];
        /* in CO mode the coprocessor thread of the rank's node records too */
        for (int q = p; q <= p + (j->g.cpus == 1 && p % TSIM_CPUS == 0); q++) {
            pl_trace_buf *b = (pl_trace_buf *)((char *)t->mem + t->page + t->region * (size_t)q);
            b->cap = cap;
            b->from = o->trace_from;
            b->to = o->trace_to;
            b->nranks = (uint32_t)o->np;
            b->magic = PL_TRACE_MAGIC;
            t->on[q] = 1;
        }
    }
    free(want);
    snprintf(t->env, sizeof t->env, "BGLEMU_TRACE=%s", t->name);
    if (tsim_engine_trace_links(j->eng, o->trace_interval, o->trace_from, o->trace_to,
                                (size_t)o->trace_max) != 0) {
        snprintf(err, len, "out of memory for the link sampler");
        return -1;
    }
    return 0;
}

const char *mpirun_trace_env(const mpirun_job *j) { return j->trace ? j->trace->env : NULL; }

void mpirun_trace_unlink(mpirun_job *j)
{
    if (j->trace && j->trace->named) {
        shm_unlink(j->trace->name);
        j->trace->named = 0;
    }
}

void mpirun_trace_free(mpirun_job *j)
{
    if (!j->trace) return;
    mpirun_trace_unlink(j);
    if (j->trace->mem) munmap(j->trace->mem, j->trace->size);
    free(j->trace->on);
    free(j->trace->n);
    free(j->trace);
    j->trace = NULL;
}

/* ---- merging ---------------------------------------------------------- */
static uint64_t mhz;

static uint64_t to_ps(uint64_t cycles)
{
    return (uint64_t)((unsigned __int128)cycles * 1000000u / mhz);
}

static int cmp_tev(const void *a, const void *b)
{
    const tev *x = a, *y = b;
    if (x->ps != y->ps) return x->ps < y->ps ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->end_ps != y->end_ps) return x->end_ps > y->end_ps ? -1 : 1; /* parents first */
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* A message's two ends: (sender, receiver, number) */
typedef struct mend {
    int s, d;
    uint32_t n;
    size_t ev; /* index into the event array */
} mend;

static int cmp_mend(const void *a, const void *b)
{
    const mend *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    if (x->d != y->d) return x->d < y->d ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

static int cmp_cinst(const void *a, const void *b)
{
    const cinst *x = a, *y = b;
    if (x->gid != y->gid) return x->gid < y->gid ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->sub != y->sub) return x->sub < y->sub ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int cmp_cinst_time(const void *a, const void *b)
{
    const cinst *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return cmp_cinst(a, b);
}

static int rec_ok(const pl_trace_rec *r, int np)
{
    if (r->t1 < r->t0 || r->kind < PLT_BLOCK || r->kind >= PLT_NKINDS) return 0;
    if ((r->kind == PLT_SEND || r->kind == PLT_RECV) &&
        (r->peer < 0 || r->peer >= np || r->sub >= ML_NPROTO))
        return 0;
    if (r->kind == PLT_MPI && (r->sub == 0 || r->sub >= PL_TRACE_MPI_N)) return 0;
    if (r->kind == PLT_COLL && (r->sub == 0 || r->sub >= PLT_COLL_N)) return 0;
    return 1;
}

static void warn_cut(const mpirun_opts *o, uint64_t cut, uint64_t sdrop, uint64_t lost,
                     int lost_rank, uint64_t damaged);

int mpirun_trace_write(mpirun_job *j, FILE *f)
{
    struct mpirun_trace *t = j->trace;
    const mpirun_opts *o = j->o;
    int np = j->g.nranks;
    mhz = o->params.clock_mhz ? o->params.clock_mhz : 1;
    const int coll_pid = np + 1, link_pid = np + 2;

    /* the ranks' records */
    size_t nrec = 0;
    uint64_t lost = 0, damaged = 0;
    int lost_rank = -1;
    for (int p = 0; p < t->nprocs; p++) {
        pl_trace_buf *b = (pl_trace_buf *)((char *)t->mem + t->page + t->region * (size_t)p);
        if (!t->on[p]) continue;
        uint64_t n = atomic_load(&b->n);
        t->n[p] = n < t->cap ? n : t->cap; /* read once, bounded by what mpirun gave */
        nrec += t->n[p];
        uint64_t l = atomic_load(&b->lost);
        if (l && lost_rank < 0) lost_rank = j->seg->procs[p - (j->g.cpus == 1 ? p % TSIM_CPUS : 0)].rank;
        lost += l;
    }
    size_t nsamp = 0;
    uint64_t sdrop = 0;
    const tsim_link_sample *ls = tsim_engine_link_samples(j->eng, j->res.end_time, &nsamp, &sdrop);
    tev *ev = calloc(nrec * 2 + 1, sizeof *ev);
    mend *snd = calloc(nrec + 1, sizeof *snd), *rcv = calloc(nrec + 1, sizeof *rcv);
    cinst *ci = calloc(nrec + 1, sizeof *ci);
    if (!ev || !snd || !rcv || !ci) {
        free(ev), free(snd), free(rcv), free(ci);
        fprintf(stderr, "mpirun: --trace %s: out of memory\n", o->trace);
        return -1;
    }
    size_t ne = 0;
    for (int p = 0; p < t->nprocs; p++) {
        pl_trace_buf *b = (pl_trace_buf *)((char *)t->mem + t->page + t->region * (size_t)p);
        if (!t->on[p]) continue;
        uint64_t n = t->n[p];
        int main = p - (j->g.cpus == 1 ? p % TSIM_CPUS : 0);
        int rank = j->seg->procs[main].rank;
        if (rank < 0 || rank >= np) continue;
        for (uint64_t i = 0; i < n; i++) {
            const pl_trace_rec *r = &b->rec[i];
            if (!rec_ok(r, np)) {
                damaged++;
                continue;
            }
            ev[ne] = (tev){to_ps(r->t0), to_ps(r->t1), ne, E_SLICE, rank + 1, 1 + (p != main),
                           r, 0, NULL, rank, -1, 0};
            ne++;
        }
    }
    /* the earliest --trace-max events (slices; flows and counters follow them) */
    qsort(ev, ne, sizeof *ev, cmp_tev);
    uint64_t cut = 0;
    if (ne > o->trace_max) {
        cut = ne - o->trace_max;
        ne = (size_t)o->trace_max;
    }
    /* flows: the n-th message from s to d on both sides */
    size_t ns = 0, nr = 0, nc = 0;
    for (size_t i = 0; i < ne; i++) {
        const pl_trace_rec *r = ev[i].r;
        if (r->kind == PLT_SEND) snd[ns++] = (mend){ev[i].rank, r->peer, r->n, i};
        else if (r->kind == PLT_RECV) rcv[nr++] = (mend){r->peer, ev[i].rank, r->n, i};
        else if (r->kind == PLT_COLL)
            ci[nc++] = (cinst){r->x >> 16, r->n, r->sub, r->x & 0xffff, r->t0, r->t1, 1};
    }
    qsort(snd, ns, sizeof *snd, cmp_mend);
    qsort(rcv, nr, sizeof *rcv, cmp_mend);
    size_t base = ne, nflow = 0;
    for (size_t a = 0, b = 0; a < ns && b < nr;) {
        int c = cmp_mend(&snd[a], &rcv[b]);
        if (c < 0) a++;
        else if (c > 0) b++;
        else {
            const tev *se = &ev[snd[a].ev], *re = &ev[rcv[b].ev];
            /* ids: the sender's event order, so the file does not depend on qsort */
            ev[base + nflow++] = (tev){se->ps, se->ps, se->order, E_FLOW_S, se->pid, se->tid,
                                       se->r, snd[a].ev, NULL, se->rank, re->rank, se->r->t0};
            ev[base + nflow++] = (tev){re->ps, re->ps, se->order, E_FLOW_F, re->pid, re->tid,
                                       se->r, snd[a].ev, NULL, re->rank, se->rank, re->r->t0};
            a++, b++;
        }
    }
    /* torus collectives: one slice per instance, first entry to last exit,
     * on the first lane free at its start */
    qsort(ci, nc, sizeof *ci, cmp_cinst);
    size_t ncoll = 0;
    for (size_t a = 0; a < nc;) {
        cinst c = ci[a++];
        while (a < nc && ci[a].gid == c.gid && ci[a].seq == c.seq && ci[a].sub == c.sub) {
            if (ci[a].t0 < c.t0) c.t0 = ci[a].t0;
            if (ci[a].t1 > c.t1) c.t1 = ci[a].t1;
            c.ranks++;
            a++;
        }
        ci[ncoll++] = c;
    }
    qsort(ci, ncoll, sizeof *ci, cmp_cinst_time);
    uint64_t lane_end[64] = {0};
    int nlanes = 0;
    size_t total = base + nflow;
    tev *ev2 = realloc(ev, (total + ncoll + nsamp + 1) * sizeof *ev);
    if (!ev2) {
        free(ev), free(snd), free(rcv), free(ci);
        fprintf(stderr, "mpirun: --trace %s: out of memory\n", o->trace);
        return -1;
    }
    ev = ev2;
    for (size_t k = 0; k < ncoll; k++) {
        int lane = 0;
        while (lane < nlanes && lane_end[lane] > ci[k].t0) lane++;
        if (lane == 64) lane = 63; /* more than 64 at once: they share the last lane */
        if (lane == nlanes) nlanes++;
        lane_end[lane] = ci[k].t1;
        ev[total++] = (tev){to_ps(ci[k].t0), to_ps(ci[k].t1), k, E_COLL, coll_pid, lane + 1,
                            NULL, k, NULL, -1, -1, 0};
    }
    for (size_t k = 0; k < nsamp; k++)
        ev[total++] = (tev){to_ps(ls[k].t), to_ps(ls[k].t), k, E_COUNTER, link_pid, 0, NULL, 0,
                            &ls[k], -1, -1, 0};
    warn_cut(o, cut, sdrop, lost, lost_rank, damaged);
    /* which tracks exist, then everything in one time order */
    unsigned char *seen = calloc((size_t)np, 1);
    for (size_t i = 0; i < base && seen; i++) seen[ev[i].rank] |= (unsigned char)(1u << (ev[i].tid - 1));
    qsort(ev, total, sizeof *ev, cmp_tev);
    mpirun_trace_events m = {ev, total, ci, ncoll, nsamp, seen, mhz, cut, lost, sdrop,
                             coll_pid, link_pid};
    int rc = f ? mpirun_trace_write_json(j, f, &m) : mpirun_trace_write_otf2(j, &m);
    free(ev), free(snd), free(rcv), free(ci), free(seen);
    return rc;
}

static void warn_cut(const mpirun_opts *o, uint64_t cut, uint64_t sdrop, uint64_t lost,
                     int lost_rank, uint64_t damaged)
{
    if (cut || sdrop)
        fprintf(stderr, "mpirun: --trace %s: cut to the first %llu events (%llu more not "
                "written%s); narrow it with --trace-window, --trace-ranks or raise --trace-max\n",
                o->trace, (unsigned long long)o->trace_max, (unsigned long long)(cut + sdrop),
                sdrop ? ", link samples included" : "");
    if (lost)
        fprintf(stderr, "mpirun: --trace %s: %llu events did not fit the ranks' buffers (rank %d "
                "first): the trace ends early for them; raise --trace-max\n", o->trace,
                (unsigned long long)lost, lost_rank);
    if (damaged)
        fprintf(stderr, "mpirun: --trace %s: %llu damaged records left out\n", o->trace,
                (unsigned long long)damaged);
}
