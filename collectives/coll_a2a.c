/* Packet-scheduled alltoall(v) (docs/collectives.md).
 *
 * Every rank injects its own packets, adaptively routed, one packet per
 * destination in turn: round i sends packet i of every destination's block,
 * destinations in a per-source order: a random permutation per source
 * (default; seeded by rank and sequence number, so runs are reproducible),
 * staggered (me+1, me+2, ...: at any moment the sources address a
 * permutation of the ranks) or rank order. Each block is read sequentially. The software
 * header carries the packet's index inside the block; the receiver finds the
 * source from the packet's metadata and places the data by offset, so the
 * reordering of adaptive routing does not matter. */
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

#define PAY TSIM_PAYLOAD_MAX

void coll_charge_ddt(coll_ctx *c, uint64_t cycles)
{
    if (!cycles) return;
    pl_charge(c->pp, cycles);
    atomic_fetch_add_explicit(&c->pp->p->ddt_cycles, cycles, memory_order_relaxed);
}

static void a2a_take(coll_ctx *c, const tsim_slot *s)
{
    coll_sw sw = coll_sw_get(s);
    const coll_group *g = c->grp;
    int src = s->m.src < (uint32_t)c->map->nprocs ? g->rank_of[s->m.src] : -1;
    size_t off = (size_t)coll_sw_w(&sw) * PAY;
    if (src < 0 || src == g->me || off >= c->rblk[src].len) abort(); /* not this alltoall's */
    const coll_layout *b = &c->rblk[src];
    size_t n = b->len - off < PAY ? b->len - off : PAY;
    if (b->niov) /* scattered straight into the receive layout */
        coll_charge_ddt(c, (uint64_t)tsim_layout_copy(b->iov, b->niov, &c->rcur[src], off,
                                                       (void *)s->p.payload, n, 0) *
                               c->pp->seg->params.ddt_seg_cycles);
    else
        memcpy((uint8_t *)b->buf + off, s->p.payload, n);
    c->a2a_recv += n;
    c->st.pkts_recv++;
}

static int a2a_push(coll_ctx *c);

void coll_a2a_packet(ml_ctx *ml, const tsim_slot *s, void *arg)
{
    (void)ml;
    coll_ctx *c = arg;
    if (!coll_is_current(c, OP_A2A, s)) return;
    a2a_take(c, s);
    a2a_push(c); /* keep the injection FIFOs fed between receptions */
}

static uint32_t npk(size_t bytes) { return (uint32_t)((bytes + PAY - 1) / PAY); }

/* Sends packets in schedule order until every injection FIFO is full. */
static int a2a_push(coll_ctx *c)
{
    int moved = 0;
    const uint32_t m1 = (uint32_t)c->grp->n - 1;
    c->inj_wait = 0;
    while (c->a2a_left) {
        int d = c->order[c->pos];
        if (c->round >= npk(c->sblk[d].len)) {
            if (++c->pos == m1) c->pos = 0, c->round++;
            continue;
        }
        const coll_layout *b = &c->sblk[d];
        size_t off = (size_t)c->round * PAY;
        size_t n = b->len - off < PAY ? b->len - off : PAY;
        const uint8_t *data = (const uint8_t *)b->buf + off;
        uint8_t tmp[PAY];
        if (b->niov) { /* gathered from the send layout, charged once (before the first try) */
            unsigned segs = tsim_layout_copy(b->iov, b->niov, &c->scur[d], off, tmp, n, 1);
            if (!c->a2a_gathered) coll_charge_ddt(c, (uint64_t)segs * c->pp->seg->params.ddt_seg_cycles);
            c->a2a_gathered = 1;
            data = tmp;
        }
        coll_sw sw = coll_sw_make(COLL_T_A2A, c->round, c->cur, c->cur_gid);
        int ok = -1;
        for (int k = 0; k < 3 && ok != 0; k++) {
            int f = (int)((c->rr_fifo + (unsigned)k) % 3);
            if (c->inj_wait & TSIM_WAKE_INJ(f)) continue;
            if ((ok = coll_inject(c, f, c->grp->proc[d], TSIM_F_DYNAMIC, &sw, data, n)) == 0)
                c->rr_fifo = (unsigned)(f + 1) % 3;
        }
        if (ok != 0) break; /* all three full: wait for room */
        c->a2a_gathered = 0;
        c->a2a_left--;
        moved++;
        if (++c->pos == m1) c->pos = 0, c->round++;
    }
    return moved;
}

