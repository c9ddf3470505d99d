/* Message-layer internals: packet types, per-peer state, tables. */
#ifndef ML_INTERNAL_H
#define ML_INTERNAL_H

#include <pthread.h>
#include <string.h>

#include "ml.h"

/* Software header (8 bytes): type, a byte, a 16-bit id, a 32-bit word.
 *   first packets (ONE, EAGER, AE, SCOUT, VN_ADDR): b = header length,
 *     id = per-pair sequence number, w = message length
 *   data packets (EAGER_DATA, AE_DATA, RZV_DATA, VN_DATA): w = offset,
 *     id = receiver slot (RZV, VN)
 *   control (AE_CONFIRM, GRANT, VN_ACK, VN_NACK, CO_*): id = sender's
 *     message id; GRANT/NACK: w = receiver slot, b = receiving cpu
 *     (GRANT: ML_CPU_*, ML_CPU_SPLIT + head for a split reception) */
enum ml_type {
    T_ONE = 1,
    T_EAGER, T_EAGER_DATA,
    T_AE, T_AE_DATA, T_AE_CONFIRM,
    T_SCOUT, T_GRANT, T_RZV_DATA,
    T_VN_ADDR, T_VN_ACK, T_VN_NACK, T_VN_DATA,
    T_CO_WORK, T_CO_DONE, T_CO_RZV_DONE, T_CO_STOP,
    T_VN_LAYOUT, /* a VN address packet naming the sender's layout (ml_vn_layout) */
    T_NTYPES
};

typedef struct ml_sw {
    uint8_t type, b;
    uint16_t id;
    uint32_t w;
} ml_sw;

/* What a VN address packet carries after the user header. */
typedef struct ml_vn_addr {
    int32_t pid;
    uint16_t id; /* sender's message id */
    uint16_t pad;
    uint64_t addr;
} ml_vn_addr;

/* What a VN layout packet carries after the user header: addr is the
 * sender's segment list, niov its length. */
typedef struct ml_vn_layout {
    ml_vn_addr a;
    uint64_t niov;
    uint64_t key; /* ml_msg.layout_key */
} ml_vn_layout;

/* Layout keys a VN receiver remembers per peer (the layout exchange
 * memoized: the sender's segment offsets are known already). */
#define ML_VN_KEYS 4

enum ml_state {
    S_QUEUED,    /* waiting for its turn to this peer */
    S_SENDING,   /* packets going out */
    S_WAIT,      /* all sent, waiting for a confirmation, grant or ack */
    S_DATA,      /* rendezvous / VN fallback data going out */
};

/* Host staging of layouts of many small segments (ml_layout.c): wanted for
 * a layout of niov segments holding bytes; a send's stage gathered; a
 * receive's stage scattered into its layout. Host time only: the simulated
 * costs are the segments', as without it. */
#define ML_STAGE_AVG_SEG 2048          /* staged below this average segment */
#define ML_STAGE_MIN_SEGS 64           /* and from this many segments */
#define ML_STAGE_MAX_BYTES (256u << 20) /* up to this size */
int ml_stage_wanted(const ml_ctx *ml, size_t niov, size_t bytes);
uint8_t *ml_stage_gather(const struct iovec *iov, size_t niov, size_t bytes);
void ml_stage_scatter(const struct iovec *iov, size_t niov, const uint8_t *stage, size_t bytes);

/* A message arriving: where its bytes go. */
typedef struct ml_rx {
    struct ml_rx *next;    /* adaptive receptions of one peer */
    ml_recv r;
    uint64_t len, got;
    uint64_t hi;           /* highest offset seen: a lower one arrived out of order */
    int src;
    uint16_t seq;          /* the message's per-pair sequence number */
    uint16_t sender_id;    /* rendezvous, VN: the sender's message id, for the grant / ack */
    int32_t vn_pid;        /* VN: the sender's process and buffer, to copy from */
    uint64_t vn_addr;
    uint64_t vn_niov;      /* VN: 0, or vn_addr is the sender's layout of this many segments */
    uint64_t vn_key;       /* VN: its layout key, 0 for none */
    ml_cursor cur;         /* layout: where the last packet was scattered */
    uint8_t used, cpu;     /* cpu: ML_CPU_* (the grant's b less a split's head) */
    uint32_t co_lo, co_hi; /* ML_CPU_SPLIT: the coprocessor's bytes (ml_split_end) */
    /* receptions whose data packets are still to come (the engine may read
     * them while this processor is blocked: ml_proxy.c) */
    struct ml_rx *act_next, *act_prev;
    uint8_t act;
    uint8_t dtype;         /* software type of its data packets */
    uint16_t did;          /* the id they carry */
} ml_rx;

/* A packet kept for later (out-of-order first packets, early AE data). */
typedef struct ml_stash_e {
    struct ml_stash_e *next;
    tsim_slot s;
} ml_stash_e;

