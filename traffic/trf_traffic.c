/* Synthetic traffic: patterns, arrivals, packet contents and the verifying
 * sink. Everything here is called from the engine thread, in simulated-time
 * order, and draws only from per-rank PRNG streams seeded from cfg.seed, so a
 * run is a pure function of its configuration (no rand(), no host time). */
#include "trf_traffic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_EXACT 65536 /* latencies below this are counted exactly */

typedef struct tsrc {
    uint64_t rng[4];     /* arrivals, destinations, sizes, routing */
    uint64_t seq;        /* packets generated so far */
    uint64_t t;          /* generation time of the last packet */
    double clock;        /* exponential arrivals: exact (fractional) clock */
    uint64_t sink_rng[4];/* consumer jitter at this rank as a sink */
    uint64_t sink_busy;  /* the consumer is busy until then */
} tsrc;

struct trf_traffic {
    tsim_geom g;
    tsim_params prm;
    trf_cfg cfg;
    int n;
    int bits;            /* log2 N for the bit patterns */
    double lambda;       /* packets per cycle per source; 0: saturate */
    double log1m_lambda; /* log1p(-lambda): the geometric gaps' divisor, once */
    double mean_ser, mean_payload;
    uint64_t t_begin, t_end;
    tsrc *src;
    uint8_t *seen;       /* N * K bits: (src, seq) delivered */
    uint8_t (*xyz)[3];   /* each rank's node's coordinates: no divisions per packet */
    uint32_t *last_det, *last_ad, *last_hp; /* per (src, dst): highest seq + 1, or NULL */
    /* counters */
    uint64_t delivered, duplicated, corrupted, misrouted, reord_det, reord_ad;
    uint64_t payload, win_payload, win_wire, last_arrival;
    uint64_t measured, lat_sum, lat_max;
    uint64_t *hist;      /* HIST_EXACT counters */
    uint64_t *big;       /* latencies >= HIST_EXACT */
    size_t nbig, capbig;
};

/* ---- PRNG ------------------------------------------------------------- */
uint64_t trf_splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t trf_rand(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static void seed4(uint64_t s[4], uint64_t seed, uint64_t stream)
{
    uint64_t st = seed ^ (stream * 0xd1b54a32d192ed03ull);
    for (int i = 0; i < 4; i++) s[i] = trf_splitmix(&st);
}

/* Uniform in 0..n-1 (multiply-shift: no division, negligible bias). */
static inline uint64_t below(uint64_t s[4], uint64_t n)
{
    return (uint64_t)(((unsigned __int128)trf_rand(s) * n) >> 64);
}

/* Uniform in (0, 1]: never 0, so log() is finite. */
static inline double unit_open0(uint64_t s[4])
{
    return (double)((trf_rand(s) >> 11) + 1) * 0x1.0p-53;
}

/* ---- configuration ---------------------------------------------------- */
static const char *const pattern_names[TRF_NPATTERNS] = {
    "uniform", "transpose", "bitrev", "neighbor", "hotspot", "alltoall"};

int trf_pattern_parse(const char *name)
{
    for (int i = 0; i < TRF_NPATTERNS; i++)
        if (!strcmp(name, pattern_names[i])) return i;
    return -1;
}

const char *trf_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < TRF_NPATTERNS ? pattern_names[pattern] : "?";
}

void trf_cfg_default(trf_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->pattern = TRF_UNIFORM;
    c->load = 0.5;
    c->arrivals = TRF_BERNOULLI;
    c->routing = TRF_DET;
    c->chunks = TSIM_MAX_CHUNKS;
    c->packets = 1000;
    c->seed = 1;
    c->hot_frac = 0.25;
    c->warmup = 0.1;
}

static int log2_exact(int n)
{
    int b = 0;
    while ((1 << b) < n) b++;
    return (1 << b) == n ? b : -1;
}

