/* Collectives on the collective network (allreduce, reduce, broadcast)
 * and the global interrupt (barrier). coll_tree.h; docs/collectives.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../packetlayer/pl_tree.h"
#include "../torus-sim/tsim_tree.h"
#include "coll_internal.h"
#include "coll_tree.h"
#include "../packetlayer/pl_trace.h"

int coll_tree_ok(const coll_ctx *c) { return c->world.hw_ok; }

size_t coll_type_size(int type)
{
    switch (type) {
    case COLL_I8: case COLL_U8: return 1;
    case COLL_I16: case COLL_U16: return 2;
    case COLL_I32: case COLL_U32: case COLL_F32: return 4;
    case COLL_I64: case COLL_U64: case COLL_F64: return 8;
    case COLL_2I32: case COLL_F32_I32: case COLL_I16_I32: return 8;
    case COLL_F64_I32: case COLL_I64_I32: return 16;
    default: return 0;
    }
}

static int is_float(int type) { return type == COLL_F32 || type == COLL_F64; }
static int is_narrow(int type) { return type >= COLL_I8 && type <= COLL_U16; }
static int is_loc(int op) { return op == COLL_MAXLOC || op == COLL_MINLOC; }

int coll_tree_takes(int type, int op)
{
    if (type < 0 || type >= COLL_NTYPES || op < 0 || op >= COLL_NOPS) return 0;
    if (coll_is_pair(type) || is_loc(op)) return coll_is_pair(type) && is_loc(op);
    return !is_float(type) || op == COLL_SUM || op == COLL_MAX || op == COLL_MIN;
}

void coll_tree_counts(const coll_ctx *c, uint64_t *sent, uint64_t *recv)
{
    *sent = c->tree_sent;
    *recv = c->tree_recv;
}

/* Blocks on the collective networks and on what the message layer waits
 * for (its reception FIFOs, the injection FIFOs it found full), as
 * ml_idle does: nothing for the engine to run on this rank's behalf. */
static int tree_block(coll_ctx *c, unsigned mask, const char *note)
{
    c->pp->p->handoff.prog = 0; /* a hand-off not taken is not taken later */
    return pl_block_need(c->pp, mask, TSIM_MAX_CHUNKS, note);
}

/* ---- one pass through the tree ------------------------------------------ */
typedef coll_pass pass;

/* Injects this rank's packets while the FIFO has room and takes the
 * results as they come, packet by packet; while neither moves, the
 * message layer's progress runs, then it blocks. Every packet's payload
 * is made before the first goes out and every result is kept whole
 * before it is taken (the conversions cost no simulated time): the loop
 * is coll_tree_engine.c's, run here over this processor's own port and by
 * the engine for a blocked rank (tree_wait). */
static int run_pass_vn(pass *ps);

/* Blocks as tree_block, handing the loop to the engine when the message
 * layer lets it (coll_tree_engine.c). Returns -1 if the job aborts, 1 if
 * the loop picks up in its message-layer advance (the engine stopped at a
 * torus packet), else 0 (the loop's next iteration), t with the packets
 * the engine sent and took. */
static int tree_wait(coll_ctx *c, coll_tree_state *t, unsigned mask, const char *note)
{
    tsim_handoff *hd = ml_handoff_begin(c->ml);
    if (!hd) return tree_block(c, mask, note) != 0 ? -1 : 0;
    coll_tree_state *e = (coll_tree_state *)(void *)hd->state;
    memset(e, 0, sizeof *e);
    e->out = t->out;
    e->in = t->in;
    e->h = t->h;
    e->npk = t->npk;
    e->sent = t->sent;
    e->got = t->got;
    e->seq = t->seq;
    e->type = t->type;
    e->flags = t->flags;
    int rc = ml_handoff_block(c->ml, COLL_PROG_TREE, note, mask & ~TSIM_WAKE_REC_ALL);
    if (rc < 0) return -1;
    if (rc == 0) return 0; /* the engine did not take it */
    if (e->sent > t->sent) c->pp->qvoid = 1; /* as pl_tree_inject says */
    c->tree_sent += e->sent - t->sent;
    c->tree_recv += e->got - t->got;
    t->sent = e->sent;
    t->got = e->got;
    t->flags = e->flags;
    ml_resume_apply(c->ml, &e->res);
    return e->res.point == ML_RESUME_POLL;
}