typedef struct ml_peer {
    /* sending */
    ml_msg *head, *tail;   /* queue in send order */
    uint16_t tx_seq;
    uint8_t active;        /* in the ring of peers with work */
    uint8_t ae_wait;       /* adaptive messages not yet confirmed: the next waits */
    /* receiving */
    uint16_t rx_seq;       /* next first packet expected */
    ml_rx eager;           /* message being received by eager (one at a time) */
    ml_rx *ae;             /* adaptive messages being received: a confirmation
                              goes at the match, so several can be incomplete */
    ml_stash_e *stash, **stash_tail; /* held in arrival order */
    ml_stash_e *ae_early;  /* adaptive data that overtook its first packet */
    uint64_t vn_keys[ML_VN_KEYS]; /* VN layouts of this peer seen (round robin) */
    uint8_t vn_key_next;
} ml_peer;

#define ML_MAX_IDS 4096

/* ---- the wait loop handed to the engine (ml_handoff.c, ml_engine.c) ---- *
 * The state of ML_PROG_WAIT in the processor's hand-off block: what the
 * advance loop would do without this rank's code (data packets of
 * receptions already matched, the remaining packets of messages going
 * out), its cursor, and the answer (res). Addresses are this process's. */
#define ML_HO_RX 32
#define ML_HO_TX 8
#define ML_HO_WT 8
#define ML_HO_COFIN 16
#define ML_HO_WAIT 16 /* what a wait is for (ml_wait_for): the first so many count */
#define ML_HO_POST 16 /* posted receives described (ml_match_for) */
#define ML_HO_TAKEN 8 /* first packets the engine matches before it hands the rank back */
#define ML_PROG_WAIT 1
/* Why the engine hands a waiting rank back (statistics: ml_wait_prog's
 * backs names them, BGLEMU_PROXY_STATS prints the counts). */
enum {
    ML_BACK_OTHER,   /* a step it can't follow exactly (a refused grant, a failed write, ...) */
    ML_BACK_NEW,     /* a message's first packet: the upcall runs MPI's matching */
    ML_BACK_RX_DONE, /* a reception completes and its completion is the rank's */
    ML_BACK_TX_DONE, /* a message's last packet goes and its completion is the rank's */
    ML_BACK_WAIT,    /* what the wait is for completed (quiet 2): the advance is over */
    ML_BACK_CTL,     /* any other packet: a control packet, a collective's */
};

/* Data packets whose software header is {type, *, id, offset} from
 * processor src (UINT32_MAX: any) go to buf + offset (cap bytes there); the
 * reception is complete once got reaches len. A packet below offset lo
 * ends at lo (the main processor's head of a split rendezvous reception,
 * whose whole lines the coprocessor takes: ml_data_bytes), one above it at
 * len. With niov > 0 they go to a layout instead: iov is the address of
 * niov struct iovec (cap their total), each packet scattered into the
 * segments its bytes fall in, at ddt_seg_cycles per segment touched; buf,
 * if set, is its host stage. */
typedef struct ml_ho_rx {
    uint64_t buf, cap, len, got, hi;
    uint32_t src;
    uint8_t type;
    uint8_t quiet;   /* its completion may be recorded (ml_wait_for): 1, 2 what the wait is for */
    uint16_t id;
    uint64_t iov, niov;
    uint32_t lo;
    uint32_t fin;    /* the engine's answer: received in full and completed, in ml_ho_tx.fin's order */
} ml_ho_rx;

/* One message's remaining packets: bytes [off, len) of buf, at most
 * TSIM_PAYLOAD_MAX each, software header {type, 0, id, offset}; or of a
 * layout (niov > 0; buf its host stage or 0), each packet gathered from it
 * at ddt_seg_cycles per segment, charged once per offset (charged: 1 + the
 * offset whose gather was paid for). */
typedef struct ml_ho_tx {
    uint64_t buf, len, off;
    uint64_t iov, niov, charged;
    uint32_t dst;    /* destination processor */
    uint8_t fifo;    /* injection FIFO */
    uint8_t flags;   /* TSIM_F_* */
    uint8_t group;   /* reception group at the destination */
    uint8_t type;
    uint16_t id;
    uint8_t live;    /* 0: a ring peer whose message waits (it sends nothing) */
    uint8_t quiet;   /* data list: its completion may be recorded (ml_wait_for): 1, 2 what the wait is for */
    uint8_t fin;     /* the engine's answer: sent in full and completed, in this order (1, 2, ...) */
    uint8_t b;       /* rendezvous: the grant's b (a split's parts: ml_rzv_next_part) */
    uint32_t whole;  /* the message's length: len ends the part being sent (a split's) */
} ml_ho_tx;

/* A rendezvous send waiting for its grant (its scout has gone; a flat
 * buffer): its data packets as the wire will carry them from offset 0,
 * less what only the grant says (t.id is the message id the grant names;
 * ml_rzv_grant completes the description). The engine that takes the
 * grant for the blocked sender answers with it (slot, b) and the order in
 * which it took it (granted: 1, 2, ...; 0: not taken), and sends the data
 * as the rank would have from its data list (ml_data_phase). */
typedef struct ml_ho_wt {
    ml_ho_tx t;
    uint16_t slot;
    uint8_t b, granted;
    uint32_t resv;
} ml_ho_wt;

/* A posted receive as the hand-off describes it (ml_posted; taken: the
 * engine matched a message to it). */
typedef struct ml_ho_post {
    uint32_t key[ML_MATCH_KEYS];
    uint8_t any, land, taken, pad;
    uint64_t buf, cap, done, arg, completes;
} ml_ho_post;

