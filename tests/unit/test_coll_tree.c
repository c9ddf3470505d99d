/* Collectives on the collective network and the global interrupt
 * (collectives/coll_tree.c) over the real engine: every rank is a thread
 * with its own message layer on an anonymous segment. Each rank checks its
 * own results and counts failures; the test asserts in its own thread. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/coll_tree.h"
#include "machine.h"
#include "torus-sim/tsim_tree.h"
#include "suite.h"

#define MAXR 64

typedef struct trk trk;
typedef struct tworld tworld;
typedef void (*trk_fn)(trk *r);

struct trk {
    tworld *w;
    ml_ctx *ml;
    coll_ctx *c;
    pl_proc pp;
    int rank;
    um_fails f;
    uint64_t t_end, t[8];
    uint64_t out[64]; /* results the test compares across ranks / runs */
};

struct tworld {
    tsim_seg *seg;
    trk r[MAXR];
    int n;
    trk_fn fn;
    tsim_result res;
    tsim_tree_stats st;
};

static void *trk_main(void *a)
{
    trk *r = a;
    r->w->fn(r);
    r->t_end = pl_now(&r->pp);
    coll_finalize(r->c);
    ml_finalize(r->ml);
    pl_close(&r->pp, 0);
    return NULL;
}

/* x*y*z nodes; cpus 1 (CO) or 2 (VN); perm: rank -> node order (NULL: XYZT). */
static tworld *tw_run(int x, int y, int z, int cpus, const int *perm, trk_fn fn)
{
    tworld *w = calloc(1, sizeof *w);
    int n = x * y * z * cpus;
    ck_assert_int_le(n, MAXR);
    w->seg = um_seg(x, y, z, 1, cpus, NULL);
    um_ranks(w->seg, n, perm);
    w->n = n;
    w->fn = fn;
    for (int i = 0; i < n; i++) {
        w->r[i].w = w;
        w->r[i].rank = i;
        pl_open(&w->r[i].pp, w->seg, w->seg->rank_proc[i], 0);
    }
    for (int i = 0; i < n; i++) {
        trk *r = &w->r[i];
        r->ml = ml_init(&r->pp, i, cpus == 2 ? ML_MODE_VN : ML_MODE_CO, NULL, NULL);
        ck_assert_ptr_nonnull(r->ml);
        r->c = coll_init(r->ml);
        ck_assert_ptr_nonnull(r->c);
    }
    tsim_engine *e = um_run(w->seg, n, trk_main, w->r, sizeof *w->r, &w->res);
    tsim_engine_tree_stats(e, &w->st);
    tsim_engine_free(e);
    for (int i = 0; i < n; i++) um_no_fails(&w->r[i].f, i);
    return w;
}

static void tw_free(tworld *w)
{
    tsim_seg_destroy(w->seg);
    free(w);
}

/* ---- every (type, op) pair, counts around a packet ---------------------- */
/* Rank r's element i: something that differs per rank and element and
 * exercises signs and bits. */
static int64_t ival(int r, size_t i) { return ((int64_t)(r * 37 + 11) * (int64_t)(i * 13 + 5)) % 1001 - 500; }
static double dval(int r, size_t i)
{
    return ldexp((double)ival(r, i) + 0.1 * (double)r, (int)(i % 40) - 20);
}

static void put(int type, void *buf, size_t i, int r)
{
    switch (type) {
    case COLL_I32: ((int32_t *)buf)[i] = (int32_t)ival(r, i); break;
    case COLL_U32: ((uint32_t *)buf)[i] = (uint32_t)ival(r, i); break;
    case COLL_I64: ((int64_t *)buf)[i] = ival(r, i) * 1000000007LL; break;
    case COLL_U64: ((uint64_t *)buf)[i] = (uint64_t)(ival(r, i) * 1000000007LL); break;
    case COLL_F32: ((float *)buf)[i] = (float)dval(r, i); break;
    case COLL_F64: ((double *)buf)[i] = dval(r, i); break;
    }
}

static int is_float_type(int type) { return type == COLL_F32 || type == COLL_F64; }

