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

const ml_proto_ops ml_onepkt_proto = {
    .name = "one-packet",
    .send = onepkt_send,
    .first = onepkt_first,
};
