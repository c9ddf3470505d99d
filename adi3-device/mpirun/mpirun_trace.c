/* mpirun --trace: the ranks record into buffers of their own (a shm object
 * apart from the machine segment, packetlayer/pl_trace.h), the engine
 * samples the links (torus-sim/tsim_trace.h); after the run mpirun merges
 * both into one Chrome trace-event JSON file in simulated time
 * (docs/trace.md). Everything here is a function of the records, so the
 * same -clock none job gives the same file byte for byte. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpirun.h"
#include "packetlayer/pl_trace.h"
#include "torus-sim/tsim_report.h"
#include "torus-sim/tsim_trace.h"

#ifdef BGLEMU_OTF2
#include <otf2/otf2.h>
#endif

struct mpirun_trace {
    char name[96];
    char env[120];
    void *mem;
    size_t size, region, page;
    int nprocs;
    int named;
};

static const char *const mpi_names[PL_TRACE_MPI_N] = {
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
    if (mpirun_trace_otf2(o->trace)) {
#ifdef BGLEMU_OTF2
        /* OTF2 writes DIR/NAME.otf2, DIR/NAME.def and DIR/NAME/: all new */
        char dir[4096], arch[4096];
        snprintf(dir, sizeof dir, "%s", o->trace);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        snprintf(arch, sizeof arch, "%.*s", (int)strlen(o->trace) - 5, o->trace);
        struct stat st;
        if (access(slash ? (*dir ? dir : "/") : ".", W_OK) != 0)
            mpirun_die("--trace %s: cannot write in %s: %s", o->trace, slash ? (*dir ? dir : "/") : ".",
                       strerror(errno));
        if (stat(o->trace, &st) == 0 || stat(arch, &st) == 0)
            mpirun_die("--trace %s: %s exists (an OTF2 archive is written new: remove %s, %s.def "
                       "and %s/)", o->trace, stat(o->trace, &st) == 0 ? o->trace : arch, o->trace,
                       arch, arch);
#else
        mpirun_die("--trace %s: OTF2 output is not available in this build (libotf2-trace-dev); "
                   "use FILE.json", o->trace);
#endif
    }
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
    /* the earliest --trace-max events overall are kept when they are
     * merged: a processor holds up to four times its share (all of it on
     * small jobs, at least 65536), and says when it overflows. A region is
     * sparse until written. */
    uint64_t traced = 0;
    for (int r = 0; r < o->np; r++) traced += want[r] ? (uint64_t)(j->g.cpus == 1 ? 2 : 1) : 0;
    uint64_t cap = traced ? 4 * o->trace_max / traced : o->trace_max;
    if (cap < 65536) cap = 65536;
    if (cap > o->trace_max) cap = o->trace_max;
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
    free(j->trace);
    j->trace = NULL;
}

/* ---- merging ---------------------------------------------------------- */
/* Time in picoseconds (integers: a child slice never ends after its parent
 * in the file, whatever the rounding), printed as microseconds. */
typedef struct tev {
    uint64_t ps, end_ps;
    uint64_t order;     /* ties: metadata, slices (longer first), flows, counters */
    int kind;           /* EV_* below */
    int pid, tid;
    const pl_trace_rec *r;
    uint64_t id;        /* flow id, or collective lane data */
    const tsim_link_sample *ls;
    int rank;
    int peer;           /* flows: the rank at the other end */
    uint64_t cyc;       /* flows: this end's time in cycles */
} tev;

enum { E_SLICE, E_FLOW_S, E_FLOW_F, E_COLL, E_COUNTER };

static uint64_t mhz;

static uint64_t to_ps(uint64_t cycles)
{
    return (uint64_t)((unsigned __int128)cycles * 1000000u / mhz);
}

static void put_us(FILE *f, uint64_t ps)
{
    fprintf(f, "%llu.%06llu", (unsigned long long)(ps / 1000000u),
            (unsigned long long)(ps % 1000000u));
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 32 || c == 127) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
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

typedef struct cinst {
    uint32_t gid, seq, sub, size;
    uint64_t t0, t1;
    int ranks;
} cinst;

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
    if (r->kind == PLT_COLL && r->sub != PLT_COLL_BCAST && r->sub != PLT_COLL_A2A) return 0;
    return 1;
}

static const char *const dirs[TSIM_NPORTS] = {"x+", "x-", "y+", "y-", "z+", "z-"};

