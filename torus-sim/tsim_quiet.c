/* How far a running processor may trust its own empty polls (why it pays:
 * docs/simulated-time.md, "Promises: empty polls without a sync").
 *
 * A processor's poll that finds nothing is only an answer once the engine
 * has simulated everything before the processor's clock (pl_sync): the
 * packet that would have arrived at vt - 1 may still be on its way. So
 * before it sleeps the engine promises each running processor a time
 * `quiet`: no packet reaches it earlier, whatever happens, unless the
 * processor itself injects again. Everything that could deliver a packet
 * is accounted for:
 *   - queued events (a delivery is an event, at or after the earliest one);
 *   - other running processors, which may inject from their clock on (a
 *     clock only grows, so the bound read now holds for ever) — and what
 *     any processor wrote before that clock and the engine has not taken
 *     yet (an injection, a freed reception slot that lets a packet on,
 *     tree FIFOs, a barrier armed: a processor writes them at its clock
 *     and may have moved on since): such a processor allows no promise
 *     until the engine has taken it;
 *   - blocked processors the engine has not looked at since they blocked
 *     (they count like running ones: they may already have a reason to
 *     wake); the others wake only through events;
 *   - packets waiting in the processor's own router, which its freeing a
 *     reception slot could let in without an event: then no promise;
 *   - its own injections: the promise names the injection count the engine
 *     has seen (torus and tree FIFOs' heads and barriers armed), and the
 *     rank judges a later one (pl.c: torus packets to other nodes have a
 *     reach, anything else voids the promise);
 *   - processors opened later: a coprocessor thread starts at its rank's
 *     clock, which bounds the promises to everyone else, but not its own
 *     rank's: the promise says whether the other processor of the node was
 *     absent, and its opening voids it (every rank is RUNNING at clock 0
 *     from before the engine starts, attached or not).
 * The rank checks vt <= quiet and the count (packetlayer/pl.c); either way
 * the answer it gets is the one a sync would have given, so simulated
 * results do not change — only how often the host hands over. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tsim_engine_priv.h"

static uint32_t inj_seen(const eproc *ep)
{
    uint32_t n = 0;
    for (int f = 0; f < TSIM_NINJ; f++) n += ep->inj_seen[f];
    return n;
}

/* A processor that may act (and so send) from its clock on. */
static int may_act(const tsim_engine *e, int i, uint32_t st)
{
    return st == TSIM_P_RUNNING || (st == TSIM_P_BLOCKED && !e->ep[i].settled);
}

/* BGLEMU_SCAN=check: a running processor's write that its count does not
 * show yet is one in flight, if the count moves soon after (a rank
 * preempted between the two stores may take a time slice or two). The
 * write is no news to the promises either way: the processor published
 * the clock it wrote at before the write (pl.c), and the promises are
 * bounded by the clock read before its count. */
static int count_follows(tsim_engine *e, int i)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load_explicit(&e->seg->procs[i].writes, memory_order_acquire) != e->ep[i].writes_seen)
            return 1;
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 2); /* a second or two: many time slices */
    return 0;
}

/* Has processor i written anything the engine has not taken? The round's
 * own rule (drain): a running processor's news bumps its write count, and a
 * processor that stopped running writes nothing once drained since. Only
 * those that may have news have their FIFO words read: at 128 processors a
 * word each in pages of its own, reading them all cost more than the rest
 * of a hand-off. A stray write that counts nothing is found by drain's
 * timed round and ends the job; BGLEMU_SCAN=check reads every word and
 * stops at a processor left out that had something. */
static int has_news(tsim_engine *e, int i, uint32_t st)
{
    int maybe = st == TSIM_P_RUNNING
                    ? atomic_load_explicit(&e->seg->procs[i].writes, memory_order_acquire) !=
                          e->ep[i].writes_seen
                    : (int)(e->look_drain[i >> 6] >> (i & 63) & 1);
    if (maybe || e->look_mode == 2) {
        int news = eng_would_take(e, i);
        if (news && !maybe && !(st == TSIM_P_RUNNING && count_follows(e, i))) {
            fprintf(stderr, "bglemu: BGLEMU_SCAN=check: the promises left out processor %d "
                    "(state %u), which had something\n", i, st);
            abort();
        }
        return news;
    }
    return 0;
}

void eng_publish_quiet(tsim_engine *e)
{
    if (e->quiet_off) return;
    tsim_seg *s = e->seg;
    uint64_t first = evq_count(&e->q) ? evq_min_time(&e->q) : UINT64_MAX;
    uint64_t m1 = UINT64_MAX, m2 = UINT64_MAX; /* the two earliest actors' clocks */
    int who = -1;
    FOR_LOOKED(e, i) {
        tsim_proc *p = &s->procs[i];
        uint32_t st = atomic_load(&p->state);
        if (st == TSIM_P_ABSENT) continue;
        uint64_t vt = may_act(e, i, st) ? atomic_load(&p->vt) : UINT64_MAX;
        e->ep[i].quiet_vt = vt;
        /* after the clock: what it wrote before it is seen now */
        if (has_news(e, i, st)) vt = 0;
        if (vt == UINT64_MAX) continue;
        if (vt < m1) {
            m2 = m1;
            m1 = vt;
            who = i;
        } else if (vt < m2) {
            m2 = vt;
        }
    }
    FOR_LOOKED(e, i) {
        tsim_proc *p = &s->procs[i];
        if (atomic_load(&p->state) != TSIM_P_RUNNING) continue;
        uint64_t q = i == who ? m2 : m1;
        if (first < q) q = first;
        if (e->rt[i / TSIM_CPUS].waiting) q = 0;
        /* a promise short of the clock it has (any but the earliest
         * actor's, in a crowd) is one it can never use: the one it holds,
         * older and lower, stays true */
        if (e->ep[i].quiet_vt > q) continue;
        uint32_t inj = inj_seen(&e->ep[i]) + tree_seen(e, i);
        uint32_t sib = atomic_load(&s->procs[i ^ 1].state) == TSIM_P_ABSENT;
        eproc *ep = &e->ep[i];
        if (q == ep->quiet_pub && inj == ep->quiet_inj_pub && sib == ep->quiet_sib_pub) continue;
        ep->quiet_pub = q;
        ep->quiet_inj_pub = inj;
        ep->quiet_sib_pub = sib;
        uint32_t seq = atomic_load_explicit(&p->quiet_seq, memory_order_relaxed);
        atomic_store_explicit(&p->quiet_seq, seq + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&p->quiet_inj, inj, memory_order_relaxed);
        atomic_store_explicit(&p->quiet_sib_absent, sib, memory_order_relaxed);
        atomic_store_explicit(&p->quiet, q, memory_order_relaxed);
        atomic_store_explicit(&p->quiet_seq, seq + 2, memory_order_release);
    }
}
