/* A pass through the collective network in VN mode: its loop, written once
 * against a port (torus-sim/tsim_prog.h), run by the rank itself over its
 * own port (coll_tree.c, run_pass_vn) and, as a program, by the engine for
 * a blocked rank (COLL_PROG_TREE_VN).
 *
 * The node's leader (cpu 0) alone talks to the collective network. Its
 * mate (cpu 1) hands it every packet's worth of its contribution over the
 * scratchpad (two torus packets a tree packet); the leader combines it
 * with its own in software (the tree ALU's function, so the result is the
 * one the tree would give), injects once, and hands every result back the
 * same way. A broadcast from a node's processor: the mate's data goes to
 * the leader, which injects it; the tree does not bring it back to that
 * node, so the leader keeps what it injected as the result. One iteration:
 *
 *   mate   = give its halves while the scratchpad FIFO has room (the
 *            layout's gather charged before a packet's first half), take
 *            the result halves that arrived;
 *   leader = take the mate's halves that arrived, inject while the tree
 *            FIFO has room and the mate's part of the packet is in, poll
 *            and take results until a poll finds nothing, give result
 *            halves to the mate while the FIFO has room;
 *
 * and when nothing moved, one advance of the message layer (the mate's
 * halves come in through it), then block until a packet, a result or room
 * comes. Every packet's payload is made before the pass and every result
 * kept whole (the conversions cost no simulated time), so the loop needs
 * none of the rank's code. A half is placed when it is read (the rank's
 * packet handler, the engine's polls: coll_tree_vn_place), so both drivers
 * see the same counts at the same clocks. Run by the rank, every half
 * would wake the processor it goes to: the engine runs the loop for both
 * mates and wakes each when its pass is complete, at a packet that is not
 * its pass's (its own advance takes it) or at a tree packet that isn't
 * the one due (its own step reports it).
 *
 * The engine's driver keeps what it wrote during an adoption (the mate's
 * halves, the results), since its writes reach the rank's memory only
 * when it hands back. */
#include <stdlib.h>
#include <string.h>

#include "../messagelayer/ml_internal.h" /* ML_ADVANCE_BATCH: the advance's polls */
#include "../torus-sim/tsim_tree.h"
#include "coll_internal.h"

_Static_assert(sizeof(coll_tree_vn_state) <= TSIM_HANDOFF_BYTES, "coll_tree_vn_state fits the hand-off");

#define PAY TSIM_TREE_PAYLOAD
#define HALF0 TSIM_PAYLOAD_MAX       /* bytes in the first half */
#define HALF1 (PAY - TSIM_PAYLOAD_MAX) /* and in the second */

static int has(const coll_tree_vn_state *t, unsigned bit) { return (t->role & bit) != 0; }

/* The pass is over for this rank (the loop's condition, per role). */
static int complete(const coll_tree_vn_state *t)
{
    if (!has(t, COLL_VN_LEADER))
        return t->f_halves >= (has(t, COLL_VN_FILLS) ? 2 * t->npk : 0) &&
               (!has(t, COLL_VN_TAKES) || t->got >= t->npk);
    int injects = has(t, COLL_VN_FILLS) || has(t, COLL_VN_MATE_FILLS);
    return (!injects || t->sent >= t->npk) && t->got >= t->npk &&
           (!has(t, COLL_VN_MATE_TAKES) || t->f_halves >= 2 * t->npk);
}

/* The leader may inject packet sent: its mate's part is in. */
static int may_inject(const coll_tree_vn_state *t)
{
    return (has(t, COLL_VN_FILLS) || has(t, COLL_VN_MATE_FILLS)) && t->sent < t->npk &&
           (!has(t, COLL_VN_MATE_FILLS) || t->m_halves >= 2 * (t->sent + 1));
}

static uint32_t wait_bits(const coll_tree_vn_state *t)
{
    uint32_t bits = TSIM_WAKE_REC_ALL | t->wait;
    if (has(t, COLL_VN_LEADER)) {
        if (has(t, COLL_VN_FROM_TREE) && t->got < t->npk) bits |= TSIM_WAKE_TREE_REC;
        if (may_inject(t)) bits |= TSIM_WAKE_TREE_INJ;
    }
    return bits;
}

static int charge_segs(tsim_port *pt, const coll_tree_vn_state *t, const coll_vn_io *io, void *ctx,
                       int dir, uint32_t w)
{
    if (!(t->flags & (dir ? COLL_TREE_SEGS_IN : COLL_TREE_SEGS_OUT))) return 0;
    uint32_t n;
    if (io->segs(ctx, dir, w, &n) != 0) return -1;
    tsim_port_charge_ddt(pt, (uint64_t)n * pt->prm->ddt_seg_cycles);
    return 0;
}

