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

static void a2a_take(coll_ctx *c, const tsim_slot *s)
{
    coll_sw sw = coll_sw_get(s);
    const coll_group *g = c->grp;
    int src = s->m.src < (uint32_t)c->map->nprocs ? g->rank_of[s->m.src] : -1;
    size_t off = (size_t)coll_sw_w(&sw) * PAY;
    if (src < 0 || src == g->me || off >= c->rcounts[src]) abort(); /* not this alltoall's */
    size_t n = c->rcounts[src] - off < PAY ? c->rcounts[src] - off : PAY;
    memcpy(c->rbuf + c->rdispls[src] + off, s->p.payload, n);
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
        if (c->round >= npk(c->scounts[d])) {
            if (++c->pos == m1) c->pos = 0, c->round++;
            continue;
        }
        size_t off = (size_t)c->round * PAY;
        size_t n = c->scounts[d] - off < PAY ? c->scounts[d] - off : PAY;
        coll_sw sw = coll_sw_make(COLL_T_A2A, c->round, c->cur, c->cur_gid);
        int ok = -1;
        for (int k = 0; k < 3 && ok != 0; k++) {
            int f = (int)((c->rr_fifo + (unsigned)k) % 3);
            if (c->inj_wait & TSIM_WAKE_INJ(f)) continue;
            if ((ok = coll_inject(c, f, c->grp->proc[d], TSIM_F_DYNAMIC, &sw,
                                  c->sbuf + c->sdispls[d] + off, n)) == 0)
                c->rr_fifo = (unsigned)(f + 1) % 3;
        }
        if (ok != 0) break; /* all three full: wait for room */
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
    tsim_prx *d = ml_prx_begin(c->ml);
    if (!d) return coll_block(c, why);
    tsim_prx_a2a *a = &d->a2a;
    *a = (tsim_prx_a2a){.peers = (uint64_t)(uintptr_t)c->peers,
                        .n = (uint32_t)c->grp->n,
                        .me = (uint32_t)c->grp->me,
                        .pos = c->pos,
                        .round = c->round,
                        .rr_fifo = c->rr_fifo,
                        .type = COLL_T_A2A,
                        .seq = c->cur,
                        .gid = c->cur_gid,
                        .left = c->a2a_left,
                        .need = c->a2a_need,
                        .recv = c->a2a_recv};
    d->prog = TSIM_PRX_PROG_A2A;
    char note[112];
    if (c->inj_wait) snprintf(note, sizeof note, "rank %d: %s (injection FIFO full)", c->rank, why);
    else ml_wait_note(c->ml, why, note, sizeof note);
    int rc = ml_prx_block(c->ml, note, c->inj_wait);
    if (rc <= TSIM_PRX_NONE) return rc;
    c->pos = a->pos;
    c->round = a->round;
    c->rr_fifo = a->rr_fifo;
    c->a2a_left = a->left;
    c->a2a_recv = a->recv;
    c->st.pkts_sent += a->pkts_sent;
    c->st.pkts_recv += a->pkts_recv;
    *moved = (int)a->moved;
    return rc;
}

int coll_alltoallv(coll_ctx *c, const void *sbuf, const size_t *scounts, const size_t *sdispls,
                   void *rbuf, const size_t *rcounts, const size_t *rdispls)
{
    if (!c) return -1;
    return coll_alltoallv_in(c, &c->world, sbuf, scounts, sdispls, rbuf, rcounts, rdispls);
}

int coll_alltoallv_in(coll_ctx *c, coll_group *g, const void *sbuf, const size_t *scounts,
                      const size_t *sdispls, void *rbuf, const size_t *rcounts,
                      const size_t *rdispls)
{
    if (!c || !g || !scounts || !sdispls || !rcounts || !rdispls || c->op != OP_NONE) return -1;
    const int N = g->n, me = g->me;
    for (int i = 0; i < N; i++)
        if (scounts[i] > UINT32_MAX || rcounts[i] > UINT32_MAX || npk(scounts[i]) >= COLL_MAXPK)
            return -1;
    coll_begin(c, g, OP_A2A);
    c->op = OP_NONE; /* until the schedule is set up */
    c->st.alltoalls++;
    size_t self = scounts[me] < rcounts[me] ? scounts[me] : rcounts[me];
    if (self) memcpy((uint8_t *)rbuf + rdispls[me], (const uint8_t *)sbuf + sdispls[me], self);
    if (N == 1) return 0;
    free(c->order);
    free(c->peers);
    c->order = malloc((size_t)(N - 1) * sizeof *c->order);
    c->peers = malloc((size_t)N * sizeof *c->peers);
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
    for (int i = 0; i < N; i++)
        c->peers[i] = (tsim_prx_a2a_peer){(uint64_t)(uintptr_t)((const uint8_t *)sbuf + sdispls[i]),
                                          (uint64_t)(uintptr_t)((uint8_t *)rbuf + rdispls[i]),
                                          (uint32_t)scounts[i], (uint32_t)rcounts[i],
                                          (uint32_t)g->proc[i],
                                          (uint32_t)(i < N - 1 ? c->order[i] : 0)};
    c->sbuf = sbuf;
    c->rbuf = rbuf;
    c->scounts = scounts;
    c->sdispls = sdispls;
    c->rcounts = rcounts;
    c->rdispls = rdispls;
    c->a2a_left = 0;
    c->a2a_need = 0;
    c->a2a_recv = 0;
    for (int i = 0; i < N; i++) {
        if (i == me) continue;
        c->a2a_left += npk(scounts[i]);
        c->a2a_need += rcounts[i];
    }
    c->round = 0;
    c->pos = 0;
    c->op = OP_A2A;
    coll_replay(c, COLL_T_A2A, a2a_take);
    int rc = coll_run(c, a2a_done, a2a_push, "coll_alltoall");
    c->op = OP_NONE;
    return rc;
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
