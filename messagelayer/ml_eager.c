/* Eager and adaptive eager: the header and the first bytes in the first
 * packet, the rest in data packets right behind it, no handshake. Eager
 * packets are deterministically routed, so they arrive in order and one
 * reception per peer is enough; adaptive eager packets may overtake each
 * other (data before its first packet is held in ae_early), and the
 * receiver confirms each message at its first packet: a sender's next
 * adaptive message waits for that confirmation, so a peer's messages still
 * match in send order (BG/L's adaptive eager protocol). */
#include <stdlib.h>

#include "ml_internal.h"

/* The data packets of m from m->off: what the rank sends and, while it is
 * blocked, the engine (ml_engine.c). */
static void eager_wire(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t)
{
    int ae = m->proto == ML_ADAPTIVE;
    ml_wire_of(ml, m, t, ae ? T_AE_DATA : T_EAGER_DATA, m->seq, (uint8_t)ml_fifo_for(ml, m->dst),
               ae ? TSIM_F_DYNAMIC : 0, (uint8_t)(ml->map.proc[m->dst] % TSIM_CPUS));
}

static int eager_send(ml_ctx *ml, ml_peer *p, ml_msg *m)
{
    if (m->off == 0 && m->used == 0) { /* first packet: header + data */
        int ae = m->proto == ML_ADAPTIVE;
        size_t hl = m->hdrlen, n = m->len < TSIM_PAYLOAD_MAX - hl ? m->len : TSIM_PAYLOAD_MAX - hl;
        uint8_t tmp[TSIM_PAYLOAD_MAX];
        ml_sw sw = {ae ? T_AE : T_EAGER, (uint8_t)hl, m->seq, (uint32_t)m->len};
        if (ml_try_inject(ml, ml->map.proc[m->dst], ml_fifo_for(ml, m->dst), ae ? TSIM_F_DYNAMIC : 0, 0,
                          &sw, m->hdr, hl, ml_msg_bytes(ml, m, 0, n, tmp), n))
            return 0;
        m->off = n;
        m->used = 1;
        if (ae) p->ae_wait++; /* the confirmation may come before the last packet leaves */
    } else if (!ml_data_step(ml, m)) {
        return 0;
    }
    if (m->off >= m->len) {
        ml_pop_head(p);
        ml_msg_finished(ml, m);
    }
    return 1;
}

static void eager_first(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    ml_peer *p = &ml->peer[src];
    const uint8_t *pl = s->p.payload;
    size_t hl = sw.b, len = sw.w, room = ml_payload_of(s) - hl;
    int ae = sw.type == T_AE;
    ml_rx *rx = &p->eager;
    if (ae && !(rx = calloc(1, sizeof *rx))) abort();
    ml_charge(ml, ae ? ml->prm->ml_adaptive_cycles : ml->prm->ml_eager_cycles);
    ml_upcall(ml, src, pl, hl, len, rx, ae ? ML_ADAPTIVE : ML_EAGER, 0);
    rx->seq = sw.id;
    ml_rx_data(ml, rx, 0, pl + hl, len < room ? len : room);
    if (!ae) {
        if (rx->got >= len) ml_rx_complete(ml, rx);
        else ml_act_add(ml, rx, T_EAGER_DATA, sw.id);
        return;
    }
    ml_send_ctl(ml, src, ml_fifo_for(ml, src), T_AE_CONFIRM, 0, 0, 0);
    for (ml_stash_e **pe = &p->ae_early; *pe;) { /* data that overtook this packet */
        ml_stash_e *e = *pe;
        ml_sw d = ml_sw_of(&e->s);
        if (d.id != sw.id) {
            pe = &e->next;
            continue;
        }
        *pe = e->next;
        size_t n = len - d.w < TSIM_PAYLOAD_MAX ? len - d.w : TSIM_PAYLOAD_MAX;
        ml_rx_data(ml, rx, d.w, e->s.p.payload, n);
        free(e);
    }
    if (rx->got >= len) {
        ml_rx_complete(ml, rx);
        free(rx);
    } else {
        rx->next = p->ae;
        p->ae = rx;
        ml_act_add(ml, rx, T_AE_DATA, sw.id);
    }
}

