/* messagelayer: BG/L active messages over the packet layer.
 *
 * A send is an ml_msg the caller owns (it can live inside an MPI request)
 * until its done callback runs. A message's arrival at its receiver raises
 * the receive upcall with the sender's header; the upcall says where the
 * data goes and which callback completes it. Upcalls between one pair of
 * ranks run in send order, whatever protocols the messages used. Nothing
 * happens outside ml_advance (and the helpers that call it), which may be
 * called from any progress loop and re-entered from callbacks.
 *
 * Protocols (docs/messagelayer.md): one-packet, eager (deterministic, one
 * injection FIFO per destination), adaptive eager (dynamic packets,
 * confirmed at match), rendezvous (deterministic scout, grant, dynamic data
 * carrying offsets; received by the coprocessor in CO mode when it runs),
 * and the VN protocol between the two cpus of a node (address passing and a
 * direct copy). */
#ifndef ML_H
#define ML_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../packetlayer/pl.h"
#include "ml_map.h"
#include "../torus-sim/tsim_prog.h"

#define ML_HDR_MAX 128 /* largest user header carried with a message (MPIDIG's fit) */

typedef enum ml_proto {
    ML_AUTO = 0, /* choose by size and peer (thresholds are parameters) */
    ML_ONEPKT,
    ML_EAGER,
    ML_ADAPTIVE,
    ML_RZV,
    ML_VN,
    ML_NPROTO
} ml_proto;

_Static_assert(ML_NPROTO <= TSIM_NSW_KINDS, "per-protocol counters in the segment");

typedef enum ml_mode { ML_MODE_CO, ML_MODE_VN, ML_MODE_HEATER } ml_mode;

typedef struct ml_ctx ml_ctx;
typedef void (*ml_done_fn)(ml_ctx *ml, void *arg);

/* ---- layouts: data as a list of segments (ml_layout.c) ----------------
 * A derived datatype translated by the layer above. Every walk of one (the
 * message layer's and the collectives' data paths, whoever drives them:
 * the rank or the engine) goes through these, so the segment counts, which
 * cost simulated time, are the same by construction. A cursor keeps the
 * segment where the last piece ended (i) and the offset of the data at
 * which it begins (base), so that walks in offset order never search. */
typedef struct ml_cursor {
    size_t i, base;
} ml_cursor;
/* The piece of the layout at data offset off, at most n bytes: its address
 * in *addr, its length returned (0: off is past the layout's end). */
size_t ml_layout_piece(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, size_t n,
                       uint64_t *addr);
/* The segments bytes [off, off + n) touch. */
unsigned ml_layout_segs(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, size_t n);
/* Copies n bytes at data offset off between the layout and flat (gather:
 * into flat); returns the segments it touched (ml_layout_segs's count). */
unsigned ml_layout_copy(const struct iovec *iov, size_t niov, ml_cursor *c, size_t off, void *flat,
                        size_t n, int gather);

/* A message being sent. Fill the public fields (or use ml_send), keep it
 * alive and unchanged until done runs. */
typedef struct ml_msg {
    int dst;                 /* destination rank */
    const void *hdr;         /* user header, <= ML_HDR_MAX bytes */
    size_t hdrlen;
    const void *buf;         /* data, any alignment */
    size_t len;
    /* or a layout (niov > 0, buf unused): the data is the niov segments one
     * after the other, len their total; each packet is gathered straight
     * from them (zero-copy), the VN protocol passes the list itself */
    const struct iovec *iov;
    size_t niov;
    /* a layout's identity, 0 for none: equal keys promise equal segment
     * lengths and offsets from the first segment (a memoized datatype), so
     * a VN receiver that has seen the key skips reading the list's costs */
    uint64_t layout_key;
    ml_proto proto;          /* ML_AUTO or a forced protocol */
    ml_done_fn done;         /* the buffer may be reused */
    void *arg;
    /* what done completes, when that is all it does (it charges nothing,
     * sends nothing: an MPI request marked complete), else NULL: such a
     * completion may run later, in a wait that is not for it (ml_wait_for) */
    const void *completes;
    /* private */
    struct ml_msg *next;
    size_t off;              /* bytes packetized so far */
    ml_cursor cur;           /* layout: where the last packet's gather was charged */
    ml_cursor rcur;          /* layout: where the last packet was gathered */
    size_t charged;          /* layout: 1 + the offset whose gather was charged */
    uint8_t *stage;          /* layout: its bytes gathered on the host, or NULL (ml_layout.c) */
    uint16_t seq, id;
    uint8_t state, used;
} ml_msg;

/* Where an arriving message goes, filled in by the upcall. Data beyond cap
 * is dropped (the upcall sees len and can report truncation). */