/* Where a rendezvous reception's data goes (the grant's b): the main
 * processor, the coprocessor, or a split (co_lo, co_hi: the coprocessor's
 * whole lines). ml_rzv_to decides it, for the rank's grant and the engine's. */
typedef struct ml_rzv_dest {
    uint8_t b, cpu;
    uint32_t co_lo, co_hi;
} ml_rzv_dest;

/* A first packet the engine matched for the waiting rank
 * (ml_engine_match.c), in the order it took them: the rank replays each
 * when it wakes (ml_replay_first). */
#define ML_HO_HDR 64 /* header bytes kept for the replay */
typedef struct ml_ho_match {
    int32_t src;           /* the sender's rank */
    uint32_t len;
    uint8_t type, proto;   /* its first packet's type, the upcall's ml_proto */
    uint8_t row, hl;
    uint16_t slot, sender_id; /* rendezvous: the reserved slot, the sender's message id */
    uint16_t seq;          /* its per-pair sequence number */
    uint8_t sent;          /* rendezvous: the grant went (0: its FIFO was full: the rank sends it) */
    uint8_t rxi;           /* its reception's place in rx[] (ML_HO_RX: none there) */
    ml_rzv_dest to;
    uint8_t hdr[ML_HO_HDR];
} ml_ho_match;

typedef struct ml_wait_state {
    ml_resume res;       /* the answer: where this rank's advance picks up */
    uint32_t polls;      /* empty advances of the loop before it blocks */
    uint32_t flat;       /* 1: no advances, only polls; the first empty one blocks
                            (the CO coprocessor's loop) */
    uint32_t batch;      /* packets one advance reads at most */
    uint32_t empties;    /* handed over at its start: empty advances in a row done */
    uint32_t ntx;
    uint32_t nring, ring_pos; /* tx[0..nring) are the send ring's peers in ring order (a
                                 round starts at ring_pos, which moves on after each) */
    uint32_t nrx;
    uint32_t nwt, ngranted; /* wt[0..nwt): sends waiting for a grant; grants the engine took */
    /* the loop's state while the engine runs it (its advance's cursor is res) */
    uint32_t blocked, inj_full;
    /* the coprocessor's loop (flat): 1 + the id of a reception it completed
     * whose notice to the main processor has still to go (ml_co_tell) */
    uint32_t co_owe;
    uint32_t nfin;       /* completions the engine recorded (ml_ho_tx.fin, ml_ho_rx.fin, co_fin) */
    uint32_t nwait;      /* what the wait is for (ml_wait_for's first ML_HO_WAIT,
                            distinct): wait_for[0..nwait) */
    uint32_t wait_left;  /* of those, not yet complete: each quiet 2 completion counts one */
    uint32_t wait_done;  /* the last of them completed: the advance ends the
                            engine's loop (ML_RESUME_OVER) */
    uint32_t why;        /* the engine's: why it handed the rank back (ML_BACK_*) */
    /* the main processor's loop: the coprocessor's notices the engine
     * took: of receptions whose completion may be recorded (read from
     * ml->slots, co_slots, against what the wait is for, wait_for), slot
     * ids and their places among the completions; of a split's part
     * (id | ML_CO_PART, place 0), counted in its reception's got */
    uint32_t nco_fin;
    uint16_t co_fin[ML_HO_COFIN], co_fin_n[ML_HO_COFIN];
    uint64_t wait_for[ML_HO_WAIT];
    /* where the main processor sets up the receptions it grants to the
     * coprocessor (ml->slots, ml->co_part, ml_co_rx): the coprocessor's
     * loop reads one granted after the hand-off at its first data packet,
     * the main processor's one the coprocessor completed at its notice;
     * the engine writes there the receptions of the scouts it takes */
    uint64_t co_slots, co_parts;
    /* the posted receives (ml_match_for) the engine may match a message's
     * first packet to, and the slots this rank reserved for the scouts it
     * takes (res_slot: free when described, in the order it takes them) */
    uint32_t nposted, nres, ntaken, nslots; /* nslots: reserved slots taken */
    uint32_t grant_owe;  /* 1 + the scout whose grant is still to go, */
    uint32_t grant_proc; /* to this processor */
    uint32_t co_running; /* the coprocessor receives (CO mode) */
    uint64_t peers, ranks; /* ml->peer, ml->map.rank */
    ml_match_rule rule;
    uint16_t res_slot[ML_HO_TAKEN];
    ml_ho_tx tx[ML_HO_TX];
    ml_ho_rx rx[ML_HO_RX];
    ml_ho_wt wt[ML_HO_WT];
    ml_ho_post posted[ML_HO_POST];
    ml_ho_match taken[ML_HO_TAKEN];
} ml_wait_state;
_Static_assert(sizeof(ml_wait_state) <= TSIM_HANDOFF_BYTES, "the wait loop's state fits a hand-off");

/* A completion's `quiet` in the wait d describes (ml_wait_for): 2 for
 * one of what the wait is for (the last of them ends it), 1 for another
 * that only completes something (what != 0), 0 in a wait that names
 * nothing. */
static inline uint8_t ml_ho_quiet(const ml_wait_state *d, uint64_t what)
{
    if (!what || !d->nwait) return 0;
    for (uint32_t i = 0; i < d->nwait; i++)
        if (d->wait_for[i] == what) return 2;
    return 1;
}

