/* Collectives on the collective network (allreduce, reduce, broadcast)
 * and the global interrupt (barrier). coll_tree.h; docs/collectives.md. */
#include <math.h>
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
static int is_pair(int type) { return type >= COLL_2I32 && type < COLL_NTYPES; }
static int is_narrow(int type) { return type >= COLL_I8 && type <= COLL_U16; }
static int is_loc(int op) { return op == COLL_MAXLOC || op == COLL_MINLOC; }

int coll_tree_takes(int type, int op)
{
    if (type < 0 || type >= COLL_NTYPES || op < 0 || op >= COLL_NOPS) return 0;
    if (is_pair(type) || is_loc(op)) return is_pair(type) && is_loc(op);
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
    c->pp->p->prx.polls = 0;
    return pl_block_need(c->pp, mask, TSIM_MAX_CHUNKS, note);
}

/* ---- one pass through the tree ------------------------------------------ */
typedef struct pass pass;
struct pass {
    coll_ctx *c;
    tsim_thdr h;
    uint32_t npk;
    void (*fill)(pass *, uint32_t w, uint8_t *pl);        /* NULL: nothing to inject */
    void (*take)(pass *, uint32_t w, const uint8_t *pl);  /* NULL: nothing to receive */
    const uint8_t *src;
    uint8_t *dst; /* NULL: results dropped (reduce, not the root) */
    size_t count, esz, per;
    int type, op;
    size_t width; /* encoded operations: bytes of one ALU operand */
    int root;     /* broadcast: its message-layer rank; -1: a combine */
    uint32_t *ex; /* the two-pass sum's exponents */
    /* a broadcast of a layout: its segments, and per packet the segments
     * it touches (charged to the root before the packet's first FIFO try,
     * to every other rank after it is taken); NULL otherwise */
    const struct iovec *iov;
    size_t niov;
    tsim_lcur cur;
    const uint32_t *segs;
};

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
 * before it is taken (the conversions cost no simulated time), so that
 * the engine can run the loop of a blocked rank (tree_wait). */
static int run_pass_vn(pass *ps);

/* Blocks as tree_block, handing the loop to the engine when the message
 * layer lets it (torus-sim/tsim_proxy_tree.c). Returns -1 if the job
 * aborts, 1 if the loop picks up in its message-layer advance (the
 * engine stopped at a torus packet), else 0 (the loop's next iteration),
 * with the packets the engine sent and took. */
static int tree_wait(pass *ps, const uint8_t *out, uint8_t *in, uint16_t seq, uint32_t *sent,
                     uint32_t *got, uint32_t *gathered, unsigned mask, const char *note)
{
    coll_ctx *c = ps->c;
    tsim_prx *d = ml_prx_begin(c->ml);
    if (!d) return tree_block(c, mask, note) != 0 ? -1 : 0;
    d->tree = (tsim_prx_tree){.out = (uint64_t)(uintptr_t)out,
                              .in = (uint64_t)(uintptr_t)in,
                              .h = ps->h,
                              .npk = ps->npk,
                              .sent = *sent,
                              .got = *got,
                              .seq = seq,
                              .type = COLL_T_TREE};
    if (ps->segs) /* the table follows the payloads (tsim_tree.h) */
        d->tree.resv = (uint8_t)((ps->fill ? TSIM_TREE_SEGS_OUT : TSIM_TREE_SEGS_IN) |
                                 (*gathered == *sent + 1 ? TSIM_TREE_GATHERED : 0));
    d->prog = TSIM_PRX_PROG_TREE;
    int rc = ml_prx_block(c->ml, note, mask & ~TSIM_WAKE_REC_ALL);
    if (rc < 0) return -1;
    if (rc == TSIM_PRX_NONE) return 0; /* the engine did not take it */
    if (d->tree.sent > *sent) c->pp->qvoid = 1; /* as pl_tree_inject says */
    c->tree_sent += d->tree.sent - *sent;
    c->tree_recv += d->tree.got - *got;
    *sent = d->tree.sent;
    *got = d->tree.got;
    *gathered = d->tree.resv & TSIM_TREE_GATHERED ? *sent + 1 : 0;
    return rc == TSIM_PRX_POLL;
}

