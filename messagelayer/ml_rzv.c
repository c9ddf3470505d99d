/* Rendezvous: a scout packet (the header and the sender's id); the
 * receiver, once it knows where the data goes (at the scout's upcall, or
 * later through ml_accept), grants it; the sender then streams the data,
 * adaptively routed, into the receiver's slot. In CO mode the coprocessor
 * receives the data of an aligned buffer; an unaligned flat buffer is split
 * between the two processors by whole cache lines (grant). */
#include <stddef.h>
#include <string.h>

#include "ml_internal.h"

static int rzv_send(ml_ctx *ml, ml_peer *p, ml_msg *m)
{
    ml_sw sw = {T_SCOUT, (uint8_t)m->hdrlen, m->seq, (uint32_t)m->len};
    if (!ml_send_with_id(ml, p, m, ml->map.proc[m->dst], ml_fifo_for(ml, m->dst), &sw, NULL, 0)) return 0;
    /* a hand-off may name it (ml_handoff.c), so that the engine can take
     * its grant while this rank waits */
    ml->rzv_wait[ml->rzv_wait_pos++ % ML_HO_WT] = m->id;
    return 1;
}

void ml_rzv_waiting(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t)
{
    ml_wire_of(ml, m, t, T_RZV_DATA, m->id, (uint8_t)ml_fifo_for(ml, m->dst), TSIM_F_DYNAMIC,
               (uint8_t)(ml->map.proc[m->dst] % TSIM_CPUS));
}

/* The grant says who receives: the main processor, the coprocessor, or a
 * split whose parts' packets go to their own cpus; a part ends where a
 * message would, so its packets never straddle two cpus. */
int ml_rzv_grant(ml_ho_tx *t, uint16_t slot, uint8_t b, size_t align)
{
    /* a split's head is less than a line and leaves the coprocessor whole lines */
    if (b >= ML_CPU_SPLIT && (!align || (size_t)(b - ML_CPU_SPLIT) >= align ||
                              (size_t)(b - ML_CPU_SPLIT) >= t->len))
        return -1;
    int co = 0;
    t->len = ml_part_end(b, t->len, align, t->off, &co);
    t->id = (uint16_t)(b >= ML_CPU_SPLIT && co ? slot | ML_CO_PART : slot);
    t->b = b;
    if (co) t->group = 1;
    return 0;
}

int ml_rzv_next_part(ml_ho_tx *t, size_t align)
{
    if (t->type != T_RZV_DATA || t->b < ML_CPU_SPLIT || t->off < t->len || t->off >= t->whole) return -1;
    /* what ml_rzv_waiting and ml_rzv_grant make of the message at off */
    t->len = t->whole;
    t->group = (uint8_t)(t->dst % TSIM_CPUS);
    return ml_rzv_grant(t, (uint16_t)(t->id & (ML_CO_PART - 1)), t->b, align);
}

/* The data packets of m from m->off, after the grant (m->seq is the
 * receiver's slot, m->used the grant's b). */
static void rzv_wire(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t)
{
    ml_rzv_waiting(ml, m, t);
    ml_rzv_grant(t, m->seq, m->used, ml->prm->ml_coproc_align);
}

void ml_rzv_granted(ml_ctx *ml, uint16_t id, uint16_t slot, uint8_t b)
{
    ml_msg *m = ml->ids[id];
    ml->ids[id] = NULL;
    ml_data_phase(ml, m, slot, b);
}

/* Data whose buffer (or a layout's first segment) is cache-line aligned
 * is received by the coprocessor; a flat buffer that is not, by both: the
 * coprocessor its whole lines, if it has any (ml_split_end). */
void ml_rzv_to(uint64_t at, int layout, uint64_t cap, uint64_t len, size_t align, int co_running,
               ml_rzv_dest *d)
{
    *d = (ml_rzv_dest){ML_CPU_MAIN, ML_CPU_MAIN, 0, 0};
    if (!co_running || !align || cap < len) return;
    size_t head = (align - at % align) % align;
    if (!head) {
        d->b = d->cpu = ML_CPU_CO;
    } else if (!layout && align <= 128 && head < len && ml_split_end(len, head, align) > head) {
        d->b = (uint8_t)(ML_CPU_SPLIT + head);
        d->cpu = ML_CPU_SPLIT;
        d->co_lo = (uint32_t)head;
        d->co_hi = (uint32_t)ml_split_end(len, head, align);
    }
}