static void slice_name(FILE *f, const pl_trace_rec *r)
{
    char nm[128];
    switch (r->kind) {
    case PLT_BLOCK:
        snprintf(nm, sizeof nm, "%s", r->sub ? "blocked: injection FIFO full" : "blocked in the network");
        break;
    case PLT_SEND:
        snprintf(nm, sizeof nm, "send %s %llu B to %d", ml_proto_name((ml_proto)r->sub),
                 (unsigned long long)r->a, r->peer);
        break;
    case PLT_RECV:
        snprintf(nm, sizeof nm, "recv %s %llu B from %d", ml_proto_name((ml_proto)r->sub),
                 (unsigned long long)r->a, r->peer);
        break;
    case PLT_COLL:
        snprintf(nm, sizeof nm, "torus %s", r->sub == PLT_COLL_BCAST ? "broadcast" : "alltoall");
        break;
    default:
        snprintf(nm, sizeof nm, "%s", mpi_names[r->sub]);
    }
    json_str(f, nm);
}

static void slice_args(FILE *f, const pl_trace_rec *r)
{
    fprintf(f, "{\"cycles\":%llu,\"end_cycles\":%llu", (unsigned long long)r->t0,
            (unsigned long long)r->t1);
    switch (r->kind) {
    case PLT_SEND:
    case PLT_RECV:
        fprintf(f, ",\"%s\":%d,\"bytes\":%llu,\"protocol\":\"%s\",\"message\":%u",
                r->kind == PLT_SEND ? "to" : "from", r->peer, (unsigned long long)r->a,
                ml_proto_name((ml_proto)r->sub), r->n);
        break;
    case PLT_COLL:
        fprintf(f, ",\"sequence\":%u,\"group\":%u,\"group_size\":%u", r->n, r->x >> 16,
                r->x & 0xffff);
        break;
    case PLT_MPI:
        if (r->peer >= 0) fprintf(f, ",\"peer\":%d", r->peer);
        fprintf(f, ",\"bytes\":%llu,\"comm_size\":%u", (unsigned long long)r->a, r->x);
        break;
    }
    fputc('}', f);
}

static const char *cat_of(int kind)
{
    switch (kind) {
    case PLT_BLOCK: return "wait";
    case PLT_SEND:
    case PLT_RECV: return "ml";
    case PLT_COLL: return "coll";
    default: return "mpi";
    }
}

static void warn_cut(const mpirun_opts *o, uint64_t cut, uint64_t sdrop, uint64_t lost,
                     int lost_rank, uint64_t damaged);
#ifdef BGLEMU_OTF2
static int otf2_write(mpirun_job *j, const tev *ev, size_t n);
#endif

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
        if (b->magic != PL_TRACE_MAGIC || !b->cap) continue;
        uint64_t n = atomic_load(&b->n);
        nrec += n < b->cap ? n : b->cap;
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
        if (b->magic != PL_TRACE_MAGIC || !b->cap) continue;
        uint64_t n = atomic_load(&b->n);
        if (n > b->cap) n = b->cap;
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

#ifdef BGLEMU_OTF2
    if (!f) {
        int rc = otf2_write(j, ev, total);
        free(ev), free(snd), free(rcv), free(ci), free(seen);
        return rc;
    }