/* Half f_halves of packet f_halves / 2 of buf to the mate: 1, 0 (the
 * scratchpad FIFO is full at the clock), TSIM_PORT_WAIT, -1. */
static int give(tsim_port *pt, coll_tree_vn_state *t, const uint8_t *pkt)
{
    if (!pkt) return -1;
    uint32_t h = t->f_halves % 2;
    size_t n = h ? HALF1 : HALF0;
    tsim_hwhdr hw;
    tsim_header(pt->g, &hw, pt->proc ^ 1, n, 0, (unsigned)(pt->proc ^ 1) % TSIM_CPUS);
    int room = tsim_port_room(pt, TSIM_INJ_SP, hw.chunks);
    if (room == TSIM_PORT_WAIT) return room;
    if (!room) {
        t->wait = TSIM_WAKE_INJ(TSIM_INJ_SP);
        return 0;
    }
    coll_sw sw = coll_sw_make(COLL_T_TREE, t->f_halves, t->seq, 0);
    uint8_t swb[8];
    memcpy(swb, &sw, sizeof swb);
    pt->ops->inject(pt, TSIM_INJ_SP, &hw, swb, pkt + (h ? HALF0 : 0), n);
    t->f_halves++;
    t->pkts_sent++;
    t->moved = 1;
    return 1;
}

int coll_tree_vn_place(coll_tree_vn_state *t, const coll_vn_io *io, void *ctx, uint32_t idx,
                       const uint8_t *payload)
{
    if (idx != t->m_arrived || idx >= 2 * t->npk) return 0;
    if (io->put_half(ctx, idx, payload, idx % 2 ? HALF1 : HALF0) != 0) return -1;
    t->m_arrived++;
    return 1;
}

/* The end of an iteration: the next, or the advance if nothing moved. */
static void next(coll_tree_vn_state *t)
{
    t->phase = t->moved ? COLL_VN_TOP : COLL_VN_ADV;
    t->res.consumed = t->res.moved = 0;
}

/* The engine's polls: a half of this pass from the mate is placed. */
typedef struct vn_take_arg {
    coll_tree_vn_state *t;
    const coll_vn_io *io;
    void *ctx;
    int mate;
} vn_take_arg;

static int poll_take(void *L, const tsim_slot *s, unsigned *segs)
{
    vn_take_arg *a = L;
    coll_sw sw = coll_sw_get(s);
    (void)segs;
    if (sw.type != COLL_T_TREE || sw.seq != a->t->seq || s->m.src != (uint32_t)a->mate) return 0;
    int rc = coll_tree_vn_place(a->t, a->io, a->ctx, coll_sw_w(&sw), s->p.payload);
    if (rc > 0) a->t->pkts_recv++;
    return rc;
}

