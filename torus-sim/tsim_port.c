/* The engine's port: a blocked processor's machine as the program it
 * handed over sees it (tsim_prog.h). Each call does what the processor's
 * packet layer would do at its clock, and turns it at once into the
 * events the engine would have made of it, with the same keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tsim_engine_priv.h"

#define WR_IOV 512
#define WR_BYTES (128 * 1024)

/* Writes into the processor's memory wait here until it is woken: nothing
 * reads a reception's buffer before its completion, which only the
 * processor itself runs. Adjacent writes merge into one iovec. */
struct prx_wr {
    struct iovec loc[WR_IOV], rem[WR_IOV];
    int n;
    size_t used;
    uint8_t data[WR_BYTES];
};

/* The port's engine and processor: the port is the first thing the
 * engine's per-processor state holds for its program. */
static tsim_engine *eng_of(tsim_port *pt) { return (tsim_engine *)pt->ctx; }

/* A buffer the processor described is not there: that rank's doing. */
static void job_fail(tsim_engine *e, int proc, const char *what, int err)
{
    eng_violation(e, proc, "%s: %s", what, strerror(err));
}

int prx_wr_flush(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    struct prx_wr *w = x->wr;
    if (!w || !w->n) return 0;
    size_t total = 0;
    for (int i = 0; i < w->n; i++) total += w->loc[i].iov_len;
    int rc = 0;
    if (x->self) {
        for (int i = 0; i < w->n; i++) memcpy(w->rem[i].iov_base, w->loc[i].iov_base, w->loc[i].iov_len);
    } else if (process_vm_writev(x->pid, w->loc, (unsigned long)w->n, w->rem, (unsigned long)w->n, 0) !=
               (ssize_t)total) {
        job_fail(e, proc, "hand-off: a receive buffer the engine cannot write", errno ? errno : EFAULT);
        rc = -1;
    }
    w->n = 0;
    w->used = 0;
    return rc;
}

static int p_write(tsim_port *pt, uint64_t addr, const void *src, size_t n)
{
    tsim_engine *e = eng_of(pt);
    prx_state *x = &e->ep[pt->proc].prx;
    if (!n) return 0;
    if (!x->wr && !(x->wr = calloc(1, sizeof *x->wr))) return -1;
    struct prx_wr *w = x->wr;
    if (n > WR_BYTES) return -1;
    if (w->used + n > WR_BYTES || w->n == WR_IOV)
        if (prx_wr_flush(e, pt->proc) != 0) return -1;
    uint8_t *d = w->data + w->used;
    memcpy(d, src, n);
    w->used += n;
    if (w->n) {
        struct iovec *l = &w->loc[w->n - 1], *r = &w->rem[w->n - 1];
        if ((uint8_t *)l->iov_base + l->iov_len == d &&
            (uint64_t)(uintptr_t)r->iov_base + r->iov_len == addr) {
            l->iov_len += n;
            r->iov_len += n;
            return 0;
        }
    }
    w->loc[w->n] = (struct iovec){d, n};
    w->rem[w->n] = (struct iovec){(void *)(uintptr_t)addr, n};
    w->n++;
    return 0;
}

static int p_readv(tsim_port *pt, const struct iovec *loc, const struct iovec *rem, int cnt,
                   size_t total, const char *what)
{
    tsim_engine *e = eng_of(pt);
    prx_state *x = &e->ep[pt->proc].prx;
    if (x->self) {
        for (int i = 0; i < cnt; i++) memcpy(loc[i].iov_base, rem[i].iov_base, rem[i].iov_len);
        return 0;
    }
    errno = 0;
    if (process_vm_readv(x->pid, loc, (unsigned long)cnt, rem, (unsigned long)cnt, 0) != (ssize_t)total) {
        job_fail(e, pt->proc, what, errno ? errno : EFAULT);
        return -1;
    }
    return 0;
}

static int p_read(tsim_port *pt, void *dst, uint64_t addr, size_t n, const char *what)
{
    struct iovec l = {dst, n}, r = {(void *)(uintptr_t)addr, n};
    return p_readv(pt, &l, &r, 1, n, what);
}

static int p_publish(tsim_port *pt) { return prx_wr_flush(eng_of(pt), pt->proc); }

