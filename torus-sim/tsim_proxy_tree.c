/* The engine runs a blocked processor's pass through the collective network.
 *
 * A tree collective (collectives/coll_tree.c, run_pass in CO mode) is a
 * loop with no decision in it that needs the rank's code once every
 * packet's payload is made (the rank makes them all before it starts):
 *
 *   iteration = inject while the tree FIFO has room (tree_write_cycles
 *               each), then poll the tree reception FIFO and take each
 *               result (tree_read_cycles) until a poll finds nothing
 *               (poll_cycles) or all are in; if nothing moved, one
 *               advance of the message layer (an empty poll of the torus
 *               FIFOs: it has nothing to send), then block until a result
 *               arrives, the FIFO has room or a torus packet comes.
 *
 * Run by the rank, every result packet and most injections cost a wake:
 * a 1 MiB double allreduce is 12,000 of them on every rank. A rank that
 * blocks in it describes the pass instead (tsim_prx_tree) and the engine
 * runs it, step for step, with the same observation rule as tsim_proxy.c
 * (a poll or a full FIFO is believed once the engine has reached the
 * clock). The processor is woken when the pass is complete (its loop
 * ends), at the first torus packet (its message layer's advance takes it
 * from there) or at a tree packet that isn't the one due (its own poll
 * reports it).
 *
 * A broadcast of a layout (coll_tree_bcast_layout) keeps whole payloads:
 * the rank gathered them into out before the pass and scatters each
 * result from in afterwards; only its charges are the engine's, from the
 * per-packet segment table after out or in (tsim_tree.h): a packet's
 * gather before its first FIFO try, its scatter after it is taken, at
 * ddt_seg_cycles per segment, as run_pass charges them. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tsim_proxy.h"
#include "tsim_tree.h"

#define WIN 64 /* packets of payload read ahead */
#define MAX_W (1u << 24)

struct prx_tree {
    tsim_prx_tree d;
    int moved;       /* this iteration moved a packet */
    uint64_t pkts_sent, pkts_recv;
    uint8_t win[WIN * TSIM_TREE_PAYLOAD];
    uint32_t w0, wn; /* packets [w0, w0 + wn) of the payload are in win */
    uint32_t segs[WIN]; /* the layout's segment table, read ahead */
    uint32_t s0, sn;     /* its entries [s0, s0 + sn) */
};

void tree_prx_free(prx_state *x)
{
    free(x->tree);
    x->tree = NULL;
}

/* Takes a description run_pass could be in: counts in range, a header
 * the engine would take, buffers wherever there is something to move. */
int tree_prx_adopt(tsim_engine *e, int proc, const tsim_prx *d)
{
    prx_state *x = &e->ep[proc].prx;
    const tsim_prx_tree *t = &d->tree;
    if (t->npk == 0 || t->npk >= MAX_W || t->sent > t->npk || t->got > t->npk ||
        (t->sent < t->npk && !t->out) || (t->got < t->npk && !t->in) ||
        (t->sent == t->npk && t->got == t->npk) || !tree_hdr_ok(&t->h) ||
        (t->resv & ~(TSIM_TREE_SEGS_OUT | TSIM_TREE_SEGS_IN | TSIM_TREE_GATHERED)) ||
        ((t->resv & TSIM_TREE_SEGS_OUT) && !t->out) || ((t->resv & TSIM_TREE_SEGS_IN) && !t->in) ||
        !tree_prx_synced(e, proc))
        return 0;
    if (!x->tree && !(x->tree = malloc(sizeof *x->tree))) return 0;
    struct prx_tree *a = x->tree;
    a->d = *t;
    a->moved = 0;
    a->pkts_sent = a->pkts_recv = 0;
    a->wn = a->sn = 0;
    return 1;
}

void tree_prx_answer(tsim_engine *e, int proc, tsim_prx *d)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_tree *a = x->tree;
    d->tree.sent = a->d.sent;
    d->tree.got = a->d.got;
    d->tree.resv = a->d.resv;
    x->moved = x->consumed = 0; /* a resumed advance starts its polls afresh */
    x->inj_full = 0;
}

int tree_prx_wants(const tsim_engine *e, int proc, uint32_t bits)
{
    const struct prx_tree *a = e->ep[proc].prx.tree;
    if (bits & TSIM_WAKE_TREE_REC) return a->d.got < a->d.npk;
    if (bits & TSIM_WAKE_TREE_INJ) return a->d.sent < a->d.npk;
    return 1;
}

/* Payload of packet w, read ahead WIN packets at a time. */
static const uint8_t *payload(tsim_engine *e, int proc, uint32_t w)
{
    struct prx_tree *a = e->ep[proc].prx.tree;
    if (!a->wn || w < a->w0 || w >= a->w0 + a->wn) {
        uint32_t n = a->d.npk - w < WIN ? a->d.npk - w : WIN;
        size_t len = (size_t)n * TSIM_TREE_PAYLOAD;
        struct iovec l = {a->win, len},
                     r = {(void *)(uintptr_t)(a->d.out + (uint64_t)w * TSIM_TREE_PAYLOAD), len};
        if (prx_read(e, proc, &l, &r, 1, len,
                     "work description: a tree collective's payload the engine cannot read") != 0)
            return NULL;
        a->w0 = w;
        a->wn = n;
    }
    return a->win + (size_t)(w - a->w0) * TSIM_TREE_PAYLOAD;
}

/* Cycles of packet w's datatype work: its entry in the segment table at
 * base (out or in) + 256 npk, times ddt_seg_cycles; charged to the
 * processor at x->vt and counted in its ddt_cycles. -1 if unreadable. */
