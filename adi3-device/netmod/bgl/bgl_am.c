/* bglemu CH4 netmod "bgl": active messages and progress over bglemu's
 * message layer (messagelayer/ml.h).
 *
 * One MPIDIG active message = one message-layer message: the handler id and
 * MPIDIG's header travel as the message-layer header, the data as its body.
 * The message layer picks one-packet, eager, adaptive eager or rendezvous by
 * size, so am_check_eager always says "eager": MPIDIG's own RTS/CTS is never
 * used, and a rendezvous scout's arrival is the upcall in which MPIDIG
 * matches. The upcall hands back the receive buffer: the user's buffer when
 * it is contiguous (data lands there directly). Non-contiguous data goes as
 * BGLMPI_DATATYPE says (bgl_dt.c): packed into a buffer and received into a
 * bounce buffer that MPIDIG unpacks (pack), or as layouts the message layer
 * gathers packets from and scatters them into (zerocopy, memo). */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

#include <sched.h>

/* One send in flight: the message-layer message and what completes it. */
typedef struct {
    ml_msg m;
    MPIR_Request *sreq;         /* NULL for a header-only message */
    int handler_id;
    void *pack;                 /* packed non-contiguous data, or NULL */
    MPIDI_BGL_layout_t lay;     /* or its layout */
    union {
        uint8_t b[ML_HDR_MAX];
        uint64_t align;
    } hdr;
} MPIDI_BGL_send_t;

/* A non-contiguous receive: the data lands here, then MPIDIG unpacks it
 * (data on a line boundary: MPIDI_BGL_lines). */
typedef struct {
    MPIR_Request *rreq;
    size_t len;
    int typed;                  /* a datatype to unpack into (charged) */
    char *data;                 /* in mem */
    char mem[];
} MPIDI_BGL_bounce_t;

/* A non-contiguous receive straight into the user's layout. */
typedef struct {
    MPIR_Request *rreq;
    size_t len;
    MPIDI_BGL_layout_t lay;
} MPIDI_BGL_scatter_t;

static void send_free(MPIDI_BGL_send_t * s)
{
    MPL_free(s->pack);
    MPIDI_BGL_dt_layout_free(&s->lay);
    MPL_free(s);
}

static void send_done(ml_ctx * ml, void *arg)
{
    MPIDI_BGL_send_t *s = arg;
    MPIDI_BGL_dt_layout_free(&s->lay);
    MPL_free(s->pack);
    if (s->sreq)
        MPIDIG_global.origin_cbs[s->handler_id] (s->sreq);
    MPL_free(s);
}

