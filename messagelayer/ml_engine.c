/* The message layer's wait loop, run by the engine for a blocked rank
 * (ML_PROG_WAIT; torus-sim/tsim_prog.h).
 *
 * A rank blocks in its wait loop (MPI_Wait, a collective, a full FIFO)
 * and hands over the part of it that needs none of its code
 * (ml_handoff.c): the data packets of receptions already matched, the
 * remaining packets of messages already going out. The engine runs it at
 * exactly the simulated times and costs the rank would have had:
 *
 *   advance  = send round (SP), then polls until one finds nothing or
 *              `batch` packets were read, then, if anything moved, another
 *              send round (SP tail);
 *   the loop = advances until `polls` of them in a row moved nothing, then
 *              block until a packet arrives or a full FIFO has room.
 *
 * The first packet the loop can't handle here (a new message, a control
 * packet, the packet that completes a reception or the last one of a
 * message, whose callbacks are the rank's) hands the rank back at that
 * moment's clock, with a resume point (ml_resume: the start of an advance,
 * its polls, or its closing send round) that makes its own next steps the
 * ones the loop would have taken. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ml_internal.h"

#define TX_AHEAD (64 * 1024)
#define MAX_POLLS (1u << 20)
#define MAX_BATCH 1024
#define LAYOUT_READ 512       /* pieces per read of a send layout */
#define LAYOUT_MAX (1u << 24) /* segments of a described layout */


/* The engine's own data for one processor: bytes of the outgoing messages
 * read ahead, and the layouts' segment lists with a cursor each. */
typedef struct wait_priv {
    uint8_t *txbuf[ML_HO_TX];
    uint64_t txbuf_off[ML_HO_TX], txbuf_len[ML_HO_TX];
    struct iovec *rxiov[ML_HO_RX], *txiov[ML_HO_TX];
    size_t rxiov_cap[ML_HO_RX], txiov_cap[ML_HO_TX];
    ml_cursor rxcur[ML_HO_RX], txcur[ML_HO_TX], txrcur[ML_HO_TX]; /* txrcur: read-ahead */
} wait_priv;

static void wait_free(void *p)
{
    wait_priv *w = p;
    if (!w) return;
    for (int k = 0; k < ML_HO_TX; k++) free(w->txbuf[k]), free(w->txiov[k]);
    for (int k = 0; k < ML_HO_RX; k++) free(w->rxiov[k]);
    free(w);
}

/* Bytes [off, off + n) of outgoing message k, read ahead in large pieces
 * (the sender may not touch its buffer until the send completes). */
static const uint8_t *tx_bytes(tsim_port *pt, const ml_wait_state *st, wait_priv *w, int k,
                               uint64_t off, size_t n)
{
    const ml_ho_tx *t = &st->tx[k];
    if (off >= w->txbuf_off[k] && off + n <= w->txbuf_off[k] + w->txbuf_len[k])
        return w->txbuf[k] + (off - w->txbuf_off[k]);
    if (!w->txbuf[k] && !(w->txbuf[k] = malloc(TX_AHEAD))) return NULL;
    size_t len = t->len - off < TX_AHEAD ? (size_t)(t->len - off) : TX_AHEAD;
    if (len < n) return NULL;
    if (t->niov && !t->buf) { /* a layout (not staged): its pieces, up to a read's worth of them */
        struct iovec l[LAYOUT_READ], r[LAYOUT_READ];
        size_t got = 0, k2;
        int cnt = 0;
        uint64_t a;
        while (got < len && cnt < LAYOUT_READ &&
               (k2 = ml_layout_piece(w->txiov[k], t->niov, &w->txrcur[k], off + got, len - got, &a))) {
            l[cnt] = (struct iovec){w->txbuf[k] + got, k2};
            r[cnt++] = (struct iovec){(void *)(uintptr_t)a, k2};
            got += k2;
        }
        if (got < n || pt->ops->readv(pt, l, r, cnt, got, "hand-off: a send layout the engine cannot read") != 0)
            return NULL;
        len = got;
    } else if (pt->ops->read(pt, w->txbuf[k], t->buf + off, len,
                             "hand-off: a send buffer the engine cannot read") != 0) {
        return NULL;
    }
    w->txbuf_off[k] = off;
    w->txbuf_len[k] = len;
    return w->txbuf[k];
}

