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

/* The datatype work of packet w: ddt_seg_cycles per segment it touches. */
static void charge_segs(pass *ps, uint32_t w)
{
    if (ps->segs)
        coll_charge_ddt(ps->c, (uint64_t)ps->segs[w] * ps->c->pp->seg->params.ddt_seg_cycles);
}

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

/* ---- VN mode: the node's two processors combine first ------------------ *
 * The node's cpu 0 (the leader) alone talks to the collective network.
 * Its mate (cpu 1) hands it every packet's worth of its contribution over
 * the scratchpad (two torus packets: bytes 0..239 and 240..255, software
 * header {COLL_T_TREE, 2 w + half, seq, 0}); the leader combines it with
 * its own in software (the ALU's function, so the result is the one the
 * tree would give), injects once, and hands every result back the same
 * way. A broadcast from a node's processor: the mate's data goes to the
 * leader, which injects it; the tree does not bring it back to that node,
 * so the leader hands it to its mate itself when the root is the leader. */
typedef struct coll_vnq {
    struct coll_vnq *next;
    uint16_t seq;
    uint32_t idx; /* 2 w + half */
    uint8_t data[TSIM_PAYLOAD_MAX];
} coll_vnq;

#define VN_HALF0 TSIM_PAYLOAD_MAX                       /* bytes in the first half */
#define VN_HALF1 (TSIM_TREE_PAYLOAD - TSIM_PAYLOAD_MAX) /* and in the second */

void coll_tree_packet(ml_ctx *ml, const tsim_slot *s, void *arg)
{
    (void)ml;
    coll_ctx *c = arg;
    coll_sw sw = coll_sw_get(s);
    coll_vnq *q = malloc(sizeof *q);
    if (!q) abort();
    q->next = NULL;
    q->seq = sw.seq;
    q->idx = coll_sw_w(&sw);
    memcpy(q->data, s->p.payload, VN_HALF0);
    if (!c->vnq_tail) c->vnq_tail = &c->vnq;
    *c->vnq_tail = q;
    c->vnq_tail = &q->next;
    c->st.pkts_recv++;
}

void coll_tree_fini(coll_ctx *c)
{
    for (coll_vnq *q = c->vnq, *n; q; q = n) n = q->next, free(q);
    c->vnq = NULL;
    coll_tree_end(c->tree_run);
    c->tree_run = NULL;
    c->vnq_tail = NULL;
}

/* Takes the mate's next half of this pass into buf (packet w at w * 256);
 * 1 if there was one, 0 if not yet, -1 if one of another pass is first. */
static int vn_take(coll_ctx *c, uint16_t seq, uint8_t *buf, uint32_t *halves)
{
    coll_vnq *q = c->vnq;
    if (!q) return 0;
    if (q->seq != seq) {
        if ((int16_t)(q->seq - seq) > 0) return 0; /* the next pass's: kept */
        fprintf(stderr, "bglemu: rank %d: node mate's packet of tree collective %u during %u\n",
                c->rank, q->seq, seq);
        return -1;
    }
    if (q->idx != *halves) {
        fprintf(stderr, "bglemu: rank %d: node mate's half %u where %u was due\n", c->rank, q->idx,
                *halves);
        return -1;
    }
    uint32_t w = q->idx / 2;
    if (q->idx % 2) memcpy(buf + (size_t)w * TSIM_TREE_PAYLOAD + VN_HALF0, q->data, VN_HALF1);
    else memcpy(buf + (size_t)w * TSIM_TREE_PAYLOAD, q->data, VN_HALF0);
    (*halves)++;
    c->vnq = q->next;
    if (!c->vnq) c->vnq_tail = &c->vnq;
    free(q);
    return 1;
}

/* Sends half (*halves % 2) of packet *halves / 2 of buf to the mate. */
static int vn_give(coll_ctx *c, uint16_t seq, const uint8_t *buf, uint32_t *halves)
{
    uint32_t w = *halves / 2, h = *halves % 2;
    coll_sw sw = coll_sw_make(COLL_T_TREE, *halves, seq, 0);
    const uint8_t *p = buf + (size_t)w * TSIM_TREE_PAYLOAD + (h ? VN_HALF0 : 0);
    if (coll_inject(c, TSIM_INJ_SP, c->pp->index ^ 1, 0, &sw, p, h ? VN_HALF1 : VN_HALF0) != 0)
        return 0;
    (*halves)++;
    return 1;
}

static int vn_wait(coll_ctx *c, unsigned tree_bits, const char *what, uint32_t done, uint32_t of)
{
    char note[112];
    snprintf(note, sizeof note, "rank %d: collective network (VN, %s), packet %u of %u", c->rank, what,
             done, of);
    return tree_block(c, TSIM_WAKE_REC_ALL | ml_inj_wait(c->ml) | c->inj_wait | tree_bits, note);
}

