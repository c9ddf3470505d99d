/* Rank program for mpirun tests (issue 15): rank VICTIM damages the machine
 * segment the way a stray write would, straight into memory, never through
 * the packet layer's calls; the others wait for a packet that never comes.
 * The job must end at once with a line naming VICTIM and the damage.
 *
 * Usage: tp_corrupt VICTIM CASE [SEED]
 *  its injection FIFO 0 (the engine refuses it): chunks0 chunks9 dst flags
 *    group past (one bad field of a packet), head (moved 100,000 on), back
 *    (moved 3 back), header (four impossible packets at once)
 *  its reception FIFO 0, after rank 0's packet arrived: rec-past (tail moved
 *    past the head), rec-reuse (tail moved back onto the freed slot),
 *    rec-garbage (a packet the engine never delivered), rec-future (the
 *    waiting packet's arrival time moved far ahead)
 *  state (its state word: no processor state), inj-cap (its injection FIFO
 *    0's capacity word zeroed, then a packet sent through it)
 *  others' pages (the write faults): other-rec (rank 0's reception FIFO 0),
 *    other-state (rank 0's clock and state), seg-header (the geometry),
 *    engine-page (its own engine-only page)
 *  bogus-buf: a message for the engine to send from an address that is not
 *    mapped (the loop it hands the engine)
 *  random SEED: 1..8 writes of 1..16 random bytes at random offsets of its
 *    own pages and of the rest of the segment, then one more outside its
 *    own pages (so every run damages something it may not write); seeded,
 *    the same writes every run
 *  bad-type: a packet of a software type the message layer does not have,
 *    sent to rank 0 through the packet layer (rank 0's message layer cannot
 *    take it: VICTIM, its sender, is named, not rank 0)
 *  random-own SEED: ranks 0 and 1 play 20 rounds of ping-pong; in a random
 *    round rank 1 writes random bytes at random offsets of its own pages
 *    only, then plays on. Either the damage is caught and rank 1 named, or
 *    the job ends as if nothing happened (exit 0)
 *  replay: VICTIM describes to the engine a receive that lands in one
 *    buffer while its upcall puts the message in another; rank 0 sends it
 *    an eager message once VICTIM has blocked: the engine takes the first
 *    packet into the buffer described, and VICTIM's replay of it when it
 *    wakes finds the upcall's buffer elsewhere
 *  watcher: ranks 0 and 1 play 2,000 rounds; in each rank 1 names rank 0 the
 *    watcher of the ranks' core, which it is not, and clears the wakes asked
 *    of a watcher. Costs host time only: the job ends as it would have
 *    (exit 0) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "messagelayer/ml.h"
#include "messagelayer/ml_internal.h"
#include "packetlayer/pl.h"

/* xorshift64*: the same sequence on every host, unlike rand() */
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* The next packet of FIFO 0, consumed unless keep. */
static void receive(pl_proc *pp, int keep)
{
    for (;;) {
        int f = pl_poll(pp, TSIM_WAKE_REC(0));
        if (f >= 0) {
            if (!keep) pl_consume(pp, f);
            return;
        }
        if (pl_block(pp, TSIM_WAKE_REC(0), "rank 0's packet") != 0) exit(1);
    }
}

static void seed_rng(uint64_t seed)
{
    rng ^= seed * 0x9e3779b97f4a7c15ull;
    if (!rng) rng = 1;
}

/* 1..8 random writes into its own pages only: anywhere, or (most pages
 * are packet payloads) where it hurts: its clock and state, a ring's
 * indices, a packet's header near a ring's cursors */
static void own_writes(pl_proc *pp)
{
    uint8_t *own = (uint8_t *)pp->p;
    tsim_proc *p = pp->p;
    int n = 1 + (int)(next_rand() % 8);
    for (int i = 0; i < n; i++) {
        size_t len = 1 + next_rand() % 8, off;
        tsim_ring *r = next_rand() % 2 ? &p->inj[next_rand() % TSIM_NINJ] : &p->rec[next_rand() % TSIM_NREC];
        switch (next_rand() % 4) {
        case 0: off = next_rand() % (offsetof(tsim_proc, eng) - len); break;
        case 1: off = next_rand() % (offsetof(tsim_proc, waiting_on) - len); break;
        case 2: off = (size_t)((uint8_t *)r - own) + next_rand() % (offsetof(tsim_ring, slot) - len); break;
        default: {
            uint32_t at = atomic_load(&r->tail) + (uint32_t)(next_rand() % 4);
            off = (size_t)((uint8_t *)&r->slot[at % TSIM_RING_SLOTS] - own) +
                  next_rand() % (sizeof(tsim_meta) + sizeof(tsim_hwhdr) + 8 - len);
        }
        }
        for (size_t k = 0; k < len; k++) own[off + k] = (uint8_t)next_rand();
    }
}