static int run_pass(pass *ps)
{
    if (ps->c->cpus == 2) return run_pass_vn(ps);
    coll_ctx *c = ps->c;
    pl_proc *pp = c->pp;
    uint32_t npk = ps->npk;
    size_t bytes = (size_t)npk * TSIM_TREE_PAYLOAD, tab = ps->segs ? npk * sizeof *ps->segs : 0;
    uint8_t *out = ps->fill ? calloc(1, bytes + tab) : NULL, *in = ps->take ? malloc(bytes + tab) : NULL;
    coll_tree_state t = {.out = (uint64_t)(uintptr_t)out,
                         .in = (uint64_t)(uintptr_t)in,
                         .h = ps->h,
                         .npk = npk,
                         .sent = ps->fill ? 0 : npk,
                         .got = ps->take ? 0 : npk,
                         .seq = c->tree_seq++,
                         .type = COLL_T_TREE};
    if (ps->segs) /* the table follows the payloads (coll_internal.h) */
        t.flags = ps->fill ? COLL_TREE_SEGS_OUT : COLL_TREE_SEGS_IN;
    tsim_port pt;
    uint32_t wait = TSIM_WAKE_REC_ALL;
    char note[112];
    int rc = -1, resumed = 0;
    if ((ps->fill && !out) || (ps->take && !in)) goto done;
    if (tab) memcpy((ps->fill ? out : in) + bytes, ps->segs, tab);
    for (uint32_t w = 0; ps->fill && w < npk; w++) ps->fill(ps, w, out + (size_t)w * TSIM_TREE_PAYLOAD);
    pl_port_init(pp, &pt);
    if (coll_tree_begin(&t, &c->tree_run, wait) != 0) goto done;
    while (t.sent < npk || t.got < npk) {
        if (!resumed) { /* the loop's iterations, until one moves nothing */
            uint32_t sent0 = t.sent, got0 = t.got;
            int k = coll_tree_step(&pt, &t, c->tree_run, &wait);
            c->tree_sent += t.sent - sent0;
            c->tree_recv += t.got - got0;
            for (uint32_t w = got0; w < t.got; w++) ps->take(ps, w, in + (size_t)w * TSIM_TREE_PAYLOAD);
            if (k != TSIM_RUN_BACK) goto done; /* its own port never waits */
            if (t.sent == npk && t.got == npk) break;
            if (t.phase != COLL_TREE_ADV) { /* a tree packet that isn't the one due */
                const tsim_tslot *s = pl_tree_peek(pp);
                coll_sw sw;
                memcpy(&sw, s->h.sw, sizeof sw);
                fprintf(stderr, "bglemu: rank %d: collective network packet %u of collective %u where "
                        "packet %u of collective %u was due (ranks disagree on the order of "
                        "collectives)\n", c->rank, coll_sw_w(&sw), sw.seq, t.got, t.seq);
                goto done;
            }
            if (pl_aborting(pp)) goto done;
        }
        resumed = 0;
        t.phase = COLL_TREE_BLOCKED; /* whatever happens now, the loop's next iteration follows */
        if (ml_advance(c->ml)) continue;
        snprintf(note, sizeof note, "rank %d: collective network, packet %u of %u", c->rank, t.got,
                 npk);
        unsigned mask = TSIM_WAKE_REC_ALL | ml_inj_wait(c->ml) |
                        (t.got < npk ? TSIM_WAKE_TREE_REC : 0) |
                        (t.sent < npk ? TSIM_WAKE_TREE_INJ : 0);
        uint32_t got0 = t.got;
        int k = tree_wait(c, &t, mask, note);
        if (k < 0) goto done;
        for (uint32_t w = got0; w < t.got; w++) ps->take(ps, w, in + (size_t)w * TSIM_TREE_PAYLOAD);
        resumed = k;
    }
    rc = 0;
done:
    free(out);
    free(in);
    return rc;
}

