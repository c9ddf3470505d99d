/* The engine runs a blocked processor's wait loop itself.
 *
 * A processor blocks in its message layer's wait loop (MPI_Wait, a
 * collective, a full FIFO) and describes what that loop would do without
 * its software (tsim_prx): write the data packets of receptions already
 * matched into its memory, inject the remaining packets of one message.
 * Waking it for each such packet costs the host two context switches and a
 * round of synchronisation with the engine; the engine can do the same
 * steps in a few hundred nanoseconds. It does them at exactly the simulated
 * times and costs the processor would have had, so results do not change:
 *
 *   advance  = send round (SP), then polls until one finds nothing or
 *              `batch` packets were read, then, if anything moved, another
 *              send round (SP tail);
 *   the loop = advances until `polls` of them in a row moved nothing, then
 *              block until a packet arrives or a full FIFO has room.
 *
 * Every observation the processor would make at clock vt (is a packet
 * visible, is there room) is made in an EV_PROXY event at time vt, whose key
 * puts it before every other event of that time: the engine has then done
 * exactly what the processor would see (docs/simulated-time.md). The first
 * packet the loop can't handle here (a new message, a control packet, the
 * packet that completes a reception or the last one of the message, whose
 * callbacks are the software's) hands the processor back: it is woken at
 * that moment's clock, with a resume point (start of an advance, its polls,
 * or its tail send round) that makes its own next steps the ones the loop
 * would have taken. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tsim_futex.h"
#include "tsim_proxy.h"

#define WR_IOV 512
#define WR_BYTES (128 * 1024)
#define TX_AHEAD (64 * 1024)
#define MAX_POLLS (1u << 20)
#define MAX_BATCH 1024
#define LAYOUT_READ 512           /* pieces per read of a send layout */
#define LAYOUT_MAX (1u << 24)     /* segments of a described layout */

/* Writes into the processor's memory wait here until it is woken: nothing
 * reads a reception's buffer before its completion, which only the
 * processor itself runs. Adjacent writes merge into one iovec. */
struct prx_wr {
    struct iovec loc[WR_IOV], rem[WR_IOV];
    int n;
    size_t used;
    uint8_t data[WR_BYTES];
};

/* A buffer the processor described is not there: that rank's doing. */
static void job_fail(tsim_engine *e, int proc, const char *what, int err)
{
    eng_violation(e, proc, "%s: %s", what, strerror(err));
}

static int wr_flush(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_wr *w = x->wr;
    if (!w || !w->n) return 0;
    size_t total = 0;
    for (int i = 0; i < w->n; i++) total += w->loc[i].iov_len;
    int rc = 0;
    if (x->self) {
        for (int i = 0; i < w->n; i++) memcpy(w->rem[i].iov_base, w->loc[i].iov_base, w->loc[i].iov_len);
    } else if (process_vm_writev(x->pid, w->loc, (unsigned long)w->n, w->rem, (unsigned long)w->n, 0) !=
               (ssize_t)total) {
        job_fail(e, proc, "work description: a receive buffer the engine cannot write", errno ? errno : EFAULT);
        rc = -1;
    }
    w->n = 0;
    w->used = 0;
    return rc;
}

int prx_wr_ready(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    return x->wr || (x->wr = calloc(1, sizeof *x->wr)) ? 0 : -1;
}

int prx_wr_add(tsim_engine *e, int proc, uint64_t addr, const void *src, size_t n)
{
    prx_state *x = &e->ep[proc].prx;
    if (!n) return 0;
    if (prx_wr_ready(e, proc) != 0) return -1;
    struct prx_wr *w = x->wr;
    if (w->used + n > WR_BYTES || w->n == WR_IOV)
        if (wr_flush(e, proc) != 0) return -1;
    uint8_t *d = w->data + w->used;
    memcpy(d, src, n);
    w->used += n;
    if (w->n) {
        struct iovec *l = &w->loc[w->n - 1], *r = &w->rem[w->n - 1];
        if ((uint8_t *)l->iov_base + l->iov_len == d &&
            (uint64_t)(uintptr_t)r->iov_base + r->iov_len == addr) {
            l->iov_len += n;
            r->iov_len += n;
            return 0;
        }
    }
    w->loc[w->n] = (struct iovec){d, n};
    w->rem[w->n] = (struct iovec){(void *)(uintptr_t)addr, n};
    w->n++;
    return 0;
}