static int charge_segs(tsim_engine *e, int proc, uint64_t base, uint32_t w)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_tree *a = x->tree;
    if (!a->sn || w < a->s0 || w >= a->s0 + a->sn) {
        uint32_t n = a->d.npk - w < WIN ? a->d.npk - w : WIN;
        size_t len = (size_t)n * sizeof a->segs[0];
        struct iovec l = {a->segs, len},
                     r = {(void *)(uintptr_t)(base + (uint64_t)a->d.npk * TSIM_TREE_PAYLOAD +
                                              (uint64_t)w * sizeof a->segs[0]),
                          len};
        if (prx_read(e, proc, &l, &r, 1, len,
                     "work description: a tree broadcast's segment table the engine cannot read") != 0)
            return -1;
        a->s0 = w;
        a->sn = n;
    }
    uint64_t c = (uint64_t)a->segs[w - a->s0] * e->prm.ddt_seg_cycles;
    x->vt += c;
    if (c) atomic_fetch_add_explicit(&e->seg->procs[proc].ddt_cycles, c, memory_order_relaxed);
    return 0;
}

/* Is the rank's wait over (what pl_block's wake would find)? */
static int ready(tsim_engine *e, int proc)
{
    const struct prx_tree *a = e->ep[proc].prx.tree;
    if (prx_ready(e, proc)) return 1;
    if (a->d.got < a->d.npk && tree_rec_oldest(e, proc)) return 1;
    return a->d.sent < a->d.npk && tree_inj_room(e, proc) > 0;
}

void tree_prx_step(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_tree *a = x->tree;
    tsim_prx_tree *t = &a->d;
    for (;;) {
        if (!prx_settled(e, x->vt)) {
            prx_arm(e, proc, x->vt);
            return;
        }
        switch (x->phase) {
        case PH_T_TOP:
            if (t->sent == t->npk && t->got == t->npk) { /* the loop ends */
                prx_handover(e, proc, TSIM_PRX_DONE);
                return;
            }
            a->moved = 0;
            x->phase = PH_T_INJ;
            break;
        case PH_T_INJ: {
            /* room only grows with the engine's events: a "no" at a settled
             * clock is the one the rank's sync would get */
            if (t->sent == t->npk) {
                x->phase = PH_T_POLL;
                break;
            }
            if ((t->resv & TSIM_TREE_SEGS_OUT) && !(t->resv & TSIM_TREE_GATHERED)) {
                /* the gather, once, before the first try; the try at the new clock */
                if (charge_segs(e, proc, t->out, t->sent) != 0) return; /* the job is failing */
                t->resv |= TSIM_TREE_GATHERED;
                break;
            }
            if (tree_inj_room(e, proc) == 0) {
                x->phase = PH_T_POLL;
                break;
            }
            const uint8_t *pl = payload(e, proc, t->sent);
            if (!pl) return; /* the job is failing */
            tsim_thdr h = t->h;
            uint8_t sw[8] = {t->type, (uint8_t)t->sent, (uint8_t)(t->sent >> 8),
                             (uint8_t)(t->sent >> 16)};
            memcpy(sw + 4, &t->seq, sizeof t->seq);
            memcpy(h.sw, sw, sizeof sw);
            x->vt += e->prm.tree_write_cycles;
            tree_prx_inject(e, proc, &h, pl, x->vt);
            t->sent++;
            t->resv &= (uint8_t)~TSIM_TREE_GATHERED;
            a->pkts_sent++;
            e->prx_sent++;
            a->moved = 1;
            break;
        }
        case PH_T_POLL: {
            if (t->got == t->npk) {
                x->phase = a->moved ? PH_T_TOP : PH_T_ADV;
                break;
            }
            const tsim_tslot *s = tree_rec_oldest(e, proc);
            if (!s || s->m.t_arrive >= x->vt) { /* an empty poll */
                x->vt += e->prm.poll_cycles;
                x->phase = a->moved ? PH_T_TOP : PH_T_ADV;
                break;
            }
            uint16_t seq;
            memcpy(&seq, s->h.sw + 4, sizeof seq);
            uint32_t w = s->h.sw[1] | (uint32_t)s->h.sw[2] << 8 | (uint32_t)s->h.sw[3] << 16;
            if (s->h.sw[0] != t->type || seq != t->seq || w != t->got % MAX_W ||
                prx_wr_add(e, proc, t->in + (uint64_t)t->got * TSIM_TREE_PAYLOAD, s->payload,
                           TSIM_TREE_PAYLOAD) != 0) {
                prx_handover(e, proc, TSIM_PRX_DONE); /* its own poll reports it */
                return;
            }
            x->vt += e->prm.tree_read_cycles;
            tree_prx_consume(e, proc, x->vt);
            if ((t->resv & TSIM_TREE_SEGS_IN) && charge_segs(e, proc, t->in, t->got) != 0) return;
            t->got++;
            a->pkts_recv++;
            e->prx_read++;
            a->moved = 1;
            break;
        }
        case PH_T_ADV: /* ml_advance: nothing to send, one poll of the torus FIFOs */
            if (prx_visible(e, proc) >= 0) {
                prx_handover(e, proc, TSIM_PRX_POLL);
                return;
            }
            x->vt += e->prm.poll_cycles;
            x->phase = PH_BLOCKED;
            atomic_store(&e->seg->procs[proc].vt, x->vt);
            if (!ready(e, proc)) return;
            x->phase = PH_T_TOP;
            break;
        default:
            return;
        }
    }
}
