/* MPI's matching of a message's first packet, done by the engine for a
 * waiting rank (ML_PROG_WAIT, ml_engine.c).
 *
 * A rank waiting in MPI_Wait wakes at every message's first packet: its
 * upcall runs MPI's matching and says where the data goes (and, for a
 * rendezvous scout, sends the grant). The hand-off describes the receives
 * the rank has posted, in the order its matching tries them (ml_match_for),
 * and reserves free slots. A first packet whose first matching receive
 * lands in a contiguous buffer is taken here: matched, read and charged as
 * the rank's dispatch would, then handed to its protocol's engine driver
 * (ml_proto_ops.take: rzv_take, eager_take, onepkt_take), which does what
 * the protocol's first-packet handler does at the same clock. When the
 * rank wakes it replays each first packet taken, in order, before
 * anything else (ml_replay_first): MPI's matching runs on the same posted
 * list (nothing ran on the rank in between), takes the same receive, and
 * must land the message where the engine did.
 *
 * The rank takes the rest: a first packet out of per-pair order or with
 * held packets behind it, one that matches no described receive, one
 * whose receive is not contiguous, a synchronous send's (its
 * acknowledgement), adaptive eager and VN messages, and one whose
 * completion would be the rank's at once. */
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
 * it is not (the rank takes it), or TSIM_RUN_FAIL. Two reads of the
 * rank's memory: asked last, once the protocol would take the packet. */
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

int ml_engine_first(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_resume *a)
{
    size_t hl = sw.b;
    const ml_proto_ops *proto = ml_type_first(sw.type);
    if (!proto || !proto->take || st->flat || !st->nposted || st->ntaken >= ML_HO_TAKEN || hl > ML_HO_HDR ||
        !sw.w || hl > ml_payload_of(s))
        return ml_ho_back(st, ML_BACK_NEW);
    int row = match_row(st, s->p.payload, hl);
    if (row < 0 || !st->posted[row].land) return ml_ho_back(st, ML_BACK_NEW);
    ml_ho_match *t = &st->taken[st->ntaken];
    *t = (ml_ho_match){.src = -1, .len = sw.w, .type = sw.type, .row = (uint8_t)row, .hl = (uint8_t)hl,
                       .seq = sw.id, .rxi = ML_HO_RX};
    memcpy(t->hdr, s->p.payload, hl);
    return proto->take(pt, st, f, s, sw, t, a);
}

int ml_engine_sender(tsim_port *pt, ml_wait_state *st, const tsim_slot *s, ml_ho_match *t)
{
    int rc = next_of_peer(pt, st, s->m.src, t->seq, &t->src);
    return rc == 1 ? ml_ho_back(st, ML_BACK_NEW) : rc;
}

void ml_engine_taken(tsim_port *pt, ml_wait_state *st, int f, const ml_ho_match *t, uint64_t cycles,
                     ml_resume *a)
{
    pt->ops->consume(pt, f);
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge(pt, cycles);
    tsim_port_charge(pt, pt->prm->ml_callback_cycles); /* ml_upcall's */
    tsim_port_charge(pt, st->rule.upcall_cycles);
    st->posted[t->row].taken = 1;
    st->ntaken++;
    a->pkts_recv++;
}

int ml_engine_land(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                   ml_proto proto, uint64_t cycles, uint8_t dtype, ml_resume *a)
{
    const ml_ho_post *p = &st->posted[t->row];
    size_t room = ml_payload_of(s) - t->hl, n = sw.w < room ? sw.w : room;
    int rc = ml_engine_sender(pt, st, s, t);
    if (rc) return rc;
    ml_sink k = {p->buf, p->cap, NULL, 0, NULL};
    if (ml_data_put(pt, &k, 0, s->p.payload + t->hl, n) < 0) return ml_ho_back(st, ML_BACK_OTHER);
    t->proto = (uint8_t)proto;
    ml_engine_taken(pt, st, f, t, cycles, a);
    ml_recv r = ml_ho_post_recv(p, proto, 0);
    ml_rx rx;
    ml_rx_begin(&rx, &r, sw.w, t->src);
    rx.got = n;
    ml_ho_rx *h = ml_engine_rx(st, t, &rx, (uint32_t)s->m.src, dtype, sw.id, 0);
    if (n >= sw.w) h->fin = ml_ho_record(pt, st, h->quiet); /* ml_rx_complete's */
    return 1;
}

ml_ho_rx *ml_engine_rx(ml_wait_state *st, ml_ho_match *t, const ml_rx *rx, uint32_t src, uint8_t type, uint16_t id,
                       uint32_t lo)
{
    ml_ho_rx *h = &st->rx[st->nrx];
    ml_ho_rx_set(h, rx, src, type, id, lo);
    h->quiet = ml_ho_quiet(st, (uint64_t)(uintptr_t)rx->r.completes);
    t->rxi = (uint8_t)st->nrx++;
    return h;
}

ml_recv ml_ho_post_recv(const ml_ho_post *p, ml_proto proto, unsigned token)
{
    ml_recv r = {.buf = (void *)(uintptr_t)p->buf, .cap = p->cap, .arg = (void *)(uintptr_t)p->arg,
                 .completes = (const void *)(uintptr_t)p->completes, .proto = (uint8_t)proto, .token = token};
    memcpy(&r.done, &p->done, sizeof r.done);
    return r;
}

int ml_engine_grant(tsim_port *pt, ml_wait_state *st, ml_resume *a)
{
    ml_ho_match *t = &st->taken[st->grant_owe - 1];
    int dst = (int)st->grant_proc, fifo = ml_fifo_to(pt->g, pt->proc / TSIM_CPUS, dst);
    int room = tsim_port_room(pt, fifo, tsim_chunks(0));
    if (room == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
    st->grant_owe = 0;
    if (room != 1) { /* the rank queues it, at this clock, the scout read */
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
    a->pkts_sent++;
    return 1;
}