typedef struct ml_recv {
    void *buf;
    size_t cap;
    /* or a layout (niov > 0: buf and cap unused, the capacity is the
     * segments' total): each packet is scattered straight into it */
    const struct iovec *iov;
    size_t niov;
    ml_done_fn done;
    void *arg;
    /* what done completes, when that is all it does (as ml_msg's): the
     * completion may run later, in a wait that is not for it */
    const void *completes;
    /* rendezvous and VN only: set defer to 1 to answer later (e.g. when a
     * matching receive is posted): the sender waits, and ml_accept(token,
     * ...) sends the grant (rendezvous) or copies the data from the sender's
     * buffer (VN). The other fields are ignored then. */
    uint8_t defer;
    /* given to the upcall (read-only): the message's protocol (ml_proto),
     * and the token ml_accept needs */
    uint8_t proto;
    unsigned token;
} ml_recv; /* 64 bytes, as before completes: two regress jobs follow libmpi's heap layout (docs/simulated-time.md) */

/* Called, in per-pair send order, when a message from rank src arrives. */
typedef void (*ml_upcall_fn)(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len,
                             ml_recv *out, void *uarg);

/* Answers a rendezvous or VN message whose upcall deferred it: its data
 * goes to buf (cap bytes), done runs when it is there. Returns 0, or -1 for
 * a token that is not a deferred message. */
int ml_accept(ml_ctx *ml, unsigned token, void *buf, size_t cap, ml_done_fn done, void *arg);
/* The same into a layout of niov segments. */
int ml_accept_iov(ml_ctx *ml, unsigned token, const struct iovec *iov, size_t niov, ml_done_fn done,
                  void *arg);

/* Opens the message layer on an open processor of seg (rank `rank`).
 * mode CO starts the coprocessor thread on cpu 1 of the node. */
ml_ctx *ml_init(pl_proc *pp, int rank, ml_mode mode, ml_upcall_fn upcall, void *uarg);
/* For a rank started by mpirun: attach from the environment (BGLEMU_*),
 * mode from BGLEMU_MODE (CO, VN or HEATER; default by the machine). */
ml_ctx *ml_init_env(ml_upcall_fn upcall, void *uarg, char *err, size_t errlen);
/* Waits for outstanding sends, stops the coprocessor, closes. */
void ml_finalize(ml_ctx *ml);

int ml_rank(const ml_ctx *ml);
int ml_nranks(const ml_ctx *ml);
pl_proc *ml_proc(ml_ctx *ml);
const ml_map *ml_get_map(const ml_ctx *ml);
/* The protocol ML_AUTO picks for len bytes with an hdrlen header to dst. */
ml_proto ml_choose(const ml_ctx *ml, int dst, size_t hdrlen, size_t len);
const char *ml_proto_name(ml_proto p);
/* Parses a protocol name (one-packet, eager, adaptive-eager, rendezvous, vn,
 * auto); -1 if unknown. */
int ml_proto_parse(const char *name);

/* Posts a send; returns 0, or -1 for a bad destination or header. */
int ml_send(ml_ctx *ml, ml_msg *m);
/* Makes progress: injects queued packets, dispatches arrived ones.
 * Returns the number of packets moved. */
int ml_advance(ml_ctx *ml);
/* The same in a wait the engine just gave back (ml_wait_delegate returned
 * 0) for a request still incomplete (ml_wait_for): at a poll only a sync
 * could answer it stops instead, the advance's cursor kept
 * (ml_advance_stopped), for the next ml_wait_delegate to hand the rest of
 * it to the engine, or for the next ml_advance to finish. */
int ml_advance_then_hand(ml_ctx *ml);
/* 1 while an advance ml_advance_then_hand stopped is not over. */
int ml_advance_stopped(const ml_ctx *ml);
/* Advances until *flag becomes nonzero, blocking in simulated time while
 * nothing can move. Returns -1 if the job aborts. */
int ml_wait(ml_ctx *ml, volatile int *flag);

/* 1 while sends (or control packets) of this rank have not all left. */
int ml_busy(const ml_ctx *ml);
/* TSIM_WAKE_INJ bits of the injection FIFOs the message layer found full
 * (what a caller that blocks on its own must also wait for). */
unsigned ml_inj_wait(const ml_ctx *ml);

/* After an ml_advance that moved nothing: blocks in simulated time until a
 * packet arrives or a full injection FIFO this rank waits on has room.
 * Returns -1 if the job aborts. A progress loop is
 *     while (!done) if (!ml_advance(ml) && ml_idle(ml, "why") != 0) break; */
int ml_idle(ml_ctx *ml, const char *why);

