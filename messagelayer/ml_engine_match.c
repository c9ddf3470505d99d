/* MPI's matching of a rendezvous scout, taken by the engine for a waiting
 * rank (ML_PROG_WAIT, ml_engine.c).
 *
 * A rank waiting in MPI_Wait for a rendezvous receive would wake twice:
 * at the scout, to match it and send the grant, and at the data's end. The
 * hand-off describes the receives it has posted, in the order its
 * matching tries them (ml_match_for), and reserves free slots. A scout
 * whose first matching receive lands in a contiguous buffer is taken here
 * as the rank's dispatch would take it (ml_rzv.c's rzv_first and grant):
 * the same charges at the same clock, the grant from the same slot with
 * the same b, the reception then the engine's or the coprocessor's like
 * any other. When the rank wakes it replays each scout taken, in order,
 * before anything else (ml_rzv_replay): MPI's matching runs on the same
 * posted list (nothing ran on the rank in between), takes the same
 * receive, and must land it where the engine did.
 *
 * The rank takes everything else: a scout out of per-pair order or with
 * held packets behind it, one that matches no described receive, one
 * whose receive is not contiguous, a synchronous send's (its
 * acknowledgement), and every other first packet. */
#include <string.h>

#include "ml_internal.h"

/* The first described receive the header matches that is not taken yet
 * (the upcall's: it dequeues the first match), or -1. */
static int match_row(const ml_wait_state *st, const uint8_t *hdr, size_t hl)
{
    const ml_match_rule *ru = &st->rule;
    uint32_t v, w[ML_MATCH_KEYS];
    if (ru->veto_off + sizeof v > hl) return -1;
    memcpy(&v, hdr + ru->veto_off, sizeof v);
    if (v & ru->veto_mask) return -1;
    for (int i = 0; i < ML_MATCH_KEYS; i++) {
        if (ru->off[i] + sizeof v > hl) return -1;
        memcpy(&w[i], hdr + ru->off[i], sizeof v);
        w[i] &= ru->mask[i];
    }
    for (uint32_t r = 0; r < st->nposted; r++) {
        const ml_ho_post *p = &st->posted[r];
        int i = 0;
        while (i < ML_MATCH_KEYS && ((p->any >> i & 1) || w[i] == p->key[i])) i++;
        if (!p->taken && i == ML_MATCH_KEYS) return r;
    }
    return -1;
}

/* The sender's rank, if this first packet is the next one from it with
 * nothing held behind (ml_recv.c's dispatch: per-pair send order): 0, 1
 * it is not (the rank takes it), or TSIM_RUN_FAIL. */
static int next_of_peer(tsim_port *pt, const ml_wait_state *st, uint32_t proc, uint16_t seq, int32_t *rank)
{
    if (pt->ops->read(pt, rank, st->ranks + (uint64_t)proc * sizeof *rank, sizeof *rank,
                      "hand-off: the rank map the engine cannot read") != 0)
        return TSIM_RUN_FAIL;
    if (*rank < 0 || *rank >= pt->g->nranks) return 1;
    ml_peer p;
    if (pt->ops->read(pt, &p, st->peers + (uint64_t)*rank * sizeof p, sizeof p,
                      "hand-off: a peer the engine cannot read") != 0)
        return TSIM_RUN_FAIL;
    uint16_t next = p.rx_seq;
    for (uint32_t i = 0; i < st->ntaken; i++) next = (uint16_t)(next + (st->taken[i].src == *rank));
    return p.stash || seq != next;
}

