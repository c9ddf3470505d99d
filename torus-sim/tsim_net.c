/* Routers and links: virtual cut-through, token flow control per VC,
 * dimension-order and minimal adaptive routing, the bubble rule, the deposit
 * bit and the VN scratchpad channel. Called only from the engine thread. */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"

uint32_t pkt_alloc(tsim_engine *e)
{
    if (e->freelist != NIL) {
        uint32_t pk = e->freelist;
        e->freelist = e->pool[pk].next;
        return pk;
    }
    if (e->npool == e->cappool) {
        e->cappool = e->cappool ? e->cappool * 2 : 1024;
        e->pool = realloc(e->pool, e->cappool * sizeof *e->pool);
        if (!e->pool) abort();
    }
    return e->npool++;
}

void pkt_free(tsim_engine *e, uint32_t pk)
{
    e->pool[pk].next = e->freelist;
    e->freelist = pk;
}

static void q_push(tsim_engine *e, pq *q, uint32_t pk)
{
    e->pool[pk].next = NIL;
    if (q->head == NIL) q->head = pk;
    else e->pool[q->tail].next = pk;
    q->tail = pk;
}

static uint32_t q_pop(tsim_engine *e, pq *q)
{
    uint32_t pk = q->head;
    q->head = e->pool[pk].next;
    if (q->head == NIL) q->tail = NIL;
    return pk;
}

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
    p->s.m.hops = 0;
    e->ep[proc].inj_used[fifo] += p->s.p.hw.chunks;
    e->rt[node].waiting++;
    q_push(e, &e->rt[node].injq[cpu][fifo], pk);
    net_arbitrate(e, node, t);
}

/* Frees the buffer space a packet held where it waited. */
static void release_source(tsim_engine *e, int node, npkt *p, uint64_t t)
{
    int c = p->s.p.hw.chunks;
    if (p->in_port == TSIM_NPORTS) {
        ev_push(e, t, EV_INJ_FREE, p->proc, p->fifo, (uint32_t)c);
    } else {
        int up = tsim_neighbor(&e->g, node, p->in_port ^ 1);
        ev_push(e, t + e->prm.token_latency, EV_CREDIT, up, p->in_port << 4 | p->vc, (uint32_t)c);
    }
}

static int rec_fifo_for(const npkt *p)
{
    if (p->s.p.hw.flags & TSIM_F_HP) return TSIM_REC_HP;
    return p->in_port == TSIM_NPORTS ? 0 : p->in_port;
}

/* Copies a packet into a reception FIFO of this node (delivery or deposit). */
static void to_reception(tsim_engine *e, int node, uint32_t pk, int copy, uint64_t t)
{
    npkt *p = &e->pool[pk];
    int g = p->s.p.hw.group % TSIM_CPUS, f = rec_fifo_for(p);
    uint32_t d = pk;
    if (copy) {
        d = pkt_alloc(e);
        p = &e->pool[pk]; /* pool may have moved */
        e->pool[d] = *p;
    }
    e->rt[node].rec_used[g][f] += p->s.p.hw.chunks;
    ev_push(e, t, EV_DELIVER, tsim_proc_index(node, g), f, d);
}

static int rec_room(const tsim_engine *e, int node, const npkt *p)
{
    int g = p->s.p.hw.group % TSIM_CPUS, f = rec_fifo_for(p);
    return e->rt[node].rec_used[g][f] + p->s.p.hw.chunks <= (int)e->prm.fifo_chunks;
}

/* Credits a packet needs on (port, vc): the bubble rule on torus rings keeps
 * a full packet of free space on the escape VC when entering a ring. */
static int need_chunks(const tsim_engine *e, const npkt *p, int port, int vc)
{
    int c = p->s.p.hw.chunks, d = port / 2;
    if (vc == TSIM_VC_ESC || vc == TSIM_VC_HP) {
        int entering = p->dim != d || p->vc != vc;
        if (e->g.torus[d] && entering) return c + TSIM_MAX_CHUNKS;
    }
    return c;
}

static int usable(const router *r, const tsim_engine *e, const npkt *p, int port, int vc, uint64_t t)
{
    return r->busy_until[port] <= t && r->credits[port][vc] >= need_chunks(e, p, port, vc);
}

/* Picks the output of packet p at node: returns port and sets *vc, or -1. */
static int choose_output(tsim_engine *e, int node, const npkt *p, uint64_t t, int *vc)
{
    const router *r = &e->rt[node];
    const tsim_hwhdr *hw = &p->s.p.hw;
    int det = tsim_route_det(&e->g, node, hw->dst);
    if (hw->flags & TSIM_F_HP) {
        *vc = TSIM_VC_HP;
        return usable(r, e, p, det, TSIM_VC_HP, t) ? det : -1;
    }
    if ((hw->flags & TSIM_F_DYNAMIC) && !(hw->flags & TSIM_F_DEPOSIT)) {
        unsigned prof = tsim_route_profitable(&e->g, node, hw->dst);
        if (hw->hints) prof &= hw->hints;
        int best = -1, bestvc = 0, bestfree = -1;
        for (int port = 0; port < TSIM_NPORTS; port++) {
            if (!(prof & (1u << port)) || r->busy_until[port] > t) continue;
            for (int v = TSIM_VC_DYN0; v <= TSIM_VC_DYN1; v++) {
                int fr = r->credits[port][v];
                if (fr >= hw->chunks && fr > bestfree) {
                    best = port;
                    bestvc = v;
                    bestfree = fr;
                }
            }
        }
        if (best >= 0) {
            *vc = bestvc;
            return best;
        }
    }
    *vc = TSIM_VC_ESC;
    return usable(r, e, p, det, TSIM_VC_ESC, t) ? det : -1;
}