static int p_settled(tsim_port *pt) { return prx_settled(eng_of(pt), *pt->vt); }

/* Room only grows with the engine's events: room now is room at vt; a full
 * FIFO is believed once the engine has reached vt, as the packet layer's
 * sync does. */
static int p_room(tsim_port *pt, int f, unsigned chunks)
{
    if (tsim_ring_room(&pt->p->inj[f]) >= chunks) return 1;
    return p_settled(pt) ? 0 : TSIM_PORT_WAIT;
}

static void p_inject(tsim_port *pt, int fifo, const tsim_hwhdr *hw, const uint8_t sw[8],
                     const void *data, size_t n)
{
    tsim_engine *e = eng_of(pt);
    int proc = pt->proc;
    tsim_proc *p = pt->p;
    tsim_ring *r = &p->inj[fifo];
    *pt->vt += e->prm.pkt_write_cycles;
    atomic_store_explicit(&p->vt, *pt->vt, memory_order_relaxed); /* blocked: the engine's alone */
    /* The packet goes straight into the engine's pool: the ring counts
     * it (its room, its head and, once injected, its tail, as the
     * processor's own packet), but nobody reads a slot the engine took. */
    uint32_t pk = pkt_alloc(e);
    tsim_slot *s = &e->pool[pk].s;
    s->m = (tsim_meta){.t_inject = *pt->vt, .src = (uint32_t)proc};
    s->p.hw = *hw;
    memcpy(s->p.sw, sw, sizeof s->p.sw);
    if (n) memcpy(s->p.payload, data, n); /* a packet without payload may come with data NULL */
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    eng_add32(&r->used, hw->chunks, 1);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    tsim_count_add(&p->pkts_injected, 1);
    tsim_count_add(&p->bytes_injected, (uint64_t)hw->chunks * TSIM_CHUNK);
    uint32_t *seen = &e->ep[proc].inj_seen[fifo];
    ev_push_key(e, s->m.t_inject, eng_proc_key(proc, fifo, *seen), EV_INJ, proc, fifo, pk);
    (*seen)++;
    e->prx_sent++;
}

/* The reception FIFO whose oldest packet a poll at vt takes, or -1:
 * what the engine delivered, never the ring's word. */
static int visible(tsim_engine *e, int proc, uint64_t vt)
{
    tsim_proc *p = &e->seg->procs[proc];
    eproc *q = &e->ep[proc];
    int best = -1;
    uint64_t best_t = UINT64_MAX;
    for (uint32_t m = q->rec_pending; m; m &= m - 1) { /* lowest FIFO first: ties go to it */
        int f = __builtin_ctz(m);
        tsim_ring *r = &p->rec[f];
        uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (q->rec_head[f] == tl) {
            q->rec_pending &= ~(1u << f);
            continue;
        }
        uint64_t a = r->slot[tl % TSIM_RING_SLOTS].m.t_arrive;
        if (a < best_t) best_t = a, best = f;
    }
    return best >= 0 && best_t < vt ? best : -1;
}

static int p_poll(tsim_port *pt)
{
    tsim_engine *e = eng_of(pt);
    if (!prx_settled(e, *pt->vt)) return TSIM_PORT_WAIT;
    int f = e->ep[pt->proc].rec_pending ? visible(e, pt->proc, *pt->vt) : -1;
    if (f < 0) *pt->vt += e->prm.poll_cycles;
    return f;
}

static const tsim_slot *p_peek(tsim_port *pt, int f)
{
    const tsim_ring *r = &pt->p->rec[f];
    return &r->slot[atomic_load_explicit(&r->tail, memory_order_relaxed) % TSIM_RING_SLOTS];
}

static void p_consume(tsim_port *pt, int f)
{
    tsim_engine *e = eng_of(pt);
    int proc = pt->proc;
    tsim_proc *p = pt->p;
    tsim_ring *r = &p->rec[f];
    uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    tsim_slot *s = &r->slot[tl % TSIM_RING_SLOTS];
    eproc *q = &e->ep[proc];
    int chunks = q->rec_chunks[f][tl % TSIM_RING_SLOTS];
    *pt->vt += e->prm.pkt_read_cycles;
    atomic_store_explicit(&p->vt, *pt->vt, memory_order_relaxed);
    s->m.t_done = *pt->vt;
    ev_push_key(e, s->m.t_done, eng_proc_key(proc, 8 + f, q->rec_seen[f]), EV_REC_FREE, proc, f,
                (uint32_t)chunks);
    q->rec_seen[f]++;
    eng_add32(&r->used, -(uint32_t)chunks, 1);
    atomic_store_explicit(&r->tail, tl + 1, memory_order_release);
    e->prx_read++;
}

