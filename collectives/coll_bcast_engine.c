/* The deposit-bit broadcast as a program the engine runs for a blocked
 * rank (torus-sim/tsim_prog.h).
 *
 * The broadcast (coll_bcast.c) has no decision in it that needs the
 * rank's code: every packet it receives is put in place and forwarded at
 * once to the node's targets (pipelined), so run by the rank it costs a
 * wake per packet on every rank of the tree. A rank that blocks in it
 * hands the engine its loop instead (coll_bc_state) and the engine runs
 * the same loop (coll_loop_step with coll_bc_ops: one loop, two drivers)
 * over its port; this file is the engine's driver. VN mode's loop is the
 * same: cpu 0 forwards to its node mate over the scratchpad FIFO like to
 * any other target, the mate only takes.
 *
 * The rank's memory: the message (buffer or layout) is read for packets
 * the rank held when it handed over (a window per part, gathered piece by
 * piece for a layout); the packets the engine takes are written into it
 * (batched until the wake by the port) and kept here until every target
 * of their part has sent them, since the rank's memory doesn't have them
 * before the wake. The have bitmap is read from each part's avail on,
 * kept here, and the bytes the engine set are written back at the hand-
 * back. Layouts: the segment list is read once per hand-over; gathers and
 * scatters count the segments as the rank's ml_layout_copy does. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "coll_internal.h"

_Static_assert(sizeof(coll_bc_state) <= TSIM_HANDOFF_BYTES, "coll_bc_state fits the hand-off");

#define PAY TSIM_PAYLOAD_MAX
#define WIN 64                /* packets of a part read ahead from the rank's memory */
#define IOV_BATCH 1024
#define LAYOUT_MAX (1u << 24) /* segments of the message's layout */
#define HAVE_CHUNK (64u << 10) /* the have bytes written back per port write */

/* Packets of a part the engine took, by index in the part, [lo, lo + cap)
 * (cap a power of two), until every target of the part has sent them. */
typedef struct bc_cache {
    uint8_t *data, *ok;
    uint32_t lo, cap;
} bc_cache;

/* The engine's own data for a processor, kept between adoptions. */
typedef struct bc_priv {
    tsim_port *pt;
    const coll_bc_state *st;
    uint8_t *have;              /* the message's have bytes (the rank's, from avail on) */
    size_t have_cap;
    uint32_t avail0[3], hi[3];  /* per part: the have bytes [avail0, hi) are the engine's to write back */
    struct iovec *segs;         /* the layout */
    size_t segs_cap;
    ml_cursor gcur[COLL_MAXT], scur[3], wcur[3];
    uint8_t win[3][WIN * PAY];  /* per part: packets [w0, w0 + wn) as the rank's memory has them */
    uint32_t w0[3], wn[3];
    bc_cache cache[3];
    int targets[3];             /* the part has targets (the engine must keep what it takes) */
} bc_priv;

static void bc_free(void *priv)
{
    bc_priv *a = priv;
    if (!a) return;
    free(a->have);
    free(a->segs);
    for (int r = 0; r < 3; r++) free(a->cache[r].data), free(a->cache[r].ok);
    free(a);
}

static const uint8_t *cache_get(const bc_cache *k, uint32_t i)
{
    if (i < k->lo || i - k->lo >= k->cap) return NULL;
    uint32_t s = i & (k->cap - 1);
    return k->ok[s] ? k->data + (size_t)s * PAY : NULL;
}

/* Keeps packet i (drops those below keep: every target has sent them). */
static int cache_put(bc_cache *k, uint32_t i, uint32_t keep, const uint8_t *data, size_t n)
{
    if (keep > k->lo) {
        for (uint32_t j = k->lo; j < keep && j - k->lo < k->cap; j++) k->ok[j & (k->cap - 1)] = 0;
        k->lo = keep;
    }
    if (i - k->lo >= k->cap) {
        uint32_t cap = k->cap ? k->cap : 64;
        while (i - k->lo >= cap) cap *= 2;
        uint8_t *d = malloc((size_t)cap * PAY), *ok = calloc(cap, 1);
        if (!d || !ok) {
            free(d), free(ok);
            return -1;
        }
        for (uint32_t j = k->lo; k->cap && j - k->lo < k->cap; j++) {
            uint32_t s = j & (k->cap - 1);
            if (!k->ok[s]) continue;
            memcpy(d + (size_t)(j & (cap - 1)) * PAY, k->data + (size_t)s * PAY, PAY);
            ok[j & (cap - 1)] = 1;
        }
        free(k->data), free(k->ok);
        k->data = d, k->ok = ok, k->cap = cap;
    }
    uint32_t s = i & (k->cap - 1);
    memcpy(k->data + (size_t)s * PAY, data, n);
    k->ok[s] = 1;
    return 0;
}

/* Reads packets [i, i + WIN) of part r (within the part) from the rank's
 * memory into its window: the buffer, or the layout's pieces. */
