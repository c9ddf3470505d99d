/* The engine's promises to running processors (torus-sim/tsim_quiet.c,
 * packetlayer/pl.c quiet_to_vt): a poll the promise answers must give what
 * a sync would have given. Each job runs with BGLEMU_QUIET=0 (every empty
 * poll before the engine's horizon syncs) and with promises, and must give
 * the same clocks, arrival times and event counts, while the promises did
 * spare round trips to the engine. Processors are threads on an anonymous
 * segment; the engine runs in the test's thread. The same ping-pong checks
 * the watched core (torus-sim/tsim_watch.h): host time only, too. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "machine.h"
#include "packetlayer/pl.h"
#include "packetlayer/pl_tree.h"
#include "suite.h"
#include "torus-sim/tsim_engine_priv.h"
#include "torus-sim/tsim_watch.h"

#define ROUNDS 150
#define NP 4

typedef struct job {
    int shape[3], cpus;
    int peer;        /* processor index of the pong side */
    int bystander;   /* processor index of a processor that only computes, -1: none */
    int late;        /* processor index opened by the ping side mid-run (a
                        coprocessor's way), which sends to it at once; -1: none */
} job;

typedef struct proc {
    const job *j;
    tsim_seg *seg;
    pl_proc pp;
    int index, role; /* 0 ping, 1 pong, 2 bystander, 3 late */
    uint64_t hash, end, syncs, spared;
    pthread_t late_th;
    struct proc *late;
} proc;

static void send1(proc *p, int dst, uint32_t k)
{
    tsim_hwhdr hw;
    uint8_t sw[8] = {0}; /* pl_inject reads a whole 8-byte software header */
    memcpy(sw, &k, sizeof k);
    pl_header(&p->pp, &hw, dst, 8, 0);
    pl_inject_wait(&p->pp, 0, &hw, sw, &k, sizeof k);
}

/* Waits for one packet the way the message layer does: a few empty polls
 * (software in between), then blocks; folds its arrival time in. */
static void recv1(proc *p)
{
    for (int polls = 0;; polls++) {
        int f = pl_poll(&p->pp, TSIM_WAKE_REC_ALL);
        if (f >= 0) {
            p->hash = p->hash * 1000003u ^ pl_peek(&p->pp, f)->m.t_arrive;
            pl_consume(&p->pp, f);
            return;
        }
        pl_charge(&p->pp, 30);
        if (polls >= 3 && pl_block(&p->pp, TSIM_WAKE_REC_ALL, "test") != 0) return;
    }
}

static void *late_main(void *arg)
{
    proc *p = arg;
    send1(p, 0, 7); /* to the ping side, processor 0 */
    p->end = pl_now(&p->pp);
    pl_close(&p->pp, 0);
    return NULL;
}

static void *proc_main(void *arg)
{
    proc *p = arg;
    const job *j = p->j;
    for (int k = 0; k < ROUNDS; k++) {
        /* software between the messages: varied so that some polls fall
         * inside the reach of a fresh injection, some beyond it, and some
         * after the answer came */
        uint64_t work = (uint64_t)(k * 37 % (p->role ? 400 : 1500));
        switch (p->role) {
        case 0:
            if (j->late >= 0 && k == ROUNDS / 2) {
                pl_open(&p->late->pp, p->seg, j->late, pl_now(&p->pp));
                pthread_create(&p->late_th, NULL, late_main, p->late);
                pl_charge(&p->pp, 600); /* its packet is here by now */
                recv1(p);
            }
            send1(p, j->peer, (uint32_t)k);
            pl_charge(&p->pp, work);
            recv1(p);
            break;
        case 1:
            recv1(p);
            pl_charge(&p->pp, work);
            send1(p, 0, (uint32_t)k);
            break;
        case 2:
            pl_charge(&p->pp, 900 + work);
            pl_publish(&p->pp);
            break;
        }
    }
    p->end = pl_now(&p->pp);
    p->syncs = p->pp.syncs;
    p->spared = p->pp.syncs_spared;
    pl_close(&p->pp, 0);
    if (p->late) pthread_join(p->late_th, NULL);
    return NULL;
}

