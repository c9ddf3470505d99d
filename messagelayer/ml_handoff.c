/* The wait loop handed to the engine: the rank's side.
 *
 * Before a wait loop blocks (ml_wait_idle), it hands the engine the steps
 * that loop would take without needing this rank's code (ML_PROG_WAIT's
 * state: the data packets of receptions already matched, where they go,
 * and the remaining packets of messages going out). The engine runs them
 * (ml_engine.c) and wakes the processor only where its code must run — a
 * new message, a control packet, a completion — with the progress it made
 * and where the loop picks up (ml_resume). Anything the engine can't
 * follow exactly (control packets queued, a first packet waiting for room)
 * is simply not handed over: the processor then wakes for every packet as
 * before. Messages and receptions with a layout (ml_layout.c) are handed
 * over as their segment lists, which the engine reads from this process. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ml_internal.h"
#include "../packetlayer/pl_trace.h"

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

void ml_ho_rx_set(ml_ho_rx *r, const ml_rx *rx, uint32_t src, uint8_t type, uint16_t id, uint32_t lo)
{
    *r = (ml_ho_rx){.buf = (uint64_t)(uintptr_t)rx->r.buf, .cap = rx->r.buf || rx->r.niov ? rx->r.cap : 0,
                    .len = rx->len, .got = rx->got, .hi = rx->hi, .src = src, .type = type, .id = id,
                    .iov = (uint64_t)(uintptr_t)rx->r.iov, .niov = rx->r.niov, .lo = lo};
}

/* A completion the engine may record: it only completes something
 * (ml_msg.completes, ml_recv.completes), in a wait that says what it is
 * for (ml_ho_quiet). */
static uint8_t quiet(const ml_wait_state *d, const void *completes)
{
    return ml_ho_quiet(d, (uint64_t)(uintptr_t)completes);
}

/* A reception's, where ml_rx_complete is all the rank does at its last
 * packet or at the coprocessor's notice of its part of a split: not an
 * adaptive eager one's (also unlinked and freed), nor the VN fallback's. */
static uint8_t rx_quiet(const ml_wait_state *d, const ml_rx *rx)
{
    return rx->dtype == T_EAGER_DATA || rx->dtype == T_RZV_DATA ? quiet(d, rx->r.completes) : 0;
}

void ml_wait_for(ml_ctx *ml, ml_wait_fn fn) { ml->wait_for = fn; }

void ml_match_for(ml_ctx *ml, ml_posted_fn fn) { ml->posted = fn; }

/* The posted receives (ml_match_for), and free slots for the scouts the
 * engine takes (a slot's id travels in the grant's and the data's
 * headers but changes no size or time, so which free one does not
 * matter). The rank replays what the engine matched (ml_replay_first), so
 * nothing its code does is skipped, only put off: not while its
 * receptions are traced (the trace would show them at the replay). */
static void posted_list(ml_ctx *ml, ml_wait_state *d)
{
    if (!ml->posted || pl_tracing()) return;
    ml_posted rows[ML_HO_POST];
    unsigned n = ml->posted(ml->uarg, &d->rule, rows, ML_HO_POST);
    if (!n || n > ML_HO_POST) return;
    for (unsigned i = 0; i < n; i++) {
        ml_ho_post *p = &d->posted[i];
        *p = (ml_ho_post){.any = rows[i].any, .land = rows[i].land, .buf = (uint64_t)(uintptr_t)rows[i].buf,
                          .cap = rows[i].cap, .arg = (uint64_t)(uintptr_t)rows[i].arg,
                          .completes = (uint64_t)(uintptr_t)rows[i].completes};
        memcpy(p->key, rows[i].key, sizeof p->key);
        memcpy(&p->done, &rows[i].done, sizeof p->done);
    }
    for (uint16_t k = 0; k < ML_MAX_IDS && d->nres < ML_HO_TAKEN; k++)
        if (!ml->slots[k].used) d->res_slot[d->nres++] = k;
    d->nposted = n;
    d->co_running = (uint32_t)ml->co_running;
    d->peers = (uint64_t)(uintptr_t)ml->peer;
    d->ranks = (uint64_t)(uintptr_t)ml->map.rank;
}

/* What the wait is for now (ml_wait_fn), each once: two alike would be
 * counted twice. */
