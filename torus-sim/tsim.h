/* torus-sim: the emulated Blue Gene/L torus.
 *
 * The shared segment (tsim_seg) holds everything ranks and the engine share:
 * the parameter table, the geometry, one tsim_proc per processor slot (two
 * per node: CO uses cpu 1 for the coprocessor thread, VN for the second rank)
 * with its injection and reception FIFOs, and the engine's published time.
 *
 * Time protocol (see docs/simulated-time.md):
 *  - each processor publishes its virtual clock vt before every action;
 *  - the engine processes events strictly below H = min vt of RUNNING
 *    processors, in (time, key) order, and then publishes done = H;
 *  - a processor that has nothing to do BLOCKS (state BLOCKED + wake mask);
 *    only the engine wakes it, at vt = max(vt, time of the waking event);
 *  - a processor that must observe its FIFOs at vt waits for done >= vt.
 * Everything the engine decides is therefore a function of simulated time
 * only, never of host scheduling: runs are reproducible. */
#ifndef TSIM_H
#define TSIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- packets ---------------------------------------------------------- */
#define TSIM_CHUNK        32
#define TSIM_MAX_CHUNKS    8
/* Router buffer per VC at most (vc_chunks), 32 MB: credits fit an int32
 * and adaptive routing's scores (credits << 4) stay below 2^31. */
#define TSIM_MAX_VC_CHUNKS (1 << 20)
#define TSIM_PKT_BYTES   256
#define TSIM_HDR_BYTES    16
#define TSIM_PAYLOAD_MAX 240

/* Hardware header flags. */
#define TSIM_F_DYNAMIC 0x01 /* minimal adaptive routing on the dynamic VCs */
#define TSIM_F_DEPOSIT 0x02 /* leave a copy at every node on the line */
#define TSIM_F_HP      0x04 /* high-priority VC and FIFOs */

/* The 8-byte hardware header the router reads. */
typedef struct tsim_hwhdr {
    uint8_t dst[3]; /* destination x, y, z */
    uint8_t chunks; /* packet size in 32-byte chunks, 1..8 */
    uint8_t flags;  /* TSIM_F_* */
    uint8_t hints;  /* direction hint bits (bit = port); 0: router picks minimal */
    uint8_t group;  /* reception FIFO group at the destination (= cpu) */
    uint8_t resv;
} tsim_hwhdr;

typedef struct tsim_pkt {
    tsim_hwhdr hw;
    uint8_t sw[8]; /* software header, owned by the message layer */
    uint8_t payload[TSIM_PAYLOAD_MAX];
} tsim_pkt;

/* Timing metadata that rides beside the packet, never inside it. */
typedef struct tsim_meta {
    uint64_t t_inject; /* sim time the packet was written (or generated) */
    uint64_t t_arrive; /* sim time its tail reached the reception FIFO */
    uint64_t t_done;   /* reception: sim time the consumer freed the slot */
    uint32_t src;      /* source processor index */
    uint32_t hops;     /* links crossed */
} tsim_meta;

typedef struct tsim_slot {
    tsim_meta m;
    tsim_pkt p;
} tsim_slot;

/* A check word of what software dispatches on (the hardware and software
 * headers and the source): the engine keeps one per delivered slot where
 * the receiver cannot write it, so a packet read back damaged is told
 * apart from one sent so. */
static inline uint32_t tsim_slot_sum(const tsim_slot *s)
{
    uint64_t a, b;
    __builtin_memcpy(&a, &s->p.hw, sizeof a);
    __builtin_memcpy(&b, s->p.sw, sizeof b);
    uint64_t h = (a ^ (uint64_t)s->m.src << 17) * 0x9e3779b97f4a7c15ull ^ b;
    h *= 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 32);
}

/* ---- topology --------------------------------------------------------- */
enum { TSIM_XP, TSIM_XM, TSIM_YP, TSIM_YM, TSIM_ZP, TSIM_ZM, TSIM_NPORTS };
/* A port's name in reports and pictures: "x+" .. "z-". */
static inline const char *tsim_port_name(int port)
{
    static const char *const name[TSIM_NPORTS] = {"x+", "x-", "y+", "y-", "z+", "z-"};
    return name[port];
}
enum { TSIM_VC_DYN0, TSIM_VC_DYN1, TSIM_VC_ESC, TSIM_VC_HP, TSIM_NVC };

