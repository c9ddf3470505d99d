/* Deposit-bit broadcast over the whole partition (docs/collectives.md).
 *
 * A "line" send from node c along dimension d is one deterministic packet
 * with the deposit bit to the last node of each half-line: on a torus ring
 * of n nodes, floor(n/2) hops the + way and floor((n-1)/2) hops the - way
 * (the minimal direction the router takes for those distances, ties going
 * +), on a mesh to both ends. Every node of the line except c gets exactly
 * one copy.
 *
 * One route (routes = 1): the dimension-ordered tree d0, d1, d2 (dimensions
 * of size > 1): the root sends lines along d0, d1 and d2; a node that got
 * the packet from a line along d_s sends lines along every d_j, j > s.
 *
 * k routes (k = number of dimensions of size > 1, at most 3): part r of the
 * message goes down the tree of order (d_r, d_r+1, ...) modified so that
 * the k trees use disjoint directed links: tree r never uses a link inside
 * the plane d_r = root's d_r (other trees' first and second stages run
 * there). Its root sends only along d_r; nodes off that plane forward as in
 * the plain tree; a node of that plane gets its copy with one extra hop
 * toward the root's coordinate from the neighbouring plane f (root + 1, or
 * root - 1 at a mesh edge) -- links pointing toward the root's coordinate
 * are never used by any dimension-ordered tree.
 *
 * VN mode: the tree runs between cpu 0 of every node (the root's own cpu on
 * the root's node), which hands each packet to its node mate through the
 * scratchpad FIFO. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

#define PAY TSIM_PAYLOAD_MAX

/* The tree is planned in the group's box, in coordinates relative to its
 * corner (lo): a box that is part of a ring is a mesh line there. */
static int node_with(const coll_ctx *c, const int co[3])
{
    const coll_group *g = c->grp;
    int x[3];
    for (int d = 0; d < 3; d++) x[d] = (g->lo[d] + co[d]) % c->g.dim[d];
    return tsim_node_of(&c->g, x[0], x[1], x[2]);
}

static void box_coords(const coll_ctx *c, int node, int co[3])
{
    tsim_coords(&c->g, node, co);
    for (int d = 0; d < 3; d++) co[d] = (co[d] - c->grp->lo[d] + c->g.dim[d]) % c->g.dim[d];
}

static void add_target(coll_ctx *c, int proc, int fifo, int route, unsigned flags)
{
    if (c->nt >= COLL_MAXT) abort(); /* cannot happen: at most 7 per route + mates */
    c->t[c->nt++] = (coll_target){.proc = proc, .fifo = fifo, .route = route, .flags = flags};
}

/* Deposit lines from node coordinates co along dimension d (route r). */
static void add_lines(coll_ctx *c, const int co[3], int d, int r)
{
    int n = c->grp->len[d], x = co[d], ends[2], k = 0;
    if (n < 2) return;
    if (c->grp->torus[d]) {
        int hp = n / 2, hm = (n - 1) / 2;
        if (hp) ends[k++] = (x + hp) % n;
        if (hm) ends[k++] = (x - hm + n) % n;
    } else {
        if (x < n - 1) ends[k++] = n - 1;
        if (x > 0) ends[k++] = 0;
    }
    for (int i = 0; i < k; i++) {
        int e[3] = {co[0], co[1], co[2]};
        e[d] = ends[i];
        add_target(c, tsim_proc_index(node_with(c, e), 0), -1, r, TSIM_F_DEPOSIT);
    }
}

/* The forwarding targets of this processor and the packets it expects. */
static void plan(coll_ctx *c, int root)
{
    const coll_group *g = c->grp;
    const int rproc = g->proc[root], rnode = rproc / TSIM_CPUS;
    const int me = c->pp->index, mynode = me / TSIM_CPUS;
    int rc[3], co[3], dims[3], k = 0;
    box_coords(c, rnode, rc);
    box_coords(c, mynode, co);
    for (int d = 0; d < 3; d++)
        if (g->len[d] > 1) dims[k++] = d;
    int tree = mynode == rnode ? me == rproc : c->pp->cpu == 0; /* takes part in the tree */
    c->nt = 0;
    c->need = 0;
    if (!tree) { /* the node mate: everything arrives over the scratchpad */
        for (int r = 0; r < c->nroutes; r++) c->need += c->part_np[r];
        return;
    }
    int mate = c->cpus == 2 ? (me ^ 1) : -1;
    for (int r = 0; r < c->nroutes; r++) {
        int o[3];
        for (int j = 0; j < k; j++) o[j] = dims[(r + j) % k];
        int mod = c->nroutes > 1, a = k ? o[0] : 0;
        if (mynode != rnode) c->need += c->part_np[r];
        if (mynode == rnode) {
            for (int j = 0; j < (mod ? 1 : k); j++) add_lines(c, co, o[j], r);
        } else if (!(mod && co[a] == rc[a])) {
            int s = -1;
            for (int j = 0; j < k; j++)
                if (co[o[j]] != rc[o[j]]) s = j;
            for (int j = s + 1; j < k; j++) add_lines(c, co, o[j], r);
            if (mod) {
                int n = g->len[a];
                int f = g->torus[a] ? (rc[a] + 1) % n : (rc[a] + 1 < n ? rc[a] + 1 : rc[a] - 1);
                int off_axis = 0;
                for (int j = 1; j < k; j++) off_axis |= co[o[j]] != rc[o[j]];
                if (co[a] == f && off_axis) {
                    int e[3] = {co[0], co[1], co[2]};
                    e[a] = rc[a];
                    add_target(c, tsim_proc_index(node_with(c, e), 0), -1, r, 0);
                }
            }
        }
        if (mate >= 0) add_target(c, mate, TSIM_INJ_SP, r, 0);
    }
}

