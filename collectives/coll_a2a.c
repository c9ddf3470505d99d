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

static uint32_t npk(uint64_t bytes) { return (uint32_t)((bytes + PAY - 1) / PAY); }

/* ---- the loop, once for both drivers (coll_internal.h) ---------------- */

static void next_pos(coll_a2a_cur *u, uint32_t n)
{
    if (++u->pos == n - 1) u->pos = 0, u->round++;
}

/* Sends packets in schedule order until every injection FIFO is full: each
 * tries the FIFOs from the round-robin cursor on, skipping those this push
 * found full. A layout's packet is gathered before its first FIFO try,
 * charged once. */
static int a2a_push(tsim_port *pt, void *view, coll_push *k)
{
    coll_a2a_loop *L = view;
    coll_a2a_cur *u = L->cur;
    if (!k->run) *k = (coll_push){.run = 1};
    while (u->left) {
        uint32_t d = L->peer[u->pos].order;
        const coll_a2a_peer *q = &L->peer[d];
        if (u->round >= npk(q->scount)) {
            next_pos(u, L->n);
            continue;
        }
        uint64_t off = (uint64_t)u->round * PAY;
        size_t n = (size_t)(q->scount - off < PAY ? q->scount - off : PAY);
        if (L->layouts && !u->gathered) { /* the gather's charge, before the first try */
            unsigned segs = L->io->segs(L, d, off, n);
            tsim_port_charge_ddt(pt, (uint64_t)segs * pt->prm->ddt_seg_cycles);
            u->gathered = segs != 0;
        }
        tsim_hwhdr hw;
        tsim_header(pt->g, &hw, (int)q->proc, n, TSIM_F_DYNAMIC, q->proc % TSIM_CPUS);
        int sent = 0;
        for (unsigned i = 0; i < 3 && !sent; i++) {
            unsigned f = (u->rr_fifo + i) % 3;
            if (k->wait & TSIM_WAKE_INJ(f)) continue;
            /* the FIFOs are mostly full here: the port's own test first */
            int room = pt->ops->room(pt, (int)f, hw.chunks);
            if (room == TSIM_PORT_WAIT) return 1;
            if (!room) {
                k->wait |= TSIM_WAKE_INJ(f);
                continue;
            }
            uint8_t tmp[PAY];
            const uint8_t *data = L->io->fetch(L, d, off, n, tmp);
            if (!data) return -1;
            coll_sw sw = coll_sw_make(COLL_T_A2A, u->round, L->seq, L->gid);
            uint8_t swb[8];
            memcpy(swb, &sw, sizeof swb);
            pt->ops->inject(pt, (int)f, &hw, swb, data, n);
            u->rr_fifo = (f + 1) % 3;
            sent = 1;
        }
        if (!sent) break; /* all three full: wait for room */
        u->gathered = 0;
        u->left--;
        k->pushed++;
        (*L->pkts_sent)++;
        next_pos(u, L->n);
    }
    k->run = 0;
    return 0;
}

/* The packet at its offset in its source's block. */
static int a2a_take(void *view, const tsim_slot *s, unsigned *segs)
{
    coll_a2a_loop *L = view;
    coll_sw sw = coll_sw_get(s);
    int src = s->m.src < (uint32_t)L->nprocs ? L->rank_of[s->m.src] : -1;
    uint64_t off = (uint64_t)coll_sw_w(&sw) * PAY;
    if (sw.type != COLL_T_A2A || sw.seq != L->seq || sw.gid != L->gid || src < 0 ||
        (uint32_t)src == L->me || off >= L->peer[src].rcount)
        return 0;
    const coll_a2a_peer *q = &L->peer[src];
    size_t n = (size_t)(q->rcount - off < PAY ? q->rcount - off : PAY);
    *segs = 0;
    if (L->io->place(L, (uint32_t)src, off, s->p.payload, n, segs) != 0) return -1;
    L->cur->recv += n;
    (*L->pkts_recv)++;
    return 1;
}

static int a2a_done(const void *view)
{
    const coll_a2a_loop *L = view;
    return L->cur->left == 0 && L->cur->recv == L->cur->need;
}

const coll_loop_ops coll_a2a_ops = {a2a_push, a2a_take, a2a_done};

/* ---- the rank's driver: its own memory ---------------------------------- */

static unsigned rank_segs(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n)
{
    coll_ctx *c = L->ctx;
    const coll_layout *b = &c->sblk[d];
    return b->niov ? ml_layout_segs(b->iov, b->niov, &c->scur[d], off, n) : 0;
}

static const uint8_t *rank_fetch(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n, uint8_t *tmp)
{
    coll_ctx *c = L->ctx;
    const coll_layout *b = &c->sblk[d];
    if (!b->niov) return (const uint8_t *)b->buf + off;
    ml_layout_copy(b->iov, b->niov, &c->scur[d], (size_t)off, tmp, n, 1);
    return tmp;
}

static int rank_place(coll_a2a_loop *L, uint32_t s, uint64_t off, const uint8_t *data, size_t n,
                      unsigned *segs)
{
    coll_ctx *c = L->ctx;
    const coll_layout *b = &c->rblk[s];
    if (b->niov) /* scattered straight into the receive layout */
        *segs = ml_layout_copy(b->iov, b->niov, &c->rcur[s], (size_t)off, (void *)(uintptr_t)data, n, 0);
    else
        memcpy((uint8_t *)b->buf + off, data, n);
    return 0;
}