/* Rank r's element i as the three kinds of value it may be compared as. */
static void elem(int type, int r, size_t i, int64_t *v, uint64_t *u, double *d)
{
    *v = 0, *u = 0, *d = 0;
    switch (type) {
    case COLL_I32: *v = (int32_t)ival(r, i); *u = (uint32_t)*v; break;
    case COLL_U32: *u = (uint32_t)ival(r, i); *v = (int64_t)*u; break;
    case COLL_I64: *v = ival(r, i) * 1000000007LL; *u = (uint64_t)*v; break;
    case COLL_U64: *u = (uint64_t)(ival(r, i) * 1000000007LL); *v = (int64_t)*u; break;
    case COLL_F32: *d = (float)dval(r, i); break;
    default: *d = dval(r, i); break;
    }
}

/* What element i combines to over n ranks (floating-point sums: a long
 * double sum, within an ulp of the exact one for these values). */
static void expect(int type, int op, int n, size_t i, void *out)
{
    int64_t si = 0;
    uint64_t su = 0;
    double fd = 0;
    long double fs = 0;
    int sgn = type == COLL_I32 || type == COLL_I64;
    for (int r = 0; r < n; r++) {
        int64_t v;
        uint64_t u;
        double d;
        elem(type, r, i, &v, &u, &d);
        if (r == 0) {
            si = v, su = u, fd = d, fs = d;
            continue;
        }
        switch (op) {
        case COLL_SUM: si += v; su += u; fs += d; break;
        case COLL_MAX:
            if (sgn ? v > si : u > su) si = v, su = u;
            if (d > fd) fd = d;
            break;
        case COLL_MIN:
            if (sgn ? v < si : u < su) si = v, su = u;
            if (d < fd) fd = d;
            break;
        case COLL_BAND: su &= u; break;
        case COLL_BOR: su |= u; break;
        case COLL_BXOR: su ^= u; break;
        }
    }
    if (op == COLL_SUM) fd = (double)fs;
    int bitwise = op >= COLL_BAND;
    switch (type) {
    case COLL_I32: *(int32_t *)out = (int32_t)(bitwise ? (int64_t)su : si); break;
    case COLL_U32: *(uint32_t *)out = (uint32_t)su; break;
    case COLL_I64: *(int64_t *)out = bitwise ? (int64_t)su : si; break;
    case COLL_U64: *(uint64_t *)out = su; break;
    case COLL_F32: *(float *)out = (float)fd; break;
    case COLL_F64: *(double *)out = fd; break;
    }
}

static const size_t counts[] = {0, 1, 15, 16, 17, 63, 64, 65, 200};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static void all_pairs_body(trk *r)
{
    int n = r->w->n;
    /* the 4- and 8-byte types and the arithmetic and bitwise operations;
     * the narrow types, logical and LOC operations: all_encoded_body */
    for (int type = 0; type <= COLL_F64; type++)
        for (int op = 0; op <= COLL_BXOR; op++) {
            if (!coll_tree_takes(type, op)) {
                if (coll_tree_allreduce(r->c, r->out, r->out, 1, type, op) != COLL_ENOTSUP)
                    um_fail(&r->f, "type %d op %d: not refused", type, op);
                continue;
            }
            size_t esz = coll_type_size(type);
            for (size_t k = 0; k < NCOUNTS; k++) {
                size_t cnt = counts[k];
                uint8_t *s = malloc(cnt * esz + 8), *d = malloc(cnt * esz + 8);
                for (size_t i = 0; i < cnt; i++) put(type, s, i, r->rank);
                int in_place = k % 2;
                if (in_place) memcpy(d, s, cnt * esz);
                int rc = coll_tree_allreduce(r->c, in_place ? d : s, d, cnt, type, op);
                if (rc != 0) um_fail(&r->f, "type %d op %d count %zu: rc %d", type, op, cnt, rc);
                for (size_t i = 0; i < cnt && rc == 0; i++) {
                    uint8_t want[8];
                    expect(type, op, n, i, want);
                    if (is_float_type(type) && op == COLL_SUM) {
                        double got = esz == 4 ? *(float *)(d + i * 4) : *(double *)(d + i * 8);
                        double w = esz == 4 ? *(float *)want : *(double *)want;
                        double big = 0, eps = esz == 4 ? FLT_EPSILON : DBL_EPSILON;
                        for (int q = 0; q < n; q++) big = fmax(big, fabs(dval(q, i)));
                        if (fabs(got - w) > fabs(w) * eps + big * eps / 256)
                            um_fail(&r->f, "type %d sum count %zu [%zu]: %.17g, want %.17g", type, cnt, i,
                                     got, w);
                    } else if (memcmp(d + i * esz, want, esz) != 0) {
                        um_fail(&r->f, "type %d op %d count %zu [%zu]: wrong", type, op, cnt, i);
                    }
                }
                free(s);
                free(d);
            }
        }
}