/* A layout's segment list, copied into the engine (*v, grown as needed):
 * 0, or -1 if it can't be (the hand-off is then refused). */
static int read_layout(tsim_port *pt, uint64_t addr, uint64_t niov, uint64_t total, struct iovec **v,
                       size_t *cap, ml_cursor *cur)
{
    if (!niov || niov > LAYOUT_MAX || !addr) return -1;
    if (*cap < niov) {
        struct iovec *nv = realloc(*v, niov * sizeof **v);
        if (!nv) return -1;
        *v = nv;
        *cap = niov;
    }
    size_t bytes = niov * sizeof **v;
    if (pt->ops->read(pt, *v, addr, bytes, "hand-off: a layout the engine cannot read") != 0) return -1;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < niov; i++) sum += (*v)[i].iov_len;
    *cur = (ml_cursor){0, 0};
    return sum == total ? 0 : -1;
}

/* Reception i of the hand-off, checked, its layout (if any) read: 0, or
 * -1 if it is not one the loop could have. */
static int rx_take(tsim_port *pt, ml_wait_state *st, wait_priv *w, uint32_t i)
{
    const ml_ho_rx *rx = &st->rx[i];
    if (rx->got >= rx->len || rx->len > UINT32_MAX || rx->lo >= rx->len ||
        (rx->src != UINT32_MAX && rx->src >= (uint32_t)(pt->g->nnodes * TSIM_CPUS)))
        return -1;
    if (rx->niov && read_layout(pt, rx->iov, rx->niov, rx->cap, &w->rxiov[i], &w->rxiov_cap[i],
                                &w->rxcur[i]) != 0)
        return -1;
    return 0;
}

/* The posted receives and reserved slots (ml_engine_match.c): as the
 * hand-off describes them, nothing taken yet. */
static int posted_ok(const ml_wait_state *st)
{
    if (!st->nposted) return !st->ntaken && !st->nslots && !st->grant_owe;
    if (st->flat || st->nposted > ML_HO_POST || st->nres > ML_HO_TAKEN || st->ntaken || st->nslots || st->grant_owe ||
        !st->peers || !st->ranks || !st->co_slots || !st->co_parts)
        return 0;
    for (int i = 0; i < ML_MATCH_KEYS; i++)
        if (st->rule.off[i] > ML_HO_HDR - sizeof(uint32_t)) return 0;
    if (st->rule.veto_off > ML_HO_HDR - sizeof(uint32_t)) return 0;
    for (uint32_t i = 0; i < st->nposted; i++)
        if (st->posted[i].taken) return 0;
    for (uint32_t i = 0; i < st->nres; i++)
        for (uint32_t j = 0; j <= i; j++)
            if (st->res_slot[i] >= ML_MAX_IDS || (j < i && st->res_slot[j] == st->res_slot[i])) return 0;
    return 1;
}

/* Takes a hand-off the rank's loop could be in, every message and
 * reception checked: anything else is refused (the rank runs it). */