/* Injection FIFOs for the torus targets (fifo -1): the output ports this
 * node uses are spread over the three normal FIFOs in order of first use,
 * so a FIFO feeds as few links as possible (a packet waiting for a busy
 * link blocks the FIFO behind it). */
static void assign_fifos(coll_ctx *c)
{
    int port_fifo[TSIM_NPORTS], used = 0;
    for (int p = 0; p < TSIM_NPORTS; p++) port_fifo[p] = -1;
    for (int i = 0; i < c->nt; i++) {
        coll_target *t = &c->t[i];
        if (t->fifo >= 0) continue;
        int co[3];
        tsim_coords(&c->g, t->proc / TSIM_CPUS, co);
        uint8_t dst[3] = {(uint8_t)co[0], (uint8_t)co[1], (uint8_t)co[2]};
        int port = tsim_route_det(&c->g, c->pp->node, dst);
        if (port < 0) abort(); /* a target on this node: the tree is wrong */
        if (port_fifo[port] < 0) port_fifo[port] = used++ % 3;
        t->fifo = port_fifo[port];
    }
}

/* ---- the loop, once for both drivers (coll_internal.h) ---------------- */

static size_t pkt_bytes(const coll_bc_loop *L, size_t off)
{
    return L->len - off < PAY ? L->len - off : PAY;
}

/* Sends what the targets can take. Targets that share an injection FIFO
 * go in lockstep (the one furthest behind first), so the packets in a FIFO
 * alternate between its links and none waits behind a run of packets for
 * another link; the FIFOs take turns packet by packet, in sweeps until one
 * sends nothing. A layout's packet is gathered for its target before its
 * first FIFO try, charged once. */
static int loop_push(tsim_port *pt, void *view, coll_push *k)
{
    coll_bc_loop *L = view;
    if (!k->run) *k = (coll_push){.run = 1};
    for (;;) {
        if (k->f == TSIM_NINJ) {
            if (!k->any) {
                k->run = 0;
                return 0;
            }
            k->f = 0;
            k->any = 0;
        }
        const int f = k->f;
        if (k->wait & TSIM_WAKE_INJ(f)) {
            k->f++;
            continue;
        }
        coll_target *t = NULL;
        for (int i = 0; i < L->nt; i++) {
            coll_target *u = &L->t[i];
            if (u->fifo == f && u->cur < L->avail[u->route] && (!t || u->cur < t->cur)) t = u;
        }
        if (!t) {
            k->f++;
            continue;
        }
        const uint32_t w = (uint32_t)L->have_base[t->route] + t->cur;
        const size_t off = (size_t)w * PAY, n = pkt_bytes(L, off);
        uint8_t tmp[PAY];
        unsigned segs = 0;
        const uint8_t *data = L->io->fetch(L, t, w, off, n, tmp, &segs);
        if (!data) return -1;
        if (L->layout) {
            if (t->charged != t->cur + 1) tsim_port_charge_ddt(pt, (uint64_t)segs * pt->prm->ddt_seg_cycles);
            t->charged = t->cur + 1;
        }
        tsim_hwhdr hw;
        tsim_header(pt->g, &hw, t->proc, n, t->flags, (unsigned)t->proc % TSIM_CPUS);
        int room = tsim_port_room(pt, f, hw.chunks);
        if (room == TSIM_PORT_WAIT) return 1;
        if (room) {
            coll_sw sw = coll_sw_make(COLL_T_BCAST, w, L->seq, L->gid);
            uint8_t swb[8];
            memcpy(swb, &sw, sizeof swb);
            pt->ops->inject(pt, f, &hw, swb, data, n);
            t->cur++;
            k->any = 1;
            k->pushed++;
            (*L->pkts_sent)++;
        } else {
            k->wait |= TSIM_WAKE_INJ(f);
        }
        k->f++;
    }
}

