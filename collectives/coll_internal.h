/* collectives internals: state shared by coll_core.c, coll_bcast.c,
 * coll_a2a.c, coll_p2p.c, coll_tree.c and coll_tree_encode.c. */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "coll.h"
#include "coll_loop.h"
#include "coll_tree.h"
#include "../messagelayer/ml.h"

/* Software header of a collective packet (8 bytes, little endian):
 *   [0] type (COLL_T_*), [1..3] packet index: within the message
 *   (broadcast) or within the pair's block (alltoall), [4..5] the group's
 *   collective sequence number, [6..7] the group's id (0: the partition). */
typedef struct coll_sw {
    uint8_t type;
    uint8_t w[3];
    uint16_t seq, gid;
} coll_sw;
#define COLL_MAXPK (1u << 24) /* packets a message (a pair's block) may have */

static inline uint32_t coll_sw_w(const coll_sw *sw)
{
    return sw->w[0] | (uint32_t)sw->w[1] << 8 | (uint32_t)sw->w[2] << 16;
}
static inline coll_sw coll_sw_make(uint8_t type, uint32_t w, uint16_t seq, uint16_t gid)
{
    return (coll_sw){type, {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16)}, seq, gid};
}

/* A set of ranks running collectives together (coll.h). The box is where
 * its nodes are: lo + [0, len) per dimension (mod the ring on a torus);
 * torus[d] only when the box spans a whole ring. */
struct coll_group {
    uint16_t id, seq;
    int n, me;        /* size, this rank's index */
    int *proc;        /* group rank -> processor */
    int *rank_of;     /* processor -> group rank, -1 if not a member */
    int hw_ok;        /* the deposit broadcast can serve it */
    int lo[3], len[3], torus[3];
};

/* A packet that arrived for a later collective than the one running. */
typedef struct coll_early {
    struct coll_early *next;
    tsim_slot s;
} coll_early;

/* A p2p-baseline message that arrived before its collective started. */
typedef struct coll_p2p_early {
    struct coll_p2p_early *next;
    uint16_t seq;
    int src;
    size_t len;
    volatile int done;
    uint8_t *buf;
} coll_p2p_early;

#define COLL_MAXT 16 /* forwarding targets of one node in a broadcast */

typedef struct coll_target {
    int proc;       /* destination processor index */
    int fifo;       /* injection FIFO */
    int route;
    unsigned flags; /* TSIM_F_* */
    uint32_t cur;   /* next packet index to send */
    uint32_t charged; /* layouts: 1 + the packet whose gather was charged */
    ml_cursor gcur;   /* layouts: where its last gather ended */
} coll_target;

/* The packet-scheduled alltoall's loop (coll_a2a.c), written once over a
 * port and run by two drivers (coll_loop.h): the rank (coll_run with
 * coll_a2a_ops, coll_a2a_packet: its own port, its own memory) and the
 * engine for a rank blocked in it (coll_a2a_engine.c, the program
 * coll_a2a_prog). One member of the alltoall, by group rank, as both see
 * it: its block to send and where its block to us goes (addresses in the
 * rank's memory), its processor, and order: the destination (group rank)
 * of schedule position i, for i < n - 1. */
#define COLL_PROG_A2A 2
typedef struct coll_a2a_peer {
    uint64_t sbuf, rbuf;
    uint32_t scount, rcount;
    uint32_t proc;  /* its processor */
    uint32_t order;
} coll_a2a_peer;
/* One member's blocks as layouts: niov > 0 means its block to send (to
 * receive) is the siov (riov) list of sniov (rniov) struct iovec in the
 * rank's memory, scount (rcount) bytes in total; sbuf (rbuf) is then
 * unused. Packet w of a block is its bytes [w * TSIM_PAYLOAD_MAX, ...);
 * each costs ddt_seg_cycles per segment it touches to whoever gathers
 * (before its first FIFO try, once) or scatters it (after the dispatch). */
typedef struct coll_a2a_lay {
    uint64_t siov, sniov, riov, rniov;
} coll_a2a_lay;
/* The schedule's cursor: packet `round` of the block to order[pos] is
 * next; rr_fifo the FIFO tried first; gathered: that packet was gathered
 * and charged already. */