int ml_engine_scout(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_resume *a)
{
    size_t hl = sw.b;
    if (st->flat || !st->nposted || st->ntaken >= st->nres || hl > ML_HO_HDR || !sw.w ||
        hl + sizeof(uint16_t) > ml_payload_of(s))
        return ml_ho_back(st, ML_BACK_NEW);
    const uint8_t *pl = s->p.payload;
    int row = match_row(st, pl, hl);
    if (row < 0 || !st->posted[row].land) return ml_ho_back(st, ML_BACK_NEW);
    int32_t src;
    int rc = next_of_peer(pt, st, s->m.src, sw.id, &src);
    if (rc) return rc == 1 ? ml_ho_back(st, ML_BACK_NEW) : rc;
    ml_ho_post *p = &st->posted[row];
    ml_rzv_dest to;
    ml_rzv_to(p->buf, 0, p->cap, sw.w, pt->prm->ml_coproc_align, (int)st->co_running, &to);
    if (to.cpu != ML_CPU_CO && st->nrx >= ML_HO_RX) return ml_ho_back(st, ML_BACK_NEW);
    uint16_t id, k = st->res_slot[st->ntaken];
    memcpy(&id, pl + hl, sizeof id);
    /* the reception as the upcall and the grant leave it in slot k */
    ml_recv r = {.buf = (void *)(uintptr_t)p->buf, .cap = p->cap, .arg = (void *)(uintptr_t)p->arg,
                 .completes = (const void *)(uintptr_t)p->completes, .proto = ML_RZV, .token = k};
    memcpy(&r.done, &p->done, sizeof r.done);
    ml_rx rx, part;
    ml_rx_begin(&rx, &r, sw.w, src);
    rx.sender_id = id;
    ml_rzv_bind(&rx, &part, &to);
    /* the coprocessor reads its reception from the rank's memory at its
     * first data packet: written before the grant (ml_engine_grant) */
    if (to.cpu == ML_CPU_CO &&
        pt->ops->write(pt, st->slots + (uint64_t)k * sizeof rx, &rx, sizeof rx) != 0)
        return TSIM_RUN_FAIL;
    if (to.cpu == ML_CPU_SPLIT &&
        pt->ops->write(pt, st->parts + (uint64_t)k * sizeof part, &part, sizeof part) != 0)
        return TSIM_RUN_FAIL;
    /* taken: what the rank's dispatch charges up to the grant (ml_recv.c's
     * dispatch, rzv_first, ml_upcall and the upcall's own) */
    pt->ops->consume(pt, f);
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge(pt, pt->prm->ml_rzv_cycles);
    tsim_port_charge(pt, pt->prm->ml_callback_cycles);
    tsim_port_charge(pt, st->rule.upcall_cycles);
    p->taken = 1;
    ml_ho_scout *t = &st->taken[st->ntaken++];
    *t = (ml_ho_scout){.src = src, .len = sw.w, .slot = k, .sender_id = id, .row = (uint8_t)row,
                       .hl = (uint8_t)hl, .rxi = ML_HO_RX, .to = to};
    memcpy(t->hdr, pl, hl);
    if (to.cpu != ML_CPU_CO) { /* the main processor's data: the engine's while the rank waits */
        ml_ho_rx *h = &st->rx[st->nrx];
        ml_ho_rx_set(h, &rx, UINT32_MAX, T_RZV_DATA, k, to.cpu == ML_CPU_SPLIT ? to.co_lo : 0);
        h->quiet = ml_ho_quiet(st, p->completes);
        t->rxi = (uint8_t)st->nrx++;
    }
    st->grant_proc = s->m.src;
    st->grant_owe = st->ntaken;
    return ml_engine_grant(pt, st, a);
}

int ml_engine_grant(tsim_port *pt, ml_wait_state *st, ml_resume *a)
{
    ml_ho_scout *t = &st->taken[st->grant_owe - 1];
    int dst = (int)st->grant_proc, fifo = ml_fifo_to(pt->g, pt->proc / TSIM_CPUS, dst);
    int room = tsim_port_room(pt, fifo, tsim_chunks(0));
    if (room == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
    st->grant_owe = 0;
    if (room != 1) { /* the rank queues it, at this clock, the scout read */
        a->pkts_recv++;
        a->consumed++;
        a->moved++;
        return ml_ho_back(st, ML_BACK_OTHER);
    }
    if (t->to.cpu != ML_CPU_MAIN && pt->ops->publish(pt) != 0) return TSIM_RUN_FAIL;
    tsim_hwhdr hw;
    tsim_header(pt->g, &hw, dst, 0, 0, (unsigned)(dst % TSIM_CPUS));
    ml_sw g = {T_GRANT, t->to.b, t->sender_id, t->slot};
    uint8_t sw8[8];
    memcpy(sw8, &g, sizeof sw8);
    pt->ops->inject(pt, fifo, &hw, sw8, NULL, 0);
    t->sent = 1;
    a->pkts_recv++;
    a->pkts_sent++;
    return 1;
}