/* ---- VN mode: the node's two processors combine first (coll_tree_vn.c) -- */

/* A node mate's scratchpad half of a later pass, kept until it starts. */
typedef struct coll_vnq {
    struct coll_vnq *next;
    uint16_t seq;
    uint32_t idx; /* 2 w + half */
    uint8_t data[TSIM_PAYLOAD_MAX];
} coll_vnq;

/* The running pass on this rank: the loop's state and its buffers. */
typedef struct coll_vn_run {
    coll_tree_vn_state t;
    uint8_t *out, *in, *mbuf;
    const uint32_t *segs;
} vn_run;

static const uint8_t *r_own(void *ctx, uint32_t w) { return ((vn_run *)ctx)->out + (size_t)w * TSIM_TREE_PAYLOAD; }
static const uint8_t *r_mate(void *ctx, uint32_t w) { return ((vn_run *)ctx)->mbuf + (size_t)w * TSIM_TREE_PAYLOAD; }
static const uint8_t *r_result(void *ctx, uint32_t w) { return ((vn_run *)ctx)->in + (size_t)w * TSIM_TREE_PAYLOAD; }

static int r_put_result(void *ctx, uint32_t w, const uint8_t *p)
{
    memcpy(((vn_run *)ctx)->in + (size_t)w * TSIM_TREE_PAYLOAD, p, TSIM_TREE_PAYLOAD);
    return 0;
}

static int r_put_half(void *ctx, uint32_t idx, const uint8_t *p, size_t n)
{
    vn_run *v = ctx;
    uint8_t *buf = v->t.role & COLL_VN_LEADER ? v->mbuf : v->in;
    memcpy(buf + (size_t)(idx / 2) * TSIM_TREE_PAYLOAD + (idx % 2 ? TSIM_PAYLOAD_MAX : 0), p, n);
    return 0;
}

static int r_segs(void *ctx, int dir, uint32_t w, uint32_t *n)
{
    (void)dir;
    *n = ((vn_run *)ctx)->segs[w];
    return 0;
}

static const coll_vn_io rank_vn_io = {r_own, r_mate, r_result, r_put_result, r_put_half, r_segs};

/* The half placed in the running pass (or kept for a later one). */
static void vn_place(coll_ctx *c, vn_run *v, uint16_t seq, uint32_t idx, const uint8_t *payload)
{
    if (seq != v->t.seq || coll_tree_vn_place(&v->t, &rank_vn_io, v, idx, payload) != 1) {
        if (seq == v->t.seq)
            fprintf(stderr, "bglemu: rank %d: node mate's half %u where %u was due\n", c->rank, idx,
                    v->t.m_arrived);
        else
            fprintf(stderr, "bglemu: rank %d: node mate's packet of tree collective %u during %u\n",
                    c->rank, seq, v->t.seq);
        v->t.bad = 1;
    }
}

void coll_tree_packet(ml_ctx *ml, const tsim_slot *s, void *arg)
{
    (void)ml;
    coll_ctx *c = arg;
    coll_sw sw = coll_sw_get(s);
    c->st.pkts_recv++;
    vn_run *v = c->vn_run;
    if (v && (int16_t)(sw.seq - v->t.seq) <= 0) { /* the running pass's (or an earlier one's: wrong) */
        vn_place(c, v, sw.seq, coll_sw_w(&sw), s->p.payload);
        return;
    }
    coll_vnq *q = malloc(sizeof *q);
    if (!q) abort();
    q->next = NULL;
    q->seq = sw.seq;
    q->idx = coll_sw_w(&sw);
    memcpy(q->data, s->p.payload, sizeof q->data);
    if (!c->vnq_tail) c->vnq_tail = &c->vnq;
    *c->vnq_tail = q;
    c->vnq_tail = &q->next;
}