int prx_read(tsim_engine *e, int proc, const struct iovec *loc, const struct iovec *rem, int cnt,
             size_t total, const char *what)
{
    prx_state *x = &e->ep[proc].prx;
    if (x->self) {
        for (int i = 0; i < cnt; i++) memcpy(loc[i].iov_base, rem[i].iov_base, rem[i].iov_len);
        return 0;
    }
    errno = 0;
    if (process_vm_readv(x->pid, loc, (unsigned long)cnt, rem, (unsigned long)cnt, 0) != (ssize_t)total) {
        job_fail(e, proc, what, errno ? errno : EFAULT);
        return -1;
    }
    return 0;
}

/* Bytes [off, off + n) of outgoing message k, read ahead in large pieces
 * (the sender may not touch its buffer until the send completes). */
static const uint8_t *tx_bytes(tsim_engine *e, int proc, int k, uint64_t off, size_t n)
{
    prx_state *x = &e->ep[proc].prx;
    const tsim_prx_tx *t = &x->tx[k];
    if (off >= x->txbuf_off[k] && off + n <= x->txbuf_off[k] + x->txbuf_len[k])
        return x->txbuf[k] + (off - x->txbuf_off[k]);
    if (!x->txbuf[k] && !(x->txbuf[k] = malloc(TX_AHEAD))) return NULL;
    size_t len = t->len - off < TX_AHEAD ? (size_t)(t->len - off) : TX_AHEAD;
    if (len < n) return NULL;
    if (t->niov && !t->buf) { /* a layout (not staged): its pieces, up to a read's worth of them */
        struct iovec l[LAYOUT_READ], r[LAYOUT_READ];
        size_t got = 0, k2;
        int cnt = 0;
        uint64_t a;
        while (got < len && cnt < LAYOUT_READ &&
               (k2 = tsim_layout_piece(x->txiov[k], t->niov, &x->txrcur[k], off + got, len - got, &a))) {
            l[cnt] = (struct iovec){x->txbuf[k] + got, k2};
            r[cnt++] = (struct iovec){(void *)(uintptr_t)a, k2};
            got += k2;
        }
        if (got < n || prx_read(e, proc, l, r, cnt, got,
                                "work description: a send layout the engine cannot read") != 0)
            return NULL;
        len = got;
    } else {
        struct iovec l = {x->txbuf[k], len}, r = {(void *)(uintptr_t)(t->buf + off), len};
        if (prx_read(e, proc, &l, &r, 1, len, "work description: a send buffer the engine cannot read") != 0)
            return NULL;
    }
    x->txbuf_off[k] = off;
    x->txbuf_len[k] = len;
    return x->txbuf[k];
}

int prx_active(const tsim_engine *e, int proc) { return e->ep[proc].prx.on; }


void prx_free(tsim_engine *e)
{
    for (int i = 0; e->ep && i < e->nprocs; i++) {
        free(e->ep[i].prx.wr);
        for (int k = 0; k < TSIM_PRX_TX; k++) free(e->ep[i].prx.txbuf[k]), free(e->ep[i].prx.txiov[k]);
        for (int k = 0; k < TSIM_PRX_RX; k++) free(e->ep[i].prx.rxiov[k]);
        a2a_free(&e->ep[i].prx);
        tree_prx_free(&e->ep[i].prx);
    }
}

/* A send round starts afresh: ml_send_progress clears the full-FIFO mask
 * at its start. */
static void enter(prx_state *x, int phase)
{
    x->phase = phase;
    if (phase == PH_SP_HEAD || phase == PH_SP_TAIL || phase == PH_A_TOP) {
        x->sp_fresh = 1;
        x->rr = x->round = 0;
    }
}

