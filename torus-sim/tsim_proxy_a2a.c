/* The engine runs a blocked processor's alltoall loop.
 *
 * The packet-scheduled alltoall (collectives/coll_a2a.c) is a loop with no
 * decision in it that needs the rank's code: send the schedule's next
 * packets until the three injection FIFOs are full, read the packets that
 * come in and put each at its offset in the receive buffer (refilling the
 * FIFOs after every one), block when nothing moved. Run by the rank, every
 * packet in and most packets out cost a wake; a 64-rank alltoall is a
 * million wakes. A rank that blocks in it describes the loop instead
 * (tsim_prx_a2a: its table of blocks and the schedule's cursor) and the
 * engine runs it, step for step as coll_run would:
 *
 *   iteration = push, done?, advance (polls until one finds nothing or
 *               `batch` packets were read; each packet is taken, then
 *               pushed after), push, done?, then block if nothing moved
 *   push      = schedule order, one packet per destination per round; each
 *               packet tries the FIFOs from the round-robin cursor on,
 *               skipping the ones this push found full; stops when all
 *               three are
 *
 * with the same observations at the same clocks as tsim_proxy.c's loop (a
 * poll or a full FIFO is believed once the engine has reached the clock).
 * The processor is woken when the collective is done (it returns from
 * coll_run) or at the first packet that isn't this alltoall's (its own
 * advance takes it from there). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tsim_layout.h"
#include "tsim_proxy.h"

#define PAY TSIM_PAYLOAD_MAX
#define NFIFO 3                 /* the alltoall spreads over FIFOs 0..2 */
#define WIN_BYTES (256 * 1024)  /* send data read ahead per processor */
#define WIN_ROUNDS 64
#define MAX_W (1u << 24)        /* the software header's packet index */
#define IOV_BATCH 1024
#define LAYOUT_MAX (1u << 24)   /* segments of one block's layout */

struct prx_a2a {
    tsim_prx_a2a_peer *peer; /* by group rank; peer[i].order: schedule position i */
    uint32_t *npk;           /* packets of each block we send */
    int32_t *rank_of;        /* processor -> group rank, -1 */
    uint8_t *seen;
    uint32_t cap;            /* entries peer, npk and seen have room for */
    uint32_t n, me, pos, round, rr;
    uint8_t type;
    uint16_t seq, gid;
    uint64_t left, need, recv;
    unsigned wait;           /* FIFOs (bit f) the running push found full */
    uint32_t pushed;         /* packets the running push sent */
    uint32_t moved;          /* coll_run's count for this iteration, before its advance */
    uint64_t pkts_sent, pkts_recv;
    /* the blocks' bytes for rounds [w0, w0 + wn), W rounds per block */
    uint8_t *win;
    size_t win_cap;
    uint32_t W, w0, wn;
    /* layouts (TSIM_A2A_LAYOUTS): each peer's lists, copied into segs
     * (peer i's send list at segs + soff[i], its receive list at
     * segs + roff[i]), the cursors of the gathers' charges, of the
     * window's reads and of the scatters, and whether the cursor's packet
     * was gathered */
    int layouts, gathered;
    tsim_prx_a2a_lay *lay;
    struct iovec *segs;
    size_t segs_cap, *soff, *roff;
    tsim_lcur *gcur, *wcur, *rcur;
    uint16_t lay_seq, lay_gid; /* the collective whose lists segs holds */
    uint64_t lay_table;        /* its table's address; 0: none held */
};

static uint32_t npk(uint64_t bytes) { return (uint32_t)((bytes + PAY - 1) / PAY); }

void a2a_free(prx_state *x)
{
    struct prx_a2a *a = x->a2a;
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
    x->a2a = NULL;
}