/* The packet's payload into place (part found, have marked, avail moved
 * on): 1, 0 when it is not one of this broadcast's packets still missing,
 * -1 when place failed. */
static int loop_take(void *view, const tsim_slot *s, unsigned *segs)
{
    coll_bc_loop *L = view;
    coll_sw sw = coll_sw_get(s);
    if (sw.type != COLL_T_BCAST || sw.seq != L->seq || sw.gid != L->gid) return 0;
    uint32_t w = coll_sw_w(&sw);
    int r = 0; /* its part: parts are consecutive */
    while (r + 1 < L->nroutes && w >= L->have_base[r + 1]) r++;
    if (w < L->have_base[r] || w >= L->have_base[r] + L->part_np[r]) return 0; /* not ours */
    uint8_t *h = L->have + L->have_base[r];
    uint32_t i = w - (uint32_t)L->have_base[r];
    if (h[i]) return 0; /* a second copy: the tree is wrong */
    size_t off = (size_t)w * PAY;
    *segs = 0;
    if (L->io->place(L, r, w, off, s->p.payload, pkt_bytes(L, off), segs) != 0) return -1;
    h[i] = 1;
    (*L->got)++;
    (*L->pkts_recv)++;
    while (L->avail[r] < L->part_np[r] && h[L->avail[r]]) L->avail[r]++;
    return 1;
}

static int loop_done(const void *view)
{
    const coll_bc_loop *L = view;
    if (*L->got < L->need) return 0;
    for (int i = 0; i < L->nt; i++)
        if (L->t[i].cur < L->part_np[L->t[i].route]) return 0;
    return 1;
}

const coll_loop_ops coll_bc_ops = {loop_push, loop_take, loop_done};

/* ---- the rank's driver: its own memory ---------------------------------- */

static const uint8_t *rank_fetch(coll_bc_loop *L, coll_target *t, uint32_t w, size_t off, size_t n,
                                 uint8_t *tmp, unsigned *segs)
{
    (void)w;
    coll_ctx *c = L->ctx;
    if (!c->nbiov) return c->buf + off;
    *segs = ml_layout_copy(c->biov, c->nbiov, &t->gcur, off, tmp, n, 1); /* for this target */
    return tmp;
}

static int rank_place(coll_bc_loop *L, int r, uint32_t w, size_t off, const uint8_t *data, size_t n,
                      unsigned *segs)
{
    (void)w;
    coll_ctx *c = L->ctx;
    if (c->nbiov) /* scattered straight into the layout */
        *segs = ml_layout_copy(c->biov, c->nbiov, &c->bcur[r], off, (void *)(uintptr_t)data, n, 0);
    else
        memcpy(c->buf + off, data, n);
    return 0;
}

static const coll_bc_io rank_io = {rank_fetch, rank_place};

static void rank_loop(coll_ctx *c, coll_bc_loop *L)
{
    *L = (coll_bc_loop){c->t, c->nt, c->nroutes, c->part_np, c->avail, c->have_base, c->have, &c->got,
                        c->need, c->len, c->cur, c->cur_gid, c->nbiov != 0, &c->st.pkts_sent,
                        &c->st.pkts_recv, &rank_io, c};
}

static void bc_take(coll_ctx *c, const tsim_slot *s)
{
    coll_bc_loop L;
    rank_loop(c, &L);
    coll_loop_take(c, &coll_bc_ops, &L, s);
}

/* The rank blocks: the engine runs the loop if it can (coll_bcast_prog). */
static int bc_wait(coll_ctx *c, coll_loop_cur *k, const char *why)
{
    coll_bc_state *st = coll_handoff_begin(c);
    if (!st) return coll_block(c, why);
    st->buf = c->nbiov ? 0 : (uint64_t)(uintptr_t)c->buf;
    st->iov = c->nbiov ? (uint64_t)(uintptr_t)c->biov : 0;
    st->niov = c->nbiov;
    st->have = (uint64_t)(uintptr_t)c->have;
    st->len = c->len;
    st->got = c->got;
    st->need = c->need;
    st->nt = (uint32_t)c->nt;
    st->nroutes = (uint32_t)c->nroutes;
    for (int r = 0; r < 3; r++) {
        st->part_np[r] = c->part_np[r];
        st->avail[r] = c->avail[r];
        st->have_base[r] = c->have_base[r];
    }
    st->seq = c->cur;
    st->gid = c->cur_gid;
    memcpy(st->t, c->t, (size_t)c->nt * sizeof *c->t);
    int rc = coll_handoff_block(c, COLL_PROG_BCAST, why);
    if (rc <= 0) return rc;
    /* the engine's progress (the have bytes it changed are in place) */
    for (int i = 0; i < c->nt; i++) {
        c->t[i].cur = st->t[i].cur;
        c->t[i].charged = st->t[i].charged;
    }
    for (int r = 0; r < 3; r++) c->avail[r] = st->avail[r];
    c->got = st->got;
    c->st.pkts_sent += st->pkts_sent;
    c->st.pkts_recv += st->pkts_recv;
    if (st->pkts_sent && c->cpus == 2) c->pp->qvoid = 1; /* scratchpad packets: as pl_inject says */
    coll_loop_resume(c, k, &st->loop);
    return 0;
}