/* Rank 1 names rank 0 the watcher of the ranks' core (torus-sim/
 * tsim_watch.h), which it is not, and clears the wakes asked of it:
 * nobody passes on the wakes the engine leaves to a watcher, nobody else
 * can watch, and the shared words say there is nothing to pass on. */
static void false_watcher(pl_proc *pp)
{
    tsim_seg *s = pp->seg;
    atomic_store(&s->watcher, 1u + (uint32_t)s->rank_proc[0]);
    atomic_store(&s->wake_any, 0);
    for (size_t w = 0; w < sizeof s->wake_req / sizeof *s->wake_req; w++) atomic_store(&s->wake_req[w], 0);
}

/* Ranks 0 and 1 play `rounds` rounds; rank 1 does `damage` in round `at`
 * (every round for at < 0). */
static void ping_pong(pl_proc *pp, int me, int rounds, int at, void (*damage)(pl_proc *))
{
    int peer = pp->seg->rank_proc[1 - me];
    for (int round = 0; round < rounds; round++) {
        if (me == 1 && (round == at || at < 0)) damage(pp);
        if (me == 1) receive(pp, 0);
        tsim_hwhdr hw;
        pl_header(pp, &hw, peer, 64, 0);
        pl_inject_wait(pp, 0, &hw, NULL, "ping-pong payload of sixty-four bytes, give or take a few", 58);
        if (me == 0) receive(pp, 0);
        pl_charge(pp, 500);
    }
    pl_close(pp, 0);
    exit(0);
}

static void random_writes(pl_proc *pp, uint64_t seed)
{
    seed_rng(seed);
    uint8_t *base = (uint8_t *)pp->seg;
    tsim_seg *s = pp->seg;
    size_t size = s->size;
    size_t own = (size_t)((uint8_t *)pp->p - base), own_len = offsetof(tsim_proc, eng);
    /* what else it may write (tsim_seg_protect): the bell, and in CO mode
     * the coprocessor slot of its node */
    size_t bell = offsetof(tsim_seg, engine_bell), co = 0;
    int idx = pp->index, mate = idx % TSIM_CPUS == 0;
    for (int r = 0; r < s->geom.nranks; r++) mate &= s->rank_proc[r] != idx + 1;
    if (mate) co = (size_t)((uint8_t *)&s->procs[idx + 1] - base);
    int n = 1 + (int)(next_rand() % 8);
    for (int i = 0; i <= n; i++) {
        size_t len = 1 + next_rand() % 16, off;
        if (i < n && next_rand() % 2) { /* its own pages */
            off = own + next_rand() % (own_len - len);
        } else { /* anywhere else: the header, others' processors, its engine page */
            for (;;) {
                off = next_rand() % (size - len);
                if (off + len > own && off < own + own_len) continue;
                if (i < n) break;
                /* the last one where it may not write: it faults */
                if ((off + len > bell && off < bell + TSIM_PAGE) ||
                    (co && off + len > co && off < co + own_len))
                    continue;
                break;
            }
        }
        for (size_t k = 0; k < len; k++) base[off + k] = (uint8_t)next_rand();
    }
}

/* "replay": the receive VICTIM describes to the engine (ml_match_for: any
 * header) lands in rx_described; its upcall puts the message in rx_upcall.
 * Both complete with the upcall's argument. */
static char rx_described[512], rx_upcall[512];

static void replay_done(ml_ctx *ml, void *arg)
{
    (void)ml;
    *(volatile int *)arg = 1;
}

static void replay_upcall(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                          void *uarg)
{
    (void)ml, (void)src, (void)hdr, (void)hdrlen, (void)len;
    *out = (ml_recv){.buf = rx_upcall, .cap = sizeof rx_upcall, .done = replay_done, .arg = uarg};
}

