/* Routers and links: virtual cut-through, token flow control per VC,
 * dimension-order and minimal adaptive routing, the bubble rule, the deposit
 * bit and the VN scratchpad channel. Called only from the engine thread. */
#include <emmintrin.h> /* SSE2, x86-64's baseline: choose_output's largest score */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"

/* The steps of an arbitration, inlined into both callers (the general
 * loop and arrive's one-packet case) whatever the compiler's budget. */
#define ARB_INLINE inline __attribute__((always_inline))

uint32_t pkt_alloc(tsim_engine *e)
{
    if (e->freelist != NIL) {
        uint32_t pk = e->freelist;
        e->freelist = e->pool[pk].next;
        return pk;
    }
    if (e->npool == e->cappool) { /* aligned: a packet's hop fields in one line */
        uint32_t cap = e->cappool ? e->cappool * 2 : 1024;
        void *m;
        if (posix_memalign(&m, 64, cap * sizeof *e->pool)) abort();
        if (e->npool) memcpy(m, e->pool, e->npool * sizeof *e->pool);
        free(e->pool);
        e->pool = m;
        e->cappool = cap;
    }
    return e->npool++;
}

void pkt_free(tsim_engine *e, uint32_t pk)
{
    e->pool[pk].next = e->freelist;
    e->freelist = pk;
}

static void q_cache_head(tsim_engine *e, pq *q)
{
    const npkt *p = &e->pool[q->head];
    q->t_head = p->t_head;
    q->seq = p->seq;
    q->want = p->want;
    q->fail_gen = p->fail_gen;
    q->fail_free = p->fail_free;
}

static void q_push(tsim_engine *e, pq *q, uint32_t pk)
{
    e->pool[pk].next = NIL;
    if (q->head == NIL) {
        q->head = pk;
        q_cache_head(e, q);
    } else {
        e->pool[q->tail].next = pk;
    }
    q->tail = pk;
}

static uint32_t q_pop(tsim_engine *e, pq *q)
{
    uint32_t pk = q->head;
    q->head = e->pool[pk].next;
    if (q->head == NIL) q->tail = NIL;
    else q_cache_head(e, q);
    return pk;
}

/* Bit of a queue in its router's qmask: the input queues, then the
 * injection queues, in one word. */
#define QBIT_INJ (TSIM_NPORTS * TSIM_NVC)
_Static_assert(QBIT_INJ + TSIM_CPUS * TSIM_NINJ <= 64, "qmask: one bit per queue");

static inline pq *q_of_bit(router *r, unsigned b)
{
    return &r->qs[b];
}

/* A mover left queue q (bit b) empty or not. */
static inline void q_mark(router *r, const pq *q, unsigned b)
{
    if (q->head == NIL) r->qmask &= ~(1ull << b);
}

static inline void set_want(const tsim_engine *e, int node, npkt *p, int injected);
static inline void arrive(tsim_engine *e, int node, pq *q, unsigned qb, uint32_t pk, uint64_t t);

void net_inject(tsim_engine *e, int proc, int fifo, uint32_t pk, uint64_t t)
{
    npkt *p = &e->pool[pk];
    int node = proc / TSIM_CPUS, cpu = proc % TSIM_CPUS;
    p->seq = e->pkt_seq++;
    p->t_head = t;
    p->proc = proc;
    p->in_port = TSIM_NPORTS;
    p->vc = TSIM_VC_ESC;
    p->fifo = (uint8_t)fifo;
    p->dim = 3;
    p->hops = 0;
    p->chunks = p->s.p.hw.chunks;
    p->flags = p->s.p.hw.flags;
    p->hints = p->s.p.hw.hints;
    p->group = p->s.p.hw.group;
    p->dstn = tsim_node_of(&e->g, p->s.p.hw.dst[0], p->s.p.hw.dst[1], p->s.p.hw.dst[2]);
    int adaptive = (p->flags & TSIM_F_DYNAMIC) && !(p->flags & TSIM_F_DEPOSIT);
    p->rmask = adaptive ? (p->hints ? p->hints : 0xff) : 0;
    p->wmask = p->flags & TSIM_F_HP ? 0 : 0xff;
    set_want(e, node, p, 1);
    e->ep[proc].inj_used[fifo] += p->chunks;
    arrive(e, node, &e->rt[node].injq[cpu][fifo], QBIT_INJ + cpu * TSIM_NINJ + fifo, pk, t);
}