trf_traffic *trf_new(const tsim_geom *g, const tsim_params *p,
                     const trf_cfg *cfg, char *err, size_t errlen)
{
    int nnodes = g->dim[0] * g->dim[1] * g->dim[2];
    const trf_cfg *c = cfg;
    const char *pn = trf_pattern_name(c->pattern);
#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return NULL; } while (0)
    if (c->pattern < 0 || c->pattern >= TRF_NPATTERNS) FAIL("unknown pattern");
    if (c->nprocs < 1 || c->nprocs > nnodes)
        FAIL("%d processors do not fit %d nodes (one per node)", c->nprocs, nnodes);
    if (!(c->load >= 0 && c->load <= TSIM_NPORTS))
        FAIL("load %g out of range 0..%d (fraction of one link's bandwidth)", c->load, TSIM_NPORTS);
    if (c->chunks < 0 || c->chunks > TSIM_MAX_CHUNKS) FAIL("packet size must be 1..8 chunks");
    if (c->packets < 1 || c->packets > UINT32_MAX) FAIL("packets per source must be 1..%u", UINT32_MAX);
    if (!(c->warmup >= 0 && c->warmup < 0.5)) FAIL("warm-up must be in [0, 0.5)");
    if (!(c->hot_frac >= 0 && c->hot_frac <= 1)) FAIL("hotspot fraction must be in [0, 1]");
    if (!(c->hp_frac >= 0 && c->hp_frac <= 1)) FAIL("high-priority fraction must be in [0, 1]");
    if (c->routing < TRF_DET || c->routing > TRF_MIXED) FAIL("unknown routing");
    if (c->arrivals != TRF_BERNOULLI && c->arrivals != TRF_EXPONENTIAL)
        FAIL("unknown arrival process");
    int bits = log2_exact(c->nprocs);
    switch (c->pattern) {
    case TRF_UNIFORM:
    case TRF_HOTSPOT:
    case TRF_ALLTOALL:
        if (c->nprocs < 2) FAIL("pattern %s needs at least 2 processors", pn);
        break;
    case TRF_TRANSPOSE:
    case TRF_BITREV:
        if (bits < 1) FAIL("pattern %s needs a power-of-two processor count >= 2, not %d", pn,
                           c->nprocs);
        break;
    case TRF_NEIGHBOR:
        if (c->nprocs != nnodes) FAIL("pattern neighbor needs one processor on every node (-np %d)",
                                      nnodes);
        break;
    }
#undef FAIL
    trf_traffic *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    t->g = *g;
    t->g.nnodes = nnodes;
    t->prm = *p;
    t->cfg = *c;
    t->n = c->nprocs;
    t->bits = bits;
    int lo = c->chunks ? c->chunks : 1, hi = c->chunks ? c->chunks : TSIM_MAX_CHUNKS;
    for (int k = lo; k <= hi; k++) {
        t->mean_ser += (double)tsim_ser_cycles(p, k) / (hi - lo + 1);
        t->mean_payload += (double)(k * TSIM_CHUNK - TSIM_HDR_BYTES) / (hi - lo + 1);
    }
    if (c->load > 0) {
        t->lambda = c->load / t->mean_ser;
        if (t->lambda < 1) t->log1m_lambda = log1p(-t->lambda);
        double period = (double)c->packets / t->lambda;
        t->t_begin = (uint64_t)(c->warmup * period);
        t->t_end = (uint64_t)((1 - c->warmup) * period);
        if (t->t_end <= t->t_begin) t->t_end = t->t_begin + 1;
    }
    size_t seen_bytes = ((size_t)t->n * c->packets + 7) / 8;
    t->src = calloc((size_t)t->n, sizeof *t->src);
    t->seen = calloc(seen_bytes, 1);
    t->hist = calloc(HIST_EXACT, sizeof *t->hist);
    t->xyz = calloc((size_t)t->n, sizeof *t->xyz);
    if (t->n <= 1024) { /* order tracking costs 8 N^2 bytes */
        t->last_det = calloc((size_t)t->n * t->n, sizeof *t->last_det);
        t->last_ad = calloc((size_t)t->n * t->n, sizeof *t->last_ad);
        t->last_hp = calloc((size_t)t->n * t->n, sizeof *t->last_hp);
    }
    if (!t->src || !t->seen || !t->hist || !t->xyz ||
        (t->n <= 1024 && (!t->last_det || !t->last_ad || !t->last_hp))) {
        trf_free(t);
        snprintf(err, errlen, "out of memory for %d x %llu packets", c->nprocs,
                 (unsigned long long)c->packets);
        return NULL;
    }
    for (int r = 0; r < t->n; r++) {
        int xyz[3];
        tsim_coords(&t->g, r, xyz);
        for (int i = 0; i < 3; i++) t->xyz[r][i] = (uint8_t)xyz[i];
        seed4(t->src[r].rng, c->seed, 2 * (uint64_t)r + 1);
        seed4(t->src[r].sink_rng, c->seed, 2 * (uint64_t)r + 2);
    }
    return t;
}