START_TEST(allreduce_all_pairs)
{
    printf("coll_tree: allreduce of every (type, op) on 8 ranks (2x2x2), counts 0, 1, 15-17, 63-65, "
           "200, half in place: integers and MAX/MIN exact, float sums within an ulp; bitwise ops on "
           "floats refused (COLL_ENOTSUP)\n");
    tworld *w = tw_run(2, 2, 2, 1, NULL, all_pairs_body);
    ck_assert_uint_gt(w->st.injected, 0);
    ck_assert_uint_gt(w->st.combined, 0);
    tw_free(w);
}
END_TEST

/* ---- narrow integers, logical operations, MAXLOC/MINLOC ----------------- */
/* Rank r's element i of an integer type, as a 64-bit value (narrow types
 * wrap it; every third is 0, for the logical operations). */
static int64_t nval(int r, size_t i) { return i % 3 == 2 ? 0 : ival(r, i) * 1237; }

static int64_t wrap(int type, int64_t v)
{
    switch (type) {
    case COLL_I8: return (int8_t)v;
    case COLL_U8: return (uint8_t)v;
    case COLL_I16: return (int16_t)v;
    case COLL_U16: return (uint16_t)v;
    case COLL_I32: return (int32_t)v;
    case COLL_U32: return (uint32_t)v;
    default: return v;
    }
}

static void put_int(int type, uint8_t *p, int64_t v)
{
    memcpy(p, &v, coll_type_size(type)); /* little-endian: the low bytes */
}

static int64_t int_ref(int type, int op, int n, size_t i)
{
    int64_t acc = wrap(type, nval(0, i));
    int un = type == COLL_U8 || type == COLL_U16 || type == COLL_U32 || type == COLL_U64;
    if (op >= COLL_LAND) acc = acc != 0;
    for (int r = 1; r < n; r++) {
        int64_t v = wrap(type, nval(r, i));
        switch (op) {
        case COLL_SUM: acc = wrap(type, (int64_t)((uint64_t)acc + (uint64_t)v)); break;
        case COLL_MAX: if (un ? (uint64_t)v > (uint64_t)acc : v > acc) acc = v; break;
        case COLL_MIN: if (un ? (uint64_t)v < (uint64_t)acc : v < acc) acc = v; break;
        case COLL_BAND: acc &= v; break;
        case COLL_BOR: acc |= v; break;
        case COLL_BXOR: acc ^= v; break;
        case COLL_LAND: acc = acc && v; break;
        case COLL_LOR: acc = acc || v; break;
        case COLL_LXOR: acc = !acc != !v; break;
        }
    }
    return wrap(type, acc);
}

/* Pair element i of rank r: few distinct values, so that ties pick the
 * smallest index; indices descend with the rank and go negative. */
static double pval(int r, size_t i) { return (double)(((r * 7 + (int)i) % 5) - 2) * (i % 2 ? 0.5 : 3); }
static int32_t pidx(int r, size_t i) { return 100 - 40 * r + (int32_t)i; }

static void put_pair(int type, uint8_t *e, int r, size_t i)
{
    double v = pval(r, i);
    int32_t idx = pidx(r, i);
    memset(e, 0, coll_type_size(type));
    switch (type) {
    case COLL_2I32: { int32_t x = (int32_t)(v * 2); memcpy(e, &x, 4); memcpy(e + 4, &idx, 4); break; }
    case COLL_I16_I32: { int16_t x = (int16_t)(v * 2); memcpy(e, &x, 2); memcpy(e + 4, &idx, 4); break; }
    case COLL_F32_I32: { float x = (float)v; memcpy(e, &x, 4); memcpy(e + 4, &idx, 4); break; }
    case COLL_F64_I32: memcpy(e, &v, 8); memcpy(e + 8, &idx, 4); break;
    default: { int64_t x = (int64_t)(v * 2) * 1000000007LL; memcpy(e, &x, 8); memcpy(e + 8, &idx, 4); break; }
    }
}