static int wait_adopt(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start)
{
    ml_wait_state *st = state;
    if (st->polls == 0 || st->polls > MAX_POLLS || st->batch == 0 || st->batch > MAX_BATCH ||
        st->nrx > ML_HO_RX || (start && st->empties >= st->polls) ||
        (*wait & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL || st->ntx > ML_HO_TX ||
        st->nring > st->ntx || (st->nring && st->ring_pos >= st->nring) || st->nwt > ML_HO_WT ||
        st->ngranted || st->co_owe || st->nfin || st->nco_fin || st->wait_done || st->nwait > ML_HO_WAIT ||
        st->wait_left != st->nwait || !posted_ok(st))
        return 0;
    if (!*priv && !(*priv = calloc(1, sizeof(wait_priv)))) return 0;
    wait_priv *w = *priv;
    int nprocs = pt->g->nnodes * TSIM_CPUS;
    uint8_t qmax = st->nwait ? 2 : 0; /* quiet completions only in a wait that says what it is for */
    for (uint32_t k = 0; k < st->ntx; k++) {
        const ml_ho_tx *t = &st->tx[k];
        if (!t->live) continue;
        if (t->fifo >= TSIM_NINJ || t->dst >= (uint32_t)nprocs || t->off >= t->len ||
            t->len > t->whole || t->group >= TSIM_CPUS || t->quiet > qmax * (k >= st->nring) || t->fin ||
            (t->flags & ~(TSIM_F_DYNAMIC | TSIM_F_HP)) != 0)
            return 0;
        if (t->niov && read_layout(pt, t->iov, t->niov, t->len, &w->txiov[k], &w->txiov_cap[k],
                                   &w->txcur[k]) != 0)
            return 0;
        w->txrcur[k] = w->txcur[k];
        w->txbuf_len[k] = 0;
    }
    /* sends waiting for grants: flat buffers from offset 0, distinct ids */
    for (uint32_t i = 0; i < st->nwt; i++) {
        const ml_ho_tx *t = &st->wt[i].t;
        if (st->wt[i].granted || t->fifo >= TSIM_NINJ || t->dst >= (uint32_t)nprocs || t->off ||
            !t->len || t->len != t->whole || t->group >= TSIM_CPUS || t->niov || t->charged ||
            t->quiet > qmax || t->fin ||
            t->type != T_RZV_DATA || t->id >= ML_MAX_IDS || (t->flags & ~(TSIM_F_DYNAMIC | TSIM_F_HP)) != 0)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (st->wt[j].t.id == t->id) return 0;
    }
    for (uint32_t i = 0; i < st->nrx; i++)
        if (st->rx[i].fin || st->rx[i].quiet > qmax || rx_take(pt, st, w, i) != 0) return 0;
    /* handed over at its start: before an advance, or at a poll of one
     * (ml_advance_then_hand: what it moved and read so far) */
    ml_resume at = st->res;
    if (at.point != ML_RESUME_NONE &&
        (!start || at.point != ML_RESUME_POLL || at.consumed > st->batch || at.moved < at.consumed))
        return 0;
    st->inj_full = (*wait >> 8) & 0xffu;
    st->res = (ml_resume){.point = at.point, .moved = at.moved, .consumed = at.consumed};
    /* Handed over as it blocks, the loop has had its empty advances: once
     * woken it counts from zero only after an advance that moves, as the
     * rank's own loop (a new wait) would. The two agree because a wake always
     * brings what the first advance moves: a packet arrived before the wake
     * time, or room for a whole packet in a FIFO a message found full. */
    if (!start) st->empties = st->polls;
    st->blocked = !start;
    if (start && at.point == ML_RESUME_NONE) ml_adv_begin(&st->res);
    return 1;
}

/* The engine reads a message's bytes ahead from the rank's memory. */
typedef struct engine_src {
    tsim_port *pt;
    const ml_wait_state *st;
    wait_priv *w;
    int k;
} engine_src;

/* What the engine's driver of the advance needs (ml_adv_ops' ctx). */
typedef struct engine_ctx {
    tsim_port *pt;
    ml_wait_state *st;
    wait_priv *w;
} engine_ctx;

static const void *engine_bytes(void *arg, const ml_ho_tx *t, uint64_t off, size_t n)
{
    (void)t;
    engine_src *s = arg;
    return tx_bytes(s->pt, s->st, s->w, s->k, off, n);
}

/* A send round: each message in turn one packet, if its FIFO has room;
 * rounds repeat until one sends nothing. Returns 0 when that is so,
 * TSIM_RUN_WAIT, TSIM_RUN_BACK or TSIM_RUN_FAIL. A message's last packet
 * is the rank's (its completion runs there): it is handed back at that
 * message's turn, if its FIFO has room, and goes on with the round from
 * there itself (round_pos); unless the completion is quiet (ml_wait_for),
 * which the engine records for the rank to run when it wakes. A full FIFO is passed over as the rank would:
 * a hand-back at the start of every round would wake it once a round
 * while that FIFO stayed full. */
static int send_round(void *ctx, ml_resume *a)
{
    engine_ctx *c = ctx;
    tsim_port *pt = c->pt;
    ml_wait_state *st = c->st;
    wait_priv *w = c->w;
    if (a->fresh) st->inj_full = 0, a->fresh = 0;
    for (;;) {
        for (; a->round_pos < st->ntx; a->round_pos++) {
            /* the ring's peers from ring_pos on, then the data list */
            uint32_t k = a->round_pos < st->nring ? (st->ring_pos + a->round_pos) % st->nring : a->round_pos;
            ml_ho_tx *t = &st->tx[k];
            /* a split's next part: where the rank's own description of the
             * message would now be */
            if (t->live && t->off >= t->len && t->off < t->whole &&
                ml_rzv_next_part(t, pt->prm->ml_coproc_align) != 0)
                return ml_ho_back(st, ML_BACK_OTHER);
            if (!t->live || t->off >= t->len) continue;
            if (t->len == t->whole && t->len - t->off <= TSIM_PAYLOAD_MAX && !t->quiet) { /* the last packet */
                if (tsim_port_room(pt, t->fifo, tsim_chunks(t->len - t->off)) == 1) return ml_ho_back(st, ML_BACK_TX_DONE);
                if (!pt->ops->settled(pt)) return TSIM_RUN_WAIT; /* its gather is the rank's if room comes */
            }
            engine_src src = {pt, st, w, (int)k};
            int rc = ml_data_send(pt, t, w->txiov[k], &w->txcur[k], engine_bytes, &src);
            if (rc > 1) return rc;
            if (!rc) {
                st->inj_full |= 1u << t->fifo;
                continue;
            }
            a->pkts_sent++;
            a->moved++;
            a->round_sent++;
            if (t->off >= t->whole) t->fin = (uint8_t)ml_ho_record(pt, st, t->quiet); /* a quiet one's */
        }
        int again = a->round_sent > 0;
        a->round_pos = a->round_sent = 0;
        if (st->nring) st->ring_pos = (st->ring_pos + 1) % st->nring;
        if (!again) return 0;
    }
}

/* The reception a data packet belongs to, or NULL. */
static ml_ho_rx *match(ml_wait_state *st, const tsim_slot *s, ml_sw sw)
{
    for (uint32_t i = 0; i < st->nrx; i++) {
        ml_ho_rx *rx = &st->rx[i];
        if (rx->type == sw.type && rx->id == sw.id && (rx->src == UINT32_MAX || rx->src == s->m.src))
            return rx;
    }
    return NULL;
}

/* Message t goes to the head of the data list, as a grant puts it
 * (ml_data_phase): in a send round's order behind the ring's peers
 * (position nring), the messages after it one place on, with the engine's
 * data for them. Only between send rounds (round_pos 0). */
static void tx_push_head(ml_wait_state *st, wait_priv *w, const ml_ho_tx *t)
{
    uint32_t at = st->nring, n = st->ntx;
    uint8_t *buf = w->txbuf[n];
    struct iovec *iov = w->txiov[n];
    size_t icap = w->txiov_cap[n];
    for (uint32_t k = n; k > at; k--) {
        st->tx[k] = st->tx[k - 1];
        w->txbuf[k] = w->txbuf[k - 1];
        w->txbuf_off[k] = w->txbuf_off[k - 1];
        w->txbuf_len[k] = w->txbuf_len[k - 1];
        w->txiov[k] = w->txiov[k - 1];
        w->txiov_cap[k] = w->txiov_cap[k - 1];
        w->txcur[k] = w->txcur[k - 1];
        w->txrcur[k] = w->txrcur[k - 1];
    }
    st->tx[at] = *t;
    w->txbuf[at] = buf;
    w->txbuf_off[at] = w->txbuf_len[at] = 0;
    w->txiov[at] = iov;
    w->txiov_cap[at] = icap;
    w->txcur[at] = w->txrcur[at] = (ml_cursor){0, 0};
    st->ntx = n + 1;
}

/* A grant for a send the rank waits for (ml_rzv.c's, as its T_GRANT
 * handler takes it): read, dispatched, ml_rzv_cycles, and the message's
 * data joins the send rounds. 1, or TSIM_RUN_BACK when it is not one of
 * those or there is no place for it (the rank takes it). */
static int take_grant(tsim_port *pt, ml_wait_state *st, wait_priv *w, int f, ml_sw sw)
{
    ml_ho_wt *g = NULL;
    for (uint32_t i = 0; i < st->nwt && !g; i++)
        if (!st->wt[i].granted && st->wt[i].t.id == sw.id) g = &st->wt[i];
    if (!g || st->ntx >= ML_HO_TX || sw.w >= ML_MAX_IDS) return ml_ho_back(st, ML_BACK_CTL);
    ml_ho_tx t = g->t;
    if (ml_rzv_grant(&t, (uint16_t)sw.w, sw.b, pt->prm->ml_coproc_align) != 0) return ml_ho_back(st, ML_BACK_OTHER);
    pt->ops->consume(pt, f);
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge(pt, pt->prm->ml_rzv_cycles);
    g->slot = (uint16_t)sw.w;
    g->b = sw.b;
    g->granted = (uint8_t)++st->ngranted;
    tx_push_head(st, w, &t);
    return 1;
}

/* The coprocessor's loop meets the first data packet of a reception the
 * main processor granted it after the hand-off (or into a slot whose last
 * reception the loop completed): it is described as the coprocessor's own
 * hand-off would describe it (ml_ho_rx_set), from the reception the main
 * processor set up before its grant, and takes the place of the completed
 * one of its slot, of another completed one, or a new place (so that no
 * two have one id). NULL when it is not one (the rank takes the packet). */
static ml_ho_rx *co_take(tsim_port *pt, ml_wait_state *st, wait_priv *w, uint16_t id)
{
    if (!st->co_slots || (id & (ML_CO_PART - 1)) >= ML_MAX_IDS) return NULL;
    uint32_t i = 0;
    while (i < st->nrx && st->rx[i].id != id) i++;
    if (i == st->nrx) {
        i = 0;
        while (i < st->nrx && st->rx[i].got < st->rx[i].len) i++;
    }
    if (i == ML_HO_RX) return NULL;
    ml_rx img;
    uint64_t at = (uint64_t)(uintptr_t)ml_co_rx((ml_rx *)(uintptr_t)st->co_slots,
                                                (ml_rx *)(uintptr_t)st->co_parts, id);
    if (pt->ops->read(pt, &img, at, sizeof img, "hand-off: a reception the engine cannot read") != 0)
        return NULL;
    if (!img.used || img.cpu != ML_CPU_CO) return NULL;
    ml_ho_rx old = st->rx[i];
    ml_ho_rx_set(&st->rx[i], &img, UINT32_MAX, T_RZV_DATA, id, 0);
    if (rx_take(pt, st, w, i) != 0) {
        st->rx[i] = old;
        return NULL;
    }
    if (i == st->nrx) st->nrx++;
    return &st->rx[i];
}

/* The coprocessor's notice of a reception it completed (co_main's, before
 * its next poll): 1 sent (or none owed); a full FIFO hands the notice to
 * the rank (ml_coproc_handoff sends it, waiting for room). */
static int co_notice(tsim_port *pt, ml_wait_state *st)
{
    if (!st->co_owe) return 1;
    int rc = ml_co_tell(pt, T_CO_RZV_DONE, (uint16_t)(st->co_owe - 1));
    if (rc == 1) st->co_owe = 0;
    return rc == 0 ? ml_ho_back(st, ML_BACK_OTHER) : rc;
}

/* The coprocessor's part of a split reception is in (T_CO_RZV_DONE with
 * ML_CO_PART, as ml_rzv.c takes it): the main processor's reception, as
 * handed over (lo its head), counts the coprocessor's bytes, and is
 * complete if its own part is in: then only where its completion may be
 * recorded. The part is recorded (co_fin, place 0: the rank frees it). */
static int co_part_done(tsim_port *pt, ml_wait_state *st, int f, uint16_t id)
{
    ml_ho_rx *rx = NULL;
    for (uint32_t i = 0; i < st->nrx && !rx; i++)
        if (st->rx[i].type == T_RZV_DATA && st->rx[i].id == id && st->rx[i].lo) rx = &st->rx[i];
    if (!rx || rx->got >= rx->len) return ml_ho_back(st, ML_BACK_CTL);
    uint64_t co = ml_split_end(rx->len, rx->lo, pt->prm->ml_coproc_align) - rx->lo;
    int done = rx->got + co >= rx->len;
    if (rx->got + co > rx->len) return ml_ho_back(st, ML_BACK_OTHER);
    if (done && !rx->quiet) return ml_ho_back(st, ML_BACK_RX_DONE);
    pt->ops->consume(pt, f);
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    rx->got += co;
    st->co_fin[st->nco_fin] = (uint16_t)(id | ML_CO_PART);
    st->co_fin_n[st->nco_fin++] = 0;
    if (done) rx->fin = ml_ho_record(pt, st, rx->quiet);
    return 1;
}

/* The coprocessor's notice to the main processor's loop (ml_rzv.c's
 * T_CO_RZV_DONE, as the rank dispatches it): a split's part (above), or a
 * reception it completed whose completion may be recorded (ml_wait_for,
 * the wait's own included): read from the rank's slots, dispatched,
 * recorded: 1. TSIM_RUN_BACK for any other. */
static int co_done(tsim_port *pt, ml_wait_state *st, int f, ml_sw sw)
{
    uint16_t id = sw.id & (ML_CO_PART - 1);
    if (st->flat || id >= ML_MAX_IDS || st->nco_fin >= ML_HO_COFIN) return ml_ho_back(st, ML_BACK_RX_DONE);
    for (uint32_t i = 0; i < st->nco_fin; i++)
        if (st->co_fin[i] == sw.id) return ml_ho_back(st, ML_BACK_RX_DONE);
    if (sw.id & ML_CO_PART) return co_part_done(pt, st, f, id);
    if (!st->co_slots || !st->nwait) return ml_ho_back(st, ML_BACK_RX_DONE);
    ml_rx img;
    uint64_t at = (uint64_t)(uintptr_t)ml_co_rx((ml_rx *)(uintptr_t)st->co_slots,
                                                (ml_rx *)(uintptr_t)st->co_parts, sw.id);
    if (pt->ops->read(pt, &img, at, sizeof img, "hand-off: a reception the engine cannot read") != 0 ||
        !img.used || img.cpu != ML_CPU_CO || !img.r.completes)
        return ml_ho_back(st, ML_BACK_RX_DONE);
    pt->ops->consume(pt, f);
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    st->co_fin[st->nco_fin] = sw.id;
    st->co_fin_n[st->nco_fin++] =
        (uint16_t)ml_ho_record(pt, st, ml_ho_quiet(st, (uint64_t)(uintptr_t)img.r.completes));
    return 1;
}

/* One poll: 1 a packet was read, 0 none was visible (charged), or
 * TSIM_RUN_WAIT / TSIM_RUN_BACK. A data packet of a reception it knows
 * that does not complete it is the engine's, and a grant for a send it
 * knows. */
static int poll_once(void *ctx, ml_resume *a)
{
    engine_ctx *c = ctx;
    tsim_port *pt = c->pt;
    ml_wait_state *st = c->st;
    wait_priv *w = c->w;
    if (st->grant_owe) return ml_engine_grant(pt, st, a); /* the scout it took goes on */
    int rc = co_notice(pt, st);
    if (rc != 1) return rc;
    int f = pt->ops->poll(pt);
    if (f == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
    if (f < 0) return 0;
    const tsim_slot *s = pt->ops->peek(pt, f);
    ml_sw sw = ml_sw_of(s);
    if (sw.type == T_GRANT || sw.type == T_CO_RZV_DONE) {
        rc = sw.type == T_GRANT ? take_grant(pt, st, w, f, sw) : co_done(pt, st, f, sw);
        if (rc == 1) a->pkts_recv++;
        return rc;
    }
    ml_ho_rx *rx = match(st, s, sw);
    if (sw.type == T_RZV_DATA && st->flat && (!rx || rx->got >= rx->len)) rx = co_take(pt, st, w, sw.id);
    uint64_t off = sw.w;
    uint64_t n = rx && off <= rx->len ? ml_data_bytes(rx->lo, rx->len, off) : 0;
    /* a reception's last packet is the rank's (its completion runs there)
     * unless the completion may be recorded; the coprocessor only tells the
     * main processor. A reception it completed is over (its slot may
     * already carry the next one). */
    int last = rx && off <= rx->len && rx->got + n >= rx->len;
    if (!rx && ml_type_starts(sw.type)) return ml_engine_first(pt, st, f, s, sw, a);
    if (!rx) return ml_ho_back(st, ML_BACK_CTL);
    if (off > rx->len || rx->got >= rx->len) return ml_ho_back(st, ML_BACK_OTHER);
    if (last && !st->flat && !rx->quiet) return ml_ho_back(st, ML_BACK_RX_DONE);
    /* the bytes first: a write that fails leaves the packet to the rank
     * (the pieces written are rewritten by it) */
    size_t i = (size_t)(rx - st->rx);
    ml_sink k = {rx->buf, rx->cap, w->rxiov[i], rx->niov, &w->rxcur[i]};
    int segs = ml_data_put(pt, &k, off, s->p.payload, (size_t)n);
    if (segs < 0) return ml_ho_back(st, ML_BACK_OTHER);
    pt->ops->consume(pt, f);
    /* the message layer's dispatch of a data packet, and its scatter */
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge_ddt(pt, (uint64_t)segs * pt->prm->ddt_seg_cycles);
    ml_data_seen(&rx->hi, &a->reordered, off);
    rx->got += n;
    a->pkts_recv++;
    if (last && st->flat) st->co_owe = 1u + rx->id; /* sent before the next poll, at this clock */
    else if (last) rx->fin = ml_ho_record(pt, st, rx->quiet);
    return 1;
}

/* An advance that moved nothing, with nothing in the reception FIFOs, is
 * followed by ones just like it (the same full FIFOs passed over, the same
 * empty poll, poll_cycles later each) for as long as nothing can change
 * what they see. The loop's next advances up to that point, short of the
 * last empty one before it blocks, are done at once (a sender waiting for
 * room makes several a packet in an MPI stream). */
static void skip_empty(tsim_port *pt, ml_wait_state *st)
{
    uint64_t pc = pt->prm->poll_cycles, lim;
    if (!pc || st->polls - st->empties < 2 || !pt->ops->quiet_until(pt, &lim) || *pt->vt > lim) return;
    /* advances at vt, vt + pc, ... up to lim, each ending with ++empties < polls */
    uint64_t k = (lim - *pt->vt) / pc + 1, most = st->polls - 1 - st->empties;
    if (k > most) k = most;
    *pt->vt += k * pc;
    st->empties += (uint32_t)k;
    if (st->nring) st->ring_pos = (uint32_t)((st->ring_pos + k) % st->nring);
}

static int engine_ready(void *ctx) { return ((engine_ctx *)ctx)->pt->ops->settled(((engine_ctx *)ctx)->pt); }

static const ml_adv_ops engine_ops = {engine_ready, send_round, poll_once};

/* The wait loop: advances (the message layer's own, ml_adv_step) until
 * `polls` of them in a row moved nothing, then block; the coprocessor's
 * flat loop blocks at its first empty poll. */
static int wait_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    ml_wait_state *st = state;
    engine_ctx c = {pt, st, priv};
    ml_resume *a = &st->res;
    if (st->blocked) { /* woken: a new advance */
        st->blocked = 0;
        ml_adv_begin(a);
    }
    for (;;) {
        int rc = ml_adv_step(a, &engine_ops, &c, st->batch);
        if (!rc && st->wait_done) { /* the rank's wait is over with this advance */
            a->point = ML_RESUME_OVER;
            rc = ml_ho_back(st, ML_BACK_WAIT);
        }
        if (rc == TSIM_RUN_BACK) *wait = st->why; /* the runtime counts why */
        if (rc) return rc;
        if (a->moved && !(st->flat && a->empty)) { /* an advance that moved: the next one */
            st->empties = 0;
            ml_adv_begin(a);
            continue;
        }
        if (!st->flat && ++st->empties < st->polls) {
            ml_adv_begin(a);
            skip_empty(pt, st);
            continue;
        }
        st->blocked = 1; /* ml_idle: blocks until a packet or room */
        *wait = TSIM_WAKE_REC_ALL | st->inj_full << 8;
        return TSIM_RUN_BLOCK;
    }
}

static const char *const wait_backs[] = {
    [ML_BACK_OTHER] = "other",           [ML_BACK_NEW] = "a new message",
    [ML_BACK_RX_DONE] = "a reception done", [ML_BACK_TX_DONE] = "a send done",
    [ML_BACK_WAIT] = "the wait's request done", [ML_BACK_CTL] = "a control packet",
    NULL,
};

const tsim_prog ml_wait_prog = {
    .name = "ml-wait",
    .id = ML_PROG_WAIT,
    .state_size = sizeof(ml_wait_state),
    .adopt = wait_adopt,
    .step = wait_step,
    .free = wait_free,
    .backs = wait_backs,
};

void ml_resume_hand_back(ml_resume *r, int polls)
{
    r->point = polls ? ML_RESUME_POLL : ML_RESUME_NONE;
    r->inj_full = 0; /* the advance's send round found nothing to send */
    r->round_pos = r->round_sent = 0;
    r->pkts_sent = r->reordered = 0;
}

int ml_engine_idle_poll(tsim_port *pt, ml_resume *r, int (*take)(void *L, const tsim_slot *s, unsigned *segs),
                        void *L)
{
    int f = pt->ops->poll(pt);
    if (f == TSIM_PORT_WAIT || f < 0) return f == TSIM_PORT_WAIT ? f : 0;
    unsigned segs = 0;
    int rc = take ? take(L, pt->ops->peek(pt, f), &segs) : 0;
    if (rc < 0) return -1;
    if (rc == 0) { /* the rank's own advance takes it from here, in its polls */
        ml_resume_hand_back(r, 1);
        return 2;
    }
    pt->ops->consume(pt, f);
    /* ml_dispatch of a registered type's packet, then the layer's scatter */
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge_ddt(pt, (uint64_t)segs * pt->prm->ddt_seg_cycles);
    r->pkts_recv++;
    r->consumed++;
    r->moved++;
    return 1;
}

int ml_engine_register(void) { return tsim_prog_register(&ml_wait_prog); }