/* ml_idle for a loop that only advances until a callback changes what it
 * waits for: `polls` empty advances in a row (1 for the loop above) before
 * it blocks. While it is blocked, the engine may do the steps this loop
 * would do that need none of its code — reading data packets of matched
 * receptions, sending the remaining packets of a message — at the same
 * simulated times; it wakes the processor where its code must run. polls 0
 * is ml_idle. */
int ml_wait_idle(ml_ctx *ml, const char *why, unsigned polls);
/* The same loop, handed to the engine before its next advance (it has done
 * `empties` empty advances in a row): the processor blocks at once and the
 * engine runs the loop — its advances, empty polls and blocking included —
 * until this rank's code must run; an advance ml_advance_then_hand
 * stopped goes on there first. Returns 0 after that (the next ml_advance
 * goes on where the engine stopped), 1 if the loop could not be handed
 * over or the engine refused it (advance as usual), -1 if the job aborts. */
int ml_wait_delegate(ml_ctx *ml, const char *why, unsigned polls, unsigned empties);
/* What a wait is for, asked at each hand-off: fills what[] with the
 * `completes` values (ml_msg's, ml_recv's) of the requests the wait is
 * still for, those not complete yet, in its order, at most max; returns
 * how many (0: not known, any completion may end it). arg is the upcall's
 * (ml_init). */
typedef unsigned (*ml_wait_fn)(void *arg, const void **what, unsigned max);
/* Names what the next waits are for (NULL: not known). The wait is over
 * once all of them are complete: MPI_Waitall names all the requests it
 * still waits for, because between two of them it runs no code that costs
 * or changes anything (so the engine goes on with the next one's wait
 * where the rank would have handed it back). While such a wait is handed
 * to the engine, the completions that only complete something are
 * recorded instead of waking the processor, and run (in their order, their
 * cycles charged where they happened) when it wakes. */
void ml_wait_for(ml_ctx *ml, ml_wait_fn fn);

/* The receives this rank has posted, in the order its matching tries
 * them, so that the engine can take a message's first packet for the
 * waiting rank where the upcall would have done the same (ml_match_for):
 * a rendezvous scout (matched, granted, its data received), an eager
 * message (its data received), a one-packet message whose completion may
 * be recorded. The layer knows no header format: the rule says which
 * header words a receive compares (4 bytes at off[i], the bits mask[i])
 * and which bits make a message the upcall's alone (veto). A receive
 * matches a header whose words equal its key[i], or any word where bit i
 * of `any` is set; the first receive that matches is the one the upcall
 * takes. With `land` set, such a message goes where the upcall would put
 * it: a contiguous buffer whose completion only completes something (buf,
 * cap, done, arg and completes, as in ml_recv); without it, the rank's own
 * upcall takes the message. */
#define ML_MATCH_KEYS 4
typedef struct ml_match_rule {
    uint8_t off[ML_MATCH_KEYS];
    uint32_t mask[ML_MATCH_KEYS];
    uint8_t veto_off;
    uint32_t veto_mask;
    uint64_t upcall_cycles; /* what the upcall charges for a message it matches */
} ml_match_rule;
typedef struct ml_posted {
    uint32_t key[ML_MATCH_KEYS];
    uint8_t any;
    uint8_t land;           /* 1: a message it matches lands as below */
    void *buf;
    size_t cap;
    ml_done_fn done;
    void *arg;
    const void *completes;
} ml_posted;
/* Fills rule and up to max receives in matching order; returns how many
 * (0: none, or the matching can't be described now). */
typedef unsigned (*ml_posted_fn)(void *arg, ml_match_rule *rule, ml_posted *rows, unsigned max);
/* Names where the posted receives come from (NULL: nowhere). A first
 * packet the engine took is replayed when the rank wakes, before anything
 * else: the upcall runs again, uncharged (the engine charged it), and must
 * land the message where the engine did, or the job ends naming the rank. */
void ml_match_for(ml_ctx *ml, ml_posted_fn fn);

/* A loop above the message layer that the engine can run too, as a
 * program of the layer that owns it (torus-sim/tsim_prog.h; the
 * collectives' alltoall and tree pass). Such a loop runs inside this
 * rank's advance: its state begins with an ml_resume, where the engine
 * leaves the advance when it hands back. ml_handoff_begin returns the
 * processor's hand-off block for the caller to fill (state[] in its
 * program's format, beginning with a zeroed ml_resume), or NULL when the
 * wait can't be handed over (BGLEMU_PROXY=0, an advance to resume,
 * messages or control packets going out). ml_handoff_block then blocks as
 * ml_idle would, waiting also for room in the injection FIFOs inj_wait
 * (TSIM_WAKE_INJ bits; the collective network's TSIM_WAKE_TREE_* bits
 * too), with `note` for deadlock reports. Returns 1 if the engine ran the
 * program (the state is its answer; the advance goes on where its
 * ml_resume says), 0 if it did not (the loop's next iteration), -1 if the
 * job aborts. */