void prx_arm(tsim_engine *e, int proc, uint64_t t)
{
    prx_state *x = &e->ep[proc].prx;
    if (x->armed) return;
    x->armed = 1;
    if (eng_take_next(e, t, eng_proxy_key(proc))) {
        e->defer_proc = proc;
        return;
    }
    ev_push_proxy(e, t, proc);
}

/* A described layout's segment list, copied into the engine (*v, grown
 * as needed): 0, or -1 if it can't be (the description is then refused). */
static int read_layout(tsim_engine *e, int proc, uint64_t addr, uint64_t niov, uint64_t total,
                       struct iovec **v, size_t *cap, tsim_lcur *cur)
{
    if (!niov || niov > LAYOUT_MAX || !addr) return -1;
    if (*cap < niov) {
        struct iovec *nv = realloc(*v, niov * sizeof **v);
        if (!nv) return -1;
        *v = nv;
        *cap = niov;
    }
    prx_state *x = &e->ep[proc].prx;
    size_t bytes = niov * sizeof **v;
    struct iovec l = {*v, bytes}, r = {(void *)(uintptr_t)addr, bytes};
    if (x->self) memcpy(*v, (const void *)(uintptr_t)addr, bytes);
    else if (process_vm_readv(x->pid, &l, 1, &r, 1, 0) != (ssize_t)bytes) return -1;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < niov; i++) sum += (*v)[i].iov_len;
    *cur = (tsim_lcur){0, 0};
    return sum == total ? 0 : -1;
}

/* The description is taken only if it is one the engine can follow
 * safely; anything else wakes the processor as before. It is copied first
 * and only the copy is checked and used: the processor's page can change
 * under the engine (a stray write, another thread). The engine's own
 * process is written directly only for in-process machines (tests). */