typedef struct coll_a2a_cur {
    uint32_t pos, round, rr_fifo;
    uint32_t gathered;
    uint64_t left, need, recv; /* packets still to send, bytes expected / received */
} coll_a2a_cur;
typedef struct coll_a2a_loop coll_a2a_loop;
/* Where a packet's bytes come from and go: the driver's. segs: the
 * segments the n bytes at offset off of the block to group rank d touch
 * (0 for a buffer); fetch: those bytes, in place or in tmp
 * (TSIM_PAYLOAD_MAX bytes), NULL if they can't be read. place: a packet's
 * n bytes from group rank s into its block at off, *segs the segments
 * touched; 0, or -1 if they can't be written. */
typedef struct coll_a2a_io {
    unsigned (*segs)(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n);
    const uint8_t *(*fetch)(coll_a2a_loop *L, uint32_t d, uint64_t off, size_t n, uint8_t *tmp);
    int (*place)(coll_a2a_loop *L, uint32_t s, uint64_t off, const uint8_t *data, size_t n,
                 unsigned *segs);
} coll_a2a_io;
struct coll_a2a_loop {
    const coll_a2a_peer *peer; /* by group rank */
    uint32_t n, me;
    const int *rank_of;        /* processor -> group rank, -1 */
    int nprocs;                /* entries of rank_of */
    uint16_t seq, gid;
    int layouts;               /* some block is a layout (its gathers are charged) */
    coll_a2a_cur *cur;
    uint64_t *pkts_sent, *pkts_recv;
    const coll_a2a_io *io;
    void *ctx;                 /* the driver's */
};
extern const coll_loop_ops coll_a2a_ops;
/* The loop handed to the engine (coll_a2a_engine.c), filled from coll_ctx
 * by the rank's wait: the table at peers (n coll_a2a_peer, then with
 * COLL_A2A_F_LAYOUTS n coll_a2a_lay) and the cursor. The engine's answer:
 * loop, cur, the packet counts. */
#define COLL_A2A_F_LAYOUTS 1u
typedef struct coll_a2a_state {
    coll_loop_cur loop;
    coll_a2a_cur cur;
    uint64_t peers;
    uint32_t n, me;
    uint16_t seq, gid;
    uint32_t flags;            /* COLL_A2A_F_* */
    uint64_t pkts_sent, pkts_recv; /* its packets the engine sent and took */
} coll_a2a_state;

/* The deposit-bit broadcast's loop (coll_bcast.c), written once over a
 * port and run by two drivers (coll_loop.h): the rank (coll_run with
 * coll_bc_ops, coll_bcast_packet: its own port, its own memory) and the
 * engine for a rank blocked in it (coll_bcast_engine.c, the program
 * coll_bcast_prog). A view of the loop's
 * description and cursor, wherever they are kept: the rank's coll_ctx, or
 * the engine's copy of the hand-off (coll_bc_state). Packet w of the
 * message (w = have_base[r] + i for packet i of part r) is its bytes
 * [w * TSIM_PAYLOAD_MAX, ...). */
typedef struct coll_bc_loop coll_bc_loop;
/* Where a packet's bytes come from and go: the driver's. fetch: the n
 * bytes at message offset off of packet w, to send to target t (a layout:
 * gathered with t's cursor, *segs the segments touched), in place or in
 * tmp (TSIM_PAYLOAD_MAX bytes); NULL if they can't be read. place: a
 * received packet's n bytes at off, part r (a layout: scattered, *segs
 * the segments touched); 0, or -1 if they can't be written. */
typedef struct coll_bc_io {
    const uint8_t *(*fetch)(coll_bc_loop *L, coll_target *t, uint32_t w, size_t off, size_t n,
                            uint8_t *tmp, unsigned *segs);
    int (*place)(coll_bc_loop *L, int r, uint32_t w, size_t off, const uint8_t *data, size_t n,
                 unsigned *segs);
} coll_bc_io;
struct coll_bc_loop {
    coll_target *t;          /* the forwarding targets */
    int nt, nroutes;
    const uint32_t *part_np; /* packets of each part */
    uint32_t *avail;         /* packets of each part held (contiguous prefix) */
    const size_t *have_base; /* each part's first packet in the message */
    uint8_t *have;           /* one byte per packet of the message */
    uint64_t *got;           /* packets received */
    uint64_t need;           /* ... expected */
    size_t len;              /* the message's bytes */
    uint16_t seq, gid;
    int layout;              /* gathers and scatters are charged (ddt_seg_cycles per segment) */
    uint64_t *pkts_sent, *pkts_recv;
    const coll_bc_io *io;
    void *ctx;               /* the driver's */
};
extern const coll_loop_ops coll_bc_ops;

