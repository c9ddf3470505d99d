/* Programs a blocked processor hands to the engine, and the port they run on.
 *
 * Waking a processor for every packet of a loop that needs none of its
 * decisions (a message's data packets, an alltoall's schedule, a pass
 * through the collective network) costs the host two context switches and
 * a round of synchronisation with the engine per packet. So a processor
 * about to block may hand the engine its loop instead: a program, written
 * once by the layer that owns the loop and registered here by id, and a
 * state in the program's own format (its description and cursor) in the
 * processor's hand-off block (tsim_handoff, tsim.h). The engine runs the
 * program at exactly the simulated times and costs the processor would
 * have had, and hands the processor back, the state updated, where its own
 * code must run. docs/simulated-time.md.
 *
 * The engine knows nothing of what a program does: it keeps the runtime
 * (adopt, step, block, wake, hand back), the observation rule and the
 * processor's memory (tsim_handoff.c), and serves the port below
 * (tsim_port.c). A program sees the processor only through its port: the
 * same calls the processor's own packet layer makes, at the processor's
 * clock, so that the layer above can run one loop with either driver.
 * mpirun registers every layer's programs; bgl-traffic none. */
#ifndef TSIM_PROG_H
#define TSIM_PROG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tsim.h"

/* An observation the port cannot make yet: what the processor would see at
 * its clock depends on events the engine has still to run. The program
 * returns TSIM_RUN_WAIT at once, its state such that the same step is
 * taken again (the runtime runs those events first). */
#define TSIM_PORT_WAIT (-2)

typedef struct tsim_port tsim_port;

/* One processor's machine as its loops see it, at its clock *vt. Every
 * call charges what the packet layer's would (tsim_params.def). */
typedef struct tsim_port_ops {
    /* 1 when everything before vt has happened (what the processor sees at
     * vt is final), 0 if not yet: the program returns TSIM_RUN_WAIT.
     * Always 1 for the processor's own port (its observations sync) */
    int (*settled)(tsim_port *pt);
    /* torus injection FIFO f has room for `chunks`: 1, 0 (final: full at
     * vt), TSIM_PORT_WAIT */
    int (*room)(tsim_port *pt, int f, unsigned chunks);
    /* a packet into FIFO f (room checked): pkt_write_cycles */
    void (*inject)(tsim_port *pt, int f, const tsim_hwhdr *hw, const uint8_t sw[8],
                   const void *data, size_t n);
    /* the reception FIFO whose oldest packet a poll at vt takes (lowest
     * FIFO on ties), -1 (none: poll_cycles charged), TSIM_PORT_WAIT */
    int (*poll)(tsim_port *pt);
    const tsim_slot *(*peek)(tsim_port *pt, int f);
    /* frees the oldest packet of FIFO f: pkt_read_cycles */
    void (*consume)(tsim_port *pt, int f);
    /* the collective network's FIFOs, as pl_tree.c: room (1, 0,
     * TSIM_PORT_WAIT), inject (tree_write_cycles), poll (1, 0 with
     * poll_cycles charged, TSIM_PORT_WAIT), peek, consume
     * (tree_read_cycles) */
    int (*tree_room)(tsim_port *pt);
    void (*tree_inject)(tsim_port *pt, const tsim_thdr *h, const void *payload);
    int (*tree_poll)(tsim_port *pt);
    const tsim_tslot *(*tree_peek)(tsim_port *pt);
    void (*tree_consume)(tsim_port *pt);
    /* the processor's memory: n bytes at its address addr into dst, or
     * from src to addr; 0, or -1 when it cannot be (the job then fails,
     * naming the processor and `what`) */
    int (*read)(tsim_port *pt, void *dst, uint64_t addr, size_t n, const char *what);
    int (*write)(tsim_port *pt, uint64_t addr, const void *src, size_t n);
    /* many pieces at once (loc[i] from the processor's rem[i], total bytes) */
    int (*readv)(tsim_port *pt, const struct iovec *loc, const struct iovec *rem, int cnt,
                 size_t total, const char *what);
    /* every write so far is in the processor's memory: before a packet
     * that tells another processor of the same process to read it (the
     * engine otherwise keeps writes until the processor wakes); 0 or -1 */
    int (*publish)(tsim_port *pt);
    /* 1 with *until the latest clock up to which nothing can change what
     * the processor sees (no packet waits in its reception FIFOs, no event
     * comes first), 0 when that is not known: a loop may skip its empty
     * steps up to it */
    int (*quiet_until)(tsim_port *pt, uint64_t *until);
} tsim_port_ops;