static int send_am(int world_rank, int handler_id, const void *am_hdr, MPI_Aint am_hdr_sz,
                   const void *data, MPI_Aint count, MPI_Datatype datatype, MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_clock_enter();

    MPIR_Assert(am_hdr_sz <= MPIDI_BGL_AM_HDR_MAX);
    MPIDI_BGL_send_t *s = MPL_malloc(sizeof *s, MPL_MEM_BUFFER);
    MPIR_ERR_CHKANDJUMP(!s, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
    s->sreq = sreq;
    s->handler_id = handler_id;
    s->pack = NULL;
    s->lay = (MPIDI_BGL_layout_t) { 0 };
    memset(s->hdr.b, 0, MPIDI_BGL_PREFIX);
    s->hdr.b[0] = (uint8_t) handler_id;
    memcpy(s->hdr.b + MPIDI_BGL_PREFIX, am_hdr, am_hdr_sz);
    int sync = handler_id == MPIDIG_SEND &&
        (((const MPIDIG_hdr_t *) am_hdr)->flags & MPIDIG_AM_SEND_FLAGS_SYNC) != 0;

    const void *buf = NULL;
    MPI_Aint data_sz = 0;
    if (count > 0) {
        int dt_contig;
        MPI_Aint dt_true_lb;
        MPIR_Datatype *dt_ptr;
        MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
        if (dt_contig) {
            buf = (const char *) data + dt_true_lb;
        } else if (data_sz > 0) {
            int mode;
            mpi_errno = MPIDI_BGL_dt_mode(&mode);
            MPIR_ERR_CHECK(mpi_errno);
            if (mode == MPIDI_BGL_DT_PACK) {
                MPI_Aint packed;
                s->pack = MPL_malloc(data_sz, MPL_MEM_BUFFER);
                MPIR_ERR_CHKANDJUMP(!s->pack, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
                mpi_errno = MPIR_Typerep_pack(data, count, datatype, 0, s->pack, data_sz, &packed);
                MPIR_ERR_CHECK(mpi_errno);
                MPIR_Assert(packed == data_sz);
                MPIDI_BGL_dt_charge_copy(count, datatype, data_sz);
                buf = s->pack;
            } else {
                mpi_errno = MPIDI_BGL_dt_layout(data, count, datatype, data_sz, mode, &s->lay);
                MPIR_ERR_CHECK(mpi_errno);
            }
        }
    }
    MPIR_ERR_CHKANDJUMP1((uint64_t) data_sz > UINT32_MAX, mpi_errno, MPI_ERR_COUNT,
                         "**bgl_toolarge", "**bgl_toolarge %L", (long long) data_sz);

    size_t hdrlen = MPIDI_BGL_PREFIX + (size_t) am_hdr_sz;
    ml_proto p = ML_AUTO;
    if (sreq && g->force != ML_AUTO) {  /* data messages only: control stays automatic */
        p = g->force;
        if (p == ML_ONEPKT && hdrlen + (size_t) data_sz > TSIM_PAYLOAD_MAX)
            p = ML_AUTO;
    }
    if (p == ML_AUTO)
        p = ml_choose(g->ml, world_rank, hdrlen, (size_t) data_sz);
    /* A message that carries its data lands, if unexpected, in one of
     * MPIDIG's pack buffers: larger ones must wait for their receive, which
     * the rendezvous and the VN protocol do (the upcall defers them). */
    if (p != ML_RZV && p != ML_VN && data_sz > MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE)
        p = ML_RZV;
    pl_charge(g->pp, g->prm->mpi_send_cycles);
    if (sreq)
        pl_charge(g->pp, p == ML_EAGER ? g->prm->mpi_eager_cycles
                  : p == ML_ADAPTIVE ? g->prm->mpi_adaptive_cycles
                  : p == ML_RZV ? g->prm->mpi_rzv_cycles : 0);

    s->m = (ml_msg) {
        .dst = world_rank,.hdr = s->hdr.b,.hdrlen = hdrlen,.buf = buf,.len = (size_t) data_sz,
        .iov = s->lay.iov,.niov = s->lay.n,.layout_key = s->lay.key,.proto = p,.done = send_done,
        .arg = s,
        /* a send's completion only completes its request (and frees host
         * memory): it may run later, in a wait for another request; not a
         * synchronous send's, whose request completes at the
         * acknowledgement */
        .completes = sreq && !sync &&
            (MPIDIG_global.origin_cbs[handler_id] == MPIDIG_send_origin_cb ||
             MPIDIG_global.origin_cbs[handler_id] == MPIDIG_send_data_origin_cb)
            ? sreq : NULL
    };
    g->empty_polls = 0;
    if (ml_send(g->ml, &s->m) != 0) {
        send_free(s);
        s = NULL;
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_RANK, "**bgl_send", "**bgl_send %d", world_rank);
    }
    if (sync)
        g->ssend_acks++;        /* waited_for */

  fn_exit:
    MPIDI_BGL_clock_leave();
    return mpi_errno;
  fn_fail:
    if (s)
        send_free(s);
    goto fn_exit;
}

int MPIDI_BGL_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                          const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci, int dst_vci)
{
    return send_am(MPIDIU_rank_to_lpid(rank, comm), handler_id, am_hdr, am_hdr_sz, NULL, 0,
                   MPI_DATATYPE_NULL, NULL);
}