/* The engine hands the rank back where its own advance picks up (the
 * cursor stands there already). why: ML_BACK_*. */
static inline int ml_ho_back(ml_wait_state *st, uint32_t why)
{
    st->res.inj_full = st->inj_full << 8;
    st->why = why;
    return TSIM_RUN_BACK;
}

/* A completion the engine records for the rank (ml_wait_for): the
 * callback's charge (ml_msg_finished's, ml_rx_complete's) here, the rest
 * the rank's when it wakes, in the order of these places (1, 2, ...).
 * The last of what the wait is for (quiet 2) ends the loop with its
 * advance (ml_engine.c's wait_step). */
static inline uint32_t ml_ho_record(tsim_port *pt, ml_wait_state *st, uint8_t quiet)
{
    tsim_port_charge(pt, pt->prm->ml_callback_cycles);
    if (quiet == 2 && st->wait_left && --st->wait_left == 0) st->wait_done = 1;
    return ++st->nfin;
}

/* ml_engine_match.c: a message's first packet (f: its FIFO, a: the
 * advance's cursor) matched to a receive the waiting rank posted, taken
 * by its protocol's engine driver (ml_proto_ops.take): 1, or TSIM_RUN_*
 * (TSIM_RUN_BACK: the rank takes it). */
int ml_engine_first(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_resume *a);
/* The sender of t, into t->src, if t is its next first packet with none
 * held behind: 0, or TSIM_RUN_* (TSIM_RUN_BACK: the rank takes it). A
 * protocol's take asks it once it would take the packet, before it
 * changes anything. */
int ml_engine_sender(tsim_port *pt, ml_wait_state *st, const tsim_slot *s, ml_ho_match *t);
/* A message whose data starts in its first packet: the sender checked
 * (ml_engine_sender), the first packet's bytes into the receive's buffer,
 * taken (ml_engine_taken), its reception the engine's from there (data
 * packets of type dtype; complete already: recorded). 1 or TSIM_RUN_*. */
int ml_engine_land(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                   ml_proto proto, uint64_t cycles, uint8_t dtype, ml_resume *a);
/* The taken message's reception rx, its packets (type, id) from src (or
 * UINT32_MAX) the engine's from here, described as a hand-off describes
 * one (ml_ho_rx_set), its completion quiet as the wait says. */
ml_ho_rx *ml_engine_rx(ml_wait_state *st, ml_ho_match *t, const ml_rx *rx, uint32_t src, uint8_t type, uint16_t id,
                       uint32_t lo);
/* What every taking does once the protocol takes the packet: read,
 * dispatched, charged as the rank's dispatch, the protocol's first-packet
 * handler (cycles) and the upcall would be; its receive taken; *t kept
 * for the replay. */
void ml_engine_taken(tsim_port *pt, ml_wait_state *st, int f, const ml_ho_match *t, uint64_t cycles,
                     ml_resume *a);
/* The grant of the scout it took last (grant_owe), at the clock: 1, or
 * TSIM_RUN_WAIT, or TSIM_RUN_BACK when its FIFO is full (the rank sends it). */
int ml_engine_grant(tsim_port *pt, ml_wait_state *st, ml_resume *a);
/* The reception a described receive gives a message it matches, as the
 * upcall would answer (ml_recv). */
ml_recv ml_ho_post_recv(const ml_ho_post *p, ml_proto proto, unsigned token);

/* A completion of quiet q would end the wait: the engine would then go on
 * with the advance to its end, polls it must settle first, where the rank
 * itself stops at the first such poll and returns (ml_advance_then_hand):
 * a message complete at its first packet is then the rank's, as before. */
static inline int ml_ho_ends_wait(const ml_wait_state *st, uint8_t q)
{
    return q == 2 && st->wait_left == 1;
}

struct ml_ctl;