typedef struct outcome {
    uint64_t end[NP], hash[NP], events, hops, end_time, syncs, spared, left;
} outcome;

/* wait: how waiting processors wait (TSIM_WAIT_*, as the cores' plan would
 * set it under mpirun) */
static void run(const job *j, int quiet, uint32_t wait, outcome *o)
{
    setenv("BGLEMU_QUIET", quiet ? "1" : "0", 1);
    tsim_seg *seg = um_seg(j->shape[0], j->shape[1], j->shape[2], 1, j->cpus, NULL);
    atomic_store(&seg->ranks_wait, wait);
    proc p[NP];
    memset(p, 0, sizeof p);
    int idx[NP] = {0, j->peer, j->bystander, j->late}, n = 0;
    for (int r = 0; r < NP; r++) {
        p[r].j = j;
        p[r].seg = seg;
        p[r].index = idx[r];
        p[r].role = r;
    }
    for (int r = 0; r < 3; r++)
        if (idx[r] >= 0) pl_open(&p[r].pp, seg, idx[r], 0), n = r + 1;
    if (j->late >= 0) p[0].late = &p[3];
    tsim_engine *e = tsim_engine_new(seg);
    ck_assert_ptr_nonnull(e);
    pthread_t th[3];
    for (int r = 0; r < n; r++)
        if (idx[r] >= 0) pthread_create(&th[r], NULL, proc_main, &p[r]);
    tsim_result res;
    int rc = tsim_engine_run(e, &res);
    for (int r = 0; r < n; r++)
        if (idx[r] >= 0) pthread_join(th[r], NULL);
    ck_assert_int_eq(rc, 0);
    memset(o, 0, sizeof *o);
    for (int r = 0; r < NP; r++) {
        o->end[r] = p[r].end;
        o->hash[r] = p[r].hash;
        o->syncs += p[r].syncs;
        o->spared += p[r].spared;
    }
    o->events = res.events;
    o->hops = res.packet_hops;
    o->end_time = res.end_time;
    o->left = e->left;
    tsim_engine_free(e);
    tsim_seg_destroy(seg);
    unsetenv("BGLEMU_QUIET");
}

static void check_same(const job *j, const char *what)
{
    outcome a, b;
    run(j, 0, TSIM_WAIT_SPIN, &a);
    run(j, 1, TSIM_WAIT_SPIN, &b);
    for (int r = 0; r < NP; r++) {
        ck_assert_msg(a.end[r] == b.end[r], "%s: processor %d ends at %llu with promises, %llu without",
                      what, r, (unsigned long long)b.end[r], (unsigned long long)a.end[r]);
        ck_assert_msg(a.hash[r] == b.hash[r], "%s: processor %d saw other arrival times with promises",
                      what, r);
    }
    ck_assert_uint_eq(a.events, b.events);
    ck_assert_uint_eq(a.hops, b.hops);
    ck_assert_uint_eq(a.end_time, b.end_time);
    ck_assert_uint_eq(a.spared, 0);
    /* a promise is published each time the engine falls asleep with a
     * processor running; over this many round trips some poll uses one */
    ck_assert_msg(b.spared > 0, "%s: no poll used a promise (%llu syncs)", what,
                  (unsigned long long)b.syncs);
    printf("quiet: %-40s end %llu cycles; syncs %llu -> %llu, %llu spared by promises\n", what,
           (unsigned long long)b.end_time, (unsigned long long)a.syncs,
           (unsigned long long)b.syncs, (unsigned long long)b.spared);
}

START_TEST(quiet_neighbours)
{
    job j = {{2, 1, 1}, 1, 1, -1, -1};
    check_same(&j, "ping-pong, one hop");
}
END_TEST

