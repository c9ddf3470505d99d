/* Sending: per-peer queues in send order, the ring of peers with work, the
 * data list of messages past their handshake, and a control queue for
 * confirmations, grants and acks. Each protocol sends its own packets
 * (ml_proto_ops.send, ml_onepkt.c ... ml_vn.c); a send phase gives every
 * message its turn. Injection never blocks here: a full FIFO just ends the
 * turn, so the advance loop can keep draining reception FIFOs (two ranks
 * flooding each other can't deadlock). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ml_internal.h"
#include "../packetlayer/pl_trace.h"

/* FIFO pinning by direction, as BG/L's torus SPI chose an injection FIFO:
 * by the direction the packet leaves in (its hint bits), the FIFOs of a
 * group in the order x+, x-, y+ | y-, z+, z- (IBM/BlueMatter,
 * svntrunk/src/BonB/src/spi_ts_hints.c, _ts_MakeSendHints). A processor
 * here owns one group of 3 normal FIFOs, so direction d goes to FIFO d % 3:
 * each FIFO serves two directions, and a packet waiting for a busy link
 * holds back only packets for its own two. The direction is the first hop of
 * the deterministic route (dimension order), the same for every packet to a
 * destination, so a destination's packets keep their order. Packets to the
 * own node (no direction) use FIFO 0. */
int ml_fifo_to(const tsim_geom *g, int node, int dst_proc)
{
    int c[3];
    tsim_coords(g, dst_proc / TSIM_CPUS, c);
    const uint8_t dst[3] = {(uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2]};
    int port = tsim_route_det(g, node, dst);
    return port < 0 ? 0 : port % 3;
}

int ml_fifo_for(const ml_ctx *ml, int dst_rank)
{
    return ml_fifo_to(&ml->pp->seg->geom, ml->pp->node, ml->map.proc[dst_rank]);
}

int ml_try_inject(ml_ctx *ml, int dst_proc, int fifo, unsigned flags, unsigned group, const ml_sw *sw,
                  const void *a, size_t alen, const void *b, size_t blen)
{
    uint8_t buf[TSIM_PAYLOAD_MAX];
    tsim_hwhdr hw;
    if (alen) memcpy(buf, a, alen);
    if (blen) memcpy(buf + alen, b, blen); /* realigns any user buffer */
    pl_header(ml->pp, &hw, dst_proc, alen + blen, flags);
    if (group) hw.group = (uint8_t)group; /* else the destination cpu */
    if (pl_inject(ml->pp, fifo, &hw, sw, buf, alen + blen) != 0) {
        ml->inj_full |= TSIM_WAKE_INJ(fifo);
        return -1;
    }
    ml->st.pkts_sent++;
    return 0;
}

/* Control packets are small and queued so that handlers never block. */
typedef struct ml_ctl {
    struct ml_ctl *next;
    int dst_proc, fifo;
    unsigned flags, group;
    ml_sw sw;
    size_t len;
    uint8_t data[32];
} ml_ctl;

void ml_inject(ml_ctx *ml, int dst_proc, int fifo, unsigned flags, unsigned group,
               const ml_sw *sw, const void *a, size_t alen, const void *b, size_t blen)
{
    if (!ml->ctl_head && ml_try_inject(ml, dst_proc, fifo, flags, group, sw, a, alen, b, blen) == 0)
        return;
    ml_ctl *c = calloc(1, sizeof *c);
    if (!c) abort();
    *c = (ml_ctl){NULL, dst_proc, fifo, flags, group, *sw, alen + blen, {0}};
    if (alen) memcpy(c->data, a, alen);
    if (blen) memcpy(c->data + alen, b, blen);
    if (ml->ctl_tail) ml->ctl_tail->next = c;
    else ml->ctl_head = c;
    ml->ctl_tail = c;
}

static int ctl_progress(ml_ctx *ml)
{
    int moved = 0;
    while (ml->ctl_head) {
        ml_ctl *c = ml->ctl_head;
        if (ml_try_inject(ml, c->dst_proc, c->fifo, c->flags, c->group, &c->sw, c->data, c->len, NULL,
                          0) != 0)
            break;
        ml->ctl_head = c->next;
        if (!ml->ctl_head) ml->ctl_tail = NULL;
        free(c);
        moved++;
    }
    return moved;
}

void ml_msg_finished(ml_ctx *ml, ml_msg *m)
{
    ml_charge(ml, ml->prm->ml_callback_cycles);
    ml_msg_done(ml, m);
}