static int a2a_done(coll_ctx *c) { return c->a2a_left == 0 && c->a2a_recv == c->a2a_need; }

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int coll_a2a_wait(coll_ctx *c, const char *why, int *moved)
{
    tsim_handoff *h = ml_handoff_begin(c->ml);
    if (!h) return coll_block(c, why);
    coll_a2a_state *st = (coll_a2a_state *)(void *)h->state;
    memset(st, 0, sizeof *st);
    st->peers = (uint64_t)(uintptr_t)c->peers;
    st->n = (uint32_t)c->grp->n;
    st->me = (uint32_t)c->grp->me;
    st->pos = c->pos;
    st->round = c->round;
    st->rr_fifo = c->rr_fifo;
    st->type = COLL_T_A2A;
    st->flags = (uint8_t)((c->a2a_lay ? COLL_A2A_F_LAYOUTS : 0) | (c->a2a_gathered ? COLL_A2A_F_GATHERED : 0));
    st->seq = c->cur;
    st->gid = c->cur_gid;
    st->left = c->a2a_left;
    st->need = c->a2a_need;
    st->recv = c->a2a_recv;
    char note[112];
    if (c->inj_wait) snprintf(note, sizeof note, "rank %d: %s (injection FIFO full)", c->rank, why);
    else ml_wait_note(c->ml, why, note, sizeof note);
    int rc = ml_handoff_block(c->ml, COLL_PROG_A2A, note, c->inj_wait);
    if (rc <= 0) return rc;
    c->pos = st->pos;
    c->round = st->round;
    c->rr_fifo = st->rr_fifo;
    c->a2a_gathered = (st->flags & COLL_A2A_F_GATHERED) != 0;
    c->a2a_left = st->left;
    c->a2a_recv = st->recv;
    c->st.pkts_sent += st->pkts_sent;
    c->st.pkts_recv += st->pkts_recv;
    *moved = (int)st->moved;
    ml_resume_apply(c->ml, &st->res);
    return !st->done && st->res.point == ML_RESUME_POLL ? ML_RESUME_POLL : ML_RESUME_NONE;
}

int coll_alltoallv(coll_ctx *c, const void *sbuf, const size_t *scounts, const size_t *sdispls,
                   void *rbuf, const size_t *rcounts, const size_t *rdispls)
{
    if (!c) return -1;
    return coll_alltoallv_in(c, &c->world, sbuf, scounts, sdispls, rbuf, rcounts, rdispls);
}

/* Room for n blocks each way in the context's arrays. */
static int a2a_room(coll_ctx *c, int n)
{
    if (n <= c->a2a_cap) return 0;
    coll_layout *sb = realloc(c->sblk, (size_t)n * sizeof *sb);
    if (sb) c->sblk = sb;
    coll_layout *rb = realloc(c->rblk, (size_t)n * sizeof *rb);
    if (rb) c->rblk = rb;
    tsim_lcur *sc = realloc(c->scur, (size_t)n * sizeof *sc);
    if (sc) c->scur = sc;
    tsim_lcur *rc = realloc(c->rcur, (size_t)n * sizeof *rc);
    if (rc) c->rcur = rc;
    if (!sb || !rb || !sc || !rc) return -1;
    c->a2a_cap = n;
    return 0;
}

static int block_ok(const coll_layout *b)
{
    if (b->len > UINT32_MAX || npk(b->len) >= COLL_MAXPK) return 0;
    if (!b->niov) return !b->len || b->buf;
    if (!b->iov) return 0;
    size_t sum = 0;
    for (size_t i = 0; i < b->niov; i++) sum += b->iov[i].iov_len;
    return sum == b->len;
}

/* The block a rank sends itself, piece by piece between the two layouts
 * (each piece ddt_seg_cycles); a plain memcpy, uncharged, between buffers. */
static void a2a_self(coll_ctx *c, const coll_layout *s, const coll_layout *r)
{
    size_t n = s->len < r->len ? s->len : r->len;
    if (!n) return;
    if (!s->niov && !r->niov) {
        memcpy(r->buf, s->buf, n);
        return;
    }
    struct iovec si = {s->buf, s->len}, ri = {r->buf, r->len};
    const struct iovec *sv = s->niov ? s->iov : &si, *rv = r->niov ? r->iov : &ri;
    size_t sn = s->niov ? s->niov : 1, rn = r->niov ? r->niov : 1, k;
    tsim_lcur scur = {0, 0}, rcur = {0, 0};
    uint64_t pieces = 0, sa, ra;
    for (size_t done = 0; done < n; done += k, pieces++) {
        k = tsim_layout_piece(sv, sn, &scur, done, n - done, &sa);
        k = tsim_layout_piece(rv, rn, &rcur, done, k, &ra);
        memcpy((void *)(uintptr_t)ra, (const void *)(uintptr_t)sa, k);
    }
    coll_charge_ddt(c, pieces * c->pp->seg->params.ddt_seg_cycles);
}