#define TSIM_CPUS     2 /* processor slots per node */
#define TSIM_INJ_HP   3 /* injection FIFOs 0..2 normal, 3 high priority */
#define TSIM_INJ_SP   4 /* VN scratchpad injection FIFO */
#define TSIM_NINJ     5
#define TSIM_REC_HP   6 /* reception FIFOs 0..5 normal (= arrival port), 6 hp */
#define TSIM_REC_SP   7 /* VN scratchpad reception FIFO */
#define TSIM_NREC     8
#define TSIM_RING_SLOTS 32 /* a 32-chunk FIFO holds at most 32 packets */
#define TSIM_MAX_DIM  64
#define TSIM_MAX_PROCS 4096
/* Unit of the segment's protection (docs/torus-sim.md, Who may write
 * what): each processor's part starts on such a boundary. */
#define TSIM_PAGE     4096

typedef struct tsim_geom {
    int dim[3];   /* X, Y, Z */
    int torus[3]; /* 1: wrap-around links in that dimension, 0: mesh */
    int cpus;     /* processors used per node: 1 (CO) or 2 (VN) */
    int nnodes;
    int nranks;
} tsim_geom;

/* ---- parameters ------------------------------------------------------- */
typedef struct tsim_params {
#define TSIM_PARAM(name, def, unit, help) uint64_t name;
#include "tsim_params.def"
#undef TSIM_PARAM
} tsim_params;

/* Link cycles to send a packet of `chunks` chunks: its chunks and its wire
 * overhead, at link_cycles_per_byte. */
static inline uint64_t tsim_ser_cycles(const tsim_params *p, int chunks)
{
    return ((uint64_t)chunks * TSIM_CHUNK + p->wire_overhead) * p->link_cycles_per_byte;
}

void tsim_params_default(tsim_params *p);
/* "name=value"; returns 0, or -1 with a reason in err. */
int tsim_params_set(tsim_params *p, const char *assignment, char *err, size_t errlen);
/* One "name = value" per line, '#' comments; errors name file:line. */
int tsim_params_load(tsim_params *p, const char *path, char *err, size_t errlen);
/* Groups of parameters a report lists only when the job used them (or they
 * were set away from their defaults): a report of a job that used neither
 * stays what it was before they existed. */
#define TSIM_PARAMS_TREE 1u /* tree_*, gi_*: the collective networks */
#define TSIM_PARAMS_DDT  2u /* ddt_*: derived datatypes */
#define TSIM_PARAMS_WTIME 4u /* mpi_wtime_cycles: only when set (at its default, every MPI job
                                reads the clock, and its list would change for that alone) */
/* show: the TSIM_PARAMS_* groups to list even at their defaults */
void tsim_params_json_all(const tsim_params *p, FILE *f, unsigned show);

/* ---- FIFOs in the segment (single producer, single consumer) ---------- */
typedef struct tsim_ring {
    _Atomic uint32_t head;       /* producer: fill slot[head % N], then head++ */
    _Atomic uint32_t tail;       /* consumer: slot[tail % N] is the oldest */
    _Atomic uint32_t used;       /* chunks held (producer adds, consumer frees) */
    uint32_t cap;                /* capacity in chunks */
    uint32_t pad[8];
    tsim_slot slot[TSIM_RING_SLOTS];
} tsim_ring;

/* Chunks of room in an injection FIFO now (room only grows with the
 * consumer's frees). */
static inline uint32_t tsim_ring_room(const tsim_ring *r) { return r->cap - atomic_load(&r->used); }