static int adopt(tsim_engine *e, int proc)
{
    tsim_proc *p = &e->seg->procs[proc];
    prx_state *x = &e->ep[proc].prx;
    uint32_t gen = atomic_load_explicit(&p->prx.gen, memory_order_acquire);
    if (e->prx_off || !gen || gen == x->gen) return 0;
    x->gen = gen;
    tsim_prx dd;
    memcpy(&dd, (const void *)&p->prx, sizeof dd);
    const tsim_prx *d = &dd;
    uint32_t mask = atomic_load(&p->wake_mask);
    int pid = e->ep[proc].pid; /* frozen at first sight: never whoever it names now */
    if (d->polls == 0 || d->polls > MAX_POLLS || d->batch == 0 || d->batch > MAX_BATCH ||
        d->nrx > TSIM_PRX_RX || (d->start && d->empties >= d->polls) ||
        (mask & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL ||
        atomic_load(&p->inj_need) != TSIM_MAX_CHUNKS || pid <= 0 ||
        (pid == e->self_pid && e->seg->name[0]))
        return 0;
    x->pid = pid;
    x->self = pid == e->self_pid;
    x->vt = atomic_load(&p->vt);
    x->inj_full = (mask >> 8) & 0xffu;
    x->dispatch_cycles = e->prm.ml_dispatch_cycles; /* never the rank's word for a cost */
    x->polls = d->polls;
    x->batch = d->batch;
    x->flat = d->flat != 0;
    x->armed = 0;
    x->moved = x->consumed = 0;
    x->pkts_recv = x->pkts_sent = x->reordered = 0;
    x->ntx = x->nrx = 0;
    if (d->prog == TSIM_PRX_PROG_TREE) {
        if (d->start || !tree_prx_adopt(e, proc, d)) return 0;
        x->prog = TSIM_PRX_PROG_TREE;
        x->phase = PH_BLOCKED;
        x->on = 1;
        return 1;
    }
    if (d->prog == TSIM_PRX_PROG_A2A) {
        if (d->start || !a2a_adopt(e, proc, d)) return 0;
        x->prog = TSIM_PRX_PROG_A2A;
        x->phase = PH_BLOCKED;
        x->on = 1;
        return 1;
    }
    if (d->prog != TSIM_PRX_PROG_ML || d->ntx > TSIM_PRX_TX || d->nring > d->ntx ||
        (d->nring && d->ring_pos >= d->nring))
        return 0;
    x->prog = TSIM_PRX_PROG_ML;
    x->ntx = d->ntx;
    x->nring = d->nring;
    x->ring_pos = d->ring_pos;
    for (uint32_t k = 0; k < x->ntx; k++) {
        const tsim_prx_tx *t = &x->tx[k];
        x->tx[k] = d->tx[k];
        if (!t->live) continue;
        if (t->fifo >= TSIM_NINJ || t->dst >= (uint32_t)e->nprocs || t->off >= t->len ||
            t->len > UINT32_MAX || t->group >= TSIM_CPUS ||
            (t->flags & ~(TSIM_F_DYNAMIC | TSIM_F_HP)) != 0)
            return 0;
        if (t->niov && read_layout(e, proc, t->iov, t->niov, t->len, &x->txiov[k], &x->txiov_cap[k],
                                   &x->txcur[k]) != 0)
            return 0;
        x->txrcur[k] = x->txcur[k];
        x->txbuf_len[k] = 0;
    }
    x->rr = x->round = 0;
    x->nrx = d->nrx;
    for (uint32_t i = 0; i < x->nrx; i++) {
        x->rx[i] = d->rx[i];
        if (x->rx[i].got >= x->rx[i].len || x->rx[i].len > UINT32_MAX ||
            (x->rx[i].src != UINT32_MAX && x->rx[i].src >= (uint32_t)e->nprocs))
            return 0;
        if (x->rx[i].niov && read_layout(e, proc, x->rx[i].iov, x->rx[i].niov, x->rx[i].cap,
                                         &x->rxiov[i], &x->rxiov_cap[i], &x->rxcur[i]) != 0)
            return 0;
    }
    x->empties = d->start ? d->empties : x->polls;
    enter(x, d->start ? PH_SP_HEAD : PH_BLOCKED);
    x->on = 1;
    if (x->phase != PH_BLOCKED) prx_arm(e, proc, x->vt);
    return 1;
}


int prx_start(tsim_engine *e, int proc)
{
    tsim_proc *p = &e->seg->procs[proc];
    prx_state *x = &e->ep[proc].prx;
    if (x->on || !p->prx.start ||
        atomic_load_explicit(&p->prx.gen, memory_order_acquire) == x->gen)
        return x->on;
    /* a loop handed over before its advance that the engine won't run must
     * run on the processor, now */
    return adopt(e, proc) ? 1 : -1;
}


/* The processor's view at vt is final once nothing before vt can still
 * happen: no queued event is earlier (this step's own key is the lowest of
 * its time; a step waiting in eng_run_before counts as one) and no
 * processor can inject before the horizon. Steps whose view is final run
 * at once instead of as events of their own. */
int prx_settled(tsim_engine *e, uint64_t vt)
{
    return vt <= e->now || (vt <= e->h && !evq_any_before(&e->q, vt) && e->nest_t >= vt);
}

int prx_trigger(tsim_engine *e, int proc, uint64_t t, int rec_fifo)
{
    prx_state *x = &e->ep[proc].prx;
    if (!x->on && !adopt(e, proc)) return 0;
    if (x->phase != PH_BLOCKED) return 1; /* the running loop will see it */
    if (rec_fifo < 0) { /* room in injection FIFO -1 - rec_fifo */
        int f = -1 - rec_fifo;
        if (!(x->inj_full & (1u << f)) ||
            prx_room(&e->seg->procs[proc].inj[f]) < TSIM_MAX_CHUNKS)
            return 1;
    }
    if (t > x->vt) x->vt = t;
    if (x->prog == TSIM_PRX_PROG_TREE) { /* only a torus packet gets here */
        x->phase = PH_T_TOP;
        prx_arm(e, proc, x->vt);
        return 1;
    }
    enter(x, x->prog == TSIM_PRX_PROG_A2A ? PH_A_TOP : PH_SP_HEAD);
    x->moved = 0;
    prx_arm(e, proc, x->vt);
    return 1;
}

int prx_tree_trigger(tsim_engine *e, int proc, uint64_t t, uint32_t bits)
{
    prx_state *x = &e->ep[proc].prx;
    if (!x->on && !adopt(e, proc)) return 0;
    /* another loop: its mask has no collective-network bits */
    if (x->prog != TSIM_PRX_PROG_TREE || x->phase != PH_BLOCKED) return 1;
    if (!tree_prx_wants(e, proc, bits)) return 1;
    if (t > x->vt) x->vt = t;
    x->phase = PH_T_TOP;
    prx_arm(e, proc, x->vt);
    return 1;
}

/* Gives the processor back at the current clock, where its own code runs. */
void prx_handover(tsim_engine *e, int proc, int resume)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    wr_flush(e, proc);
    tsim_prx *d = &p->prx;
    if (x->prog == TSIM_PRX_PROG_A2A) a2a_answer(e, proc, d);
    if (x->prog == TSIM_PRX_PROG_TREE) tree_prx_answer(e, proc, d);
    for (uint32_t k = 0; k < x->ntx; k++) {
        d->tx[k].off = x->tx[k].off;
        d->tx[k].charged = x->tx[k].charged;
    }
    d->ring_pos = x->ring_pos;
    for (uint32_t i = 0; i < x->nrx; i++) {
        d->rx[i].got = x->rx[i].got;
        d->rx[i].hi = x->rx[i].hi;
    }
    d->resume = (uint32_t)resume;
    d->moved = x->moved;
    d->consumed = x->consumed;
    d->inj_full = x->inj_full << 8;
    d->round_pos = resume == TSIM_PRX_ADVANCE || resume == TSIM_PRX_TAIL ? x->rr : 0;
    d->round_sent = resume == TSIM_PRX_ADVANCE || resume == TSIM_PRX_TAIL ? x->round : 0;
    d->pkts_recv = x->pkts_recv;
    d->pkts_sent = x->pkts_sent;
    d->reordered = x->reordered;
    x->on = 0;
    atomic_store(&p->vt, x->vt);
    eng_wake(e, proc, x->vt); /* publishes the answer (seq_cst) before the state */
}

