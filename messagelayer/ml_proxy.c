/* What the engine may do for this processor while it waits.
 *
 * Before a wait loop blocks (ml_wait_idle), it describes to the engine the
 * steps that loop would take without needing this rank's code: the data
 * packets of receptions already matched (where they go) and the remaining
 * packets of the one message going out. The engine then does them at the
 * same simulated times (torus-sim/tsim_proxy.c) and wakes the processor only
 * where its code must run — a new message, a control packet, a completion —
 * with the progress it made and where the loop picks up. Anything the
 * engine can't follow exactly (control packets queued, several messages
 * going out, a first packet waiting for room) is simply not described: the
 * processor then wakes for every packet as before. Messages and
 * receptions with a layout (ml_layout.c) are described by their segment
 * lists, which the engine reads from this process. */
#include <stdlib.h>
#include <string.h>

#include "ml_internal.h"

void ml_act_add(ml_ctx *ml, ml_rx *rx, uint8_t dtype, uint16_t did)
{
    if (rx->act) return;
    rx->act = 1;
    rx->dtype = dtype;
    rx->did = did;
    rx->act_prev = NULL;
    rx->act_next = ml->act_head;
    if (ml->act_head) ml->act_head->act_prev = rx;
    ml->act_head = rx;
}

void ml_act_del(ml_ctx *ml, ml_rx *rx)
{
    if (!rx->act) return;
    rx->act = 0;
    if (rx->act_prev) rx->act_prev->act_next = rx->act_next;
    else ml->act_head = rx->act_next;
    if (rx->act_next) rx->act_next->act_prev = rx->act_prev;
    rx->act_next = rx->act_prev = NULL;
}

/* The send side in the order of a send round: the ring's peers (NULL for
 * one whose message waits for a confirmation: it sends nothing), then the
 * data list. Returns their number, or -1 when it is not describable. */
static int tx_streams(ml_ctx *ml, ml_msg **out)
{
    int n = 0;
    if (ml->ctl_head || ml->nring > TSIM_PRX_TX) return -1;
    for (int i = 0; i < ml->nring; i++) {
        ml_peer *p = &ml->peer[ml->ring[i]];
        ml_msg *m = p->head;
        if (m && m->state == S_QUEUED && p->ae_wait) {
            out[n++] = NULL;
            continue;
        }
        if (!m || m->state != S_SENDING || !m->used ||
            (m->proto != ML_EAGER && m->proto != ML_ADAPTIVE))
            return -1; /* its first packet is still to go: the software's */
        out[n++] = m;
    }
    for (ml_msg *m = ml->data_head; m; m = m->next) {
        if (n == TSIM_PRX_TX) return -1;
        out[n++] = m;
    }
    return n;
}

static void describe_tx(ml_ctx *ml, tsim_prx_tx *t, ml_msg *m)
{
    memset(t, 0, sizeof *t);
    int dproc = ml->map.proc[m->dst];
    /* a layout's data: its host stage, or its segments (buf 0) */
    t->buf = (uint64_t)(uintptr_t)(m->niov ? (const void *)m->stage : m->buf);
    t->len = m->len;
    t->off = m->off;
    t->iov = (uint64_t)(uintptr_t)m->iov;
    t->niov = m->niov;
    t->charged = m->charged;
    t->dst = (uint32_t)dproc;
    t->live = 1;
    if (m->state == S_DATA) { /* after the grant (or a VN refusal): m->seq is the slot */
        int vn = m->proto == ML_VN;
        t->fifo = (uint8_t)(vn ? TSIM_INJ_SP : ml_fifo_for(ml, m->dst));
        t->flags = vn ? 0 : TSIM_F_DYNAMIC;
        t->group = (uint8_t)(vn || !m->used ? dproc % TSIM_CPUS : m->used);
        t->type = vn ? T_VN_DATA : T_RZV_DATA;
        if (!vn && m->used >= ML_CPU_SPLIT) {
            /* a split: the part it is in, which ends where a message would
             * (the engine hands back before a part's last packet) */
            int co;
            t->len = ml_part_end(m->used, m->len, ml->prm->ml_coproc_align, m->off, &co);
            t->group = (uint8_t)(co ? 1 : dproc % TSIM_CPUS);
            t->id = (uint16_t)(co ? m->seq | ML_CO_PART : m->seq);
            return;
        }
    } else {
        int ae = m->proto == ML_ADAPTIVE;
        t->fifo = (uint8_t)ml_fifo_for(ml, m->dst);
        t->flags = ae ? TSIM_F_DYNAMIC : 0;
        t->group = (uint8_t)(dproc % TSIM_CPUS);
        t->type = ae ? T_AE_DATA : T_EAGER_DATA;
    }
    t->id = m->seq;
}