static int run_pass(pass *ps)
{
    if (ps->c->cpus == 2) return run_pass_vn(ps);
    coll_ctx *c = ps->c;
    pl_proc *pp = c->pp;
    uint32_t npk = ps->npk, sent = ps->fill ? 0 : npk, got = ps->take ? 0 : npk;
    uint16_t seq = c->tree_seq++;
    size_t bytes = (size_t)npk * TSIM_TREE_PAYLOAD, tab = ps->segs ? npk * sizeof *ps->segs : 0;
    uint8_t *out = ps->fill ? calloc(1, bytes + tab) : NULL, *in = ps->take ? malloc(bytes + tab) : NULL;
    uint32_t gathered = 0; /* 1 + the packet whose gather was charged */
    char note[112];
    int rc = -1, resumed = 0;
    if ((ps->fill && !out) || (ps->take && !in)) goto done;
    if (tab) memcpy((ps->fill ? out : in) + bytes, ps->segs, tab);
    for (uint32_t w = 0; ps->fill && w < npk; w++) ps->fill(ps, w, out + (size_t)w * TSIM_TREE_PAYLOAD);
    while (sent < npk || got < npk) {
        if (!resumed) {
            int moved = 0;
            while (sent < npk) {
                if (ps->fill && gathered != sent + 1) { /* once, before the first try */
                    charge_segs(ps, sent);
                    gathered = sent + 1;
                }
                coll_sw sw = coll_sw_make(COLL_T_TREE, sent, seq, 0);
                memcpy(ps->h.sw, &sw, sizeof sw);
                if (pl_tree_inject(pp, &ps->h, out + (size_t)sent * TSIM_TREE_PAYLOAD,
                                   TSIM_TREE_PAYLOAD) != 0)
                    break;
                sent++;
                c->tree_sent++;
                moved = 1;
            }
            while (got < npk && pl_tree_poll(pp)) {
                const tsim_tslot *s = pl_tree_peek(pp);
                coll_sw sw;
                memcpy(&sw, s->h.sw, sizeof sw);
                if (sw.type != COLL_T_TREE || sw.seq != seq || coll_sw_w(&sw) != got % COLL_MAXPK) {
                    fprintf(stderr, "bglemu: rank %d: collective network packet %u of collective %u where "
                            "packet %u of collective %u was due (ranks disagree on the order of "
                            "collectives)\n", c->rank, coll_sw_w(&sw), sw.seq, got, seq);
                    goto done;
                }
                uint8_t *r = in + (size_t)got * TSIM_TREE_PAYLOAD;
                memcpy(r, s->payload, TSIM_TREE_PAYLOAD);
                ps->take(ps, got, r);
                pl_tree_consume(pp);
                charge_segs(ps, got);
                got++;
                c->tree_recv++;
                moved = 1;
            }
            if (moved) continue;
            if (pl_aborting(pp)) goto done;
        }
        resumed = 0;
        if (ml_advance(c->ml)) continue;
        snprintf(note, sizeof note, "rank %d: collective network, packet %u of %u", c->rank, got,
                 ps->npk);
        unsigned mask = TSIM_WAKE_REC_ALL | ml_inj_wait(c->ml) |
                        (got < ps->npk ? TSIM_WAKE_TREE_REC : 0) |
                        (sent < ps->npk ? TSIM_WAKE_TREE_INJ : 0);
        uint32_t got0 = got;
        int k = tree_wait(ps, out, in, seq, &sent, &got, &gathered, mask, note);
        if (k < 0) goto done;
        for (uint32_t w = got0; w < got; w++) ps->take(ps, w, in + (size_t)w * TSIM_TREE_PAYLOAD);
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

static size_t elems(const pass *ps, uint32_t w)
{
    size_t first = (size_t)w * ps->per;
    return ps->count - first < ps->per ? ps->count - first : ps->per;
}

/* ---- integers: one pass ------------------------------------------------- */
static void fill_copy(pass *ps, uint32_t w, uint8_t *pl)
{
    memcpy(pl, ps->src + (size_t)w * ps->per * ps->esz, elems(ps, w) * ps->esz);
}

static void take_copy(pass *ps, uint32_t w, const uint8_t *pl)
{
    if (ps->dst) memcpy(ps->dst + (size_t)w * ps->per * ps->esz, pl, elems(ps, w) * ps->esz);
}

/* ---- floating-point MAX/MIN: an order-preserving integer encoding -------- *
 * Non-negative values get the sign bit set, negative ones are inverted:
 * the unsigned order of the codes is the order of the values (-0 < +0;
 * NaNs sort beyond the infinities, by their bits). */
static uint64_t enc(uint64_t u, int bits)
{
    uint64_t sign = 1ull << (bits - 1), mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    return (u & sign) ? ~u & mask : u | sign;
}

static uint64_t dec(uint64_t k, int bits)
{
    uint64_t sign = 1ull << (bits - 1), mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    return (k & sign) ? k & ~sign : ~k & mask;
}

static void fill_enc(pass *ps, uint32_t w, uint8_t *pl)
{
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        if (ps->esz == 4) {
            uint32_t u;
            memcpy(&u, ps->src + (base + i) * 4, 4);
            u = (uint32_t)enc(u, 32);
            memcpy(pl + i * 4, &u, 4);
        } else {
            uint64_t u;
            memcpy(&u, ps->src + (base + i) * 8, 8);
            u = enc(u, 64);
            memcpy(pl + i * 8, &u, 8);
        }
    }
}

static void take_dec(pass *ps, uint32_t w, const uint8_t *pl)
{
    if (!ps->dst) return;
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        if (ps->esz == 4) {
            uint32_t u;
            memcpy(&u, pl + i * 4, 4);
            u = (uint32_t)dec(u, 32);
            memcpy(ps->dst + (base + i) * 4, &u, 4);
        } else {
            uint64_t u;
            memcpy(&u, pl + i * 8, 8);
            u = dec(u, 64);
            memcpy(ps->dst + (base + i) * 8, &u, 8);
        }
    }
}