/* The broadcast's loop handed to the engine (coll_bcast_engine.c): the
 * rank's wait fills it from coll_ctx. The targets are copied into the
 * state (at most COLL_MAXT: the runtime copies the state both ways anyway,
 * and the engine checks its own copy); the have bitmap stays in the rank's
 * memory (have: np bytes), read from avail on when adopted and written
 * back, the bytes the engine changed, before the rank wakes. The engine's
 * answer: loop, the targets' cur and charged, avail, got, the packet
 * counts. */
#define COLL_PROG_BCAST 4
typedef struct coll_bc_state {
    coll_loop_cur loop;
    uint64_t buf;              /* the message (0 with a layout) */
    uint64_t iov, niov;        /* or a layout: niov struct iovec at iov */
    uint64_t have;             /* the have bitmap's address */
    uint64_t len, got, need;
    uint32_t nt, nroutes;
    uint32_t part_np[3], avail[3];
    size_t have_base[3];
    uint16_t seq, gid;
    uint32_t resv;
    coll_target t[COLL_MAXT];  /* gcur: the driver's own */
    uint64_t pkts_sent, pkts_recv;
} coll_bc_state;

enum { OP_NONE, OP_BCAST, OP_A2A, OP_P2P_BCAST, OP_P2P_A2A, OP_P2P_REDUCE };

struct coll_ctx {
    ml_ctx *ml;
    pl_proc *pp;
    const ml_map *map;
    tsim_geom g;
    int rank, nranks, cpus;
    uint16_t seq;      /* the p2p baselines' next sequence number */
    coll_group world;  /* every rank, id 0 */
    int op;            /* running collective */
    uint16_t cur;      /* its sequence number */
    uint16_t cur_gid;  /* its group's id */
    coll_group *grp;   /* its group (hardware collectives) */
    coll_early *early, **early_tail;
    unsigned inj_wait; /* TSIM_WAKE_INJ bits of FIFOs found full */
    coll_stats st;
    int a2a_order;

    /* broadcast */
    uint8_t *buf;
    size_t len;
    const struct iovec *biov; /* or a layout of nbiov segments (buf unused) */
    size_t nbiov;
    ml_cursor bcur[3];        /* per route's part: where its last scatter ended (the
                                 parts' packets interleave, and one cursor sent back to
                                 the first segment at every switch made a scatter cost
                                 the host the square of the segments) */
    int nroutes;
    size_t part_off[3];
    uint32_t part_np[3];
    uint32_t avail[3];     /* packets of each part held (contiguous prefix) */
    uint8_t *have;         /* one byte per packet of each part (bitmap by part) */
    size_t have_base[3];
    uint64_t got, need;    /* packets received / expected */
    coll_target t[COLL_MAXT];
    int nt;

    /* alltoall */
    uint8_t *rbuf;            /* the p2p baselines' receive blocks */
    const size_t *rcounts, *rdispls;
    coll_layout *sblk, *rblk; /* by group rank: the blocks to send and to receive */
    ml_cursor *scur, *rcur;  /* layouts: where the last gather / scatter ended */
    int a2a_cap;             /* entries of sblk, rblk, scur, rcur */
    int a2a_lay;             /* some block is a layout */
    coll_a2a_peer *peers;    /* the blocks and the schedule, as both drivers read them
                                (with a2a_lay: then each peer's coll_a2a_lay) */
    coll_a2a_cur a2a;        /* the schedule's cursor */

    /* p2p baselines */
    coll_p2p_early *p2p_early;
    volatile int p2p_got, p2p_sent;
    int p2p_window;
    int p2p_bound;         /* coll_init_with: coll_upcall delivers our messages */

    /* collective network (coll_tree.c) */
    uint16_t tree_seq;
    uint64_t tree_sent, tree_recv;
    struct coll_vnq *vnq, **vnq_tail; /* VN: the node mate's scratchpad packets, in order */
    void *tree_run;        /* CO: the pass loop's data on this rank (coll_tree_begin) */
    struct coll_vn_run *vn_run; /* VN: the running pass (coll_tree.c) */
};