/* Frees the buffer space a packet held where it waited. */
static int held_chunks(const tsim_engine *e, int port, int vc, int c);

static ARB_INLINE void release_source(tsim_engine *e, int node, npkt *p, uint64_t t)
{
    int c = p->chunks;
    if (p->in_port == TSIM_NPORTS) {
        ev_push(e, t, EV_INJ_FREE, p->proc, p->fifo, (uint32_t)c);
    } else {
        c = held_chunks(e, p->in_port, p->vc, c);
        int up = e->rt[node].nbr[p->in_port ^ 1];
        router *u = &e->rt[up];
        uint64_t at = t + e->prm.token_latency;
        if (u->nret == TSIM_MAX_RET) { /* rare: fall back to an event */
            ev_push(e, at, EV_CREDIT, up, p->in_port << 4 | p->vc, (uint32_t)c);
            return;
        }
        u->ret[u->nret++] = (credit_ret){at, (uint16_t)(p->vc * TSIM_NPORTS + p->in_port), (uint16_t)c};
        u->ret_min = at < u->ret_min ? at : u->ret_min; /* UINT64_MAX while the list was empty */
        if ((u->waiting != 0) & ((u->armed <= e->now) | (at < u->armed))) {
            u->armed = at;
            ev_push(e, at, EV_LINK_FREE, up, 0, 0);
        }
    }
}

static int rec_fifo_for(const npkt *p)
{
    if (p->flags & TSIM_F_HP) return TSIM_REC_HP;
    return p->in_port == TSIM_NPORTS ? 0 : p->in_port;
}

/* Copies a packet into a reception FIFO of this node (delivery or deposit). */
static void to_reception(tsim_engine *e, int node, uint32_t pk, int copy, uint64_t t)
{
    npkt *p = &e->pool[pk];
    int g = p->group % TSIM_CPUS, f = rec_fifo_for(p);
    uint32_t d = pk;
    if (copy) {
        d = pkt_alloc(e);
        p = &e->pool[pk]; /* pool may have moved */
        e->pool[d] = *p;
    }
    e->rt[node].rec_used[g][f] += p->chunks;
    ev_push(e, t, EV_DELIVER, tsim_proc_index(node, g), f, d);
}

static int rec_room(const tsim_engine *e, int node, const npkt *p)
{
    int g = p->group % TSIM_CPUS, f = rec_fifo_for(p);
    return e->rt[node].rec_used[g][f] + p->chunks <= (int)e->prm.fifo_chunks;
}

/* Buffer space a packet of c chunks holds on (port, vc). On the escape and
 * high-priority VCs of a torus ring every packet holds a full packet's
 * slot, whatever its size: with chunk-exact holding, packets of mixed sizes
 * can fragment the ring's free space (4 chunks here, 4 there, no 8
 * anywhere) and every head then waits for more room than any buffer has —
 * a ring deadlock the bubble rule cannot see (64 ranks doing an MPI
 * alltoall hit it). In slots the bubble rule is the classic one and holds. */
static int held_chunks(const tsim_engine *e, int port, int vc, int c)
{
    if ((vc == TSIM_VC_ESC || vc == TSIM_VC_HP) && e->g.torus[port / 2]) return TSIM_MAX_CHUNKS;
    return c;
}

/* Credits a packet needs on (port, vc): the bubble rule on torus rings —
 * entering a ring on the escape (or high-priority) VC needs room for two
 * full packets, continuing in it room for one. */