/* ---- the collective network and the global interrupt (tsim_tree.c) --- *
 * The collective network is a tree over the partition's nodes with an
 * integer ALU in every router; its packets are fixed-size (256 bytes of
 * payload) and go through their own FIFOs, one injection and one reception
 * ring per processor. A packet's class says what the tree does with it:
 * COMBINE packets (one per participating node, in the same order on every
 * node) are combined on their way to the root and the result is broadcast
 * to every participating node; a BCAST packet goes to the root and from
 * there to every participating node but its origin. docs/collectives.md. */
#define TSIM_TREE_PAYLOAD 256
#define TSIM_TREE_SLOTS     8 /* ring slots: the deepest a tree FIFO can be */
#define TSIM_TREE_VCS       2
enum { TSIM_TC_COMBINE = 1, TSIM_TC_BCAST = 2 };
/* ALU operations on little-endian two's-complement operands of `width`
 * bytes (4, 8 or 16); MAX and MIN compare signed when `sign` is 1. */
enum { TSIM_TOP_NONE, TSIM_TOP_ADD, TSIM_TOP_MAX, TSIM_TOP_MIN, TSIM_TOP_AND, TSIM_TOP_OR,
       TSIM_TOP_XOR, TSIM_NTOP };

typedef struct tsim_thdr {
    uint8_t cls;   /* TSIM_TC_* */
    uint8_t op;    /* TSIM_TOP_* (COMBINE), TSIM_TOP_NONE (BCAST) */
    uint8_t width; /* operand bytes: 4, 8 or 16 */
    uint8_t sign;  /* 0 or 1 */
    uint8_t vc;    /* virtual channel, < TSIM_TREE_VCS */
    uint8_t group; /* reception cpu at every node */
    uint8_t resv[2];
    uint8_t sw[8]; /* software header: COMBINE packets combined together carry the same */
} tsim_thdr;

typedef struct tsim_tslot {
    tsim_meta m;
    tsim_thdr h;
    uint8_t payload[TSIM_TREE_PAYLOAD];
} tsim_tslot;

/* Producer fills slot[head % N] and bumps head; the consumer reads
 * slot[tail % N] and bumps tail; cap packets at most in between. The
 * engine keeps its cursors to itself. */
typedef struct tsim_tring {
    _Atomic uint32_t head, tail;
    uint32_t cap;
    uint32_t pad[13];
    tsim_tslot slot[TSIM_TREE_SLOTS];
} tsim_tring;

/* Wake mask bits for the collective networks while BLOCKED. */
#define TSIM_WAKE_TREE_REC (1u << 16) /* a packet in the tree reception FIFO */
#define TSIM_WAKE_TREE_INJ (1u << 17) /* room in the tree injection FIFO */
#define TSIM_WAKE_GI       (1u << 18) /* the global barrier armed last has fired */

/* ---- processors ------------------------------------------------------- */
enum tsim_pstate {
    TSIM_P_ABSENT = 0, /* no software runs here; ignored by the horizon */
    TSIM_P_RUNNING,    /* may act at any time >= vt */
    TSIM_P_BLOCKED,    /* waits for the engine to wake it (wake mask) */
    TSIM_P_EXITED,
    TSIM_P_ENGINE,     /* driven by an engine-side traffic source */
};

/* Wake mask bits while BLOCKED. */
#define TSIM_WAKE_REC(f) (1u << (f))        /* a packet in reception FIFO f */
#define TSIM_WAKE_REC_ALL 0xffu
#define TSIM_WAKE_INJ(f) (1u << (8 + (f)))  /* room in injection FIFO f */

#define TSIM_NSW_KINDS 8

/* tsim_proc.fate_kind */
#define TSIM_FATE_SIGNAL 1u     /* killed by a fatal signal (SIGSEGV, SIGABRT, ...) */
#define TSIM_FATE_EXIT   2u     /* exit() while still in the machine (no pl_close) */
#define TSIM_FATE_CLOSED 0x100u /* flag: it had left the machine (pl_close) already */
#define TSIM_FATE_CORRUPT 3u    /* the packet layer found its own FIFOs or state damaged
                                   (fate_why says how) and ended the process */
#define TSIM_FATE_PEER 4u       /* it received, intact, a packet its software cannot take:
                                   processor fate_status sent it (fate_why says how) */

