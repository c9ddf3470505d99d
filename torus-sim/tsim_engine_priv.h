/* Engine-private state: event queue, packets in flight, routers. */
#ifndef TSIM_ENGINE_PRIV_H
#define TSIM_ENGINE_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "tsim.h"
#include "tsim_evq.h"
#include "tsim_matrix.h"
#include "tsim_prog.h"

enum ev_type {
    EV_INJ,       /* a = proc, b = fifo: packet enters its injection FIFO's queue */
    EV_HEAD,      /* a = node, b = in_port << 4 | vc: packet head arrives */
    EV_LINK_FREE, /* a = node, b = port */
    EV_CREDIT,    /* a = node, b = port << 4 | vc, pkt = chunks */
    EV_INJ_FREE,  /* a = proc, b = fifo, pkt = chunks: injection slot freed */
    EV_DELIVER,   /* a = proc, b = fifo: tail reached the reception FIFO */
    EV_REC_FREE,  /* a = proc, b = fifo, pkt = chunks: consumer freed a slot */
    EV_SRC,       /* a = proc: engine-side source generates its next packet */
    EV_PROXY,     /* a = proc: the engine's next step for a blocked processor */
    /* the collective networks (tsim_tree.c) */
    EV_TREE_INJ,      /* a = proc, pkt = tree packet: enters its node's router */
    EV_TREE_UP,       /* a = node, b = vc << 2 | child: head arrives from a child */
    EV_TREE_DOWN,     /* a = node, b = vc: head arrives from the parent */
    EV_TREE_EVAL,     /* a = node: a link or the reception path it waits for frees */
    EV_TREE_CREDIT,   /* a = node, b = vc << 2 | k: a buffer slot downstream frees
                         (k < 3: child k's down buffer, 3: the parent's up buffer) */
    EV_TREE_INJ_FREE, /* a = proc: its oldest tree injection slot frees */
    EV_TREE_DELIVER,  /* a = proc, pkt: tail reaches its tree reception FIFO */
    EV_TREE_REC_FREE, /* a = proc: the consumer freed a tree reception slot */
    EV_GI_FIRE,       /* the global barrier fires at every participant */
};


#define NIL UINT32_MAX
#define WANT_LOCAL 0x80 /* reception at this node, from a link */
#define WANT_SP 0x40    /* the VN scratchpad channel */
#define WANT_LOOP 0x100 /* the loopback path: a packet to its own node */

/* A packet in flight, owned by the engine. What a hop reads and writes
 * (the header fields routing needs, copied at injection, and the hop
 * count, written into s.m at delivery) fills the first cache line; the
 * slot itself, touched at injection and delivery only, follows. The pool
 * is 64-byte aligned (pkt_alloc). */
typedef struct npkt {
    _Alignas(64) uint64_t seq; /* deterministic creation order: arbitration tie-break */
    uint64_t t_head; /* head reached the current router */
    uint32_t next;   /* queue link */
    int32_t proc;    /* source processor */
    int32_t dstn;    /* destination node (from the header, at injection) */
    uint32_t fail_gen; /* router generation when it last failed to move */
    uint8_t in_port; /* port it came in on, or TSIM_NPORTS for injection */
    uint8_t vc;      /* VC it occupies at this router */
    uint8_t fifo;    /* injection FIFO it came from */
    uint8_t dim;     /* dimension it travels in (3: none yet), for the bubble rule */
    uint16_t want;      /* ports it could leave by here, or WANT_*: this node's FIFOs */
    int8_t det;         /* its dimension-order port here (-1: none), and the */
    uint8_t prof;       /* profitable ports adaptive routing may take (hints applied) */
    uint16_t fail_free; /* ports free when it last failed to move */
    uint8_t chunks, flags, hints, group; /* s.p.hw's, copied at injection */
    uint32_t hops;   /* links crossed so far (s.m.hops once delivered) */
    /* set_want's masks, from flags and hints at injection: of a hop's
     * profitable ports, those it may take (0: not adaptive) and those its
     * want has (0: high priority, which never leaves by them) */
    uint8_t rmask, wmask;
    tsim_slot s;
} npkt;
_Static_assert(offsetof(npkt, s) <= 64, "npkt: the hop's fields in one cache line");

