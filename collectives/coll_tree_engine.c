/* A pass through the collective network: its loop, written once against
 * a port (torus-sim/tsim_prog.h), run by the rank itself over its own port
 * (coll_tree.c, run_pass in CO mode) and, as a program, by the engine for
 * a blocked rank.
 *
 * The pass is a loop with no decision in it that needs the rank's code
 * once every packet's payload is made (the rank makes them all before it
 * starts):
 *
 *   iteration = inject while the tree FIFO has room (tree_write_cycles
 *               each), then poll the tree reception FIFO and take each
 *               result (tree_read_cycles) until a poll finds nothing
 *               (poll_cycles) or all are in; if nothing moved, one
 *               advance of the message layer, then block until a result
 *               arrives, the FIFO has room or a torus packet comes.
 *
 * The rank runs it until an iteration moves nothing; then its message
 * layer advances (ml_advance, whatever it has to do), and it blocks. Woken
 * per packet, every result packet and most injections would cost a wake: a
 * 1 MiB double allreduce is 12,000 of them on every rank. A rank that
 * blocks in it hands the engine its pass instead (coll_tree_state, by
 * tree_wait) and the engine runs the same loop over its port, step for
 * step, every observation made once the engine has reached the clock, its
 * advance the message layer's with nothing to send (ml_engine_idle_poll).
 * The rank is woken when the pass is complete (its loop ends), at the
 * first torus packet (its message layer's advance takes it from there) or
 * at a tree packet that isn't the one due (its own step reports it).
 *
 * A broadcast of a layout (coll_tree_bcast_layout) keeps whole payloads:
 * the rank gathers them into out before the pass and scatters each
 * result from in as it is taken; only its charges are the loop's, from
 * the per-packet segment table after out or in (COLL_TREE_SEGS_*): a
 * packet's gather before its first FIFO try, its scatter after it is
 * taken, at ddt_seg_cycles per segment. */
#include <stdlib.h>
#include <string.h>

#include "../torus-sim/tsim_tree.h"
#include "coll_internal.h"

#define WIN 64 /* packets of payload read ahead */

_Static_assert(sizeof(coll_tree_state) <= TSIM_HANDOFF_BYTES, "coll_tree_state fits the hand-off");

/* The driver's data, kept from pass to pass (the rank's in its coll_ctx)
 * and between adoptions (the engine's): the read-ahead windows name the
 * pass whose memory they hold. */
typedef struct tree_priv {
    uint32_t wait;      /* the rank's torus wait: reception and injection FIFO bits */
    uint8_t win[WIN * TSIM_TREE_PAYLOAD];
    uint64_t wout;      /* the payloads (out) win holds packets of: */
    uint32_t w0, wn;    /* packets [w0, w0 + wn) */
    uint32_t segs[WIN]; /* the layout's segment table, read ahead */
    uint64_t sbase;     /* the table's pass (its out or in): */
    uint32_t s0, sn;    /* its entries [s0, s0 + sn) */
    uint64_t pkts_sent, pkts_recv;
} tree_priv;

/* What the blocked loop waits for: the message layer's FIFOs, and the
 * collective network's while it has something to move that way. */
static uint32_t wait_bits(const coll_tree_state *t, const tree_priv *a)
{
    return a->wait | (t->got < t->npk ? TSIM_WAKE_TREE_REC : 0) |
           (t->sent < t->npk ? TSIM_WAKE_TREE_INJ : 0);
}

int coll_tree_begin(coll_tree_state *t, void **priv, uint32_t wait)
{
    if (!*priv && !(*priv = malloc(sizeof(tree_priv)))) return -1;
    tree_priv *a = *priv;
    a->wait = wait & (TSIM_WAKE_REC_ALL | (((1u << TSIM_NINJ) - 1) << 8));
    a->wn = a->sn = 0;
    a->pkts_sent = a->pkts_recv = 0;
    memset(&t->res, 0, sizeof t->res);
    t->phase = COLL_TREE_BLOCKED;
    t->moved = 0;
    return 0;
}

void coll_tree_end(void *priv) { free(priv); }

/* Takes a state run_pass could be in: counts in range, a header the
 * collective network carries, buffers wherever there is something to
 * move; blocked waiting for every reception FIFO (ml_handoff_block). */