void ml_msg_done(ml_ctx *ml, ml_msg *m)
{
    m->state = S_WAIT + 10; /* finished: no longer touched by the layer */
    ml->outstanding--;
    free(m->stage);
    m->stage = NULL;
    if (m->done) m->done(ml, m->arg);
}

static uint16_t new_id(ml_ctx *ml, ml_msg *m)
{
    for (int i = 0; i < ML_MAX_IDS; i++) {
        uint16_t id = (uint16_t)((ml->next_id + i) % ML_MAX_IDS);
        if (!ml->ids[id]) {
            ml->ids[id] = m;
            ml->next_id = (uint16_t)(id + 1);
            return id;
        }
    }
    abort(); /* more than ML_MAX_IDS rendezvous in flight */
}

void ml_pop_head(ml_peer *p)
{
    p->head = p->head->next;
    if (!p->head) p->tail = NULL;
}

/* Where the rank reads a message's bytes: in place (a buffer, a layout's
 * host stage) or gathered from its layout into tmp. */
typedef struct rank_src {
    ml_msg *m;
    uint8_t *tmp; /* TSIM_PAYLOAD_MAX bytes */
} rank_src;

static const void *rank_bytes(void *arg, const ml_ho_tx *t, uint64_t off, size_t n)
{
    (void)t;
    rank_src *s = arg;
    ml_msg *m = s->m;
    if (!m->niov) return (const uint8_t *)m->buf + off;
    if (m->stage) return m->stage + off;
    ml_layout_copy(m->iov, m->niov, &m->rcur, off, s->tmp, n, 1);
    return s->tmp;
}

const void *ml_msg_bytes(ml_ctx *ml, ml_msg *m, size_t off, size_t n, uint8_t *tmp)
{
    ml_ho_tx t = {.niov = m->niov, .charged = m->charged};
    ml_data_charge(&ml->port, &t, m->iov, &m->cur, off, n);
    m->charged = t.charged;
    rank_src s = {m, tmp};
    return rank_bytes(&s, &t, off, n);
}

void ml_wire_of(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t, uint8_t type, uint16_t id, uint8_t fifo,
                uint8_t flags, uint8_t group)
{
    *t = (ml_ho_tx){.buf = (uint64_t)(uintptr_t)(m->niov ? (const void *)m->stage : m->buf),
                    .len = m->len,
                    .whole = (uint32_t)m->len,
                    .off = m->off,
                    .iov = (uint64_t)(uintptr_t)m->iov,
                    .niov = m->niov,
                    .charged = m->charged,
                    .dst = (uint32_t)ml->map.proc[m->dst],
                    .fifo = fifo,
                    .flags = flags,
                    .group = group,
                    .type = type,
                    .id = id,
                    .live = 1};
}

int ml_data_step(ml_ctx *ml, ml_msg *m)
{
    ml_ho_tx t;
    uint8_t tmp[TSIM_PAYLOAD_MAX];
    ml_proto_of(m->proto)->wire(ml, m, &t);
    rank_src s = {m, tmp};
    int rc = ml_data_send(&ml->port, &t, m->iov, &m->cur, rank_bytes, &s);
    m->charged = t.charged;
    if (rc != 1) {
        ml->inj_full |= TSIM_WAKE_INJ(t.fifo);
        return 0;
    }
    m->off = t.off;
    ml->st.pkts_sent++;
    return 1;
}

int ml_send_with_id(ml_ctx *ml, ml_peer *p, ml_msg *m, int dproc, int fifo, const ml_sw *sw,
                    void *extra, size_t extralen)
{
    uint16_t id = new_id(ml, m);
    if (extra) memcpy((char *)extra + offsetof(ml_vn_addr, id), &id, sizeof id);
    if (ml_try_inject(ml, dproc, fifo, 0, 0, sw, m->hdr, m->hdrlen, extra ? extra : (void *)&id,
                      extra ? extralen : sizeof id)) {
        ml->ids[id] = NULL;
        return 0;
    }
    m->id = id;
    m->state = S_WAIT;
    ml_pop_head(p);
    return 1;
}

void ml_data_phase(ml_ctx *ml, ml_msg *m, uint16_t slot, uint8_t b)
{
    if (m->len == 0) {
        ml_msg_finished(ml, m);
        return;
    }
    m->seq = slot; /* the receiver's slot */
    m->used = b;   /* the receiving cpu */
    m->off = 0;
    m->state = S_DATA;
    m->next = ml->data_head;
    ml->data_head = m;
}