static void pair_ref(int type, int op, int n, size_t i, uint8_t *out)
{
    int best = 0;
    for (int r = 1; r < n; r++) {
        double a = pval(r, i), b = pval(best, i);
        if (op == COLL_MAXLOC ? a > b : a < b) best = r;
        else if (a == b && pidx(r, i) < pidx(best, i)) best = r;
    }
    put_pair(type, out, best, i);
}

static void all_encoded_body(trk *r)
{
    int n = r->w->n;
    static const int itypes[] = {COLL_I8, COLL_U8, COLL_I16, COLL_U16, COLL_I32, COLL_U64};
    static const int ptypes[] = {COLL_2I32, COLL_I16_I32, COLL_F32_I32, COLL_F64_I32, COLL_I64_I32};
    for (int k = 0; k < 6 + 5; k++) {
        int type = k < 6 ? itypes[k] : ptypes[k - 6];
        size_t esz = coll_type_size(type);
        for (int op = 0; op < COLL_NOPS; op++) {
            if (!coll_tree_takes(type, op)) {
                if (k < 6 ? op < COLL_MAXLOC : op >= COLL_MAXLOC)
                    um_fail(&r->f, "type %d op %d: refused", type, op);
                continue;
            }
            for (size_t c = 0; c < NCOUNTS; c++) {
                size_t cnt = counts[c];
                uint8_t *s = calloc(cnt + 1, esz), *d = calloc(cnt + 1, esz), want[16];
                for (size_t i = 0; i < cnt; i++) {
                    if (k < 6) put_int(type, s + i * esz, nval(r->rank, i));
                    else put_pair(type, s + i * esz, r->rank, i);
                }
                if (c % 2) memcpy(d, s, cnt * esz);
                int rc = coll_tree_allreduce(r->c, c % 2 ? d : s, d, cnt, type, op);
                if (rc != 0) um_fail(&r->f, "type %d op %d count %zu: rc %d", type, op, cnt, rc);
                for (size_t i = 0; i < cnt && rc == 0; i++) {
                    if (k < 6) put_int(type, want, int_ref(type, op, n, i));
                    else pair_ref(type, op, n, i, want);
                    if (memcmp(d + i * esz, want, esz) != 0) {
                        um_fail(&r->f, "type %d op %d count %zu [%zu]: wrong", type, op, cnt, i);
                        break;
                    }
                }
                free(s);
                free(d);
            }
        }
    }
}

START_TEST(allreduce_encoded)
{
    printf("coll_tree: allreduce of 1- and 2-byte integers (every op), logical AND/OR/XOR of 1..8-byte "
           "integers, MAXLOC/MINLOC of the five pair types on 8 ranks, counts 0..200, half in place: "
           "exact against a C reference (ties: the smallest index); other pairs refused\n");
    tworld *w = tw_run(2, 2, 2, 1, NULL, all_encoded_body);
    ck_assert_uint_gt(w->st.combined, 0);
    tw_free(w);
}
END_TEST

/* ---- floating-point sums: exact, the same everywhere, whatever the mapping */
static const double cancel[8] = {1e16, 1, -1e16, 3, 1e16, 0.25, -1e16, 0.5};

static void fsum_body(trk *r)
{
    double v[64], f[64];
    for (int i = 0; i < 64; i++) v[i] = i == 0 ? cancel[r->rank] : dval(r->rank, (size_t)i) * (i % 3 ? 1 : -1);
    if (coll_tree_allreduce(r->c, v, f, 64, COLL_F64, COLL_SUM) != 0) um_fail(&r->f, "allreduce");
    if (f[0] != 4.75) um_fail(&r->f, "1e16 + 1 - 1e16 + 3 + 1e16 + 0.25 - 1e16 + 0.5 = %.17g, want 4.75", f[0]);
    memcpy(r->out, f, sizeof f);
}

/* fn on x*y*z with cpus processors a node, in XYZT order and in perm's:
 * every rank's first bytes of out the same in both. */
static void same_bits(int x, int y, int z, int cpus, const int *perm, trk_fn fn, size_t bytes)
{
    tworld *a = tw_run(x, y, z, cpus, NULL, fn);
    tworld *b = tw_run(x, y, z, cpus, perm, fn);
    for (int i = 0; i < a->n; i++) {
        ck_assert_mem_eq(a->r[i].out, a->r[0].out, bytes);
        ck_assert_mem_eq(b->r[i].out, a->r[0].out, bytes);
    }
    tw_free(a);
    tw_free(b);
}

