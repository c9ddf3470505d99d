/* Packet layer: the collective network's FIFOs and the global interrupt. */
#include "pl_tree.h"

#include "pl_internal.h"

#include <string.h>

void pl_tree_header(tsim_thdr *h, int cls, int op, int width, int sign, int vc, int group,
                    const void *sw8)
{
    memset(h, 0, sizeof *h);
    h->cls = (uint8_t)cls;
    h->op = (uint8_t)op;
    h->width = (uint8_t)width;
    h->sign = (uint8_t)sign;
    h->vc = (uint8_t)vc;
    h->group = (uint8_t)group;
    if (sw8) memcpy(h->sw, sw8, sizeof h->sw);
}

unsigned pl_tree_room(const pl_proc *pp)
{
    const tsim_tring *r = &pp->p->tinj;
    uint32_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
                    atomic_load_explicit(&r->tail, memory_order_acquire);
    return used >= r->cap ? 0 : r->cap - used;
}

int pl_tree_inject(pl_proc *pp, const tsim_thdr *h, const void *payload, size_t len)
{
    tsim_tring *r = &pp->p->tinj;
    if (!pl_tree_room(pp)) { /* full is only believed once the engine is at vt */
        if (pl_sync(pp) != 0 || !pl_tree_room(pp)) return -1;
    }
    if (len > TSIM_TREE_PAYLOAD) len = TSIM_TREE_PAYLOAD;
    pp->vt += pp->seg->params.tree_write_cycles;
    atomic_store(&pp->p->vt, pp->vt); /* published before the packet is visible */
    uint32_t hd = atomic_load_explicit(&r->head, memory_order_relaxed);
    tsim_tslot *s = &r->slot[hd % TSIM_TREE_SLOTS];
    memset(&s->m, 0, sizeof s->m);
    s->m.t_inject = pp->vt;
    s->m.src = (uint32_t)pp->index;
    s->h = *h;
    if (len) memcpy(s->payload, payload, len);
    memset(s->payload + len, 0, TSIM_TREE_PAYLOAD - len);
    atomic_store_explicit(&r->head, hd + 1, memory_order_release);
    pl_wrote(pp);
    pp->qvoid = 1; /* the engine's promise has no reach for the tree (pl.c) */
    pl_kick_lazy(pp, pp->vt);
    return 0;
}

int pl_tree_inject_wait(pl_proc *pp, const tsim_thdr *h, const void *payload, size_t len)
{
    while (pl_tree_inject(pp, h, payload, len) != 0)
        if (pl_block(pp, TSIM_WAKE_TREE_INJ, "room in the tree injection FIFO") != 0) return -1;
    return 0;
}

int pl_tree_poll(pl_proc *pp)
{
    tsim_seg *s = pp->seg;
    tsim_tring *r = &pp->p->trec;
    for (int attempt = 0;; attempt++) {
        uint64_t done = atomic_load(&s->done);
        uint64_t a = UINT64_MAX;
        uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (atomic_load_explicit(&r->head, memory_order_acquire) != tl)
            a = r->slot[tl % TSIM_TREE_SLOTS].m.t_arrive;
        if (a < pp->vt && a < done) return 1;
        if (done >= pp->vt || attempt > 0) {
            if (a < pp->vt) return 1;
            pp->vt += s->params.poll_cycles;
            return 0;
        }
        if (pl_sync(pp) != 0) return 0;
    }
}

const tsim_tslot *pl_tree_peek(const pl_proc *pp)
{
    const tsim_tring *r = &pp->p->trec;
    return &r->slot[atomic_load_explicit(&r->tail, memory_order_relaxed) % TSIM_TREE_SLOTS];
}

void pl_tree_consume(pl_proc *pp)
{
    tsim_tring *r = &pp->p->trec;
    uint32_t tl = atomic_load_explicit(&r->tail, memory_order_relaxed);
    pp->vt += pp->seg->params.tree_read_cycles;
    atomic_store(&pp->p->vt, pp->vt);
    r->slot[tl % TSIM_TREE_SLOTS].m.t_done = pp->vt;
    atomic_store_explicit(&r->tail, tl + 1, memory_order_release);
    pl_wrote(pp);
    pl_kick_lazy(pp, pp->vt); /* the down path may wait for the room */
}

int pl_tree_recv_wait(pl_proc *pp)
{
    while (!pl_tree_poll(pp)) {
        if (pl_aborting(pp)) return -1;
        if (pl_block(pp, TSIM_WAKE_TREE_REC, "a packet from the collective network") != 0) return -1;
    }
    return 0;
}

void pl_gi_arm(pl_proc *pp)
{
    tsim_proc *p = pp->p;
    pp->vt += pp->seg->params.poll_cycles;
    atomic_store(&p->vt, pp->vt);
    p->gi_t_arm = pp->vt;
    atomic_fetch_add_explicit(&p->gi_arm, 1, memory_order_release);
    pl_wrote(pp);
    pp->qvoid = 1; /* a barrier may fire at once: the engine's promise has no reach for it */
    pl_kick_lazy(pp, pp->vt);
}

int pl_gi_poll(pl_proc *pp)
{
    tsim_seg *s = pp->seg;
    tsim_proc *p = pp->p;
    uint32_t armed = atomic_load_explicit(&p->gi_arm, memory_order_relaxed);
    for (int attempt = 0;; attempt++) {
        uint64_t done = atomic_load(&s->done);
        int fired = atomic_load_explicit(&p->gi_fired, memory_order_acquire) >= armed &&
                    (armed == 0 || atomic_load(&p->gi_t_fire) < pp->vt);
        if (fired) return 1;
        if (done >= pp->vt || attempt > 0) {
            pp->vt += s->params.poll_cycles;
            return 0;
        }
        if (pl_sync(pp) != 0) return 0;
    }
}

int pl_gi_wait(pl_proc *pp)
{
    while (!pl_gi_poll(pp)) {
        if (pl_aborting(pp)) return -1;
        if (pl_block(pp, TSIM_WAKE_GI, "the global interrupt (barrier)") != 0) return -1;
    }
    return 0;
}

int pl_gi_barrier(pl_proc *pp)
{
    pl_gi_arm(pp);
    return pl_gi_wait(pp);
}