/* ---- floating-point SUM: exponents, then 128-bit fixed point ------------- *
 * Element x = m * 2^(e - bias - mbits) (e >= 1; subnormals use e = 1, no
 * hidden bit). With E the largest e of the element over all ranks, rank r
 * contributes round(m * 2^(e - E + 60)) as a signed 128-bit integer: the
 * largest magnitude takes bits 60..113, so 4,096 of them cannot overflow,
 * and the sum is exact integer arithmetic, the same in any order. A
 * non-finite value somewhere (E all ones) turns the element into counts:
 * +inf, -inf and NaN in bits 0, 21 and 42. */
typedef struct fmt {
    int mbits, ebits;
    uint32_t emax;
    int bias; /* value = m * 2^(e - bias) with m the integer significand */
} fmt;

static fmt fmt_of(size_t esz)
{
    if (esz == 4) return (fmt){23, 8, 255, 150};
    return (fmt){52, 11, 2047, 1075};
}

static uint64_t bits_of(const uint8_t *p, size_t esz)
{
    if (esz == 4) {
        uint32_t u;
        memcpy(&u, p, 4);
        return u;
    }
    uint64_t u;
    memcpy(&u, p, 8);
    return u;
}

static void fill_exp(pass *ps, uint32_t w, uint8_t *pl)
{
    fmt f = fmt_of(ps->esz);
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        uint32_t e = (uint32_t)(bits_of(ps->src + (base + i) * ps->esz, ps->esz) >> f.mbits) & f.emax;
        memcpy(pl + i * 4, &e, 4);
    }
}