START_TEST(float_sum_identical)
{
    printf("coll_tree: a double sum is exact where a left-to-right sum is not (1e16 + 1 - 1e16 + 3 "
           "+ 1e16 + 0.25 - 1e16 + 0.5 = 4.75, not 0.5) and bitwise the same on every rank and under "
           "a shuffled mapping\n");
    static const int perm[8] = {5, 2, 7, 0, 3, 6, 1, 4};
    same_bits(2, 2, 2, 1, perm, fsum_body, 64 * 8);
}
END_TEST

/* ---- broadcast and reduce -------------------------------------------------- */
static void bcast_body(trk *r)
{
    static const size_t lens[] = {0, 1, 255, 256, 257, 5000};
    for (int k = 0; k < 6; k++) {
        size_t len = lens[k];
        int root = (k * 3) % r->w->n;
        uint8_t *b = malloc(len + 1);
        for (size_t i = 0; i < len; i++) b[i] = r->rank == root ? (uint8_t)(i * 7 + k) : 0xee;
        if (coll_tree_bcast(r->c, b, len, root) != 0) um_fail(&r->f, "bcast %zu", len);
        for (size_t i = 0; i < len; i++)
            if (b[i] != (uint8_t)(i * 7 + k)) {
                um_fail(&r->f, "bcast %zu from %d: byte %zu is %u", len, root, i, b[i]);
                break;
            }
        free(b);
    }
    int32_t v[3] = {r->rank, -r->rank, 7}, out[3] = {-1, -1, -1};
    if (coll_tree_reduce(r->c, v, out, 3, COLL_I32, COLL_SUM, 5) != 0) um_fail(&r->f, "reduce");
    int n = r->w->n;
    if (r->rank == 5 && (out[0] != n * (n - 1) / 2 || out[1] != -n * (n - 1) / 2 || out[2] != 7 * n))
        um_fail(&r->f, "reduce at the root: %d %d %d", out[0], out[1], out[2]);
    if (r->rank != 5 && (out[0] != -1 || out[1] != -1 || out[2] != -1))
        um_fail(&r->f, "reduce wrote a non-root's buffer");
}

START_TEST(bcast_and_reduce)
{
    printf("coll_tree: broadcasts of 0, 1, 255, 256, 257 and 5,000 bytes from different roots on "
           "2x2x2 arrive intact; a reduce to rank 5 leaves the others' buffers alone\n");
    tworld *w = tw_run(2, 2, 2, 1, NULL, bcast_body);
    tw_free(w);
}
END_TEST

/* ---- broadcast of a layout --------------------------------------------------- *
 * The root's 5,000 bytes in pieces of 100 every 128 bytes, everyone else's
 * in pieces of 37 every 50: the data lands in the pieces (gaps untouched),
 * and each processor's ddt_cycles are ddt_seg_cycles times the pieces
 * each 256-byte packet touches, counted here independently. */
enum { LB_LEN = 5000 };

static void lb_shape(int root_side, size_t *piece, size_t *stride)
{
    *piece = root_side ? 100 : 37;
    *stride = root_side ? 128 : 50;
}

/* Pieces the packets of len bytes touch, summed over the packets. */
static uint64_t lb_segs(size_t piece, size_t len)
{
    uint64_t n = 0;
    for (size_t off = 0; off < len; off += TSIM_TREE_PAYLOAD) {
        size_t end = len - off < TSIM_TREE_PAYLOAD ? len : off + TSIM_TREE_PAYLOAD;
        n += (end - 1) / piece - off / piece + 1;
    }
    return n;
}

