/* The collective network's operands: how each element of a combine
 * becomes what the tree's ALU adds, compares or masks, and back, as the
 * fill and take of a pass (coll_tree.c runs the passes; coll_tree.h and
 * docs/collectives.md give the model and the float sum's error bound).
 * Apart from the pass loop because none of it depends on how the
 * packets travel: the same bits on every rank, in CO or VN mode. */
#include <math.h>
#include <string.h>

#include "coll_internal.h"
#include "coll_tree.h"

static size_t elems(const coll_pass *ps, uint32_t w)
{
    size_t first = (size_t)w * ps->per;
    return ps->count - first < ps->per ? ps->count - first : ps->per;
}

/* ---- integers: one pass ------------------------------------------------- */
void coll_tree_fill_copy(coll_pass *ps, uint32_t w, uint8_t *pl)
{
    memcpy(pl, ps->src + (size_t)w * ps->per * ps->esz, elems(ps, w) * ps->esz);
}

void coll_tree_take_copy(coll_pass *ps, uint32_t w, const uint8_t *pl)
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

void coll_tree_fill_enc(coll_pass *ps, uint32_t w, uint8_t *pl)
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

void coll_tree_take_dec(coll_pass *ps, uint32_t w, const uint8_t *pl)
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

void coll_tree_fill_exp(coll_pass *ps, uint32_t w, uint8_t *pl)
{
    fmt f = fmt_of(ps->esz);
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        uint32_t e = (uint32_t)(bits_of(ps->src + (base + i) * ps->esz, ps->esz) >> f.mbits) & f.emax;
        memcpy(pl + i * 4, &e, 4);
    }
}

void coll_tree_take_exp(coll_pass *ps, uint32_t w, const uint8_t *pl)
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

void coll_tree_fill_fx(coll_pass *ps, uint32_t w, uint8_t *pl)
{
    fmt f = fmt_of(ps->esz);
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) {
        uint64_t x[2];
        fx_make(bits_of(ps->src + (base + i) * ps->esz, ps->esz), f, ps->ex[base + i], x);
        memcpy(pl + i * 16, x, 16);
    }
}

void coll_tree_take_fx(coll_pass *ps, uint32_t w, const uint8_t *pl)
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
void coll_tree_codec(int type, int op, size_t *width, int *sign, int *alu)
{
    static const uint8_t logical[] = {TSIM_TOP_AND, TSIM_TOP_OR, TSIM_TOP_XOR};
    if (coll_is_pair(type)) {
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

static void enc_elem(const coll_pass *ps, const uint8_t *e, uint8_t *o)
{
    if (!coll_is_pair(ps->type)) {
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

static void dec_elem(const coll_pass *ps, const uint8_t *o, uint8_t *e)
{
    uint32_t w[4] = {0};
    memcpy(w, o, ps->width);
    if (!coll_is_pair(ps->type)) {
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

void coll_tree_fill_codec(coll_pass *ps, uint32_t w, uint8_t *pl)
{
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) enc_elem(ps, ps->src + (base + i) * ps->esz, pl + i * ps->width);
}

void coll_tree_take_codec(coll_pass *ps, uint32_t w, const uint8_t *pl)
{
    if (!ps->dst) return;
    size_t n = elems(ps, w), base = (size_t)w * ps->per;
    for (size_t i = 0; i < n; i++) dec_elem(ps, pl + i * ps->width, ps->dst + (base + i) * ps->esz);
}