void coll_tree_fini(coll_ctx *c)
{
    for (coll_vnq *q = c->vnq, *n; q; q = n) n = q->next, free(q);
    c->vnq = NULL;
    coll_tree_end(c->tree_run);
    c->tree_run = NULL;
    c->vnq_tail = NULL;
}

/* Blocks as tree_block, handing the loop to the engine when the message
 * layer lets it (coll_tree_vn.c): as tree_wait. */
static int vn_wait(coll_ctx *c, vn_run *v, unsigned mask, const char *note)
{
    tsim_handoff *hd = ml_handoff_begin(c->ml);
    if (!hd) return tree_block(c, mask, note) != 0 ? -1 : 0;
    coll_tree_vn_state *e = (coll_tree_vn_state *)(void *)hd->state, *t = &v->t;
    *e = *t;
    memset(&e->res, 0, sizeof e->res);
    int rc = ml_handoff_block(c->ml, COLL_PROG_TREE_VN, note, mask & ~TSIM_WAKE_REC_ALL);
    if (rc < 0) return -1;
    if (rc == 0) return 0; /* the engine did not take it */
    if (e->pkts_sent || e->sent > t->sent) c->pp->qvoid = 1; /* as pl_inject, pl_tree_inject say */
    t->sent = e->sent;
    t->got = e->got;
    t->m_arrived = e->m_arrived;
    t->m_halves = e->m_halves;
    t->f_halves = e->f_halves;
    t->gathered = e->gathered;
    t->pkts_sent += e->pkts_sent;
    t->pkts_recv += e->pkts_recv;
    ml_resume_apply(c->ml, &e->res);
    return e->res.point == ML_RESUME_POLL;
}

/* The tree counters and the results' takes for what the loop moved. */
static void vn_account(pass *ps, vn_run *v, uint32_t sent0, uint32_t got0)
{
    coll_tree_vn_state *t = &v->t;
    ps->c->tree_sent += t->sent - sent0;
    if (t->role & COLL_VN_FROM_TREE) ps->c->tree_recv += t->got - got0;
    for (uint32_t w = got0; ps->take && w < t->got; w++) ps->take(ps, w, v->in + (size_t)w * TSIM_TREE_PAYLOAD);
}

