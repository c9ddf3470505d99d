/* The packet-scheduled alltoall as a program the engine runs for a blocked
 * rank (torus-sim/tsim_prog.h).
 *
 * The alltoall (coll_a2a.c, coll_run with a2a_push) is a loop with no
 * decision in it that needs the rank's code: send the schedule's next
 * packets until the three injection FIFOs are full, read the packets that
 * come in and put each at its offset in the receive buffer (refilling the
 * FIFOs after every one), block when nothing moved. Run by the rank, every
 * packet in and most packets out cost a wake; a 64-rank alltoall is a
 * million wakes. A rank that blocks in it hands the engine its loop
 * instead (coll_a2a_state: the table of blocks and the schedule's cursor,
 * by coll_a2a_wait) and the engine runs it over its port, step for step as
 * coll_run would:
 *
 *   iteration = push, done?, advance (polls until one finds nothing or
 *               `batch` packets were read; each packet is taken, then
 *               pushed after), push, done?, then block if nothing moved
 *   push      = schedule order, one packet per destination per round; each
 *               packet tries the FIFOs from the round-robin cursor on,
 *               skipping the ones this push found full; stops when all
 *               three are
 *
 * every observation made once the engine has reached the clock (a poll,
 * or a full FIFO, is believed only then). The rank is woken when the
 * collective is done (it returns from coll_run) or at the first packet
 * that isn't this alltoall's (its own advance takes it from there, in its
 * polls: coll_a2a_state.res).
 *
 * Layouts (COLL_A2A_F_LAYOUTS): the table is followed by each peer's
 * segment lists, which the engine copies once per collective; it reads
 * its send window piece by piece from the senders' segments, writes each
 * received packet piece by piece into the receive segments, and charges
 * ddt_seg_cycles per segment at the points coll_a2a.c does (the gather
 * before the packet's first FIFO try, once: COLL_A2A_F_GATHERED both
 * ways; the scatter after the dispatch). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "../messagelayer/ml_internal.h" /* ML_ADVANCE_BATCH: the advance's polls */
#include "coll_internal.h"

_Static_assert(sizeof(coll_a2a_state) <= TSIM_HANDOFF_BYTES, "coll_a2a_state fits the hand-off");

#define PAY TSIM_PAYLOAD_MAX
#define NFIFO 3                 /* the alltoall spreads over FIFOs 0..2 */
#define WIN_BYTES (256 * 1024)  /* send data read ahead per processor */
#define WIN_ROUNDS 64
#define IOV_BATCH 1024
#define LAYOUT_MAX (1u << 24)   /* segments of one block's layout */

/* The loop's cursor (coll_a2a_state.phase). */
enum { PH_BLOCKED, PH_TOP, PH_POLL, PH_HPUSH, PH_PUSH2 };

/* The engine's own data for a processor, kept between adoptions. */
typedef struct a2a_priv {
    coll_a2a_peer *peer;     /* by group rank; peer[i].order: schedule position i */
    uint32_t *npk;           /* packets of each block we send */
    int32_t *rank_of;        /* processor -> group rank, -1 */
    uint8_t *seen;
    uint32_t cap;            /* entries peer, npk, seen, lay, ... have room for */
    int nprocs;              /* entries of rank_of */
    /* the blocks' bytes for rounds [w0, w0 + wn), W rounds per block */
    uint8_t *win;
    size_t win_cap;
    uint32_t W, w0, wn;
    /* layouts: each peer's lists, copied into segs (peer i's send list at
     * segs + soff[i], its receive list at segs + roff[i]), and the cursors
     * of the gathers' charges, of the window's reads and of the scatters */
    coll_a2a_lay *lay;
    struct iovec *segs;
    size_t segs_cap, *soff, *roff;
    tsim_lcur *gcur, *wcur, *rcur;
    uint16_t lay_seq, lay_gid; /* the collective whose lists segs holds */
    uint64_t lay_table;        /* its table's address; 0: none held */
} a2a_priv;

static uint32_t npk(uint64_t bytes) { return (uint32_t)((bytes + PAY - 1) / PAY); }

static void a2a_free(void *priv)
{
    a2a_priv *a = priv;
    if (!a) return;
    free(a->peer);
    free(a->npk);
    free(a->rank_of);
    free(a->seen);
    free(a->win);
    free(a->lay);
    free(a->segs);
    free(a->soff);
    free(a->roff);
    free(a->gcur);
    free(a->wcur);
    free(a->rcur);
    free(a);
}