struct tsim_port {
    const tsim_port_ops *ops;
    uint64_t *vt;            /* the processor's clock */
    tsim_proc *p;            /* its block (counters) */
    const tsim_params *prm;
    const tsim_geom *g;
    int proc;                /* its index */
    int engine;              /* 1: the engine drives (the processor's own code can't run) */
    void *ctx;               /* the driver's */
};

static inline void tsim_port_charge(tsim_port *pt, uint64_t cycles) { *pt->vt += cycles; }
/* Datatype work: charged, and counted in the processor's ddt_cycles. */
static inline void tsim_port_charge_ddt(tsim_port *pt, uint64_t cycles)
{
    if (!cycles) return;
    *pt->vt += cycles;
    atomic_fetch_add_explicit(&pt->p->ddt_cycles, cycles, memory_order_relaxed);
}

/* Room for `chunks` in injection FIFO f: room the ring shows now is room
 * at the clock for either driver (room only grows), so only a full
 * answer asks the port. */
static inline int tsim_port_room(tsim_port *pt, int f, unsigned chunks)
{
    if (tsim_ring_room(&pt->p->inj[f]) >= chunks) return 1;
    return pt->ops->room(pt, f, chunks);
}

/* What a program's step returns to the runtime. */
enum {
    TSIM_RUN_WAIT = 2, /* an observation returned TSIM_PORT_WAIT: step again once it can be made */
    TSIM_RUN_BLOCK,    /* the loop blocks until something in *wait happens (TSIM_WAKE_* bits) */
    TSIM_RUN_BACK,     /* the processor's own code must run: hand it back (the state says where;
                          why, for the statistics: *wait, an index into the program's backs) */
    TSIM_RUN_FAIL,     /* the processor's memory failed it (the job is ending): stop */
};

typedef struct tsim_prog {
    const char *name;
    uint32_t id;        /* 1 .. TSIM_PROGS - 1: tsim_handoff.prog, the same in every process */
    size_t state_size;  /* bytes of tsim_handoff.state the program uses */
    /* Checks the engine's copy of a state, taken from a processor blocked
     * with wake mask *wait (or, handed over at its start, running): 1 to
     * run it, 0 to refuse it (the processor runs its loop itself). *priv is
     * the program's per-processor data, kept between adoptions (NULL at
     * first); it may (re)allocate it. A refused state is never stepped. */
    int (*adopt)(tsim_port *pt, void *state, void **priv, uint32_t *wait, int start);
    /* Runs the loop from the state's cursor: TSIM_RUN_WAIT, TSIM_RUN_BLOCK
     * (with what it waits for in *wait) or TSIM_RUN_BACK. Stepped again
     * after a BLOCK, it starts the loop's next iteration. */
    int (*step)(tsim_port *pt, void *state, void *priv, uint32_t *wait);
    void (*free)(void *priv);
    /* Why its steps hand the processor back, by the index a BACK leaves in
     * *wait: up to TSIM_BACKS names, NULL-terminated (NULL: it gives none,
     * and its hand-backs count under index 0). Statistics only
     * (BGLEMU_PROXY_STATS, tsim_result.backs). */
    const char *const *backs;
} tsim_prog;

/* Makes prog runnable by engines of this process: 0, -1 if its id is taken
 * by another program or out of range. */
int tsim_prog_register(const tsim_prog *prog);
const tsim_prog *tsim_prog_find(uint32_t id);

#endif