int coll_tree_vn_step(tsim_port *pt, coll_tree_vn_state *t, const coll_vn_io *io, void *ctx,
                      uint32_t *wait)
{
    const int leader = has(t, COLL_VN_LEADER);
    if (t->phase == COLL_VN_BLOCKED) t->phase = COLL_VN_TOP; /* woken: the loop's next iteration */
    for (;;) {
        if (!pt->ops->settled(pt)) return TSIM_RUN_WAIT;
        if (t->bad) return TSIM_RUN_BACK; /* the rank reports it */
        int r;
        switch (t->phase) {
        case COLL_VN_TOP:
            if (complete(t)) {
                ml_resume_hand_back(&t->res, 0);
                return TSIM_RUN_BACK;
            }
            t->wait = 0;
            t->moved = 0;
            t->phase = leader ? COLL_VN_MTAKE : COLL_VN_GIVE;
            break;
        case COLL_VN_MTAKE: /* what arrived is placed already: taking it is counting it */
            if (leader) {
                if (has(t, COLL_VN_MATE_FILLS) && t->m_halves < t->m_arrived) {
                    t->m_halves = t->m_arrived;
                    t->moved = 1;
                }
                t->phase = COLL_VN_INJ;
                break;
            }
            while (has(t, COLL_VN_TAKES) && t->m_halves < t->m_arrived) {
                t->m_halves++;
                t->moved = 1;
                if (t->m_halves % 2) continue;
                if (charge_segs(pt, t, io, ctx, 1, t->got) != 0) return TSIM_RUN_FAIL;
                t->got++;
            }
            next(t);
            break;
        case COLL_VN_INJ: {
            if (!may_inject(t)) {
                t->phase = COLL_VN_POLL;
                break;
            }
            if (has(t, COLL_VN_FILLS) && t->gathered != t->sent + 1) {
                /* the gather, once, before the first try; the try at the new clock */
                if (charge_segs(pt, t, io, ctx, 0, t->sent) != 0) return TSIM_RUN_FAIL;
                t->gathered = t->sent + 1;
                break;
            }
            if ((r = pt->ops->tree_room(pt)) == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (!r) {
                t->phase = COLL_VN_POLL;
                break;
            }
            uint8_t buf[PAY];
            const uint8_t *own = has(t, COLL_VN_FILLS) ? io->own(ctx, t->sent) : NULL;
            const uint8_t *m = has(t, COLL_VN_MATE_FILLS) ? io->mate(ctx, t->sent) : NULL;
            if ((has(t, COLL_VN_FILLS) && !own) || (has(t, COLL_VN_MATE_FILLS) && !m)) return TSIM_RUN_FAIL;
            memcpy(buf, own ? own : m, PAY);
            if (own && m) tsim_tree_alu(buf, m, t->h.op, t->h.width, t->h.sign);
            tsim_thdr h = t->h;
            coll_sw sw = coll_sw_make(COLL_T_TREE, t->sent, t->seq, 0);
            memcpy(h.sw, &sw, sizeof sw);
            pt->ops->tree_inject(pt, &h, buf);
            if (!has(t, COLL_VN_FROM_TREE)) { /* the root's node: the tree does not bring it back */
                if (io->put_result(ctx, t->sent, buf) != 0 ||
                    charge_segs(pt, t, io, ctx, 1, t->sent) != 0)
                    return TSIM_RUN_FAIL;
                t->got++;
            }
            t->sent++;
            t->moved = 1;
            break;
        }
        case COLL_VN_POLL: {
            if (!has(t, COLL_VN_FROM_TREE) || t->got == t->npk) {
                t->phase = COLL_VN_GIVE;
                break;
            }
            if ((r = pt->ops->tree_poll(pt)) == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (!r) { /* an empty poll (charged) */
                t->phase = COLL_VN_GIVE;
                break;
            }
            const tsim_tslot *s = pt->ops->tree_peek(pt);
            coll_sw sw;
            memcpy(&sw, s->h.sw, sizeof sw);
            if (sw.type != COLL_T_TREE || sw.seq != t->seq || coll_sw_w(&sw) != t->got % COLL_MAXPK) {
                ml_resume_hand_back(&t->res, 0);
                return TSIM_RUN_BACK; /* its own poll reports it */
            }
            if (io->put_result(ctx, t->got, s->payload) != 0) return TSIM_RUN_FAIL;
            pt->ops->tree_consume(pt);
            if (charge_segs(pt, t, io, ctx, 1, t->got) != 0) return TSIM_RUN_FAIL;
            t->got++;
            t->moved = 1;
            break;
        }
        case COLL_VN_GIVE:
            if (leader ? has(t, COLL_VN_MATE_TAKES) && t->f_halves < 2 * t->got
                       : t->f_halves < (has(t, COLL_VN_FILLS) ? 2 * t->npk : 0)) {
                uint32_t w = t->f_halves / 2;
                if (!leader && t->f_halves % 2 == 0 && t->gathered != w + 1) {
                    if (charge_segs(pt, t, io, ctx, 0, w) != 0) return TSIM_RUN_FAIL;
                    t->gathered = w + 1;
                    break; /* the try at the new clock */
                }
                r = give(pt, t, leader ? io->result(ctx, w) : io->own(ctx, w));
                if (r == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
                if (r < 0) return TSIM_RUN_FAIL;
                if (r > 0) break;
            }
            if (leader) next(t);
            else t->phase = COLL_VN_MTAKE;
            break;
        case COLL_VN_ADV: {
            /* the rank's own: its message layer's advance, whatever it has to do */
            if (!pt->engine) return TSIM_RUN_BACK;
            /* the engine's: nothing to send, polls taking the mate's halves */
            if (t->res.consumed == ML_ADVANCE_BATCH) { /* the advance returns without an empty poll */
                t->phase = COLL_VN_TOP;
                break;
            }
            vn_take_arg a = {t, io, ctx, pt->proc ^ 1};
            r = ml_engine_idle_poll(pt, &t->res, poll_take, &a);
            if (r == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (r < 0) return TSIM_RUN_FAIL;
            if (r == 2) return TSIM_RUN_BACK;
            if (r == 1) break;
            if (t->res.moved) { /* the advance moved something: the loop's next iteration */
                t->phase = COLL_VN_TOP;
                break;
            }
            t->phase = COLL_VN_BLOCKED; /* ml_handoff_block: until a packet, a result or room */
            *wait = wait_bits(t);
            return TSIM_RUN_BLOCK;
        }
        default:
            return TSIM_RUN_FAIL;
        }
    }
}

/* ---- the engine's driver ------------------------------------------------- */

#define WIN 64 /* packets of payload read ahead */

/* Packets written during an adoption, whole, by index: the rank's memory
 * has them only after the hand-back. */
typedef struct vn_cache {
    uint8_t *data, *ok;
    uint32_t cap;
} vn_cache;

typedef struct vn_priv {
    tsim_port *pt;
    const coll_tree_vn_state *t;
    uint8_t win[WIN * PAY];    /* out, packets [w0, w0 + wn) */
    uint32_t w0, wn;
    uint32_t segs[2][WIN];     /* the segment tables after out and in, read ahead */
    uint32_t s0[2], sn[2];
    vn_cache mate, result;
    uint8_t tmp[PAY];
} vn_priv;

static void vn_free(void *priv)
{
    vn_priv *a = priv;
    if (!a) return;
    free(a->mate.data), free(a->mate.ok);
    free(a->result.data), free(a->result.ok);
    free(a);
}

static int cache_ready(vn_cache *k, uint32_t npk)
{
    if (npk > k->cap) {
        uint8_t *d = realloc(k->data, (size_t)npk * PAY), *ok = d ? realloc(k->ok, npk) : NULL;
        if (d) k->data = d;
        if (!ok) return -1;
        k->ok = ok;
        k->cap = npk;
    }
    if (k->cap) memset(k->ok, 0, k->cap);
    return 0;
}

/* Packet w of the buffer at base: the engine's copy if it wrote it, else
 * the rank's memory. */
static const uint8_t *packet(vn_priv *a, vn_cache *k, uint64_t base, uint32_t w)
{
    if (k->ok[w]) return k->data + (size_t)w * PAY;
    if (a->pt->ops->read(a->pt, a->tmp, base + (uint64_t)w * PAY, PAY,
                         "hand-off: a tree collective's buffer the engine cannot read") != 0)
        return NULL;
    return a->tmp;
}

/* The bytes [off, off + n) of packet w at base, in the rank's memory and
 * in the engine's copy (the rest of the packet read first). */
static int put(vn_priv *a, vn_cache *k, uint64_t base, uint32_t w, size_t off, const uint8_t *p, size_t n)
{
    uint8_t *c = k->data + (size_t)w * PAY;
    if (!k->ok[w]) {
        if (n < PAY && a->pt->ops->read(a->pt, c, base + (uint64_t)w * PAY, PAY,
                                        "hand-off: a tree collective's buffer the engine cannot read") != 0)
            return -1;
        k->ok[w] = 1;
    }
    memcpy(c + off, p, n);
    return a->pt->ops->write(a->pt, base + (uint64_t)w * PAY + off, p, n);
}

static const uint8_t *e_own(void *ctx, uint32_t w)
{
    vn_priv *a = ctx;
    const coll_tree_vn_state *t = a->t;
    if (!a->wn || w < a->w0 || w >= a->w0 + a->wn) {
        uint32_t n = t->npk - w < WIN ? t->npk - w : WIN;
        if (a->pt->ops->read(a->pt, a->win, t->out + (uint64_t)w * PAY, (size_t)n * PAY,
                             "hand-off: a tree collective's payload the engine cannot read") != 0)
            return NULL;
        a->w0 = w;
        a->wn = n;
    }
    return a->win + (size_t)(w - a->w0) * PAY;
}

static const uint8_t *e_mate(void *ctx, uint32_t w)
{
    vn_priv *a = ctx;
    return packet(a, &a->mate, a->t->mbuf, w);
}

static const uint8_t *e_result(void *ctx, uint32_t w)
{
    vn_priv *a = ctx;
    return packet(a, &a->result, a->t->in, w);
}

static int e_put_result(void *ctx, uint32_t w, const uint8_t *p)
{
    vn_priv *a = ctx;
    return put(a, &a->result, a->t->in, w, 0, p, PAY);
}

static int e_put_half(void *ctx, uint32_t idx, const uint8_t *p, size_t n)
{
    vn_priv *a = ctx;
    const coll_tree_vn_state *t = a->t;
    int leader = (t->role & COLL_VN_LEADER) != 0;
    return put(a, leader ? &a->mate : &a->result, leader ? t->mbuf : t->in, idx / 2, idx % 2 ? HALF0 : 0,
               p, n);
}

static int e_segs(void *ctx, int dir, uint32_t w, uint32_t *n)
{
    vn_priv *a = ctx;
    const coll_tree_vn_state *t = a->t;
    if (!a->sn[dir] || w < a->s0[dir] || w >= a->s0[dir] + a->sn[dir]) {
        uint32_t k = t->npk - w < WIN ? t->npk - w : WIN;
        uint64_t base = (dir ? t->in : t->out) + (uint64_t)t->npk * PAY;
        if (a->pt->ops->read(a->pt, a->segs[dir], base + (uint64_t)w * sizeof a->segs[dir][0],
                             (size_t)k * sizeof a->segs[dir][0],
                             "hand-off: a tree broadcast's segment table the engine cannot read") != 0)
            return -1;
        a->s0[dir] = w;
        a->sn[dir] = k;
    }
    *n = a->segs[dir][w - a->s0[dir]];
    return 0;
}

static const coll_vn_io engine_io = {e_own, e_mate, e_result, e_put_result, e_put_half, e_segs};

/* Takes a state run_pass_vn could be in: a processor of a VN node in the
 * role its cpu has, counts in range, buffers wherever there is something
 * to move, a header the collective network carries; blocked waiting for
 * every reception FIFO (ml_handoff_block). */
static int vn_adopt(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start)
{
    coll_tree_vn_state *t = state;
    const unsigned roles = COLL_VN_LEADER | COLL_VN_FILLS | COLL_VN_TAKES | COLL_VN_MATE_FILLS |
                           COLL_VN_MATE_TAKES | COLL_VN_FROM_TREE;
    const int leader = (t->role & COLL_VN_LEADER) != 0;
    if (start || (*wait & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL || pt->g->cpus != 2 ||
        leader != (pt->proc % TSIM_CPUS == 0) || (t->role & ~roles) || t->bad ||
        (!leader && (t->role & (COLL_VN_MATE_FILLS | COLL_VN_MATE_TAKES | COLL_VN_FROM_TREE))) ||
        t->npk == 0 || t->npk >= COLL_MAXPK || t->sent > t->npk || t->got > t->npk ||
        t->m_halves > t->m_arrived || t->m_arrived > 2 * t->npk || t->f_halves > 2 * t->npk ||
        t->gathered > t->npk + 1 || !tsim_thdr_ok(&t->h) ||
        (t->flags & ~(COLL_TREE_SEGS_OUT | COLL_TREE_SEGS_IN)) ||
        ((t->role & COLL_VN_FILLS) && !t->out) || ((leader || (t->role & COLL_VN_TAKES)) && !t->in) ||
        ((t->role & COLL_VN_MATE_FILLS) && !t->mbuf) ||
        ((t->flags & COLL_TREE_SEGS_OUT) && !(t->role & COLL_VN_FILLS)) ||
        ((t->flags & COLL_TREE_SEGS_IN) && !(t->role & COLL_VN_TAKES)) || complete(t))
        return 0;
    if (!*priv && !(*priv = calloc(1, sizeof(vn_priv)))) return 0;
    vn_priv *a = *priv;
    if (cache_ready(&a->mate, leader && (t->role & COLL_VN_MATE_FILLS) ? t->npk : 0) != 0 ||
        cache_ready(&a->result, t->in ? t->npk : 0) != 0)
        return 0;
    a->wn = a->sn[0] = a->sn[1] = 0; /* the rank's memory may have changed since */
    memset(&t->res, 0, sizeof t->res);
    t->phase = COLL_VN_BLOCKED;
    t->pkts_sent = t->pkts_recv = 0;
    *wait = wait_bits(t);
    return 1;
}

static int vn_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    vn_priv *a = priv;
    a->pt = pt;
    a->t = state;
    return coll_tree_vn_step(pt, state, &engine_io, a, wait);
}

const tsim_prog coll_tree_vn_prog = {
    .name = "collective network pass (VN)",
    .id = COLL_PROG_TREE_VN,
    .state_size = sizeof(coll_tree_vn_state),
    .adopt = vn_adopt,
    .step = vn_step,
    .free = vn_free,
};