static int grow(tsim_engine *e, struct prx_a2a *a, uint32_t n)
{
    if (!a->rank_of && !(a->rank_of = malloc((size_t)e->nprocs * sizeof *a->rank_of))) return -1;
    if (n <= a->cap) return 0;
    tsim_prx_a2a_peer *p = realloc(a->peer, n * sizeof *p);
    if (p) a->peer = p;
    uint32_t *k = realloc(a->npk, n * sizeof *k);
    if (k) a->npk = k;
    uint8_t *s = realloc(a->seen, n);
    if (s) a->seen = s;
    tsim_prx_a2a_lay *l = realloc(a->lay, n * sizeof *l);
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
 * its block's count): 0, or -1 to refuse the description. Kept for the
 * rest of the collective: the rank may not change them while it runs. */
static int read_lists(tsim_engine *e, int proc, struct prx_a2a *a, const tsim_prx_a2a *s)
{
    uint32_t n = s->n;
    if (a->lay_table == s->peers && a->lay_seq == s->seq && a->lay_gid == s->gid) {
        for (uint32_t i = 0; i < n; i++) a->gcur[i] = a->wcur[i] = a->rcur[i] = (tsim_lcur){0, 0};
        return 0;
    }
    a->lay_table = 0;
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tsim_prx_a2a_lay *l = &a->lay[i];
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
        const tsim_prx_a2a_lay *l = &a->lay[i];
        for (int dir = 0; dir < 2; dir++) {
            uint64_t cnt = dir ? l->rniov : l->sniov, addr = dir ? l->riov : l->siov;
            struct iovec *v = a->segs + (dir ? a->roff[i] : a->soff[i]);
            if (!cnt) continue;
            struct iovec lo = {v, cnt * sizeof *v}, re = {(void *)(uintptr_t)addr, lo.iov_len};
            if (prx_read(e, proc, &lo, &re, 1, lo.iov_len,
                         "work description: an alltoall layout the engine cannot read") != 0)
                return -1;
            uint64_t sum = 0;
            for (uint64_t k = 0; k < cnt; k++) sum += v[k].iov_len;
            if (sum != (dir ? a->peer[i].rcount : a->peer[i].scount)) return -1;
        }
        a->gcur[i] = a->wcur[i] = a->rcur[i] = (tsim_lcur){0, 0};
    }
    a->lay_table = s->peers, a->lay_seq = s->seq, a->lay_gid = s->gid;
    return 0;
}

/* Takes the description when it is one coll_run could be in: a table the
 * rank can show, every member a distinct processor, the schedule a
 * permutation of the others, and the counts its cursor implies. Anything
 * else is refused (the processor then runs its loop itself). */
int a2a_adopt(tsim_engine *e, int proc, const tsim_prx *d)
{
    prx_state *x = &e->ep[proc].prx;
    const tsim_prx_a2a *s = &d->a2a;
    uint32_t n = s->n;
    if (n < 2 || n > (uint32_t)e->nprocs || s->me >= n || s->pos >= n - 1 || s->rr_fifo >= NFIFO ||
        s->recv > s->need || d->batch == 0)
        return 0;
    if (!x->a2a && !(x->a2a = calloc(1, sizeof *x->a2a))) return 0;
    struct prx_a2a *a = x->a2a;
    if (grow(e, a, n) != 0) return 0;
    size_t bytes = n * sizeof *a->peer;
    int layouts = (s->resv & TSIM_A2A_LAYOUTS) != 0;
    struct iovec l[2] = {{a->peer, bytes}, {a->lay, n * sizeof *a->lay}},
                 r = {(void *)(uintptr_t)s->peers, bytes};
    if (prx_read(e, proc, l, &r, 1, bytes, "work description: the alltoall's table the engine cannot read") != 0)
        return 0;
    if (layouts) {
        struct iovec r2 = {(void *)(uintptr_t)(s->peers + bytes), l[1].iov_len};
        if (prx_read(e, proc, &l[1], &r2, 1, l[1].iov_len,
                     "work description: the alltoall's table the engine cannot read") != 0)
            return 0;
    }
    memset(a->rank_of, 0xff, (size_t)e->nprocs * sizeof *a->rank_of);
    memset(a->seen, 0, n);
    uint64_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tsim_prx_a2a_peer *p = &a->peer[i];
        if (p->proc >= (uint32_t)e->nprocs || a->rank_of[p->proc] >= 0) return 0;
        a->rank_of[p->proc] = (int32_t)i;
        a->npk[i] = npk(p->scount);
        if (a->npk[i] >= MAX_W) return 0;
        if (i != s->me) need += p->rcount;
    }
    if (a->peer[s->me].proc != (uint32_t)proc || need != s->need) return 0;
    uint64_t left = 0;
    for (uint32_t j = 0; j < n - 1; j++) {
        uint32_t o = a->peer[j].order;
        if (o >= n || o == s->me || a->seen[o]) return 0;
        a->seen[o] = 1;
        uint64_t sent = (uint64_t)s->round + (j < s->pos);
        left += a->npk[o] > sent ? a->npk[o] - sent : 0;
    }
    if (left != s->left) return 0; /* else a push could look for packets forever */
    if (layouts && read_lists(e, proc, a, s) != 0) return 0;
    a->layouts = layouts;
    a->gathered = layouts && (s->resv & TSIM_A2A_GATHERED);
    a->n = n, a->me = s->me, a->pos = s->pos, a->round = s->round, a->rr = s->rr_fifo;
    a->type = s->type, a->seq = s->seq, a->gid = s->gid;
    a->left = s->left, a->need = s->need, a->recv = s->recv;
    a->wait = 0, a->pushed = 0, a->moved = 0;
    a->pkts_sent = a->pkts_recv = 0;
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
    return 1;
}