static int grow(a2a_priv *a, int nprocs, uint32_t n)
{
    if (a->nprocs != nprocs) {
        int32_t *r = realloc(a->rank_of, (size_t)nprocs * sizeof *r);
        if (!r) return -1;
        a->rank_of = r;
        a->nprocs = nprocs;
    }
    if (n <= a->cap) return 0;
    coll_a2a_peer *p = realloc(a->peer, n * sizeof *p);
    if (p) a->peer = p;
    uint32_t *k = realloc(a->npk, n * sizeof *k);
    if (k) a->npk = k;
    uint8_t *s = realloc(a->seen, n);
    if (s) a->seen = s;
    coll_a2a_lay *l = realloc(a->lay, n * sizeof *l);
    if (l) a->lay = l;
    size_t *so = realloc(a->soff, n * sizeof *so), *ro = so ? realloc(a->roff, n * sizeof *ro) : NULL;
    if (so) a->soff = so;
    if (ro) a->roff = ro;
    tsim_lcur *gc = realloc(a->gcur, n * sizeof *gc);
    if (gc) a->gcur = gc;
    tsim_lcur *wc = realloc(a->wcur, n * sizeof *wc);
    if (wc) a->wcur = wc;
    tsim_lcur *rc = realloc(a->rcur, n * sizeof *rc);
    if (rc) a->rcur = rc;
    if (!p || !k || !s || !l || !so || !ro || !gc || !wc || !rc) return -1;
    a->cap = n;
    return 0;
}

/* The layouts' segment lists, copied into a->segs (each checked against
 * its block's count): 0, or -1 to refuse the state. Kept for the rest of
 * the collective: the rank may not change them while it runs. */
static int read_lists(tsim_port *pt, a2a_priv *a, const coll_a2a_state *st)
{
    uint32_t n = st->n;
    if (a->lay_table == st->peers && a->lay_seq == st->seq && a->lay_gid == st->gid) {
        for (uint32_t i = 0; i < n; i++) a->gcur[i] = a->wcur[i] = a->rcur[i] = (tsim_lcur){0, 0};
        return 0;
    }
    a->lay_table = 0;
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const coll_a2a_lay *l = &a->lay[i];
        if (l->sniov > LAYOUT_MAX || l->rniov > LAYOUT_MAX || (l->sniov && !l->siov) ||
            (l->rniov && !l->riov))
            return -1;
        a->soff[i] = total;
        total += l->sniov;
        a->roff[i] = total;
        total += l->rniov;
    }
    if (total > a->segs_cap) {
        struct iovec *v = realloc(a->segs, total * sizeof *v);
        if (!v) return -1;
        a->segs = v;
        a->segs_cap = total;
    }
    for (uint32_t i = 0; i < n; i++) {
        const coll_a2a_lay *l = &a->lay[i];
        for (int dir = 0; dir < 2; dir++) {
            uint64_t cnt = dir ? l->rniov : l->sniov, addr = dir ? l->riov : l->siov;
            struct iovec *v = a->segs + (dir ? a->roff[i] : a->soff[i]);
            if (!cnt) continue;
            if (pt->ops->read(pt, v, addr, cnt * sizeof *v,
                              "hand-off: an alltoall layout the engine cannot read") != 0)
                return -1;
            uint64_t sum = 0;
            for (uint64_t k = 0; k < cnt; k++) sum += v[k].iov_len;
            if (sum != (dir ? a->peer[i].rcount : a->peer[i].scount)) return -1;
        }
        a->gcur[i] = a->wcur[i] = a->rcur[i] = (tsim_lcur){0, 0};
    }
    a->lay_table = st->peers, a->lay_seq = st->seq, a->lay_gid = st->gid;
    return 0;
}

/* Takes a state coll_run could be in, from a rank blocked waiting for
 * every reception FIFO (ml_handoff_block): a table the rank can show,
 * every member a distinct processor, the schedule a permutation of the
 * others, and the counts its cursor implies. Anything else is refused
 * (the rank then runs its loop itself). */