static int run_pass_vn(pass *ps)
{
    coll_ctx *c = ps->c;
    pl_proc *pp = c->pp;
    uint32_t npk = ps->npk;
    int leader = pp->cpu == 0;
    int mate_rank = c->map->rank[pp->index ^ 1];
    int combine = ps->root < 0;
    int mate_fills = combine || ps->root == mate_rank, mate_takes = combine || ps->root != mate_rank;
    int from_tree = combine || (ps->root != c->rank && ps->root != mate_rank);
    size_t bytes = (size_t)npk * TSIM_TREE_PAYLOAD, tab = ps->segs ? npk * sizeof *ps->segs : 0;
    vn_run v = {.segs = ps->segs};
    coll_tree_vn_state *t = &v.t;
    t->role = (uint8_t)((leader ? COLL_VN_LEADER : 0) | (ps->fill ? COLL_VN_FILLS : 0) |
                        (ps->take ? COLL_VN_TAKES : 0) |
                        (leader && mate_fills ? COLL_VN_MATE_FILLS : 0) |
                        (leader && mate_takes ? COLL_VN_MATE_TAKES : 0) |
                        (leader && from_tree ? COLL_VN_FROM_TREE : 0));
    t->flags = (uint8_t)((tab && ps->fill ? COLL_TREE_SEGS_OUT : 0) | (tab && ps->take ? COLL_TREE_SEGS_IN : 0));
    t->h = ps->h;
    t->npk = npk;
    t->seq = c->tree_seq++;
    char note[112];
    int rc = -1, resumed = 0;
    if (ps->fill && !(v.out = calloc(1, bytes + tab))) goto out;
    if ((leader || ps->take) && !(v.in = calloc(1, bytes + tab))) goto out;
    if (leader && mate_fills && !(v.mbuf = calloc(1, bytes))) goto out;
    /* the tables follow the payloads (coll_internal.h) */
    if (t->flags & COLL_TREE_SEGS_OUT) memcpy(v.out + bytes, ps->segs, tab);
    if (t->flags & COLL_TREE_SEGS_IN) memcpy(v.in + bytes, ps->segs, tab);
    for (uint32_t w = 0; ps->fill && w < npk; w++) ps->fill(ps, w, v.out + (size_t)w * TSIM_TREE_PAYLOAD);
    t->out = (uint64_t)(uintptr_t)v.out;
    t->in = (uint64_t)(uintptr_t)v.in;
    t->mbuf = (uint64_t)(uintptr_t)v.mbuf;
    /* the mate's halves that came before the pass started */
    while (c->vnq && (int16_t)(c->vnq->seq - t->seq) <= 0) {
        coll_vnq *q = c->vnq;
        vn_place(c, &v, q->seq, q->idx, q->data);
        c->vnq = q->next;
        if (!c->vnq) c->vnq_tail = &c->vnq;
        free(q);
    }
    c->vn_run = &v;
    tsim_port pt;
    pl_port_init(pp, &pt);
    for (;;) {
        if (!resumed) { /* the loop's iterations, until one moves nothing */
            uint32_t sent0 = t->sent, got0 = t->got, wait;
            int k = coll_tree_vn_step(&pt, t, &rank_vn_io, &v, &wait);
            vn_account(ps, &v, sent0, got0);
            if (k != TSIM_RUN_BACK || t->bad) goto out; /* its own port never waits */
            if (t->phase == COLL_VN_POLL) { /* a tree packet that isn't the one due */
                const tsim_tslot *s = pl_tree_peek(pp);
                coll_sw sw;
                memcpy(&sw, s->h.sw, sizeof sw);
                fprintf(stderr, "bglemu: rank %d: collective network packet %u of collective %u where "
                        "packet %u of collective %u was due\n", c->rank, coll_sw_w(&sw), sw.seq, t->got,
                        t->seq);
                goto out;
            }
            if (t->phase != COLL_VN_ADV) break; /* the pass is complete */
            if (pl_aborting(pp)) goto out;
        }
        resumed = 0;
        t->phase = COLL_VN_BLOCKED; /* whatever happens now, the loop's next iteration follows */
        if (ml_advance(c->ml)) continue;
        if (t->bad) goto out;
        snprintf(note, sizeof note, "rank %d: collective network (VN, %s), packet %u of %u", c->rank,
                 leader ? "leader" : "mate", t->got, npk);
        unsigned mask = TSIM_WAKE_REC_ALL | ml_inj_wait(c->ml) | t->wait;
        if (leader && from_tree && t->got < npk) mask |= TSIM_WAKE_TREE_REC;
        if (leader && (ps->fill || mate_fills) && t->sent < npk &&
            (!mate_fills || t->m_halves >= 2 * (t->sent + 1)))
            mask |= TSIM_WAKE_TREE_INJ;
        uint32_t sent0 = t->sent, got0 = t->got;
        int k = vn_wait(c, &v, mask, note);
        if (k < 0) goto out;
        vn_account(ps, &v, sent0, got0);
        resumed = k;
    }
    rc = 0;
out:
    c->vn_run = NULL;
    c->st.pkts_sent += t->pkts_sent;
    c->st.pkts_recv += t->pkts_recv;
    free(v.out);
    free(v.in);
    free(v.mbuf);
    return rc;
}

static uint32_t npackets(size_t count, size_t per)
{
    return (uint32_t)((count + per - 1) / per);
}

/* ---- the operations --------------------------------------------------------- */
static const uint8_t alu_op[COLL_NOPS] = {TSIM_TOP_ADD, TSIM_TOP_MAX, TSIM_TOP_MIN,
                                          TSIM_TOP_AND, TSIM_TOP_OR, TSIM_TOP_XOR};