struct ml_ctx {
    pl_proc *pp;
    tsim_port port;             /* pp as a port: the data path's (ml_data.c) */
    tsim_port co_port;          /* the coprocessor's */
    struct ml_ctl *ctl_head, *ctl_tail; /* control packets waiting for room */
    ml_msg *data_head;          /* rendezvous / VN fallback data going out */
    unsigned inj_full;          /* TSIM_WAKE_INJ bits of FIFOs found full */
    int owns_pp;
    int rank;
    ml_mode mode;
    ml_map map;
    const tsim_params *prm;
    ml_upcall_fn upcall;
    void *uarg;
    ml_peer *peer;
    int *ring, nring, ring_pos; /* peers with queued sends, round robin */
    ml_msg *ids[ML_MAX_IDS];    /* sends waiting for the other side */
    uint16_t next_id;
    ml_rx slots[ML_MAX_IDS];    /* rendezvous / VN receptions */
    /* the coprocessor's part of split reception k: its data packets carry
     * id k | ML_CO_PART (set up by the main processor before the grant,
     * then the coprocessor's until its T_CO_RZV_DONE) */
    ml_rx co_part[ML_MAX_IDS];
    int depth;                  /* advance re-entry */
    int outstanding;            /* sends not yet done */
    ml_stats st;
    /* coprocessor (CO mode) */
    pl_proc co;
    pthread_t co_thread;
    int co_running;
    ml_cowork_fn co_fn;
    void *co_arg;
    volatile int co_done;
    uint64_t co_reordered;      /* written by the coprocessor thread only */
    /* the coprocessor's receptions with data still to come, for the engine
     * to read while it is idle (coprocessor thread only) */
    ml_rx *co_act[ML_HO_RX];
    uint16_t co_act_id[ML_HO_RX];
    int co_nact;
    int vn_copy_ok;             /* process_vm_readv usable */
    /* work the engine does while this processor waits (ml_proxy.c) */
    ml_rx *act_head;            /* receptions with data still to come */
    int proxy;                  /* describe waits to the engine (BGLEMU_PROXY != 0) */
    int stage;                  /* stage fragmented layouts on the host (BGLEMU_STAGE != 0) */
    ml_resume resume;           /* where the next advance picks up */
    ml_wait_fn wait_for;        /* ml_wait_for */
    ml_posted_fn posted;        /* ml_match_for */
    ml_rx *reg_rx[ML_HO_RX];    /* what the last hand-off named */
    ml_msg *reg_tx[ML_HO_TX];
    ml_msg *reg_wt[ML_HO_WT];
    int reg_ntx;
    /* the ids of the last rendezvous scouts sent (ml_rzv.c): the sends a
     * hand-off may name as waiting for their grants */
    uint16_t rzv_wait[ML_HO_WT];
    unsigned rzv_wait_pos;
    ml_packet_fn user_fn[256 - ML_TYPE_USER]; /* ml_register_packet */
    void *user_arg[256 - ML_TYPE_USER];
};

/* Who receives a rendezvous message (the grant's b). BG/L's L1 caches are
 * not coherent (32-byte lines): the coprocessor must not write a line the
 * main processor may hold. A flat buffer not aligned to ml_coproc_align is
 * split: the coprocessor takes its whole lines [head, ml_split_end), the
 * main processor the partial lines before and after (head, the tail: less
 * than a line each); b = ML_CPU_SPLIT + head. Each part's packets end at
 * its boundaries, so no packet straddles two cpus (docs/calibration.md). */
enum { ML_CPU_MAIN, ML_CPU_CO, ML_CPU_SPLIT };
#define ML_CO_PART 0x8000u /* data packet id: the coprocessor's part of a split */
_Static_assert(ML_MAX_IDS <= ML_CO_PART, "slot ids must leave ML_CO_PART free");

/* The reception the coprocessor's data packet id names: a whole message's
 * slot, or a split's coprocessor part (id | ML_CO_PART), both set up by
 * the main processor before its grant. The engine computes the same
 * address in the rank from the hand-off's co_slots and co_parts. */
static inline ml_rx *ml_co_rx(ml_rx *slots, ml_rx *parts, uint16_t id)
{
    return id & ML_CO_PART ? &parts[id & (ML_CO_PART - 1)] : &slots[id];
}

/* End of the coprocessor's whole lines of a split (len, head < align). */
static inline size_t ml_split_end(size_t len, size_t head, size_t align)
{
    return head + (len - head) / align * align;
}

/* The part of a message offset off lies in, for a grant's b: the
 * offset the part ends at; *co says whether it is the coprocessor's.
 * Packets of a part are at most TSIM_PAYLOAD_MAX from its start on. */
static inline size_t ml_part_end(uint8_t b, size_t len, size_t align, size_t off, int *co)
{
    *co = b == ML_CPU_CO;
    if (b < ML_CPU_SPLIT) return len;
    size_t head = (size_t)(b - ML_CPU_SPLIT), mid = ml_split_end(len, head, align);
    if (off < head) return head;
    if (off < mid) {
        *co = 1;
        return mid;
    }
    return len;
}

/* ---- protocols (ml_onepkt.c, ml_eager.c, ml_rzv.c, ml_vn.c) ---------- *
 * Each protocol owns its packet types (ml_recv.c's table): how its
 * messages go out, what its first packet and its other packets do at the
 * receiver, and how its data packets are described on the wire, which is
 * what the rank and the engine both send from (ml_data.c). */
typedef struct ml_proto_ops {
    const char *name;
    /* sends the next packet of m, the head of peer p's queue (a first
     * packet, or data right behind it): 1 if one went out */
    int (*send)(ml_ctx *ml, ml_peer *p, ml_msg *m);
    /* its first packet arrived, in per-pair send order */
    void (*first)(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw);
    /* a packet of one of its other types */
    void (*packet)(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw);
    /* m's data packets from m->off, as the wire carries them (NULL: none) */
    void (*wire)(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t);
    /* the engine's driver of `first` for a waiting rank: the packet in FIFO
     * f, matched to the described receive t->row (ml_engine_match.c):
     * 1 taken (ml_engine_taken), or TSIM_RUN_* (NULL: the rank's always) */
    int (*take)(tsim_port *pt, ml_wait_state *st, int f, const tsim_slot *s, ml_sw sw, ml_ho_match *t,
                ml_resume *a);
    /* the rank's end of a taking, as it wakes: r is the upcall's answer,
     * the engine's landing; *tmp a reception that lives until the
     * engine's completions have run */
    void (*replay)(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, const ml_recv *r, ml_rx *tmp);
} ml_proto_ops;
extern const ml_proto_ops ml_onepkt_proto, ml_eager_proto, ml_rzv_proto, ml_vn_proto;
const ml_proto_ops *ml_proto_of(ml_proto p);
/* 1 if a packet of software type `type` starts a message (its upcall
 * runs MPI's matching), 0 for one that carries a message's data or a
 * protocol's answer. */