void ml_rzv_bind(ml_rx *rx, ml_rx *part, const ml_rzv_dest *d)
{
    rx->cpu = d->cpu;
    if (d->cpu != ML_CPU_SPLIT) return;
    rx->co_lo = d->co_lo;
    rx->co_hi = d->co_hi;
    if (part) /* its bytes already counted as there */
        *part = (ml_rx){.r = {.buf = rx->r.buf, .cap = rx->r.cap}, .len = d->co_hi, .got = d->co_lo,
                        .src = rx->src, .used = 1, .cpu = ML_CPU_CO};
}

/* Tells the sender where the data goes (now or, if the upcall deferred it,
 * from ml_accept). */
static void grant(ml_ctx *ml, uint16_t k)
{
    ml_rx *rx = &ml->slots[k];
    ml_rzv_dest d;
    uintptr_t at = rx->r.niov ? (uintptr_t)rx->r.iov[0].iov_base : (uintptr_t)rx->r.buf;
    ml_rzv_to(at, rx->r.niov != 0, rx->r.cap, rx->len, ml->prm->ml_coproc_align, ml->co_running, &d);
    ml_rzv_bind(rx, &ml->co_part[k], &d);
    ml_send_ctl(ml, rx->src, ml_fifo_for(ml, rx->src), T_GRANT, d.b, rx->sender_id, k);
    if (rx->len == 0) ml_rx_complete(ml, rx);
    /* a split's partial lines are the main processor's: the engine may
     * take them while it waits (its handed-over reception's lo) */
    else if (d.cpu != ML_CPU_CO) ml_act_add(ml, rx, T_RZV_DATA, k);
}

void ml_rzv_accept(ml_ctx *ml, uint16_t k) { grant(ml, k); }

static void rzv_first(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    const uint8_t *pl = s->p.payload;
    size_t hl = sw.b;
    uint16_t id;
    memcpy(&id, pl + hl, sizeof id);
    ml_charge(ml, ml->prm->ml_rzv_cycles);
    uint16_t k = ml_slot_alloc(ml);
    ml_rx *rx = &ml->slots[k];
    ml_upcall(ml, src, pl, hl, sw.w, rx, ML_RZV, k);
    rx->sender_id = id;
    if (!rx->r.defer) grant(ml, k);
}

/* The engine's driver of rzv_first for a waiting rank (ml_engine_match.c):
 * the grant from a slot the rank reserved, with the b its grant would
 * choose; the main processor's data then the engine's like any
 * reception's, the coprocessor's read by the coprocessor's loop from the
 * rank's slot, so written there (and published) before the grant goes. */
static int rzv_take(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                    ml_resume *a)
{
    const ml_ho_post *p = &st->posted[t->row];
    if (st->nslots >= st->nres || t->hl + sizeof t->sender_id > ml_payload_of(s) ||
        (st->co_running && pt->g->cpus != 1))
        return ml_ho_back(st, ML_BACK_NEW);
    ml_rzv_to(p->buf, 0, p->cap, sw.w, pt->prm->ml_coproc_align, (int)st->co_running, &t->to);
    if (t->to.cpu != ML_CPU_CO && st->nrx >= ML_HO_RX) return ml_ho_back(st, ML_BACK_NEW);
    int rc = ml_engine_sender(pt, st, s, t);
    if (rc) return rc;
    t->proto = ML_RZV;
    t->slot = st->res_slot[st->nslots];
    /* a slot still free: the rank's word, checked */
    uint8_t used;
    if (pt->ops->read(pt, &used, st->co_slots + (uint64_t)t->slot * sizeof(ml_rx) + offsetof(ml_rx, used), 1,
                      "hand-off: a slot the engine cannot read") != 0)
        return TSIM_RUN_FAIL;
    if (used) return ml_ho_back(st, ML_BACK_NEW);
    memcpy(&t->sender_id, s->p.payload + t->hl, sizeof t->sender_id);
    ml_recv r = ml_ho_post_recv(p, ML_RZV, t->slot);
    ml_rx rx, part;
    ml_rx_begin(&rx, &r, sw.w, t->src);
    rx.sender_id = t->sender_id;
    ml_rzv_bind(&rx, &part, &t->to);
    if ((t->to.cpu == ML_CPU_CO &&
         pt->ops->write(pt, st->co_slots + (uint64_t)t->slot * sizeof rx, &rx, sizeof rx) != 0) ||
        (t->to.cpu == ML_CPU_SPLIT &&
         pt->ops->write(pt, st->co_parts + (uint64_t)t->slot * sizeof part, &part, sizeof part) != 0))
        return ml_ho_back(st, ML_BACK_OTHER);
    ml_engine_taken(pt, st, f, t, pt->prm->ml_rzv_cycles, a);
    st->nslots++;
    if (t->to.cpu != ML_CPU_CO)
        ml_engine_rx(st, t, &rx, UINT32_MAX, T_RZV_DATA, t->slot, t->to.cpu == ML_CPU_SPLIT ? t->to.co_lo : 0);
    st->grant_proc = s->m.src;
    st->grant_owe = st->ntaken;
    return ml_engine_grant(pt, st, a);
}