START_TEST(quiet_far_with_bystander)
{
    job j = {{4, 2, 1}, 1, 5, 3, -1};
    check_same(&j, "ping-pong, three hops, a processor computing");
}
END_TEST

START_TEST(quiet_same_node)
{
    job j = {{1, 1, 1}, 2, 1, -1, -1};
    check_same(&j, "ping-pong between a node's two processors");
}
END_TEST

START_TEST(quiet_late_open)
{
    job j = {{2, 1, 1}, 2, 2, -1, 1};
    check_same(&j, "the ping side opens its node's other cpu");
}
END_TEST

/* One waiting processor watches the core for the others' wakes
 * (torus-sim/tsim_watch.h): the same results, and wakes the engine left
 * to it. */
START_TEST(quiet_watched)
{
    job j = {{4, 2, 1}, 1, 5, 3, -1};
    outcome a, b;
    run(&j, 1, TSIM_WAIT_SPIN, &a);
    run(&j, 1, TSIM_WAIT_WATCH, &b);
    for (int r = 0; r < NP; r++) {
        ck_assert_uint_eq(a.end[r], b.end[r]);
        ck_assert_uint_eq(a.hash[r], b.hash[r]);
    }
    ck_assert_uint_eq(a.events, b.events);
    ck_assert_uint_eq(a.left, 0);
    ck_assert_msg(b.left > 0, "no wake was left to a watching processor");
    printf("quiet: a watched core: end %llu cycles as without, %llu wake calls left to the watcher\n",
           (unsigned long long)b.end_time, (unsigned long long)b.left);
}
END_TEST

/* The watcher's hand-over (tsim_watch.h), on a machine with no engine:
 * of the sleepers the engine rang, the one with the lowest clock below
 * the limit, its request taken; the watch and its wake go to it; the
 * others stay for the next. */
START_TEST(quiet_watch_order)
{
    tsim_seg *seg = um_seg(4, 2, 1, 1, 2, NULL); /* 16 processors */
    for (int i = 0; i < 16; i++) atomic_store(&seg->procs[i].vt, 500); /* not rung: not theirs */
    int rung[] = {3, 5, 9, 12};
    uint64_t clock[] = {1777, 1111, 1259, 1444};
    for (size_t k = 0; k < sizeof rung / sizeof rung[0]; k++) {
        atomic_store(&seg->procs[rung[k]].vt, clock[k]);
        atomic_fetch_or(&seg->wake_req[0], 1ull << rung[k]);
    }
    atomic_store(&seg->wake_any, 1);
    ck_assert_int_eq(tsim_watch_pick(seg, 1111), -1); /* a sync at 1111: none behind it */
    ck_assert_int_eq(tsim_watch_pick(seg, 1300), 5);
    ck_assert_uint_eq(atomic_load(&seg->wake_req[0]), (1ull << 3) | (1ull << 9) | (1ull << 12));
    uint32_t bell = atomic_load(&seg->procs[9].bell);
    int to = tsim_watch_pick(seg, UINT64_MAX);
    ck_assert_int_eq(to, 9);
    tsim_watch_pass(seg, to);
    ck_assert_uint_eq(atomic_load(&seg->watcher), 10);
    ck_assert_uint_eq(atomic_load(&seg->procs[9].bell), bell); /* a wake, not a ring: the engine rang */
    ck_assert_int_eq(tsim_watch_pick(seg, UINT64_MAX), 12);
    ck_assert_int_eq(tsim_watch_pick(seg, UINT64_MAX), 3);
    ck_assert_int_eq(tsim_watch_pick(seg, UINT64_MAX), -1);
    /* a stray bit past the last processor is no one's */
    atomic_store(&seg->wake_req[0], 1ull << 40);
    ck_assert_int_eq(tsim_watch_pick(seg, UINT64_MAX), -1);
    printf("quiet: the watcher hands the core to the rung ranks in clock order (5, 9, 12, 3), "
           "none to a rank ahead of its sync's clock\n");
    tsim_seg_destroy(seg);
}
END_TEST