int ml_type_starts(unsigned type);
/* The protocol whose first packet has this type, or NULL. */
const ml_proto_ops *ml_type_first(unsigned type);
/* A first packet the engine took while this rank waited, replayed as it
 * wakes, before anything else (ml_handoff.c's apply): the per-pair order
 * moves on, the upcall runs again, uncharged (MPI's part of the match),
 * and must land the message where the engine did, or the job ends naming
 * this rank; then its protocol's replay. */
void ml_replay_first(ml_ctx *ml, const ml_wait_state *d, const ml_ho_match *t, ml_rx *tmp);
/* ml_accept's answer for a deferred message of each protocol */
void ml_rzv_accept(ml_ctx *ml, uint16_t slot);
/* Where a rendezvous reception of len bytes whose data goes to `at` (a
 * buffer of cap bytes, or a layout's first segment) is received. */
void ml_rzv_to(uint64_t at, int layout, uint64_t cap, uint64_t len, size_t align, int co_running,
               ml_rzv_dest *d);
/* Reception rx takes d; a split's coprocessor part is set up in *part
 * (NULL: it is already). */
void ml_rzv_bind(ml_rx *rx, ml_rx *part, const ml_rzv_dest *d);
/* The grant of a scout the engine took and could not send (its FIFO was
 * full): the rank's, once the engine's cursor is back. */
void ml_rzv_owed(ml_ctx *ml, const ml_ho_match *t);
/* Rendezvous (ml_rzv.c), the grant at the sender. A send waiting for its
 * grant as the wire will carry its data (t->id: the message id the grant
 * names). */
void ml_rzv_waiting(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t);
/* The grant's part of a send's wire description t (its buffer, full
 * length, destination's cpu group, offset t->off): the receiver's slot,
 * the receiving cpu's group and the end of the part t->off lies in. The
 * rank's wire (rzv_wire) and the engine's taking of a grant for a blocked
 * sender (ml_engine.c) both use it. 0, or -1 for a b the message can't
 * have (the engine then leaves the grant to the rank). */
int ml_rzv_grant(ml_ho_tx *t, uint16_t slot, uint8_t b, size_t align);
/* t has sent its part of a split to its end: the next part, as the
 * rank's description of the message at that offset would be. 0, or -1 if
 * t holds none. */
int ml_rzv_next_part(ml_ho_tx *t, size_t align);
/* Message id's grant (slot, b) arrived: its data joins the data list. */
void ml_rzv_granted(ml_ctx *ml, uint16_t id, uint16_t slot, uint8_t b);
void ml_vn_accept(ml_ctx *ml, uint16_t slot);

/* ---- the data path (ml_data.c): one implementation, two drivers ------- */
/* n bytes of message t at offset off, wherever the driver reads them */
typedef const void *(*ml_bytes_fn)(void *arg, const ml_ho_tx *t, uint64_t off, size_t n);
/* Charges the gather of bytes [off, off + n) of a layout, once per offset
 * (t->charged); cur walks iov, the layout's segments as the driver sees them. */
void ml_data_charge(tsim_port *pt, ml_ho_tx *t, const struct iovec *iov, ml_cursor *cur, uint64_t off,
                    size_t n);
/* One data packet of t at t->off, if its FIFO has room: 1 (t->off moved
 * on), 0 (its FIFO is full at the clock), TSIM_RUN_WAIT (the engine's
 * port can't tell yet), TSIM_RUN_FAIL (its bytes could not be read).
 * Inline: a sender waiting for room tries at every advance. */
static inline int ml_data_send(tsim_port *pt, ml_ho_tx *t, const struct iovec *iov, ml_cursor *cur,
                               ml_bytes_fn bytes, void *arg)
{
    size_t n = t->len - t->off < TSIM_PAYLOAD_MAX ? (size_t)(t->len - t->off) : TSIM_PAYLOAD_MAX;
    /* the packet is gathered before its FIFO is tried, and charged once
     * however often a full FIFO makes it be tried again */
    if (t->niov && t->charged != t->off + 1) ml_data_charge(pt, t, iov, cur, t->off, n);
    int room = tsim_port_room(pt, t->fifo, tsim_chunks(n));
    if (room != 1) return room == TSIM_PORT_WAIT ? TSIM_RUN_WAIT : 0;
    const void *data = bytes(arg, t, t->off, n);
    if (!data) return TSIM_RUN_FAIL;
    tsim_hwhdr hw;
    tsim_header(pt->g, &hw, (int)t->dst, n, t->flags, t->group);
    ml_sw sw = {t->type, 0, t->id, (uint32_t)t->off};
    uint8_t sw8[8];
    memcpy(sw8, &sw, sizeof sw8);
    pt->ops->inject(pt, t->fifo, &hw, sw8, data, n);
    t->off += n;
    return 1;
}
/* Where a reception's bytes go: a buffer (or a layout's host stage) of cap
 * bytes, or a layout (niov > 0, buf 0) walked with cur. */