void trf_free(trf_traffic *t)
{
    if (!t) return;
    free(t->src);
    free(t->seen);
    free(t->xyz);
    free(t->hist);
    free(t->big);
    free(t->last_det);
    free(t->last_ad);
    free(t->last_hp);
    free(t);
}

/* ---- patterns --------------------------------------------------------- */
static int uniform_other(const trf_traffic *t, int src, uint64_t rng[4])
{
    int d = (int)below(rng, (uint64_t)t->n - 1);
    return d >= src ? d + 1 : d;
}

int trf_dest(const trf_traffic *t, int src, uint64_t j, uint64_t rng[4])
{
    int n = t->n, b = t->bits;
    switch (t->cfg.pattern) {
    case TRF_TRANSPOSE: { /* swap the halves of the rank's bits */
        int h = b / 2;
        return (int)((((unsigned)src << h) | ((unsigned)src >> (b - h))) & (unsigned)(n - 1));
    }
    case TRF_BITREV: {
        unsigned r = 0;
        for (int i = 0; i < b; i++) r |= (((unsigned)src >> i) & 1u) << (b - 1 - i);
        return (int)r;
    }
    case TRF_NEIGHBOR: {
        int c[3];
        tsim_coords(&t->g, src, c);
        for (int i = 0; i < 3; i++) c[i] = (c[i] + 1) % t->g.dim[i];
        return tsim_node_of(&t->g, c[0], c[1], c[2]);
    }
    case TRF_HOTSPOT:
        /* 53-bit comparison: exact for fractions like 0.25 */
        if (src != 0 && (double)(trf_rand(rng) >> 11) * 0x1.0p-53 < t->cfg.hot_frac)
            return 0;
        return uniform_other(t, src, rng);
    case TRF_ALLTOALL:
        return (int)((src + 1 + j % (uint64_t)(n - 1)) % (uint64_t)n);
    default:
        return uniform_other(t, src, rng);
    }
}

/* ---- packet contents -------------------------------------------------- */
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Covers the header fields the sink relies on: (src, seq) in the software
 * header, destination, size and flags. Payload bytes 0..7 hold it; the
 * fill after it is checked word by word against its regenerated value. */
static uint64_t header_sum(const tsim_pkt *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = (h ^ get32(k->sw)) * 0x100000001b3ull;
    h = (h ^ get32(k->sw + 4)) * 0x100000001b3ull;
    h = (h ^ ((uint64_t)k->hw.dst[0] | (uint64_t)k->hw.dst[1] << 8 | (uint64_t)k->hw.dst[2] << 16 |
              (uint64_t)k->hw.chunks << 24 | (uint64_t)k->hw.flags << 32)) * 0x100000001b3ull;
    return trf_splitmix(&h);
}

/* The fill's seed: a different one for every (seed, src, seq). */
static inline uint64_t fill_seed(const trf_traffic *t, uint32_t src, uint32_t seq)
{
    return trf_splitmix(&(uint64_t){t->cfg.seed ^ ((uint64_t)src << 32 | seq)});
}

/* The fill: word i (a byte offset) is fs ^ i * K, a different value at
 * every offset of every packet, so a word damaged, moved or taken from
 * another packet shows. Add and xor only, two words per vector step:
 * writing and checking it cost a few instructions a word (the generator
 * is not the network, and it runs twice per packet). */
#define FILL_K 0x9e3779b97f4a7c15ull
typedef uint64_t fill_v __attribute__((vector_size(16)));

static void fill_put(tsim_pkt *k, uint64_t fs, int len)
{
    fill_v x, ik = {8 * FILL_K, 16 * FILL_K};
    const fill_v step = {16 * FILL_K, 16 * FILL_K}, f = {fs, fs};
    int i = 8;
#pragma GCC unroll 4
    for (; i + 16 <= len; i += 16) {
        x = f ^ ik;
        memcpy(k->payload + i, &x, 16);
        ik += step;
    }
    if (i < len) {
        uint64_t w = fs ^ (uint64_t)i * FILL_K;
        memcpy(k->payload + i, &w, 8);
    }
}

