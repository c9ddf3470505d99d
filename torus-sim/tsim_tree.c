/* The collective network and the global interrupt network, beside the
 * torus in the same engine and the same event order.
 *
 * Collective network. Every router has an up path (its own injection
 * FIFOs and one input buffer per child, per virtual channel, towards the
 * parent) and a down path (one buffer per virtual channel, from the
 * parent, copied to the node's reception FIFO and to every child). On the
 * up path a router forwards a BCAST packet as soon as its link is free and
 * the parent's buffer has a slot; a COMBINE packet waits until its own
 * node (if it takes part) and every child whose subtree takes part have
 * one at the head of the channel, then the ALU combines them and the
 * result goes up. The root turns packets around into its down buffer.
 * Links are cut-through: a packet's head goes on as soon as it is in, its
 * tail follows at link speed (tsim_tree_ser cycles a packet), so a packet
 * crossing h hops arrives after h * tree_hop_latency + one serialization
 * (plus tree_alu_cycles at every router that combined). Buffers are
 * counted in packets with credits per virtual channel; a slot is free once
 * the packet's tail has left it (and token_latency later upstream). A full
 * reception FIFO holds the down path back, and with it, eventually, the
 * whole tree: nothing is dropped.
 *
 * Global interrupt. Every participating processor arms its wire
 * (gi_arm); once all have, the barrier fires everywhere at the latest
 * arming time plus tsim_gi_latency.
 *
 * Who takes part: the processors the ranks are mapped to (rank_proc, as
 * mpirun sets it before it makes the engine), or, on a segment without
 * ranks (in-process tests), those that are not ABSENT when the engine is
 * made; a node takes part if one of its processors does (a CO
 * coprocessor never does). Everything here is decided in event order, so it is as
 * reproducible as the torus. */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"
#include "tsim_tree.h"

#define TQ 16 /* a node's own queue: both processors' injection FIFOs */
#define UPK 3 /* credit kind: the buffer this node's up link feeds */

typedef struct tpkt {
    tsim_thdr h;
    uint8_t payload[TSIM_TREE_PAYLOAD];
    uint64_t t_inject; /* the latest injection it carries */
    uint64_t t;        /* head time where it is now */
    int32_t src;       /* injecting processor (combined: the first input's) */
    int32_t origin;    /* node it was injected at (combined: -1) */
    uint32_t hops, next;
} tpkt;

typedef struct tq {
    uint32_t id[TQ];
    uint32_t head, n;
} tq;

/* One virtual channel's down buffer: entries base .. base + n - 1, each
 * copied to the reception FIFO and to every child in order. */
typedef struct tdown {
    uint32_t pk[TSIM_TREE_SLOTS];
    uint64_t end[TSIM_TREE_SLOTS]; /* when its last copy's tail has left */
    uint32_t base, n;
    uint32_t rec_next, child_next[3];
} tdown;

typedef struct tnode {
    int parent, cidx, nchild, child[3];
    int part;       /* this node takes part */
    int subpart[3]; /* child k's subtree has a node that takes part */
    tq own[TSIM_TREE_VCS], in[TSIM_TREE_VCS][3];
    uint64_t up_busy, down_busy[3], rec_busy[TSIM_CPUS];
    uint64_t armed; /* time of the queued EV_TREE_EVAL, 0: none */
    int up_cred[TSIM_TREE_VCS];      /* free slots where the up link leads */
    int down_cred[3][TSIM_TREE_VCS]; /* free slots in child k's down buffer */
    int rec_used[TSIM_CPUS];         /* modelled reception occupancy, packets */
    tdown down[TSIM_TREE_VCS];
    tsim_link_stats up, dn; /* the link to the parent, each way */
} tnode;

typedef struct tree_state {
    tnode *n;
    tpkt *pool;
    uint32_t npool, cap, freelist;
    uint32_t *inj_seen, *inj_tail, *rec_seen, *rec_head; /* per processor */
    uint8_t *proc_part;
    uint64_t ser, gi_latency;
    /* the global interrupt */
    int gi_nparts, gi_armed;
    uint32_t *gi_seen, gi_fired;
    uint64_t gi_tmax;
    tsim_tree_stats st;
} tree_state;

static uint32_t tp_alloc(tree_state *ts)
{
    if (ts->freelist != NIL) {
        uint32_t pk = ts->freelist;
        ts->freelist = ts->pool[pk].next;
        return pk;
    }
    if (ts->npool == ts->cap) {
        ts->cap = ts->cap ? ts->cap * 2 : 64;
        ts->pool = realloc(ts->pool, ts->cap * sizeof *ts->pool);
        if (!ts->pool) abort();
    }
    return ts->npool++;
}