static void layout_bcast_body(trk *r)
{
    for (int k = 0; k < 2; k++) {
        int root = k ? r->w->n - 1 : 1, me_root = r->rank == root;
        size_t piece, stride;
        lb_shape(me_root, &piece, &stride);
        size_t nseg = (LB_LEN + piece - 1) / piece, span = nseg * stride;
        uint8_t *b = malloc(span);
        struct iovec *iov = malloc(nseg * sizeof *iov);
        memset(b, 0xee, span);
        for (size_t i = 0; i < nseg; i++) {
            iov[i].iov_base = b + i * stride;
            iov[i].iov_len = i + 1 < nseg ? piece : LB_LEN - i * piece;
        }
        if (me_root)
            for (size_t i = 0; i < LB_LEN; i++) b[(i / piece) * stride + i % piece] = (uint8_t)(i * 7 + k);
        coll_layout l = {NULL, iov, nseg, LB_LEN};
        if (coll_tree_bcast_layout(r->c, &l, root) != 0) um_fail(&r->f, "layout bcast from %d", root);
        for (size_t i = 0; i < span; i++) {
            size_t seg = i / stride, in = i % stride, d = seg * piece + in;
            int data = in < piece && d < LB_LEN;
            if (b[i] != (data ? (uint8_t)(i / stride * piece * 7 + in * 7 + k) : 0xee)) {
                um_fail(&r->f, "layout bcast from %d: byte %zu (%s) is %u", root, i, data ? "data" : "gap", b[i]);
                break;
            }
        }
        free(b);
        free(iov);
    }
}

static tworld *layout_bcast_run(int cpus, int proxy)
{
    setenv("BGLEMU_PROXY", proxy ? "1" : "0", 1);
    tworld *w = cpus == 1 ? tw_run(2, 2, 2, 1, NULL, layout_bcast_body)
                          : tw_run(2, 2, 1, 2, NULL, layout_bcast_body);
    unsetenv("BGLEMU_PROXY");
    uint64_t seg = w->seg->params.ddt_seg_cycles;
    for (int i = 0; i < w->n; i++) {
        uint64_t want = 0; /* the two broadcasts, from 1 and from n - 1 */
        for (int k = 0; k < 2; k++) {
            size_t piece, stride;
            lb_shape(i == (k ? w->n - 1 : 1), &piece, &stride);
            want += lb_segs(piece, LB_LEN) * seg;
        }
        ck_assert_uint_eq(atomic_load(&w->seg->procs[w->seg->rank_proc[i]].ddt_cycles), want);
    }
    return w;
}

START_TEST(bcast_layout)
{
    printf("coll_tree: broadcasts of 5,000 bytes in 100-byte pieces at the root, 37-byte pieces "
           "elsewhere (CO 2x2x2, VN 2x2x1, roots 1 and n - 1): data in the pieces, gaps untouched, "
           "ddt_cycles = ddt_seg_cycles x the pieces each packet touches (root: 69, others: 155), "
           "the same clocks with BGLEMU_PROXY=0 and with the engine running the pass\n");
    /* 20 packets: no packet boundary falls on a piece's, so each adds one */
    ck_assert_uint_eq(lb_segs(100, LB_LEN), 50 + 19);
    ck_assert_uint_eq(lb_segs(37, LB_LEN), 136 + 19);
    for (int cpus = 1; cpus <= 2; cpus++) {
        tworld *on = layout_bcast_run(cpus, 1), *off = layout_bcast_run(cpus, 0);
        for (int i = 0; i < on->n; i++) ck_assert_uint_eq(on->r[i].t_end, off->r[i].t_end);
        printf("  %s: rank 0 done at %llu cycles\n", cpus == 1 ? "CO" : "VN",
               (unsigned long long)on->r[0].t_end);
        tw_free(on);
        tw_free(off);
    }
}
END_TEST

/* ---- barrier --------------------------------------------------------------- */
static void barrier_body(trk *r)
{
    for (int b = 0; b < 2; b++) {
        pl_charge(&r->pp, (uint64_t)((r->rank * 5 + b) % 8) * 1500);
        r->t[2 * b] = pl_now(&r->pp);
        if (coll_gi_barrier(r->c) != 0) um_fail(&r->f, "barrier");
        r->t[2 * b + 1] = pl_now(&r->pp);
    }
}

static void check_barrier(tworld *w)
{
    const tsim_params *p = &w->seg->params;
    for (int b = 0; b < 2; b++) {
        uint64_t last = 0;
        for (int i = 0; i < w->n; i++)
            if (w->r[i].t[2 * b] > last) last = w->r[i].t[2 * b];
        for (int i = 0; i < w->n; i++) {
            ck_assert_uint_gt(w->r[i].t[2 * b + 1], last + tsim_gi_latency(&w->seg->geom, p));
            ck_assert_uint_eq(w->r[i].t[2 * b + 1], w->r[0].t[2 * b + 1]);
        }
        printf("  barrier %d: last in at %llu, all out at %llu cycles\n", b, (unsigned long long)last,
               (unsigned long long)w->r[0].t[2 * b + 1]);
    }
    ck_assert_uint_eq(w->st.barriers, 2);
}