/* The alltoall of the blocks in c->sblk / c->rblk (g->n each). */
static int a2a_run(coll_ctx *c, coll_group *g)
{
    const int N = g->n, me = g->me;
    coll_begin(c, g, OP_A2A);
    c->op = OP_NONE; /* until the schedule is set up */
    c->st.alltoalls++;
    a2a_self(c, &c->sblk[me], &c->rblk[me]);
    if (N == 1) return 0;
    c->a2a_lay = 0;
    for (int i = 0; i < N; i++) {
        c->a2a_lay |= c->sblk[i].niov || c->rblk[i].niov;
        c->scur[i] = c->rcur[i] = (tsim_lcur){0, 0};
    }
    c->a2a_gathered = 0;
    free(c->order);
    free(c->peers);
    c->order = malloc((size_t)(N - 1) * sizeof *c->order);
    /* the engine's table: the peers, then (layouts) each peer's segment lists */
    c->peers = malloc((size_t)N * (sizeof *c->peers + (c->a2a_lay ? sizeof(coll_a2a_lay) : 0)));
    if (!c->order || !c->peers) return -1;
    for (int j = 0; j < N - 1; j++) {
        if (c->a2a_order == COLL_A2A_RANKORDER) c->order[j] = j < me ? j : j + 1;
        else c->order[j] = (me + 1 + j) % N;
    }
    if (c->a2a_order == COLL_A2A_RANDOM) {
        uint64_t st = 0x9e3779b97f4a7c15ull ^ ((uint64_t)me << 20) ^ c->cur;
        for (int j = N - 2; j > 0; j--) {
            int k = (int)(xs(&st) % (uint64_t)(j + 1));
            int t = c->order[j];
            c->order[j] = c->order[k];
            c->order[k] = t;
        }
    }
    coll_a2a_lay *lay = (coll_a2a_lay *)(c->peers + N);
    for (int i = 0; i < N; i++) {
        const coll_layout *sb = &c->sblk[i], *rb = &c->rblk[i];
        c->peers[i] = (coll_a2a_peer){sb->niov ? 0 : (uint64_t)(uintptr_t)sb->buf,
                                          rb->niov ? 0 : (uint64_t)(uintptr_t)rb->buf,
                                          (uint32_t)sb->len, (uint32_t)rb->len,
                                          (uint32_t)g->proc[i],
                                          (uint32_t)(i < N - 1 ? c->order[i] : 0)};
        if (c->a2a_lay)
            lay[i] = (coll_a2a_lay){(uint64_t)(uintptr_t)sb->iov, sb->niov,
                                        (uint64_t)(uintptr_t)rb->iov, rb->niov};
    }
    c->a2a_left = 0;
    c->a2a_need = 0;
    c->a2a_recv = 0;
    for (int i = 0; i < N; i++) {
        if (i == me) continue;
        c->a2a_left += npk(c->sblk[i].len);
        c->a2a_need += c->rblk[i].len;
    }
    c->round = 0;
    c->pos = 0;
    c->op = OP_A2A;
    coll_replay(c, COLL_T_A2A, a2a_take);
    int rc = coll_run(c, a2a_done, a2a_push, "coll_alltoall");
    c->op = OP_NONE;
    return rc;
}

int coll_alltoallv_in(coll_ctx *c, coll_group *g, const void *sbuf, const size_t *scounts,
                      const size_t *sdispls, void *rbuf, const size_t *rcounts,
                      const size_t *rdispls)
{
    if (!c || !g || !scounts || !sdispls || !rcounts || !rdispls || c->op != OP_NONE) return -1;
    const int N = g->n;
    for (int i = 0; i < N; i++)
        if (scounts[i] > UINT32_MAX || rcounts[i] > UINT32_MAX || npk(scounts[i]) >= COLL_MAXPK)
            return -1;
    if (a2a_room(c, N) != 0) return -1;
    for (int i = 0; i < N; i++) {
        c->sblk[i] = (coll_layout){(uint8_t *)(uintptr_t)sbuf + sdispls[i], NULL, 0, scounts[i]};
        c->rblk[i] = (coll_layout){(uint8_t *)rbuf + rdispls[i], NULL, 0, rcounts[i]};
    }
    return a2a_run(c, g);
}

int coll_alltoallw_in(coll_ctx *c, coll_group *g, const coll_layout *send, const coll_layout *recv)
{
    if (!c || !g || !send || !recv || c->op != OP_NONE) return -1;
    const int N = g->n;
    for (int i = 0; i < N; i++)
        if (!block_ok(&send[i]) || !block_ok(&recv[i])) return -1;
    if (a2a_room(c, N) != 0) return -1;
    memcpy(c->sblk, send, (size_t)N * sizeof *send);
    memcpy(c->rblk, recv, (size_t)N * sizeof *recv);
    return a2a_run(c, g);
}

int coll_alltoall(coll_ctx *c, const void *sbuf, void *rbuf, size_t per_pair)
{
    if (!c) return -1;
    return coll_alltoall_in(c, &c->world, sbuf, rbuf, per_pair);
}

int coll_alltoall_in(coll_ctx *c, coll_group *g, const void *sbuf, void *rbuf, size_t per_pair)
{
    if (!c || !g) return -1;
    int N = g->n;
    size_t *v = malloc(4 * (size_t)N * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < N; i++) {
        v[i] = v[2 * N + i] = per_pair;
        v[N + i] = v[3 * N + i] = (size_t)i * per_pair;
    }
    int rc = coll_alltoallv_in(c, g, sbuf, v, v + N, rbuf, v + 2 * N, v + 3 * N);
    free(v);
    return rc;
}