static void take_exp(pass *ps, uint32_t w, const uint8_t *pl)
{
    memcpy(ps->ex + (size_t)w * ps->per, pl, elems(ps, w) * 4);
}

static void fx_make(uint64_t u, fmt f, uint32_t E, uint64_t out[2])
{
    uint32_t e = (uint32_t)(u >> f.mbits) & f.emax;
    int neg = (int)(u >> (f.mbits + f.ebits)) & 1;
    uint64_t frac = u & ((1ull << f.mbits) - 1);
    out[0] = out[1] = 0;
    if (E == f.emax) {
        if (e == f.emax) out[0] = frac ? 1ull << 42 : neg ? 1ull << 21 : 1;
        return;
    }
    uint64_t m = e ? frac | 1ull << f.mbits : frac;
    int sh = (int)(e ? e : 1) - (int)(E ? E : 1) + 60;
    if (sh >= 64 - f.mbits - 1) { /* left: the top bits go to the high word */
        out[0] = m << sh;
        out[1] = m >> (64 - sh);
    } else if (sh >= 0) {
        out[0] = m << sh;
    } else if (-sh <= f.mbits + 1) { /* right, rounded to nearest (ties away) */
        int r = -sh;
        out[0] = (m >> r) + ((m >> (r - 1)) & 1);
    }
    if (neg) {
        out[0] = ~out[0] + 1;
        out[1] = ~out[1] + (out[0] == 0);
    }
}

static uint64_t fx_value(const uint64_t in[2], fmt f, uint32_t E)
{
    int dbl = f.mbits == 52;
    if (E == f.emax) {
        uint64_t pinf = in[0] & 0x1fffff, ninf = (in[0] >> 21) & 0x1fffff, nan = in[0] >> 42;
        uint64_t inf = (uint64_t)f.emax << f.mbits, sign = 1ull << (f.mbits + f.ebits);
        if (nan || (pinf && ninf)) return inf | 1ull << (f.mbits - 1);
        return ninf ? inf | sign : inf;
    }
    uint64_t lo = in[0], hi = in[1];
    int neg = (int)(hi >> 63);
    if (neg) {
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    double v;
    if (!hi && !lo) {
        v = 0.0;
    } else {
        int len = hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll(lo);
        int keep = f.mbits + 1, r = len > keep ? len - keep : 0;
        uint64_t mant;
        if (!r) {
            mant = lo;
        } else {
            /* mant = value >> r, rounded to nearest even on the bits shifted out */
            uint64_t half, sticky;
            if (r >= 64) {
                mant = hi >> (r - 64);
                half = r == 64 ? lo >> 63 : (hi >> (r - 65)) & 1;
                sticky = r == 64 ? lo << 1 : (lo | (r > 65 ? hi << (129 - r) : 0));
            } else {
                mant = lo >> r | (hi << (64 - r));
                half = (lo >> (r - 1)) & 1;
                sticky = r > 1 ? lo << (65 - r) : 0;
            }
            if (half && (sticky || (mant & 1))) mant++;
        }
        int E1 = (int)(E ? E : 1);
        v = ldexp((double)mant, E1 - f.bias - 60 + r);
    }
    if (neg) v = -v;
    if (dbl) {
        uint64_t b;
        memcpy(&b, &v, 8);
        return b;
    }
    float fv = (float)v;
    uint32_t b;
    memcpy(&b, &fv, 4);
    return b;
}

static void fill_fx(pass *ps, uint32_t w, uint8_t *pl)
{
    fmt f = fmt_of(ps->esz);
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        uint64_t x[2];
        fx_make(bits_of(ps->src + (base + i) * ps->esz, ps->esz), f, ps->ex[base + i], x);
        memcpy(pl + i * 16, x, 16);
    }
}