/* ---- a loop handed to the engine (tsim_prog.h, tsim_handoff.c) ------- *
 * A processor about to block may hand its loop to the engine: a program
 * registered by the layer that owns the loop, and its state (description
 * and cursor) in that program's own format. Written by the processor
 * before it blocks, copied and checked by the engine while it is blocked;
 * the engine's answer (the state as it left it) goes back in the same
 * block before the wake. The engine never reads the state's bytes itself. */
#define TSIM_HANDOFF_BYTES 8192
typedef struct tsim_handoff {
    _Atomic uint32_t gen;     /* bumped for every hand-off (0: none given) */
    uint32_t prog;            /* tsim_prog.id; 0: nothing to hand over */
    uint32_t start;           /* 1: the loop runs now, at vt; 0: it blocks first */
    uint32_t back;            /* the answer: 1 the engine ran it and handed back, 0 it did not */
    /* with back: the clock at which the loop first blocked while the engine
     * ran it, UINT64_MAX if it never did (the processor's trace shows its
     * wait from there, as it would had it run the loop itself) */
    uint64_t blocked_at;
    _Alignas(16) uint8_t state[TSIM_HANDOFF_BYTES];
} tsim_handoff;

typedef struct tsim_proc {
    _Atomic uint64_t vt;          /* published virtual clock, cycles */
    _Atomic uint32_t state;       /* enum tsim_pstate */
    _Atomic uint32_t bell;        /* futex word: bumped on wake / sync done */
    _Atomic uint32_t asleep;      /* 1 while the processor sleeps on bell in the kernel */
    _Atomic uint32_t wake_mask;   /* TSIM_WAKE_* while BLOCKED */
    _Atomic uint32_t inj_need;    /* chunks wanted when waiting for room */
    /* bumped after every write the engine's drain takes (a packet injected,
     * a reception slot freed, a barrier armed; the collective network's
     * too): a running processor whose count did not move since the engine
     * last took its writes has nothing new, and the round skips its
     * FIFOs' pages */
    _Atomic uint32_t writes;
    _Atomic uint64_t sync_target; /* nonzero: waiting for seg->done >= this */
    /* The engine's promise to a running processor (tsim_quiet.c): nothing
     * reaches it before `quiet` unless it injects again or the other
     * processor of its node, absent then (quiet_sib_absent), is opened:
     * valid while its injection FIFOs' heads still add up to quiet_inj.
     * Written as a seqlock (quiet_seq odd while the values change). */
    _Atomic uint32_t quiet_seq;
    _Atomic uint32_t quiet_inj;
    _Atomic uint32_t quiet_sib_absent;
    _Atomic uint64_t quiet;
    int32_t rank;                 /* MPI rank here, -1 if none */
    int32_t pid;
    int32_t exit_code;
    /* How this rank's process ended, written by the process itself as it
     * ends (packetlayer/pl_fate.c): the rank that failed is then named from
     * what each rank knew of its own end, never from the order in which
     * mpirun happened to see the processes go. Stored fields first, kind
     * last; fate_ns is CLOCK_MONOTONIC, comparable across processes. */
    _Atomic uint32_t fate_kind;   /* TSIM_FATE_*, 0 while it lives */
    int32_t fate_signal;          /* TSIM_FATE_SIGNAL: the signal */
    int32_t fate_status;          /* TSIM_FATE_EXIT: exit()'s argument */
    uint64_t fate_addr;           /* TSIM_FATE_SIGNAL: 1 + the segment offset a SIGSEGV
                                     wrote to (a page it may only read), 0 for none */
    uint64_t fate_ns;             /* when */
    char fate_why[120];           /* TSIM_FATE_CORRUPT: what was damaged */
    /* one writer at a time (tsim_count_add): the processor while it runs
     * (injected), the engine while it is blocked or the engine's own, and
     * for every delivery (received) */
    _Atomic uint64_t pkts_injected, pkts_received, bytes_injected, bytes_received;
    /* round trips to the engine (pl_sync) and polls a promise answered
     * instead (tsim_quiet.c), counted by the processor: host statistics */
    _Atomic uint64_t syncs, syncs_spared;
    _Atomic uint64_t msgs_sent[TSIM_NSW_KINDS]; /* messages per kind, counted by the
                                                   software above (the message layer's
                                                   protocols), for reports */
    _Atomic uint64_t ddt_cycles;  /* cycles the software charged for derived-datatype
                                     work (packing, translation, gather/scatter) */
    char waiting_on[112];         /* software's note, shown in deadlock reports */
    tsim_handoff handoff;         /* a loop the engine may run while it is blocked */
    tsim_ring inj[TSIM_NINJ];
    tsim_ring rec[TSIM_NREC];
    /* the collective networks (tsim_tree.c): the processor writes tinj,
     * trec's tail and the gi_arm pair, the engine the rest */
    tsim_tring tinj, trec;
    uint64_t gi_t_arm;            /* clock at which it armed its last barrier */
    _Atomic uint32_t gi_arm;      /* barriers armed so far (written after gi_t_arm) */
    _Atomic uint32_t gi_fired;    /* barriers fired so far (written after gi_t_fire) */
    _Atomic uint64_t gi_t_fire;   /* time the last one fired */
    /* Written only by the engine and mpirun; the processor's own process
     * maps this last page read-only (everything above is its own). */
    struct {
        _Alignas(TSIM_PAGE) _Atomic uint32_t rec_head[TSIM_NREC]; /* packets delivered */
        uint32_t rec_sum[TSIM_NREC][TSIM_RING_SLOTS]; /* tsim_slot_sum of each as delivered */
        _Atomic int32_t pid;      /* the pid the processor had when the engine first saw
                                     it (pl_open), 0 before */
    } eng;
} tsim_proc;