int MPIDI_BGL_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                       const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                       MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                       MPIR_Request * sreq)
{
    return send_am(MPIDIU_rank_to_lpid(rank, comm), handler_id, am_hdr, am_hdr_sz, data, count,
                   datatype, sreq);
}

int MPIDI_BGL_am_send_hdr_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                                const void *am_hdr, MPI_Aint am_hdr_sz, int src_vci,
                                int dst_vci)
{
    return send_am(MPIDIU_rank_to_lpid(src_rank, comm), handler_id, am_hdr, am_hdr_sz, NULL, 0,
                   MPI_DATATYPE_NULL, NULL);
}

int MPIDI_BGL_am_isend_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                             const void *am_hdr, MPI_Aint am_hdr_sz, const void *data,
                             MPI_Aint count, MPI_Datatype datatype, int src_vci, int dst_vci,
                             MPIR_Request * sreq)
{
    return send_am(MPIDIU_rank_to_lpid(src_rank, comm), handler_id, am_hdr, am_hdr_sz, data,
                   count, datatype, sreq);
}

/* Every size goes as one message-layer message (which may be a rendezvous). */
bool MPIDI_BGL_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz, const void *data,
                              MPI_Aint count, MPI_Datatype datatype, MPIR_Request * sreq)
{
    return true;
}

/* ---- receiving ---- */

/* All of a message's data is in place: MPIDIG completes the receive.
 *
 * MPICH 4.0.2 loses the status of a receive posted while an unexpected
 * message's data is still arriving (MPIDIG_REQ_BUSY + MATCHED): it copies
 * the data into the matching request's buffer and completes it, but writes
 * count, source and tag only into the unexpected request. Fixed upstream
 * later (pmodels/mpich#6042 reworked this path); here the status is carried
 * over by hand. Without it MPICH's own scatter-allgather broadcast fails
 * ("Received 10000 but expected 20000"). */
static void complete_recv(MPIR_Request * rreq)
{
    MPIR_Request *match = NULL;
    if ((MPIDIG_REQUEST(rreq, req->status) & MPIDIG_REQ_UNEXPECTED) &&
        (MPIDIG_REQUEST(rreq, req->status) & MPIDIG_REQ_MATCHED) &&
        !(MPIDIG_REQUEST(rreq, req->status) & MPIDIG_REQ_UNEXP_DQUED)) {
        match = MPIDIG_REQUEST(rreq, req->rreq.match_req);
        MPIR_Request_add_ref(match);
        MPIR_Request_add_ref(rreq);
    }
    MPIDI_BGL_dt_charge_unexp_late(rreq);
    MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq);
    if (match) {
        match->status = rreq->status;
        MPIR_Request_free(rreq);
        MPIR_Request_free(match);
    }
}

static void recv_done(ml_ctx * ml, void *arg)
{
    MPIDI_BGL_global.rx_inflight--;
    complete_recv(arg);
}

static void bounce_done(ml_ctx * ml, void *arg)
{
    MPIDI_BGL_bounce_t *b = arg;
    MPIDI_BGL_global.rx_inflight--;
    if (b->typed)
        MPIDI_BGL_dt_charge_copy(MPIDIG_REQUEST(b->rreq, count), MPIDIG_REQUEST(b->rreq, datatype),
                                 (MPI_Aint) b->len);
    MPIDIG_recv_copy(b->data, b->rreq);     /* unpacks, or copies into an iov */
    complete_recv(b->rreq);
    MPL_free(b);
}

/* The data is in the user's layout: what MPIDIG_recv_copy would have
 * said about it. */
static void scatter_done(ml_ctx * ml, void *arg)
{
    MPIDI_BGL_scatter_t *sc = arg;
    MPIR_Request *rreq = sc->rreq;
    MPIDI_BGL_global.rx_inflight--;
    MPIR_STATUS_SET_COUNT(rreq->status, (MPI_Aint) MPL_MIN(sc->len, sc->lay.bytes));
    MPIDI_BGL_dt_layout_free(&sc->lay);
    MPL_free(sc);
    complete_recv(rreq);
}

static void land(MPIR_Request * rreq, size_t len, ml_recv * out, int pt2pt);

