/* Receiving: dispatch by software header to the protocol that owns the
 * packet type, per-pair matching order, and what every protocol's receive
 * side shares (the upcall, completion, control packets, held packets). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ml_internal.h"
#include "../packetlayer/pl_trace.h"

/* Which protocol owns a packet type, and whether it is a message's first
 * packet (those keep per-pair send order). */
static const struct {
    const ml_proto_ops *proto;
    uint8_t first;
} types[T_NTYPES] = {
    [T_ONE] = {&ml_onepkt_proto, 1},
    [T_EAGER] = {&ml_eager_proto, 1},      [T_EAGER_DATA] = {&ml_eager_proto, 0},
    [T_AE] = {&ml_eager_proto, 1},         [T_AE_DATA] = {&ml_eager_proto, 0},
    [T_AE_CONFIRM] = {&ml_eager_proto, 0},
    [T_SCOUT] = {&ml_rzv_proto, 1},        [T_GRANT] = {&ml_rzv_proto, 0},
    [T_RZV_DATA] = {&ml_rzv_proto, 0},     [T_CO_RZV_DONE] = {&ml_rzv_proto, 0},
    [T_VN_ADDR] = {&ml_vn_proto, 1},       [T_VN_LAYOUT] = {&ml_vn_proto, 1},
    [T_VN_ACK] = {&ml_vn_proto, 0},        [T_VN_NACK] = {&ml_vn_proto, 0},
    [T_VN_DATA] = {&ml_vn_proto, 0},
};

int ml_type_starts(unsigned type) { return type < T_NTYPES && types[type].first; }

const ml_proto_ops *ml_type_first(unsigned type) { return ml_type_starts(type) ? types[type].proto : NULL; }

void ml_replay_first(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, ml_rx *tmp)
{
    /* what the engine read of this rank (its peers, the rule) was what
     * the rank's own dispatch would have seen */
    if (t->src < 0 || t->src >= ml->map.nranks || t->row >= d->nposted || t->type >= T_NTYPES ||
        !types[t->type].first || !types[t->type].proto->replay)
        pl_damaged(ml->pp, "hand-off: the engine took a message from rank %d for receive %u, which it did "
                   "not describe", t->src, t->row);
    ml_peer *p = &ml->peer[t->src];
    if (p->rx_seq != t->seq || p->stash)
        pl_damaged(ml->pp, "hand-off: the engine took message %u from rank %d, whose next is %u%s", t->seq,
                   t->src, p->rx_seq, p->stash ? " with packets held" : "");
    p->rx_seq++;
    const ml_ho_post *row = &d->posted[t->row];
    ml_recv r = {.proto = t->proto, .token = t->slot};
    uint64_t vt = pl_now(ml->pp);
    ml->upcall(ml, t->src, t->hdr, t->hl, t->len, &r, ml->uarg);
    uint64_t charged = pl_now(ml->pp) - vt;
    ml->pp->vt = vt; /* charged where the engine took it */
    ml_recv want = ml_ho_post_recv(row, (ml_proto)t->proto, t->slot);
    if (r.defer || r.niov || r.buf != want.buf || r.cap != want.cap || r.done != want.done ||
        r.arg != want.arg || r.completes != want.completes || charged != d->rule.upcall_cycles)
        pl_damaged(ml->pp, "hand-off: a receive described at %p, %zu B, %llu cycles; its upcall's at %p, "
                   "%zu B, %llu", want.buf, want.cap, (unsigned long long)d->rule.upcall_cycles, r.buf, r.cap,
                   (unsigned long long)charged);
    types[t->type].proto->replay(ml, d, t, &r, tmp);
}

const ml_proto_ops *ml_proto_of(ml_proto p)
{
    switch (p) {
    case ML_ONEPKT: return &ml_onepkt_proto;
    case ML_EAGER:
    case ML_ADAPTIVE: return &ml_eager_proto;
    case ML_RZV: return &ml_rzv_proto;
    case ML_VN: return &ml_vn_proto;
    default: abort(); /* ml_send resolved ML_AUTO */
    }
}

static int rank_of(const ml_ctx *ml, const tsim_slot *s)
{
    return ml->map.rank[s->m.src];
}

ml_sw ml_sw_of(const tsim_slot *s)
{
    ml_sw sw;
    memcpy(&sw, s->p.sw, sizeof sw);
    return sw;
}