/* A router queue. What arbitration needs of its head is cached here so a
 * scan touches only the router, not the packets. */
typedef struct pq {
    uint32_t head, tail;
    uint64_t t_head, seq;
    uint32_t fail_gen;
    uint16_t want, fail_free;
} pq;

/* Credits on their way back to a router: applied once their time comes. */
typedef struct credit_ret {
    uint64_t t;
    uint16_t cr; /* vc * TSIM_NPORTS + port: its index in the router's credit_flat */
    uint16_t chunks;
} credit_ret;
#define TSIM_MAX_RET 128

/* Hot fields first, by how often an arbitration touches them, in whole
 * cache lines (the array is 64-byte aligned: tsim_engine_new): a hop
 * reads and writes lines 0-4 of its router and the credit list of the
 * one upstream; the queues, the link counters and the rest of the credit
 * list come after. */
typedef struct router {
    /* line 0 */
    _Alignas(64) uint32_t waiting;          /* packets queued here */
    uint32_t gen;                           /* bumped when tokens or reception room return */
    /* nonempty queues: bit port * NVC + vc an input queue, bit
     * NPORTS * NVC + cpu * NINJ + fifo an injection queue (QBIT_INJ) */
    uint64_t qmask;
    uint64_t ret_min;                       /* earliest pending credit return, UINT64_MAX: none */
    uint64_t armed;                         /* time of the queued EV_LINK_FREE, 0: none */
    /* free_now()'s mask, kept while it cannot change by itself: until fu,
     * the earliest time a busy port, scratchpad channel or the loopback
     * path frees (tsim_net.c). Movers update both. */
    uint64_t fu;
    uint32_t fmask;
    uint32_t nret;
    uint64_t loop_busy;                     /* loopback path into own reception FIFOs */
    /* line 1 */
    _Alignas(64) uint64_t busy_until[TSIM_NPORTS];
    uint64_t sp_busy[TSIM_CPUS];            /* scratchpad channel cpu -> other */
    /* lines 2-3 */
    /* free chunks downstream, by VC: a VC's six ports side by side, for
     * adaptive routing's vector choice (tsim_net.c: choose_output), which
     * reads the dynamic VCs' rows as one (credit_flat) */
    union {
        int32_t credits[TSIM_NVC][TSIM_NPORTS];
        int32_t credit_flat[TSIM_NVC * TSIM_NPORTS]; /* [vc * TSIM_NPORTS + port] */
    };
    int32_t nbr[TSIM_NPORTS];               /* neighbour node per port, -1 at a mesh edge */
    /* line 4 */
    _Alignas(64) int32_t rec_used[TSIM_CPUS][TSIM_NREC]; /* modelled reception occupancy */
    credit_ret ret[TSIM_MAX_RET];           /* the first few entries in use */
    tsim_link_stats link[TSIM_NPORTS];
    union { /* qs[b]: the queue of qmask bit b */
        struct {
            pq inq[TSIM_NPORTS][TSIM_NVC];
            pq injq[TSIM_CPUS][TSIM_NINJ];
        };
        pq qs[TSIM_NPORTS * TSIM_NVC + TSIM_CPUS * TSIM_NINJ];
    };
} router;
_Static_assert(offsetof(router, busy_until) == 64 && offsetof(router, credits) == 128 &&
                   offsetof(router, rec_used) == 256,
               "router: hot fields in whole cache lines");

/* A program a blocked processor handed over (tsim_handoff.c). */
typedef struct prx_state {
    uint32_t gen;      /* hand-off adopted */
    int on;            /* the engine runs this processor's program */
    int blocked;       /* its loop blocks until something in wait happens */
    int armed;         /* an EV_PROXY is queued */
    uint32_t wait;     /* TSIM_WAKE_* the blocked loop waits for */
    uint64_t vt;       /* the processor's clock while the engine runs it */
    uint64_t blocked_at; /* when its loop first blocked here (UINT64_MAX: not yet) */
    const struct tsim_prog *prog;
    void *priv[TSIM_PROGS]; /* each program's data for this processor, kept */
    uint8_t *state;    /* the engine's copy of the state (TSIM_HANDOFF_BYTES) */
    tsim_port port;
    int pid;           /* whose memory; the engine's own process: memcpy */
    int self;          /* pid is the engine's own process */
    /* writes into the processor's memory, batched until it wakes */
    struct prx_wr *wr;
} prx_state;