/* Adds to a counter that one thread writes at a time (the processor
 * while it runs, the engine while it is blocked: the hand-over between
 * them, the block and the engine's wake, orders the two), readers only
 * loading it: a relaxed load and store, not a locked read-modify-write,
 * which would also wait for the packet's slot stores before it to drain. */
static inline void tsim_count_add(_Atomic uint64_t *c, uint64_t x)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + x, memory_order_relaxed);
}

/* ---- the segment ------------------------------------------------------ */
#define TSIM_MAGIC 0x42474c454d553032ull /* "BGLEMU02" */
#define TSIM_BUILD_ID_LEN 24

/* How a waiting rank waits before it sleeps (host time only): spinning
 * where cores are free, in turns that yield the one core the ranks share
 * when there are few of them, and when many share it one of them watches
 * the core for the engine's wakes (tsim_watch.h) while the others sleep. */
enum { TSIM_WAIT_SPIN, TSIM_WAIT_TURNS, TSIM_WAIT_WATCH };

typedef struct tsim_seg {
    uint64_t magic;
    uint64_t size;
    char build[TSIM_BUILD_ID_LEN]; /* the maker's build (tsim_build_id): attach checks it */
    char name[64];                 /* shm name, "" for an anonymous segment */
    tsim_params params;
    tsim_geom geom;
    _Atomic uint64_t done;         /* all events earlier than this are done */
    _Atomic uint32_t engine_idle;  /* 1 while the engine sleeps in the kernel (not while it spins) */
    _Atomic uint64_t engine_wait;  /* while it sleeps: it can move only once a running
                                      processor's clock passes this (0 while busy) */
    _Atomic uint32_t abort;        /* nonzero: the job is failing, stop */
    _Atomic uint32_t deadlock;     /* set by the engine before aborting */
    uint32_t progress_secs;        /* nonzero: engine reports progress this often */
    _Atomic uint32_t ranks_wait;   /* how waiting ranks wait: TSIM_WAIT_* (tsim_cores.c) */
    int32_t rank_proc[TSIM_MAX_PROCS]; /* rank -> processor index */
    char mapping[256];             /* how ranks were mapped, for reports */
    /* The words every rank writes, on a page of their own: ranks map
     * everything above read-only. The engine trusts none of them: they
     * decide only who makes a wake system call (tsim_watch.h). */
    struct {
        _Alignas(TSIM_PAGE) _Atomic uint32_t engine_bell; /* futex word the engine sleeps on */
        _Atomic uint32_t watcher;  /* 1 + the processor watching the ranks' core, 0 for none */
        _Atomic uint32_t wake_any; /* nonzero: wake_req has bits */
        _Atomic uint64_t wake_req[TSIM_MAX_PROCS / 64]; /* sleepers the engine rang, to be woken */
        _Atomic uint32_t watch_beat; /* the watcher's host clock as it waits (tsim_watch.h) */
    };
    tsim_proc procs[];             /* nnodes * TSIM_CPUS */
} tsim_seg;