static void wait_list(ml_ctx *ml, ml_wait_state *d)
{
    const void *w[ML_HO_WAIT];
    unsigned n = ml->wait_for ? ml->wait_for(ml->uarg, w, ML_HO_WAIT) : 0;
    for (unsigned i = 0; i < n && i < ML_HO_WAIT; i++) {
        uint32_t k = 0;
        while (k < d->nwait && d->wait_for[k] != (uint64_t)(uintptr_t)w[i]) k++;
        if (k == d->nwait && w[i]) d->wait_for[d->nwait++] = (uint64_t)(uintptr_t)w[i];
    }
    d->wait_left = d->nwait;
}

/* The send side in the order of a send round: the ring's peers (NULL for
 * one whose message waits for a confirmation: it sends nothing), then the
 * data list. Returns their number, or -1 when it is not describable. */
static int tx_streams(ml_ctx *ml, ml_msg **out)
{
    int n = 0;
    if (ml->ctl_head || ml->nring > ML_HO_TX) return -1;
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
        if (n == ML_HO_TX) return -1;
        out[n++] = m;
    }
    return n;
}

/* Fills the wait loop's state; 0 if this wait can't be handed over. */
static int describe(ml_ctx *ml, ml_wait_state *d, unsigned polls)
{
    int ntx = tx_streams(ml, ml->reg_tx);
    if (ntx < 0) return 0;
    memset(d, 0, offsetof(ml_wait_state, tx));
    wait_list(ml, d);
    for (int k = 0; k < ntx; k++) {
        ml_msg *m = ml->reg_tx[k];
        if (m) ml_proto_of(m->proto)->wire(ml, m, &d->tx[k]); /* what the rank would send next */
        else memset(&d->tx[k], 0, sizeof d->tx[k]);
        /* the data list's, sent to its end (a split's parts included) */
        d->tx[k].quiet = m && k >= ml->nring ? quiet(d, m->completes) : 0;
    }
    d->ntx = (uint32_t)ntx;
    d->nring = (uint32_t)ml->nring;
    d->ring_pos = (uint32_t)ml->ring_pos;
    uint32_t n = 0;
    for (ml_rx *rx = ml->act_head; rx && n < ML_HO_RX; rx = rx->act_next) {
        /* rendezvous and VN data name the slot, whoever sends it */
        ml_ho_rx_set(&d->rx[n], rx,
                     rx->dtype == T_RZV_DATA || rx->dtype == T_VN_DATA ? UINT32_MAX
                                                                      : (uint32_t)ml->map.proc[rx->src],
                     rx->dtype, rx->did, rx->dtype == T_RZV_DATA && rx->cpu == ML_CPU_SPLIT ? rx->co_lo : 0);
        d->rx[n].quiet = rx_quiet(d, rx);
        ml->reg_rx[n++] = rx;
    }
    d->nrx = n;
    /* the receptions the coprocessor's are set up in: it may take their
     * completion notices where it reads them quiet (ml_engine.c's
     * co_done), and write those of the scouts it takes (ml_rzv.c) */
    d->co_slots = (uint64_t)(uintptr_t)ml->slots;
    d->co_parts = (uint64_t)(uintptr_t)ml->co_part;
    /* the rendezvous sends whose grants the engine may take: the last
     * scouts sent, while they still wait (a layout's are left to the rank) */
    uint32_t nw = 0;
    for (int i = 0; i < ML_HO_WT; i++) {
        uint16_t id = ml->rzv_wait[i];
        ml_msg *m = ml->ids[id];
        if (!m || m->proto != ML_RZV || m->state != S_WAIT || m->niov || !m->len) continue;
        uint32_t j = 0;
        while (j < nw && d->wt[j].t.id != id) j++;
        if (j < nw) continue;
        d->wt[nw] = (ml_ho_wt){.granted = 0};
        ml_rzv_waiting(ml, m, &d->wt[nw].t);
        d->wt[nw].t.quiet = quiet(d, m->completes);
        ml->reg_wt[nw++] = m;
    }
    d->nwt = nw;
    posted_list(ml, d);
    ml->reg_ntx = ntx;
    d->polls = polls;
    d->batch = ML_ADVANCE_BATCH;
    return 1;
}

void ml_resume_apply(ml_ctx *ml, const ml_resume *r)
{
    ml->st.pkts_recv += r->pkts_recv;
    ml->st.pkts_sent += r->pkts_sent;
    ml->st.reordered += r->reordered;
    ml->inj_full = r->inj_full;
    ml->resume = *r;
}