static int need_chunks(const tsim_engine *e, const npkt *p, int port, int vc)
{
    int c = p->chunks, d = port / 2;
    if (vc == TSIM_VC_ESC || vc == TSIM_VC_HP) {
        /* selects: whether the ring is a torus's and whether the packet
         * enters it vary from hop to hop */
        int entering = (p->dim != d) | (p->vc != vc);
        int ring = TSIM_MAX_CHUNKS << entering;
        return e->g.torus[d] ? ring : c;
    }
    return c;
}

static int usable(const router *r, const tsim_engine *e, const npkt *p, int port, int vc, uint64_t t)
{
    return r->busy_until[port] <= t && r->credits[vc][port] >= need_chunks(e, p, port, vc);
}

/* The routing candidates of a packet queued at node, worked out once when
 * it arrives: its dimension-order port, the profitable ports adaptive
 * routing may take, and their union (or this node's FIFOs), so that
 * arbitration skips packets whose ports are all busy without evaluating
 * them and choose_output needs no second look at the routing table. One
 * look at the table and the packet's masks (net_inject), no branch on its
 * kind: inlined in net_head, about one per hop. injected: the packet is
 * new, in an injection FIFO (else it came in on a link). */
static inline __attribute__((always_inline)) void set_want(const tsim_engine *e, int node, npkt *p,
                                                            int injected)
{
    p->fail_gen = UINT32_MAX;
    if (injected && p->fifo == TSIM_INJ_SP) {
        p->det = -1;
        p->prof = 0;
        p->want = WANT_SP;
        return;
    }
    if (p->dstn == node) {
        p->det = -1;
        p->prof = 0;
        p->want = injected ? WANT_LOOP : WANT_LOCAL;
        return;
    }
    /* det in the low 3 bits, the profitable ports above (as e->route) */
    unsigned rt;
    if (e->route) {
        rt = e->route[(size_t)node * (size_t)e->g.nnodes + (size_t)p->dstn];
    } else {
        int d = tsim_route_det(&e->g, node, p->s.p.hw.dst);
        rt = (unsigned)(d < 0 ? 7 : d) | tsim_route_profitable(&e->g, node, p->s.p.hw.dst) << 3;
    }
    unsigned det = rt & 7, prof = (rt >> 3) & p->rmask;
    p->det = (int8_t)det;
    p->prof = (uint8_t)prof;
    p->want = (uint16_t)(1u << det | (prof & p->wmask));
}

/* Four int32 lanes (SSE2's width; GCC's vector extensions). */
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4i v4i_load(const int32_t *a)
{
    v4i v;
    memcpy(&v, a, sizeof v);
    return v;
}