static unsigned replay_posted(void *arg, ml_match_rule *rule, ml_posted *rows, unsigned max)
{
    if (!max) return 0;
    *rule = (ml_match_rule){.mask = {0}};
    rows[0] = (ml_posted){.any = 0xf, .land = 1, .buf = rx_described, .cap = sizeof rx_described,
                          .done = replay_done, .arg = arg};
    return 1;
}

static int replay(pl_proc *pp, int me, int victim)
{
    volatile int done = 0;
    ml_mode mode = pp->seg->geom.cpus == 2 ? ML_MODE_VN : ML_MODE_CO;
    ml_ctx *ml = ml_init(pp, me, mode, replay_upcall, (void *)&done);
    if (!ml) return 2;
    if (me == victim) {
        ml_match_for(ml, replay_posted);
        ml_wait(ml, &done); /* the replay ends the job first */
        return 1;
    }
    /* the message layer holds the message until it is sent */
    static char payload[512] = "a message whose receive was described elsewhere";
    static int hdr;
    static ml_msg m;
    if (me == 0) {
        pl_charge(pp, 200000); /* long after VICTIM has blocked */
        m = (ml_msg){.dst = victim, .hdr = &hdr, .hdrlen = sizeof hdr, .buf = payload, .len = sizeof payload,
                     .proto = ML_EAGER, .done = replay_done, .arg = (void *)&done};
        if (ml_send(ml, &m) != 0) return 2;
    }
    volatile int never = 0;
    ml_wait(ml, &never);
    return 1;
}

/* The rank computes, as long as the job lasts: it tells the engine it has
 * moved, and calls nothing of the packet layer. */