/* The engine's progress becomes this rank's. */
static void apply(ml_ctx *ml, const ml_wait_state *d)
{
    /* the first packets it took first, as they came: MPI's matching runs
     * in that order (a one-packet message's reception lives in tmp until
     * its completion has run, below) */
    ml_rx tmp[ML_HO_TAKEN];
    for (uint32_t i = 0; i < d->ntaken; i++) ml_replay_first(ml, d, &d->taken[i], &tmp[i]);
    for (uint32_t i = 0; i < d->nrx; i++) {
        ml->reg_rx[i]->got = d->rx[i].got;
        ml->reg_rx[i]->hi = d->rx[i].hi;
    }
    /* the grants it took, in its order: each message's data went to the
     * head of the data list (ml_data_phase), behind the ring's peers in a
     * send round, where the engine sent it from */
    int nring = ml->nring, ntx = ml->reg_ntx;
    for (uint32_t g = 1; g <= d->ngranted; g++)
        for (uint32_t i = 0; i < d->nwt; i++) {
            if (d->wt[i].granted != g || ntx >= ML_HO_TX) continue;
            ml_rzv_granted(ml, ml->reg_wt[i]->id, d->wt[i].slot, d->wt[i].b);
            memmove(&ml->reg_tx[nring + 1], &ml->reg_tx[nring], (size_t)(ntx - nring) * sizeof *ml->reg_tx);
            ml->reg_tx[nring] = ml->reg_wt[i];
            ntx++;
        }
    for (int k = 0; k < ntx; k++)
        if (ml->reg_tx[k]) {
            ml->reg_tx[k]->off = d->tx[k].off;
            ml->reg_tx[k]->charged = d->tx[k].charged;
        }
    ml->ring_pos = (int)d->ring_pos;
    ml_resume_apply(ml, &d->res);
    /* a grant whose FIFO was full goes as the rank's dispatch would have sent it */
    for (uint32_t i = 0; i < d->ntaken; i++) ml_rzv_owed(ml, &d->taken[i]);
    /* the coprocessor's parts of splits the engine counted are free again */
    for (uint32_t i = 0; i < d->nco_fin; i++)
        if (d->co_fin[i] & ML_CO_PART) ml->co_part[d->co_fin[i] & (ML_CO_PART - 1)].used = 0;
    /* the messages it sent in full and completed (data list only), in its
     * order: off the list (a send round resumed mid-way counts one place
     * less for each before its position), their callbacks run now */
    uint32_t pos = d->res.round_pos;
    for (uint32_t n = 1; n <= d->nfin; n++) {
        for (int k = 0; k < ntx; k++) {
            if (d->tx[k].fin != n || !ml->reg_tx[k]) continue;
            ml_msg *m = ml->reg_tx[k], **pm = &ml->data_head;
            while (*pm && *pm != m) pm = &(*pm)->next;
            if (*pm) *pm = m->next;
            if ((uint32_t)k < pos) ml->resume.round_pos--;
            ml_msg_done(ml, m);
        }
        /* the receptions it completed, charged there: the rest is ours */
        for (uint32_t i = 0; i < d->nrx; i++)
            if (d->rx[i].fin == n) ml_rx_finish(ml, ml->reg_rx[i]);
        for (uint32_t i = 0; i < d->nco_fin; i++)
            if (d->co_fin_n[i] == n) ml_rx_finish(ml, &ml->slots[d->co_fin[i]]);
    }
}

/* Blocks pp with its hand-off block naming prog (start: the loop runs at
 * once); returns pl_block_need's answer. The block names nothing once the
 * processor runs again: a later plain block hands nothing over. */
static int handoff_block(pl_proc *pp, uint32_t prog, uint32_t start, unsigned mask, const char *note)
{
    tsim_handoff *h = &pp->p->handoff;
    h->prog = prog;
    h->start = start;
    h->back = 0;
    atomic_fetch_add_explicit(&h->gen, 1, memory_order_release);
    int rc = pl_block_need(pp, mask, TSIM_MAX_CHUNKS, note);
    h->prog = 0;
    h->start = 0;
    return rc;
}

static ml_wait_state *wait_state(pl_proc *pp) { return (ml_wait_state *)(void *)pp->p->handoff.state; }