/* The peer's eager reception (ml_peer.eager) was handed over and its
 * completion recorded: the rank runs it when it wakes, from that
 * reception, after the replay of a new one would have taken its place. */
static int peer_busy(const ml_wait_state *st, uint32_t proc)
{
    for (uint32_t i = 0; i < st->nrx; i++) {
        if (st->rx[i].type != T_EAGER_DATA || st->rx[i].src != proc) continue;
        uint32_t k = 0;
        while (k < st->ntaken && st->taken[k].rxi != i) k++;
        if (k == st->ntaken) return 1;
    }
    return 0;
}

/* The engine's driver of eager_first for a waiting rank
 * (ml_engine_match.c): the first packet's bytes into the receive's
 * buffer, the rest of the message then the engine's like any reception's;
 * a message complete at its first packet only where its completion may be
 * recorded. Adaptive eager's confirmation and early data are the rank's. */
static int eager_take(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                      ml_resume *a)
{
    const ml_ho_post *p = &st->posted[t->row];
    size_t room = ml_payload_of(s) - t->hl, n = sw.w < room ? sw.w : room;
    uint8_t quiet = ml_ho_quiet(st, p->completes);
    if (sw.type != T_EAGER || (n >= sw.w && (!quiet || ml_ho_ends_wait(st, quiet))) || st->nrx >= ML_HO_RX ||
        peer_busy(st, s->m.src))
        return ml_ho_back(st, ML_BACK_NEW);
    return ml_engine_land(pt, st, f, s, sw, t, ML_EAGER, pt->prm->ml_eager_cycles, T_EAGER_DATA, a);
}

/* The peer's eager reception as eager_first leaves it, the engine's
 * progress (its bytes, its completion) applied after; one the engine
 * completed lives in tmp until its completion has run (the peer's next
 * message may have come behind it). */
static void eager_replay(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, const ml_recv *r, ml_rx *tmp)
{
    int done = d->rx[t->rxi].got >= t->len;
    ml_rx *rx = done ? tmp : &ml->peer[t->src].eager;
    if (!done) ml_act_del(ml, rx);
    ml_rx_begin(rx, r, t->len, t->src);
    rx->seq = t->seq;
    if (!done) ml_act_add(ml, rx, T_EAGER_DATA, t->seq);
    ml->reg_rx[t->rxi] = rx;
}

static void eager_packet(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    ml_peer *p = &ml->peer[src];
    switch (sw.type) {
    case T_EAGER_DATA:
        if (!p->eager.used || p->eager.seq != sw.id) { /* its first packet is held */
            ml_stash(p, s);
            return;
        }
        ml_rx_data(ml, &p->eager, sw.w, s->p.payload,
                   p->eager.len - sw.w < TSIM_PAYLOAD_MAX ? p->eager.len - sw.w : TSIM_PAYLOAD_MAX);
        if (p->eager.got >= p->eager.len) ml_rx_complete(ml, &p->eager);
        break;
    case T_AE_DATA: {
        ml_rx **pr = &p->ae;
        while (*pr && (*pr)->seq != sw.id) pr = &(*pr)->next;
        if (!*pr) { /* overtook its first packet */
            ml_stash_e *e = malloc(sizeof *e);
            if (!e) abort();
            e->s = *s;
            e->next = p->ae_early;
            p->ae_early = e;
            ml->st.reordered++;
            return;
        }
        ml_rx *rx = *pr;
        ml_rx_data(ml, rx, sw.w, s->p.payload, rx->len - sw.w < TSIM_PAYLOAD_MAX ? rx->len - sw.w : TSIM_PAYLOAD_MAX);
        if (rx->got >= rx->len) {
            *pr = rx->next;
            ml_rx_complete(ml, rx);
            free(rx);
        }
        break;
    }
    case T_AE_CONFIRM:
        p->ae_wait--;
        break;
    }
}

const ml_proto_ops ml_eager_proto = {
    .name = "eager",
    .send = eager_send,
    .first = eager_first,
    .packet = eager_packet,
    .wire = eager_wire,
    .take = eager_take,
    .replay = eager_replay,
};
