/* The engine's steps for blocked processors (torus-sim/tsim_proxy.c,
 * messagelayer/ml_proxy.c): each job runs twice, with BGLEMU_PROXY=0 (every
 * packet wakes its rank) and with the engine doing the waiting loops' work,
 * and must give the same clocks, link counters and bytes — while the engine
 * really did read and send packets for the ranks. Ranks are threads on an
 * anonymous segment; the engine runs in the test's thread. */
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "messagelayer/ml_internal.h"
#include "suite.h"

#define NR 4
#define MSGS 3

/* A job, and how it runs: J_LAYOUT, sends gathered from and receptions
 * scattered into layouts; J_NOCOPY, VN data over the scratchpad
 * (BGLEMU_VN_NOCOPY); J_IDLE, the engine need not read or send a packet;
 * J_QUIET, a sender of several messages at once waits for each in turn,
 * as MPI_Waitall does, saying which (ml_wait_for), its messages' callbacks
 * only marking them complete (ml_msg.completes); J_QUIET_RX, a receiver
 * waits for its messages one at a time, the last first (MPI_Waitall on
 * receives posted in another order than they complete), saying which, its
 * receptions' callbacks only marking them complete (ml_recv.completes);
 * J_RX_WAITALL, the same loop without saying which; J_WAIT_REST, with
 * J_QUIET or J_QUIET_RX: each wait names all the loop still waits for, in
 * its order, as MPI_Waitall does (ml_wait_for), not only the next;
 * J_POSTED, the receiver describes its receives as posted (ml_match_for:
 * one per message, matched by the header's message number), so that the
 * engine can take their rendezvous scouts. */
enum { J_LAYOUT = 1, J_NOCOPY = 2, J_IDLE = 4, J_QUIET = 8, J_QUIET_RX = 16, J_RX_WAITALL = 32, J_WAIT_REST = 64,
       J_POSTED = 128 };
typedef struct job {
    const char *what;
    ml_mode mode;
    int nranks, shape[3], cpus;
    ml_proto proto;
    size_t len;
    int bidir;      /* ranks 0 and 1 send to each other at once */
    size_t offset;  /* receive buffers start this far past a 64-byte boundary */
    int delegate;   /* the receive loop hands itself to the engine before advancing */
    int burst;      /* all messages posted at once (several going out together) */
    int fan;        /* rank 0 sends message k to rank k + 1, all at once (several peers) */
    int a2a;        /* every rank sends one message to each other rank, all at once
                       (MSGS = NR - 1: several peers, several receptions each) */
    int send_polls; /* the sender waits as the MPI netmod does: this many empty
                       advances, then blocks describing as many (0: one) */
    unsigned flags; /* J_* */
} job;

/* Layouts (derived datatypes): sends gathered from pieces of LAY_S bytes,
 * receptions scattered into pieces of LAY_R bytes, laid end to end (the
 * data check stays a memcmp; the segments and their costs are real). */
#define LAY_S 100
#define LAY_R 70

static struct iovec *pieces(uint8_t *base, size_t len, size_t b, size_t *n)
{
    *n = (len + b - 1) / b;
    struct iovec *v = calloc(*n ? *n : 1, sizeof *v);
    for (size_t k = 0; k < *n; k++) v[k] = (struct iovec){base + k * b, len - k * b < b ? len - k * b : b};
    return v;
}

typedef struct rank {
    const job *j;
    pl_proc pp;
    ml_ctx *ml;
    int me;
    uint8_t *src, *dst;
    volatile int rfin[NR]; /* J_QUIET_RX, J_RX_WAITALL: message k received (by header) */
    struct iovec *siov[NR], *riov[NR]; /* riov by header (a2a: the sender) */
    size_t sn[NR], rn[NR];
    volatile int got, sent;
    uint64_t end, staged;
    /* what the wait loop waits for (J_QUIET, J_QUIET_RX): requests in its
     * order and the flags their completions set */
    const void *wl[NR];
    volatile int *wl_done[NR];
    int nwl;
    int matched[NR]; /* J_POSTED: the upcall took message k (by header) */
} rank;

/* ml_wait_fn: those of the loop's requests not complete yet. */
static unsigned waiting_for(void *arg, const void **what, unsigned max)
{
    rank *r = arg;
    unsigned n = 0;
    for (int i = 0; i < r->nwl && n < max; i++)
        if (!*r->wl_done[i]) what[n++] = r->wl[i];
    return n;
}