static int reduce_to(coll_ctx *c, const void *sbuf, void *rbuf, size_t count, int type, int op)
{
    if (!coll_tree_ok(c) || !coll_tree_takes(type, op)) return COLL_ENOTSUP;
    if (count && !sbuf) return -1;
    if (!count) return 0;
    size_t esz = coll_type_size(type);
    if (count > (size_t)COLL_MAXPK * 16) return -1;
    pass ps = {.c = c, .src = sbuf, .dst = rbuf, .count = count, .esz = esz, .type = type, .op = op,
               .root = -1};
    if (is_narrow(type) || coll_is_pair(type) || op >= COLL_LAND) {
        int sign, alu;
        coll_tree_codec(type, op, &ps.width, &sign, &alu);
        ps.per = TSIM_TREE_PAYLOAD / ps.width;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu, (int)ps.width, sign, 0, 0, NULL);
        ps.fill = coll_tree_fill_codec;
        ps.take = coll_tree_take_codec;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    if (!is_float(type)) {
        ps.per = TSIM_TREE_PAYLOAD / esz;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu_op[op], (int)esz,
                       type == COLL_I32 || type == COLL_I64, 0, 0, NULL);
        ps.fill = coll_tree_fill_copy;
        ps.take = coll_tree_take_copy;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    if (op != COLL_SUM) {
        ps.per = TSIM_TREE_PAYLOAD / esz;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu_op[op], (int)esz, 0, 0, 0, NULL);
        ps.fill = coll_tree_fill_enc;
        ps.take = coll_tree_take_dec;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    ps.ex = malloc(count * sizeof *ps.ex);
    if (!ps.ex) return -1;
    ps.per = TSIM_TREE_PAYLOAD / 4;
    pl_tree_header(&ps.h, TSIM_TC_COMBINE, TSIM_TOP_MAX, 4, 0, 0, 0, NULL);
    ps.fill = coll_tree_fill_exp;
    ps.take = coll_tree_take_exp;
    ps.npk = npackets(count, ps.per);
    int rc = run_pass(&ps);
    if (rc == 0) {
        ps.per = TSIM_TREE_PAYLOAD / 16;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, TSIM_TOP_ADD, 16, 1, 0, 0, NULL);
        ps.fill = coll_tree_fill_fx;
        ps.take = coll_tree_take_fx;
        ps.npk = npackets(count, ps.per);
        rc = run_pass(&ps);
    }
    free(ps.ex);
    return rc;
}

int coll_tree_allreduce(coll_ctx *c, const void *sbuf, void *rbuf, size_t count, int type, int op)
{
    if (count && !rbuf) return -1;
    uint64_t t0 = pl_now(c->pp);
    int rc = reduce_to(c, sbuf, rbuf, count, type, op);
    coll_trace_op(c, PLT_COLL_TREE_ALLREDUCE, t0, rc);
    return rc;
}

int coll_tree_reduce(coll_ctx *c, const void *sbuf, void *rbuf, size_t count, int type, int op,
                     int root)
{
    if (root < 0 || root >= c->nranks) return -1;
    if (c->rank == root && count && !rbuf) return -1;
    uint64_t t0 = pl_now(c->pp);
    int rc = reduce_to(c, sbuf, c->rank == root ? rbuf : NULL, count, type, op);
    coll_trace_op(c, PLT_COLL_TREE_REDUCE, t0, rc);
    return rc;
}

static void fill_bytes(pass *ps, uint32_t w, uint8_t *pl)
{
    size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
    size_t n = ps->count - off < TSIM_TREE_PAYLOAD ? ps->count - off : TSIM_TREE_PAYLOAD;
    memcpy(pl, ps->src + off, n);
}

static void take_bytes(pass *ps, uint32_t w, const uint8_t *pl)
{
    size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
    size_t n = ps->count - off < TSIM_TREE_PAYLOAD ? ps->count - off : TSIM_TREE_PAYLOAD;
    memcpy(ps->dst + off, pl, n);
}