typedef struct ml_sink {
    uint64_t buf, cap;
    const struct iovec *iov;
    uint64_t niov;
    ml_cursor *cur;
} ml_sink;
/* Writes the bytes of a data packet at message offset off: the layout
 * segments it touched (to be charged at ddt_seg_cycles), or -1 if a write
 * failed (the engine's port: the rank's memory is gone). */
int ml_data_put(tsim_port *pt, const ml_sink *k, uint64_t off, const void *data, size_t n);
/* Bytes a data packet at offset off carries, of a reception of len bytes
 * whose packets below lo end at lo (0: none): a part's packets end at its
 * boundary (a split rendezvous reception's main processor's head). */
static inline size_t ml_data_bytes(uint64_t lo, uint64_t len, uint64_t off)
{
    uint64_t end = off < lo ? lo : len;
    return end - off < TSIM_PAYLOAD_MAX ? (size_t)(end - off) : TSIM_PAYLOAD_MAX;
}
/* A data packet at offset off seen: an offset below the highest one seen
 * arrived out of order. */
static inline void ml_data_seen(uint64_t *hi, uint64_t *reordered, uint64_t off)
{
    if (off < *hi) (*reordered)++;
    else *hi = off;
}

/* ---- what protocols share: sending (ml_send.c) ------------------------ */
int ml_send_progress(ml_ctx *ml);
int ml_send_phase(ml_ctx *ml, int pos, int sent);
/* Injects now if it can (-1, the FIFO noted in inj_full, if full). */
int ml_try_inject(ml_ctx *ml, int dst_proc, int fifo, unsigned flags, unsigned group, const ml_sw *sw,
                  const void *a, size_t alen, const void *b, size_t blen);
/* Injects now or queues it as a control packet. */
void ml_inject(ml_ctx *ml, int dst_proc, int fifo, unsigned flags, unsigned group,
               const ml_sw *sw, const void *a, size_t alen, const void *b, size_t blen);
void ml_msg_finished(ml_ctx *ml, ml_msg *m);
/* Its completion without its cost (charged where the engine recorded it). */
void ml_msg_done(ml_ctx *ml, ml_msg *m);
void ml_pop_head(ml_peer *p);
int ml_fifo_for(const ml_ctx *ml, int dst_rank); /* injection FIFO by direction */
/* The same from node to processor dst_proc, for either driver. */
int ml_fifo_to(const tsim_geom *g, int node, int dst_proc);
/* The n bytes at offset off of m's data (a layout's gather charged once
 * per offset): in place, or gathered into tmp. */
const void *ml_msg_bytes(ml_ctx *ml, ml_msg *m, size_t off, size_t n, uint8_t *tmp);
/* m's data packets from m->off, to its destination's processor from its
 * buffer (a layout: its host stage or its segments): what every wire
 * description shares; the protocol names the rest. */
void ml_wire_of(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t, uint8_t type, uint16_t id, uint8_t fifo,
                uint8_t flags, uint8_t group);
/* One data packet of m as its protocol's wire describes it: 1 if it went. */
int ml_data_step(ml_ctx *ml, ml_msg *m);
/* The one packet of a message that then waits for the receiver's answer:
 * the header, then the id the answer will name (alone, or inside the VN
 * address block `extra`). 1 if it went out. */
int ml_send_with_id(ml_ctx *ml, ml_peer *p, ml_msg *m, int dproc, int fifo, const ml_sw *sw,
                    void *extra, size_t extralen);
/* The receiver answered m (its slot, the grant's b): its data goes out
 * from the data list. */
void ml_data_phase(ml_ctx *ml, ml_msg *m, uint16_t slot, uint8_t b);

/* ---- what protocols share: receiving (ml_recv.c) ---------------------- */
void ml_dispatch(ml_ctx *ml, const tsim_slot *s);
ml_sw ml_sw_of(const tsim_slot *s);
/* Bytes of payload a packet carries (its chunks minus the header). */
static inline size_t ml_payload_of(const tsim_slot *s)
{
    return (size_t)s->p.hw.chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
}
/* Places data of a reception through port pt (ml_data_put), counting an
 * offset below one already seen; returns the layout segments it touched,
 * to be charged. */
unsigned ml_rx_write(tsim_port *pt, ml_rx *rx, uint64_t *reordered, uint64_t off, const void *data,
                     size_t n);
/* The same on this rank, charged. */
void ml_rx_data(ml_ctx *ml, ml_rx *rx, uint64_t off, const void *data, size_t n);
void ml_rx_set_cap(ml_ctx *ml, ml_rx *rx);
/* A reception's completion: ml_callback_cycles, then ml_rx_finish. */
void ml_rx_complete(ml_ctx *ml, ml_rx *rx);
/* Its host side: off the active list, a staged layout scattered, the slot
 * freed, the callback run (alone where the engine charged the completion
 * and recorded it: ml_wait_state.nfin). */
void ml_rx_finish(ml_ctx *ml, ml_rx *rx);
/* A message arrives: the user's upcall says where it goes (rx). */
void ml_upcall(ml_ctx *ml, int src, const uint8_t *hdr, size_t hl, size_t len, ml_rx *rx, ml_proto proto,
               unsigned token);