#endif
    /* ---- the file ---- */
    char job[TSIM_LABEL_MAX];
    tsim_job_label(job, sizeof job, o->argv);
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"job\":");
    json_str(f, job);
    fprintf(f, ",\"shape\":\"%dx%dx%d\",\"mode\":\"%s\",\"ranks\":%d,\"clock_mhz\":%llu,"
               "\"time_unit\":\"us of simulated time\",\"end_cycles\":%llu,"
               "\"link_interval_cycles\":%llu,\"events\":%zu,\"cut_events\":%llu,"
               "\"lost_events\":%llu,\"cut_link_samples\":%llu},\n\"traceEvents\":[\n",
            j->g.dim[0], j->g.dim[1], j->g.dim[2], j->g.cpus == 2 ? "VN" : "CO", np,
            (unsigned long long)mhz, (unsigned long long)j->res.end_time,
            (unsigned long long)o->trace_interval, total, (unsigned long long)cut,
            (unsigned long long)lost, (unsigned long long)sdrop);
    /* names of the tracks */
    int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
    for (int r = 0; r < np && seen; r++) {
        if (!seen[r]) continue;
        int c[4];
        ml_map_coords(&j->map, &j->g, r, c);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d "
                   "<%d,%d,%d,%d>\"}}", SEP(), r + 1, r, c[0], c[1], c[2], c[3]);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                r + 1, r);
        if (seen[r] & 1)
            fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":"
                       "\"cpu %d\"}}", r + 1, c[3]);
        if (seen[r] & 2)
            fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":2,\"args\":{\"name\":"
                       "\"coprocessor\"}}", r + 1);
    }
    free(seen);
    if (ncoll) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"torus "
                   "collectives\"}}", SEP(), coll_pid);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                coll_pid, np);
    }
    if (nsamp) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"links "
                   "(utilization, sampled every %llu cycles)\"}}", SEP(), link_pid,
                (unsigned long long)o->trace_interval);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                link_pid, np + 1);
    }
    for (size_t i = 0; i < total; i++) {
        const tev *e = &ev[i];
        if (e->kind == E_SLICE) {
            fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", SEP(), cat_of(e->r->kind));
            slice_name(f, e->r);
            fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":", e->pid, e->tid);
            put_us(f, e->ps);
            fputs(",\"dur\":", f);
            put_us(f, e->end_ps - e->ps);
            fputs(",\"args\":", f);
            slice_args(f, e->r);
            fputc('}', f);
        } else if (e->kind == E_FLOW_S || e->kind == E_FLOW_F) {
            fprintf(f, "%s{\"ph\":\"%s\",\"cat\":\"msg\",\"name\":\"%s %llu B\",\"id\":%llu,"
                       "\"pid\":%d,\"tid\":%d,\"ts\":", SEP(), e->kind == E_FLOW_S ? "s" : "f",
                    ml_proto_name((ml_proto)e->r->sub), (unsigned long long)e->r->a,
                    (unsigned long long)e->id + 1, e->pid, e->tid);
            put_us(f, e->ps);
            fputs(e->kind == E_FLOW_F ? ",\"bp\":\"e\"}" : "}", f);
        } else if (e->kind == E_COLL) {
            const cinst *c = &ci[e->id];
            fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"coll\",\"name\":\"%s (group %u, %u)\",\"pid\":%d,"
                       "\"tid\":%d,\"ts\":", SEP(), c->sub == PLT_COLL_BCAST ? "broadcast" : "alltoall",
                    c->gid, c->seq, e->pid, e->tid);
            put_us(f, e->ps);
            fputs(",\"dur\":", f);
            put_us(f, e->end_ps - e->ps);
            fprintf(f, ",\"args\":{\"cycles\":%llu,\"end_cycles\":%llu,\"group_size\":%u,"
                       "\"ranks_traced\":%d}}", (unsigned long long)c->t0, (unsigned long long)c->t1,
                    c->size, c->ranks);
        } else {
            const tsim_link_sample *s = e->ls;
            int c[3];
            tsim_coords(&j->g, (int)s->node, c);
            double u = s->len ? 100.0 * (double)s->busy / (double)s->len : 0.0;
            fprintf(f, "%s{\"ph\":\"C\",\"name\":\"%s <%d,%d,%d>\",\"pid\":%d,\"ts\":", SEP(),
                    dirs[s->port], c[0], c[1], c[2], e->pid);
            put_us(f, e->ps);
            fprintf(f, ",\"args\":{\"busy_pct\":%.3f,\"bytes\":%llu,\"packets\":%llu}}", u,
                    (unsigned long long)s->bytes, (unsigned long long)s->packets);
        }
    }
#undef SEP
    fputs("\n]}\n", f);
    free(ev), free(snd), free(rcv), free(ci);
    return 0;
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

#ifdef BGLEMU_OTF2
/* ---- OTF2 (--trace FILE.otf2): the same events for Score-P's and Vampir's
 * tools. Timestamps are the cycles themselves (timer resolution clock_mhz
 * MHz); one location per rank processor (cpu, coprocessor), regions by kind
 * (MPI_Send, send eager, blocked in the network, ...), the message-layer
 * messages as MpiSend/MpiRecv on MPI_COMM_WORLD (tag: the message's number
 * in its pair). The collectives track and the link counters are JSON only. */
static OTF2_FlushType pre_flush(void *u, OTF2_FileType t, OTF2_LocationRef l, void *c, bool final)
{
    (void)u, (void)t, (void)l, (void)c, (void)final;
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *u, OTF2_FileType t, OTF2_LocationRef l)
{
    (void)u, (void)t, (void)l;
    return 0;
}