/* Nonzero if any fill word of k differs from what its source wrote. */
static uint64_t fill_diff(const tsim_pkt *k, uint64_t fs, int len)
{
    fill_v d = {0, 0}, ik = {8 * FILL_K, 16 * FILL_K};
    const fill_v step = {16 * FILL_K, 16 * FILL_K}, f = {fs, fs};
    int i = 8;
#pragma GCC unroll 4
    for (; i + 16 <= len; i += 16) {
        fill_v w;
        memcpy(&w, k->payload + i, 16);
        d |= w ^ f ^ ik;
        ik += step;
    }
    uint64_t r = d[0] | d[1];
    if (i < len) {
        uint64_t w;
        memcpy(&w, k->payload + i, 8);
        r |= w ^ fs ^ (uint64_t)i * FILL_K;
    }
    return r;
}

static int traffic_next(void *ctx, int proc, uint64_t *tp, tsim_pkt *k, int *fifo)
{
    trf_traffic *t = ctx;
    int r = proc / TSIM_CPUS;
    tsrc *s = &t->src[r];
    if (proc % TSIM_CPUS || r >= t->n || s->seq >= t->cfg.packets) return 0;
    /* arrival time */
    if (t->lambda > 0) {
        if (t->cfg.arrivals == TRF_EXPONENTIAL) {
            s->clock += -log(unit_open0(s->rng)) / t->lambda;
            s->t = (uint64_t)s->clock;
        } else {
            /* Bernoulli trial every cycle: the gap to the next success is
             * geometric, drawn by inversion instead of one draw per cycle. */
            uint64_t gap = 1;
            if (t->lambda < 1)
                gap += (uint64_t)floor(log(unit_open0(s->rng)) / t->log1m_lambda);
            s->t = s->seq ? s->t + gap : gap - 1;
        }
    }
    *tp = s->t;
    uint64_t j = s->seq++;
    int d = trf_dest(t, r, j, s->rng);
    int chunks = t->cfg.chunks ? t->cfg.chunks : 1 + (int)below(s->rng, TSIM_MAX_CHUNKS);
    unsigned flags = t->cfg.routing == TRF_ADAPTIVE ? TSIM_F_DYNAMIC
                     : t->cfg.routing == TRF_MIXED ? (below(s->rng, 2) ? TSIM_F_DYNAMIC : 0)
                                                            : 0;
    /* drawn only when asked for, so hp_frac 0 leaves every other run's
     * random stream (and output) unchanged */
    if (t->cfg.hp_frac > 0 && (double)(trf_rand(s->rng) >> 11) * 0x1.0p-53 < t->cfg.hp_frac)
        flags = TSIM_F_HP;
    memset(&k->hw, 0, sizeof k->hw);
    memcpy(k->hw.dst, t->xyz[d], 3);
    k->hw.chunks = (uint8_t)chunks;
    k->hw.flags = (uint8_t)flags;
    put32(k->sw, (uint32_t)r);
    put32(k->sw + 4, (uint32_t)j);
    int len = chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
    fill_put(k, fill_seed(t, (uint32_t)r, (uint32_t)j), len);
    uint64_t sum = header_sum(k);
    memcpy(k->payload, &sum, 8);
    /* one FIFO per destination class keeps each pair's packets in one queue */
    *fifo = flags & TSIM_F_HP ? TSIM_INJ_HP : d % TSIM_INJ_HP;
    return 1;
}

static void record_latency(trf_traffic *t, uint64_t lat)
{
    t->measured++;
    t->lat_sum += lat;
    if (lat > t->lat_max) t->lat_max = lat;
    if (lat < HIST_EXACT) {
        t->hist[lat]++;
        return;
    }
    if (t->nbig == t->capbig) {
        t->capbig = t->capbig ? 2 * t->capbig : 1024;
        t->big = realloc(t->big, t->capbig * sizeof *t->big);
        if (!t->big) abort();
    }
    t->big[t->nbig++] = lat;
}