static inline int tsim_node_of(const tsim_geom *g, int x, int y, int z)
{
    return x + g->dim[0] * (y + g->dim[1] * z);
}
static inline void tsim_coords(const tsim_geom *g, int node, int c[3])
{
    c[0] = node % g->dim[0];
    c[1] = (node / g->dim[0]) % g->dim[1];
    c[2] = node / (g->dim[0] * g->dim[1]);
}

/* The hardware header of a packet to processor dst carrying `payload`
 * bytes (chunks rounded up, at least one), to reception group `group`. */
static inline unsigned tsim_chunks(size_t payload)
{
    size_t chunks = (TSIM_HDR_BYTES + payload + TSIM_CHUNK - 1) / TSIM_CHUNK;
    return chunks ? (unsigned)chunks : 1;
}
static inline void tsim_header(const tsim_geom *g, tsim_hwhdr *hw, int dst, size_t payload,
                               unsigned flags, unsigned group)
{
    int c[3];
    tsim_coords(g, dst / TSIM_CPUS, c);
    *hw = (tsim_hwhdr){{(uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2]}, (uint8_t)tsim_chunks(payload),
                       (uint8_t)flags, 0, (uint8_t)group, 0};
}
static inline int tsim_proc_index(int node, int cpu) { return node * TSIM_CPUS + cpu; }

/* The bytes of a machine segment of nnodes nodes (every processor's part,
 * whether used or not: 272 KiB a node), for checks before creating one. */
size_t tsim_seg_bytes(int nnodes);
/* Creates a segment for geometry g (nnodes, nranks filled in by the call).
 * name_hint NULL: anonymous MAP_SHARED memory, inherited across fork().
 * Otherwise a POSIX shm object "/bglemu.<uid>.<pid>.<n>", mode 0600. */
tsim_seg *tsim_seg_create(const tsim_geom *g, const tsim_params *p, int named,
                          char *err, size_t errlen);
tsim_seg *tsim_seg_attach(const char *name, char *err, size_t errlen);
/* This build's identity: a hash of the library's sources (the Makefile's
 * BUILD_ID_H). A segment made by another build is not attached. */
const char *tsim_build_id(void);
void tsim_seg_detach(tsim_seg *s);
/* Makes an attached segment read-only to this process except the pages it
 * must write: processor proc's own (all but its engine page), the
 * coprocessor slot of its node when no rank runs there, and the engine's
 * bell. A stray write elsewhere then faults in the writer. 0, or -1 with
 * a reason; a host page larger than TSIM_PAGE leaves it unprotected. */
int tsim_seg_protect(tsim_seg *s, int proc, char *err, size_t errlen);
/* What lies at byte off of the segment: the processor it belongs to (-1
 * for the header), its part in buf ("reception FIFO 3", "the machine's
 * geometry"). */
int tsim_seg_where(const tsim_seg *s, uint64_t off, char *buf, size_t len);
/* Unlinks the shm name (if any) and unmaps. */
void tsim_seg_destroy(tsim_seg *s);

/* ---- routing (pure functions, unit-tested) --------------------------- */
/* Minimal signed distance from a to b along a dimension of size n. Ties on
 * a torus (n even, distance n/2) go the + way. */
int tsim_delta(int a, int b, int n, int torus);
/* Output port deterministic dimension-order routing takes from node to dst,
 * or -1 when node == dst. */
int tsim_route_det(const tsim_geom *g, int node, const uint8_t dst[3]);
/* Bitmask of profitable (minimal) output ports from node to dst: both
 * directions of a dimension where dst is a tie (n/2 on an even ring). */