static const coll_a2a_io rank_io = {rank_segs, rank_fetch, rank_place};

static void rank_view(coll_ctx *c, coll_a2a_loop *L)
{
    *L = (coll_a2a_loop){c->peers, (uint32_t)c->grp->n, (uint32_t)c->grp->me, c->grp->rank_of,
                         c->map->nprocs, c->cur, c->cur_gid, c->a2a_lay, &c->a2a, &c->st.pkts_sent,
                         &c->st.pkts_recv, &rank_io, c};
}

static void rank_take(coll_ctx *c, const tsim_slot *s)
{
    coll_a2a_loop L;
    rank_view(c, &L);
    coll_loop_take(c, &coll_a2a_ops, &L, s);
}

void coll_a2a_packet(ml_ctx *ml, const tsim_slot *s, void *arg)
{
    (void)ml;
    coll_ctx *c = arg;
    if (!coll_is_current(c, OP_A2A, s)) return;
    coll_a2a_loop L;
    rank_view(c, &L);
    coll_loop_take(c, &coll_a2a_ops, &L, s);
    coll_loop_push(c, &coll_a2a_ops, &L); /* keep the injection FIFOs fed between receptions */
}

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The rank blocks: the engine runs the loop if it can (coll_a2a_prog). */
static int a2a_wait(coll_ctx *c, coll_loop_cur *k, const char *why)
{
    coll_a2a_state *st = coll_handoff_begin(c);
    if (!st) return coll_block(c, why);
    st->cur = c->a2a;
    st->peers = (uint64_t)(uintptr_t)c->peers;
    st->n = (uint32_t)c->grp->n;
    st->me = (uint32_t)c->grp->me;
    st->seq = c->cur;
    st->gid = c->cur_gid;
    st->flags = c->a2a_lay ? COLL_A2A_F_LAYOUTS : 0;
    int rc = coll_handoff_block(c, COLL_PROG_A2A, why);
    if (rc <= 0) return rc;
    c->a2a = st->cur;
    c->st.pkts_sent += st->pkts_sent;
    c->st.pkts_recv += st->pkts_recv;
    coll_loop_resume(c, k, &st->loop);
    return 0;
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
    ml_cursor *sc = realloc(c->scur, (size_t)n * sizeof *sc);
    if (sc) c->scur = sc;
    ml_cursor *rc = realloc(c->rcur, (size_t)n * sizeof *rc);
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
    ml_cursor scur = {0, 0}, rcur = {0, 0};
    uint64_t pieces = 0, sa, ra;
    for (size_t done = 0; done < n; done += k, pieces++) {
        k = ml_layout_piece(sv, sn, &scur, done, n - done, &sa);
        k = ml_layout_piece(rv, rn, &rcur, done, k, &ra);
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
        c->scur[i] = c->rcur[i] = (ml_cursor){0, 0};
    }
    free(c->peers);
    /* the peers, then (layouts) each peer's segment lists: what both drivers read */
    c->peers = malloc((size_t)N * (sizeof *c->peers + (c->a2a_lay ? sizeof(coll_a2a_lay) : 0)));
    if (!c->peers) return -1;
    coll_a2a_lay *lay = (coll_a2a_lay *)(c->peers + N);
    for (int i = 0; i < N; i++) {
        const coll_layout *sb = &c->sblk[i], *rb = &c->rblk[i];
        c->peers[i] = (coll_a2a_peer){sb->niov ? 0 : (uint64_t)(uintptr_t)sb->buf,
                                      rb->niov ? 0 : (uint64_t)(uintptr_t)rb->buf,
                                      (uint32_t)sb->len, (uint32_t)rb->len, (uint32_t)g->proc[i], 0};
        if (c->a2a_lay)
            lay[i] = (coll_a2a_lay){(uint64_t)(uintptr_t)sb->iov, sb->niov,
                                    (uint64_t)(uintptr_t)rb->iov, rb->niov};
    }
    /* the destination of schedule position j */
    for (int j = 0; j < N - 1; j++)
        c->peers[j].order = (uint32_t)(c->a2a_order == COLL_A2A_RANKORDER ? (j < me ? j : j + 1)
                                                                        : (me + 1 + j) % N);
    if (c->a2a_order == COLL_A2A_RANDOM) {
        uint64_t st = 0x9e3779b97f4a7c15ull ^ ((uint64_t)me << 20) ^ c->cur;
        for (int j = N - 2; j > 0; j--) {
            int k = (int)(xs(&st) % (uint64_t)(j + 1));
            uint32_t t = c->peers[j].order;
            c->peers[j].order = c->peers[k].order;
            c->peers[k].order = t;
        }
    }
    /* rr_fifo goes on from the last alltoall */
    c->a2a.pos = c->a2a.round = c->a2a.gathered = 0;
    c->a2a.left = c->a2a.need = c->a2a.recv = 0;
    for (int i = 0; i < N; i++) {
        if (i == me) continue;
        c->a2a.left += npk(c->sblk[i].len);
        c->a2a.need += c->rblk[i].len;
    }
    c->op = OP_A2A;
    coll_replay(c, COLL_T_A2A, rank_take);
    coll_a2a_loop L;
    rank_view(c, &L);
    int rc = coll_run(c, &coll_a2a_ops, &L, a2a_wait, "coll_alltoall");
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