static void tp_free(tree_state *ts, uint32_t pk)
{
    ts->pool[pk].next = ts->freelist;
    ts->freelist = pk;
}

static uint32_t tp_copy(tree_state *ts, uint32_t pk)
{
    uint32_t c = tp_alloc(ts);
    ts->pool[c] = ts->pool[pk];
    return c;
}

static void tq_push(tq *q, uint32_t pk)
{
    q->id[(q->head + q->n++) % TQ] = pk;
}

static uint32_t tq_pop(tq *q)
{
    uint32_t pk = q->id[q->head];
    q->head = (q->head + 1) % TQ;
    q->n--;
    return pk;
}

/* ---- the ALU ---------------------------------------------------------- */
/* Operands are little-endian two's complement of width bytes, handled as
 * 32-bit words so that every width the hardware takes works the same way. */
static int cmp_words(const uint32_t *a, const uint32_t *b, int words, int sign)
{
    for (int i = words - 1; i >= 0; i--) {
        if (a[i] == b[i]) continue;
        if (i == words - 1 && sign) return (int32_t)a[i] < (int32_t)b[i] ? -1 : 1;
        return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

void tsim_tree_alu(uint8_t *acc, const uint8_t *in, int op, int width, int sign)
{
    int words = width / 4;
    for (int off = 0; off + width <= TSIM_TREE_PAYLOAD; off += width) {
        uint32_t a[4] = {0}, b[4] = {0};
        memcpy(a, acc + off, (size_t)width);
        memcpy(b, in + off, (size_t)width);
        switch (op) {
        case TSIM_TOP_ADD: {
            uint64_t carry = 0;
            for (int i = 0; i < words; i++) {
                uint64_t s = (uint64_t)a[i] + b[i] + carry;
                a[i] = (uint32_t)s;
                carry = s >> 32;
            }
            break;
        }
        case TSIM_TOP_MAX:
            if (cmp_words(b, a, words, sign) > 0) memcpy(a, b, sizeof a);
            break;
        case TSIM_TOP_MIN:
            if (cmp_words(b, a, words, sign) < 0) memcpy(a, b, sizeof a);
            break;
        case TSIM_TOP_AND:
            for (int i = 0; i < words; i++) a[i] &= b[i];
            break;
        case TSIM_TOP_OR:
            for (int i = 0; i < words; i++) a[i] |= b[i];
            break;
        case TSIM_TOP_XOR:
            for (int i = 0; i < words; i++) a[i] ^= b[i];
            break;
        default:
            break;
        }
        memcpy(acc + off, a, (size_t)width);
    }
}

/* ---- the routers ------------------------------------------------------ */
static void eval(tsim_engine *e, int nd, uint64_t t);

/* An input packet's tail has left it: its slot frees. */
static void input_done(tsim_engine *e, int nd, int vc, int input, int src, uint64_t t)
{
    tree_state *ts = e->tree;
    uint64_t tail = t + ts->ser;
    if (input == 0)
        ev_push(e, tail, EV_TREE_INJ_FREE, src, 0, 0);
    else
        ev_push(e, tail + e->prm.token_latency, EV_TREE_CREDIT, ts->n[nd].child[input - 1],
                vc << 2 | UPK, 0);
}

/* What the up path of channel vc could send now: an input (0 own, 1 + k
 * child k) whose head is a BCAST packet, or (4) a combine of every input
 * that takes part; the earliest head first, a broadcast before a combine
 * of the same time. -1 if nothing; *ready is the candidate's head time. */
static int up_candidate(const tree_state *ts, const tnode *n, int vc, uint64_t *ready)
{
    int best = -1;
    uint64_t bt = UINT64_MAX, ct = 0;
    int ok = 1, any = 0;
    for (int i = 0; i <= n->nchild; i++) {
        const tq *q = i == 0 ? &n->own[vc] : &n->in[vc][i - 1];
        int needed = i == 0 ? n->part : n->subpart[i - 1];
        const tpkt *p = q->n ? &ts->pool[q->id[q->head]] : NULL;
        if (p && p->h.cls == TSIM_TC_BCAST) {
            if (p->t < bt) bt = p->t, best = i;
        }
        if (!needed) continue;
        if (!p || p->h.cls != TSIM_TC_COMBINE) {
            ok = 0;
        } else {
            any = 1;
            if (p->t > ct) ct = p->t;
        }
    }
    if (ok && any && ct < bt) bt = ct, best = 4;
    *ready = bt;
    return best;
}

/* Sends candidate `which` of channel vc up (or, at the root, into its
 * down buffer). 0, or -1 after a violation. */
static int up_send(tsim_engine *e, int nd, int vc, int which, uint64_t t)
{
    tree_state *ts = e->tree;
    tnode *n = &ts->n[nd];
    uint32_t out = NIL;
    int combined = which == 4;
    if (!combined) {
        tq *q = which == 0 ? &n->own[vc] : &n->in[vc][which - 1];
        out = tq_pop(q);
        input_done(e, nd, vc, which, ts->pool[out].src, t);
    } else {
        int inputs = 0;
        for (int i = 0; i <= n->nchild; i++) {
            if (!(i == 0 ? n->part : n->subpart[i - 1])) continue;
            tq *q = i == 0 ? &n->own[vc] : &n->in[vc][i - 1];
            uint32_t pk = tq_pop(q);
            input_done(e, nd, vc, i, ts->pool[pk].src, t);
            inputs++;
            if (out == NIL) {
                out = pk;
                continue;
            }
            tpkt *a = &ts->pool[out], *b = &ts->pool[pk];
            if (memcmp(&a->h, &b->h, sizeof a->h) != 0) {
                eng_violation(e, b->src, "collective network: a combine packet of processor %d "
                              "(class %u op %u width %u sw %02x%02x%02x%02x) meets one of processor %d "
                              "(class %u op %u width %u sw %02x%02x%02x%02x) at node %d", b->src,
                              b->h.cls, b->h.op, b->h.width, b->h.sw[0], b->h.sw[1], b->h.sw[2],
                              b->h.sw[3], a->src, a->h.cls, a->h.op, a->h.width, a->h.sw[0],
                              a->h.sw[1], a->h.sw[2], a->h.sw[3], nd);
                return -1;
            }
            tsim_tree_alu(a->payload, b->payload, a->h.op, a->h.width, a->h.sign);
            if (b->t_inject > a->t_inject) a->t_inject = b->t_inject;
            if (b->hops > a->hops) a->hops = b->hops;
            a->origin = -1;
            tp_free(ts, pk);
        }
        combined = inputs > 1;
        if (combined) ts->st.combined++;
    }
    tpkt *p = &ts->pool[out];
    uint64_t alu = combined ? e->prm.tree_alu_cycles : 0;
    n->up_cred[vc]--;
    if (n->parent < 0) { /* the root turns it around */
        tdown *d = &n->down[vc];
        uint32_t s = d->base + d->n++;
        p->t = t + alu;
        d->pk[s % TSIM_TREE_SLOTS] = out;
        d->end[s % TSIM_TREE_SLOTS] = p->t;
        return 0;
    }
    n->up_busy = t + ts->ser;
    n->up.packets++;
    n->up.bytes += TSIM_TREE_PAYLOAD;
    n->up.busy_cycles += ts->ser;
    p->hops++;
    ev_push(e, t + e->prm.tree_hop_latency + alu, EV_TREE_UP, n->parent, vc << 2 | n->cidx, out);
    return 0;
}

/* Does node nd's reception FIFO get packet p? */
static int receives(const tnode *n, int nd, const tpkt *p)
{
    return n->part && (p->h.cls == TSIM_TC_COMBINE || p->origin != nd);
}

/* Moves channel vc's down buffer on: 1 if anything moved. */
static int down_step(tsim_engine *e, int nd, int vc, uint64_t t)
{
    tree_state *ts = e->tree;
    tnode *n = &ts->n[nd];
    tdown *d = &n->down[vc];
    uint32_t end = d->base + d->n;
    int moved = 0;
    if (d->rec_next != end) {
        unsigned sl = d->rec_next % TSIM_TREE_SLOTS;
        uint32_t pk = d->pk[sl];
        const tpkt *p = &ts->pool[pk];
        int cpu = p->h.group;
        if (!receives(n, nd, p)) {
            d->rec_next++;
            moved = 1;
        } else if (p->t <= t && n->rec_busy[cpu] <= t &&
                   n->rec_used[cpu] < (int)e->prm.tree_fifo_packets) {
            uint64_t at = t + ts->ser;
            n->rec_busy[cpu] = at;
            n->rec_used[cpu]++;
            if (at > d->end[sl]) d->end[sl] = at;
            ev_push(e, at, EV_TREE_DELIVER, tsim_proc_index(nd, cpu), 0, tp_copy(ts, pk));
            d->rec_next++;
            moved = 1;
        }
    }
    for (int k = 0; k < n->nchild; k++) {
        if (d->child_next[k] == end) continue;
        unsigned sl = d->child_next[k] % TSIM_TREE_SLOTS;
        uint32_t pk = d->pk[sl];
        if (!n->subpart[k]) {
            d->child_next[k]++;
            moved = 1;
        } else if (ts->pool[pk].t <= t && n->down_busy[k] <= t && n->down_cred[k][vc] > 0) {
            uint32_t c = tp_copy(ts, pk);
            ts->pool[c].hops++;
            n->down_busy[k] = t + ts->ser;
            n->down_cred[k][vc]--;
            tnode *ch = &ts->n[n->child[k]];
            ch->dn.packets++;
            ch->dn.bytes += TSIM_TREE_PAYLOAD;
            ch->dn.busy_cycles += ts->ser;
            if (t + ts->ser > d->end[sl]) d->end[sl] = t + ts->ser;
            ev_push(e, t + e->prm.tree_hop_latency, EV_TREE_DOWN, n->child[k], vc, c);
            d->child_next[k]++;
            moved = 1;
        }
    }
    while (d->n && d->rec_next != d->base) {
        int done = 1;
        for (int k = 0; k < n->nchild; k++)
            if (d->child_next[k] == d->base) done = 0;
        if (!done) break;
        unsigned sl = d->base % TSIM_TREE_SLOTS;
        uint64_t at = (d->end[sl] > t ? d->end[sl] : t) + e->prm.token_latency;
        tp_free(ts, d->pk[sl]);
        d->base++;
        d->n--;
        if (n->parent < 0) ev_push(e, at, EV_TREE_CREDIT, nd, vc << 2 | UPK, 0);
        else ev_push(e, at, EV_TREE_CREDIT, n->parent, vc << 2 | n->cidx, 0);
        moved = 1;
    }
    return moved;
}

static int pending(const tnode *n)
{
    for (int v = 0; v < TSIM_TREE_VCS; v++) {
        if (n->own[v].n || n->down[v].n) return 1;
        for (int k = 0; k < n->nchild; k++)
            if (n->in[v][k].n) return 1;
    }
    return 0;
}

/* Earliest future time something node nd waits for frees by itself. */
static uint64_t next_free(const tree_state *ts, const tnode *n, uint64_t t)
{
    uint64_t m = UINT64_MAX;
#define CONSIDER(x) do { if ((x) > t && (x) < m) m = (x); } while (0)
    CONSIDER(n->up_busy);
    for (int k = 0; k < n->nchild; k++) CONSIDER(n->down_busy[k]);
    for (int c = 0; c < TSIM_CPUS; c++) CONSIDER(n->rec_busy[c]);
    for (int v = 0; v < TSIM_TREE_VCS; v++)
        for (uint32_t i = 0; i < n->down[v].n; i++)
            CONSIDER(ts->pool[n->down[v].pk[(n->down[v].base + i) % TSIM_TREE_SLOTS]].t);
#undef CONSIDER
    return m;
}

static void eval(tsim_engine *e, int nd, uint64_t t)
{
    tree_state *ts = e->tree;
    tnode *n = &ts->n[nd];
    for (int moved = 1; moved;) {
        moved = 0;
        if (n->parent < 0 || n->up_busy <= t) {
            int best = -1, bvc = 0;
            uint64_t bt = UINT64_MAX;
            for (int v = 0; v < TSIM_TREE_VCS; v++) {
                uint64_t r;
                int w;
                if (n->up_cred[v] <= 0 || (w = up_candidate(ts, n, v, &r)) < 0) continue;
                if (r < bt) bt = r, best = w, bvc = v;
            }
            if (best >= 0) {
                if (up_send(e, nd, bvc, best, t) != 0) return;
                moved = 1;
            }
        }
        for (int v = 0; v < TSIM_TREE_VCS; v++) moved |= down_step(e, nd, v, t);
    }
    if (!pending(n)) return;
    uint64_t w = next_free(ts, n, t);
    if (w != UINT64_MAX && (n->armed <= t || w < n->armed)) {
        n->armed = w;
        ev_push(e, w, EV_TREE_EVAL, nd, 0, 0);
    }
}

/* ---- events ----------------------------------------------------------- */
void tree_event(tsim_engine *e, const ev *v)
{
    tree_state *ts = e->tree;
    uint64_t t = v->t;
    switch (v->type) {
    case EV_TREE_INJ: {
        tpkt *p = &ts->pool[v->pkt];
        int nd = v->a / TSIM_CPUS;
        p->t = t;
        tq_push(&ts->n[nd].own[p->h.vc], v->pkt);
        eval(e, nd, t);
        break;
    }
    case EV_TREE_UP:
        ts->pool[v->pkt].t = t;
        tq_push(&ts->n[v->a].in[v->b >> 2][v->b & 3], v->pkt);
        eval(e, v->a, t);
        break;
    case EV_TREE_DOWN: {
        tdown *d = &ts->n[v->a].down[v->b];
        uint32_t s = d->base + d->n++;
        ts->pool[v->pkt].t = t;
        d->pk[s % TSIM_TREE_SLOTS] = v->pkt;
        d->end[s % TSIM_TREE_SLOTS] = t;
        eval(e, v->a, t);
        break;
    }
    case EV_TREE_EVAL:
        if (ts->n[v->a].armed == t) ts->n[v->a].armed = 0;
        eval(e, v->a, t);
        break;
    case EV_TREE_CREDIT: {
        tnode *n = &ts->n[v->a];
        int k = v->b & 3, vc = v->b >> 2;
        if (k == UPK) n->up_cred[vc]++;
        else n->down_cred[k][vc]++;
        eval(e, v->a, t);
        break;
    }
    case EV_TREE_INJ_FREE: {
        tsim_proc *p = &e->seg->procs[v->a];
        ts->inj_tail[v->a]++;
        atomic_store_explicit(&p->tinj.tail, ts->inj_tail[v->a], memory_order_release);
        /* a loop the engine runs waits for what it says now (prx_tree_trigger) */
        if (atomic_load(&p->state) == TSIM_P_BLOCKED &&
            (prx_active(e, v->a) || (atomic_load(&p->wake_mask) & TSIM_WAKE_TREE_INJ)) &&
            !prx_tree_trigger(e, v->a, t, TSIM_WAKE_TREE_INJ))
            eng_wake(e, v->a, t);
        break;
    }
    case EV_TREE_DELIVER: {
        tsim_proc *p = &e->seg->procs[v->a];
        tpkt *k = &ts->pool[v->pkt];
        uint32_t h = ts->rec_head[v->a]++;
        tsim_tslot *s = &p->trec.slot[h % TSIM_TREE_SLOTS];
        memset(&s->m, 0, sizeof s->m);
        s->m.t_inject = k->t_inject;
        s->m.t_arrive = t;
        s->m.src = (uint32_t)k->src;
        s->m.hops = k->hops;
        s->h = k->h;
        memcpy(s->payload, k->payload, sizeof s->payload);
        atomic_store_explicit(&p->trec.head, h + 1, memory_order_release);
        tp_free(ts, v->pkt);
        ts->st.delivered++;
        if (atomic_load(&p->state) == TSIM_P_BLOCKED &&
            (prx_active(e, v->a) || (atomic_load(&p->wake_mask) & TSIM_WAKE_TREE_REC)) &&
            !prx_tree_trigger(e, v->a, t + 1, TSIM_WAKE_TREE_REC))
            eng_wake(e, v->a, t + 1); /* visible to a processor at vt > arrival */
        break;
    }
    case EV_TREE_REC_FREE: {
        int nd = v->a / TSIM_CPUS;
        ts->n[nd].rec_used[v->a % TSIM_CPUS]--;
        eval(e, nd, t);
        break;
    }
    case EV_GI_FIRE:
        ts->gi_fired++;
        ts->gi_armed = 0;
        ts->gi_tmax = 0;
        ts->st.barriers++;
        for (int i = 0; i < e->nprocs; i++) {
            if (!ts->proc_part[i]) continue;
            tsim_proc *p = &e->seg->procs[i];
            atomic_store(&p->gi_t_fire, t);
            atomic_store_explicit(&p->gi_fired, ts->gi_fired, memory_order_release);
            if (atomic_load(&p->state) == TSIM_P_BLOCKED && (atomic_load(&p->wake_mask) & TSIM_WAKE_GI))
                eng_wake(e, i, t + 1);
        }
        break;
    default:
        abort();
    }
}

/* ---- what processors wrote -------------------------------------------- */
/* The first rule of the collective network's headers h breaks (class, ALU
 * operation, operand width and sign, virtual channel, group), in words in
 * why: 1, or 0 when it breaks none. */
static int thdr_fault(const tsim_thdr *h, char *why, size_t n)
{
    if (h->cls != TSIM_TC_COMBINE && h->cls != TSIM_TC_BCAST)
        snprintf(why, n, "packet of class %u", h->cls);
    else if (h->cls == TSIM_TC_COMBINE && (h->op == TSIM_TOP_NONE || h->op >= TSIM_NTOP))
        snprintf(why, n, "combine packet with ALU operation %u", h->op);
    else if (h->cls == TSIM_TC_BCAST && h->op != TSIM_TOP_NONE)
        snprintf(why, n, "broadcast packet with ALU operation %u", h->op);
    else if ((h->width != 4 && h->width != 8 && h->width != 16) || h->sign > 1)
        snprintf(why, n, "packet with operand width %u, sign %u", h->width, h->sign);
    else if (h->vc >= TSIM_TREE_VCS || h->group >= TSIM_CPUS || h->resv[0] || h->resv[1])
        snprintf(why, n, "packet for virtual channel %u, reception group %u", h->vc, h->group);
    else
        return 0;
    return 1;
}

int tsim_thdr_ok(const tsim_thdr *h)
{
    char why[96];
    return !thdr_fault(h, why, sizeof why);
}

/* A tree packet the hardware could carry, written no earlier than the time
 * already simulated, by a processor of a node in the tree's partition.
 * 0, or -1 after eng_violation(). */
static int tpkt_ok(tsim_engine *e, int proc, uint32_t seq, const tsim_tslot *s)
{
    unsigned slot = seq % TSIM_TREE_SLOTS;
    char why[96];
    if (!e->tree->n[proc / TSIM_CPUS].part)
        eng_violation(e, proc, "tree injection FIFO: packet at slot %u from a node outside the "
                      "collective network's partition", slot);
    else if (thdr_fault(&s->h, why, sizeof why))
        eng_violation(e, proc, "tree injection FIFO: %s at slot %u", why, slot);
    else if (s->m.t_inject < e->published)
        eng_violation(e, proc, "tree injection FIFO: packet injected at %llu cycles, before the %llu "
                      "already simulated, at slot %u", (unsigned long long)s->m.t_inject,
                      (unsigned long long)e->published, slot);
    else
        return 0;
    return -1;
}

/* The packet processor proc wrote into slot seq of its tree injection
 * FIFO enters its node's router at t. */
static void tree_take(tsim_engine *e, int proc, uint32_t seq, const tsim_thdr *h, const uint8_t *payload,
                      uint64_t t)
{
    tree_state *ts = e->tree;
    uint32_t pk = tp_alloc(ts);
    tpkt *k = &ts->pool[pk];
    k->h = *h;
    memcpy(k->payload, payload, sizeof k->payload);
    k->t_inject = k->t = t;
    k->src = proc;
    k->origin = proc / TSIM_CPUS;
    k->hops = 0;
    ts->st.injected++;
    ev_push_key(e, t, eng_proc_key(proc, 16, seq), EV_TREE_INJ, proc, 0, pk);
}

static int gi_drain(tsim_engine *e, int i)
{
    tree_state *ts = e->tree;
    tsim_proc *p = &e->seg->procs[i];
    uint32_t a = atomic_load_explicit(&p->gi_arm, memory_order_acquire);
    if (a == ts->gi_seen[i]) return 0;
    if (!ts->proc_part[i]) {
        eng_violation(e, i, "global interrupt: armed by a processor outside its partition");
        return -1;
    }
    if (a != ts->gi_seen[i] + 1 || ts->gi_seen[i] != ts->gi_fired) {
        eng_violation(e, i, "global interrupt: armed count %u, after %u armed and %u fired", a,
                      ts->gi_seen[i], ts->gi_fired);
        return -1;
    }
    uint64_t t = p->gi_t_arm;
    if (t < e->published) {
        eng_violation(e, i, "global interrupt: armed at %llu cycles, before the %llu already simulated",
                      (unsigned long long)t, (unsigned long long)e->published);
        return -1;
    }
    ts->gi_seen[i] = a;
    if (t > ts->gi_tmax) ts->gi_tmax = t;
    if (++ts->gi_armed == ts->gi_nparts)
        ev_push_key(e, ts->gi_tmax + ts->gi_latency, eng_proc_key(0, 18, ts->gi_fired), EV_GI_FIRE, 0,
                    0, 0);
    return 1;
}

/* Takes what processor i wrote into its tree FIFOs since the last take:
 * 1 if anything, -1 after eng_violation(). Every event it queues has its
 * processor's key (eng_proc_key), so a take out of the rounds' order (a
 * loop adopted, tsim_handoff.c) queues the same events. */
int tree_take_proc(tsim_engine *e, int i)
{
    tree_state *ts = e->tree;
    tsim_proc *p = &e->seg->procs[i];
    int got = 0;
    uint32_t h = atomic_load_explicit(&p->tinj.head, memory_order_acquire);
    if (h - ts->inj_tail[i] > e->prm.tree_fifo_packets) {
        eng_violation(e, i, "tree injection FIFO: head %u is %u packets past the engine's tail %u "
                      "(the FIFO holds %llu)", h, h - ts->inj_tail[i], ts->inj_tail[i],
                      (unsigned long long)e->prm.tree_fifo_packets);
        return -1;
    }
    for (; ts->inj_seen[i] != h; ts->inj_seen[i]++) {
        uint32_t seq = ts->inj_seen[i];
        const tsim_tslot *s = &p->tinj.slot[seq % TSIM_TREE_SLOTS];
        if (tpkt_ok(e, i, seq, s) != 0) return -1;
        tree_take(e, i, seq, &s->h, s->payload, s->m.t_inject);
        got = 1;
    }
    uint32_t tl = atomic_load_explicit(&p->trec.tail, memory_order_acquire);
    if (tl - ts->rec_seen[i] > ts->rec_head[i] - ts->rec_seen[i]) {
        eng_violation(e, i, "tree reception FIFO: tail %u moved past the %u packets delivered", tl,
                      ts->rec_head[i]);
        return -1;
    }
    for (; ts->rec_seen[i] != tl; ts->rec_seen[i]++) {
        uint32_t seq = ts->rec_seen[i];
        uint64_t td = p->trec.slot[seq % TSIM_TREE_SLOTS].m.t_done;
        if (td < e->published) {
            eng_violation(e, i, "tree reception FIFO: slot %u freed at %llu cycles, before the %llu "
                          "already simulated", seq % TSIM_TREE_SLOTS, (unsigned long long)td,
                          (unsigned long long)e->published);
            return -1;
        }
        ev_push_key(e, td, eng_proc_key(i, 17, seq), EV_TREE_REC_FREE, i, 0, 0);
        got = 1;
    }
    return got;
}

int tree_drain(tsim_engine *e)
{
    int got = 0;
    for (int w = 0; w < e->look_words; w++) {
        for (uint64_t m = e->take[w]; m; m &= m - 1) { /* drain's processors of this round */
            int i = 64 * w + __builtin_ctzll(m);
            uint32_t st = atomic_load(&e->seg->procs[i].state);
            if (st == TSIM_P_ABSENT || st == TSIM_P_ENGINE) continue;
            int g = tree_take_proc(e, i);
            int gi = g < 0 ? -1 : gi_drain(e, i);
            if (gi < 0) return 0;
            got |= g | gi;
        }
    }
    return got;
}

int tree_would_take(const tsim_engine *e, int proc)
{
    const tree_state *ts = e->tree;
    const tsim_proc *p = &e->seg->procs[proc];
    return atomic_load(&p->tinj.head) != ts->inj_seen[proc] ||
           atomic_load(&p->trec.tail) != ts->rec_seen[proc] ||
           atomic_load(&p->gi_arm) != ts->gi_seen[proc];
}

int tree_ready(tsim_engine *e, int proc, uint32_t mask)
{
    tsim_proc *p = &e->seg->procs[proc];
    if ((mask & TSIM_WAKE_TREE_REC) && atomic_load(&p->trec.head) != atomic_load(&p->trec.tail))
        return 1;
    if ((mask & TSIM_WAKE_TREE_INJ) &&
        atomic_load(&p->tinj.head) - e->tree->inj_tail[proc] < e->prm.tree_fifo_packets)
        return 1;
    if ((mask & TSIM_WAKE_GI) && atomic_load(&p->gi_arm) <= e->tree->gi_fired) return 1;
    return 0;
}

/* ---- the tree FIFOs of a processor whose loop the engine runs ---------- *
 * (tsim_port.c) What the processor's own pl_tree_inject and
 * pl_tree_consume would write, turned at once into the events tree_drain
 * would have made of them, with the same keys. */
unsigned tree_inj_room(const tsim_engine *e, int proc)
{
    const tree_state *ts = e->tree;
    uint32_t used = ts->inj_seen[proc] - ts->inj_tail[proc];
    return used >= e->prm.tree_fifo_packets ? 0 : (unsigned)(e->prm.tree_fifo_packets - used);
}

void tree_prx_inject(tsim_engine *e, int proc, const tsim_thdr *h, const uint8_t *payload,
                     uint64_t t)
{
    tree_state *ts = e->tree;
    tsim_proc *p = &e->seg->procs[proc];
    uint32_t seq = ts->inj_seen[proc];
    tsim_tslot *s = &p->tinj.slot[seq % TSIM_TREE_SLOTS];
    memset(&s->m, 0, sizeof s->m);
    s->m.t_inject = t;
    s->m.src = (uint32_t)proc;
    s->h = *h;
    memcpy(s->payload, payload, TSIM_TREE_PAYLOAD);
    atomic_store(&p->vt, t);
    atomic_store_explicit(&p->tinj.head, seq + 1, memory_order_release);
    tree_take(e, proc, seq, h, payload, t);
    ts->inj_seen[proc] = seq + 1;
}

const tsim_tslot *tree_rec_oldest(const tsim_engine *e, int proc)
{
    const tree_state *ts = e->tree;
    if (ts->rec_head[proc] == ts->rec_seen[proc]) return NULL;
    return &e->seg->procs[proc].trec.slot[ts->rec_seen[proc] % TSIM_TREE_SLOTS];
}

void tree_prx_consume(tsim_engine *e, int proc, uint64_t t)
{
    tree_state *ts = e->tree;
    tsim_proc *p = &e->seg->procs[proc];
    uint32_t seq = ts->rec_seen[proc];
    p->trec.slot[seq % TSIM_TREE_SLOTS].m.t_done = t;
    atomic_store(&p->vt, t);
    atomic_store_explicit(&p->trec.tail, seq + 1, memory_order_release);
    ev_push_key(e, t, eng_proc_key(proc, 17, seq), EV_TREE_REC_FREE, proc, 0, 0);
    ts->rec_seen[proc] = seq + 1;
}

/* ---- lifetime and counters -------------------------------------------- */
int tree_new(tsim_engine *e)
{
    tree_state *ts = calloc(1, sizeof *ts);
    if (!ts) return -1;
    e->tree = ts;
    int nn = e->g.nnodes, np = e->nprocs;
    ts->n = calloc((size_t)nn, sizeof *ts->n);
    ts->inj_seen = calloc((size_t)np, sizeof *ts->inj_seen);
    ts->inj_tail = calloc((size_t)np, sizeof *ts->inj_tail);
    ts->rec_seen = calloc((size_t)np, sizeof *ts->rec_seen);
    ts->rec_head = calloc((size_t)np, sizeof *ts->rec_head);
    ts->gi_seen = calloc((size_t)np, sizeof *ts->gi_seen);
    ts->proc_part = calloc((size_t)np, 1);
    int *has = calloc((size_t)nn, sizeof *has);
    if (!ts->n || !ts->inj_seen || !ts->inj_tail || !ts->rec_seen || !ts->rec_head || !ts->gi_seen ||
        !ts->proc_part || !has) {
        free(has);
        return -1;
    }
    ts->freelist = NIL;
    ts->ser = tsim_tree_ser(&e->prm);
    ts->gi_latency = tsim_gi_latency(&e->g, &e->prm);
    int nr = e->seg->geom.nranks;
    for (int r = 0; r < nr && r < TSIM_MAX_PROCS; r++) {
        int i = e->seg->rank_proc[r];
        if (i >= 0 && i < np) ts->proc_part[i] = 1;
    }
    for (int i = 0; i < np && nr <= 0; i++) {
        uint32_t st = atomic_load(&e->seg->procs[i].state);
        ts->proc_part[i] = st != TSIM_P_ABSENT && st != TSIM_P_ENGINE;
    }
    for (int i = 0; i < np; i++) {
        ts->gi_nparts += ts->proc_part[i];
        if (ts->proc_part[i]) ts->n[i / TSIM_CPUS].part = 1;
    }
    for (int nd = 0; nd < nn; nd++) {
        tnode *n = &ts->n[nd];
        n->parent = tsim_tree_parent(&e->g, nd);
        n->cidx = nd > 0 ? (nd - 1) % 2 : 0;
        for (int c = 2 * nd + 1; c <= 2 * nd + 2 && c < nn; c++) n->child[n->nchild++] = c;
        for (int v = 0; v < TSIM_TREE_VCS; v++) {
            n->up_cred[v] = (int)e->prm.tree_vc_packets;
            for (int k = 0; k < 3; k++) n->down_cred[k][v] = (int)e->prm.tree_vc_packets;
        }
    }
    for (int nd = nn - 1; nd >= 0; nd--) {
        tnode *n = &ts->n[nd];
        has[nd] = n->part;
        for (int k = 0; k < n->nchild; k++) {
            n->subpart[k] = has[n->child[k]];
            has[nd] |= has[n->child[k]];
        }
    }
    free(has);
    return 0;
}

void tree_free(tsim_engine *e)
{
    tree_state *ts = e->tree;
    if (!ts) return;
    free(ts->n);
    free(ts->pool);
    free(ts->inj_seen);
    free(ts->inj_tail);
    free(ts->rec_seen);
    free(ts->rec_head);
    free(ts->gi_seen);
    free(ts->proc_part);
    free(ts);
    e->tree = NULL;
}

void tsim_engine_tree_stats(tsim_engine *e, tsim_tree_stats *s)
{
    *s = e->tree->st;
}

const tsim_link_stats *tsim_engine_tree_link(tsim_engine *e, int node, int up)
{
    if (node <= 0 || node >= e->g.nnodes) return NULL;
    return up ? &e->tree->n[node].up : &e->tree->n[node].dn;
}

uint32_t tree_seen(const tsim_engine *e, int proc)
{
    return e->tree->inj_seen[proc] + e->tree->gi_seen[proc];
}