static int run_pass_vn(pass *ps)
{
    coll_ctx *c = ps->c;
    pl_proc *pp = c->pp;
    uint32_t npk = ps->npk;
    uint16_t seq = c->tree_seq++;
    int leader = pp->cpu == 0;
    int mate_rank = c->map->rank[pp->index ^ 1];
    int combine = ps->root < 0;
    int mate_fills = combine || ps->root == mate_rank, mate_takes = combine || ps->root != mate_rank;
    int node_injects = ps->fill || mate_fills;
    int from_tree = combine || (ps->root != c->rank && ps->root != mate_rank);
    size_t bytes = (size_t)npk * TSIM_TREE_PAYLOAD;
    uint8_t *mate = malloc(bytes), *res = malloc(bytes), buf[TSIM_TREE_PAYLOAD];
    uint32_t m_halves = 0, f_halves = 0, sent = 0, got = 0, gathered = 0;
    int rc = -1;
    if (!mate || !res) goto out;
    if (!leader) { /* give the contribution, take the results */
        int mine = ps->fill != NULL, takes = ps->take != NULL;
        uint32_t need = mine ? 2 * npk : 0;
        while (f_halves < need || (takes && got < npk)) {
            int moved = 0, k;
            c->inj_wait = 0;
            while (f_halves < need) {
                if (f_halves % 2 == 0) {
                    if (gathered != f_halves / 2 + 1) { /* once, before the first try */
                        charge_segs(ps, f_halves / 2);
                        gathered = f_halves / 2 + 1;
                    }
                    uint8_t *p = mate + (size_t)(f_halves / 2) * TSIM_TREE_PAYLOAD;
                    memset(p, 0, TSIM_TREE_PAYLOAD);
                    ps->fill(ps, f_halves / 2, p);
                }
                if (!vn_give(c, seq, mate, &f_halves)) break;
                moved = 1;
            }
            while (takes && (k = vn_take(c, seq, res, &m_halves)) != 0) {
                if (k < 0) goto out;
                moved = 1;
                if (m_halves % 2 == 0) {
                    ps->take(ps, got, res + (size_t)got * TSIM_TREE_PAYLOAD);
                    charge_segs(ps, got);
                    got++;
                }
            }
            if (moved) continue;
            if (pl_aborting(pp)) goto out;
            if (ml_advance(c->ml)) continue;
            if (vn_wait(c, 0, "mate", got, npk) != 0) goto out;
        }
        rc = 0;
        goto out;
    }
    /* the leader */
    while ((node_injects && sent < npk) || got < npk || (mate_takes && f_halves < 2 * npk)) {
        int moved = 0, k;
        c->inj_wait = 0;
        while (mate_fills && (k = vn_take(c, seq, mate, &m_halves)) != 0) {
            if (k < 0) goto out;
            moved = 1;
        }
        while (node_injects && sent < npk && (!mate_fills || m_halves >= 2 * (sent + 1))) {
            const uint8_t *m = mate + (size_t)sent * TSIM_TREE_PAYLOAD;
            if (ps->fill) {
                if (gathered != sent + 1) { /* once, before the first try */
                    charge_segs(ps, sent);
                    gathered = sent + 1;
                }
                memset(buf, 0, sizeof buf);
                ps->fill(ps, sent, buf);
                if (mate_fills) tsim_tree_alu(buf, m, ps->h.op, ps->h.width, ps->h.sign);
            } else {
                memcpy(buf, m, sizeof buf);
            }
            coll_sw sw = coll_sw_make(COLL_T_TREE, sent, seq, 0);
            memcpy(ps->h.sw, &sw, sizeof sw);
            if (pl_tree_inject(pp, &ps->h, buf, sizeof buf) != 0) break;
            c->tree_sent++;
            if (!from_tree) { /* the root's node: the tree does not bring it back */
                memcpy(res + (size_t)sent * TSIM_TREE_PAYLOAD, buf, sizeof buf);
                if (ps->take) {
                    ps->take(ps, sent, buf);
                    charge_segs(ps, sent);
                }
                got++;
            }
            sent++;
            moved = 1;
        }
        while (from_tree && got < npk && pl_tree_poll(pp)) {
            const tsim_tslot *s = pl_tree_peek(pp);
            coll_sw sw;
            memcpy(&sw, s->h.sw, sizeof sw);
            if (sw.type != COLL_T_TREE || sw.seq != seq || coll_sw_w(&sw) != got % COLL_MAXPK) {
                fprintf(stderr, "bglemu: rank %d: collective network packet %u of collective %u where "
                        "packet %u of collective %u was due\n", c->rank, coll_sw_w(&sw), sw.seq, got, seq);
                goto out;
            }
            memcpy(res + (size_t)got * TSIM_TREE_PAYLOAD, s->payload, TSIM_TREE_PAYLOAD);
            if (ps->take) ps->take(ps, got, s->payload);
            pl_tree_consume(pp);
            if (ps->take) charge_segs(ps, got);
            got++;
            c->tree_recv++;
            moved = 1;
        }
        while (mate_takes && f_halves < 2 * got && vn_give(c, seq, res, &f_halves)) moved = 1;
        if (moved) continue;
        if (pl_aborting(pp)) goto out;
        if (ml_advance(c->ml)) continue;
        unsigned bits = (from_tree && got < npk ? TSIM_WAKE_TREE_REC : 0) |
                        (node_injects && sent < npk && (!mate_fills || m_halves >= 2 * (sent + 1))
                             ? TSIM_WAKE_TREE_INJ : 0);
        if (vn_wait(c, bits, "leader", got, npk) != 0) goto out;
    }
    rc = 0;
out:
    free(mate);
    free(res);
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
    tsim_layout_copy(ps->iov, ps->niov, &ps->cur, off, pl, n, 1);
}

static void take_layout(pass *ps, uint32_t w, const uint8_t *pl)
{
    size_t off = (size_t)w * TSIM_TREE_PAYLOAD;
    size_t n = ps->count - off < TSIM_TREE_PAYLOAD ? ps->count - off : TSIM_TREE_PAYLOAD;
    tsim_layout_copy(ps->iov, ps->niov, &ps->cur, off, (void *)pl, n, 0);
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
        segs[w] = tsim_layout_segs(ps.iov, ps.niov, &ps.cur, off,
                                   len - off < TSIM_TREE_PAYLOAD ? len - off : TSIM_TREE_PAYLOAD);
    }
    ps.cur = (tsim_lcur){0, 0};
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