/* An advance's phases: its head send round, its polls, its tail send
 * round, over; ML_RESUME_OVER, handed back: the engine ran the rank's
 * advance to its end, in which it completed what the rank waits for (the
 * rank's next ml_advance returns what it moved, ml_wait_for). */
enum { ML_RESUME_NONE, ML_RESUME_ADVANCE, ML_RESUME_POLL, ML_RESUME_TAIL, ML_RESUME_DONE, ML_RESUME_OVER,
       ML_RESUME_STOPPED /* the rank's: at a poll, as ml_advance_then_hand left it */ };
typedef struct ml_resume {
    uint32_t point;          /* ML_RESUME_*: the advance's head send round, its polls, its tail one */
    uint32_t moved;          /* packets the resumed advance has moved already */
    uint32_t consumed;       /* packets it has read already */
    uint32_t inj_full;       /* TSIM_WAKE_INJ bits its send round found full */
    uint32_t round_pos;      /* ADVANCE / TAIL: the send round goes on at this position */
    uint32_t round_sent;     /* ... with this many packets sent in it already */
    uint32_t fresh;          /* the send round about to run starts its phase */
    uint32_t empty;          /* the polls ended with an empty one (not at the batch) */
    uint64_t pkts_recv, pkts_sent, reordered; /* the engine's packets, for the layer's counters */
} ml_resume;
tsim_handoff *ml_handoff_begin(ml_ctx *ml);
int ml_handoff_block(ml_ctx *ml, uint32_t prog, const char *note, unsigned inj_wait);
/* Applies the engine's answer: the advance picks up where r says. */
void ml_resume_apply(ml_ctx *ml, const ml_resume *r);
/* Registers the message layer's wait loop with the engines of this
 * process (tsim_prog_register): 0, or -1. */
int ml_engine_register(void);
/* One poll of the message layer's advance as the engine runs it for a
 * loop above it whose rank has nothing to send (ml_handoff_begin's
 * condition). A packet take accepts (1; take may be NULL) is consumed and
 * charged as the rank's dispatch of a registered type would be (r counts
 * it; *segs: the layer's scatter, at ddt_seg_cycles each). Returns 1, 0
 * (an empty poll, charged), TSIM_PORT_WAIT, 2 (any other packet: the
 * rank's advance takes it, r filled by ml_resume_hand_back) or -1 (take
 * failed: the rank's memory). */
int ml_engine_idle_poll(tsim_port *pt, ml_resume *r, int (*take)(void *L, const tsim_slot *s, unsigned *segs),
                        void *L);
/* Where the rank's advance goes on when the engine hands a loop above it
 * back: in its polls (polls), or after it (the loop is done). */
void ml_resume_hand_back(ml_resume *r, int polls);
/* The note ml_idle leaves for deadlock reports. */
void ml_wait_note(const ml_ctx *ml, const char *why, char *buf, size_t len);

/* Transient coprocessor work unit (CO mode): fn runs on the coprocessor's
 * own clock, starting no earlier than the caller's; ml_cojoin waits for it
 * and moves the caller's clock to its end. */
typedef void (*ml_cowork_fn)(pl_proc *co, void *arg);
int ml_costart(ml_ctx *ml, ml_cowork_fn fn, void *arg);
/* 1 if the coprocessor thread runs (CO mode with cpu 1 free). */
int ml_coproc_running(const ml_ctx *ml);
int ml_cojoin(ml_ctx *ml);

/* Packets of software types ML_TYPE_USER..255 (first byte of the 8-byte
 * software header) are not the message layer's: ml_advance hands them to
 * the function registered for their type (the collectives' own packets).
 * fn runs at the packet's arrival on this rank's clock, after its read and
 * dispatch costs; the slot is only valid during the call. */
#define ML_TYPE_USER 64
typedef void (*ml_packet_fn)(ml_ctx *ml, const tsim_slot *s, void *arg);
/* Returns 0, or -1 if type is below ML_TYPE_USER or already taken. */
int ml_register_packet(ml_ctx *ml, unsigned type, ml_packet_fn fn, void *arg);
void ml_unregister_packet(ml_ctx *ml, unsigned type);

/* Counters: messages sent per protocol, packets sent and received, packets
 * that arrived out of order (data behind a later offset, or ahead of its
 * message's first packet). */
typedef struct ml_stats {
    uint64_t msgs[ML_NPROTO], pkts_sent, pkts_recv, reordered;
    uint64_t staged;         /* layouts staged on the host, sent and received (ml_layout.c) */
} ml_stats;
const ml_stats *ml_get_stats(const ml_ctx *ml);

#endif