/* The reception goes into its slot as grant() would have left it; the
 * coprocessor's is there already (the engine wrote it), and the
 * coprocessor may be receiving into it. */
static void rzv_replay(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, const ml_recv *r, ml_rx *tmp)
{
    (void)d, (void)tmp;
    ml_rzv_dest to;
    ml_rzv_to((uintptr_t)r->buf, 0, r->cap, t->len, ml->prm->ml_coproc_align, ml->co_running, &to);
    ml_rx *rx = &ml->slots[t->slot % ML_MAX_IDS];
    if (t->slot >= ML_MAX_IDS || to.b != t->to.b || to.cpu != t->to.cpu || to.co_lo != t->to.co_lo ||
        to.co_hi != t->to.co_hi || (to.cpu != ML_CPU_CO && rx->used))
        pl_damaged(ml->pp, "hand-off: the engine granted rank %d's message slot %u for cpu %u, its own "
                   "grant cpu %u%s", t->src, t->slot, t->to.cpu, to.cpu, rx->used ? ", the slot taken" : "");
    if (t->to.cpu == ML_CPU_CO) return;
    ml_rx_begin(rx, r, t->len, t->src);
    rx->sender_id = t->sender_id;
    ml_rzv_bind(rx, NULL, &t->to);
    ml_act_add(ml, rx, T_RZV_DATA, t->slot);
    ml->reg_rx[t->rxi] = rx;
}

void ml_rzv_owed(ml_ctx *ml, const ml_ho_match *t)
{
    if (t->type == T_SCOUT && !t->sent)
        ml_send_ctl(ml, t->src, ml_fifo_for(ml, t->src), T_GRANT, t->to.b, t->sender_id, t->slot);
}

static void rzv_packet(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    (void)src;
    switch (sw.type) {
    case T_GRANT: /* the engine's loop takes it for a blocked sender the same way (ml_engine.c) */
        ml_charge(ml, ml->prm->ml_rzv_cycles);
        ml_rzv_granted(ml, sw.id, (uint16_t)sw.w, sw.b);
        break;
    case T_RZV_DATA: {
        ml_rx *rx = &ml->slots[sw.id];
        ml_rx_data(ml, rx, sw.w, s->p.payload, ml_data_bytes(rx->cpu == ML_CPU_SPLIT ? rx->co_lo : 0, rx->len, sw.w));
        if (rx->got >= rx->len) ml_rx_complete(ml, rx);
        break;
    }
    case T_CO_RZV_DONE: {
        ml_rx *rx = &ml->slots[sw.id & (ML_CO_PART - 1)];
        if (sw.id & ML_CO_PART) { /* the coprocessor's part of a split is in */
            ml->co_part[sw.id & (ML_CO_PART - 1)].used = 0;
            rx->got += rx->co_hi - rx->co_lo;
        }
        if (!(sw.id & ML_CO_PART) || rx->got >= rx->len) ml_rx_complete(ml, rx);
        break;
    }
    }
}

const ml_proto_ops ml_rzv_proto = {
    .name = "rendezvous",
    .send = rzv_send,
    .first = rzv_first,
    .packet = rzv_packet,
    .wire = rzv_wire,
    .take = rzv_take,
    .replay = rzv_replay,
};