typedef struct eproc {
    uint32_t rec_seen[TSIM_NREC]; /* consumed slots already turned into events */
    /* what the engine delivered, never read back from the processor's
     * pages: packets per reception FIFO and each slot's chunks */
    uint32_t rec_head[TSIM_NREC];
    /* reception FIFOs that may hold packets: set at every delivery, cleared
     * where an engine-run loop found one empty (a superset: the loops look
     * at these only, not at all eight per poll) */
    uint32_t rec_pending;
    uint32_t inj_seen[TSIM_NINJ]; /* injected slots already taken */
    uint32_t writes_seen;         /* tsim_proc.writes when drain last took its writes */
    uint8_t rec_chunks[TSIM_NREC][TSIM_RING_SLOTS];
    int engine_driven; /* TSIM_P_ENGINE when the run started */
    int pid;           /* frozen at first sight (tsim_proc.eng.pid) */
    int32_t inj_used[TSIM_NINJ];  /* modelled injection occupancy */
    /* engine-side source */
    int src_live;     /* the source may produce more */
    int src_has;      /* pending generated packet in src_pk */
    int src_fifo;
    uint64_t src_t;
    uint64_t src_armed; /* time of the EV_SRC already queued, or 0 */
    uint32_t src_pk;  /* the pool packet the source generated it into */
    prx_state prx;
    /* tsim_quiet.c: BLOCKED and looked at since its last wake (only an
     * event can wake it now), and what it was last promised */
    int settled;
    uint64_t quiet_pub;
    uint32_t quiet_inj_pub, quiet_sib_pub;
    uint64_t quiet_vt; /* its clock as eng_publish_quiet last read it */
} eproc;

struct tsim_engine {
    tsim_seg *seg;
    tsim_geom g;
    tsim_params prm;
    int nprocs;
    int self_pid;      /* the engine's process (getpid() is a system call) */
    router *rt;
    eproc *ep;
    evq q;
    /* route[node * nnodes + dst]: det port (low 3 bits, 7: arrived) and
     * profitable ports (bits 3..8); NULL on machines too large to tabulate */
    uint16_t *route;
    uint64_t next_key;
    /* packet pool */
    npkt *pool;
    uint32_t npool, cappool, freelist;
    uint64_t pkt_seq;
    /* source */
    tsim_source src;
    int has_src;
    /* accounting */
    uint64_t events, hops, delivered, now;
    uint64_t prx_read, prx_sent, wakes;
    uint64_t backs[TSIM_PROGS][TSIM_BACKS]; /* hand-backs by program and reason */
    uint64_t woke_min; /* lowest clock a wake set this round */
    double left_at; /* host time of the oldest wake left to the ranks' watcher, 0 for none */
    uint64_t *left_mask; /* the processors those wakes were for (tsim_watch.h) */
    uint64_t *present;   /* processors the horizon and the promises look at (FOR_PRESENT) */
    uint64_t left, left_late; /* wake calls left to the watcher; of them made by the engine */
    uint32_t beat_seen;       /* the watcher's beat (tsim_seg.watch_beat) when it last moved, */
    double beat_at;           /* at this host time */
    uint64_t h;        /* this round's horizon: processors act at or after it */
    uint64_t stop;     /* the run loop's bound for its current run of events (tsim_engine.c) */
    /* A blocked processor's step waiting, outside the queue, while the
     * engine runs the events before it (eng_run_before): its time, or
     * UINT64_MAX. It counts as a queued event for prx_settled. */
    uint64_t nest_t, nest_key;
    /* prx_arm from the end of an event's processing (trigger_last): a step
     * that would be the next event popped is held here, not queued, and
     * runs at once (-1: none) */
    int prx_defer, defer_proc;
    uint64_t defer_t;
    double prog_t0, prog_next; /* report_progress's clock, for the runs of both */
    int deadlock, aborted;
    /* What a processor wrote that it could not have written honestly
     * (drain's checks): the processor, -1 for none, and what. The engine
     * thread writes the text, then the processor; mpirun polls them. */
    _Atomic int violation_proc;
    char violation[160];
    uint64_t published; /* the last horizon published as done, kept here */
    int prx_off;           /* BGLEMU_PROXY=0: every blocked processor is woken */
    int ncpu;              /* host cores beside the engine's: it spins while fewer run */
    int quiet_off;         /* BGLEMU_QUIET=0: no promises (tsim_quiet.c) */
    struct tsim_cores *cores; /* where it and the ranks run (tsim_cores.c), NULL: anywhere */
    char *deadlock_report; /* snapshot taken when the deadlock was found */
    pthread_t thread;
    tsim_result result;
    struct tree_state *tree; /* the collective networks (tsim_tree.c) */
    struct tsim_trace *trace; /* the link sampler (tsim_trace.c), NULL: off */
    uint64_t trace_at;        /* its next sampling time, UINT64_MAX: off */
    /* The processors a round looks at (tsim_engine.c, "which processors a
     * round looks at"), one bit a processor, in words of 64: look_drain,
     * those that may have written into their FIFOs since drain and
     * tree_drain last took everything (cleared once they took it from a
     * processor they had seen not RUNNING); look_wake, those wake_if_ready
     * must see (cleared once it left one BLOCKED and settled, or saw it
     * EXITED, ABSENT or the engine's). eng_wake and the horizon (every
     * RUNNING processor, and any whose state is not look_st) set both. */
    uint64_t *look_drain, *look_wake;
    uint64_t *look_done, *look_snap; /* drain's and look_check's scratch words */
    uint64_t *take;    /* the processors drain took from this round (tree_drain's too) */
    double full_look_at; /* host time of drain's next round over every processor's FIFOs */
    uint8_t *look_st;  /* each processor's state as the horizon last saw it */
    int look_words;
    unsigned look_rounds;
    int look_mode; /* BGLEMU_SCAN: 0 the sets, 1 (all) everyone every round, 2 (check) */
    tsim_pair *mx; /* the traffic matrix, nprocs x nprocs (tsim_matrix.c) */
};