/* The rank's side alone, against a promise written by hand and no engine
 * (the abort flag makes a sync return at once, counted): which polls a
 * promise answers and which it must leave to a sync. */
static void promise(tsim_proc *p, uint64_t q, int sib_absent)
{
    uint32_t inj = atomic_load(&p->tinj.head) + atomic_load(&p->gi_arm);
    for (int f = 0; f < TSIM_NINJ; f++) inj += atomic_load(&p->inj[f].head);
    uint32_t seq = atomic_load(&p->quiet_seq);
    atomic_store(&p->quiet_seq, seq + 1);
    atomic_store(&p->quiet_inj, inj);
    atomic_store(&p->quiet_sib_absent, (uint32_t)sib_absent);
    atomic_store(&p->quiet, q);
    atomic_store(&p->quiet_seq, seq + 2);
}

START_TEST(quiet_rules)
{
    tsim_params prm;
    tsim_params_default(&prm);
    tsim_seg *seg = um_seg(2, 1, 1, 1, 2, &prm);
    atomic_store(&seg->abort, 1); /* no engine: a sync returns at once */
    pl_proc pp, sib;
    pl_open(&pp, seg, 0, 1000);
    tsim_proc *p = &seg->procs[0];
    uint64_t reach = 2 * prm.hop_latency + (TSIM_CHUNK + prm.wire_overhead) * prm.link_cycles_per_byte;
#define POLL_SPARED(want, what)                                                       \
    do {                                                                              \
        uint64_t s0 = pp.syncs, p0 = pp.syncs_spared;                                 \
        pl_poll(&pp, TSIM_WAKE_REC_ALL);                                              \
        ck_assert_msg(pp.syncs_spared - p0 == (want) && pp.syncs - s0 == !(want),     \
                      "%s: spared %d, synced %d", what, (int)(pp.syncs_spared - p0),   \
                      (int)(pp.syncs - s0));                                          \
    } while (0)
    POLL_SPARED(0, "no promise");
    promise(p, 5000, 1);
    POLL_SPARED(1, "clock before the promise");
    pl_charge(&pp, 5000);
    POLL_SPARED(0, "clock past the promise");
    promise(p, 100000, 1);
    tsim_hwhdr hw;
    pl_header(&pp, &hw, 2, 8, 0); /* the other node */
    ck_assert_int_eq(pl_inject(&pp, 0, &hw, NULL, "12345678", 8), 0);
    uint64_t t_inj = pl_now(&pp);
    POLL_SPARED(1, "just after an injection to another node");
    pl_advance_to(&pp, t_inj + reach);
    POLL_SPARED(1, "at the injection's reach");
    pl_advance_to(&pp, t_inj + reach + 1);
    POLL_SPARED(0, "beyond the injection's reach");
    promise(p, 100000, 1); /* the engine counted the injection */
    POLL_SPARED(1, "promise counting the injection");
    pl_header(&pp, &hw, 1, 8, 0); /* this node's other cpu */
    ck_assert_int_eq(pl_inject(&pp, 0, &hw, NULL, "12345678", 8), 0);
    POLL_SPARED(0, "after an injection to this node");
    promise(p, 200000, 1);
    pl_open(&sib, seg, 1, pl_now(&pp)); /* the way a coprocessor starts */
    POLL_SPARED(0, "the node's other cpu opened since the promise");
    promise(p, 200000, 0);
    POLL_SPARED(1, "promise made with the other cpu open");
    pl_gi_arm(&pp);
    POLL_SPARED(0, "a barrier armed since the promise");
    promise(p, 200000, 0);
    POLL_SPARED(1, "promise counting the barrier");
    tsim_seg_destroy(seg);
    printf("quiet: the rank's rules: clock, injections (reach %llu cycles), this node, a late open, a barrier\n",
           (unsigned long long)reach);
#undef POLL_SPARED
}
END_TEST

