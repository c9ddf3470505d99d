/* bglemu CH4 netmod "bgl": derived datatypes — how non-contiguous data
 * travels and what handling it costs in simulated time.
 *
 * BGLMPI_DATATYPE (read per call, so one program can compare them):
 *   pack      the whole message is packed into a buffer before it is sent
 *             and received into a bounce buffer that is unpacked: two
 *             copies, both charged (ml_copy_cycles_per_kb, ddt_seg_cycles,
 *             ddt_elem_cycles for the walk over the type);
 *   zerocopy  the datatype is translated into a layout (segment list) that
 *             the message layer gathers each packet from and scatters each
 *             packet into: the translation is charged, no copy is made;
 *   memo      (default) zerocopy with the layouts memoized: a translation
 *             is looked up (ddt_lookup_cycles) in an LRU cache of
 *             ddt_cache_entries layouts keyed by the datatype's identity,
 *             count and base alignment.
 * The identity is a serial number the commit hook gives each committed
 * datatype (in the netmod's per-datatype field), so a type freed and a
 * different one created under the same handle never share a layout; the
 * free hook drops its layouts. Every cost goes to the processor doing the
 * work, and into its ddt_cycles counter (the JSON report's datatypes part). */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

/* The netmod's per-datatype field (bgl_pre.h's MPIDI_BGL_dt_t, one int):
 * the serial number, 0 for none. Kept an int so MPICH's objects keep their
 * shape. */
#define DT_SERIAL(dtp) ((dtp)->dev.netmod.bgl.dummy)

static int next_serial;

int MPIDI_BGL_dt_mode(int *mode)
{
    const char *v = getenv("BGLMPI_DATATYPE");
    int mpi_errno = MPI_SUCCESS;
    if (!v || !*v || !strcmp(v, "memo"))
        *mode = MPIDI_BGL_DT_MEMO;
    else if (!strcmp(v, "zerocopy"))
        *mode = MPIDI_BGL_DT_ZEROCOPY;
    else if (!strcmp(v, "pack"))
        *mode = MPIDI_BGL_DT_PACK;
    else
        MPIR_ERR_SETANDSTMT1(mpi_errno, MPI_ERR_OTHER, *mode = MPIDI_BGL_DT_MEMO,
                             "**bgl_datatype", "**bgl_datatype %s", v);
    return mpi_errno;
}

void MPIDI_BGL_dt_charge(uint64_t cycles)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!cycles || !g->pp)
        return;
    pl_charge(g->pp, cycles);
    atomic_fetch_add_explicit(&g->pp->p->ddt_cycles, cycles, memory_order_relaxed);
}

static MPI_Aint nsegs(MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes)
{
    MPI_Aint n = 0;
    if (MPIR_Typerep_iov_len(count, dt, bytes, &n) != MPI_SUCCESS)
        n = 1;
    return n;
}

void MPIDI_BGL_dt_charge_copy(MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes)
{
    const tsim_params *prm = MPIDI_BGL_global.prm;
    if (bytes <= 0 || !prm)
        return;
    uint64_t n = (uint64_t) nsegs(count, dt, bytes);
    MPIDI_BGL_dt_charge(n * (prm->ddt_elem_cycles + prm->ddt_seg_cycles) +
                        (uint64_t) bytes * prm->ml_copy_cycles_per_kb / 1024);
}

/* MPIDIG's unpacking of an unexpected message into count x dt, of which
 * got bytes arrived: charged as the netmod's own unpack, if dt is not
 * contiguous (a contiguous copy stays uncharged, as it always was). */
static void charge_unpack(MPI_Aint count, MPI_Datatype dt, MPI_Aint got)
{
    int contig;
    MPI_Aint bytes, lb;
    MPIR_Datatype *dtp;
    if (count <= 0)
        return;
    MPIDI_Datatype_get_info(count, dt, contig, bytes, dtp, lb);
    (void) dtp;
    (void) lb;
    if (!contig)
        MPIDI_BGL_dt_charge_copy(count, dt, MPL_MIN(got, bytes));
}