static uint64_t traffic_sink(void *ctx, int proc, int fifo, const tsim_meta *m, const tsim_pkt *k)
{
    (void)fifo;
    trf_traffic *t = ctx;
    int me = proc / TSIM_CPUS;
    uint64_t done = m->t_arrive;
    if (proc % TSIM_CPUS == 0 && me < t->n) { /* model this rank's consumer */
        tsrc *s = &t->src[me];
        if (t->cfg.consume_cycles || t->cfg.consume_jitter) {
            if (s->sink_busy > done) done = s->sink_busy;
            done += t->cfg.consume_cycles;
            if (t->cfg.consume_jitter) done += below(s->sink_rng, t->cfg.consume_jitter + 1);
            s->sink_busy = done;
        }
    }
    if (m->t_arrive > t->last_arrival) t->last_arrival = m->t_arrive;
    uint32_t src = get32(k->sw), seq = get32(k->sw + 4);
    uint64_t sum;
    memcpy(&sum, k->payload, 8);
    if (k->hw.chunks < 1 || k->hw.chunks > TSIM_MAX_CHUNKS || sum != header_sum(k) ||
        src >= (uint32_t)t->n || seq >= t->cfg.packets || m->src != src * TSIM_CPUS ||
        fill_diff(k, fill_seed(t, src, seq), k->hw.chunks * TSIM_CHUNK - TSIM_HDR_BYTES)) {
        t->corrupted++;
        return done;
    }
    if (proc % TSIM_CPUS || me >= t->n || memcmp(k->hw.dst, t->xyz[me], 3)) {
        t->misrouted++;
        return done;
    }
    size_t bit = (size_t)src * t->cfg.packets + seq;
    if (t->seen[bit / 8] & (1u << (bit % 8))) {
        t->duplicated++;
        return done;
    }
    t->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
    t->delivered++;
    int len = k->hw.chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
    t->payload += (uint64_t)len;
    if (t->last_det) {
        uint32_t *last = (k->hw.flags & TSIM_F_HP) ? t->last_hp
                         : (k->hw.flags & TSIM_F_DYNAMIC) ? t->last_ad : t->last_det;
        uint32_t *l = &last[(size_t)src * t->n + me];
        if (seq + 1 < *l) {
            if ((k->hw.flags & (TSIM_F_DYNAMIC | TSIM_F_HP)) == TSIM_F_DYNAMIC) t->reord_ad++;
            else t->reord_det++;
        } else {
            *l = seq + 1;
        }
    }
    if (t->lambda > 0) {
        if (m->t_arrive >= t->t_begin && m->t_arrive < t->t_end) {
            t->win_payload += (uint64_t)len;
            t->win_wire += tsim_ser_cycles(&t->prm, k->hw.chunks);
        }
        if (m->t_inject >= t->t_begin && m->t_inject < t->t_end)
            record_latency(t, m->t_arrive - m->t_inject);
    } else {
        record_latency(t, m->t_arrive - m->t_inject);
    }
    return done;
}

void trf_source(trf_traffic *t, tsim_source *src)
{
    src->next = traffic_next;
    src->sink = traffic_sink;
    src->ctx = t;
}

void trf_attach(trf_traffic *t, tsim_seg *seg, tsim_engine *e)
{
    for (int r = 0; r < t->n; r++) {
        tsim_proc *p = &seg->procs[tsim_proc_index(r, 0)];
        p->rank = r;
        seg->rank_proc[r] = tsim_proc_index(r, 0);
        atomic_store(&p->state, TSIM_P_ENGINE);
    }
    tsim_source s;
    trf_source(t, &s);
    tsim_engine_set_source(e, &s);
}

/* ---- results ---------------------------------------------------------- */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void trf_get_stats(const trf_traffic *t, trf_stats *s)
{
    memset(s, 0, sizeof *s);
    for (int r = 0; r < t->n; r++) s->generated += t->src[r].seq;
    s->expected = (uint64_t)t->n * t->cfg.packets;
    s->delivered = t->delivered;
    s->lost = s->generated > t->delivered ? s->generated - t->delivered : 0;
    s->duplicated = t->duplicated;
    s->corrupted = t->corrupted;
    s->misrouted = t->misrouted;
    s->reordered_det = t->reord_det;
    s->reordered_adaptive = t->reord_ad;
    s->last_arrival = t->last_arrival;
    s->measured = t->measured;
    s->lat_max = t->lat_max;
    if (t->measured) {
        s->lat_mean = (double)t->lat_sum / (double)t->measured;
        uint64_t want = (t->measured * 99 + 99) / 100, acc = 0; /* ceil(0.99 n)-th smallest */
        s->lat_p99 = t->lat_max;
        int found = 0;
        for (uint64_t v = 0; v < HIST_EXACT && !found; v++) {
            acc += t->hist[v];
            if (acc >= want) s->lat_p99 = v, found = 1;
        }
        if (!found && t->nbig) {
            uint64_t *b = malloc(t->nbig * sizeof *b);
            if (b) {
                memcpy(b, t->big, t->nbig * sizeof *b);
                qsort(b, t->nbig, sizeof *b, cmp_u64);
                s->lat_p99 = b[want - acc - 1];
                free(b);
            }
        }
    }
    double nd = (double)t->n;
    if (t->lambda > 0) {
        s->t_begin = t->t_begin;
        s->t_end = t->t_end;
        double span = (double)(t->t_end - t->t_begin) * nd;
        s->offered_bytes = t->lambda * t->mean_payload;
        s->accepted_bytes = (double)t->win_payload / span;
        s->accepted_load = (double)t->win_wire / span;
    } else { /* saturation: the whole run is the window */
        s->t_begin = 0;
        s->t_end = t->last_arrival;
        double span = (double)(t->last_arrival ? t->last_arrival : 1) * nd;
        uint64_t wire = 0;
        /* wire cycles of what arrived: payload + per-packet header and overhead */
        wire = (t->payload + t->delivered * (TSIM_HDR_BYTES + t->prm.wire_overhead)) *
               t->prm.link_cycles_per_byte;
        s->offered_bytes = 0;
        s->accepted_bytes = (double)t->payload / span;
        s->accepted_load = (double)wire / span;
    }
}