/* coll_tree.c: a node mate's packet of a tree collective (VN mode), kept
 * until its pass takes it; coll_tree_fini frees what is left. */
void coll_tree_packet(ml_ctx *ml, const tsim_slot *s, void *arg);
void coll_tree_fini(coll_ctx *c);

/* One pass through the collective network (coll_tree.c's loop): fill
 * makes packet w's payload from src, take keeps packet w's result. */
typedef struct coll_pass coll_pass;
struct coll_pass {
    coll_ctx *c;
    tsim_thdr h;
    uint32_t npk;
    void (*fill)(coll_pass *, uint32_t w, uint8_t *pl);        /* NULL: nothing to inject */
    void (*take)(coll_pass *, uint32_t w, const uint8_t *pl);  /* NULL: nothing to receive */
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
    ml_cursor cur;
    const uint32_t *segs;
};

static inline int coll_is_pair(int type) { return type >= COLL_2I32 && type < COLL_NTYPES; }

/* A pass through the collective network handed to the engine
 * (coll_tree_engine.c, the program coll_tree_prog; tree_wait in
 * coll_tree.c fills it): npk packets with header h, whose software header
 * is {type, w (24 bits), seq, 0} for packet w, payload w at out + 256 w;
 * result packet w goes to in + 256 w. sent and got: packets injected and
 * taken so far. out is 0 when the rank sends nothing, in when it takes
 * nothing (sent, got = npk then). The engine's answer: sent, got, the
 * GATHERED flag, and res, where the rank's message-layer advance goes on. */
#define COLL_PROG_TREE 3
typedef struct coll_tree_state {
    ml_resume res;
    uint64_t out, in;
    tsim_thdr h;
    uint32_t npk, sent, got;
    uint16_t seq;
    uint8_t type;
    uint8_t flags;  /* COLL_TREE_* */
    uint8_t phase;  /* COLL_TREE_*: the cursor in the loop */
    uint8_t moved;  /* the iteration moved a packet */
} coll_tree_state;
/* The loop's cursor: blocked (stepped again, the next iteration), an
 * iteration's start, its injections, its polls, its message-layer advance
 * (nothing moved). */
enum { COLL_TREE_BLOCKED, COLL_TREE_TOP, COLL_TREE_INJ, COLL_TREE_POLL, COLL_TREE_ADV };
/* The pass's loop, one implementation for both drivers: the engine runs
 * it for a blocked rank (coll_tree_prog), the rank over its own port
 * (pl_port_init; run_pass in CO mode). coll_tree_begin readies a filled
 * state (wait: the rank's TSIM_WAKE_* torus bits) and the driver's data
 * *priv, allocated at first (free it with coll_tree_end); -1 without
 * memory. coll_tree_step is the program's step. On the rank's port it
 * returns TSIM_RUN_BACK where the rank's code must run: the pass complete
 * (sent = got = npk), an iteration that moved nothing (phase
 * COLL_TREE_ADV: the rank's ml_advance, then its block) or a tree packet
 * that isn't the one due (phase COLL_TREE_POLL, the packet left there);
 * the rank sets phase COLL_TREE_BLOCKED before it steps again. */
int coll_tree_begin(coll_tree_state *t, void **priv, uint32_t wait);
int coll_tree_step(tsim_port *pt, void *state, void *priv, uint32_t *wait);
void coll_tree_end(void *priv);
/* Flags for a broadcast of a layout (coll_tree_bcast_layout). The payloads
 * stay whole (the rank gathers them into out before the pass, scatters
 * each result from in); what the layout costs is a table of npk uint32,
 * the segments each packet touches, charged at ddt_seg_cycles per segment: */
/* out is followed by the table: charged before packet w's first FIFO try */
#define COLL_TREE_SEGS_OUT 1u
/* in is followed by the table: charged after packet w is taken */
#define COLL_TREE_SEGS_IN 2u
/* packet sent's gather was charged already (both ways) */
#define COLL_TREE_GATHERED 4u