/* A message's first packet (or rendezvous scout) arrived, in per-pair send
 * order: MPIDIG matches it and says where its len bytes go. */
static void upcall(ml_ctx * ml, int src, const void *hdr, size_t hdrlen, size_t len,
                   ml_recv * out, void *uarg)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    union {
        uint8_t b[ML_HDR_MAX];
        uint64_t align;
    } h;
    memcpy(h.b, hdr, hdrlen);
    int handler_id = h.b[0];
    void *am_hdr = h.b + MPIDI_BGL_PREFIX;
    uint32_t attr = 0;
    MPIDIG_AM_ATTR_SET_VCIS(attr, 0, 0);
    pl_charge(g->pp, g->prm->mpi_recv_cycles);
    out->buf = NULL;
    out->cap = 0;
    out->done = NULL;
    if (handler_id == MPIDIG_SSEND_ACK)
        g->ssend_acks--;

    if (len == 0) {
        MPIDIG_global.target_msg_cbs[handler_id] (am_hdr, NULL, 0, attr, NULL);
        return;
    }
    /* A rendezvous is "transport rendezvous" for MPIDIG: if nothing matches,
     * MPIDIG queues it without a buffer and calls rndv_matched when a
     * receive is posted; the grant waits until then. So is a VN message
     * too large for a pack buffer (send_am): its copy from the sender's
     * memory waits. */
    int rndv = out->proto == ML_RZV ||
        (out->proto == ML_VN && len > (size_t) MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE);
    if (rndv)
        attr |= MPIDIG_AM_ATTR__IS_RNDV;
    MPIR_Request *rreq = NULL;
    MPIDIG_global.target_msg_cbs[handler_id] (am_hdr, NULL, (MPI_Aint) len,
                                              attr | MPIDIG_AM_ATTR__IS_ASYNC, &rreq);
    if (!rreq)  /* a handler that wants no data: it is dropped */
        return;
    if (rndv && (MPIDIG_REQUEST(rreq, req->status) & MPIDIG_REQ_UNEXPECTED)) {
        MPIDI_BGL_deferred_t *d = MPL_malloc(sizeof *d, MPL_MEM_OTHER);
        MPIR_Assert(d);
        *d = (MPIDI_BGL_deferred_t) {.next = g->deferred,.rreq = rreq,.token = out->token,.len = len};
        g->deferred = d;
        out->defer = 1;
        return;
    }
    land(rreq, len, out, handler_id == MPIDIG_SEND);
}

/* Where the len bytes for rreq go: straight into a contiguous receive
 * buffer, or a bounce buffer that MPIDIG unpacks.
 *
 * A non-contiguous datatype stays one: MPICH 4.0.2's MPIDIG_get_recv_data
 * would turn it into an iov sized for the whole receive buffer but filled
 * only for the incoming bytes, and count all the entries (iov_num), so a
 * message shorter than its receive buffer (MPICH's recursive-doubling
 * allgather posts such receives) summed uninitialised lengths and failed
 * as "truncated; 34 bytes received but buffer size is 40". */