static int p_tree_room(tsim_port *pt)
{
    if (tree_inj_room(eng_of(pt), pt->proc) > 0) return 1;
    return p_settled(pt) ? 0 : TSIM_PORT_WAIT;
}

static void p_tree_inject(tsim_port *pt, const tsim_thdr *h, const void *payload)
{
    tsim_engine *e = eng_of(pt);
    *pt->vt += e->prm.tree_write_cycles;
    tree_prx_inject(e, pt->proc, h, payload, *pt->vt);
    e->prx_sent++;
}

static int p_tree_poll(tsim_port *pt)
{
    tsim_engine *e = eng_of(pt);
    if (!prx_settled(e, *pt->vt)) return TSIM_PORT_WAIT;
    const tsim_tslot *s = tree_rec_oldest(e, pt->proc);
    if (s && s->m.t_arrive < *pt->vt) return 1;
    *pt->vt += e->prm.poll_cycles;
    return 0;
}

static const tsim_tslot *p_tree_peek(tsim_port *pt) { return tree_rec_oldest(eng_of(pt), pt->proc); }

static void p_tree_consume(tsim_port *pt)
{
    tsim_engine *e = eng_of(pt);
    *pt->vt += e->prm.tree_read_cycles;
    tree_prx_consume(e, pt->proc, *pt->vt);
    e->prx_read++;
}

/* Nothing can change what the processor sees before the earliest of: the
 * horizon (another processor's injection), the next queued event, a step
 * waiting in eng_run_before; unless a packet waits already. */
static int p_quiet_until(tsim_port *pt, uint64_t *until)
{
    tsim_engine *e = eng_of(pt);
    if (e->ep[pt->proc].rec_pending) return 0;
    uint64_t lim = e->h;
    if (e->q.top.t < lim) lim = e->q.top.t; /* none: UINT64_MAX */
    if (e->nest_t < lim) lim = e->nest_t;
    *until = lim;
    return 1;
}

static const tsim_port_ops engine_ops = {
    .settled = p_settled,
    .room = p_room,
    .inject = p_inject,
    .poll = p_poll,
    .peek = p_peek,
    .consume = p_consume,
    .tree_room = p_tree_room,
    .tree_inject = p_tree_inject,
    .tree_poll = p_tree_poll,
    .tree_peek = p_tree_peek,
    .tree_consume = p_tree_consume,
    .read = p_read,
    .write = p_write,
    .readv = p_readv,
    .quiet_until = p_quiet_until,
    .publish = p_publish,
};

void prx_port_init(tsim_engine *e, int proc)
{
    prx_state *x = &e->ep[proc].prx;
    x->port = (tsim_port){&engine_ops, &x->vt, &e->seg->procs[proc], &e->prm, &e->g, proc, 1, e};
}

int prx_ready(tsim_engine *e, int proc, uint32_t wait)
{
    tsim_proc *p = &e->seg->procs[proc];
    for (uint32_t m = e->ep[proc].rec_pending & wait & TSIM_WAKE_REC_ALL; m; m &= m - 1) {
        int f = __builtin_ctz(m);
        if (e->ep[proc].rec_head[f] != atomic_load(&p->rec[f].tail)) return 1;
    }
    for (uint32_t m = (wait >> 8) & ((1u << TSIM_NINJ) - 1); m; m &= m - 1)
        if (tsim_ring_room(&p->inj[__builtin_ctz(m)]) >= TSIM_MAX_CHUNKS) return 1;
    if ((wait & TSIM_WAKE_TREE_REC) && tree_rec_oldest(e, proc)) return 1;
    return (wait & TSIM_WAKE_TREE_INJ) && tree_inj_room(e, proc) > 0;
}