void a2a_answer(tsim_engine *e, int proc, tsim_prx *d)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_a2a *a = x->a2a;
    d->a2a.pos = a->pos;
    d->a2a.round = a->round;
    d->a2a.rr_fifo = a->rr;
    d->a2a.left = a->left;
    d->a2a.recv = a->recv;
    d->a2a.moved = a->moved;
    d->a2a.pkts_sent = a->pkts_sent;
    d->a2a.pkts_recv = a->pkts_recv;
    d->a2a.resv = (uint8_t)((d->a2a.resv & ~TSIM_A2A_GATHERED) | (a->gathered ? TSIM_A2A_GATHERED : 0));
    x->inj_full = 0; /* the advance's send round found nothing to send */
}

/* Reads rounds [r, r + W) of every block we send, in as few calls as the
 * kernel allows. */
static int window(tsim_engine *e, int proc, uint32_t r)
{
    struct prx_a2a *a = e->ep[proc].prx.a2a;
    struct iovec loc[IOV_BATCH], rem[IOV_BATCH];
    int cnt = 0;
    size_t total = 0;
    uint64_t base = (uint64_t)r * PAY, span = (uint64_t)a->W * PAY;
    for (uint32_t i = 0; i < a->n; i++) {
        const tsim_prx_a2a_peer *p = &a->peer[i];
        if (i == a->me || p->scount <= base) continue;
        size_t len = (size_t)(p->scount - base < span ? p->scount - base : span);
        if (a->layouts && a->lay[i].sniov) { /* the layout's pieces, gathered into the window */
            const struct iovec *v = a->segs + a->soff[i];
            uint64_t addr;
            for (size_t got = 0, k; got < len; got += k) {
                k = tsim_layout_piece(v, a->lay[i].sniov, &a->wcur[i], base + got, len - got, &addr);
                if (!k) return -1; /* cannot happen: the list's total was checked */
                loc[cnt] = (struct iovec){a->win + (size_t)i * span + got, k};
                rem[cnt] = (struct iovec){(void *)(uintptr_t)addr, k};
                total += k;
                if (++cnt == IOV_BATCH) {
                    if (prx_read(e, proc, loc, rem, cnt, total,
                                 "work description: an alltoall send layout the engine cannot read") != 0)
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
            if (prx_read(e, proc, loc, rem, cnt, total,
                         "work description: an alltoall send buffer the engine cannot read") != 0)
                return -1;
            cnt = 0, total = 0;
        }
    }
    if (cnt && prx_read(e, proc, loc, rem, cnt, total,
                        "work description: an alltoall send buffer the engine cannot read") != 0)
        return -1;
    a->w0 = r;
    a->wn = a->W;
    return 0;
}

static void next_pos(struct prx_a2a *a)
{
    if (++a->pos == a->n - 1) a->pos = 0, a->round++;
}

/* a2a_push: 0 when it stopped (nothing left or all FIFOs full), 1 when a
 * full FIFO must wait for the engine to reach the clock, -1 when the job is
 * failing. Re-entered after a 1, it picks up exactly where it stood. */
static int push(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_a2a *a = x->a2a;
    tsim_proc *p = &e->seg->procs[proc];
    if (x->sp_fresh) a->wait = 0, a->pushed = 0, x->sp_fresh = 0;
    while (a->left) {
        uint32_t d = a->peer[a->pos].order;
        if (a->round >= a->npk[d]) {
            next_pos(a);
            continue;
        }
        const tsim_prx_a2a_peer *q = &a->peer[d];
        uint64_t off = (uint64_t)a->round * PAY;
        size_t n = (size_t)(q->scount - off < PAY ? q->scount - off : PAY);
        if (a->layouts && a->lay[d].sniov && !a->gathered) {
            /* coll_a2a.c gathers the packet before its first FIFO try, once */
            uint64_t c = (uint64_t)tsim_layout_segs(a->segs + a->soff[d], a->lay[d].sniov, &a->gcur[d],
                                                    off, n) * e->prm.ddt_seg_cycles;
            a->gathered = 1;
            x->vt += c;
            atomic_store(&p->vt, x->vt);
            atomic_fetch_add_explicit(&p->ddt_cycles, c, memory_order_relaxed);
        }
        unsigned chunks = prx_chunks(n);
        int sent = 0;
        for (unsigned k = 0; k < NFIFO && !sent; k++) {
            unsigned f = (a->rr + k) % NFIFO;
            if (a->wait & (1u << f)) continue;
            if (prx_room(&p->inj[f]) < chunks) {
                if (!prx_settled(e, x->vt)) return 1;
                a->wait |= 1u << f;
                continue;
            }
            if ((!a->wn || a->round < a->w0 || a->round >= a->w0 + a->wn) &&
                window(e, proc, a->round) != 0)
                return -1;
            const uint8_t *data = a->win + ((size_t)d * a->W + (a->round - a->w0)) * PAY;
            uint8_t sw[8] = {a->type, (uint8_t)a->round, (uint8_t)(a->round >> 8),
                             (uint8_t)(a->round >> 16)};
            memcpy(sw + 4, &a->seq, sizeof a->seq);
            memcpy(sw + 6, &a->gid, sizeof a->gid);
            prx_inject(e, proc, (int)f, q->proc, TSIM_F_DYNAMIC, q->proc % TSIM_CPUS, sw, data, n);
            a->rr = (f + 1) % NFIFO;
            sent = 1;
        }
        if (!sent) break;
        a->gathered = 0;
        a->left--;
        a->pushed++;
        a->pkts_sent++;
        next_pos(a);
    }
    return 0;
}

static int done(const struct prx_a2a *a) { return a->left == 0 && a->recv == a->need; }

/* One poll of the advance: 1 a packet was taken, 0 none was visible, -1
 * the processor was handed back (the packet is its software's). */
static int take(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_a2a *a = x->a2a;
    int f = prx_visible(e, proc);
    if (f < 0) return 0;
    tsim_ring *r = &e->seg->procs[proc].rec[f];
    const tsim_slot *s = &r->slot[atomic_load_explicit(&r->tail, memory_order_relaxed) % TSIM_RING_SLOTS];
    uint16_t seq, gid;
    memcpy(&seq, s->p.sw + 4, sizeof seq);
    memcpy(&gid, s->p.sw + 6, sizeof gid);
    uint64_t off = (uint64_t)(s->p.sw[1] | (uint32_t)s->p.sw[2] << 8 | (uint32_t)s->p.sw[3] << 16) * PAY;
    int32_t src = s->m.src < (uint32_t)e->nprocs ? a->rank_of[s->m.src] : -1;
    /* a later collective's, another protocol's, or one the rank will
     * find wrong: all the software's */
    if (s->p.sw[0] != a->type || seq != a->seq || gid != a->gid || src < 0 ||
        (uint32_t)src == a->me || off >= a->peer[src].rcount || prx_wr_ready(e, proc) != 0) {
        prx_handover(e, proc, TSIM_PRX_POLL);
        return -1;
    }
    const tsim_prx_a2a_peer *q = &a->peer[src];
    size_t n = (size_t)(q->rcount - off < PAY ? q->rcount - off : PAY);
    uint64_t segs = 0;
    if (a->layouts && a->lay[src].rniov) { /* scattered into the layout: each piece its own write */
        const struct iovec *v = a->segs + a->roff[src];
        uint64_t addr;
        for (size_t done = 0, k; done < n; done += k, segs++) {
            k = tsim_layout_piece(v, a->lay[src].rniov, &a->rcur[src], off + done, n - done, &addr);
            if (!k || prx_wr_add(e, proc, addr, s->p.payload + done, k) != 0) {
                prx_handover(e, proc, TSIM_PRX_POLL); /* the pieces written are rewritten by it */
                return -1;
            }
        }
    } else if (prx_wr_add(e, proc, q->rbuf + off, s->p.payload, n) != 0) {
        prx_handover(e, proc, TSIM_PRX_POLL);
        return -1;
    }
    prx_consume(e, proc, f);
    /* ml_dispatch of a collective's packet, then coll_a2a.c's scatter */
    x->vt += x->dispatch_cycles + segs * e->prm.ddt_seg_cycles;
    if (segs)
        atomic_fetch_add_explicit(&e->seg->procs[proc].ddt_cycles, segs * e->prm.ddt_seg_cycles,
                                  memory_order_relaxed);
    a->recv += n;
    a->pkts_recv++;
    x->pkts_recv++;
    x->consumed++;
    x->moved++;
    return 1;
}

static void enter(prx_state *x, int phase)
{
    x->phase = phase;
    x->sp_fresh = 1; /* every phase but the polls starts a push */
}

void a2a_step(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_a2a *a = x->a2a;
    for (;;) {
        if (!prx_settled(e, x->vt)) {
            prx_arm(e, proc, x->vt);
            return;
        }
        int rc;
        switch (x->phase) {
        case PH_A_TOP:
            if ((rc = push(e, proc)) < 0) return;
            if (rc > 0) continue;
            a->moved = a->pushed;
            if (done(a)) {
                prx_handover(e, proc, TSIM_PRX_DONE);
                return;
            }
            /* the advance: its send round has nothing (the rank described
             * no message going out), then its polls */
            x->phase = PH_A_POLL;
            x->consumed = x->moved = 0;
            break;
        case PH_A_POLL:
            if (x->consumed == x->batch) { /* the advance returns without an empty poll */
                enter(x, PH_A_PUSH2);
                break;
            }
            if ((rc = take(e, proc)) < 0) return;
            if (rc > 0) {
                enter(x, PH_A_HPUSH); /* coll_a2a_packet keeps the FIFOs fed */
                break;
            }
            x->vt += e->prm.poll_cycles;
            enter(x, PH_A_PUSH2);
            break;
        case PH_A_HPUSH:
            if ((rc = push(e, proc)) < 0) return;
            if (rc > 0) continue;
            x->phase = PH_A_POLL;
            break;
        case PH_A_PUSH2:
            if ((rc = push(e, proc)) < 0) return;
            if (rc > 0) continue;
            a->moved += x->moved + a->pushed;
            if (done(a)) {
                prx_handover(e, proc, TSIM_PRX_DONE);
                return;
            }
            if (a->moved) {
                enter(x, PH_A_TOP);
                break;
            }
            /* blocks until a packet arrives or a FIFO it found full has room */
            x->inj_full = a->wait;
            x->phase = PH_BLOCKED;
            atomic_store(&e->seg->procs[proc].vt, x->vt);
            if (!prx_ready(e, proc)) return;
            enter(x, PH_A_TOP);
            break;
        default:
            return;
        }
    }
}