static int a2a_adopt(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start)
{
    coll_a2a_state *st = state;
    const int nprocs = pt->g->nnodes * TSIM_CPUS;
    uint32_t n = st->n;
    if (start || (*wait & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL || n < 2 || n > (uint32_t)nprocs ||
        st->me >= n || st->pos >= n - 1 || st->rr_fifo >= NFIFO || st->recv > st->need ||
        (st->flags & ~(COLL_A2A_F_LAYOUTS | COLL_A2A_F_GATHERED)))
        return 0;
    if (!*priv && !(*priv = calloc(1, sizeof(a2a_priv)))) return 0;
    a2a_priv *a = *priv;
    if (grow(a, nprocs, n) != 0) return 0;
    size_t bytes = n * sizeof *a->peer;
    int layouts = (st->flags & COLL_A2A_F_LAYOUTS) != 0;
    if (pt->ops->read(pt, a->peer, st->peers, bytes,
                      "hand-off: the alltoall's table the engine cannot read") != 0)
        return 0;
    if (layouts && pt->ops->read(pt, a->lay, st->peers + bytes, n * sizeof *a->lay,
                                 "hand-off: the alltoall's table the engine cannot read") != 0)
        return 0;
    memset(a->rank_of, 0xff, (size_t)nprocs * sizeof *a->rank_of);
    memset(a->seen, 0, n);
    uint64_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        const coll_a2a_peer *p = &a->peer[i];
        if (p->proc >= (uint32_t)nprocs || a->rank_of[p->proc] >= 0) return 0;
        a->rank_of[p->proc] = (int32_t)i;
        a->npk[i] = npk(p->scount);
        if (a->npk[i] >= COLL_MAXPK) return 0;
        if (i != st->me) need += p->rcount;
    }
    if (a->peer[st->me].proc != (uint32_t)pt->proc || need != st->need) return 0;
    uint64_t left = 0;
    for (uint32_t j = 0; j < n - 1; j++) {
        uint32_t o = a->peer[j].order;
        if (o >= n || o == st->me || a->seen[o]) return 0;
        a->seen[o] = 1;
        uint64_t sent = (uint64_t)st->round + (j < st->pos);
        left += a->npk[o] > sent ? a->npk[o] - sent : 0;
    }
    if (left != st->left) return 0; /* else a push could look for packets forever */
    if (layouts && read_lists(pt, a, st) != 0) return 0;
    if (!layouts) st->flags &= (uint8_t)~COLL_A2A_F_GATHERED;
    a->W = WIN_BYTES / ((size_t)n * PAY);
    if (a->W < 1) a->W = 1;
    if (a->W > WIN_ROUNDS) a->W = WIN_ROUNDS;
    size_t want = (size_t)n * a->W * PAY;
    if (want > a->win_cap) {
        free(a->win);
        if (!(a->win = malloc(want))) {
            a->win_cap = 0;
            return 0;
        }
        a->win_cap = want;
    }
    a->wn = 0; /* the rank may have sent from the buffer since: read afresh */
    /* the answer and the engine's cursor start from nothing */
    memset(&st->res, 0, sizeof st->res);
    st->done = 0;
    st->moved = 0;
    st->pkts_sent = st->pkts_recv = 0;
    st->phase = PH_BLOCKED;
    st->fresh = 0;
    st->wait = 0;
    st->pushed = 0;
    return 1;
}

/* Reads rounds [r, r + W) of every block we send, in as few calls as the
 * kernel allows. */
static int window(tsim_port *pt, const coll_a2a_state *st, a2a_priv *a, uint32_t r)
{
    struct iovec loc[IOV_BATCH], rem[IOV_BATCH];
    int cnt = 0;
    size_t total = 0;
    uint64_t base = (uint64_t)r * PAY, span = (uint64_t)a->W * PAY;
    const int layouts = (st->flags & COLL_A2A_F_LAYOUTS) != 0;
    for (uint32_t i = 0; i < st->n; i++) {
        const coll_a2a_peer *p = &a->peer[i];
        if (i == st->me || p->scount <= base) continue;
        size_t len = (size_t)(p->scount - base < span ? p->scount - base : span);
        if (layouts && a->lay[i].sniov) { /* the layout's pieces, gathered into the window */
            const struct iovec *v = a->segs + a->soff[i];
            uint64_t addr;
            for (size_t got = 0, k; got < len; got += k) {
                k = tsim_layout_piece(v, a->lay[i].sniov, &a->wcur[i], base + got, len - got, &addr);
                if (!k) return -1; /* cannot happen: the list's total was checked */
                loc[cnt] = (struct iovec){a->win + (size_t)i * span + got, k};
                rem[cnt] = (struct iovec){(void *)(uintptr_t)addr, k};
                total += k;
                if (++cnt == IOV_BATCH) {
                    if (pt->ops->readv(pt, loc, rem, cnt, total,
                                       "hand-off: an alltoall send layout the engine cannot read") != 0)
                        return -1;
                    cnt = 0, total = 0;
                }
            }
            continue;
        }
        loc[cnt] = (struct iovec){a->win + (size_t)i * span, len};
        rem[cnt] = (struct iovec){(void *)(uintptr_t)(p->sbuf + base), len};
        total += len;
        if (++cnt == IOV_BATCH) {
            if (pt->ops->readv(pt, loc, rem, cnt, total,
                               "hand-off: an alltoall send buffer the engine cannot read") != 0)
                return -1;
            cnt = 0, total = 0;
        }
    }
    if (cnt && pt->ops->readv(pt, loc, rem, cnt, total,
                              "hand-off: an alltoall send buffer the engine cannot read") != 0)
        return -1;
    a->w0 = r;
    a->wn = a->W;
    return 0;
}