/* A broken promise, as an engine bug would make one: processor 0 at 1000
 * cycles is promised nothing before 5000, but a packet arriving at 500 is
 * delivered (by the thread below, standing in for the engine) only after
 * the poll looked. Without the check the poll answers "nothing"; with
 * BGLEMU_QUIET=check it syncs, sees the packet and ends the process. */
typedef struct late_delivery {
    tsim_seg *seg;
} late_delivery;

/* The engine's delivery to p's reception FIFO 0 of a packet arriving at 500. */
static void deliver_at_500(tsim_proc *p)
{
    tsim_ring *r = &p->rec[0];
    tsim_slot *sl = &r->slot[0];
    memset(sl, 0, sizeof *sl);
    sl->m.t_arrive = 500;
    sl->p.hw.chunks = 1;
    p->eng.rec_sum[0][0] = tsim_slot_sum(sl);
    atomic_store(&p->eng.rec_head[0], 1);
    atomic_store(&r->head, 1);
}

static void *deliver_late(void *arg)
{
    late_delivery *d = arg;
    tsim_proc *p = &d->seg->procs[0];
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* the poll has looked by now, and waits in its sync */
    deliver_at_500(p);
    atomic_store(&d->seg->done, 1000000);
    atomic_fetch_add(&p->bell, 1);
    return NULL;
}

/* Exit status of a child that polls processor 0 under the promise (with
 * check set or not): 0 nothing seen, 1 the packet seen; its stderr in err. */
static int broken_promise_child(int check, char *err, size_t errlen)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        if (check) setenv("BGLEMU_QUIET", "check", 1);
        else unsetenv("BGLEMU_QUIET");
        tsim_seg *seg = um_seg(2, 1, 1, 1, 1, NULL);
        pl_proc pp;
        pl_open(&pp, seg, 0, 1000);
        promise(&seg->procs[0], 5000, 1);
        late_delivery d = {seg};
        pthread_t th;
        pthread_create(&th, NULL, deliver_late, &d);
        int f = pl_poll(&pp, TSIM_WAKE_REC_ALL);
        pthread_join(th, NULL);
        _exit(f >= 0);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], err, errlen - 1), k;
    while (n >= 0 && (size_t)n < errlen - 1 && (k = read(fd[0], err + n, errlen - 1 - (size_t)n)) > 0) n += k;
    err[n > 0 ? n : 0] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

START_TEST(quiet_check_catches_broken_promise)
{
    char err[512];
    int st = broken_promise_child(0, err, sizeof err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "without the check: status %#x, %s", st, err);
    st = broken_promise_child(1, err, sizeof err);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "with the check: status %#x, %s", st, err);
    ck_assert_msg(strstr(err, "BGLEMU_QUIET=check: processor 0 at 1000 cycles") &&
                  strstr(err, "answered a poll with reception FIFO (-1: none) -1, a sync answers 0"),
                  "%s", err);
    printf("quiet: BGLEMU_QUIET=check: a promise that hid a packet arriving before the clock is "
           "caught (abort, both answers named); without the check the poll answered nothing\n");
}
END_TEST

/* A poll's reads in their order (pl.c, poll_rec): the engine delivers a
 * packet arriving at 500 to processor 0 at 1000 cycles, then promises it
 * nothing before 5000, just as the poll first reads the promise: the
 * promise's page is made unreadable, and the fault stands in for the
 * engine running at that moment. A poll that scanned the FIFOs before that
 * read would answer "nothing" under a promise made after the delivery; one
 * that reads the promise first finds the packet. */
static tsim_seg *race_seg;
static uintptr_t race_page;
static volatile sig_atomic_t race_faults;

static void promise_page_read(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    long pg = sysconf(_SC_PAGESIZE);
    if ((uintptr_t)si->si_addr / (uintptr_t)pg * (uintptr_t)pg != race_page) {
        signal(sig, SIG_DFL); /* another fault: crash on it */
        return;
    }
    mprotect((void *)race_page, (size_t)pg, PROT_READ | PROT_WRITE);
    race_faults++;
    deliver_at_500(&race_seg->procs[0]);
    promise(&race_seg->procs[0], 5000, 1);
}