typedef struct oloc {
    OTF2_EvtWriter *w;
    uint32_t sp;
    uint64_t end[64];
    uint32_t reg[64];
    uint64_t last;
} oloc;

/* Regions: 0..PL_TRACE_MPI_N-1 MPI calls, then these. */
enum { R_BLOCK = PL_TRACE_MPI_N, R_BLOCK_INJ, R_BCAST, R_A2A, R_SEND, R_RECV = R_SEND + ML_NPROTO,
       R_N = R_RECV + ML_NPROTO };

static uint32_t region_of(const pl_trace_rec *r)
{
    switch (r->kind) {
    case PLT_BLOCK: return r->sub ? R_BLOCK_INJ : R_BLOCK;
    case PLT_SEND: return R_SEND + r->sub;
    case PLT_RECV: return R_RECV + r->sub;
    case PLT_COLL: return r->sub == PLT_COLL_BCAST ? R_BCAST : R_A2A;
    default: return r->sub;
    }
}

static void pop_until(oloc *l, uint64_t t)
{
    while (l->sp && l->end[l->sp - 1] <= t) {
        l->sp--;
        OTF2_EvtWriter_Leave(l->w, NULL, l->end[l->sp], l->reg[l->sp]);
        l->last = l->end[l->sp];
    }
}