int coll_tree_bcast(coll_ctx *c, void *buf, size_t len, int root)
{
    if (!coll_tree_ok(c)) return COLL_ENOTSUP;
    if (root < 0 || root >= c->nranks || (len && !buf)) return -1;
    if (!len) return 0;
    if (len > (size_t)COLL_MAXPK * TSIM_TREE_PAYLOAD) return -1;
    pass ps = {.c = c, .src = buf, .dst = buf, .count = len, .root = root};
    pl_tree_header(&ps.h, TSIM_TC_BCAST, TSIM_TOP_NONE, 4, 0, 0, 0, NULL);
    ps.npk = npackets(len, TSIM_TREE_PAYLOAD);
    if (c->rank == root) ps.fill = fill_bytes;
    else ps.take = take_bytes;
    uint64_t t0 = pl_now(c->pp);
    int rc = run_pass(&ps);
    coll_trace_op(c, PLT_COLL_TREE_BCAST, t0, rc);
    return rc;
}

/* The layout's side of the host's copies: packet w's bytes gathered from
 * (scattered into) the segments, uncharged (charge_segs is the model's). */
static void fill_layout(pass *ps, uint32_t w, uint8_t *pl)
{
    size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
    size_t n = ps->count - off < TSIM_TREE_PAYLOAD ? ps->count - off : TSIM_TREE_PAYLOAD;
    ml_layout_copy(ps->iov, ps->niov, &ps->cur, off, pl, n, 1);
}

static void take_layout(pass *ps, uint32_t w, const uint8_t *pl)
{
    size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
    size_t n = ps->count - off < TSIM_TREE_PAYLOAD ? ps->count - off : TSIM_TREE_PAYLOAD;
    ml_layout_copy(ps->iov, ps->niov, &ps->cur, off, (void *)pl, n, 0);
}

int coll_tree_bcast_layout(coll_ctx *c, const coll_layout *blk, int root)
{
    if (!blk || !blk->niov) return coll_tree_bcast(c, blk ? blk->buf : NULL, blk ? blk->len : 0, root);
    if (!coll_tree_ok(c)) return COLL_ENOTSUP;
    size_t len = blk->len, total = 0;
    for (size_t i = 0; i < blk->niov; i++) {
        if (!blk->iov[i].iov_base && blk->iov[i].iov_len) return -1;
        total += blk->iov[i].iov_len;
    }
    if (root < 0 || root >= c->nranks || total != len) return -1;
    if (!len) return 0;
    if (len > (size_t)COLL_MAXPK * TSIM_TREE_PAYLOAD) return -1;
    pass ps = {.c = c, .count = len, .root = root, .iov = blk->iov, .niov = blk->niov};
    pl_tree_header(&ps.h, TSIM_TC_BCAST, TSIM_TOP_NONE, 4, 0, 0, 0, NULL);
    ps.npk = npackets(len, TSIM_TREE_PAYLOAD);
    uint32_t *segs = malloc(ps.npk * sizeof *segs);
    if (!segs) return -1;
    for (uint32_t w = 0; w < ps.npk; w++) {
        size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
        segs[w] = ml_layout_segs(ps.iov, ps.niov, &ps.cur, off,
                                   len - off < TSIM_TREE_PAYLOAD ? len - off : TSIM_TREE_PAYLOAD);
    }
    ps.cur = (ml_cursor){0, 0};
    ps.segs = segs;
    if (c->rank == root) ps.fill = fill_layout;
    else ps.take = take_layout;
    uint64_t t0 = pl_now(c->pp);
    int rc = run_pass(&ps);
    coll_trace_op(c, PLT_COLL_TREE_BCAST, t0, rc);
    free(segs);
    return rc;
}

int coll_gi_barrier(coll_ctx *c)
{
    pl_proc *pp = c->pp;
    char note[112];
    uint64_t t0 = pl_now(pp);
    pl_gi_arm(pp);
    while (!pl_gi_poll(pp)) {
        if (pl_aborting(pp)) return -1;
        if (ml_advance(c->ml)) continue;
        snprintf(note, sizeof note, "rank %d: the global interrupt (barrier)", c->rank);
        if (tree_block(c, TSIM_WAKE_REC_ALL | ml_inj_wait(c->ml) | TSIM_WAKE_GI, note) != 0) return -1;
    }
    coll_trace_op(c, PLT_COLL_GI_BARRIER, t0, 0);
    return 0;
}