/* ... when the receive completed as it was posted (netmod_inline.h). */
void MPIDI_BGL_dt_charge_unexp(MPIR_Request * rreq, MPI_Aint count, MPI_Datatype dt)
{
    if (MPIR_Request_is_complete(rreq))
        charge_unpack(count, dt, MPIR_STATUS_GET_COUNT(rreq->status));
}

/* ... when the receive was posted while the message's data was still
 * arriving: MPIDIG copies as the data completes, into the buffer of the
 * receive that matched it (MPI_Irecv) or claimed it (MPI_Mrecv). */
void MPIDI_BGL_dt_charge_unexp_late(MPIR_Request * rreq)
{
    int status = MPIDIG_REQUEST(rreq, req->status);
    if (!(status & MPIDIG_REQ_UNEXPECTED))
        return;
    if (status & MPIDIG_REQ_UNEXP_DQUED) {
        if (status & MPIDIG_REQ_UNEXP_CLAIMED)
            charge_unpack(MPIDIG_REQUEST(rreq, req->rreq.mrcv_count),
                          MPIDIG_REQUEST(rreq, req->rreq.mrcv_datatype),
                          MPIR_STATUS_GET_COUNT(rreq->status));
    } else if (status & MPIDIG_REQ_MATCHED) {
        MPIR_Request *match = MPIDIG_REQUEST(rreq, req->rreq.match_req);
        charge_unpack(MPIDIG_REQUEST(match, count), MPIDIG_REQUEST(match, datatype),
                      MPIR_STATUS_GET_COUNT(rreq->status));
    }
}

/* ---- the layout cache (memo) ---- */

typedef struct {
    uint64_t id;                /* serial, or a builtin handle with the top bit */
    MPI_Aint count, size, extent;
    unsigned align;             /* base address modulo 64 */
    uint64_t lru;               /* last use; 0: empty */
    MPI_Aint n;                 /* segments */
    struct iovec *off;          /* segments relative to the base */
} cache_entry;

static cache_entry *cache;
static size_t cache_cap;
static uint64_t cache_clock;

static void entry_drop(cache_entry * e)
{
    MPL_free(e->off);
    memset(e, 0, sizeof *e);
}

/* The datatype's identity for the cache, 0 if it has none (not memoized). */
static uint64_t dt_id(MPI_Datatype dt, MPI_Aint * size, MPI_Aint * extent)
{
    if (HANDLE_IS_BUILTIN(dt)) {
        *size = MPIR_Datatype_get_basic_size(dt);
        *extent = *size;
        return (1ull << 63) | (uint32_t) dt;
    }
    MPIR_Datatype *dtp;
    MPIR_Datatype_get_ptr(dt, dtp);
    *size = dtp->size;
    *extent = dtp->extent;
    return DT_SERIAL(dtp) > 0 ? (uint64_t) DT_SERIAL(dtp) : 0;
}

int MPIDI_BGL_dt_commit_hook(MPIR_Datatype * dtp)
{
    DT_SERIAL(dtp) = ++next_serial > 0 ? next_serial : (next_serial = 1);
    return MPI_SUCCESS;
}

int MPIDI_BGL_dt_free_hook(MPIR_Datatype * dtp)
{
    uint64_t id = DT_SERIAL(dtp) > 0 ? (uint64_t) DT_SERIAL(dtp) : 0;
    for (size_t i = 0; id && i < cache_cap; i++)
        if (cache[i].lru && cache[i].id == id)
            entry_drop(&cache[i]);
    DT_SERIAL(dtp) = 0;
    return MPI_SUCCESS;
}

void MPIDI_BGL_dt_finalize(void)
{
    for (size_t i = 0; i < cache_cap; i++)
        entry_drop(&cache[i]);
    MPL_free(cache);
    cache = NULL;
    cache_cap = 0;
}