static void land(MPIR_Request * rreq, size_t len, ml_recv * out, int pt2pt)
{
    int is_contig = 0, is_gpu;
    void *p;
    MPI_Aint sz;
    int typed_noncontig = 0, mode = MPIDI_BGL_DT_PACK;
    MPI_Aint bytes = 0;
    if (MPIDIG_REQUEST(rreq, req->recv_async).recv_type == MPIDIG_RECV_DATATYPE) {
        int contig;
        MPI_Aint lb;
        MPIR_Datatype *dt_ptr;
        MPIDI_Datatype_get_info(MPIDIG_REQUEST(rreq, count), MPIDIG_REQUEST(rreq, datatype),
                                contig, bytes, dt_ptr, lb);
        typed_noncontig = !contig;
        /* a bad value was reported by the send side; here it is only pack */
        if (typed_noncontig && MPIDI_BGL_dt_mode(&mode) != MPI_SUCCESS)
            mode = MPIDI_BGL_DT_PACK;
    }
    if (!typed_noncontig)
        MPIDIG_get_recv_data(&is_contig, &is_gpu, &p, &sz, rreq);
    MPIDI_BGL_global.rx_inflight++;     /* until recv_done / bounce_done */
    MPIDIG_recv_setup(rreq);    /* status count; truncation error if len > sz */
    if (is_contig) {
        out->buf = p;
        out->cap = (size_t) sz;
        out->done = recv_done;
        out->arg = rreq;
        /* A point-to-point message that matched a posted receive, not a
         * synchronous send's: its completion only completes rreq (no
         * unpack to charge, no ack to send: recv_target_cmpl_cb), so it
         * may run later, in a wait for another request. */
        int st = MPIDIG_REQUEST(rreq, req->status);
        if (pt2pt && !(st & (MPIDIG_REQ_UNEXPECTED | MPIDIG_REQ_PEER_SSEND | MPIDIG_REQ_RTS)))
            out->completes = rreq;
        return;
    }
    if (typed_noncontig && mode != MPIDI_BGL_DT_PACK && bytes > 0) {
        MPIDI_BGL_scatter_t *sc = MPL_malloc(sizeof *sc, MPL_MEM_BUFFER);
        MPIR_Assert(sc);
        sc->rreq = rreq;
        sc->len = len;
        int rc = MPIDI_BGL_dt_layout(MPIDIG_REQUEST(rreq, buffer), MPIDIG_REQUEST(rreq, count),
                                     MPIDIG_REQUEST(rreq, datatype), bytes, mode, &sc->lay);
        MPIR_Assert(rc == MPI_SUCCESS);
        out->iov = sc->lay.iov;
        out->niov = sc->lay.n;
        out->done = scatter_done;
        out->arg = sc;
        return;
    }
    MPIDI_BGL_bounce_t *b = MPL_malloc(sizeof *b + len + MPIDI_BGL_LINE_ALIGN - 1, MPL_MEM_BUFFER);
    MPIR_Assert(b);
    b->data = MPIDI_BGL_lines(b->mem);
    b->rreq = rreq;
    b->len = len;
    b->typed = typed_noncontig;
    out->buf = b->data;
    out->cap = len;
    out->done = bounce_done;
    out->arg = b;
}

/* MPIDIG: a receive now matches a rendezvous the upcall deferred. */
static int rndv_matched(MPIR_Request * rreq)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_deferred_t **pd = &g->deferred;
    while (*pd && (*pd)->rreq != rreq)
        pd = &(*pd)->next;
    MPIR_Assert(*pd);
    MPIDI_BGL_deferred_t *d = *pd;
    *pd = d->next;
    ml_recv r = { 0 };
    MPIDI_BGL_clock_enter();
    land(rreq, d->len, &r, 0);
    int rc = r.niov ? ml_accept_iov(g->ml, d->token, r.iov, r.niov, r.done, r.arg)
        : ml_accept(g->ml, d->token, r.buf, r.cap, r.done, r.arg);
    MPIR_Assert(rc == 0);
    MPIDI_BGL_clock_leave();
    MPL_free(d);
    return MPI_SUCCESS;
}

MPIDIG_recv_data_copy_cb MPIDI_BGL_data_copy_cb(uint32_t attr)
{
    return (attr & MPIDIG_AM_ATTR__IS_RNDV) ? rndv_matched : NULL;
}

ml_upcall_fn MPIDI_BGL_upcall = upcall;

/* ---- progress ---- */

/* Empty polls in a row before the rank blocks on the engine's doorbell.
 * Each one is a synchronised, deterministic look at the FIFOs, so blocking
 * after a fixed number of them keeps runs reproducible. CH4 never says
 * whether it waits (MPI_Wait) or tests once (MPI_Test), and some of what
 * MPI waits for is local (a send to self, a request that is already
 * inactive, a collective schedule's next step). So the rank blocks soon
 * only when the network owes it something — its own sends are still
 * leaving, a message's data is still arriving, or a posted receive waits
 * for a message — and otherwise only
 * after many polls, which still ends a real deadlock (MPI_Probe for a
 * message nobody sends) with the engine's report. Many: MPICH's
 * nonblocking3 test on one rank polls MPI_Test* some 14,000 times while
 * its schedules complete locally. The count restarts
 * whenever the application does something between polls (a send,
 * MPI_Wtime, compute time in cputime mode). */