unsigned ml_rx_write(tsim_port *pt, ml_rx *rx, uint64_t *reordered, uint64_t off, const void *data,
                     size_t n)
{
    ml_data_seen(&rx->hi, reordered, off);
    ml_sink k = {(uint64_t)(uintptr_t)rx->r.buf, rx->r.buf || rx->r.niov ? rx->r.cap : 0, rx->r.iov,
                 rx->r.niov, &rx->cur};
    int segs = ml_data_put(pt, &k, off, data, n); /* this process's memory: never fails */
    rx->got += n;
    return segs > 0 ? (unsigned)segs : 0;
}

void ml_rx_data(ml_ctx *ml, ml_rx *rx, uint64_t off, const void *data, size_t n)
{
    unsigned segs = ml_rx_write(&ml->port, rx, &ml->st.reordered, off, data, n);
    if (segs) ml_charge_ddt(ml->pp, (uint64_t)segs * ml->prm->ddt_seg_cycles);
}

/* A layout's capacity is its segments' total; its buf is its host stage
 * (ml_layout.c) or NULL. The VN protocol copies into the layout itself. */
void ml_rx_set_cap(ml_ctx *ml, ml_rx *rx)
{
    if (rx->r.niov) {
        rx->r.cap = ml_layout_bytes(rx->r.iov, rx->r.niov);
        rx->r.buf = rx->r.proto != ML_VN && ml_stage_wanted(ml, rx->r.niov, rx->r.cap)
                        ? malloc(rx->r.cap ? rx->r.cap : 1) : NULL;
        ml->st.staged += rx->r.buf != NULL;
    }
}

void ml_rx_complete(ml_ctx *ml, ml_rx *rx)
{
    ml_charge(ml, ml->prm->ml_callback_cycles);
    ml_rx_finish(ml, rx);
}

void ml_rx_finish(ml_ctx *ml, ml_rx *rx)
{
    ml_act_del(ml, rx);
    if (rx->r.niov && rx->r.buf) {
        ml_stage_scatter(rx->r.iov, rx->r.niov, rx->r.buf, rx->len < rx->r.cap ? rx->len : rx->r.cap);
        free(rx->r.buf);
        rx->r.buf = NULL;
    }
    ml_recv r = rx->r;
    rx->used = 0;
    if (r.done) r.done(ml, r.arg);
}

void ml_rx_begin(ml_rx *rx, const ml_recv *r, uint64_t len, int src)
{
    *rx = (ml_rx){.r = *r, .len = len, .src = src, .used = 1};
}

void ml_upcall(ml_ctx *ml, int src, const uint8_t *hdr, size_t hl, size_t len, ml_rx *rx, ml_proto proto,
               unsigned token)
{
    ml_act_del(ml, rx);
    memset(rx, 0, sizeof *rx);
    ml_recv r = {.proto = (uint8_t)proto, .token = token};
    uint64_t t0 = pl_now(ml->pp);
    ml_charge(ml, ml->prm->ml_callback_cycles);
    ml->upcall(ml, src, hdr, hl, len, &r, ml->uarg);
    ml_rx_begin(rx, &r, len, src);
    ml_rx_set_cap(ml, rx);
    if (pl_tracing()) pl_trace_msg(ml->pp, PLT_RECV, proto, t0, pl_now(ml->pp), src, len);
}

uint16_t ml_slot_alloc(ml_ctx *ml)
{
    for (uint16_t i = 0; i < ML_MAX_IDS; i++)
        if (!ml->slots[i].used) return i;
    abort(); /* more than ML_MAX_IDS receptions in flight */
}

void ml_stash(ml_peer *p, const tsim_slot *s)
{
    ml_stash_e *st = malloc(sizeof *st);
    if (!st) abort();
    st->s = *s;
    st->next = NULL;
    if (!p->stash) p->stash_tail = &p->stash;
    *p->stash_tail = st;
    p->stash_tail = &st->next;
}

void ml_send_ctl(ml_ctx *ml, int src, int fifo, uint8_t type, uint8_t b, uint16_t id, uint32_t w)
{
    ml_sw sw = {type, b, id, w};
    ml_inject(ml, ml->map.proc[src], fifo, 0, 0, &sw, NULL, 0, NULL, 0);
}