static _Noreturn void compute(pl_proc *pp)
{
    tsim_kick(pp->seg);
    while (!pl_aborting(pp)) usleep(1000);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tp_corrupt VICTIM CASE [SEED] (cases: see tests/bin/tp_corrupt.c)\n");
        return 2;
    }
    int victim = atoi(argv[1]);
    const char *what = argv[2];
    int rec = !strncmp(what, "rec-", 4);
    pl_proc pp;
    char err[256];
    if (pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_corrupt: %s\n", err);
        return 2;
    }
    int me = pp.p->rank, to = pp.seg->rank_proc[victim];
    if (!strcmp(what, "bad-type")) {
        ml_ctx *ml = ml_init(&pp, me, ML_MODE_HEATER, NULL, NULL);
        volatile int never = 0;
        if (me == victim) {
            tsim_hwhdr hw;
            uint8_t sw[8] = {30};
            pl_header(&pp, &hw, pp.seg->rank_proc[0], 8, 0);
            pl_inject_wait(&pp, 0, &hw, sw, "8 bytes", 8);
        }
        ml_wait(ml, &never);
        return 1;
    }
    if (!strcmp(what, "random-own")) {
        seed_rng(argc > 3 ? strtoull(argv[3], NULL, 0) : 1);
        if (me < 2) ping_pong(&pp, me, 20, (int)(next_rand() % 20), own_writes);
        pl_close(&pp, 0);
        return 0;
    }
    if (!strcmp(what, "replay")) return victim > 0 ? replay(&pp, me, victim) : 2;
    if (!strcmp(what, "watcher")) {
        if (me < 2) ping_pong(&pp, me, 2000, -1, false_watcher);
        pl_close(&pp, 0);
        return 0;
    }
    if (me != victim) {
        if (me == 0 && rec) { /* the packet the victim receives */
            tsim_hwhdr hw;
            pl_header(&pp, &hw, to, 8, 0);
            pl_inject_wait(&pp, 0, &hw, NULL, "8 bytes", 8);
        }
        pl_block(&pp, TSIM_WAKE_REC_ALL, "a packet from the damaged rank");
        pl_close(&pp, 1);
        return 1;
    }
    /* simulated time moves on first, so that "past" has a past */
    pl_charge(&pp, 10000);
    pl_sync(&pp);
    tsim_proc *p = pp.p, *p0 = &pp.seg->procs[pp.seg->rank_proc[0]];
    if (rec) {
        tsim_ring *r = &p->rec[0];
        receive(&pp, !strcmp(what, "rec-future"));
        uint32_t tl = atomic_load(&r->tail);
        if (!strcmp(what, "rec-past")) {
            atomic_store(&r->tail, tl + 5);
        } else if (!strcmp(what, "rec-reuse")) {
            pl_charge(&pp, 100);
            pl_sync(&pp); /* the engine has seen the slot freed... */
            atomic_store(&r->tail, tl - 1); /* ...that is read again */
            compute(&pp); /* till the engine looks at its FIFOs */
        } else if (!strcmp(what, "rec-garbage")) {
            uint32_t h = atomic_load(&r->head);
            memset(&r->slot[h % TSIM_RING_SLOTS], 0x5a, sizeof(tsim_slot));
            r->slot[h % TSIM_RING_SLOTS].m.t_arrive = 1;
            atomic_store(&r->head, h + 1);
        } else if (!strcmp(what, "rec-future")) {
            r->slot[tl % TSIM_RING_SLOTS].m.t_arrive = 1ull << 60;
        }
        receive(&pp, 0); /* what the message layer would do next */
    } else if (!strcmp(what, "inj-cap")) {
        p->inj[0].cap = 0;
        tsim_hwhdr hw;
        pl_header(&pp, &hw, pp.seg->rank_proc[0], 8, 0);
        pl_inject_wait(&pp, 0, &hw, NULL, "8 bytes", 8);
    } else if (!strcmp(what, "state")) {
        atomic_store(&p->state, 9);
        compute(&pp); /* a packet-layer call would set the state again */
    } else if (!strcmp(what, "other-rec")) {
        p0->rec[0].slot[0].p.hw.chunks = 3;
    } else if (!strcmp(what, "other-state")) {
        atomic_store(&p0->state, TSIM_P_EXITED);
    } else if (!strcmp(what, "seg-header")) {
        pp.seg->geom.dim[0] = 200;
    } else if (!strcmp(what, "engine-page")) {
        atomic_store(&p->eng.rec_head[0], 7);
    } else if (!strcmp(what, "bogus-buf")) {
        /* one message of 4 KiB to rank 0 from an address nothing maps: the
         * loop is handed over at its start, so the engine reads it at once */
        ml_wait_state *d = (ml_wait_state *)(void *)p->handoff.state;
        memset(d, 0, sizeof *d);
        d->polls = 1;
        d->batch = 1;
        d->ntx = 1;
        d->tx[0] = (ml_ho_tx){.buf = 16, .len = 4096, .whole = 4096, .dst = (uint32_t)pp.seg->rank_proc[0],
                              .type = 7, .id = 1, .live = 1};
        p->handoff.prog = ML_PROG_WAIT;
        p->handoff.start = 1;
        atomic_fetch_add(&p->handoff.gen, 1);
        pl_block_need(&pp, TSIM_WAKE_REC_ALL, TSIM_MAX_CHUNKS, "the engine's sends");
    } else if (!strcmp(what, "random")) {
        random_writes(&pp, argc > 3 ? strtoull(argv[3], NULL, 0) : 1);
        tsim_kick(pp.seg);
    } else { /* its injection FIFO 0 */
        tsim_ring *r = &p->inj[0];
        uint32_t h = atomic_load(&r->head);
        int header = !strcmp(what, "header");
        for (int k = 0; k < (header ? 4 : 1); k++) {
            tsim_slot *s = &r->slot[(h + k) % TSIM_RING_SLOTS];
            pl_header(&pp, &s->p.hw, 0, 8, 0); /* a good packet to rank 0's processor... */
            s->m.t_inject = pp.vt;
            s->m.src = (uint32_t)pp.index;
            if (!strcmp(what, "chunks0") || (header && k == 0)) s->p.hw.chunks = 0; /* ...then the damage */
            else if (!strcmp(what, "chunks9")) s->p.hw.chunks = 201;
            else if (header) s->p.hw.chunks = (uint8_t)(200 + k), memset(s->p.hw.dst, 255, 3);
            else if (!strcmp(what, "dst")) memset(s->p.hw.dst, 255, 3);
            else if (!strcmp(what, "flags")) s->p.hw.flags = 0x80;
            else if (!strcmp(what, "group")) s->p.hw.group = 7;
            else if (!strcmp(what, "past")) s->m.t_inject = 5;
        }
        if (!strcmp(what, "head")) h += 100000;
        else if (!strcmp(what, "back")) h -= 3;
        else h += header ? 4 : 1;
        atomic_store(&r->head, h);
        tsim_kick(pp.seg);
    }
    pl_block(&pp, TSIM_WAKE_REC_ALL, "the end of the job");
    pl_close(&pp, 1);
    return 1;
}