static void on_done(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

static void on_rx_k(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

static void on_up(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                  void *uarg)
{
    (void)ml, (void)src, (void)hdrlen;
    rank *r = uarg;
    int k;
    memcpy(&k, hdr, sizeof k);
    r->matched[k] = 1;
    out->buf = r->dst + (size_t)k * len;
    out->cap = len;
    if (r->j->flags & J_LAYOUT) {
        r->riov[k] = pieces(r->dst + (size_t)k * len, len, LAY_R, &r->rn[k]);
        out->buf = NULL;
        out->iov = r->riov[k];
        out->niov = r->rn[k];
    }
    out->done = on_done;
    out->arg = (void *)&r->got;
    if (r->j->flags & (J_QUIET_RX | J_RX_WAITALL)) {
        out->done = on_rx_k;
        out->arg = (void *)&r->rfin[k];
        if (r->j->flags & J_QUIET_RX) out->completes = (const void *)&r->rfin[k];
    }
}

/* J_POSTED (ml_posted_fn): the receives not matched yet, one per
 * message by its number (the header), landing where on_up lands them. */
static unsigned posted(void *arg, ml_match_rule *rule, ml_posted *rows, unsigned max)
{
    rank *r = arg;
    *rule = (ml_match_rule){.mask = {UINT32_MAX}};
    unsigned n = 0;
    for (int k = 0; k < NR && n < max; k++) {
        if (r->matched[k] || (!r->j->a2a && k >= MSGS) || (r->j->a2a && k == r->me)) continue;
        ml_posted *p = &rows[n++];
        *p = (ml_posted){.key = {(uint32_t)k}, .land = !(r->j->flags & J_LAYOUT),
                         .buf = r->dst + (size_t)k * r->j->len, .cap = r->j->len, .done = on_done,
                         .arg = (void *)&r->got};
        if (r->j->flags & (J_QUIET_RX | J_RX_WAITALL)) {
            p->done = on_rx_k;
            p->arg = (void *)&r->rfin[k];
            if (r->j->flags & J_QUIET_RX) p->completes = (const void *)&r->rfin[k];
        }
    }
    return n;
}

static void *rank_main(void *arg)
{
    rank *r = arg;
    const job *j = r->j;
    int peer = r->me ^ 1, sends = r->me == 0 || (j->bidir && r->me == 1);
    int recvs = r->me == 1 || (j->bidir && r->me == 0);
    int want = MSGS;
    if (j->fan) recvs = r->me > 0, want = 1;
    if (j->a2a) sends = recvs = 1;
    ml_msg m[MSGS];
    int hdr[MSGS];
    volatile int fin[MSGS] = {0};
    int quiet = (j->flags & J_QUIET) && (j->burst || j->fan || j->a2a);
    for (int k = 0; k < MSGS && sends; k++) { /* one after another: MPI_Send in a loop */
        /* a2a: message k goes to rank me + k + 1 and lands at the receiver's
         * place for its sender (hdr) */
        int to = j->a2a ? (r->me + k + 1) % NR : j->fan ? k + 1 : peer;
        hdr[k] = j->a2a ? r->me : k;
        m[k] = (ml_msg){.dst = to, .hdr = &hdr[k], .hdrlen = sizeof hdr[k],
                        .buf = r->src + (size_t)(j->a2a ? to : k) * j->len + 1, .len = j->len, .proto = j->proto,
                        .done = on_done, .arg = (void *)&r->sent};
        if (quiet) m[k].arg = (void *)&fin[k], m[k].completes = &m[k];
        if (j->flags & J_LAYOUT) {
            r->siov[k] = pieces(r->src + (size_t)(j->a2a ? to : k) * j->len + 1, j->len, LAY_S, &r->sn[k]);
            m[k].iov = r->siov[k];
            m[k].niov = r->sn[k];
        }
        ck_assert_int_eq(ml_send(r->ml, &m[k]), 0);
        unsigned polls = j->send_polls ? (unsigned)j->send_polls : 1, empty = 0;
        for (int w = quiet && k == MSGS - 1 ? 0 : MSGS; w <= MSGS; w++) { /* J_QUIET: one at a time */
            if (w < MSGS) { /* this one, or all from it on */
                r->nwl = 0;
                for (int x = w; x < (j->flags & J_WAIT_REST ? MSGS : w + 1); x++, r->nwl++)
                    r->wl[r->nwl] = &m[x], r->wl_done[r->nwl] = &fin[x];
                ml_wait_for(r->ml, waiting_for);
            }
            while (w < MSGS ? !fin[w]
                            : r->sent < (j->burst || j->fan || j->a2a ? (k == MSGS - 1 ? MSGS : 0) : k + 1)) {
                if (ml_advance(r->ml)) {
                    empty = 0;
                    continue;
                }
                if (++empty < polls) continue;
                empty = 0;
                if (ml_wait_idle(r->ml, "test: send", polls) != 0) break;
            }
            if (w < MSGS) r->sent += fin[w];
        }
        ml_wait_for(r->ml, NULL);
    }
    /* the MPI netmod's loop: four empty advances in a row, then block;
     * J_QUIET_RX, J_RX_WAITALL: one message at a time, the middle one
     * first (whichever end the messages complete from, one completes
     * while it waits for another) */
    int empty = 0, each = (j->flags & (J_QUIET_RX | J_RX_WAITALL)) != 0;
    if (j->flags & J_POSTED) ml_match_for(r->ml, posted);
    for (int i = 0; recvs && i < (each ? want : 1); i++) {
        int w = i == 0 ? want / 2 : i <= want / 2 ? i - 1 : i;
        if (j->flags & J_QUIET_RX) { /* this one, or all from it on in this order */
            r->nwl = 0;
            for (int x = i; x < (j->flags & J_WAIT_REST ? want : i + 1); x++, r->nwl++) {
                volatile int *f = &r->rfin[x == 0 ? want / 2 : x <= want / 2 ? x - 1 : x];
                r->wl[r->nwl] = (const void *)f, r->wl_done[r->nwl] = f;
            }
            ml_wait_for(r->ml, waiting_for);
        }
        while (each ? !r->rfin[w] : r->got < want) {
            if (j->delegate && ml_wait_delegate(r->ml, "test: receive", 4, (unsigned)empty) < 0) break;
            if (ml_advance(r->ml)) {
                empty = 0;
                continue;
            }
            if (++empty < 4) continue;
            empty = 0;
            if (ml_wait_idle(r->ml, "test: receive", 4) != 0) break;
        }
        r->got += each ? r->rfin[w] : 0;
    }
    ml_wait_for(r->ml, NULL);
    ml_match_for(r->ml, NULL);
    r->end = pl_now(&r->pp);
    r->staged = ml_get_stats(r->ml)->staged;
    ml_finalize(r->ml);
    pl_close(&r->pp, 0);
    return NULL;
}

typedef struct outcome {
    uint64_t end[NR], ddt[NR], staged;
    uint64_t link_pkts, link_busy;
    uint64_t co_bells; /* CO mode: the coprocessors' wakes (and syncs) */
    tsim_result res;
    uint8_t *data[2];
} outcome;

static void run(const job *j, int proxy, outcome *o)
{
    setenv("BGLEMU_PROXY", proxy ? "1" : "0", 1);
    if (j->flags & J_NOCOPY) setenv("BGLEMU_VN_NOCOPY", "1", 1);
    tsim_seg *seg = um_seg(j->shape[0], j->shape[1], j->shape[2], 1, j->cpus, NULL);
    um_ranks(seg, j->nranks, NULL);
    rank r[NR];
    memset(r, 0, sizeof r);
    size_t bytes = (size_t)NR * j->len + 64;
    for (int i = 0; i < j->nranks; i++) {
        r[i].j = j;
        r[i].me = i;
        r[i].src = malloc(bytes);
        r[i].dst = aligned_alloc(64, (bytes + 127) / 64 * 64);
        memset(r[i].dst, 0, bytes + 64);
        r[i].dst += j->offset;
        for (size_t b = 0; b < bytes; b++) r[i].src[b] = (uint8_t)(b * 131 + i * 7 + 3);
        pl_open(&r[i].pp, seg, seg->rank_proc[i], 0);
    }
    for (int i = 0; i < j->nranks; i++) {
        r[i].ml = ml_init(&r[i].pp, i, j->mode, on_up, &r[i]);
        ck_assert_ptr_nonnull(r[i].ml);
    }
    if (proxy < 0) setenv("BGLEMU_PROXY", "0", 1); /* ranks describe, the engine refuses */
    tsim_engine *e = um_run(seg, j->nranks, rank_main, r, sizeof *r, &o->res);
    um_links(e, seg, &o->link_pkts, &o->link_busy);
    o->staged = 0;
    for (int i = 0; i < j->nranks; i++) {
        o->end[i] = r[i].end;
        o->staged += r[i].staged;
        if (j->a2a) { /* from every other rank, at its place */
            ck_assert_int_eq(r[i].got, MSGS);
            for (int s = 0; s < NR; s++)
                ck_assert_msg(s == i || !memcmp(r[i].dst + (size_t)s * j->len,
                                                r[s].src + (size_t)i * j->len + 1, j->len),
                              "rank %d's message from %d corrupted", i, s);
            if (i < 2) o->data[i] = NULL;
            continue;
        }
        if (j->fan) { /* message k to rank k + 1 */
            ck_assert_int_eq(r[i].got, i > 0);
            if (i > 0)
                ck_assert_msg(!memcmp(r[i].dst + (size_t)(i - 1) * j->len,
                                      r[0].src + (size_t)(i - 1) * j->len + 1, j->len),
                              "rank %d's message corrupted", i);
            if (i < 2) o->data[i] = NULL;
            continue;
        }
        ck_assert_int_eq(r[i].got, (i == 1 || (j->bidir && i == 0)) ? MSGS : 0);
        if (i < 2) {
            o->data[i] = malloc(bytes);
            memcpy(o->data[i], r[i].dst, (size_t)MSGS * j->len);
            /* every byte arrived, none beyond the buffer */
            if (r[i].got)
                for (int k = 0; k < MSGS; k++)
                    ck_assert_msg(!memcmp(r[i].dst + (size_t)k * j->len,
                                          r[i ^ 1].src + (size_t)k * j->len + 1, j->len),
                                  "rank %d message %d corrupted", i, k);
        }
    }
    for (int i = 0; i < j->nranks; i++) {
        o->ddt[i] = seg->procs[seg->rank_proc[i]].ddt_cycles;
        free(r[i].src);
        free(r[i].dst - j->offset);
        for (int k = 0; k < NR; k++) free(r[i].siov[k]), free(r[i].riov[k]);
    }
    o->co_bells = 0;
    if (j->mode == ML_MODE_CO)
        for (int i = 0; i < j->nranks; i++)
            o->co_bells += atomic_load(&seg->procs[seg->rank_proc[i] + 1].bell);
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
    unsetenv("BGLEMU_PROXY");
    unsetenv("BGLEMU_VN_NOCOPY");
}

/* Same simulated result both ways; the engine read and sent packets
 * (unless J_IDLE) and the ranks woke less. */
static void same_results(const job *j, const outcome *a, const outcome *b, const char *how)
{
    for (int i = 0; i < j->nranks; i++)
        ck_assert_msg(a->end[i] == b->end[i], "%s: rank %d ends at %llu %s, %llu without", j->what, i,
                      (unsigned long long)b->end[i], how, (unsigned long long)a->end[i]);
    for (int i = 0; i < j->nranks; i++) ck_assert_uint_eq(a->ddt[i], b->ddt[i]);
    ck_assert_uint_eq(a->res.end_time, b->res.end_time);
    ck_assert_uint_eq(a->res.events, b->res.events);
    ck_assert_uint_eq(a->res.packet_hops, b->res.packet_hops);
    ck_assert_uint_eq(a->link_pkts, b->link_pkts);
    ck_assert_uint_eq(a->link_busy, b->link_busy);
}

static void check_same(const job *j)
{
    const char *what = j->what;
    int want_read = !(j->flags & J_IDLE), want_sent = want_read;
    outcome a, b;
    run(j, 0, &a);
    run(j, 1, &b);
    same_results(j, &a, &b, "with the engine's help");
    ck_assert_uint_eq(a.res.proxy_read + a.res.proxy_sent, 0);
    if (want_read) ck_assert_msg(b.res.proxy_read > 0, "%s: the engine read no packet", what);
    if (want_sent) ck_assert_msg(b.res.proxy_sent > 0, "%s: the engine sent no packet", what);
    ck_assert_msg(b.res.wakes < a.res.wakes || (!want_read && !want_sent && b.res.wakes <= a.res.wakes), "%s: %llu wakes with the engine's help, %llu without",
                  what, (unsigned long long)b.res.wakes, (unsigned long long)a.res.wakes);
    printf("proxy: %-34s end %llu cycles, wakes %llu -> %llu, engine read %llu sent %llu packets\n",
           what, (unsigned long long)b.res.end_time, (unsigned long long)a.res.wakes,
           (unsigned long long)b.res.wakes, (unsigned long long)b.res.proxy_read,
           (unsigned long long)b.res.proxy_sent);
    for (int i = 0; i < 2; i++) free(a.data[i]), free(b.data[i]);
}

/* J_QUIET: also the same results as the sender that does not say what it
 * waits for, with fewer wakes: the engine records the completions of the
 * messages the sender is not waiting for instead of waking it. */
static void check_quiet(const job *j)
{
    check_same(j);
    job plain = *j;
    plain.flags &= ~(unsigned)J_QUIET;
    if (j->flags & J_QUIET_RX) /* the receptions' part alone */
        plain.flags = (j->flags & ~(unsigned)J_QUIET_RX) | J_RX_WAITALL;
    outcome q, p;
    run(j, 1, &q);
    run(&plain, 1, &p);
    same_results(j, &p, &q, "with quiet completions");
    ck_assert_msg(q.res.wakes < p.res.wakes, "%s: %llu wakes with quiet completions, %llu without", j->what,
                  (unsigned long long)q.res.wakes, (unsigned long long)p.res.wakes);
    printf("proxy: %-34s quiet completions: wakes %llu -> %llu, same end %llu cycles\n", j->what,
           (unsigned long long)p.res.wakes, (unsigned long long)q.res.wakes,
           (unsigned long long)q.res.end_time);
    for (int i = 0; i < 2; i++) free(q.data[i]), free(p.data[i]);
}

/* J_WAIT_REST: the same results as the loop that names only the next of
 * what it waits for, with fewer wakes (fewer) or no more: the engine goes
 * on with the next wait where the rank would have handed it back. */
static void rest_vs_one(const job *j, int fewer)
{
    check_same(j);
    job one = *j;
    one.flags &= ~(unsigned)J_WAIT_REST;
    outcome q, p;
    run(j, 1, &q);
    run(&one, 1, &p);
    same_results(j, &p, &q, "naming all the wait is for");
    ck_assert_msg(q.res.wakes + (fewer ? 1 : 0) <= p.res.wakes,
                  "%s: %llu wakes naming all the wait is for, %llu naming the next", j->what,
                  (unsigned long long)q.res.wakes, (unsigned long long)p.res.wakes);
    printf("proxy: %-34s all the wait is for: wakes %llu -> %llu, same end %llu cycles\n", j->what,
           (unsigned long long)p.res.wakes, (unsigned long long)q.res.wakes,
           (unsigned long long)q.res.end_time);
    for (int i = 0; i < 2; i++) free(q.data[i]), free(p.data[i]);
}

static void check_rest(const job *j) { rest_vs_one(j, 1); }
static void check_rest_same(const job *j) { rest_vs_one(j, 0); }

/* A test of several jobs, each run both ways by check (check_same,
 * check_staged, check_quiet). */
#define JOBS_TEST(name, check, ...)                                                                 \
    START_TEST(name)                                                                               \
    {                                                                                              \
        static const job jobs[] = {__VA_ARGS__};                                                   \
        for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) check(&jobs[i]);                   \
    }                                                                                              \
    END_TEST

/* what, mode, ranks, shape, cpus, proto, len, bidir, offset, delegate, burst, fan, a2a, send_polls, flags */
JOBS_TEST(proxy_rendezvous_heater, check_same,
          {"rendezvous, no coprocessor", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 0, 0})

JOBS_TEST(proxy_rendezvous_coproc, check_same,
          {"rendezvous, coprocessor receives", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 0, 0, 0, 0, 0, 0, 0})

/* Unaligned receive buffers in CO mode: the whole lines go to the
 * coprocessor, the partial lines at the ends to the main processor, each
 * part's packets sent by the engine for the blocked sender. */
JOBS_TEST(proxy_rendezvous_coproc_split, check_same,
          {"rendezvous 1 MiB, split (offset 16)", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 1 << 20, 0, 16, 0, 0, 0, 0, 0, 0})

/* 300,001 bytes one after another: every message its own head and tail */
JOBS_TEST(proxy_rendezvous_coproc_split_odd, check_same,
          {"rendezvous, split, odd lengths, both ways", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 300001, 1, 16, 0, 0, 0, 0, 0, 0})

/* Several peers' split receptions in flight at once, both ways: every rank
 * sends to and receives from three others, buffers at odd offsets. The
 * second: 4,593 bytes at offset 3: head 29, whole lines 4,544 (the last
 * packet 224), tail 20 — a packet cut only at the message's end would
 * straddle the cpus (the engine's description of a part must end it). */
JOBS_TEST(proxy_rendezvous_coproc_split_a2a, check_same,
          {"rendezvous, split, all to all, odd", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 30001, 0, 3, 0, 0, 0, 1, 0, 0},
          {"the same, 4593 B, loop handed over", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 4593, 0, 3, 1, 0, 0, 1, 0, 0})

/* The coprocessor's loop stays with the engine from one reception to the
 * next: a reception the main processor grants it while the engine runs
 * that loop is taken up at its first data packet (the engine reads the
 * slot the main processor set up before its grant), so the coprocessor
 * wakes for none of the messages (without that, once for each); the
 * same results, whole messages and splits. */
static void check_co_asleep(const job *j)
{
    check_same(j);
    outcome a, b;
    run(j, 0, &a);
    run(j, 1, &b);
    int msgs = j->a2a ? NR * MSGS : j->bidir ? 2 * MSGS : MSGS;
    /* a coprocessor that receives nothing: its first poll's sync, its stop */
    uint64_t idle = 2 * (uint64_t)j->nranks;
    ck_assert_msg(b.co_bells <= idle && b.co_bells < a.co_bells,
                  "%s: coprocessors woke %llu times for %d messages with the engine's help (%llu if they "
                  "received nothing), %llu without",
                  j->what, (unsigned long long)b.co_bells, msgs, (unsigned long long)idle,
                  (unsigned long long)a.co_bells);
    printf("proxy: %-34s coprocessor wakes %llu -> %llu for %d messages\n", j->what,
           (unsigned long long)a.co_bells, (unsigned long long)b.co_bells, msgs);
    for (int i = 0; i < 2; i++) free(a.data[i]), free(b.data[i]);
}

JOBS_TEST(proxy_coproc_asleep, check_co_asleep,
          {"coprocessor: 1300 B, one after another", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 1300, 0, 0, 0, 0, 0, 0, 4, 0},
          {"coprocessor: 2800 B, split, both ways", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 1, 16, 1, 0, 0, 0, 4, 0},
          {"coprocessor: 4593 B, split, all to all", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 4593, 0, 3, 1, 0, 0, 1, 0, 0})

/* Senders that wait for their grants in the MPI netmod's loop (four empty
 * advances, then block): the engine takes each grant as the rank's
 * T_GRANT handler would and sends the data (ml_rzv_grant). BT/SP's short
 * messages (1.3 and 2.8 KB), whose grant and data all come while the
 * sender waits: received by the coprocessor, split (the head's and tail's
 * partial lines the main processor's, which the engine also takes), by
 * several peers at once, in VN mode. */
JOBS_TEST(proxy_rendezvous_grant, check_same,
          {"grant: 1300 B, coprocessor receives", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 1300, 0, 0, 0, 0, 0, 0, 4, 0},
          {"grant: 2800 B, split, both ways", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 1, 16, 1, 0, 0, 0, 4, 0},
          {"grant: 2800 B, split, to three peers", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 2800, 0, 16, 0, 0, 1, 0, 4, 0},
          {"grant: 2800 B, VN mode, all to all", ML_MODE_VN, 4, {2, 1, 1}, 2, ML_RZV, 2800, 0, 16, 0, 0, 0, 1, 4, 0})

/* A sender waiting for room whose loop makes several empty advances before
 * it blocks, as the MPI netmod's does: the engine does a run of such
 * advances, each the same as the last, at once while no event can come
 * before them. With 16, room comes back within a run: it must stop short. */
/* A sender of several rendezvous messages at once that waits for each in
 * turn, as MPI_Waitall does: the grants and data of all of them come while
 * it waits for the first; the others' completions are recorded. To one
 * peer, to three (their order of completion not the posting order), both
 * ways with the receive loop handed over. */
JOBS_TEST(proxy_quiet_completions, check_quiet,
          {"quiet: rendezvous burst", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 0, 0, 0, 1, 0, 0, 4, J_QUIET},
          {"quiet: rendezvous to three peers", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 2800, 0, 16, 0, 0, 1, 0, 4, J_QUIET},
          {"quiet: both ways, 30001 B", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 1, 0, 1, 1, 0, 0, 4, J_QUIET})

/* Split receptions: a message's data goes in parts (the receiver's
 * partial head line, its whole lines, its partial tail line), and only
 * the end of the last is the message's: a part's last packet must not
 * complete it (it did, and the job deadlocked). The engine goes on from
 * one part to the next itself (ml_rzv_next_part) and records the
 * message's completion when it is quiet: fewer wakes than without. */
JOBS_TEST(proxy_quiet_split, check_quiet,
          {"quiet: split, both ways", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 1, 16, 1, 1, 0, 0, 4, J_QUIET})

/* A receiver of several messages that waits for each in turn, the middle
 * one first (MPI_Waitall): another completes while it waits for that one,
 * and the engine records their completions — at the coprocessor's notice
 * (CO mode: its receptions), at their last packet (the main processor's:
 * rendezvous without a coprocessor, eager data). */
JOBS_TEST(proxy_quiet_receptions, check_quiet,
          {"quiet rx: coprocessor receives", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 0, 0, 1, 1, 0, 0, 4, J_QUIET_RX},
          {"quiet rx: split, both ways (BT)", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 1, 16, 1, 1, 0, 0, 4, J_QUIET | J_QUIET_RX},
          {"quiet rx: rendezvous, main", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 30000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX},
          {"quiet rx: eager, main", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX})

/* Loops naming all they still wait for (MPI_Waitall): the engine records
 * even the completion of the one waited for, and wakes the rank once all
 * are complete — receivers whose messages complete in another order than
 * they wait for them. */
JOBS_TEST(proxy_wait_rest, check_rest,
          {"rest rx: coprocessor receives", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 0, 0, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST},
          {"rest rx: rendezvous, main", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 30000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST},
          {"rest rx: eager, main", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST})
/* ... and senders, both ways: the same results, no more wakes (none to
 * spare in these: their waits end at completions that are the rank's
 * anyway). */
JOBS_TEST(proxy_wait_rest_send, check_rest_same,
          {"rest: rendezvous burst", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 0, 0, 0, 1, 0, 0, 4, J_QUIET | J_WAIT_REST},
          {"rest: rendezvous to three peers", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 2800, 0, 16, 0, 0, 1, 0, 4, J_QUIET | J_WAIT_REST},
          {"rest rx: split, both ways (BT)", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 1, 16, 1, 1, 0, 0, 4, J_QUIET | J_QUIET_RX | J_WAIT_REST})

/* J_POSTED: the same results as the receiver that describes no receive,
 * and fewer wakes: the engine takes the first packets of messages to
 * posted receives (ml_engine_match.c: a scout's grant, the data) where
 * the receiver woke for each. */
static void check_posted(const job *j)
{
    check_same(j);
    job plain = *j;
    plain.flags &= ~(unsigned)J_POSTED;
    outcome q, p;
    run(j, 1, &q);
    run(&plain, 1, &p);
    same_results(j, &p, &q, "with its receives described");
    uint64_t qn = q.res.backs[ML_PROG_WAIT][ML_BACK_NEW], pn = p.res.backs[ML_PROG_WAIT][ML_BACK_NEW];
    /* J_IDLE: one-packet messages, which the engine only reads for the rank */
    int idle = (j->flags & J_IDLE) != 0;
    ck_assert_msg(idle ? q.res.wakes <= p.res.wakes && q.res.proxy_read > p.res.proxy_read
                       : q.res.wakes < p.res.wakes && qn < pn,
                  "%s: %llu wakes (%llu for a new message, %llu packets read) with its receives described, "
                  "%llu (%llu, %llu) without", j->what, (unsigned long long)q.res.wakes, (unsigned long long)qn,
                  (unsigned long long)q.res.proxy_read, (unsigned long long)p.res.wakes, (unsigned long long)pn,
                  (unsigned long long)p.res.proxy_read);
    printf("proxy: %-34s receives described: wakes %llu -> %llu (new message %llu -> %llu, engine read %llu "
           "-> %llu), same end %llu cycles\n", j->what, (unsigned long long)p.res.wakes,
           (unsigned long long)q.res.wakes, (unsigned long long)pn, (unsigned long long)qn,
           (unsigned long long)p.res.proxy_read, (unsigned long long)q.res.proxy_read,
           (unsigned long long)q.res.end_time);
    for (int i = 0; i < 2; i++) free(q.data[i]), free(p.data[i]);
}

/* Receives posted before their messages come, as BT's, SP's and LU's
 * are: rendezvous received by the main processor, the coprocessor (the
 * engine writes the reception into the slot the rank reserved, for the
 * coprocessor to read at its first data packet), split (its whole lines
 * the coprocessor's), by several peers at once, in a wait naming all, in
 * VN mode; eager messages (the first packet's bytes and the rest taken
 * by the engine), in a wait naming all (their completions recorded). */
JOBS_TEST(proxy_posted, check_posted,
          {"posted: rendezvous, main", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 30000, 0, 16, 1, 0, 0, 0, 4, J_POSTED},
          {"posted: coprocessor receives", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 2800, 0, 0, 1, 0, 0, 0, 4, J_POSTED},
          {"posted: split, odd length", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 0, 16, 1, 0, 0, 0, 4, J_POSTED},
          {"posted: split, three receivers", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 4593, 0, 3, 1, 0, 1, 0, 4, J_POSTED},
          {"posted: waitall naming all, split", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 30001, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST | J_POSTED},
          {"posted: VN mode, three receivers", ML_MODE_VN, 4, {2, 1, 1}, 2, ML_RZV, 2800, 0, 16, 1, 0, 1, 0, 4, J_POSTED},
          {"posted: eager", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 1, 0, 0, 0, 4, J_POSTED},
          {"posted: eager, waitall naming all", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_EAGER, 2000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST | J_POSTED})

/* One-packet messages: the engine takes those whose completion does not
 * end the wait (the others end it where they come, and the rank stops
 * its advance sooner than the engine could): the same results, no more
 * wakes, and the engine read them (J_IDLE in check_posted). */
JOBS_TEST(proxy_posted_onepkt, check_posted,
          {"posted: one-packet, waitall naming all", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_ONEPKT, 100, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_WAIT_REST | J_POSTED | J_IDLE},
          {"posted: one-packet, waitall", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_ONEPKT, 100, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX | J_POSTED | J_IDLE})

JOBS_TEST(proxy_sender_polls, check_same,
          {"rendezvous, sender polls 4", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 4, 0},
          {"rendezvous, sender polls 16", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 16, 0},
          {"eager both ways, burst, sender polls 6", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 1, 16, 0, 1, 0, 0, 6, 0})

JOBS_TEST(proxy_eager, check_same,
          {"eager", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 0, 0, 0, 0, 0, 0})

JOBS_TEST(proxy_adaptive, check_same,
          {"adaptive eager, two hops", ML_MODE_HEATER, 2, {3, 2, 1}, 1, ML_ADAPTIVE, 20000, 0, 16, 0, 0, 0, 0, 0, 0})

JOBS_TEST(proxy_bidirectional, check_same,
          {"rendezvous both ways", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 100000, 1, 16, 0, 0, 0, 0, 0, 0})

JOBS_TEST(proxy_vn_fallback, check_same,
          {"VN without the direct copy", ML_MODE_VN, 2, {1, 1, 1}, 2, ML_VN, 50000, 0, 16, 0, 0, 0, 0, 0, J_NOCOPY})

JOBS_TEST(proxy_delegated_loop, check_same,
          {"rendezvous both ways, loop handed over", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 100000, 1, 16, 1, 0, 0, 0, 0, 0},
          {"one-packet both ways, loop handed over", ML_MODE_CO, 2, {2, 2, 1}, 1, ML_ONEPKT, 100, 1, 16, 1, 0, 0, 0, 0, J_IDLE})

JOBS_TEST(proxy_several_peers, check_same,
          {"eager to three peers at once", ML_MODE_HEATER, 4, {2, 2, 1}, 1, ML_EAGER, 20000, 0, 16, 0, 0, 1, 0, 0, 0},
          {"adaptive eager to three peers at once", ML_MODE_HEATER, 4, {4, 1, 1}, 1, ML_ADAPTIVE, 20000, 0, 16, 0, 0, 1, 0, 0, 0},
          {"rendezvous to three peers, handed over", ML_MODE_CO, 4, {2, 2, 1}, 1, ML_RZV, 50000, 0, 16, 1, 0, 1, 0, 0, 0})

JOBS_TEST(proxy_several_going_out, check_same,
          {"three rendezvous at once, both ways", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 60000, 1, 16, 1, 1, 0, 0, 0, 0},
          {"three rendezvous at once, VN mode", ML_MODE_VN, 4, {2, 1, 1}, 2, ML_RZV, 30000, 1, 16, 0, 1, 0, 0, 0, 0})

/* Layouts: the engine gathers and scatters packets through the ranks'
 * segment lists, charging their segments as the message layer would. */
JOBS_TEST(proxy_layouts, check_same,
          {"layouts: rendezvous", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT},
          {"layouts: rendezvous, coprocessor", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 0, 0, 0, 0, 0, 0, J_LAYOUT},
          {"layouts: adaptive eager, two hops", ML_MODE_HEATER, 2, {3, 2, 1}, 1, ML_ADAPTIVE, 20000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT},
          {"layouts: three rendezvous, both ways", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 60000, 1, 16, 1, 1, 0, 0, 0, J_LAYOUT},
          {"layouts: VN over the scratchpad", ML_MODE_VN, 2, {1, 1, 1}, 2, ML_VN, 50000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT | J_NOCOPY})

/* Layouts of many small segments are staged on the host (ml_layout.c): the
 * same clocks, datatype cycles, events and link counters as moving every
 * packet piece by piece (BGLEMU_STAGE=0), the engine doing the packets. */
static void check_staged(const job *j)
{
    const char *what = j->what;
    outcome a, b;
    setenv("BGLEMU_STAGE", "0", 1);
    run(j, 1, &a);
    unsetenv("BGLEMU_STAGE");
    run(j, 1, &b);
    ck_assert_msg(a.staged == 0 && b.staged >= 2, "%s: %llu layouts staged (want none), %llu (want both sides)",
                  what, (unsigned long long)a.staged, (unsigned long long)b.staged);
    for (int i = 0; i < j->nranks; i++) {
        ck_assert_msg(a.end[i] == b.end[i], "%s: rank %d ends at %llu staged, %llu piece by piece", what, i,
                      (unsigned long long)b.end[i], (unsigned long long)a.end[i]);
        ck_assert_uint_eq(a.ddt[i], b.ddt[i]);
    }
    ck_assert_uint_eq(a.res.end_time, b.res.end_time);
    ck_assert_uint_eq(a.res.events, b.res.events);
    ck_assert_uint_eq(a.link_busy, b.link_busy);
    ck_assert_uint_eq(a.res.proxy_read, b.res.proxy_read);
    ck_assert_uint_eq(a.res.proxy_sent, b.res.proxy_sent);
    printf("proxy: %-34s staged %llu layouts: end %llu cycles, datatype cycles %llu, as piece by piece\n", what,
           (unsigned long long)b.staged, (unsigned long long)b.res.end_time, (unsigned long long)b.ddt[1]);
    for (int i = 0; i < 2; i++) free(a.data[i]), free(b.data[i]);
}

JOBS_TEST(proxy_layouts_staged, check_staged,
          {"staged: rendezvous", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT},
          {"staged: rendezvous, coprocessor", ML_MODE_CO, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 0, 0, 0, 0, 0, 0, J_LAYOUT},
          {"staged: adaptive eager, two hops", ML_MODE_HEATER, 2, {3, 2, 1}, 1, ML_ADAPTIVE, 20000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT},
          {"staged: three rendezvous, both ways", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 60000, 1, 16, 1, 1, 0, 0, 0, J_LAYOUT},
          {"staged: eager", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 0, 0, 0, 0, 0, J_LAYOUT})

/* Why the engine hands a rank back (tsim_result.backs, ML_BACK_*): one
 * way, one message at a time, each message hands its receiver back at its
 * first packet (the upcall: MPI's matching) and at its completion, and its
 * sender at its last packet; a receiver that says what it waits for
 * (MPI_Waitall's order) has the others' completions recorded and is
 * handed back when its own request is done. Every hand-back is a wake. */
static void check_backs(const job *j, const uint64_t want[TSIM_BACKS])
{
    outcome o;
    run(j, 1, &o);
    uint64_t n = 0;
    for (int k = 0; k < TSIM_BACKS; k++) {
        ck_assert_msg(o.res.backs[ML_PROG_WAIT][k] == want[k], "%s: %llu hand-backs for reason %d, want %llu",
                      j->what, (unsigned long long)o.res.backs[ML_PROG_WAIT][k], k, (unsigned long long)want[k]);
        n += o.res.backs[ML_PROG_WAIT][k];
    }
    ck_assert_msg(n <= o.res.wakes, "%s: %llu hand-backs, %llu wakes", j->what, (unsigned long long)n,
                  (unsigned long long)o.res.wakes);
    printf("proxy: %-34s hand-backs: %llu new message, %llu reception done, %llu send done, %llu the "
           "wait's request done (%llu wakes)\n",
           j->what, (unsigned long long)want[ML_BACK_NEW], (unsigned long long)want[ML_BACK_RX_DONE],
           (unsigned long long)want[ML_BACK_TX_DONE], (unsigned long long)want[ML_BACK_WAIT],
           (unsigned long long)o.res.wakes);
    for (int i = 0; i < 2; i++) free(o.data[i]);
}

START_TEST(proxy_backs)
{
    static const job rzv = {"backs: rendezvous", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 300000, 0, 16, 0, 0, 0, 0, 0, 0};
    static const job eager = {"backs: eager", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_EAGER, 20000, 0, 16, 0, 0, 0, 0, 0, 0};
    static const job quiet = {"backs: rendezvous, waitall", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 30000, 0, 16, 1, 1, 0, 0, 4, J_QUIET_RX};
    uint64_t each[TSIM_BACKS] = {[ML_BACK_NEW] = MSGS, [ML_BACK_RX_DONE] = MSGS, [ML_BACK_TX_DONE] = MSGS};
    check_backs(&rzv, each);
    check_backs(&eager, each);
    /* a burst: the first scout hands the receiver back, the grants and
     * data of all three come while it waits; two of its waits end at their
     * own request, the third's completion was recorded during another */
    uint64_t waitall[TSIM_BACKS] = {[ML_BACK_NEW] = 1, [ML_BACK_TX_DONE] = MSGS, [ML_BACK_WAIT] = 2};
    check_backs(&quiet, waitall);
    /* naming all three: one wait, ended by the last of them */
    job rest = quiet;
    rest.what = "backs: rendezvous, waitall naming all";
    rest.flags |= J_WAIT_REST;
    uint64_t all[TSIM_BACKS] = {[ML_BACK_NEW] = 1, [ML_BACK_TX_DONE] = MSGS, [ML_BACK_WAIT] = 1};
    check_backs(&rest, all);
}
END_TEST

extern const tsim_prog ml_wait_prog;

/* What a wait is for is the rank's word, and the engine checks it before
 * it runs the loop (ml_engine.c's wait_adopt): a reception whose
 * completion ends the wait is taken only with a count of what the wait is
 * for that adds up; a quiet completion without one, a count over
 * ML_HO_WAIT or one already started is refused (the rank's own loop runs). */
START_TEST(proxy_adopt_wait_counts)
{
    tsim_geom g = {.dim = {2, 1, 1}, .torus = {1, 1, 1}, .cpus = 1, .nnodes = 2, .nranks = 2};
    uint64_t vt = 0;
    tsim_port pt = {.vt = &vt, .g = &g, .engine = 1};
    static ml_wait_state st;
    struct {
        const char *what;
        uint32_t nwait, left;
        uint8_t quiet;
        int want;
    } cases[] = {
        {"one request, its reception's completion ends the wait", 1, 1, 2, 1},
        {"three requests, one of them in the hand-off", 3, 3, 2, 1},
        {"a reception recorded quietly, the wait for another", 1, 1, 1, 1},
        {"a completion that ends a wait for nothing", 0, 0, 2, 0},
        {"a quiet completion in a wait that names nothing", 0, 0, 1, 0},
        {"more requests than a hand-off carries", ML_HO_WAIT + 1, ML_HO_WAIT + 1, 2, 0},
        {"a count already started", 2, 1, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memset(&st, 0, sizeof st);
        st.polls = 4;
        st.batch = 16;
        st.nrx = 1;
        st.rx[0] = (ml_ho_rx){.buf = 4096, .cap = 1000, .len = 1000, .src = UINT32_MAX, .type = T_RZV_DATA,
                              .quiet = cases[i].quiet, .id = 7};
        st.nwait = cases[i].nwait;
        st.wait_left = cases[i].left;
        for (uint32_t k = 0; k < cases[i].nwait && k < ML_HO_WAIT; k++) st.wait_for[k] = 0x1000 + 8 * k;
        void *priv = NULL;
        uint32_t wait = TSIM_WAKE_REC_ALL;
        int got = ml_wait_prog.adopt(&pt, &st, &priv, &wait, 0);
        ml_wait_prog.free(priv);
        ck_assert_msg(got == cases[i].want, "%s: adopted %d, want %d", cases[i].what, got, cases[i].want);
        printf("proxy: hand-off check: %-55s %s\n", cases[i].what, got ? "taken" : "refused");
    }
}
END_TEST

/* The posted receives are the rank's word too (ml_engine.c's posted_ok):
 * a description that adds up is taken; more receives than a hand-off
 * carries, a slot reserved twice or out of range, a key past the header
 * the engine keeps, one already taken, or no address to read the peers
 * from are refused. */
START_TEST(proxy_adopt_posted)
{
    tsim_geom g = {.dim = {2, 1, 1}, .torus = {1, 1, 1}, .cpus = 1, .nnodes = 2, .nranks = 2};
    uint64_t vt = 0;
    tsim_port pt = {.vt = &vt, .g = &g, .engine = 1};
    static ml_wait_state st;
    const char *what[] = {"two receives, two slots", "more receives than a hand-off carries",
                          "a slot reserved twice", "a slot out of range", "a key past the header kept",
                          "a receive already taken", "no address for the peers"};
    for (int c = 0; c < 7; c++) {
        memset(&st, 0, sizeof st);
        st.polls = 4;
        st.batch = 16;
        st.nposted = c == 1 ? ML_HO_POST + 1 : 2;
        st.nres = 2;
        st.res_slot[0] = 3;
        st.res_slot[1] = c == 2 ? 3 : c == 3 ? ML_MAX_IDS : 4;
        st.rule = (ml_match_rule){.off = {0, 8, 12, c == 4 ? ML_HO_HDR - 2 : 16}, .mask = {0xff, ~0u, ~0u, 0xffff}};
        st.posted[1].taken = c == 5;
        st.peers = c == 6 ? 0 : 0x10000;
        st.ranks = st.co_slots = st.co_parts = 0x20000;
        void *priv = NULL;
        uint32_t wait = TSIM_WAKE_REC_ALL;
        int got = ml_wait_prog.adopt(&pt, &st, &priv, &wait, 0);
        ml_wait_prog.free(priv);
        ck_assert_msg(got == (c == 0), "%s: adopted %d", what[c], got);
        printf("proxy: hand-off check: %-55s %s\n", what[c], got ? "taken" : "refused");
    }
}
END_TEST

/* The grant of a scout the engine took goes at the clock it took it:
 * with room, as the rank's T_GRANT would (the slot, the receiving cpu's
 * b, the sender's id); a port that can't tell yet has the step taken
 * again, the grant still owed; a full FIFO hands the rank back to queue
 * it itself (ml_rzv_owed), the scout counted as read in the advance. */
static int fake_room;
static int fake_injected;
static uint8_t fake_sw[8];
static int fake_room_fn(tsim_port *pt, int f, unsigned chunks)
{
    (void)pt, (void)f, (void)chunks;
    return fake_room;
}
static void fake_inject(tsim_port *pt, int f, const tsim_hwhdr *hw, const uint8_t sw[8], const void *data, size_t n)
{
    (void)pt, (void)f, (void)hw, (void)data, (void)n;
    fake_injected++;
    memcpy(fake_sw, sw, sizeof fake_sw);
}

START_TEST(proxy_grant_owed)
{
    tsim_geom g = {.dim = {2, 1, 1}, .torus = {1, 1, 1}, .cpus = 1, .nnodes = 2, .nranks = 2};
    uint64_t vt = 1000;
    static tsim_proc proc;
    static const tsim_port_ops ops = {.room = fake_room_fn, .inject = fake_inject};
    tsim_port pt = {.ops = &ops, .vt = &vt, .p = &proc, .g = &g, .proc = 0, .engine = 1};
    static ml_wait_state st;
    const int rooms[] = {TSIM_PORT_WAIT, 0, 1};
    const char *what[] = {"the port can't tell yet", "its FIFO full", "room"};
    for (int c = 0; c < 3; c++) {
        memset(&st, 0, sizeof st);
        st.ntaken = 1;
        st.taken[0] = (ml_ho_match){.type = T_SCOUT, .slot = 5, .sender_id = 77, .to = {ML_CPU_MAIN, ML_CPU_MAIN, 0, 0}};
        st.grant_owe = 1;
        st.grant_proc = 2;
        ml_resume a = {.point = ML_RESUME_POLL};
        fake_room = rooms[c];
        fake_injected = 0;
        int rc = ml_engine_grant(&pt, &st, &a);
        if (c == 0)
            ck_assert_msg(rc == TSIM_RUN_WAIT && st.grant_owe == 1 && !a.consumed, "%s: rc %d", what[c], rc);
        else if (c == 1)
            ck_assert_msg(rc == TSIM_RUN_BACK && !st.grant_owe && !st.taken[0].sent && a.consumed == 1 &&
                              a.moved == 1 && st.why == ML_BACK_OTHER && !fake_injected,
                          "%s: rc %d", what[c], rc);
        else {
            ml_sw sw;
            memcpy(&sw, fake_sw, sizeof sw);
            ck_assert_msg(rc == 1 && !st.grant_owe && st.taken[0].sent && a.pkts_sent == 1 && fake_injected == 1 &&
                              sw.type == T_GRANT && sw.id == 77 && sw.w == 5 && sw.b == ML_CPU_MAIN,
                          "%s: rc %d", what[c], rc);
        }
        ck_assert_uint_eq(vt, 1000); /* the grant's charges are the inject's (the port's) */
        printf("proxy: a taken scout's grant, %-24s -> %s\n", what[c],
               c == 0 ? "the step again, still owed" : c == 1 ? "the rank's to queue" : "sent");
    }
}
END_TEST

/* Loops handed over that the engine refuses run on their ranks at once. */
START_TEST(proxy_refused)
{
    job j = {"refused", ML_MODE_HEATER, 2, {2, 1, 1}, 1, ML_RZV, 100000, 1, 16, 1, 0, 0, 0, 0, 0};
    outcome a, b;
    run(&j, 0, &a);
    run(&j, -1, &b);
    for (int i = 0; i < j.nranks; i++) ck_assert_uint_eq(a.end[i], b.end[i]);
    ck_assert_uint_eq(a.res.events, b.res.events);
    ck_assert_uint_eq(a.link_busy, b.link_busy);
    ck_assert_uint_eq(b.res.proxy_read + b.res.proxy_sent, 0);
    printf("proxy: refused descriptions: same end %llu cycles, no engine steps\n",
           (unsigned long long)b.res.end_time);
    for (int i = 0; i < 2; i++) free(a.data[i]), free(b.data[i]);
}
END_TEST

Suite *proxy_suite(void)
{
    Suite *s = suite_create("proxy");
    UM_TCASE(s, "same results", 120, proxy_rendezvous_heater, proxy_rendezvous_coproc, proxy_quiet_completions, proxy_quiet_split,
             proxy_quiet_receptions, proxy_wait_rest, proxy_wait_rest_send,
             proxy_rendezvous_coproc_split, proxy_rendezvous_coproc_split_odd,
             proxy_rendezvous_coproc_split_a2a, proxy_eager, proxy_sender_polls, proxy_rendezvous_grant,
             proxy_coproc_asleep, proxy_adaptive, proxy_bidirectional, proxy_vn_fallback, proxy_delegated_loop,
             proxy_several_going_out, proxy_several_peers, proxy_refused, proxy_adopt_wait_counts, proxy_adopt_posted, proxy_grant_owed, proxy_backs, proxy_layouts,
             proxy_layouts_staged, proxy_posted, proxy_posted_onepkt);
    return s;
}