void prx_inject(tsim_engine *e, int proc, int fifo, uint32_t dst, unsigned flags, unsigned group,
                const uint8_t sw[8], const void *data, size_t n)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    tsim_ring *r = &p->inj[fifo];
    unsigned chunks = prx_chunks(n);
    x->vt += e->prm.pkt_write_cycles;
    atomic_store(&p->vt, x->vt);
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    tsim_slot *s = &r->slot[h % TSIM_RING_SLOTS];
    s->m.t_inject = x->vt;
    s->m.src = (uint32_t)proc;
    int dc[3];
    tsim_coords(&e->g, (int)dst / TSIM_CPUS, dc);
    s->p.hw = (tsim_hwhdr){{(uint8_t)dc[0], (uint8_t)dc[1], (uint8_t)dc[2]},
                           (uint8_t)chunks, (uint8_t)flags, 0, (uint8_t)group, 0};
    memcpy(s->p.sw, sw, sizeof s->p.sw);
    memcpy(s->p.payload, data, n);
    atomic_fetch_add(&r->used, chunks);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    atomic_fetch_add_explicit(&p->pkts_injected, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->bytes_injected, (uint64_t)chunks * TSIM_CHUNK, memory_order_relaxed);
    uint32_t pk = pkt_alloc(e);
    e->pool[pk].s = *s;
    uint32_t *seen = &e->ep[proc].inj_seen[fifo];
    ev_push_key(e, s->m.t_inject, eng_proc_key(proc, fifo, *seen), EV_INJ, proc, fifo, pk);
    (*seen)++;
    e->prx_sent++;
}