/* Picks the output of packet p at node: returns port and sets *vc, or -1. */
static ARB_INLINE int choose_output(tsim_engine *e, int node, const npkt *p, uint64_t t,
                                     unsigned free, int *vc)
{
    const router *r = &e->rt[node];
    int det = p->det;
    if (p->flags & TSIM_F_HP) {
        *vc = TSIM_VC_HP;
        return usable(r, e, p, det, TSIM_VC_HP, t) ? det : -1;
    }
    if ((p->flags & TSIM_F_DYNAMIC) && !(p->flags & TSIM_F_DEPOSIT)) {
        /* The most free chunks among the free profitable ports' dynamic
         * VCs that hold the packet, the first (port, vc) on a tie. Without
         * a branch: which ports are profitable, free and roomy varies from
         * hop to hop (half the mispredicted branches of a hop were here).
         * All twelve (port, dynamic VC) candidates at once, in three
         * vectors of four (credits[DYN0] and [DYN1] lie end to end):
         * about 35 instructions instead of 180 for a scalar loop. Each is
         * scored (free + 1) above its inverted index 15 - 2 * port - (vc -
         * DYN0), 0 unless its port is free and profitable (free is
         * free_now(r, t): try_move), and the largest score wins: the best
         * port's better VC, the first on a tie. A candidate that cannot
         * hold the packet scores below (need + 1) << 4 and one that can at
         * or above it (a dynamic VC's credits never go below 0: it is
         * taken only with room), so the need test is one comparison of the
         * largest score. The largest is taken as floats (SSE2 has no
         * integer maximum of 32-bit lanes, maxps is one instruction): with
         * bit 30 set, a score below 2^29 (TSIM_MAX_VC_CHUNKS) is a normal
         * positive float (exponent 128..254) whose bits order as the
         * integer does, and 0 is +0.0, below all of them. */
        _Static_assert(TSIM_VC_DYN1 == TSIM_VC_DYN0 + 1 && TSIM_NPORTS == 6,
                       "choose_output: twelve candidates, an index in 4 bits");
        _Static_assert((((int64_t)TSIM_MAX_VC_CHUNKS + 1) << 4 | 15) < 1 << 29,
                       "choose_output: a biased score is never an infinity or a NaN");
        enum { BIAS = 1 << 30 };
        static const v4i bit[3] = {{1, 2, 4, 8}, {16, 32, 1, 2}, {4, 8, 16, 32}};
        static const v4i inv[3] = {{BIAS | 15, BIAS | 13, BIAS | 11, BIAS | 9},
                                   {BIAS | 7, BIAS | 5, BIAS | 14, BIAS | 12},
                                   {BIAS | 10, BIAS | 8, BIAS | 6, BIAS | 4}};
        const v4i one = {1, 1, 1, 1};
        const int32_t *cr = &r->credit_flat[TSIM_VC_DYN0 * TSIM_NPORTS];
        v4i ok = (v4i){0, 0, 0, 0} + (int32_t)(p->prof & free);
        __m128 s[3];
        for (int k = 0; k < 3; k++)
            s[k] = _mm_castsi128_ps(
                (__m128i)(((v4i_load(cr + 4 * k) + one) << 4 | inv[k]) & ((ok & bit[k]) == bit[k])));
        __m128 m = _mm_max_ps(_mm_max_ps(s[0], s[1]), s[2]);
        m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
        m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
        uint32_t top = (uint32_t)_mm_cvtsi128_si32(_mm_castps_si128(m));
        if (top >= (BIAS | (uint32_t)(p->chunks + 1) << 4)) {
            unsigned i = 15 - (top & 15);
            *vc = TSIM_VC_DYN0 + (int)(i & 1);
            return (int)(i / 2);
        }
    }
    *vc = TSIM_VC_ESC;
    return usable(r, e, p, det, TSIM_VC_ESC, t) ? det : -1;
}

static ARB_INLINE void send_on_link(tsim_engine *e, int node, uint32_t pk, int port, int vc, uint64_t t)
{
    router *r = &e->rt[node];
    npkt *p = &e->pool[pk];
    int c = p->chunks;
    uint64_t ser = tsim_ser_cycles(&e->prm, c);
    release_source(e, node, p, t + ser);
    r->busy_until[port] = t + ser;
    r->credits[vc][port] -= held_chunks(e, port, vc, c);
    r->link[port].packets++;
    r->link[port].bytes += (uint64_t)c * TSIM_CHUNK;
    r->link[port].busy_cycles += ser;
    p->vc = (uint8_t)vc;
    p->dim = (uint8_t)(port / 2);
    p->in_port = (uint8_t)port;
    p->hops++;
    e->hops++;
    ev_push(e, t + e->prm.hop_latency, EV_HEAD, r->nbr[port], port << 4 | vc, pk);
}

/* A mover leaves its queue (q: NULL for a packet that arrived at an empty
 * router and moves on at once, never queued). */
static inline void leave(tsim_engine *e, router *r, pq *q, unsigned qb)
{
    if (!q) return;
    q_pop(e, q);
    q_mark(r, q, qb);
    r->waiting--;
}