START_TEST(gi_barrier_co_vn)
{
    printf("coll_tree: global-interrupt barrier, ranks entering up to 10,500 cycles apart: nobody "
           "leaves before the last has entered + the wire latency, all leave at the same cycle (CO "
           "2x2x2, VN 2x2x1)\n");
    tworld *w = tw_run(2, 2, 2, 1, NULL, barrier_body);
    check_barrier(w);
    tw_free(w);
    w = tw_run(2, 2, 1, 2, NULL, barrier_body);
    check_barrier(w);
    tw_free(w);
}
END_TEST

START_TEST(vn_mode)
{
    printf("coll_tree: VN mode (16 ranks on 2x2x2, the node mates combining over the scratchpad "
           "first): every (type, op) pair, broadcasts from cpu-0 and cpu-1 roots, reduce, as in CO\n");
    tworld *w = tw_run(2, 2, 2, 2, NULL, all_pairs_body);
    ck_assert_uint_gt(w->st.injected, 0);
    tw_free(w);
    w = tw_run(2, 2, 2, 2, NULL, bcast_body);
    tw_free(w);
}
END_TEST

static void vn_fsum_body(trk *r)
{
    double v[40], f[40];
    for (int i = 0; i < 40; i++) v[i] = i == 0 ? cancel[r->rank % 8] * (r->rank < 8 ? 1 : -1) : dval(r->rank, (size_t)i);
    if (coll_tree_allreduce(r->c, v, f, 40, COLL_F64, COLL_SUM) != 0) um_fail(&r->f, "allreduce");
    if (f[0] != 0.0) um_fail(&r->f, "sum of x and -x over 16 ranks: %.17g", f[0]);
    memcpy(r->out, f, sizeof f);
}

START_TEST(vn_float_sum_identical)
{
    printf("coll_tree: VN double sums: the same bits on all 16 ranks and under a shuffled mapping "
           "(the mates pair up differently), exact cancellation\n");
    static const int perm[16] = {3, 12, 5, 0, 9, 14, 7, 2, 11, 4, 13, 6, 1, 8, 15, 10};
    same_bits(2, 2, 2, 2, perm, vn_fsum_body, 40 * 8);
}
END_TEST

/* ---- a long vector: pipelined, near the link's bandwidth ---------------------- */
static void big_body(trk *r)
{
    size_t n = (1u << 20) / 4;
    int32_t *v = malloc(n * 4);
    for (size_t i = 0; i < n; i++) v[i] = (int32_t)(i * 3 + (size_t)r->rank);
    uint64_t t0 = pl_now(&r->pp);
    if (coll_tree_allreduce(r->c, v, v, n, COLL_I32, COLL_SUM) != 0) um_fail(&r->f, "allreduce");
    r->t[0] = pl_now(&r->pp) - t0;
    int k = r->w->n;
    for (size_t i = 0; i < n; i++)
        if (v[i] != (int32_t)((uint32_t)(i * 3) * (uint32_t)k + (uint32_t)(k * (k - 1) / 2))) {
            um_fail(&r->f, "element %zu: %d", i, v[i]);
            break;
        }
    free(v);
}

START_TEST(allreduce_1mib)
{
    printf("coll_tree: allreduce of 1 MiB of ints on 4 ranks (2x2x1), in place: exact, pipelined "
           "at >= 90%% of the tree link's 256/532 bytes a cycle\n");
    tworld *w = tw_run(2, 2, 1, 1, NULL, big_body);
    double bpc = (double)(1u << 20) / (double)w->r[0].t[0];
    printf("  %llu cycles: %.1f MB/s at 700 MHz (the link: %.1f)\n", (unsigned long long)w->r[0].t[0],
           bpc * 700, 256.0 / 532 * 700);
    ck_assert(bpc >= 0.9 * 256.0 / 532);
    tw_free(w);
}
END_TEST

/* VN mode with the engine running the passes (COLL_PROG_TREE_VN): 64 KiB
 * int and double sums (the double in two passes, back to back), a 20 KiB
 * broadcast from a cpu-1 root and one from a cpu-0 root, each rank's
 * result kept in out[] for the comparison. */