unsigned tsim_route_profitable(const tsim_geom *g, int node, const uint8_t dst[3]);
/* Neighbour through port, or -1 (mesh edge). */
int tsim_neighbor(const tsim_geom *g, int node, int port);
int tsim_hops(const tsim_geom *g, int a, int b);

/* ---- the engine -------------------------------------------------------- */
typedef struct tsim_engine tsim_engine;

/* Engine-side traffic (bgl-traffic, soak tests): processors in state
 * TSIM_P_ENGINE are driven by these callbacks, in simulated time, without
 * host threads. */
typedef struct tsim_source {
    /* Next packet processor `proc` generates: fill *t (>= the previous),
     * the packet, and the injection FIFO; return 0 when it has no more. */
    int (*next)(void *ctx, int proc, uint64_t *t, tsim_pkt *pkt, int *fifo);
    /* The packet reached proc's reception FIFO `fifo`; return the sim time
     * the consumer frees it (>= m->t_arrive). */
    uint64_t (*sink)(void *ctx, int proc, int fifo, const tsim_meta *m, const tsim_pkt *pkt);
    void *ctx;
} tsim_source;

/* Programs a blocked processor may hand the engine, and the reasons one
 * may give for handing it back (tsim_prog.h). */
#define TSIM_PROGS 8
#define TSIM_BACKS 8

typedef struct tsim_result {
    int deadlock;        /* application deadlock detected */
    int aborted;         /* seg->abort was raised from outside */
    uint64_t end_time;   /* largest processor clock at the end */
    uint64_t events, packet_hops, packets_delivered;
    /* host-side accounting: packets the engine read and sent for blocked
     * processors, and how often it woke a processor (tsim_handoff.c) */
    uint64_t proxy_read, proxy_sent, wakes;
    /* the hand-backs among those wakes, by program id and the reason the
     * program gave (its tsim_prog.backs names them) */
    uint64_t backs[TSIM_PROGS][TSIM_BACKS];
    double wall_seconds;
} tsim_result;

tsim_engine *tsim_engine_new(tsim_seg *seg);
void tsim_engine_free(tsim_engine *e);
void tsim_engine_set_source(tsim_engine *e, const tsim_source *src);
/* Runs in the calling thread until every processor exited, a deadlock, or
 * an abort. */
int tsim_engine_run(tsim_engine *e, tsim_result *r);
/* Same, in a new thread. */
int tsim_engine_start(tsim_engine *e);
/* Before tsim_engine_start, when the ranks are other processes: the engine
 * keeps a core of its own and places the ranks (BGLEMU_CORES, tsim_cores.c). */
void tsim_engine_plan_cores(tsim_engine *e);
int tsim_engine_join(tsim_engine *e, tsim_result *r);
/* A processor broke the rules of the segment (an impossible packet or
 * ring index in its injection FIFOs): its index, with what it did in buf
 * ("injection FIFO 0: packet of 0 chunks at slot 17"); -1 while none did.
 * The engine then aborts the job. Safe to call from another thread. */
int tsim_engine_violation(tsim_engine *e, char *buf, size_t len);
/* Deadlock report: one line per waiting processor. */
void tsim_engine_print_deadlock(tsim_engine *e, FILE *f);
/* Machine-readable report: params, geometry, per processor and per link. */
void tsim_engine_report_json(tsim_engine *e, const tsim_result *r, FILE *f);
/* The same with a "job" member first (omitted when job is NULL or ""). */
void tsim_engine_report_json_job(tsim_engine *e, const tsim_result *r, const char *job, FILE *f);

/* Per-link counters (node, port), valid after the run (pictures/ draws them). */
typedef struct tsim_link_stats {
    uint64_t packets, bytes, busy_cycles;
} tsim_link_stats;
const tsim_link_stats *tsim_engine_link(tsim_engine *e, int node, int port);

/* Wakes the engine (after publishing vt, injecting, consuming or blocking). */
void tsim_kick(tsim_seg *s);

#endif