static int otf2_write(mpirun_job *j, const tev *ev, size_t n)
{
    const mpirun_opts *o = j->o;
    int np = j->g.nranks, nloc = 2 * np;
    char dir[4096], name[4096];
    snprintf(dir, sizeof dir, "%s", o->trace);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    snprintf(name, sizeof name, "%.*s", (int)strlen(base) - 5, base);
    if (slash) *slash = '\0';
    OTF2_Archive *a = OTF2_Archive_Open(slash ? (*dir ? dir : "/") : ".", name, OTF2_FILEMODE_WRITE,
                                        1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
                                        OTF2_COMPRESSION_NONE);
    oloc *loc = calloc((size_t)nloc, sizeof *loc);
    if (!a || !loc) {
        fprintf(stderr, "mpirun: --trace %s: cannot create the OTF2 archive\n", o->trace);
        if (a) OTF2_Archive_Close(a);
        free(loc);
        return -1;
    }
    OTF2_FlushCallbacks fc = {pre_flush, post_flush};
    OTF2_Archive_SetFlushCallbacks(a, &fc, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(a);
    OTF2_Archive_SetCreator(a, "bglemu mpirun --trace");
    OTF2_Archive_OpenEvtFiles(a);
    for (size_t i = 0; i < n; i++) {
        const tev *e = &ev[i];
        if (e->kind != E_SLICE && e->kind != E_FLOW_S && e->kind != E_FLOW_F) continue;
        int li = 2 * e->rank + (e->tid - 1);
        oloc *l = &loc[li];
        if (!l->w) l->w = OTF2_Archive_GetEvtWriter(a, (OTF2_LocationRef)li);
        if (e->kind == E_SLICE) {
            const pl_trace_rec *r = e->r;
            pop_until(l, r->t0);
            if (l->sp == 64) continue; /* deeper than any real nesting */
            OTF2_EvtWriter_Enter(l->w, NULL, r->t0, region_of(r) - 1);
            l->end[l->sp] = r->t1;
            l->reg[l->sp++] = region_of(r) - 1; /* OTF2 numbers definitions from 0 */
            l->last = r->t0;
        } else {
            /* the message: bytes and number from the send's record */
            const pl_trace_rec *r = e->r;
            pop_until(l, e->cyc);
            if (e->kind == E_FLOW_S)
                OTF2_EvtWriter_MpiSend(l->w, NULL, e->cyc, (uint32_t)e->peer, 0, r->n, r->a);
            else
                OTF2_EvtWriter_MpiRecv(l->w, NULL, e->cyc, (uint32_t)e->peer, 0, r->n, r->a);
            l->last = e->cyc;
        }
    }
    uint64_t nev[2 * TSIM_MAX_PROCS] = {0};
    for (int li = 0; li < nloc; li++) {
        oloc *l = &loc[li];
        if (!l->w) continue;
        pop_until(l, UINT64_MAX - 1);
        OTF2_EvtWriter_GetNumberOfEvents(l->w, &nev[li]);
        OTF2_Archive_CloseEvtWriter(a, l->w);
    }
    OTF2_Archive_CloseEvtFiles(a);
    OTF2_Archive_OpenDefFiles(a);
    for (int li = 0; li < nloc; li++)
        if (loc[li].w) OTF2_Archive_CloseDefWriter(a, OTF2_Archive_GetDefWriter(a, (OTF2_LocationRef)li));
    OTF2_Archive_CloseDefFiles(a);

    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(a);
    OTF2_GlobalDefWriter_WriteClockProperties(g, mhz * 1000000u, 0, j->res.end_time + 1, 0);
    uint32_t str = 0;
    OTF2_GlobalDefWriter_WriteString(g, str++, "");
    char buf[160];
    for (int rg = 1; rg < R_N; rg++) {
        if (rg < PL_TRACE_MPI_N) snprintf(buf, sizeof buf, "%s", mpi_names[rg]);
        else if (rg == R_BLOCK) snprintf(buf, sizeof buf, "blocked in the network");
        else if (rg == R_BLOCK_INJ) snprintf(buf, sizeof buf, "blocked: injection FIFO full");
        else if (rg == R_BCAST) snprintf(buf, sizeof buf, "torus broadcast");
        else if (rg == R_A2A) snprintf(buf, sizeof buf, "torus alltoall");
        else if (rg < R_RECV) snprintf(buf, sizeof buf, "send %s", ml_proto_name((ml_proto)(rg - R_SEND)));
        else snprintf(buf, sizeof buf, "recv %s", ml_proto_name((ml_proto)(rg - R_RECV)));
        OTF2_GlobalDefWriter_WriteString(g, str, buf);
        OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)(rg - 1), str, str, 0,
                                         rg < PL_TRACE_MPI_N ? OTF2_REGION_ROLE_FUNCTION
                                                             : OTF2_REGION_ROLE_WRAPPER,
                                         rg < PL_TRACE_MPI_N ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER,
                                         OTF2_REGION_FLAG_NONE, 0, 0, 0);
        str++;
    }
    snprintf(buf, sizeof buf, "bglemu %dx%dx%d %s", j->g.dim[0], j->g.dim[1], j->g.dim[2],
             j->g.cpus == 2 ? "VN" : "CO");
    OTF2_GlobalDefWriter_WriteString(g, str, buf);
    OTF2_GlobalDefWriter_WriteString(g, str + 1, "machine");
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str, str + 1, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    str += 2;
    uint64_t *members = calloc((size_t)np + 1, sizeof *members), *ranks = calloc((size_t)np + 1, sizeof *ranks);
    for (int r = 0; r < np; r++) {
        int c[4];
        ml_map_coords(&j->map, &j->g, r, c);
        snprintf(buf, sizeof buf, "rank %d <%d,%d,%d,%d>", r, c[0], c[1], c[2], c[3]);
        OTF2_GlobalDefWriter_WriteString(g, str, buf);
        OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, str++,
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                OTF2_UNDEFINED_LOCATION_GROUP);
        for (int t = 0; t < 2; t++) {
            snprintf(buf, sizeof buf, "rank %d %s", r, t ? "coprocessor" : "cpu");
            OTF2_GlobalDefWriter_WriteString(g, str, buf);
            OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)(2 * r + t), str++,
                                               OTF2_LOCATION_TYPE_CPU_THREAD, nev[2 * r + t],
                                               (OTF2_LocationGroupRef)r);
        }
        if (members) members[r] = (uint64_t)(2 * r);
        if (ranks) ranks[r] = (uint64_t)r;
    }
    OTF2_GlobalDefWriter_WriteString(g, str, "MPI_COMM_WORLD");
    if (members && ranks) {
        OTF2_GlobalDefWriter_WriteGroup(g, 0, 0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, (uint32_t)np, members);
        OTF2_GlobalDefWriter_WriteGroup(g, 1, 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, (uint32_t)np, ranks);
        OTF2_GlobalDefWriter_WriteComm(g, 0, str, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    }
    free(members);
    free(ranks);
    OTF2_Archive_CloseGlobalDefWriter(a, g);
    int rc = OTF2_Archive_Close(a) == OTF2_SUCCESS ? 0 : -1;
    if (rc) fprintf(stderr, "mpirun: --trace %s: writing the OTF2 archive failed\n", o->trace);
    free(loc);
    return rc;
}
#endif
