/* One-packet protocol: the header and all the data in one packet, no
 * answer. Its first packet is its only one. */
#include "ml_internal.h"

static int onepkt_send(ml_ctx *ml, ml_peer *p, ml_msg *m)
{
    uint8_t tmp[TSIM_PAYLOAD_MAX];
    ml_sw sw = {T_ONE, (uint8_t)m->hdrlen, m->seq, (uint32_t)m->len};
    if (ml_try_inject(ml, ml->map.proc[m->dst], ml_fifo_for(ml, m->dst), 0, 0, &sw, m->hdr, m->hdrlen,
                      ml_msg_bytes(ml, m, 0, m->len, tmp), m->len))
        return 0;
    ml_pop_head(p);
    ml_msg_finished(ml, m);
    return 1;
}

static void onepkt_first(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    const uint8_t *pl = s->p.payload;
    size_t hl = sw.b, len = sw.w, room = ml_payload_of(s) - hl;
    ml_rx rx = {0};
    ml_upcall(ml, src, pl, hl, len, &rx, ML_ONEPKT, 0);
    rx.seq = sw.id;
    ml_rx_data(ml, &rx, 0, pl + hl, len < room ? len : room);
    if (rx.got >= len) ml_rx_complete(ml, &rx);
}

/* The engine's driver of onepkt_first for a waiting rank
 * (ml_engine_match.c): only where the completion may be recorded and
 * does not end the wait (else it is the rank's at once, and so is the
 * packet). */
static int onepkt_take(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                       ml_resume *a)
{
    const ml_ho_post *p = &st->posted[t->row];
    size_t room = ml_payload_of(s) - t->hl, n = sw.w < room ? sw.w : room;
    uint8_t quiet = ml_ho_quiet(st, p->completes);
    if (n < sw.w || !quiet || ml_ho_ends_wait(st, quiet) || st->nrx >= ML_HO_RX)
        return ml_ho_back(st, ML_BACK_NEW);
    /* complete at once: data packets of no type (0) */
    return ml_engine_land(pt, st, f, s, sw, t, ML_ONEPKT, 0, 0, a);
}

/* Its reception, for its completion to run (it lives in the caller's tmp). */
static void onepkt_replay(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, const ml_recv *r, ml_rx *tmp)
{
    (void)d;
    ml_rx_begin(tmp, r, t->len, t->src);
    tmp->seq = t->seq;
    ml->reg_rx[t->rxi] = tmp;
}

const ml_proto_ops ml_onepkt_proto = {
    .name = "one-packet",
    .send = onepkt_send,
    .first = onepkt_first,
    .take = onepkt_take,
    .replay = onepkt_replay,
};