/* A send round: each message in turn one packet, if its FIFO has room;
 * rounds repeat until one sends nothing. Returns 0 when that is so, 1 when
 * the step must wait for the engine to reach vt, -1 when the processor was
 * handed back. A message's last packet is the software's (its completion
 * runs there): the processor is handed back at that message's turn, if
 * its FIFO has room, and goes on with the round from there itself
 * (round_pos). A full FIFO is passed over as the processor would: handing
 * back at the start of every round instead woke a rank per round while
 * that FIFO stayed full (19,354 of 20,968 such hand-backs in a 64-rank
 * halo exchange). */
static int send_round(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    if (x->sp_fresh) x->inj_full = 0, x->sp_fresh = 0;
    for (;;) {
        for (; x->rr < x->ntx; x->rr++) {
            /* the ring's peers from ring_pos on, then the data list */
            uint32_t k = x->rr < x->nring ? (x->ring_pos + x->rr) % x->nring : x->rr;
            tsim_prx_tx *t = &x->tx[k];
            if (!t->live || t->off >= t->len) continue;
            uint64_t n = t->len - t->off < TSIM_PAYLOAD_MAX ? t->len - t->off : TSIM_PAYLOAD_MAX;
            int last = t->len - t->off <= TSIM_PAYLOAD_MAX;
            if (last && prx_room(&p->inj[t->fifo]) >= prx_chunks(n)) {
                prx_handover(e, proc, x->phase == PH_SP_HEAD ? TSIM_PRX_ADVANCE : TSIM_PRX_TAIL);
                return -1;
            }
            if (last && !prx_settled(e, x->vt)) return 1; /* its gather is the processor's if room comes */
            if (t->niov && t->charged != t->off + 1) {
                /* the message layer gathers the packet before it tries
                 * the FIFO (ml_send.c's msg_bytes), once per offset */
                uint64_t c = (uint64_t)tsim_layout_segs(x->txiov[k], t->niov, &x->txcur[k], t->off, n) *
                             e->prm.ddt_seg_cycles;
                t->charged = t->off + 1;
                x->vt += c;
                atomic_store(&p->vt, x->vt);
                atomic_fetch_add_explicit(&p->ddt_cycles, c, memory_order_relaxed);
            }
            if (prx_room(&p->inj[t->fifo]) < prx_chunks(n)) {
                /* room only grows with the engine's events: a full FIFO is
                 * believed once the engine has reached vt, as the packet
                 * layer's sync does */
                if (!prx_settled(e, x->vt)) return 1;
                x->inj_full |= 1u << t->fifo;
                continue;
            }
            const uint8_t *data = tx_bytes(e, proc, (int)k, t->off, (size_t)n);
            if (!data) return -1; /* the job is failing */
            uint8_t sw[8] = {t->type, 0};
            uint16_t id = t->id;
            uint32_t off = (uint32_t)t->off;
            memcpy(sw + 2, &id, sizeof id);
            memcpy(sw + 4, &off, sizeof off);
            prx_inject(e, proc, t->fifo, t->dst, t->flags, t->group, sw, data, (size_t)n);
            t->off += n;
            x->pkts_sent++;
            x->moved++;
            x->round++;
        }
        int again = x->round > 0;
        x->rr = x->round = 0;
        if (x->nring) x->ring_pos = (x->ring_pos + 1) % x->nring;
        if (!again) return 0;
    }
}

/* The reception a data packet belongs to, or NULL. */
static tsim_prx_rx *match(prx_state *x, const tsim_slot *s)
{
    uint16_t id;
    memcpy(&id, s->p.sw + 2, sizeof id);
    for (uint32_t i = 0; i < x->nrx; i++) {
        tsim_prx_rx *rx = &x->rx[i];
        if (rx->type == s->p.sw[0] && rx->id == id &&
            (rx->src == UINT32_MAX || rx->src == s->m.src))
            return rx;
    }
    return NULL;
}