#define MPIDI_BGL_SPIN_POLLS 4
#define MPIDI_BGL_SPIN_POLLS_IDLE 100000

static int expecting_network(MPIDI_BGL_global_t * g)
{
    return ml_busy(g->ml) || g->rx_inflight > 0 || MPIDI_global.per_vci[0].posted_list != NULL ||
        g->deferred;
}

/* The requests MPIR_Wait and MPIR_Waitall still wait for, in their order,
 * while they call MPID_Progress_wait: wait_reqs[0..wait_nreqs), the one
 * they wait for first (set and cleared around that call by the patch in
 * adi3-device/mpich/build-mpich.sh); none outside it. */
MPIR_Request **MPIDI_BGL_wait_reqs;
int MPIDI_BGL_wait_nreqs;
/* Patched into MPICH's mpir_progress_hook.c by the same script. */
int MPIR_Progress_hook_any_active(void);

/* The point-to-point requests this wait still waits for, incomplete,
 * whose completions only the network brings, in MPI's order up to the
 * first of another kind (a generalized or RMA request, or one on a
 * communicator of this rank alone: only this rank completes it), at most
 * max: how many. None if a progress hook is active
 * (a nonblocking collective's schedule, which only this rank runs, may be
 * waiting for a completion the engine would hold back), or under
 * MPI_THREAD_MULTIPLE (another thread may wait for what this one's would
 * hold back). Beyond the one waited for first, only while MPICH's code
 * between two waits is not charged as computation (mpirun's entry hooks,
 * or no cputime): else an advance left stopped for the next wait
 * (progress) would straddle that charge. */
static unsigned wait_left(const void **what, unsigned max)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!MPIDI_BGL_wait_nreqs || MPIR_IS_THREADED || MPIR_Progress_hook_any_active())
        return 0;
    int nreqs = !g->hooked && g->clock != MPIDI_BGL_CLOCK_NONE ? 1 : MPIDI_BGL_wait_nreqs;
    unsigned n = 0;
    for (int i = 0; i < nreqs && n < max; i++) {
        MPIR_Request *req = MPIDI_BGL_wait_reqs[i];
        if (!req || MPIR_Request_is_complete(req))
            continue;
        if ((req->kind != MPIR_REQUEST_KIND__SEND && req->kind != MPIR_REQUEST_KIND__RECV) ||
            (req->comm && MPIDI_is_self_comm(req->comm)))
            break;
        what[n++] = req;
    }
    return n;
}

/* 1 while MPI's wait goes on (it calls progress again): wait_left. */
static int waiting(void)
{
    const void *w;
    return wait_left(&w, 1) > 0;
}

/* What this wait is for (ml_wait_fn): wait_left's requests, but none
 * while a synchronous send waits for its acknowledgement. Once its data
 * has gone the network still owes the rank that message, but
 * expecting_network no longer says so: the rank's own loop, waiting for
 * that send alone, would poll idle, where the engine's loop, handed over
 * while other requests were pending, would block after
 * MPIDI_BGL_SPIN_POLLS polls. */
static unsigned waited_for(void *arg, const void **what, unsigned max)
{
    (void) arg;
    return MPIDI_BGL_global.ssend_acks > 0 ? 0 : wait_left(what, max);
}

/* The receives posted, as MPIDIG's matching tries them (ml_posted_fn):
 * MPIDIG_match_request's test of a posted request (source, tag without
 * its error bits, context id; the wildcards), on MPIDIG_send_target_msg_cb's
 * messages only, not a synchronous send's (its acknowledgement) nor an
 * MPIDIG rendezvous (bgl sends none). A contiguous receive lands as land()
 * would land it: in its buffer, its completion only completing it. None
 * under MPI_THREAD_MULTIPLE: another thread may post a receive while this
 * one waits. */