int ml_wait_idle(ml_ctx *ml, const char *why, unsigned polls)
{
    ml_wait_state *d = wait_state(ml->pp);
    if (!polls || !ml->proxy || !describe(ml, d, polls)) return ml_idle(ml, why);
    char buf[112];
    ml_wait_note(ml, why, buf, sizeof buf);
    int rc = handoff_block(ml->pp, ML_PROG_WAIT, 0, TSIM_WAKE_REC_ALL | ml->inj_full, buf);
    if (rc == 0 && ml->pp->p->handoff.back) apply(ml, d);
    /* the advance the engine ended was the next progress call's (the rank
     * wakes, returns, and MPI calls progress again while its request is
     * incomplete): with the request complete, that call is not made */
    if (ml->resume.point == ML_RESUME_OVER) ml->resume.point = ML_RESUME_NONE;
    return rc;
}

int ml_wait_delegate(ml_ctx *ml, const char *why, unsigned polls, unsigned empties)
{
    ml_wait_state *d = wait_state(ml->pp);
    /* an advance stopped at a poll (ml_advance_then_hand) goes on in the engine */
    ml_resume stopped = ml->resume;
    int cont = stopped.point == ML_RESUME_STOPPED;
    if (!polls || empties >= polls || !ml->proxy || (ml->resume.point && !cont)) return 1;
    /* a packet already here is most likely the software's: no point */
    for (int f = 0; f < TSIM_NREC; f++)
        if (atomic_load_explicit(&ml->pp->p->rec[f].head, memory_order_acquire) !=
            atomic_load_explicit(&ml->pp->p->rec[f].tail, memory_order_relaxed))
            return 1;
    if (!describe(ml, d, polls)) return 1;
    d->empties = empties;
    if (cont) {
        d->res = (ml_resume){.point = ML_RESUME_POLL, .moved = stopped.moved, .consumed = stopped.consumed};
        ml->resume.point = ML_RESUME_NONE;
    }
    char buf[112];
    ml_wait_note(ml, why, buf, sizeof buf);
    if (handoff_block(ml->pp, ML_PROG_WAIT, 1, TSIM_WAKE_REC_ALL | ml->inj_full, buf) != 0) return -1;
    if (!ml->pp->p->handoff.back) { /* refused: the rank's own advance goes on */
        if (cont) ml->resume = stopped;
        return 1;
    }
    apply(ml, d);
    return 0;
}

tsim_handoff *ml_handoff_begin(ml_ctx *ml)
{
    if (!ml->proxy || ml->resume.point || ml->ctl_head || ml->nring || ml->data_head || ml->inj_full)
        return NULL;
    return &ml->pp->p->handoff;
}

int ml_handoff_block(ml_ctx *ml, uint32_t prog, const char *note, unsigned inj_wait)
{
    if (handoff_block(ml->pp, prog, 0, TSIM_WAKE_REC_ALL | (inj_wait & ~TSIM_WAKE_REC_ALL), note) != 0)
        return -1;
    return ml->pp->p->handoff.back != 0;
}

int ml_coproc_handoff(ml_ctx *ml, pl_proc *co, int start)
{
    ml_wait_state *d = wait_state(co);
    memset(d, 0, offsetof(ml_wait_state, tx));
    d->polls = 1;
    d->flat = 1;
    d->batch = ML_ADVANCE_BATCH;
    d->nrx = (uint32_t)ml->co_nact;
    for (int i = 0; i < ml->co_nact; i++)
        ml_ho_rx_set(&d->rx[i], ml->co_act[i], UINT32_MAX, T_RZV_DATA, ml->co_act_id[i], 0);
    d->co_slots = (uint64_t)(uintptr_t)ml->slots;
    d->co_parts = (uint64_t)(uintptr_t)ml->co_part;
    int rc = handoff_block(co, ML_PROG_WAIT, (uint32_t)start, TSIM_WAKE_REC_ALL, "coprocessor idle");
    if (rc != 0 || !co->p->handoff.back) return rc;
    /* its receptions now: those the engine left incomplete, the ones it
     * took up after the hand-off among them; one it completed is the main
     * processor's once told (it may already hold a new reception): not to
     * be touched */
    int k = 0;
    for (uint32_t i = 0; i < d->nrx; i++) {
        if (d->rx[i].got >= d->rx[i].len) continue;
        ml_rx *rx = ml_co_rx(ml->slots, ml->co_part, d->rx[i].id);
        rx->got = d->rx[i].got;
        rx->hi = d->rx[i].hi;
        ml->co_act[k] = rx;
        ml->co_act_id[k++] = d->rx[i].id;
    }
    ml->co_nact = k;
    ml->co_reordered += d->res.reordered;
    if (d->co_owe) ml_co_send(ml, T_CO_RZV_DONE, (uint16_t)(d->co_owe - 1));
    return 0;
}