static void send_on_link(tsim_engine *e, int node, uint32_t pk, int port, int vc, uint64_t t)
{
    router *r = &e->rt[node];
    npkt *p = &e->pool[pk];
    int c = p->s.p.hw.chunks;
    uint64_t ser = ser_cycles(&e->prm, c);
    release_source(e, node, p, t + ser);
    r->busy_until[port] = t + ser;
    r->credits[port][vc] -= c;
    r->link[port].packets++;
    r->link[port].bytes += (uint64_t)c * TSIM_CHUNK;
    r->link[port].busy_cycles += ser;
    p->vc = (uint8_t)vc;
    p->dim = (uint8_t)(port / 2);
    p->in_port = (uint8_t)port;
    p->s.m.hops++;
    e->hops++;
    ev_push(e, t + e->prm.hop_latency, EV_HEAD, tsim_neighbor(&e->g, node, port), port << 4 | vc, pk);
    ev_push(e, t + ser, EV_LINK_FREE, node, port, 0);
}

/* Tries to move packet pk (head of queue q at node) one step. */
static int try_move(tsim_engine *e, int node, pq *q, uint64_t t)
{
    router *r = &e->rt[node];
    uint32_t pk = q->head;
    npkt *p = &e->pool[pk];
    const tsim_hwhdr *hw = &p->s.p.hw;
    int c = hw->chunks;

    if (p->in_port == TSIM_NPORTS && p->fifo == TSIM_INJ_SP) {
        int cpu = p->proc % TSIM_CPUS, other = cpu ^ 1;
        if (r->sp_busy[cpu] > t || r->rec_used[other][TSIM_REC_SP] + c > (int)e->prm.fifo_chunks)
            return 0;
        uint64_t dur = e->prm.sp_cycles_per_byte * (uint64_t)c * TSIM_CHUNK;
        q_pop(e, q);
        r->waiting--;
        r->sp_busy[cpu] = t + dur;
        r->rec_used[other][TSIM_REC_SP] += c;
        ev_push(e, t + dur, EV_INJ_FREE, p->proc, p->fifo, (uint32_t)c);
        ev_push(e, t + e->prm.sp_latency + dur, EV_DELIVER, tsim_proc_index(node, other),
                TSIM_REC_SP, pk);
        return 1;
    }

    int dst = tsim_node_of(&e->g, hw->dst[0], hw->dst[1], hw->dst[2]);
    if (dst == node) {
        if (!rec_room(e, node, p)) return 0;
        uint64_t at = p->t_head + ser_cycles(&e->prm, c);
        if (at < t) at = t;
        q_pop(e, q);
        r->waiting--;
        release_source(e, node, p, at);
        to_reception(e, node, pk, 0, at);
        return 1;
    }
    int deposit = (hw->flags & TSIM_F_DEPOSIT) && p->in_port != TSIM_NPORTS;
    if (deposit && !rec_room(e, node, p)) return 0;
    int vc, port = choose_output(e, node, p, t, &vc);
    if (port < 0) return 0;
    q_pop(e, q);
    r->waiting--;
    if (deposit) {
        uint64_t at = p->t_head + ser_cycles(&e->prm, c);
        to_reception(e, node, pk, 1, at < t ? t : at);
    }
    send_on_link(e, node, pk, port, vc, t);
    return 1;
}

typedef struct cand {
    uint64_t t, seq;
    pq *q;
} cand;

/* Serves waiting packets oldest first until nothing more can move. */
void net_arbitrate(tsim_engine *e, int node, uint64_t t)
{
    router *r = &e->rt[node];
    cand c[TSIM_NPORTS * TSIM_NVC + TSIM_CPUS * TSIM_NINJ];
    while (r->waiting) {
        int n = 0;
        for (int port = 0; port < TSIM_NPORTS; port++)
            for (int v = 0; v < TSIM_NVC; v++)
                if (r->inq[port][v].head != NIL) c[n++] = (cand){0, 0, &r->inq[port][v]};
        for (int cpu = 0; cpu < TSIM_CPUS; cpu++)
            for (int f = 0; f < TSIM_NINJ; f++)
                if (r->injq[cpu][f].head != NIL) c[n++] = (cand){0, 0, &r->injq[cpu][f]};
        for (int i = 0; i < n; i++) {
            const npkt *p = &e->pool[c[i].q->head];
            c[i].t = p->t_head;
            c[i].seq = p->seq;
        }
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
        for (int i = 0; i < n; i++) moved |= try_move(e, node, c[i].q, t);
        if (!moved) break;
    }
}

void net_event(tsim_engine *e, const ev *v)
{
    switch (v->type) {
    case EV_HEAD: {
        router *r = &e->rt[v->a];
        npkt *p = &e->pool[v->pkt];
        p->t_head = v->t;
        r->waiting++;
        q_push(e, &r->inq[v->b >> 4][v->b & 15], v->pkt);
        net_arbitrate(e, v->a, v->t);
        break;
    }
    case EV_LINK_FREE:
        net_arbitrate(e, v->a, v->t);
        break;
    case EV_CREDIT:
        e->rt[v->a].credits[v->b >> 4][v->b & 15] += (int32_t)v->pkt;
        net_arbitrate(e, v->a, v->t);
        break;
    case EV_REC_FREE: {
        int node = v->a / TSIM_CPUS, cpu = v->a % TSIM_CPUS;
        e->rt[node].rec_used[cpu][v->b] -= (int32_t)v->pkt;
        net_arbitrate(e, node, v->t);
        break;
    }
    default:
        abort();
    }
}
