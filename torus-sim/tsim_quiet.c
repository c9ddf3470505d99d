/* How far a running processor may trust its own empty polls.
 *
 * A processor's poll that finds nothing is only an answer once the engine
 * has simulated everything before the processor's clock (pl_sync): the
 * packet that would have arrived at vt - 1 may still be on its way. Waiting
 * for that costs two context switches each time, and in a ping-pong it is
 * most of them: the rank woken by a message reads it, runs MPI's matching,
 * polls once more and finds nothing — while every other processor is
 * blocked and the network is quiet, so nothing could have come.
 *
 * So before it sleeps the engine promises each running processor a time
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

void eng_publish_quiet(tsim_engine *e)
{
    if (e->quiet_off) return;
    tsim_seg *s = e->seg;
    uint64_t first = evq_count(&e->q) ? evq_min_time(&e->q) : UINT64_MAX;
    uint64_t m1 = UINT64_MAX, m2 = UINT64_MAX; /* the two earliest actors' clocks */
    int who = -1;
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &s->procs[i];
        uint64_t vt = may_act(e, i, atomic_load(&p->state)) ? atomic_load(&p->vt) : UINT64_MAX;
        /* after the clock: what it wrote before it is seen now */
        if (eng_would_take(e, i)) vt = 0;
        if (vt == UINT64_MAX) continue;
        if (vt < m1) {
            m2 = m1;
            m1 = vt;
            who = i;
        } else if (vt < m2) {
            m2 = vt;
        }
    }
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &s->procs[i];
        if (atomic_load(&p->state) != TSIM_P_RUNNING) continue;
        uint64_t q = i == who ? m2 : m1;
        if (first < q) q = first;
        if (e->rt[i / TSIM_CPUS].waiting) q = 0;
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