/* Tries to move packet pk (head of queue q at node, or q NULL: see leave)
 * one step. A mover takes what it leaves by: its bit in *free (free_now's
 * mask) is cleared and the router's fu lowered to when it frees, so the
 * mask stays free_now(r, t) without recomputing it. */
static ARB_INLINE int try_move(tsim_engine *e, int node, uint32_t pk, pq *q, unsigned qb, uint64_t t,
                             unsigned *free)
{
    router *r = &e->rt[node];
    npkt *p = &e->pool[pk];
    int c = p->chunks;

    if (p->in_port == TSIM_NPORTS && p->fifo == TSIM_INJ_SP) {
        int cpu = p->proc % TSIM_CPUS, other = cpu ^ 1;
        if (r->sp_busy[cpu] > t || r->rec_used[other][TSIM_REC_SP] + c > (int)e->prm.fifo_chunks)
            return 0;
        uint64_t dur = e->prm.sp_cycles_per_byte * (uint64_t)c * TSIM_CHUNK;
        leave(e, r, q, qb);
        r->sp_busy[cpu] = t + dur;
        if (dur) {
            if (r->sp_busy[other] > t) *free &= ~(unsigned)WANT_SP;
            if (t + dur < r->fu) r->fu = t + dur;
        }
        r->rec_used[other][TSIM_REC_SP] += c;
        ev_push(e, t + dur, EV_INJ_FREE, p->proc, p->fifo, (uint32_t)c);
        ev_push(e, t + e->prm.sp_latency + dur, EV_DELIVER, tsim_proc_index(node, other),
                TSIM_REC_SP, pk);
        return 1;
    }

    if (p->dstn == node) {
        /* a packet to its own node streams through the loopback path at link
         * speed, one at a time: that keeps order and bounds its bandwidth */
        int loop = p->in_port == TSIM_NPORTS;
        if (!rec_room(e, node, p) || (loop && r->loop_busy > t)) return 0;
        uint64_t at = p->t_head + tsim_ser_cycles(&e->prm, c);
        if (at < t) at = t;
        if (loop) {
            at = t + tsim_ser_cycles(&e->prm, c);
            r->loop_busy = at;
            if (at > t) {
                *free &= ~(unsigned)WANT_LOOP;
                if (at < r->fu) r->fu = at;
            }
        }
        leave(e, r, q, qb);
        release_source(e, node, p, at);
        to_reception(e, node, pk, 0, at);
        return 1;
    }
    int deposit = (p->flags & TSIM_F_DEPOSIT) && p->in_port != TSIM_NPORTS;
    if (deposit && !rec_room(e, node, p)) return 0;
    int vc, port = choose_output(e, node, p, t, *free, &vc);
    if (port < 0) return 0;
    leave(e, r, q, qb);
    if (deposit) {
        uint64_t at = p->t_head + tsim_ser_cycles(&e->prm, c);
        to_reception(e, node, pk, 1, at < t ? t : at);
    }
    send_on_link(e, node, pk, port, vc, t);
    if (r->busy_until[port] > t) {
        *free &= ~(1u << port);
        r->fu = r->busy_until[port] < r->fu ? r->busy_until[port] : r->fu;
    }
    return 1;
}

typedef struct cand {
    uint64_t t, seq;
    pq *q;
    unsigned bit; /* its bit in qmask */
} cand;

/* What of r is free at t (free_now's mask: the ports' bits, WANT_SP,
 * WANT_LOOP and WANT_LOCAL) and, in *fu, the earliest future time a busy
 * link, scratchpad channel or the loopback path frees (UINT64_MAX: none
 * busy). One pass, branch-free: on a saturated router the ports' states
 * are unpredictable. */