static int window(bc_priv *a, int r, uint32_t i)
{
    const coll_bc_state *st = a->st;
    tsim_port *pt = a->pt;
    uint32_t cnt = st->part_np[r] - i < WIN ? st->part_np[r] - i : WIN;
    size_t off = (st->have_base[r] + i) * PAY, n = (size_t)cnt * PAY;
    if (n > st->len - off) n = st->len - off;
    if (!st->niov) {
        if (pt->ops->read(pt, a->win[r], st->buf + off, n,
                          "hand-off: a broadcast's buffer the engine cannot read") != 0)
            return -1;
    } else {
        struct iovec loc[IOV_BATCH], rem[IOV_BATCH];
        int c = 0;
        size_t total = 0;
        uint64_t addr;
        for (size_t got = 0, k; got < n; got += k) {
            k = ml_layout_piece(a->segs, st->niov, &a->wcur[r], off + got, n - got, &addr);
            if (!k) return -1; /* cannot happen: the list's total was checked */
            loc[c] = (struct iovec){a->win[r] + got, k};
            rem[c] = (struct iovec){(void *)(uintptr_t)addr, k};
            total += k;
            if (++c == IOV_BATCH || got + k == n) {
                if (pt->ops->readv(pt, loc, rem, c, total,
                                   "hand-off: a broadcast's layout the engine cannot read") != 0)
                    return -1;
                c = 0, total = 0;
            }
        }
    }
    a->w0[r] = i;
    a->wn[r] = cnt;
    return 0;
}

static const uint8_t *eng_fetch(coll_bc_loop *L, coll_target *t, uint32_t w, size_t off, size_t n,
                                uint8_t *tmp, unsigned *segs)
{
    (void)tmp;
    bc_priv *a = L->ctx;
    const coll_bc_state *st = a->st;
    int r = t->route;
    uint32_t i = w - (uint32_t)st->have_base[r];
    if (st->niov) /* what the rank's gather for this target counts */
        *segs = ml_layout_segs(a->segs, st->niov, &a->gcur[t - L->t], off, n);
    const uint8_t *p = cache_get(&a->cache[r], i);
    if (p) return p;
    if ((!a->wn[r] || i < a->w0[r] || i >= a->w0[r] + a->wn[r]) && window(a, r, i) != 0) return NULL;
    return a->win[r] + (size_t)(i - a->w0[r]) * PAY;
}

static int eng_place(coll_bc_loop *L, int r, uint32_t w, size_t off, const uint8_t *data, size_t n,
                     unsigned *segs)
{
    bc_priv *a = L->ctx;
    const coll_bc_state *st = a->st;
    tsim_port *pt = a->pt;
    if (st->niov) { /* scattered into the layout: each piece its own write */
        uint64_t addr;
        unsigned k_segs = 0;
        for (size_t got = 0, k; got < n; got += k, k_segs++) {
            k = ml_layout_piece(a->segs, st->niov, &a->scur[r], off + got, n - got, &addr);
            if (!k || pt->ops->write(pt, addr, data + got, k) != 0) return -1;
        }
        *segs = k_segs;
    } else if (pt->ops->write(pt, st->buf + off, data, n) != 0) {
        return -1;
    }
    uint32_t i = w - (uint32_t)st->have_base[r];
    if (a->targets[r]) { /* forwarded from here: the rank's memory has it only after the wake */
        uint32_t keep = UINT32_MAX;
        for (int j = 0; j < L->nt; j++)
            if (L->t[j].route == r && L->t[j].cur < keep) keep = L->t[j].cur;
        if (cache_put(&a->cache[r], i, keep, data, n) != 0) return -1;
    }
    if (i + 1 > a->hi[r]) a->hi[r] = i + 1;
    return 0;
}

static const coll_bc_io eng_io = {eng_fetch, eng_place};

static void view(coll_bc_loop *L, coll_bc_state *st, bc_priv *a, tsim_port *pt)
{
    a->pt = pt;
    a->st = st;
    *L = (coll_bc_loop){st->t, (int)st->nt, (int)st->nroutes, st->part_np, st->avail, st->have_base, a->have,
                        &st->got, st->need, st->len, st->seq, st->gid, st->niov != 0, &st->pkts_sent,
                        &st->pkts_recv, &eng_io, a};
}

/* The layout's segment list (its total checked against the message). */
static int read_list(tsim_port *pt, bc_priv *a, const coll_bc_state *st)
{
    if (st->niov > LAYOUT_MAX || !st->iov) return -1;
    if (st->niov > a->segs_cap) {
        struct iovec *v = realloc(a->segs, st->niov * sizeof *v);
        if (!v) return -1;
        a->segs = v;
        a->segs_cap = st->niov;
    }
    if (pt->ops->read(pt, a->segs, st->iov, st->niov * sizeof *a->segs,
                      "hand-off: a broadcast's layout the engine cannot read") != 0)
        return -1;
    uint64_t sum = 0;
    for (uint64_t k = 0; k < st->niov; k++) sum += a->segs[k].iov_len;
    return sum == st->len ? 0 : -1;
}