/* One poll at vt: 1 a packet was read, 0 none was visible, -1 handed back. */
int prx_visible(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    eproc *q = &e->ep[proc];
    int best = -1;
    uint64_t best_t = UINT64_MAX;
    for (uint32_t m = q->rec_pending; m; m &= m - 1) { /* lowest FIFO first: ties go to it */
        int f = __builtin_ctz(m);
        tsim_ring *r = &p->rec[f];
        uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (q->rec_head[f] == tl) { /* what was delivered, not the ring's word */
            q->rec_pending &= ~(1u << f);
            continue;
        }
        uint64_t a = r->slot[tl % TSIM_RING_SLOTS].m.t_arrive;
        if (a < best_t) best_t = a, best = f;
    }
    return best >= 0 && best_t < x->vt ? best : -1;
}

void prx_consume(tsim_engine *e, int proc, int f)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    tsim_ring *r = &p->rec[f];
    uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    tsim_slot *s = &r->slot[tl % TSIM_RING_SLOTS];
    int chunks = e->ep[proc].rec_chunks[f][tl % TSIM_RING_SLOTS];
    x->vt += e->prm.pkt_read_cycles;
    atomic_store(&p->vt, x->vt);
    s->m.t_done = x->vt;
    eproc *q = &e->ep[proc];
    ev_push_key(e, s->m.t_done, eng_proc_key(proc, 8 + f, q->rec_seen[f]), EV_REC_FREE, proc, f,
                (uint32_t)chunks);
    q->rec_seen[f]++;
    atomic_fetch_sub(&r->used, (uint32_t)chunks);
    atomic_store_explicit(&r->tail, tl + 1, memory_order_release);
    e->prx_read++;
}

static int poll_once(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    if (!e->ep[proc].rec_pending) return 0; /* nothing delivered: a sender's polls, mostly */
    int best = prx_visible(e, proc);
    if (best < 0) return 0;
    tsim_ring *r = &p->rec[best];
    uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    tsim_slot *s = &r->slot[tl % TSIM_RING_SLOTS];
    tsim_prx_rx *rx = match(x, s);
    if (rx && prx_wr_ready(e, proc) != 0) rx = NULL; /* before any step */
    uint32_t off;
    memcpy(&off, s->p.sw + 4, sizeof off);
    uint64_t n = rx && off <= rx->len ? (rx->len - off < TSIM_PAYLOAD_MAX ? rx->len - off
                                                                         : TSIM_PAYLOAD_MAX)
                                      : 0;
    if (!rx || off > rx->len || rx->got + n >= rx->len) {
        prx_handover(e, proc, TSIM_PRX_POLL);
        return -1;
    }
    /* the bytes first: a write that fails leaves the packet to the processor */
    uint64_t w = off < rx->cap ? (off + n <= rx->cap ? n : rx->cap - off) : 0, segs = 0;
    if (w && (!rx->niov || rx->buf) && prx_wr_add(e, proc, rx->buf + off, s->p.payload, w) != 0) {
        prx_handover(e, proc, TSIM_PRX_POLL);
        return -1;
    }
    if (w && rx->niov && rx->buf) { /* a layout's host stage: its pieces counted */
        size_t i = (size_t)(rx - x->rx);
        segs = tsim_layout_segs(x->rxiov[i], rx->niov, &x->rxcur[i], off, w);
    } else if (w && rx->niov) { /* scattered into a layout: each piece its own write */
        size_t i = (size_t)(rx - x->rx), k;
        uint64_t a;
        for (uint64_t done = 0; done < w; done += k, segs++) {
            k = tsim_layout_piece(x->rxiov[i], rx->niov, &x->rxcur[i], off + done, w - done, &a);
            if (!k || prx_wr_add(e, proc, a, s->p.payload + done, k) != 0) {
                prx_handover(e, proc, TSIM_PRX_POLL); /* the pieces written are rewritten by it */
                return -1;
            }
        }
    }
    prx_consume(e, proc, best);
    /* the message layer's dispatch of a data packet (ml_rx_write), and its
     * scatter into a layout */
    x->vt += x->dispatch_cycles + segs * e->prm.ddt_seg_cycles;
    if (segs)
        atomic_fetch_add_explicit(&e->seg->procs[proc].ddt_cycles, segs * e->prm.ddt_seg_cycles,
                                  memory_order_relaxed);
    if (off < rx->hi) x->reordered++;
    else rx->hi = off;
    rx->got += n;
    x->pkts_recv++;
    x->consumed++;
    x->moved++;
    return 1;
}