static int accept(ml_ctx *ml, unsigned token, const ml_recv *where)
{
    if (token >= ML_MAX_IDS || !ml->slots[token].used || !ml->slots[token].r.defer) return -1;
    ml_rx *rx = &ml->slots[token];
    rx->r.buf = where->buf;
    rx->r.cap = where->cap;
    rx->r.iov = where->iov;
    rx->r.niov = where->niov;
    rx->r.done = where->done;
    rx->r.arg = where->arg;
    rx->r.completes = where->completes;
    rx->r.defer = 0;
    rx->cur = (ml_cursor){0, 0};
    ml_rx_set_cap(ml, rx);
    ml_charge(ml, ml->prm->ml_callback_cycles);
    if (rx->r.proto == ML_VN) ml_vn_accept(ml, (uint16_t)token);
    else ml_rzv_accept(ml, (uint16_t)token);
    return 0;
}

int ml_accept(ml_ctx *ml, unsigned token, void *buf, size_t cap, ml_done_fn done, void *arg)
{
    ml_recv w = {.buf = buf, .cap = cap, .done = done, .arg = arg};
    return accept(ml, token, &w);
}

int ml_accept_iov(ml_ctx *ml, unsigned token, const struct iovec *iov, size_t niov, ml_done_fn done,
                  void *arg)
{
    ml_recv w = {.iov = iov, .niov = niov, .done = done, .arg = arg};
    return accept(ml, token, &w);
}

static void dispatch(ml_ctx *ml, const tsim_slot *s, int replay);

/* Re-dispatches held packets in arrival order until no more can go. */
static void replay_stash(ml_ctx *ml, ml_peer *p)
{
    uint16_t before;
    do {
        before = p->rx_seq;
        ml_stash_e *list = p->stash;
        p->stash = NULL;
        while (list) {
            ml_stash_e *e = list;
            list = e->next;
            dispatch(ml, &e->s, 1);
            free(e);
        }
    } while (p->stash && p->rx_seq != before);
}

static void dispatch(ml_ctx *ml, const tsim_slot *s, int replay)
{
    ml_sw sw = ml_sw_of(s);
    int src = rank_of(ml, s);
    ml_peer *p = src >= 0 ? &ml->peer[src] : NULL;
    if (!replay) ml_charge(ml, ml->prm->ml_dispatch_cycles);
    if (sw.type == T_CO_DONE) {
        ml->co_done = 1;
        return;
    }
    if (sw.type >= T_NTYPES || !types[sw.type].proto) /* intact as delivered (pl_poll): its sender made it so */
        pl_bad_packet(ml->pp, s, "a packet of software type %u, which no protocol of the message "
                      "layer has", sw.type);
    if (!types[sw.type].first) {
        types[sw.type].proto->packet(ml, src, s, sw);
        return;
    }
    if (sw.id != p->rx_seq) { /* an earlier message's first packet is still to come */
        ml_stash(p, s);
        ml->st.reordered++;
        return;
    }
    p->rx_seq++;
    types[sw.type].proto->first(ml, src, s, sw);
    if (p->stash && !replay) replay_stash(ml, p);
}

void ml_dispatch(ml_ctx *ml, const tsim_slot *s)
{
    ml->st.pkts_recv++;
    uint8_t type = s->p.sw[0];
    if (type >= ML_TYPE_USER) {
        ml_charge(ml, ml->prm->ml_dispatch_cycles);
        ml_packet_fn fn = ml->user_fn[type - ML_TYPE_USER];
        if (!fn) /* a packet nobody on this rank expects */
            pl_bad_packet(ml->pp, s, "a packet of software type %u, which nothing on it has "
                          "registered", type);
        fn(ml, s, ml->user_arg[type - ML_TYPE_USER]);
        return;
    }
    dispatch(ml, s, 0);
}

int ml_register_packet(ml_ctx *ml, unsigned type, ml_packet_fn fn, void *arg)
{
    if (type < ML_TYPE_USER || type > 255 || !fn || ml->user_fn[type - ML_TYPE_USER]) return -1;
    ml->user_fn[type - ML_TYPE_USER] = fn;
    ml->user_arg[type - ML_TYPE_USER] = arg;
    return 0;
}

void ml_unregister_packet(ml_ctx *ml, unsigned type)
{
    if (type >= ML_TYPE_USER && type <= 255) ml->user_fn[type - ML_TYPE_USER] = NULL;
}
