/* Synthetic traffic for the engine (bgl-traffic, soak and determinism tests).
 * An endpoint above the network model, like the packet layer: it owns its
 * payload format and checks, and calls only torus-sim's public API (tsim.h);
 * the routers never look inside a packet.
 *
 * N sources/sinks: rank r lives on node r, cpu 0 (CO mode). Each source
 * generates a fixed number of packets in a pattern, at an offered load, with
 * arrival times from its own seeded PRNG, so a run is a pure function of the
 * configuration. Every packet carries (src, seq) and a checksum; the sink
 * counts losses, duplicates, corruption, misdelivery and, for deterministic
 * packets, reordering within a (src, dst) pair.
 *
 * Offered load F (docs/traffic.md): the fraction of one link's bandwidth a
 * node injects, counted in wire cycles. A node generates
 *   lambda = F / E[ser]  packets per cycle,  ser = (32*chunks + wire_overhead)
 *                                                  * link_cycles_per_byte,
 * so with full packets (8 chunks, BG/L defaults) lambda = F / 1080. F = 0
 * means "saturate": every packet is generated at cycle 0. */
#ifndef TRF_TRAFFIC_H
#define TRF_TRAFFIC_H

#include <stdint.h>
#include <stdio.h>

#include "../torus-sim/tsim.h"

enum trf_pattern {
    TRF_UNIFORM,   /* uniformly random destination other than self */
    TRF_TRANSPOSE, /* rank bits rotated by half their width (N = 2^b) */
    TRF_BITREV,    /* rank bits reversed (N = 2^b) */
    TRF_NEIGHBOR,  /* node (x+1, y+1, z+1) mod shape (N = X*Y*Z) */
    TRF_HOTSPOT,   /* rank 0 with probability hot_frac, else uniform */
    TRF_ALLTOALL,  /* packet j of rank r goes to (r + 1 + j mod (N-1)) mod N */
    TRF_NPATTERNS
};

enum trf_arrivals { TRF_BERNOULLI, TRF_EXPONENTIAL };

enum trf_routing {
    TRF_DET,      /* dimension order on the escape VC */
    TRF_ADAPTIVE, /* TSIM_F_DYNAMIC */
    TRF_MIXED,    /* each packet det or adaptive at random (soak) */
};

typedef struct trf_cfg {
    int pattern;             /* enum trf_pattern */
    int nprocs;              /* N ranks, 1..nnodes */
    double load;             /* offered load F; 0: saturate */
    int arrivals;            /* enum trf_arrivals */
    int routing;             /* enum trf_routing */
    int chunks;              /* packet size 1..8 chunks; 0: uniform 1..8 per packet */
    uint64_t packets;        /* per source */
    uint64_t seed;
    double hot_frac;         /* hotspot: share of packets sent to rank 0 */
    double hp_frac;          /* share of packets on the high-priority VC (TSIM_F_HP,
                              * injection FIFO 3); they are deterministic too */
    uint64_t consume_cycles; /* sink: a consumer holds each packet this long, in
                              * arrival order (0: frees the slot on arrival) */
    uint64_t consume_jitter; /* + uniform 0..jitter cycles per packet */
    double warmup;           /* measure packets generated in
                              * [warmup, 1 - warmup] x K / lambda */
} trf_cfg;

typedef struct trf_stats {
    uint64_t expected;             /* N x K: what the sources must generate */
    uint64_t generated, delivered; /* delivered: distinct, valid packets */
    uint64_t lost, duplicated, corrupted, misrouted;
    uint64_t reordered_det, reordered_adaptive; /* per (src, dst) pair; det
                                                 * includes high-priority */
    /* measurement window [t_begin, t_end) in simulated cycles */
    uint64_t t_begin, t_end, last_arrival;
    uint64_t measured;           /* packets generated in the window */
    double lat_mean;             /* t_arrive - generation time, measured packets */
    uint64_t lat_p99, lat_max;
    double offered_bytes;        /* payload B/cycle/node offered */
    double accepted_bytes;       /* payload B/cycle/node delivered in the window */
    double accepted_load;        /* the same in wire cycles: comparable to F */
} trf_stats;

typedef struct trf_traffic trf_traffic;

void trf_cfg_default(trf_cfg *c);
/* Pattern by name ("uniform", ...), or -1. */
int trf_pattern_parse(const char *name);
const char *trf_pattern_name(int pattern);

/* Validates cfg against the machine; NULL with a one-line reason in err. */
trf_traffic *trf_new(const tsim_geom *g, const tsim_params *p,
                     const trf_cfg *cfg, char *err, size_t errlen);
void trf_free(trf_traffic *t);

/* Marks the N ranks' processors TSIM_P_ENGINE in seg and installs the
 * source in e. Call before tsim_engine_run. */
void trf_attach(trf_traffic *t, tsim_seg *seg, tsim_engine *e);
/* The callbacks, for callers that drive the engine themselves. */
void trf_source(trf_traffic *t, tsim_source *src);

/* Counts after the run. */
void trf_get_stats(const trf_traffic *t, trf_stats *s);
/* 0 when every source generated all its packets, each arrived once, intact,
 * where it should, and deterministic pairs kept their order. */
int trf_ok(const trf_stats *s);
/* The human report (simulated quantities only: reproducible bytes). */
void trf_print(const trf_traffic *t, const trf_stats *s, FILE *f);

/* The pattern's destination rank for (src, packet j), exposed for tests;
 * uniform and hotspot draw from rng (a xoshiro256** state, 4 words). */
int trf_dest(const trf_traffic *t, int src, uint64_t j, uint64_t rng[4]);

/* The PRNG: splitmix64 to seed, xoshiro256** to draw. */
uint64_t trf_splitmix(uint64_t *state);
uint64_t trf_rand(uint64_t s[4]);

#endif
