/* The processor's own port (torus-sim/tsim_prog.h): the packet layer's
 * calls behind the interface the engine's port offers too, so that a loop
 * a layer may hand the engine is written once and run by either. Here
 * every observation syncs when it must (pl_poll, pl_inj_has_room), so none
 * ever has to wait, and memory is this process's own. */
#include <string.h>

#include "pl.h"
#include "pl_tree.h"

static pl_proc *pp_of(tsim_port *pt) { return pt->ctx; }

static int l_settled(tsim_port *pt)
{
    (void)pt;
    return 1;
}

static int l_room(tsim_port *pt, int f, unsigned chunks) { return pl_inj_has_room(pp_of(pt), f, chunks); }

static void l_inject(tsim_port *pt, int f, const tsim_hwhdr *hw, const uint8_t sw[8], const void *data,
                     size_t n)
{
    pl_inject(pp_of(pt), f, hw, sw, data, n); /* the room was there: it takes it */
}

static int l_poll(tsim_port *pt) { return pl_poll(pp_of(pt), TSIM_WAKE_REC_ALL); }
static const tsim_slot *l_peek(tsim_port *pt, int f) { return pl_peek(pp_of(pt), f); }
static void l_consume(tsim_port *pt, int f) { pl_consume(pp_of(pt), f); }

static int l_tree_room(tsim_port *pt)
{
    pl_proc *pp = pp_of(pt);
    if (pl_tree_room(pp)) return 1;
    return pl_sync(pp) == 0 && pl_tree_room(pp) ? 1 : 0; /* full is believed at vt */
}

static void l_tree_inject(tsim_port *pt, const tsim_thdr *h, const void *payload)
{
    pl_tree_inject(pp_of(pt), h, payload, TSIM_TREE_PAYLOAD);
}

static int l_tree_poll(tsim_port *pt) { return pl_tree_poll(pp_of(pt)); }
static const tsim_tslot *l_tree_peek(tsim_port *pt) { return pl_tree_peek(pp_of(pt)); }
static void l_tree_consume(tsim_port *pt) { pl_tree_consume(pp_of(pt)); }

static int l_read(tsim_port *pt, void *dst, uint64_t addr, size_t n, const char *what)
{
    (void)pt, (void)what;
    memcpy(dst, (const void *)(uintptr_t)addr, n);
    return 0;
}

static int l_write(tsim_port *pt, uint64_t addr, const void *src, size_t n)
{
    (void)pt;
    memcpy((void *)(uintptr_t)addr, src, n);
    return 0;
}

static int l_readv(tsim_port *pt, const struct iovec *loc, const struct iovec *rem, int cnt, size_t total,
                   const char *what)
{
    (void)pt, (void)total, (void)what;
    for (int i = 0; i < cnt; i++) memcpy(loc[i].iov_base, rem[i].iov_base, loc[i].iov_len);
    return 0;
}

static int l_quiet_until(tsim_port *pt, uint64_t *until)
{
    (void)pt, (void)until;
    return 0;
}

static int l_publish(tsim_port *pt)
{
    (void)pt;
    return 0; /* its writes are its own */
}

static const tsim_port_ops local_ops = {
    .settled = l_settled,
    .room = l_room,
    .inject = l_inject,
    .poll = l_poll,
    .peek = l_peek,
    .consume = l_consume,
    .tree_room = l_tree_room,
    .tree_inject = l_tree_inject,
    .tree_poll = l_tree_poll,
    .tree_peek = l_tree_peek,
    .tree_consume = l_tree_consume,
    .read = l_read,
    .write = l_write,
    .readv = l_readv,
    .quiet_until = l_quiet_until,
    .publish = l_publish,
};

void pl_port_init(pl_proc *pp, tsim_port *pt)
{
    *pt = (tsim_port){&local_ops, &pp->vt, pp->p, &pp->seg->params, &pp->seg->geom, pp->index, 0, pp};
}