static void next_pos(coll_a2a_state *st)
{
    if (++st->pos == st->n - 1) st->pos = 0, st->round++;
}

/* a2a_push: 0 when it stopped (nothing left or all FIFOs full), 1 when a
 * full FIFO must wait for the engine to reach the clock, -1 when the job is
 * failing. Re-entered after a 1, it picks up exactly where it stood. */
static int push(tsim_port *pt, coll_a2a_state *st, a2a_priv *a)
{
    if (st->fresh) st->wait = 0, st->pushed = 0, st->fresh = 0;
    const int layouts = (st->flags & COLL_A2A_F_LAYOUTS) != 0;
    while (st->left) {
        uint32_t d = a->peer[st->pos].order;
        if (st->round >= a->npk[d]) {
            next_pos(st);
            continue;
        }
        const coll_a2a_peer *q = &a->peer[d];
        uint64_t off = (uint64_t)st->round * PAY;
        size_t n = (size_t)(q->scount - off < PAY ? q->scount - off : PAY);
        if (layouts && a->lay[d].sniov && !(st->flags & COLL_A2A_F_GATHERED)) {
            /* coll_a2a.c gathers the packet before its first FIFO try, once */
            uint64_t c = (uint64_t)tsim_layout_segs(a->segs + a->soff[d], a->lay[d].sniov, &a->gcur[d],
                                                    off, n) * pt->prm->ddt_seg_cycles;
            st->flags |= COLL_A2A_F_GATHERED;
            tsim_port_charge_ddt(pt, c);
        }
        tsim_hwhdr hw;
        tsim_header(pt->g, &hw, (int)q->proc, n, TSIM_F_DYNAMIC, q->proc % TSIM_CPUS);
        int sent = 0;
        for (unsigned k = 0; k < NFIFO && !sent; k++) {
            unsigned f = (st->rr_fifo + k) % NFIFO;
            if (st->wait & (1u << f)) continue;
            int room = pt->ops->room(pt, (int)f, hw.chunks);
            if (room == TSIM_PORT_WAIT) return 1;
            if (!room) {
                st->wait |= 1u << f;
                continue;
            }
            if ((!a->wn || st->round < a->w0 || st->round >= a->w0 + a->wn) &&
                window(pt, st, a, st->round) != 0)
                return -1;
            const uint8_t *data = a->win + ((size_t)d * a->W + (st->round - a->w0)) * PAY;
            coll_sw sw = coll_sw_make(st->type, st->round, st->seq, st->gid);
            uint8_t swb[8];
            memcpy(swb, &sw, sizeof swb);
            pt->ops->inject(pt, (int)f, &hw, swb, data, n);
            st->rr_fifo = (f + 1) % NFIFO;
            sent = 1;
        }
        if (!sent) break;
        st->flags &= (uint8_t)~COLL_A2A_F_GATHERED;
        st->left--;
        st->pushed++;
        st->pkts_sent++;
        next_pos(st);
    }
    return 0;
}

static int done(const coll_a2a_state *st) { return st->left == 0 && st->recv == st->need; }

/* One poll of the advance: 1 a packet was taken, 0 none was visible
 * (poll_cycles charged), TSIM_PORT_WAIT, or -1: the packet is the rank's
 * software's (a later collective's, another protocol's, one it will find
 * wrong) or cannot be written here; its own advance takes it. */