/* Host seconds on CLOCK_MONOTONIC: the engine's and the cores' wall-clock
 * measures (never a simulated time). */
static inline double eng_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* tsim_cores.c: the host's cores for the engine and the ranks. */
void tsim_cores_start(tsim_engine *e);
void tsim_cores_note(tsim_engine *e, int running);
void tsim_cores_woke(tsim_engine *e);
void tsim_cores_free(tsim_engine *e);

/* tsim_net.c: the routers and links. */
void net_inject(tsim_engine *e, int proc, int fifo, uint32_t pk, uint64_t t);
void net_event(tsim_engine *e, const ev *v);
/* EV_HEAD and EV_LINK_FREE, dispatched by the engine's loop itself. */
void net_head(tsim_engine *e, int node, int port_vc, uint32_t pk, uint64_t t);
void net_link_free(tsim_engine *e, int node, uint64_t t);
void net_rec_free(tsim_engine *e, int proc, int fifo, int chunks, uint64_t t);
uint32_t pkt_alloc(tsim_engine *e);
void pkt_free(tsim_engine *e, uint32_t pk);

/* tsim_handoff.c: the programs blocked processors hand over. */
/* The processor is BLOCKED and something it waits for happened at t (its
 * wake time): 1 if the engine runs its loop (no wake), 0 to wake it. */
int prx_trigger(tsim_engine *e, int proc, uint64_t t, int rec_fifo);
void prx_step(tsim_engine *e, int proc);
int prx_active(const tsim_engine *e, int proc);
/* A blocked processor handed its running loop to the engine: takes it (1),
 * or refuses it (-1: wake the processor), 0 if there is none. */
int prx_start(tsim_engine *e, int proc);
void prx_free(tsim_engine *e);
/* The processor is BLOCKED and its collective-network wait may be over at
 * t (bits: TSIM_WAKE_TREE_REC/INJ that happened, 0: something is there
 * already): 1 if the engine runs its loop (tsim_handoff.c: no
 * wake), 0 to wake it as its mask says. */
