/* packetlayer: thin, stateless access to one processor's FIFOs in the
 * emulated machine's shared segment. Every call acts at the processor's
 * virtual clock and charges the modelled software cost to it.
 *
 * Observations are deterministic: a packet is visible at vt only if it
 * arrived before vt, and an empty answer is given only once the engine has
 * finished everything before vt (pl_poll syncs when it must). */
#ifndef PL_H
#define PL_H

#include "../torus-sim/tsim.h"
#include "../torus-sim/tsim_prog.h"

typedef struct pl_proc {
    tsim_seg *seg;
    tsim_proc *p;
    int index;  /* processor index = node * TSIM_CPUS + cpu */
    int node, cpu;
    int coord[3];
    uint64_t vt; /* local clock; published on every action */
    uint64_t unseen; /* earliest news (injection, freed slot) not yet kicked to the engine */
    /* injections the engine's last promise (tsim_proc.quiet) may not have
     * counted: the earliest one's time, and whether one voids the promise
     * for polls (to this node, into the tree, a barrier armed) */
    uint64_t qinj_t;
    int qvoid;
    uint64_t syncs, syncs_spared; /* round trips to the engine, and those a promise spared */
} pl_proc;

/* Binds to processor `index` of an attached segment and marks it RUNNING at
 * vt (the caller's start time). */
int pl_open(pl_proc *pp, tsim_seg *seg, int index, uint64_t vt);
/* For a rank started by mpirun: attaches the segment named by BGLEMU_SEG
 * and opens the processor of rank BGLEMU_RANK at vt 0. */
int pl_attach_env(pl_proc *pp, char *err, size_t errlen);
/* Makes this process record how it ends in its processor (tsim_proc.fate_*):
 * a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
 * unless the program handles it already; the process still dies of it) or
 * an exit() before pl_close. Called by pl_attach_env; per process, not per
 * thread. Returns 0, or -1 if nothing will be recorded (pl_fate.c). */
int pl_fate_install(pl_proc *pp);
/* Ends this process for damage found in its own FIFOs or state (what a
 * stray write did): records it as its fate (TSIM_FATE_CORRUPT, fate_why
 * "reception FIFO 2: ..."), for mpirun to name it, and exits with status
 * PL_EXIT_DAMAGED. Called where the packet layer would otherwise spin on
 * state that can never change. */
#define PL_EXIT_DAMAGED 70
_Noreturn void pl_damaged(pl_proc *pp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends this process for a packet its software cannot take (an unknown
 * type, a reception nobody began): pl_poll checked it is the one the engine
 * delivered, so its sender (s->m.src, written by the engine) made it. The
 * fate record (TSIM_FATE_PEER) names the sender for mpirun; exit status
 * PL_EXIT_DAMAGED. */
_Noreturn void pl_bad_packet(pl_proc *pp, const tsim_slot *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the processor EXITED (it will never act again). */
void pl_close(pl_proc *pp, int exit_code);

static inline uint64_t pl_now(const pl_proc *pp) { return pp->vt; }
/* Charges `cycles` of software work to this processor. */
static inline void pl_charge(pl_proc *pp, uint64_t cycles) { pp->vt += cycles; }
/* Moves the clock forward to t (never back). */
static inline void pl_advance_to(pl_proc *pp, uint64_t t) { if (t > pp->vt) pp->vt = t; }
/* Publishes vt to the engine (done by every call below). */
void pl_publish(pl_proc *pp);

/* Fills a hardware header for a packet to processor `dst_index` carrying
 * `payload` bytes; flags TSIM_F_*. */
void pl_header(const pl_proc *pp, tsim_hwhdr *hw, int dst_index, size_t payload, unsigned flags);

/* Writes a packet into injection FIFO `fifo` (0..2, TSIM_INJ_HP, or
 * TSIM_INJ_SP for the VN scratchpad to the other cpu of this node).
 * The payload may be unaligned; only hw->chunks*32-16 bytes travel.
 * Returns 0, or -1 (EAGAIN) if the FIFO is full at vt. Charges
 * pkt_write_cycles. */
int pl_inject(pl_proc *pp, int fifo, const tsim_hwhdr *hw, const void *sw8,
              const void *payload, size_t len);
/* Same, but blocks (in simulated time) until the FIFO has room. */
void pl_inject_wait(pl_proc *pp, int fifo, const tsim_hwhdr *hw, const void *sw8,
                    const void *payload, size_t len);

/* The next packet visible at vt among the FIFOs in `mask` (TSIM_WAKE_REC
 * bits): the earliest arrival, lowest FIFO on ties. Returns the FIFO index
 * and moves vt to the arrival time, or -1 if none arrived before vt. The
 * packet stays in the FIFO until pl_consume. */
int pl_poll(pl_proc *pp, unsigned mask);
/* pl_poll, but where only a sync could answer (the engine is behind vt and
 * promised nothing) PL_POLL_SYNC, nothing charged: the caller may hand the
 * poll to the engine instead (messagelayer/ml_core.c). */
#define PL_POLL_SYNC (-2)
int pl_poll_nosync(pl_proc *pp, unsigned mask);
/* Header, metadata and payload of the head packet of FIFO f (after poll). */
const tsim_slot *pl_peek(const pl_proc *pp, int f);
/* Copies len payload bytes starting at offset into dst (any alignment). */
void pl_read(const pl_proc *pp, int f, size_t offset, void *dst, size_t len);
/* Frees the head packet of FIFO f; charges pkt_read_cycles. */
void pl_consume(pl_proc *pp, int f);

/* Blocks until the engine wakes this processor: a packet in one of the
 * reception FIFOs in mask, or room in an injection FIFO (TSIM_WAKE_INJ).
 * vt becomes max(vt, time of the waking event). `why` is shown in a
 * deadlock report. Returns -1 if the job is aborting. */
int pl_block(pl_proc *pp, unsigned mask, const char *why);
/* Same, where TSIM_WAKE_INJ bits wait for `need` free chunks. */
int pl_block_need(pl_proc *pp, unsigned mask, unsigned need, const char *why);
/* Waits until the engine has finished every event before vt. */
int pl_sync(pl_proc *pp);

/* Room for `chunks` in injection FIFO f at vt: 1, or 0 (final: it syncs
 * with the engine before it says full). */
int pl_inj_has_room(pl_proc *pp, int f, unsigned chunks);
/* This processor's machine as a port (torus-sim/tsim_prog.h): the loops
 * a layer hands the engine run on the processor itself through it
 * (pl_port.c). */
void pl_port_init(pl_proc *pp, tsim_port *pt);
/* Free chunks in injection FIFO f, as seen now (conservative). */
unsigned pl_inj_room(const pl_proc *pp, int f);
int pl_aborting(const pl_proc *pp);

#endif