static void take_fx(pass *ps, uint32_t w, const uint8_t *pl)
{
    if (!ps->dst) return;
    fmt f = fmt_of(ps->esz);
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        uint64_t x[2];
        memcpy(x, pl + i * 16, 16);
        uint64_t b = fx_value(x, f, ps->ex[base + i]);
        if (ps->esz == 4) {
            uint32_t b4 = (uint32_t)b;
            memcpy(ps->dst + (base + i) * 4, &b4, 4);
        } else {
            memcpy(ps->dst + (base + i) * 8, &b, 8);
        }
    }
}

/* ---- encoded operations: narrow integers, logical ops, MAXLOC/MINLOC ----- *
 * One pass, each element turned into one ALU operand: a 1- or 2-byte
 * integer sign- or zero-extended to 4 bytes (sums wrap to the same low
 * bits, comparisons and bitwise operations are those of the value); a
 * logical operation's operand is 0 or 1, combined by AND, OR or XOR; a
 * pair {value, index} is one 8- or 16-byte unsigned operand ordered as
 * (value, then index, reversed for MAXLOC), so that the ALU's MAX or MIN
 * picks the extreme value with the smallest index. Values keep the
 * order-preserving encodings above (floats: -0 < +0, NaNs beyond the
 * infinities). */
static int int_signed(int type)
{
    return type == COLL_I8 || type == COLL_I16 || type == COLL_I32 || type == COLL_I64;
}