/* Takes a state coll_run could be in, from a rank blocked waiting for
 * every reception FIFO (ml_handoff_block): parts that make up the
 * message, prefixes and counts in range, targets the loop can serve (other
 * processors, FIFOs of the torus or the scratchpad to the node mate, a
 * route of the message, cursors within what is held); then the have bytes
 * it may still change. Anything else is refused (the rank then runs its
 * loop itself). */
static int bc_adopt(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start)
{
    coll_bc_state *st = state;
    const int nprocs = pt->g->nnodes * TSIM_CPUS;
    if (start || (*wait & TSIM_WAKE_REC_ALL) != TSIM_WAKE_REC_ALL || st->nroutes < 1 || st->nroutes > 3 || st->nt > COLL_MAXT || st->len == 0 || !st->have ||
        (!st->niov && !st->buf))
        return 0;
    uint64_t np = (st->len + PAY - 1) / PAY, base = 0;
    if (np >= COLL_MAXPK || st->got > st->need || st->need > np) return 0;
    for (uint32_t r = 0; r < 3; r++) {
        uint32_t pn = r < st->nroutes ? st->part_np[r] : 0;
        if (st->part_np[r] != pn || st->have_base[r] != (r < st->nroutes ? base : st->have_base[r]) ||
            st->avail[r] > pn)
            return 0;
        base += pn;
    }
    if (base != np) return 0;
    int targets[3] = {0, 0, 0};
    for (uint32_t i = 0; i < st->nt; i++) {
        const coll_target *t = &st->t[i];
        if (t->proc < 0 || t->proc >= nprocs || t->proc == pt->proc || t->route < 0 ||
            t->route >= (int)st->nroutes || (t->flags & ~(unsigned)TSIM_F_DEPOSIT) ||
            t->cur > st->avail[t->route] || t->charged > t->cur + 1)
            return 0;
        if (t->fifo == TSIM_INJ_SP) {
            if (t->proc != (pt->proc ^ 1) || pt->g->cpus != 2) return 0;
        } else if (t->fifo < 0 || t->fifo >= 3 || t->proc / TSIM_CPUS == pt->proc / TSIM_CPUS) {
            return 0;
        }
        targets[t->route] = 1;
    }
    if (!*priv && !(*priv = calloc(1, sizeof(bc_priv)))) return 0;
    bc_priv *a = *priv;
    if (st->niov && read_list(pt, a, st) != 0) return 0;
    if (np > a->have_cap) {
        uint8_t *h = realloc(a->have, np);
        if (!h) return 0;
        a->have = h;
        a->have_cap = np;
    }
    for (uint32_t r = 0; r < st->nroutes; r++) {
        uint8_t *h = a->have + st->have_base[r];
        uint32_t av = st->avail[r], pn = st->part_np[r];
        memset(h, 1, av);
        if (av < pn && pt->ops->read(pt, h + av, st->have + st->have_base[r] + av, pn - av,
                                     "hand-off: a broadcast's have bitmap the engine cannot read") != 0)
            return 0;
        a->avail0[r] = a->hi[r] = av;
        a->targets[r] = targets[r];
        a->wn[r] = 0; /* the rank may have received into the buffer since: read afresh */
        a->cache[r].lo = av;
        if (a->cache[r].cap) memset(a->cache[r].ok, 0, a->cache[r].cap);
        a->scur[r] = a->wcur[r] = (ml_cursor){0, 0};
    }
    for (int i = 0; i < COLL_MAXT; i++) a->gcur[i] = (ml_cursor){0, 0};
    coll_loop_adopted(&st->loop);
    st->pkts_sent = st->pkts_recv = 0;
    return 1;
}

/* The have bytes the engine set, into the rank's memory (before the wake). */
static int write_have(tsim_port *pt, const coll_bc_state *st, const bc_priv *a)
{
    for (uint32_t r = 0; r < st->nroutes; r++)
        for (uint32_t i = a->avail0[r]; i < a->hi[r];) {
            uint32_t k = a->hi[r] - i < HAVE_CHUNK ? a->hi[r] - i : HAVE_CHUNK;
            size_t at = st->have_base[r] + i;
            if (pt->ops->write(pt, st->have + at, a->have + at, k) != 0) return -1;
            i += k;
        }
    return 0;
}

static int bc_step(tsim_port *pt, void *state, void *priv, uint32_t *wait)
{
    coll_bc_state *st = state;
    bc_priv *a = priv;
    coll_bc_loop L;
    view(&L, st, a, pt);
    int rc = coll_loop_step(pt, &st->loop, &coll_bc_ops, &L, wait);
    if (rc == TSIM_RUN_BACK && write_have(pt, st, a) != 0) return TSIM_RUN_FAIL;
    return rc;
}

const tsim_prog coll_bcast_prog = {
    .name = "deposit-bit broadcast",
    .id = COLL_PROG_BCAST,
    .state_size = sizeof(coll_bc_state),
    .adopt = bc_adopt,
    .step = bc_step,
    .free = bc_free,
};