int prx_tree_trigger(tsim_engine *e, int proc, uint64_t t, uint32_t bits);
/* Queues the processor's next step at t (once). */
void prx_arm(tsim_engine *e, int proc, uint64_t t);
/* tsim_port.c: the engine's port for processor proc's program */
void prx_port_init(tsim_engine *e, int proc);
int prx_wr_flush(tsim_engine *e, int proc);
/* Is something in wait (TSIM_WAKE_*) there for proc's blocked loop? */
int prx_ready(tsim_engine *e, int proc, uint32_t wait);
/* tsim_tree.c: the processor's tree FIFOs as the engine sees them */
/* Free slots in its injection FIFO. */
unsigned tree_inj_room(const tsim_engine *e, int proc);
/* What pl_tree_inject does at clock t (the caller checked the room). */
void tree_prx_inject(tsim_engine *e, int proc, const tsim_thdr *h, const uint8_t *payload,
                     uint64_t t);
/* The oldest packet delivered and not yet read, or NULL. */
const tsim_tslot *tree_rec_oldest(const tsim_engine *e, int proc);
/* What pl_tree_consume does at clock t (the slot read frees at t). */
void tree_prx_consume(tsim_engine *e, int proc, uint64_t t);

/* tsim_quiet.c: tells each running processor how far its own empty polls
 * need no round trip to the engine (tsim_proc.quiet). */
void eng_publish_quiet(tsim_engine *e);
/* Has processor proc written anything the engine has not taken yet
 * (injections, freed reception slots, its tree FIFOs and barrier words)? */
int eng_would_take(tsim_engine *e, int proc);
/* Takes everything processor proc wrote so far (its FIFOs, the tree's):
 * what the next round's drain would take, with the same keys, now. 0, or
 * -1 after a violation. */
int eng_take_proc(tsim_engine *e, int proc);
/* Processes, in order, every queued event before (t, key) within the
 * current run of events (t below its stop), as the run loop would before
 * an EV_PROXY of that time and key: 1 if none remains (now is then t, as
 * that event's pop would make it), 0 if the run ended first (a wake) or t
 * lies beyond it: the caller then queues its event. */
int eng_run_before(tsim_engine *e, uint64_t t, uint64_t key);
/* Within trigger_last: 1 if an event (t, key) would be the next one
 * popped; it is then the caller's to hold (defer_proc), not queued. */
int eng_take_next(tsim_engine *e, uint64_t t, uint64_t key);

/* tsim_tree.c: the collective network and the global interrupt. */
int tree_new(tsim_engine *e);
void tree_free(tsim_engine *e);
/* Collects what the processors in look_drain wrote into their tree FIFOs
 * and barrier words (1 if anything); 0 also after a violation. */
int tree_drain(tsim_engine *e);
/* Takes what processor proc wrote into its tree FIFOs now (1 if anything,
 * -1 after a violation): tree_drain's take of one processor. */
int tree_take_proc(tsim_engine *e, int proc);
/* Has processor proc written anything tree_drain would take? */
int tree_would_take(const tsim_engine *e, int proc);
void tree_event(tsim_engine *e, const ev *v);
/* A processor blocked with a collective-network bit in mask whose wait is
 * already over. */
int tree_ready(tsim_engine *e, int proc, uint32_t mask);
/* Tree injections and barrier arms of proc collected so far (tsim_quiet.c). */
uint32_t tree_seen(const tsim_engine *e, int proc);
/* tsim_trace.c: samples the links at every sampling time up to now. */
typedef struct tsim_trace tsim_trace;
void tsim_trace_tick(tsim_engine *e, uint64_t now);
void tsim_trace_free(tsim_engine *e);

/* tsim_report.c */
void report_snapshot_deadlock(tsim_engine *e);

/* tsim_matrix.c: the traffic matrix, counted at every delivery */
int tsim_matrix_new(tsim_engine *e);
void tsim_matrix_free(tsim_engine *e);
static inline void tsim_matrix_add(tsim_engine *e, int from, int to, int chunks)
{
    tsim_pair *c = &e->mx[(size_t)from * (size_t)e->nprocs + (size_t)to];
    c->packets++;
    c->bytes += (uint64_t)chunks * TSIM_CHUNK;
}

