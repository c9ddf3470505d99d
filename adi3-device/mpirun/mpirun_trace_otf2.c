/* mpirun --trace FILE.otf2, built when libotf2 is there (the Makefile
 * defines BGLEMU_OTF2); without it, such a --trace is refused before the
 * job starts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpirun_trace.h"

#ifdef BGLEMU_OTF2
#include <otf2/otf2.h>

void mpirun_trace_otf2_check(const mpirun_opts *o)
{
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
}

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
enum { R_BLOCK = PL_TRACE_MPI_N, R_BLOCK_INJ, R_COLL, R_SEND = R_COLL + PLT_COLL_N,
       R_RECV = R_SEND + ML_NPROTO, R_N = R_RECV + ML_NPROTO };

static uint32_t region_of(const pl_trace_rec *r)
{
    switch (r->kind) {
    case PLT_BLOCK: return r->sub ? R_BLOCK_INJ : R_BLOCK;
    case PLT_SEND: return R_SEND + r->sub;
    case PLT_RECV: return R_RECV + r->sub;
    case PLT_COLL: return R_COLL + r->sub;
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

int mpirun_trace_write_otf2(mpirun_job *j, const mpirun_trace_events *m)
{
    const tev *ev = m->ev;
    size_t n = m->n;
    uint64_t mhz = m->mhz;
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
        if (rg < PL_TRACE_MPI_N) snprintf(buf, sizeof buf, "%s", mpirun_trace_mpi_names[rg]);
        else if (rg == R_BLOCK) snprintf(buf, sizeof buf, "blocked in the network");
        else if (rg == R_BLOCK_INJ) snprintf(buf, sizeof buf, "blocked: injection FIFO full");
        else if (rg < R_SEND) snprintf(buf, sizeof buf, "%s", mpirun_trace_coll_names[rg - R_COLL]);
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
#else
void mpirun_trace_otf2_check(const mpirun_opts *o)
{
    mpirun_die("--trace %s: OTF2 output is not available in this build (libotf2-trace-dev); "
               "use FILE.json", o->trace);
}

int mpirun_trace_write_otf2(mpirun_job *j, const mpirun_trace_events *m)
{
    (void)j, (void)m;
    return -1; /* not reached: mpirun_trace_otf2_check refused the option */
}
#endif