int trf_ok(const trf_stats *s)
{
    /* a source that stopped early (engine ended, deadlock) fails too: an
     * empty run must not pass as "nothing lost" */
    return s->generated != s->expected || s->lost || s->duplicated || s->corrupted ||
                   s->misrouted || s->reordered_det
               ? -1
               : 0;
}

void trf_print(const trf_traffic *t, const trf_stats *s, FILE *f)
{
    const trf_cfg *c = &t->cfg;
    static const char *const rname[] = {"det", "adaptive", "mixed"};
    char size[32];
    if (c->chunks) snprintf(size, sizeof size, "%d chunks", c->chunks);
    else snprintf(size, sizeof size, "1..8 chunks");
    fprintf(f, "machine             %d processors on %dx%dx%d %s, CO (one per node)\n", t->n,
            t->g.dim[0], t->g.dim[1], t->g.dim[2],
            t->g.torus[0] || t->g.torus[1] || t->g.torus[2] ? "torus" : "mesh");
    char hp[48] = "";
    if (c->hp_frac > 0) snprintf(hp, sizeof hp, " + %g high-priority", c->hp_frac);
    fprintf(f, "traffic             %s, routing %s%s, %llu packets of %s per source, %s arrivals, "
               "seed %llu\n",
            trf_pattern_name(c->pattern), rname[c->routing], hp,
            (unsigned long long)c->packets, size,
            c->arrivals == TRF_EXPONENTIAL ? "exponential" : "Bernoulli",
            (unsigned long long)c->seed);
    if (t->lambda > 0)
        fprintf(f, "offered load        %.4f of link bandwidth = %.4f payload B/cycle/node\n",
                c->load, s->offered_bytes);
    else
        fprintf(f, "offered load        saturation (every packet generated at cycle 0)\n");
    fprintf(f, "accepted throughput %.4f of link bandwidth = %.4f payload B/cycle/node "
               "(cycles %llu..%llu)\n",
            s->accepted_load, s->accepted_bytes, (unsigned long long)s->t_begin,
            (unsigned long long)s->t_end);
    fprintf(f, "latency             mean %.1f  p99 %llu  max %llu cycles (%llu packets generated "
               "in the window)\n",
            s->lat_mean, (unsigned long long)s->lat_p99, (unsigned long long)s->lat_max,
            (unsigned long long)s->measured);
    fprintf(f, "packets             %llu generated, %llu delivered, %llu lost, %llu duplicated, "
               "%llu corrupted, %llu misrouted\n",
            (unsigned long long)s->generated, (unsigned long long)s->delivered,
            (unsigned long long)s->lost, (unsigned long long)s->duplicated,
            (unsigned long long)s->corrupted, (unsigned long long)s->misrouted);
    if (s->generated != s->expected)
        fprintf(f, "sources             stopped early: %llu of %llu packets generated\n",
                (unsigned long long)s->generated, (unsigned long long)s->expected);
    fprintf(f, "order               %llu det out of order (must be 0), %llu adaptive out of "
               "order\n",
            (unsigned long long)s->reordered_det, (unsigned long long)s->reordered_adaptive);
}