/* A pass through the collective network in VN mode (coll_tree_vn.c): the
 * node's leader (cpu 0) alone talks to the tree, its mate (cpu 1) hands it
 * its contribution and takes the results over the scratchpad, two torus
 * packets per tree packet (halves of TSIM_PAYLOAD_MAX and the rest, software
 * header {COLL_T_TREE, 2 w + half, seq, 0}). One loop, two drivers, like
 * the CO pass: the rank over its own port, the engine for a blocked rank
 * (program COLL_PROG_TREE_VN). The rank makes every payload before the
 * pass: out, its own contribution (npk packets of 256 bytes); in, the
 * results; mbuf (the leader's), the mate's contribution as it arrives.
 * Each of out and in may be followed by the layout's segment table
 * (COLL_TREE_SEGS_OUT / _IN, as in CO mode). Counts: sent and got (tree
 * packets injected and results taken), m_arrived and m_halves (the mate's
 * halves placed and taken), f_halves (halves handed to the mate). */
#define COLL_PROG_TREE_VN 5
enum {
    COLL_VN_LEADER = 1,     /* this is the node's cpu 0 */
    COLL_VN_FILLS = 2,      /* this rank contributes (out) */
    COLL_VN_TAKES = 4,      /* this rank keeps the results (in) */
    COLL_VN_MATE_FILLS = 8, /* the leader combines the mate's contribution */
    COLL_VN_MATE_TAKES = 16,/* the leader hands the results to the mate */
    COLL_VN_FROM_TREE = 32, /* the results come from the tree (else the root is on this node) */
};
typedef struct coll_tree_vn_state {
    ml_resume res;
    uint64_t out, in, mbuf;
    tsim_thdr h;
    uint32_t npk, sent, got;
    uint32_t m_arrived, m_halves, f_halves;
    uint32_t gathered;   /* 1 + the packet whose gather was charged */
    uint32_t wait;       /* TSIM_WAKE_INJ bit of the scratchpad FIFO found full */
    uint64_t pkts_sent, pkts_recv; /* torus packets to and from the mate (the rank's counters) */
    uint16_t seq;
    uint8_t role;        /* COLL_VN_* */
    uint8_t flags;       /* COLL_TREE_SEGS_OUT, COLL_TREE_SEGS_IN */
    uint8_t phase, moved;
    uint8_t bad;         /* a scratchpad half came out of order: the pass fails */
    uint8_t resv;
} coll_tree_vn_state;
/* The VN pass's loop (coll_tree_vn.c): TSIM_RUN_BACK where the rank's code
 * must run (the pass complete; phase COLL_VN_ADV: its message layer's
 * advance; a tree packet that isn't the one due, or bad), TSIM_RUN_BLOCK,
 * TSIM_RUN_WAIT, TSIM_RUN_FAIL; the io is the driver's. */
typedef struct coll_vn_io coll_vn_io;
int coll_tree_vn_step(tsim_port *pt, coll_tree_vn_state *t, const coll_vn_io *io, void *ctx,
                      uint32_t *wait);
enum { COLL_VN_BLOCKED, COLL_VN_TOP, COLL_VN_MTAKE, COLL_VN_INJ, COLL_VN_POLL, COLL_VN_GIVE,
       COLL_VN_ADV };
/* How the loop reaches the pass's packets: the driver's. NULL when they
 * can't be read or written (the job is failing). */
struct coll_vn_io {
    const uint8_t *(*own)(void *ctx, uint32_t w);    /* out, packet w */
    const uint8_t *(*mate)(void *ctx, uint32_t w);   /* mbuf, packet w */
    const uint8_t *(*result)(void *ctx, uint32_t w); /* in, packet w */
    int (*put_result)(void *ctx, uint32_t w, const uint8_t *p);
    /* the mate's half idx (2 w + half) into mbuf (the leader) or in (the mate) */
    int (*put_half)(void *ctx, uint32_t idx, const uint8_t *p, size_t n);
    /* packet w's entry of the segment table after out (dir 0) or in (1) */
    int (*segs)(void *ctx, int dir, uint32_t w, uint32_t *n);
};
/* The scratchpad half idx of the running pass placed (the rank's packet
 * handler, the engine's polls): 1, or 0 when it isn't the one due. */
int coll_tree_vn_place(coll_tree_vn_state *t, const coll_vn_io *io, void *ctx, uint32_t idx,
                       const uint8_t *payload);

/* coll_tree_encode.c: a combine's fill and take for each encoding (the
 * operands' layouts are described there). Wide integers go as they are;
 * float MAX/MIN through the order-preserving code; float SUM in two
 * passes, the exponents (ps->ex gets their maximum) then the fixed-point
 * mantissas; narrow integers, logical operations and the MAXLOC/MINLOC
 * pairs through the codec, whose operand coll_tree_codec describes. */