static ARB_INLINE unsigned free_now(const router *r, uint64_t t, uint64_t *fu)
{
    unsigned free = WANT_LOCAL;
    uint64_t m = UINT64_MAX;
#pragma GCC unroll 6 /* constant shifts, no loop counter: ~3 instructions a port fewer */
    for (int p = 0; p < TSIM_NPORTS; p++) {
        uint64_t b = r->busy_until[p], x = b > t ? b : UINT64_MAX;
        free |= (unsigned)(b <= t) << p;
        m = x < m ? x : m;
    }
    uint64_t s0 = r->sp_busy[0], s1 = r->sp_busy[1], l = r->loop_busy;
    free |= (unsigned)((s0 <= t) | (s1 <= t)) * WANT_SP;
    free |= (unsigned)(l <= t) * WANT_LOOP;
    uint64_t x0 = s0 > t ? s0 : UINT64_MAX, x1 = s1 > t ? s1 : UINT64_MAX, xl = l > t ? l : UINT64_MAX;
    m = x0 < m ? x0 : m;
    m = x1 < m ? x1 : m;
    *fu = xl < m ? xl : m;
    return free;
}

/* Could something this packet needs have appeared since it last failed?
 * Only returned tokens or reception room (gen) or a newly free port can
 * let it move; anything else it would fail again. */
static inline int want_new(const router *r, const pq *q, unsigned free)
{
    if (!(q->want & free)) return 0;
    return q->fail_gen != r->gen || (q->want & free & ~(unsigned)q->fail_free);
}

/* Serves waiting packets oldest first until nothing more can move. Packets
 * left waiting for a busy link are retried when the first busy link frees;
 * those waiting for credits or reception room are retried by the events
 * that return them. */
/* An arbitration's start: applies the credits whose time has come and
 * returns the free mask (free_now(r, t)). */
static ARB_INLINE unsigned arb_begin(router *r, uint64_t t)
{
    if (r->ret_min <= t) { /* credits whose time has come (none pending: UINT64_MAX) */
        /* Branch-free: which entries are due varies unpredictably. The
         * list is a set (sums and a minimum are taken of it), so the ones
         * left keep their order, compacted. */
        uint64_t m = UINT64_MAX;
        uint32_t n = r->nret, k = 0;
        for (uint32_t i = 0; i < n; i++) {
            credit_ret x = r->ret[i];
            uint32_t due = x.t <= t;
            r->credit_flat[x.cr] += x.chunks & -due;
            r->ret[k] = x;
            k += !due;
            m = !due && x.t < m ? x.t : m;
        }
        r->gen += n - k;
        r->nret = k;
        r->ret_min = m;
    }
    unsigned free = r->fmask;
    if (t >= r->fu) { /* something busy has freed since the mask was made */
        free = free_now(r, t, &r->fu);
    }
    return free;
}

/* An arbitration's end: keeps the free mask and, with packets left
 * waiting, makes sure a wake-up comes at the earliest of a busy resource
 * freeing and a credit returning (credits due by t were applied: every
 * pending one lies after t). */
static ARB_INLINE void arb_end(tsim_engine *e, router *r, int node, uint64_t t, unsigned free)
{
    r->fmask = free;
    if (r->waiting) {
        uint64_t w = r->ret_min < r->fu ? r->ret_min : r->fu;
        if ((w != UINT64_MAX) & ((r->armed <= t) | (w < r->armed))) { /* one branch, not three */
            r->armed = w;
            ev_push(e, w, EV_LINK_FREE, node, 0, 0);
        }
    }
}