static unsigned posted_rows(void *arg, ml_match_rule * rule, ml_posted * rows, unsigned max)
{
    (void) arg;
    if (MPIR_IS_THREADED)
        return 0;
    const size_t p = MPIDI_BGL_PREFIX;
    *rule = (ml_match_rule) {
        .off = {0, p + offsetof(MPIDIG_hdr_t, src_rank), p + offsetof(MPIDIG_hdr_t, tag),
                p + offsetof(MPIDIG_hdr_t, context_id)},
        .mask = {0xff, UINT32_MAX, UINT32_MAX, (uint32_t) (MPIR_Context_id_t) - 1},
        .veto_off = p + offsetof(MPIDIG_hdr_t, flags),
        .veto_mask = MPIDIG_AM_SEND_FLAGS_SYNC | MPIDIG_AM_SEND_FLAGS_RTS,
        .upcall_cycles = MPIDI_BGL_global.prm->mpi_recv_cycles,
    };
    unsigned n = 0;
    for (MPIR_Request * r = MPIDI_global.per_vci[0].posted_list; r && n < max; r = r->next) {
        int src = MPIDIG_REQUEST(r, u.recv.source), tag = MPIDIG_REQUEST(r, u.recv.tag);
        ml_posted *row = &rows[n++];
        *row = (ml_posted) {
            .key = {MPIDIG_SEND, (uint32_t) src, (uint32_t) MPIR_TAG_MASK_ERROR_BITS(tag),
                    MPIDIG_REQUEST(r, u.recv.context_id)},
            .any = (uint8_t) ((src == MPI_ANY_SOURCE) << 1 | (tag == MPI_ANY_TAG) << 2),
        };
        int contig;
        MPI_Aint bytes, lb;
        MPIR_Datatype *dt;
        MPIDI_Datatype_get_info(MPIDIG_REQUEST(r, count), MPIDIG_REQUEST(r, datatype), contig, bytes,
                                dt, lb);
        (void) dt;
        if (!contig)
            continue;
        row->land = 1;
        row->buf = (char *) MPIDIG_REQUEST(r, buffer) + lb;
        row->cap = (size_t) bytes;
        row->done = recv_done;
        row->arg = r;
        row->completes = r;
    }
    return n;
}

static int progress(MPIDI_BGL_global_t * g, int blocking);
static int progress_end(MPIDI_BGL_global_t * g, int blocking, int moved);

int MPIDI_BGL_progress(int vci, int blocking)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->ml)
        return MPI_SUCCESS;
    ml_wait_for(g->ml, blocking ? waited_for : NULL);
    ml_match_for(g->ml, blocking ? posted_rows : NULL);
    int mpi_errno = progress(g, blocking);
    ml_wait_for(g->ml, NULL);
    ml_match_for(g->ml, NULL);
    return mpi_errno;
}