static int on_page(const void *a, size_t n, uintptr_t page, long pg)
{
    return (uintptr_t)a / (uintptr_t)pg * (uintptr_t)pg <= page && (uintptr_t)a + n > page;
}

START_TEST(quiet_poll_reads_promise_first)
{
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        race_seg = um_seg(2, 1, 1, 1, 1, NULL);
        tsim_proc *p = &race_seg->procs[0];
        pl_proc pp;
        pl_open(&pp, race_seg, 0, 1000);
        long pg = sysconf(_SC_PAGESIZE);
        race_page = (uintptr_t)&p->quiet_seq / (uintptr_t)pg * (uintptr_t)pg;
        /* what a poll reads before the promise must lie elsewhere */
        if (on_page(&race_seg->done, sizeof race_seg->done, race_page, pg) ||
            on_page(p->rec, sizeof p->rec, race_page, pg) || on_page(&p->eng, sizeof p->eng, race_page, pg))
            _exit(3);
        struct sigaction sa = {.sa_sigaction = promise_page_read, .sa_flags = SA_SIGINFO};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        if (mprotect((void *)race_page, (size_t)pg, PROT_NONE) != 0) _exit(4);
        int f = pl_poll(&pp, TSIM_WAKE_REC_ALL);
        _exit(race_faults != 1 ? 2 : f == 0 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st), "the polling child died: status %#x", st);
    ck_assert_msg(WEXITSTATUS(st) != 3, "the promise shares a page with the FIFOs or done: no test");
    ck_assert_msg(WEXITSTATUS(st) != 4, "mprotect on the segment failed");
    ck_assert_msg(WEXITSTATUS(st) != 2, "the poll never read the promise");
    ck_assert_msg(WEXITSTATUS(st) == 0, "the poll answered nothing: it trusted a scan of the FIFOs made "
                                         "before the promise it read, which the engine made after a delivery");
    printf("quiet: a packet delivered and a promise made just as a poll reads the promise: the poll "
           "(promise first, then the FIFOs) takes the packet\n");
}
END_TEST

/* The engine's side, without its loop: what processor 1 injected at its
 * clock and then moved on from, before the engine took the packet, may
 * reach processor 0 before 1's clock: no promise then; without the packet,
 * 1's clock is the promise. */
START_TEST(quiet_untaken)
{
    for (int inject = 0; inject < 2; inject++) {
        tsim_seg *seg = um_seg(2, 1, 1, 1, 1, NULL);
        pl_proc a, b;
        pl_open(&a, seg, 0, 0);
        pl_open(&b, seg, 1, 0);
        tsim_engine *e = tsim_engine_new(seg);
        ck_assert_ptr_nonnull(e);
        if (inject) {
            tsim_hwhdr hw;
            pl_header(&b, &hw, 0, 8, 0);
            ck_assert_int_eq(pl_inject(&b, 0, &hw, NULL, "12345678", 8), 0);
        }
        pl_charge(&b, 5000);
        pl_publish(&b);
        eng_publish_quiet(e);
        uint64_t q = atomic_load(&seg->procs[0].quiet);
        ck_assert_msg(q == (inject ? 0 : pl_now(&b)),
                      "promise to processor 0: %llu cycles, processor 1 at %llu%s",
                      (unsigned long long)q, (unsigned long long)pl_now(&b),
                      inject ? " with a packet for it not taken yet" : "");
        tsim_engine_free(e);
        tsim_seg_destroy(seg);
    }
}
END_TEST

Suite *quiet_suite(void)
{
    Suite *s = suite_create("quiet");
    UM_TCASE(s, "same results", 120, quiet_rules, quiet_untaken, quiet_neighbours,
             quiet_far_with_bystander, quiet_same_node, quiet_late_open, quiet_watched,
             quiet_watch_order, quiet_check_catches_broken_promise, quiet_poll_reads_promise_first);
    return s;
}