/* An advance that moved nothing, with nothing in the reception FIFOs, is
 * followed by ones just like it (the same full FIFOs passed over, the same
 * empty poll, poll_cycles later each) for as long as their view is
 * settled with no event before it: nothing can change what they see. The
 * loop's next advances up to that point, short of the last empty one
 * before it blocks, are done at once (a sender waiting for room makes
 * several a packet in an MPI stream). */
static void skip_empty(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    uint64_t pc = e->prm.poll_cycles, lim = e->h;
    if (e->ep[proc].rec_pending || !pc || x->polls - x->empties < 2) return;
    if (e->q.top.t < lim) lim = e->q.top.t; /* none: UINT64_MAX */
    if (e->nest_t < lim) lim = e->nest_t;
    if (x->vt > lim) return;
    /* advances at vt, vt + pc, ... up to lim, each ending with ++empties < polls */
    uint64_t k = (lim - x->vt) / pc + 1, most = x->polls - 1 - x->empties;
    if (k > most) k = most;
    x->vt += k * pc;
    x->empties += (uint32_t)k;
    if (x->nring) x->ring_pos = (uint32_t)((x->ring_pos + k) % x->nring);
}

int prx_ready(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    tsim_proc *p = &e->seg->procs[proc];
    for (uint32_t m = e->ep[proc].rec_pending; m; m &= m - 1) {
        int f = __builtin_ctz(m);
        if (e->ep[proc].rec_head[f] != atomic_load(&p->rec[f].tail)) return 1;
    }
    for (uint32_t m = x->inj_full & ((1u << TSIM_NINJ) - 1); m; m &= m - 1) /* those found full */
        if (prx_room(&p->inj[__builtin_ctz(m)]) >= TSIM_MAX_CHUNKS) return 1;
    return 0;
}

void prx_step(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    x->armed = 0;
    if (!x->on) return;
    if (x->prog == TSIM_PRX_PROG_A2A) {
        a2a_step(e, proc);
        return;
    }
    if (x->prog == TSIM_PRX_PROG_TREE) {
        tree_prx_step(e, proc);
        return;
    }
    for (;;) {
        if (!prx_settled(e, x->vt)) { /* what it sees at vt needs the engine at vt */
            /* the events before its step's (vt, key) run now, as they
             * would before that step's EV_PROXY, which then need not be
             * queued and popped (about five a packet in an MPI stream) */
            if (eng_run_before(e, x->vt, eng_proxy_key(proc))) continue;
            prx_arm(e, proc, x->vt);
            return;
        }
        switch (x->phase) {
        case PH_SP_HEAD:
        case PH_SP_TAIL: {
            int rc = send_round(e, proc);
            if (rc < 0) return;
            if (rc > 0) continue;
            if (x->phase == PH_SP_HEAD) {
                enter(x, PH_POLL);
                x->consumed = 0;
            } else { /* an advance that moved: the loop starts the next one */
                x->empties = 0;
                enter(x, PH_SP_HEAD);
                x->moved = 0;
            }
            break;
        }
        case PH_POLL: {
            if (x->consumed == x->batch) { /* the advance returns without an empty poll */
                enter(x, PH_SP_TAIL);
                break;
            }
            int rc = poll_once(e, proc);
            if (rc < 0) return;
            if (rc > 0) break;
            x->vt += e->prm.poll_cycles;
            if (x->moved && !x->flat) {
                enter(x, PH_SP_TAIL);
                break;
            }
            if (!x->flat && ++x->empties < x->polls) {
                enter(x, PH_SP_HEAD);
                skip_empty(e, proc);
                break;
            }
            enter(x, PH_BLOCKED); /* ml_idle: blocks until a packet or room */
            atomic_store(&e->seg->procs[proc].vt, x->vt);
            if (!prx_ready(e, proc)) return;
            enter(x, PH_SP_HEAD);
            x->moved = 0;
            break;
        }
        default:
            return;
        }
    }
}