static int progress(MPIDI_BGL_global_t * g, int blocking)
{
    MPIDI_BGL_clock_enter();
    /* In MPID_Progress_wait's loop (blocking: CH4 passes its wait flag,
     * adi3-device/mpich/build-mpich.sh) nothing but this function runs until
     * a request completes, which only a callback does: the engine runs the
     * loop (messagelayer/ml_engine.c) and wakes this rank where its own code
     * must run; the advance below then goes on from there. */
    int stop = 0; /* this advance stops at a poll only a sync could answer */
    if (blocking && expecting_network(g)) {
        /* ...unless MPICH's progress hooks still have local steps (a
         * nonblocking collective's schedule): only this rank can run them.
         * Waits for nothing from the network (the idle case) poll as before. */
        int hooks_moved = 0;
        MPIDI_BGL_clock_leave();
        int mpi_errno = MPIR_Progress_hook_exec_all(&hooks_moved);
        MPIDI_BGL_clock_enter();
        if (mpi_errno != MPI_SUCCESS || hooks_moved) {
            MPIDI_BGL_clock_leave();
            return mpi_errno;
        }
        int was_stopped = ml_advance_stopped(g->ml);
        int rc = ml_wait_delegate(g->ml, "MPI: waiting in progress for a message",
                                  MPIDI_BGL_SPIN_POLLS, (unsigned) g->empty_polls);
        if (rc < 0)
            MPIDI_BGL_job_aborted("progress");
        stop = rc == 0 || !was_stopped;
    }
    /* Given back by the engine with the request still incomplete, the
     * advance stops at a poll only a sync could answer: MPI calls progress
     * again at once, and the engine takes the rest of the advance with the
     * loop (ml_wait_delegate) instead of a round trip to it per poll. So
     * does a wait not handed over (most often a message whose first packet
     * is still the software's to send): once this advance has sent it, the
     * next call can. Refused a second time in a row, the advance polls on
     * with syncs. A request complete by then ends the advance here, as it
     * would have, unless the next MPI call can (below). */
    int waits = stop && waiting();
    int moved = waits ? ml_advance_then_hand(g->ml) : ml_advance(g->ml);
    if (ml_advance_stopped(g->ml)) {
        /* Complete by now, the request's wait returns. If that wait is
         * the application's call's last act, the rest of the advance is
         * the next call's (MPIDI_BGL_end_advance): a wait that follows
         * (MPI_Irecv, MPI_Send, MPI_Wait: CG's exchanges) hands it over
         * with its own loop instead of syncing for it here. Not under
         * cputime, which charges the computation between the calls at the
         * next entry, before these polls; moved > 0 leaves nothing of
         * this call's ending to the next but the polls. */
        int pending = waiting();
        int leave = !pending && waits && moved > 0 && g->call != MPIDI_BGL_CALL_OTHER &&
            g->clock == MPIDI_BGL_CLOCK_NONE && !MPIR_Progress_hook_any_active();
        if (pending || leave) {
            if (moved > 0)
                g->empty_polls = 0;
            g->advance_left = leave;
            MPIDI_BGL_clock_leave();
            return MPI_SUCCESS;
        }
        moved = ml_advance(g->ml);
    }
    return progress_end(g, blocking, moved);
}

/* An advance the last MPI call left stopped (progress above) ends before
 * anything else of this call: as if that call had ended it. */
void MPIDI_BGL_end_advance(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->advance_left)
        return;
    g->advance_left = 0;
    if (!ml_advance_stopped(g->ml))
        return; /* a wait's progress handed it over or ended it */
    MPIDI_BGL_clock_enter();
    progress_end(g, 1, ml_advance(g->ml));
}

/* The end of a progress call after its advance moved `moved`. */
static int progress_end(MPIDI_BGL_global_t * g, int blocking, int moved)
{
    if (moved > 0) {
        g->empty_polls = 0;
    } else if (++g->empty_polls <
               (expecting_network(g) ? MPIDI_BGL_SPIN_POLLS : MPIDI_BGL_SPIN_POLLS_IDLE)) {
        sched_yield();
    } else {
        /* A nonblocking collective's schedule (MPICH's progress hooks) may
         * have local steps left that only a later progress call would run:
         * run them now, and sleep only if they had nothing to do. */
        int hooks_moved = 0;
        g->empty_polls = 0;
        MPIDI_BGL_clock_leave();
        int mpi_errno = MPIR_Progress_hook_exec_all(&hooks_moved);
        MPIDI_BGL_clock_enter();
        unsigned polls = !blocking ? 0 : expecting_network(g) ? MPIDI_BGL_SPIN_POLLS
            : MPIDI_BGL_SPIN_POLLS_IDLE;
        if (mpi_errno == MPI_SUCCESS && !hooks_moved &&
            ml_wait_idle(g->ml, "MPI: waiting in progress for a message", polls) != 0)
            MPIDI_BGL_job_aborted("progress");
        MPIDI_BGL_clock_leave();
        return mpi_errno;
    }
    MPIDI_BGL_clock_leave();
    return MPI_SUCCESS;
}