/* An integer element, sign- or zero-extended to 64 bits. */
static uint64_t load_int(const uint8_t *p, int type)
{
    switch (type) {
    case COLL_I8: return (uint64_t)(int64_t)(int8_t)p[0];
    case COLL_U8: return p[0];
    case COLL_I16: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case COLL_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case COLL_I32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    case COLL_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store_int(uint8_t *p, int type, uint64_t v)
{
    size_t n = coll_type_size(type);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A pair's value: its type, and where the index sits. */
static int pair_value(int type, size_t *idx_off)
{
    switch (type) {
    case COLL_2I32: *idx_off = 4; return COLL_I32;
    case COLL_F32_I32: *idx_off = 4; return COLL_F32;
    case COLL_I16_I32: *idx_off = 4; return COLL_I16;
    case COLL_F64_I32: *idx_off = 8; return COLL_F64;
    default: *idx_off = 8; return COLL_I64;
    }
}

/* The operand's width, signedness and ALU operation of an encoded (type, op). */
static void codec(int type, int op, size_t *width, int *sign, int *alu)
{
    static const uint8_t logical[] = {TSIM_TOP_AND, TSIM_TOP_OR, TSIM_TOP_XOR};
    if (is_pair(type)) {
        size_t off;
        int v = pair_value(type, &off);
        *width = v == COLL_F64 || v == COLL_I64 ? 16 : 8;
        *sign = 0;
        *alu = op == COLL_MAXLOC ? TSIM_TOP_MAX : TSIM_TOP_MIN;
    } else if (op >= COLL_LAND) {
        *width = 4, *sign = 0, *alu = logical[op - COLL_LAND];
    } else {
        static const uint8_t arith[] = {TSIM_TOP_ADD, TSIM_TOP_MAX, TSIM_TOP_MIN,
                                        TSIM_TOP_AND, TSIM_TOP_OR, TSIM_TOP_XOR};
        *width = 4, *sign = int_signed(type), *alu = arith[op];
    }
}

static void put_words(uint8_t *o, const uint32_t *w, size_t n)
{
    memcpy(o, w, n * 4);
}

static void enc_elem(const pass *ps, const uint8_t *e, uint8_t *o)
{
    if (!is_pair(ps->type)) {
        uint64_t v = load_int(e, ps->type);
        uint32_t w = ps->op >= COLL_LAND ? v != 0 : (uint32_t)v;
        put_words(o, &w, 1);
        return;
    }
    size_t off;
    int vt = pair_value(ps->type, &off);
    int32_t idx;
    memcpy(&idx, e + off, 4);
    uint32_t ik = (uint32_t)idx ^ 0x80000000u;
    uint32_t w[4] = {ps->op == COLL_MAXLOC ? ~ik : ik, 0, 0, 0};
    if (vt == COLL_F32) {
        w[1] = (uint32_t)enc(bits_of(e, 4), 32);
    } else if (vt == COLL_F64) {
        uint64_t k = enc(bits_of(e, 8), 64);
        w[2] = (uint32_t)k, w[3] = (uint32_t)(k >> 32);
    } else if (vt == COLL_I64) {
        uint64_t k = load_int(e, COLL_I64) ^ (1ull << 63);
        w[2] = (uint32_t)k, w[3] = (uint32_t)(k >> 32);
    } else {
        w[1] = (uint32_t)load_int(e, vt) ^ 0x80000000u;
    }
    put_words(o, w, ps->width / 4);
}

static void dec_elem(const pass *ps, const uint8_t *o, uint8_t *e)
{
    uint32_t w[4] = {0};
    memcpy(w, o, ps->width);
    if (!is_pair(ps->type)) {
        store_int(e, ps->type, ps->op >= COLL_LAND ? w[0] & 1 : w[0]);
        return;
    }
    size_t off;
    int vt = pair_value(ps->type, &off);
    uint32_t ik = ps->op == COLL_MAXLOC ? ~w[0] : w[0];
    int32_t idx = (int32_t)(ik ^ 0x80000000u);
    memcpy(e + off, &idx, 4);
    if (vt == COLL_F32) {
        uint32_t b = (uint32_t)dec(w[1], 32);
        memcpy(e, &b, 4);
    } else if (vt == COLL_F64) {
        uint64_t b = dec((uint64_t)w[3] << 32 | w[2], 64);
        memcpy(e, &b, 8);
    } else if (vt == COLL_I64) {
        store_int(e, COLL_I64, ((uint64_t)w[3] << 32 | w[2]) ^ (1ull << 63));
    } else {
        store_int(e, vt, w[1] ^ 0x80000000u);
    }
}

static void fill_codec(pass *ps, uint32_t w, uint8_t *pl)
{
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) enc_elem(ps, ps->src + (base + i) * ps->esz, pl + i * ps->width);
}

static void take_codec(pass *ps, uint32_t w, const uint8_t *pl)
{
    if (!ps->dst) return;
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) dec_elem(ps, pl + i * ps->width, ps->dst + (base + i) * ps->esz);
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
    if (is_narrow(type) || is_pair(type) || op >= COLL_LAND) {
        int sign, alu;
        codec(type, op, &ps.width, &sign, &alu);
        ps.per = TSIM_TREE_PAYLOAD / ps.width;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu, (int)ps.width, sign, 0, 0, NULL);
        ps.fill = fill_codec;
        ps.take = take_codec;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    if (!is_float(type)) {
        ps.per = TSIM_TREE_PAYLOAD / esz;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu_op[op], (int)esz,
                       type == COLL_I32 || type == COLL_I64, 0, 0, NULL);
        ps.fill = fill_copy;
        ps.take = take_copy;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    if (op != COLL_SUM) {
        ps.per = TSIM_TREE_PAYLOAD / esz;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, alu_op[op], (int)esz, 0, 0, 0, NULL);
        ps.fill = fill_enc;
        ps.take = take_dec;
        ps.npk = npackets(count, ps.per);
        return run_pass(&ps);
    }
    ps.ex = malloc(count * sizeof *ps.ex);
    if (!ps.ex) return -1;
    ps.per = TSIM_TREE_PAYLOAD / 4;
    pl_tree_header(&ps.h, TSIM_TC_COMBINE, TSIM_TOP_MAX, 4, 0, 0, 0, NULL);
    ps.fill = fill_exp;
    ps.take = take_exp;
    ps.npk = npackets(count, ps.per);
    int rc = run_pass(&ps);
    if (rc == 0) {
        ps.per = TSIM_TREE_PAYLOAD / 16;
        pl_tree_header(&ps.h, TSIM_TC_COMBINE, TSIM_TOP_ADD, 16, 1, 0, 0, NULL);
        ps.fill = fill_fx;
        ps.take = take_fx;
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