/* Sends one packet of peer's head message; 1 if a packet went out. */
static int step(ml_ctx *ml, int dst)
{
    ml_peer *p = &ml->peer[dst];
    ml_msg *m = p->head;
    if (!m || (m->state == S_QUEUED && p->ae_wait)) return 0;
    if (m->state == S_QUEUED) {
        m->seq = p->tx_seq++;
        m->state = S_SENDING;
        m->off = 0;
        const uint64_t extra[ML_NPROTO] = {0, 0, ml->prm->ml_eager_cycles,
                                           ml->prm->ml_adaptive_cycles, ml->prm->ml_rzv_cycles,
                                           ml->prm->ml_vn_cycles};
        ml_charge(ml, extra[m->proto]);
    }
    return ml_proto_of(m->proto)->send(ml, p, m);
}

/* A send phase: control packets, then rounds (each message in turn one
 * packet) until a round sends nothing. The engine may hand a phase back in
 * the middle of a round, at a message's last packet (ml_engine.c): the
 * round goes on at position pos (the ring's peers from ring_pos, then the
 * data list), `sent` packets having gone in it; the engine's packets are
 * not counted again. */
int ml_send_phase(ml_ctx *ml, int pos, int sent)
{
    int moved = 0, round, skip = pos;
    if (!pos && !sent) {
        ml->inj_full = 0;
        moved = ctl_progress(ml);
    }
    do {
        round = sent;
        for (int i = skip < ml->nring ? skip : ml->nring; i < ml->nring; i++) {
            int dst = ml->ring[(ml->ring_pos + i) % ml->nring];
            round += step(ml, dst);
        }
        int d = 0;
        for (ml_msg **pm = &ml->data_head; *pm; d++) {
            ml_msg *m = *pm;
            if (d < skip - ml->nring) { /* its turn in this round has been */
                pm = &m->next;
                continue;
            }
            round += ml_data_step(ml, m);
            if (m->off >= m->len) {
                *pm = m->next;
                ml_msg_finished(ml, m);
            } else {
                pm = &m->next;
            }
        }
        moved += round - sent;
        skip = sent = 0;
        /* drop peers with nothing left to send from the ring */
        int k = 0;
        for (int i = 0; i < ml->nring; i++) {
            int dst = ml->ring[i];
            if (ml->peer[dst].head) ml->ring[k++] = dst;
            else ml->peer[dst].active = 0;
        }
        ml->nring = k;
        ml->ring_pos = k ? (ml->ring_pos + 1) % k : 0;
    } while (round);
    return moved;
}

int ml_send_progress(ml_ctx *ml) { return ml_send_phase(ml, 0, 0); }

int ml_send(ml_ctx *ml, ml_msg *m)
{
    if (m->dst < 0 || m->dst >= ml->map.nranks || m->hdrlen > ML_HDR_MAX ||
        m->len > UINT32_MAX || (unsigned)m->proto >= ML_NPROTO ||
        (m->niov && ml_layout_bytes(m->iov, m->niov) != m->len))
        return -1;
    uint64_t t0 = pl_now(ml->pp);
    ml_charge(ml, ml->prm->ml_post_cycles);
    if (m->proto == ML_AUTO) m->proto = ml_choose(ml, m->dst, m->hdrlen, m->len);
    if (m->proto == ML_ONEPKT && m->hdrlen + m->len > TSIM_PAYLOAD_MAX) return -1;
    if (m->proto == ML_VN && ml->map.proc[m->dst] / TSIM_CPUS != ml->pp->node) return -1;
    ml->st.msgs[m->proto]++;
    atomic_fetch_add_explicit(&ml->pp->p->msgs_sent[m->proto], 1, memory_order_relaxed);
    m->state = S_QUEUED;
    m->used = 0;
    m->off = 0;
    m->cur = m->rcur = (ml_cursor){0, 0};
    m->charged = 0;
    /* the VN protocol hands the receiver the layout itself */
    m->stage = m->niov && m->proto != ML_VN && ml_stage_wanted(ml, m->niov, m->len)
                   ? ml_stage_gather(m->iov, m->niov, m->len) : NULL;
    ml->st.staged += m->stage != NULL;
    m->next = NULL;
    ml->outstanding++;
    ml_peer *p = &ml->peer[m->dst];
    if (p->tail) p->tail->next = m;
    else p->head = m;
    p->tail = m;
    if (!p->active) {
        p->active = 1;
        ml->ring[ml->nring++] = m->dst;
    }
    if (pl_tracing()) pl_trace_msg(ml->pp, PLT_SEND, m->proto, t0, pl_now(ml->pp), m->dst, m->len);
    return 0;
}