/* Words of a processor's page that it and the engine both update (a
 * ring's `used` and `tail`). While it is blocked only
 * the engine touches them: the processor runs again only after the
 * engine's wake (eng_wake), whose stores publish these. Then a plain load
 * and store does, not a locked instruction, which also waits for the
 * packet's slot stores before it to drain (about one such a packet each
 * way). `alone`: the processor is blocked or the engine's own. */
static inline void eng_add32(_Atomic uint32_t *w, uint32_t x, int alone)
{
    if (alone)
        atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + x, memory_order_relaxed);
    else
        atomic_fetch_add(w, x);
}

/* tsim_engine.c */
/* Inline: the network pushes about one event per hop. */
static inline void ev_push_key(tsim_engine *e, uint64_t t, uint64_t key, uint32_t type, int a,
                               int b, uint32_t pkt)
{
    ev v = {t, key, type, a, b, pkt};
    evq_push(&e->q, &v);
}

/* The engine's own events, keyed in processing order (tsim_engine.c). */
#define KEY_ENGINE (1ull << 48)
static inline void ev_push(tsim_engine *e, uint64_t t, uint32_t type, int a, int b, uint32_t pkt)
{
    ev_push_key(e, t, KEY_ENGINE | e->next_key++, type, a, b, pkt);
}
void eng_wake(tsim_engine *e, int proc, uint64_t t);
uint64_t eng_proc_key(int proc, int ring, uint32_t seq);
/* The key of processor proc's EV_PROXY events. */
uint64_t eng_proxy_key(int proc);
/* Ends the job for something processor proc wrote (mpirun names it). */
void eng_violation(tsim_engine *e, int proc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Can a blocked processor's view at vt be taken as final? Once nothing
 * before vt can still happen: no queued event is earlier (its step's own
 * key is the lowest of its time; a step waiting in eng_run_before counts
 * as one) and no processor can inject before the horizon. Inline: a
 * sender waiting for room asks at every try. */
static inline int prx_settled(const tsim_engine *e, uint64_t vt)
{
    return vt <= e->now || (vt <= e->h && !evq_any_before(&e->q, vt) && e->nest_t >= vt);
}

/* Every processor that is not ABSENT, and its node mate: the only one that
 * can open later is a coprocessor, at its rank's clock (ml_coproc_start);
 * every rank is RUNNING from before the engine starts. The set is renewed
 * at the start and with every look at everyone (tsim_engine.c); the look
 * at everyone and the count for a deadlock go over it, ascending. */
#define FOR_PRESENT(e, i)                                                      \
    for (int w_ = 0; w_ < (e)->look_words; w_++)                               \
        for (uint64_t m_ = (e)->present[w_]; m_; m_ &= m_ - 1)                 \
            for (int i = 64 * w_ + __builtin_ctzll(m_), once_ = 1; once_; once_ = 0)

/* Word w of the processors a round's horizon, syncs and promises look at:
 * those in either look set (every RUNNING one is: the horizon and eng_wake
 * put it there, and neither set lets it go while it runs; a BLOCKED one
 * until it is settled and drained), and their node mates (a coprocessor
 * opens only while its rank runs, at its clock: ml_coproc_start; drain,
 * letting a rank go, looks once more at its mate). Any other changes only
 * through eng_wake or a stray write (tsim_engine.c, "which processors a
 * round looks at"). BGLEMU_SCAN=all (look_mode 1): every present
 * processor; =check verifies the others (looked_check). */
static inline uint64_t looked_word(const tsim_engine *e, int w)
{
    if (e->look_mode == 1) return e->present[w];
    uint64_t m = e->look_drain[w] | e->look_wake[w];
    m |= (m & 0x5555555555555555ull) << 1 | (m & 0xaaaaaaaaaaaaaaaaull) >> 1;
    return m & e->present[w];
}

#define FOR_LOOKED(e, i)                                                       \
    for (int w_ = 0; w_ < (e)->look_words; w_++)                               \
        for (uint64_t m_ = looked_word((e), w_); m_; m_ &= m_ - 1)             \
            for (int i = 64 * w_ + __builtin_ctzll(m_), once_ = 1; once_; once_ = 0)

#endif