static void vn_engine_body(trk *r)
{
    size_t n = 16384;
    int32_t *v = malloc(n * 4);
    double *d = malloc(n * 8);
    uint8_t *b = malloc(20000);
    for (size_t i = 0; i < n; i++) v[i] = (int32_t)(i * 5 + (size_t)r->rank), d[i] = dval(r->rank, i);
    if (coll_tree_allreduce(r->c, v, v, n, COLL_I32, COLL_SUM) != 0) um_fail(&r->f, "int allreduce");
    r->t[0] = pl_now(&r->pp);
    if (coll_tree_allreduce(r->c, d, d, n / 2, COLL_F64, COLL_SUM) != 0) um_fail(&r->f, "double allreduce");
    r->t[1] = pl_now(&r->pp);
    int k = r->w->n;
    for (size_t i = 0; i < n; i++)
        if (v[i] != (int32_t)((uint32_t)(i * 5) * (uint32_t)k + (uint32_t)(k * (k - 1) / 2))) {
            um_fail(&r->f, "int element %zu: %d", i, v[i]);
            break;
        }
    for (int root = 3; root >= 2; root--) { /* proc 2 r + c: rank 3 is a cpu 1, rank 2 a cpu 0 */
        for (size_t i = 0; i < 20000; i++) b[i] = r->rank == root ? (uint8_t)(i * 3 + root) : 0;
        if (coll_tree_bcast(r->c, b, 20000, root) != 0) um_fail(&r->f, "bcast from %d", root);
        for (size_t i = 0; i < 20000; i++)
            if (b[i] != (uint8_t)(i * 3 + root)) {
                um_fail(&r->f, "bcast from %d: byte %zu is %u", root, i, b[i]);
                break;
            }
    }
    memcpy(r->out, d, sizeof r->out); /* bits the other run must give too */
    free(v);
    free(d);
    free(b);
}

START_TEST(vn_engine_parity)
{
    printf("coll_tree: VN passes run by the engine (2x2x1, 8 ranks: 64 KiB int and double sums, "
           "20 KB broadcasts from a cpu-1 and a cpu-0 root): the same results and clocks as with "
           "BGLEMU_PROXY=0, the engine reading the scratchpad halves, and fewer wakes\n");
    tworld *w[2];
    for (int proxy = 0; proxy < 2; proxy++) {
        setenv("BGLEMU_PROXY", proxy ? "1" : "0", 1);
        w[proxy] = tw_run(2, 2, 1, 2, NULL, vn_engine_body);
        unsetenv("BGLEMU_PROXY");
    }
    for (int i = 0; i < w[0]->n; i++) {
        ck_assert_uint_eq(w[0]->r[i].t[0], w[1]->r[i].t[0]);
        ck_assert_uint_eq(w[0]->r[i].t[1], w[1]->r[i].t[1]);
        ck_assert_uint_eq(w[0]->r[i].t_end, w[1]->r[i].t_end);
        ck_assert(memcmp(w[0]->r[i].out, w[1]->r[i].out, sizeof w[0]->r[i].out) == 0);
    }
    ck_assert_uint_eq(w[0]->res.end_time, w[1]->res.end_time);
    ck_assert_uint_eq(w[0]->res.packets_delivered, w[1]->res.packets_delivered);
    ck_assert_uint_eq(w[0]->st.injected, w[1]->st.injected);
    ck_assert_uint_eq(w[0]->res.proxy_read, 0);
    ck_assert_uint_gt(w[1]->res.proxy_read, 0);
    ck_assert_uint_lt(w[1]->res.wakes * 4, w[0]->res.wakes);
    printf("  end %llu cycles both ways; wakes %llu -> %llu, the engine read %llu and sent %llu packets\n",
           (unsigned long long)w[1]->res.end_time, (unsigned long long)w[0]->res.wakes,
           (unsigned long long)w[1]->res.wakes, (unsigned long long)w[1]->res.proxy_read,
           (unsigned long long)w[1]->res.proxy_sent);
    tw_free(w[0]);
    tw_free(w[1]);
}
END_TEST

Suite *coll_tree_suite(void)
{
    Suite *s = suite_create("coll_tree");
    UM_TCASE(s, "coll_tree", 120, allreduce_all_pairs, allreduce_encoded, float_sum_identical,
             bcast_and_reduce, bcast_layout, gi_barrier_co_vn, vn_mode, vn_float_sum_identical,
             vn_engine_parity, allreduce_1mib);
    return s;
}