/* Fills the description; 0 if this wait can't be described. */
static int describe(ml_ctx *ml, tsim_prx *d, unsigned polls)
{
    int ntx = tx_streams(ml, ml->reg_tx);
    if (ntx < 0) return 0;
    for (int k = 0; k < ntx; k++) {
        if (ml->reg_tx[k]) describe_tx(ml, &d->tx[k], ml->reg_tx[k]);
        else memset(&d->tx[k], 0, sizeof d->tx[k]);
    }
    d->ntx = (uint32_t)ntx;
    d->nring = (uint32_t)ml->nring;
    d->ring_pos = (uint32_t)ml->ring_pos;
    uint32_t n = 0;
    for (ml_rx *rx = ml->act_head; rx && n < TSIM_PRX_RX; rx = rx->act_next) {
        tsim_prx_rx *r = &d->rx[n];
        r->buf = (uint64_t)(uintptr_t)rx->r.buf;
        r->cap = rx->r.buf || rx->r.niov ? rx->r.cap : 0;
        r->iov = (uint64_t)(uintptr_t)rx->r.iov;
        r->niov = rx->r.niov;
        r->len = rx->len;
        r->got = rx->got;
        r->hi = rx->hi;
        /* rendezvous and VN data name the slot, whoever sends it */
        r->src = rx->dtype == T_RZV_DATA || rx->dtype == T_VN_DATA
                     ? UINT32_MAX : (uint32_t)ml->map.proc[rx->src];
        r->type = rx->dtype;
        r->id = rx->did;
        ml->reg_rx[n++] = rx;
    }
    d->nrx = n;
    d->polls = polls;
    d->batch = ML_ADVANCE_BATCH;
    d->dispatch_cycles = ml->prm->ml_dispatch_cycles;
    d->resume = TSIM_PRX_NONE;
    d->prog = TSIM_PRX_PROG_ML;
    d->flat = 0;
    return 1;
}

/* The engine's progress becomes this rank's. */
static void apply(ml_ctx *ml, tsim_prx *d)
{
    if (d->resume == TSIM_PRX_NONE) return;
    for (uint32_t i = 0; i < d->nrx; i++) {
        ml->reg_rx[i]->got = d->rx[i].got;
        ml->reg_rx[i]->hi = d->rx[i].hi;
    }
    for (uint32_t k = 0; k < d->ntx; k++)
        if (ml->reg_tx[k]) {
            ml->reg_tx[k]->off = d->tx[k].off;
            ml->reg_tx[k]->charged = d->tx[k].charged;
        }
    ml->ring_pos = (int)d->ring_pos;
    ml->st.pkts_recv += d->pkts_recv;
    ml->st.pkts_sent += d->pkts_sent;
    ml->st.reordered += d->reordered;
    ml->inj_full = d->inj_full;
    ml->resume = d->resume == TSIM_PRX_DONE ? TSIM_PRX_NONE : (int)d->resume;
    ml->resume_moved = (int)d->moved;
    ml->resume_pos = (int)d->round_pos;
    ml->resume_sent = (int)d->round_sent;
    ml->resume_consumed = (int)d->consumed;
    d->resume = TSIM_PRX_NONE;
}

int ml_wait_idle(ml_ctx *ml, const char *why, unsigned polls)
{
    tsim_prx *d = &ml->pp->p->prx;
    if (!polls || !ml->proxy || !describe(ml, d, polls)) return ml_idle(ml, why);
    d->start = 0;
    atomic_fetch_add_explicit(&d->gen, 1, memory_order_release);
    int rc = ml_block(ml, why);
    d->polls = 0; /* a later plain block is not described */
    if (rc == 0) apply(ml, d);
    return rc;
}

int ml_wait_delegate(ml_ctx *ml, const char *why, unsigned polls, unsigned empties)
{
    tsim_prx *d = &ml->pp->p->prx;
    if (!polls || empties >= polls || !ml->proxy || ml->resume) return 1;
    /* a packet already here is most likely the software's: no point */
    for (int f = 0; f < TSIM_NREC; f++)
        if (atomic_load_explicit(&ml->pp->p->rec[f].head, memory_order_acquire) !=
            atomic_load_explicit(&ml->pp->p->rec[f].tail, memory_order_relaxed))
            return 1;
    if (!describe(ml, d, polls)) return 1;
    d->start = 1;
    d->empties = empties;
    atomic_fetch_add_explicit(&d->gen, 1, memory_order_release);
    int rc = ml_block(ml, why);
    d->polls = 0;
    d->start = 0;
    if (rc != 0) return -1;
    apply(ml, d);
    return 0;
}

tsim_prx *ml_prx_begin(ml_ctx *ml)
{
    if (!ml->proxy || ml->resume || ml->ctl_head || ml->nring || ml->data_head || ml->inj_full)
        return NULL;
    tsim_prx *d = &ml->pp->p->prx;
    d->prog = TSIM_PRX_PROG_ML; /* until the caller's part is complete */
    d->polls = 1;
    d->flat = 0;
    d->batch = ML_ADVANCE_BATCH;
    d->start = 0;
    d->empties = 0;
    d->ntx = d->nring = d->ring_pos = 0;
    d->nrx = 0;
    d->dispatch_cycles = ml->prm->ml_dispatch_cycles;
    d->resume = TSIM_PRX_NONE;
    return d;
}

int ml_prx_block(ml_ctx *ml, const char *note, unsigned inj_wait)
{
    tsim_prx *d = &ml->pp->p->prx;
    atomic_fetch_add_explicit(&d->gen, 1, memory_order_release);
    int rc = pl_block_need(ml->pp, TSIM_WAKE_REC_ALL | (inj_wait & ~TSIM_WAKE_REC_ALL), TSIM_MAX_CHUNKS, note);
    d->polls = 0;
    d->prog = TSIM_PRX_PROG_ML;
    if (rc != 0) return -1;
    int resume = (int)d->resume;
    apply(ml, d);
    return resume;
}