/* splitmix64's finalizer: a layout key from what determines the layout */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Translates count x dt at buf into *iov (malloc'd, *n segments). */
static int translate(const void *buf, MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes,
                     struct iovec **iov, MPI_Aint * n)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint len = nsegs(count, dt, bytes), got_len, got_bytes;
    *iov = MPL_malloc(sizeof **iov * (size_t) (len ? len : 1), MPL_MEM_BUFFER);
    MPIR_ERR_CHKANDJUMP(!*iov, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
    mpi_errno = MPIR_Typerep_to_iov(buf, count, dt, 0, *iov, len, bytes, &got_len, &got_bytes);
    MPIR_ERR_CHECK(mpi_errno);
    *n = got_len;
  fn_fail:
    return mpi_errno;
}

int MPIDI_BGL_dt_layout(const void *buf, MPI_Aint count, MPI_Datatype dt, MPI_Aint bytes,
                        int mode, MPIDI_BGL_layout_t * out)
{
    const tsim_params *prm = MPIDI_BGL_global.prm;
    int mpi_errno = MPI_SUCCESS;
    out->iov = NULL;
    out->n = 0;
    out->bytes = (size_t) bytes;
    MPI_Aint size = 0, extent = 0;
    uint64_t id = mode == MPIDI_BGL_DT_MEMO && prm->ddt_cache_entries ? dt_id(dt, &size, &extent) : 0;
    unsigned align = (unsigned) ((uintptr_t) buf % 64);
    out->key = id ? mix(id ^ mix((uint64_t) count * 64 + align)) | 1 : 0;
    if (id) {
        MPIDI_BGL_dt_charge(prm->ddt_lookup_cycles);
        for (size_t i = 0; i < cache_cap; i++) {
            cache_entry *e = &cache[i];
            if (!e->lru || e->id != id || e->count != count || e->align != align ||
                e->size != size || e->extent != extent)
                continue;
            e->lru = ++cache_clock;
            out->iov = MPL_malloc(sizeof *out->iov * (size_t) (e->n ? e->n : 1), MPL_MEM_BUFFER);
            MPIR_ERR_CHKANDJUMP(!out->iov, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
            for (MPI_Aint k = 0; k < e->n; k++) {
                out->iov[k].iov_base = (char *) buf + (intptr_t) e->off[k].iov_base;
                out->iov[k].iov_len = e->off[k].iov_len;
            }
            out->n = (size_t) e->n;
            goto fn_exit;
        }
    }
    MPI_Aint n;
    mpi_errno = translate(buf, count, dt, bytes, &out->iov, &n);
    MPIR_ERR_CHECK(mpi_errno);
    out->n = (size_t) n;
    MPIDI_BGL_dt_charge((uint64_t) n * prm->ddt_elem_cycles);
    if (id) {   /* remember it, relative to the base, in the least recently used place */
        size_t want = prm->ddt_cache_entries > 4096 ? 4096 : (size_t) prm->ddt_cache_entries;
        if (cache_cap != want) {
            MPIDI_BGL_dt_finalize();
            cache = MPL_calloc(want, sizeof *cache, MPL_MEM_OTHER);
            cache_cap = cache ? want : 0;
        }
        if (!cache_cap)
            goto fn_exit;
        cache_entry *v = &cache[0];
        for (size_t i = 1; i < cache_cap && v->lru; i++)
            if (!cache[i].lru || cache[i].lru < v->lru)
                v = &cache[i];
        struct iovec *off = MPL_malloc(sizeof *off * (size_t) (n ? n : 1), MPL_MEM_OTHER);
        if (!off)
            goto fn_exit;
        entry_drop(v);
        for (MPI_Aint k = 0; k < n; k++) {
            off[k].iov_base = (void *) ((char *) out->iov[k].iov_base - (const char *) buf);
            off[k].iov_len = out->iov[k].iov_len;
        }
        *v = (cache_entry) {.id = id,.count = count,.size = size,.extent = extent,
            .align = align,.lru = ++cache_clock,.n = n,.off = off
        };
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    MPL_free(out->iov);
    out->iov = NULL;
    goto fn_exit;
}

void MPIDI_BGL_dt_layout_free(MPIDI_BGL_layout_t * l)
{
    MPL_free(l->iov);
    l->iov = NULL;
}