static int tree_adopt(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start)
{
    coll_tree_state *t = state;
    const uint32_t flags = COLL_TREE_SEGS_OUT | COLL_TREE_SEGS_IN | COLL_TREE_GATHERED;
    if (start || (*wait & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL || t->npk == 0 ||
        t->npk >= COLL_MAXPK || t->sent > t->npk || t->got > t->npk ||
        (t->sent < t->npk && !t->out) || (t->got < t->npk && !t->in) ||
        (t->sent == t->npk && t->got == t->npk) || !tsim_thdr_ok(&t->h) || (t->flags & ~flags) ||
        ((t->flags & COLL_TREE_SEGS_OUT) && !t->out) || ((t->flags & COLL_TREE_SEGS_IN) && !t->in))
        return 0;
    (void)pt;
    if (coll_tree_begin(t, priv, *wait) != 0) return 0;
    *wait = wait_bits(t, *priv);
    return 1;
}

/* Payload of packet w, read ahead WIN packets at a time; NULL if the
 * rank's memory can't be read (the job is failing). */
static const uint8_t *payload(tsim_port *pt, const coll_tree_state *t, tree_priv *a, uint32_t w)
{
    if (!a->wn || a->wout != t->out || w < a->w0 || w >= a->w0 + a->wn) {
        uint32_t n = t->npk - w < WIN ? t->npk - w : WIN;
        if (pt->ops->read(pt, a->win, t->out + (uint64_t)w * TSIM_TREE_PAYLOAD,
                          (size_t)n * TSIM_TREE_PAYLOAD,
                          "hand-off: a tree collective's payload the engine cannot read") != 0)
            return NULL;
        a->wout = t->out;
        a->w0 = w;
        a->wn = n;
    }
    return a->win + (size_t)(w - a->w0) * TSIM_TREE_PAYLOAD;
}

/* Packet w's datatype work: its entry in the segment table at base (out
 * or in) + 256 npk, times ddt_seg_cycles, charged and counted in the
 * processor's ddt_cycles. -1 if unreadable. */
static int charge_segs(tsim_port *pt, const coll_tree_state *t, tree_priv *a, uint64_t base,
                       uint32_t w)
{
    if (!a->sn || a->sbase != base || w < a->s0 || w >= a->s0 + a->sn) {
        uint32_t n = t->npk - w < WIN ? t->npk - w : WIN;
        if (pt->ops->read(pt, a->segs,
                          base + (uint64_t)t->npk * TSIM_TREE_PAYLOAD + (uint64_t)w * sizeof a->segs[0],
                          (size_t)n * sizeof a->segs[0],
                          "hand-off: a tree broadcast's segment table the engine cannot read") != 0)
            return -1;
        a->sbase = base;
        a->s0 = w;
        a->sn = n;
    }
    tsim_port_charge_ddt(pt, (uint64_t)a->segs[w - a->s0] * pt->prm->ddt_seg_cycles);
    return 0;
}

/* The job is failing (the rank's memory is gone): the loop stops here,
 * waiting for nothing. */
static int dead(uint32_t *wait)
{
    *wait = 0;
    return TSIM_RUN_BLOCK;
}

/* Hands the rank back where its loop goes on: its own next iteration
 * (the pass complete, or a packet its own step must report). */
static int back(coll_tree_state *t)
{
    memset(&t->res, 0, sizeof t->res);
    return TSIM_RUN_BACK;
}

int coll_tree_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    coll_tree_state *t = state;
    tree_priv *a = priv;
    if (t->phase == COLL_TREE_BLOCKED) t->phase = COLL_TREE_TOP; /* woken: the loop's next iteration */
    for (;;) {
        if (!pt->ops->settled(pt)) return TSIM_RUN_WAIT;
        switch (t->phase) {
        case COLL_TREE_TOP:
            if (t->sent == t->npk && t->got == t->npk) return back(t); /* the loop ends */
            t->moved = 0;
            t->phase = COLL_TREE_INJ;
            break;
        case COLL_TREE_INJ: {
            if (t->sent == t->npk) {
                t->phase = COLL_TREE_POLL;
                break;
            }
            if ((t->flags & COLL_TREE_SEGS_OUT) && !(t->flags & COLL_TREE_GATHERED)) {
                /* the gather, once, before the first try; the try at the new clock */
                if (charge_segs(pt, t, a, t->out, t->sent) != 0) return dead(wait);
                t->flags |= COLL_TREE_GATHERED;
                break;
            }
            int r = pt->ops->tree_room(pt);
            if (r == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (r == 0) {
                t->phase = COLL_TREE_POLL;
                break;
            }
            const uint8_t *pl = payload(pt, t, a, t->sent);
            if (!pl) return dead(wait);
            tsim_thdr h = t->h;
            coll_sw sw = coll_sw_make(t->type, t->sent, t->seq, 0);
            memcpy(h.sw, &sw, sizeof sw);
            pt->ops->tree_inject(pt, &h, pl);
            t->sent++;
            t->flags &= (uint8_t)~COLL_TREE_GATHERED;
            a->pkts_sent++;
            t->moved = 1;
            break;
        }
        case COLL_TREE_POLL: {
            if (t->got == t->npk) {
                t->phase = t->moved ? COLL_TREE_TOP : COLL_TREE_ADV;
                break;
            }
            int r = pt->ops->tree_poll(pt);
            if (r == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (r == 0) { /* an empty poll (charged) */
                t->phase = t->moved ? COLL_TREE_TOP : COLL_TREE_ADV;
                break;
            }
            const tsim_tslot *s = pt->ops->tree_peek(pt);
            coll_sw sw;
            memcpy(&sw, s->h.sw, sizeof sw);
            if (sw.type != t->type || sw.seq != t->seq || coll_sw_w(&sw) != t->got % COLL_MAXPK ||
                pt->ops->write(pt, t->in + (uint64_t)t->got * TSIM_TREE_PAYLOAD, s->payload,
                               TSIM_TREE_PAYLOAD) != 0)
                return back(t); /* its own poll reports it */
            pt->ops->tree_consume(pt);
            if ((t->flags & COLL_TREE_SEGS_IN) && charge_segs(pt, t, a, t->in, t->got) != 0)
                return dead(wait);
            t->got++;
            a->pkts_recv++;
            t->moved = 1;
            break;
        }
        case COLL_TREE_ADV: { /* ml_advance */
            /* the rank's own: its message layer's advance, whatever it has to do */
            if (!pt->engine) return TSIM_RUN_BACK;
            /* the engine's: nothing to send, one poll of the torus FIFOs */
            int r = ml_engine_idle_poll(pt, &t->res, NULL, NULL);
            if (r == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (r == 2) return TSIM_RUN_BACK;
            t->phase = COLL_TREE_BLOCKED; /* ml_handoff_block: until a packet, a result or room */
            *wait = wait_bits(t, a);
            return TSIM_RUN_BLOCK;
        }
        default:
            return dead(wait);
        }
    }
}

const tsim_prog coll_tree_prog = {
    .name = "collective network pass",
    .id = COLL_PROG_TREE,
    .state_size = sizeof(coll_tree_state),
    .adopt = tree_adopt,
    .step = coll_tree_step,
    .free = coll_tree_end,
};