static void net_arbitrate(tsim_engine *e, int node, uint64_t t)
{
    router *r = &e->rt[node];
    cand c[TSIM_NPORTS * TSIM_NVC + TSIM_CPUS * TSIM_NINJ];
    /* The first round looks at every queue. Within one call nothing frees
     * (ports, credits and reception room are only taken, gen stays), so a
     * head that failed fails again: later rounds need only the heads that
     * movers uncovered. */
    unsigned free = arb_begin(r, t);
    int n = 0;
    for (uint64_t m = r->qmask; m; m &= m - 1) {
        unsigned b = (unsigned)__builtin_ctzll(m);
        pq *q = q_of_bit(r, b);
        if (want_new(r, q, free)) c[n++] = (cand){q->t_head, q->seq, q, b};
    }
    while (n) {
        for (int i = 1; i < n; i++) { /* insertion sort: n is small */
            cand x = c[i];
            int j = i - 1;
            while (j >= 0 && (c[j].t > x.t || (c[j].t == x.t && c[j].seq > x.seq))) {
                c[j + 1] = c[j];
                j--;
            }
            c[j + 1] = x;
        }
        int moved = 0;
        for (int i = 0; i < n; i++) {
            if (try_move(e, node, c[i].q->head, c[i].q, c[i].bit, t, &free)) {
                c[moved] = c[i]; /* i >= moved: nothing still to try is overwritten */
                moved++;
            } else {
                c[i].q->fail_gen = r->gen;
                c[i].q->fail_free = (uint16_t)free;
            }
        }
        n = 0;
        for (int i = 0; i < moved; i++) {
            pq *q = c[i].q;
            if (q->head != NIL && want_new(r, q, free))
                c[n++] = (cand){q->t_head, q->seq, q, c[i].bit};
        }
    }
    arb_end(e, r, node, t, free);
}

/* Packet pk joins queue q (bit qb) of node at t, and the router
 * arbitrates. At an empty router the arbitration's one candidate is pk
 * itself (most hops below saturation): it is tried straight away, the
 * same test and the same move, and queued only if it stays. */
static ARB_INLINE void arrive(tsim_engine *e, int node, pq *q, unsigned qb, uint32_t pk, uint64_t t)
{
    router *r = &e->rt[node];
    if (r->waiting) {
        r->waiting++;
        q_push(e, q, pk);
        r->qmask |= 1ull << qb;
        net_arbitrate(e, node, t);
        return;
    }
    unsigned free = arb_begin(r, t);
    const npkt *p = &e->pool[pk];
    unsigned w = p->want & free; /* want_new's test, on the packet */
    int cand = (w != 0) & ((p->fail_gen != r->gen) | ((w & ~(unsigned)p->fail_free) != 0));
    if (cand && try_move(e, node, pk, NULL, 0, t, &free)) {
        r->fmask = free;
        return;
    }
    r->waiting++;
    q_push(e, q, pk);
    r->qmask |= 1ull << qb;
    if (cand) {
        q->fail_gen = r->gen;
        q->fail_free = (uint16_t)free;
    }
    arb_end(e, r, node, t, free);
}

void net_rec_free(tsim_engine *e, int proc, int fifo, int chunks, uint64_t t)
{
    router *r = &e->rt[proc / TSIM_CPUS];
    r->rec_used[proc % TSIM_CPUS][fifo] -= chunks;
    r->gen++;
    if (r->waiting) net_arbitrate(e, proc / TSIM_CPUS, t);
}

void net_head(tsim_engine *e, int node, int port_vc, uint32_t pk, uint64_t t)
{
    npkt *p = &e->pool[pk];
    p->t_head = t;
    set_want(e, node, p, 0);
    _Static_assert(TSIM_NVC == 4, "net_head: a queue's bit is port << 2 | vc");
    unsigned qb = (unsigned)(port_vc >> 4) << 2 | (unsigned)(port_vc & 15);
    arrive(e, node, q_of_bit(&e->rt[node], qb), qb, pk, t);
}

void net_link_free(tsim_engine *e, int node, uint64_t t)
{
    if (e->rt[node].armed == t) e->rt[node].armed = 0;
    net_arbitrate(e, node, t);
}

void net_event(tsim_engine *e, const ev *v)
{
    switch (v->type) {
    case EV_CREDIT:
        e->rt[v->a].credits[v->b & 15][v->b >> 4] += (int32_t)v->pkt;
        e->rt[v->a].gen++;
        if (e->rt[v->a].waiting) net_arbitrate(e, v->a, v->t);
        break;
    case EV_REC_FREE:
        net_rec_free(e, v->a, v->b, (int)v->pkt, v->t);
        break;
    default:
        abort();
    }
}