uint16_t ml_slot_alloc(ml_ctx *ml);
/* A reception begins: r (the upcall's answer), len bytes from rank src. */
void ml_rx_begin(ml_rx *rx, const ml_recv *r, uint64_t len, int src);
/* Holds a packet for later, in arrival order (replayed after the next
 * first packet of its peer). */
void ml_stash(ml_peer *p, const tsim_slot *s);
void ml_send_ctl(ml_ctx *ml, int src, int fifo, uint8_t type, uint8_t b, uint16_t id, uint32_t w);
size_t ml_layout_bytes(const struct iovec *iov, size_t niov);
/* Charges datatype work (also counted in the processor's ddt_cycles). */
void ml_charge_ddt(pl_proc *pp, uint64_t cycles);
#define ML_ADVANCE_BATCH 64 /* packets one advance reads at most */

/* ---- the advance (ml_core.c): one loop, two drivers ------------------- *
 * One advance of the message layer: a send round, then polls until one
 * finds nothing or `batch` packets were read, then, if anything moved,
 * another send round. Written once as a resumable step over a cursor
 * (ml_resume) and run by the rank (ml_advance: its send phase, its
 * dispatch) and by the engine (ml_engine.c: the messages and receptions
 * handed over; anything else hands the rank back, the cursor where the
 * rank's advance goes on). */
typedef struct ml_adv_ops {
    /* 0 while what the driver would observe at its clock is not final yet
     * (the engine's: TSIM_RUN_WAIT at every step until it is); NULL: always */
    int (*ready)(void *ctx);
    /* a send phase from the cursor (round_pos, round_sent, fresh), adding
     * what it sent to moved: 0 when a round sent nothing, or TSIM_RUN_* */
    int (*send_round)(void *ctx, ml_resume *a);
    /* one poll: 1 a packet was taken, 0 none was visible (charged), or TSIM_RUN_* */
    int (*take)(void *ctx, ml_resume *a);
} ml_adv_ops;
/* Starts an advance at its head send round. */
static inline void ml_adv_begin(ml_resume *a)
{
    a->point = ML_RESUME_ADVANCE;
    a->moved = a->consumed = a->round_pos = a->round_sent = a->empty = 0;
    a->fresh = 1;
}
/* Runs the advance from the cursor: 0 when it is over (a->moved: what it
 * moved, a->empty: its polls ended empty), or the first TSIM_RUN_* an
 * operation returned (the cursor then stands where it is taken up again).
 * Inline, so that each driver's instance calls its operations directly. */
static inline int ml_adv_step(ml_resume *a, const ml_adv_ops *ops, void *ctx, uint32_t batch)
{
    for (;;) {
        int rc;
        if (ops->ready && !ops->ready(ctx)) return TSIM_RUN_WAIT;
        switch (a->point) {
        case ML_RESUME_ADVANCE:
        case ML_RESUME_TAIL:
            if ((rc = ops->send_round(ctx, a)) != 0) return rc;
            a->round_pos = a->round_sent = 0;
            if (a->point == ML_RESUME_TAIL) {
                a->point = ML_RESUME_DONE;
                return 0;
            }
            a->point = ML_RESUME_POLL;
            a->consumed = 0;
            break;
        case ML_RESUME_POLL:
            if (a->consumed < batch) {
                if ((rc = ops->take(ctx, a)) > 1) return rc;
                if (rc == 1) {
                    a->consumed++;
                    a->moved++;
                    break;
                }
                a->empty = 1;
            }
            if (!a->moved) {
                a->point = ML_RESUME_DONE;
                return 0;
            }
            a->point = ML_RESUME_TAIL;
            a->fresh = 1;
            break;
        default:
            return 0;
        }
    }
}


/* ml_core.c: blocks until a packet arrives or a full FIFO has room. */
int ml_block(ml_ctx *ml, const char *why);
/* ml_handoff.c */
/* A reception whose data packets (type, id) are still to come / is over. */
void ml_act_add(ml_ctx *ml, ml_rx *rx, uint8_t dtype, uint16_t did);
/* rx as a hand-off describes it (ml_ho_rx): by the rank, of its own
 * receptions, and by the engine, of a reception it read from the rank */
void ml_ho_rx_set(ml_ho_rx *r, const ml_rx *rx, uint32_t src, uint8_t type, uint16_t id, uint32_t lo);
void ml_act_del(ml_ctx *ml, ml_rx *rx);
/* The coprocessor blocks, handing the engine its receptions in progress
 * (a flat loop: polls until one finds nothing, then block; start: from its
 * next poll). 0, or -1 if the job aborts. */
int ml_coproc_handoff(ml_ctx *ml, pl_proc *co, int start);
/* The coprocessor's notice to its main processor (T_CO_*, over the
 * scratchpad), by either driver: 1 sent, 0 (its FIFO is full at the
 * clock), TSIM_RUN_WAIT or TSIM_RUN_FAIL. ml_co_send waits for room. */
int ml_co_tell(tsim_port *pt, uint8_t type, uint16_t id);
void ml_co_send(ml_ctx *ml, uint8_t type, uint16_t id);
/* ml_coproc.c */
int ml_coproc_start(ml_ctx *ml);
void ml_coproc_stop(ml_ctx *ml);

static inline void ml_charge(ml_ctx *ml, uint64_t cycles) { pl_charge(ml->pp, cycles); }

#endif
