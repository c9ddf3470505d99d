/* The packet-scheduled alltoall as a program the engine runs for a blocked
 * rank (torus-sim/tsim_prog.h).
 *
 * The alltoall (coll_a2a.c) has no decision in it that needs the rank's
 * code: send the schedule's next packets until the three injection FIFOs
 * are full, put each packet that comes in at its offset in the receive
 * buffer (refilling the FIFOs after every one), block when nothing moved.
 * Run by the rank, every packet in and most packets out cost a wake; a
 * 64-rank alltoall is a million wakes. A rank that blocks in it hands the
 * engine its loop instead (coll_a2a_state: the table of blocks and the
 * schedule's cursor) and the engine runs the same loop (coll_loop_step
 * with coll_a2a_ops: one loop, two drivers) over its port. This file is
 * the engine's driver: the rank's memory seen through the port.
 *
 * The send data is read ahead a window of rounds at a time (every block's
 * packets of those rounds, in as few process_vm_readv calls as the kernel
 * allows); each received packet is written at its offset. Layouts
 * (COLL_A2A_F_LAYOUTS): the table is followed by each peer's segment
 * lists, which the engine copies once per collective; the window is read
 * piece by piece from the senders' segments, each received packet written
 * piece by piece into the receive segments, and the segments counted as
 * the rank's ml_layout_copy counts them. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "coll_internal.h"

_Static_assert(sizeof(coll_a2a_state) <= TSIM_HANDOFF_BYTES, "coll_a2a_state fits the hand-off");

#define PAY TSIM_PAYLOAD_MAX
#define NFIFO 3                 /* the alltoall spreads over FIFOs 0..2 */
#define WIN_BYTES (256 * 1024)  /* send data read ahead per processor */
#define WIN_ROUNDS 64
#define IOV_BATCH 1024
#define LAYOUT_MAX (1u << 24)   /* segments of one block's layout */

/* The engine's own data for a processor, kept between adoptions. */
typedef struct a2a_priv {
    tsim_port *pt;
    const coll_a2a_state *st;
    int layouts;
    coll_a2a_peer *peer;     /* by group rank; peer[i].order: schedule position i */
    uint32_t *npk;           /* packets of each block we send */
    int *rank_of;            /* processor -> group rank, -1 */
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
    ml_cursor *gcur, *wcur, *rcur;
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
        int *r = realloc(a->rank_of, (size_t)nprocs * sizeof *r);
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
    ml_cursor *gc = realloc(a->gcur, n * sizeof *gc);
    if (gc) a->gcur = gc;
    ml_cursor *wc = realloc(a->wcur, n * sizeof *wc);
    if (wc) a->wcur = wc;
    ml_cursor *rc = realloc(a->rcur, n * sizeof *rc);
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
        for (uint32_t i = 0; i < n; i++) a->gcur[i] = a->wcur[i] = a->rcur[i] = (ml_cursor){0, 0};
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
        a->gcur[i] = a->wcur[i] = a->rcur[i] = (ml_cursor){0, 0};
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
        st->me >= n || st->cur.pos >= n - 1 || st->cur.rr_fifo >= NFIFO || st->cur.recv > st->cur.need ||
        st->cur.gathered > 1 || (st->flags & ~COLL_A2A_F_LAYOUTS))
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
    if (a->peer[st->me].proc != (uint32_t)pt->proc || need != st->cur.need) return 0;
    uint64_t left = 0;
    for (uint32_t j = 0; j < n - 1; j++) {
        uint32_t o = a->peer[j].order;
        if (o >= n || o == st->me || a->seen[o]) return 0;
        a->seen[o] = 1;
        uint64_t sent = (uint64_t)st->cur.round + (j < st->cur.pos);
        left += a->npk[o] > sent ? a->npk[o] - sent : 0;
    }
    if (left != st->cur.left) return 0; /* else a push could look for packets forever */
    if (layouts && read_lists(pt, a, st) != 0) return 0;
    if (!layouts) st->cur.gathered = 0;
    a->layouts = layouts;
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
    coll_loop_adopted(&st->loop);
    st->pkts_sent = st->pkts_recv = 0;
    return 1;
}

/* Reads rounds [r, r + W) of every block we send, in as few calls as the
 * kernel allows. */
static int window(a2a_priv *a, uint32_t r)
{
    tsim_port *pt = a->pt;
    const coll_a2a_state *st = a->st;
    struct iovec loc[IOV_BATCH], rem[IOV_BATCH];
    int cnt = 0;
    size_t total = 0;
    uint64_t base = (uint64_t)r * PAY, span = (uint64_t)a->W * PAY;
    for (uint32_t i = 0; i < st->n; i++) {
        const coll_a2a_peer *p = &a->peer[i];
        if (i == st->me || p->scount <= base) continue;
        size_t len = (size_t)(p->scount - base < span ? p->scount - base : span);
        if (a->layouts && a->lay[i].sniov) { /* the layout's pieces, gathered into the window */
            const struct iovec *v = a->segs + a->soff[i];
            uint64_t addr;
            for (size_t got = 0, k; got < len; got += k) {
                k = ml_layout_piece(v, a->lay[i].sniov, &a->wcur[i], base + got, len - got, &addr);
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

static unsigned eng_segs(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n)
{
    a2a_priv *a = L->ctx; /* what the rank's gather counts */
    return a->lay[d].sniov ? ml_layout_segs(a->segs + a->soff[d], a->lay[d].sniov, &a->gcur[d], off, n) : 0;
}

static const uint8_t *eng_fetch(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n, uint8_t *tmp)
{
    (void)tmp, (void)n;
    a2a_priv *a = L->ctx;
    uint32_t r = (uint32_t)(off / PAY);
    if ((!a->wn || r < a->w0 || r >= a->w0 + a->wn) && window(a, r) != 0) return NULL;
    return a->win + ((size_t)d * a->W + (r - a->w0)) * PAY;
}

static int eng_place(coll_a2a_loop *L, uint32_t s, uint64_t off, const uint8_t *data, size_t n,
                     unsigned *segs)
{
    a2a_priv *a = L->ctx;
    tsim_port *pt = a->pt;
    if (a->layouts && a->lay[s].rniov) { /* scattered into the layout: each piece its own write */
        const struct iovec *v = a->segs + a->roff[s];
        uint64_t addr;
        unsigned k_segs = 0;
        for (size_t got = 0, k; got < n; got += k, k_segs++) {
            k = ml_layout_piece(v, a->lay[s].rniov, &a->rcur[s], off + got, n - got, &addr);
            if (!k || pt->ops->write(pt, addr, data + got, k) != 0) return -1;
        }
        *segs = k_segs;
        return 0;
    }
    return pt->ops->write(pt, a->peer[s].rbuf + off, data, n);
}

static const coll_a2a_io eng_io = {eng_segs, eng_fetch, eng_place};

static int a2a_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    coll_a2a_state *st = state;
    a2a_priv *a = priv;
    a->pt = pt;
    a->st = st;
    coll_a2a_loop L = {a->peer, st->n, st->me, a->rank_of, a->nprocs, st->seq, st->gid, a->layouts,
                       &st->cur, &st->pkts_sent, &st->pkts_recv, &eng_io, a};
    return coll_loop_step(pt, &st->loop, &coll_a2a_ops, &L, wait);
}

const tsim_prog coll_a2a_prog = {
    .name = "packet-scheduled alltoall",
    .id = COLL_PROG_A2A,
    .state_size = sizeof(coll_a2a_state),
    .adopt = a2a_adopt,
    .step = a2a_step,
    .free = a2a_free,
};