void coll_bcast_packet(ml_ctx *ml, const tsim_slot *s, void *arg)
{
    (void)ml;
    coll_ctx *c = arg;
    if (!coll_is_current(c, OP_BCAST, s)) return;
    coll_bc_loop L;
    rank_loop(c, &L);
    coll_loop_take(c, &coll_bc_ops, &L, s);
    coll_loop_push(c, &coll_bc_ops, &L); /* forward at once: pipelined per packet */
}

int coll_bcast(coll_ctx *c, void *buf, size_t len, int root, int routes)
{
    if (!c) return -1;
    if (!c->world.hw_ok) {
        if (root < 0 || root >= c->nranks || routes < 1 || routes > 3) return -1;
        return coll_bcast_p2p(c, buf, len, root);
    }
    return coll_bcast_in(c, &c->world, buf, len, root, routes);
}

static int bc_run(coll_ctx *c, coll_group *g, void *buf, size_t len, int root, int routes);

int coll_bcast_in(coll_ctx *c, coll_group *g, void *buf, size_t len, int root, int routes)
{
    if (!c || !g || root < 0 || root >= g->n || routes < 1 || routes > 3 || (len && !buf) ||
        c->op != OP_NONE)
        return -1;
    c->biov = NULL;
    c->nbiov = 0;
    return bc_run(c, g, buf, len, root, routes);
}

int coll_bcast_layout_in(coll_ctx *c, coll_group *g, const coll_layout *blk, int root, int routes)
{
    if (!blk) return -1;
    if (!blk->niov) return coll_bcast_in(c, g, blk->buf, blk->len, root, routes);
    if (!c || !g || root < 0 || root >= g->n || routes < 1 || routes > 3 || !blk->iov ||
        c->op != OP_NONE)
        return -1;
    size_t sum = 0;
    for (size_t i = 0; i < blk->niov; i++) sum += blk->iov[i].iov_len;
    if (sum != blk->len) return -1;
    c->biov = blk->iov;
    c->nbiov = blk->niov;
    for (int r = 0; r < 3; r++) c->bcur[r] = (ml_cursor){0, 0};
    int rc = bc_run(c, g, NULL, blk->len, root, routes);
    c->biov = NULL;
    c->nbiov = 0;
    return rc;
}

static int bc_run(coll_ctx *c, coll_group *g, void *buf, size_t len, int root, int routes)
{
    if (!g->hw_ok) return COLL_ENOTSUP;
    size_t np = (len + PAY - 1) / PAY;
    if (np >= COLL_MAXPK) return -1;
    coll_begin(c, g, OP_BCAST);
    c->st.bcasts++;
    if (len == 0 || g->n == 1) {
        c->op = OP_NONE;
        return 0;
    }
    int k = 0;
    for (int d = 0; d < 3; d++) k += g->len[d] > 1;
    c->nroutes = routes < k ? routes : (k ? k : 1);
    size_t base = 0;
    for (int r = 0; r < 3; r++) {
        c->part_np[r] = r < c->nroutes
                            ? (uint32_t)(np / (size_t)c->nroutes + ((size_t)r < np % (size_t)c->nroutes))
                            : 0;
        c->part_off[r] = base * PAY;
        c->have_base[r] = base;
        base += c->part_np[r];
        c->avail[r] = 0;
    }
    c->buf = buf;
    c->len = len;
    c->got = 0;
    free(c->have);
    c->have = calloc(np, 1);
    if (!c->have) {
        c->op = OP_NONE;
        return -1;
    }
    plan(c, root);
    assign_fifos(c);
    if (g->me == root)
        for (int r = 0; r < c->nroutes; r++) c->avail[r] = c->part_np[r];
    coll_replay(c, COLL_T_BCAST, bc_take);
    coll_bc_loop L;
    rank_loop(c, &L);
    int rc = coll_run(c, &coll_bc_ops, &L, bc_wait, "coll_bcast");
    c->op = OP_NONE;
    free(c->have);
    c->have = NULL;
    return rc;
}