static int take(tsim_port *pt, coll_a2a_state *st, a2a_priv *a)
{
    int f = pt->ops->poll(pt);
    if (f == TSIM_PORT_WAIT || f < 0) return f == TSIM_PORT_WAIT ? f : 0;
    const tsim_slot *s = pt->ops->peek(pt, f);
    coll_sw sw = coll_sw_get(s);
    uint64_t off = (uint64_t)coll_sw_w(&sw) * PAY;
    int32_t src = s->m.src < (uint32_t)a->nprocs ? a->rank_of[s->m.src] : -1;
    if (sw.type != st->type || sw.seq != st->seq || sw.gid != st->gid || src < 0 ||
        (uint32_t)src == st->me || off >= a->peer[src].rcount)
        return -1;
    const coll_a2a_peer *q = &a->peer[src];
    size_t n = (size_t)(q->rcount - off < PAY ? q->rcount - off : PAY);
    uint64_t segs = 0;
    if ((st->flags & COLL_A2A_F_LAYOUTS) && a->lay[src].rniov) {
        /* scattered into the layout: each piece its own write */
        const struct iovec *v = a->segs + a->roff[src];
        uint64_t addr;
        for (size_t got = 0, k; got < n; got += k, segs++) {
            k = tsim_layout_piece(v, a->lay[src].rniov, &a->rcur[src], off + got, n - got, &addr);
            if (!k || pt->ops->write(pt, addr, s->p.payload + got, k) != 0)
                return -1; /* the pieces written are rewritten by the rank */
        }
    } else if (pt->ops->write(pt, q->rbuf + off, s->p.payload, n) != 0) {
        return -1;
    }
    pt->ops->consume(pt, f);
    /* ml_dispatch of a collective's packet, then coll_a2a.c's scatter */
    tsim_port_charge(pt, pt->prm->ml_dispatch_cycles);
    tsim_port_charge_ddt(pt, segs * pt->prm->ddt_seg_cycles);
    st->recv += n;
    st->pkts_recv++;
    st->res.pkts_recv++;
    st->res.consumed++;
    st->res.moved++;
    return 1;
}

static void enter(coll_a2a_state *st, int phase)
{
    st->phase = (uint8_t)phase;
    st->fresh = 1; /* every phase but the polls starts a push */
}

/* Hands the rank back: the alltoall complete (its loop's next done()
 * returns), or in its advance's polls at a packet that is its own. */
static int back(coll_a2a_state *st, int complete)
{
    st->done = (uint32_t)complete;
    st->res.point = complete ? ML_RESUME_NONE : ML_RESUME_POLL;
    st->res.inj_full = 0; /* the advance's send round found nothing to send */
    st->res.round_pos = st->res.round_sent = 0;
    st->res.pkts_sent = st->res.reordered = 0;
    return TSIM_RUN_BACK;
}

/* The job is failing (the rank's memory is gone): the loop stops here,
 * waiting for nothing. */
static int dead(coll_a2a_state *st, uint32_t *wait)
{
    st->phase = PH_BLOCKED;
    *wait = 0;
    return TSIM_RUN_BLOCK;
}

static int a2a_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    coll_a2a_state *st = state;
    a2a_priv *a = priv;
    if (st->phase == PH_BLOCKED) { /* woken: the loop's next iteration */
        enter(st, PH_TOP);
        st->res.moved = 0;
    }
    for (;;) {
        if (!pt->ops->settled(pt)) return TSIM_RUN_WAIT;
        int rc;
        switch (st->phase) {
        case PH_TOP:
            if ((rc = push(pt, st, a)) != 0) return rc < 0 ? dead(st, wait) : TSIM_RUN_WAIT;
            st->moved = st->pushed;
            if (done(st)) return back(st, 1);
            /* the advance: its send round has nothing (the rank handed over
             * no message going out), then its polls */
            st->phase = PH_POLL;
            st->res.consumed = st->res.moved = 0;
            break;
        case PH_POLL:
            if (st->res.consumed == ML_ADVANCE_BATCH) { /* the advance returns without an empty poll */
                enter(st, PH_PUSH2);
                break;
            }
            rc = take(pt, st, a);
            if (rc == TSIM_PORT_WAIT) return TSIM_RUN_WAIT;
            if (rc < 0) return back(st, 0);
            /* a packet: coll_a2a_packet keeps the FIFOs fed; none (the
             * empty poll charged): the iteration's second push */
            enter(st, rc > 0 ? PH_HPUSH : PH_PUSH2);
            break;
        case PH_HPUSH:
            if ((rc = push(pt, st, a)) != 0) return rc < 0 ? dead(st, wait) : TSIM_RUN_WAIT;
            st->phase = PH_POLL;
            break;
        case PH_PUSH2:
            if ((rc = push(pt, st, a)) != 0) return rc < 0 ? dead(st, wait) : TSIM_RUN_WAIT;
            st->moved += st->res.moved + st->pushed;
            if (done(st)) return back(st, 1);
            if (st->moved) {
                enter(st, PH_TOP);
                break;
            }
            /* blocks until a packet arrives or a FIFO it found full has room */
            st->phase = PH_BLOCKED;
            *wait = TSIM_WAKE_REC_ALL | st->wait << 8;
            return TSIM_RUN_BLOCK;
        default:
            return dead(st, wait);
        }
    }
}

const tsim_prog coll_a2a_prog = {
    .name = "packet-scheduled alltoall",
    .id = COLL_PROG_A2A,
    .state_size = sizeof(coll_a2a_state),
    .adopt = a2a_adopt,
    .step = a2a_step,
    .free = a2a_free,
};