void coll_tree_fill_copy(coll_pass *ps, uint32_t w, uint8_t *pl);
void coll_tree_take_copy(coll_pass *ps, uint32_t w, const uint8_t *pl);
void coll_tree_fill_enc(coll_pass *ps, uint32_t w, uint8_t *pl);
void coll_tree_take_dec(coll_pass *ps, uint32_t w, const uint8_t *pl);
void coll_tree_fill_exp(coll_pass *ps, uint32_t w, uint8_t *pl);
void coll_tree_take_exp(coll_pass *ps, uint32_t w, const uint8_t *pl);
void coll_tree_fill_fx(coll_pass *ps, uint32_t w, uint8_t *pl);
void coll_tree_take_fx(coll_pass *ps, uint32_t w, const uint8_t *pl);
/* The operand's width, signedness and ALU operation of an encoded (type, op). */
void coll_tree_codec(int type, int op, size_t *width, int *sign, int *alu);
void coll_tree_fill_codec(coll_pass *ps, uint32_t w, uint8_t *pl);
void coll_tree_take_codec(coll_pass *ps, uint32_t w, const uint8_t *pl);

/* Charges datatype work (layouts' gathers and scatters) to this processor,
 * also counted in its ddt_cycles. */
void coll_charge_ddt(coll_ctx *c, uint64_t cycles);

/* coll_loop.c: the rank's driver of the loop (coll_loop.h) over its view
 * L. wait hands the blocked loop to the engine (the collective's program):
 * it fills the state (coll_handoff_begin; NULL: coll_block instead),
 * blocks (coll_handoff_block), and applies the engine's answer, the
 * loop's cursor through coll_loop_resume. 0, or -1 if the job aborts. */
typedef int (*coll_wait_fn)(coll_ctx *c, coll_loop_cur *k, const char *why);
int coll_run(coll_ctx *c, const coll_loop_ops *ops, void *L, coll_wait_fn wait, const char *why);
void *coll_handoff_begin(coll_ctx *c);
/* 1 if the engine ran the program (the state is its answer), 0 if not
 * (the loop's next iteration), -1 if the job aborts. */
int coll_handoff_block(coll_ctx *c, uint32_t prog, const char *why);
void coll_loop_resume(coll_ctx *c, coll_loop_cur *k, const coll_loop_cur *e);
/* The rank's packet handler's part: takes s, a packet of the running
 * collective (the scatter charged after the dispatch), and pushes. */
void coll_loop_take(coll_ctx *c, const coll_loop_ops *ops, void *L, const tsim_slot *s);
void coll_loop_push(coll_ctx *c, const coll_loop_ops *ops, void *L);
/* coll_core.c */
/* A partition-wide collective (PLT_COLL_*, pl_trace.h) that ran from t0
 * and returned rc, on the timeline when tracing and rc is 0. */
void coll_trace_op(coll_ctx *c, unsigned sub, uint64_t t0, int rc);
/* coll_run's wait when it hands nothing over: blocks until a packet
 * arrives or a FIFO it found full has room. 0, or -1 if the job aborts. */
int coll_block(coll_ctx *c, const char *why);
void coll_stash(coll_ctx *c, const tsim_slot *s);
/* Starts a hardware collective of g: its sequence number; 0, or -1 (busy). */
int coll_begin(coll_ctx *c, coll_group *g, int op);
/* Is this packet the running collective's (else it is stashed)? */
int coll_is_current(coll_ctx *c, int op, const tsim_slot *s);
/* Replays stashed packets of the running collective through fn. */
void coll_replay(coll_ctx *c, uint8_t type, void (*fn)(coll_ctx *, const tsim_slot *));
static inline coll_sw coll_sw_get(const tsim_slot *s)
{
    coll_sw sw;
    __builtin_memcpy(&sw, s->p.sw, sizeof sw);
    return sw;
}
/* 0, or -1 with the FIFO marked full in c->inj_wait. */
int coll_inject(coll_ctx *c, int fifo, int dst_proc, unsigned flags, const coll_sw *sw,
                const void *data, size_t n);
/* coll_bcast.c / coll_a2a.c: packet handlers */
void coll_bcast_packet(ml_ctx *ml, const tsim_slot *s, void *arg);
void coll_a2a_packet(ml_ctx *ml, const tsim_slot *s, void *arg);

#endif
