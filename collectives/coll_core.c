/* collectives: setup, groups, early packets, injection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "coll_tree.h"
#include "../packetlayer/pl_trace.h"

/* The box of g's nodes along dimension d (n nodes): lo and len; 0, or -1
 * when the coordinates in use are not one interval (cyclic on a torus). */
static int box_dim(const coll_ctx *c, coll_group *g, int d, const uint8_t *used)
{
    int n = c->g.dim[d], cnt = 0, lo = -1;
    for (int x = 0; x < n; x++) cnt += used[x];
    if (cnt == n) {
        g->lo[d] = 0, g->len[d] = n, g->torus[d] = c->g.torus[d];
        return 0;
    }
    for (int x = 0; x < n && lo < 0; x++) /* where an interval starts */
        if (used[x] && !(x > 0 ? used[x - 1] : c->g.torus[d] && used[n - 1])) lo = x;
    for (int k = 0; k < cnt; k++)
        if (!used[(lo + k) % n] || (!c->g.torus[d] && lo + k >= n)) return -1;
    g->lo[d] = lo, g->len[d] = cnt, g->torus[d] = 0;
    /* a part of a ring: minimal routes between its nodes must stay in it */
    return c->g.torus[d] && 2 * (cnt - 1) >= n ? -1 : 0;
}

/* Is g a box of nodes whose every processor slot of the mode is g's? */
static int box_of(const coll_ctx *c, coll_group *g)
{
    uint8_t used[3][TSIM_MAX_DIM] = {{0}};
    for (int i = 0; i < g->n; i++) {
        int co[3];
        tsim_coords(&c->g, g->proc[i] / TSIM_CPUS, co);
        if (g->proc[i] % TSIM_CPUS >= c->cpus) return 0;
        for (int d = 0; d < 3; d++) used[d][co[d]] = 1;
    }
    for (int d = 0; d < 3; d++)
        if (box_dim(c, g, d, used[d]) != 0) return 0;
    /* members are distinct processors inside the box: a full box has
     * exactly len0 * len1 * len2 * cpus of them */
    return g->n == g->len[0] * g->len[1] * g->len[2] * c->cpus;
}

static int group_init(coll_ctx *c, coll_group *g, int n, const int *procs, uint16_t id)
{
    memset(g, 0, sizeof *g);
    g->id = id;
    g->n = n;
    g->me = -1;
    g->proc = malloc((size_t)n * sizeof *g->proc);
    g->rank_of = malloc((size_t)c->map->nprocs * sizeof *g->rank_of);
    if (!g->proc || !g->rank_of) goto fail;
    for (int p = 0; p < c->map->nprocs; p++) g->rank_of[p] = -1;
    for (int i = 0; i < n; i++) {
        int p = procs[i];
        if (p < 0 || p >= c->map->nprocs || g->rank_of[p] >= 0) goto fail;
        g->proc[i] = p;
        g->rank_of[p] = i;
        if (p == c->pp->index) g->me = i;
    }
    if (g->me < 0) goto fail;
    g->hw_ok = box_of(c, g);
    return 0;
fail:
    free(g->proc);
    free(g->rank_of);
    return -1;
}

static void group_fini(coll_group *g)
{
    free(g->proc);
    free(g->rank_of);
}

coll_group *coll_group_new(coll_ctx *c, int n, const int *ranks, uint16_t id)
{
    if (!c || n < 1 || !ranks || id == 0) return NULL;
    int *procs = malloc((size_t)n * sizeof *procs);
    coll_group *g = malloc(sizeof *g);
    int ok = procs && g;
    for (int i = 0; ok && i < n; i++) {
        ok = ranks[i] >= 0 && ranks[i] < c->nranks;
        if (ok) procs[i] = c->map->proc[ranks[i]];
    }
    if (ok) ok = group_init(c, g, n, procs, id) == 0;
    free(procs);
    if (!ok) {
        free(g);
        return NULL;
    }
    return g;
}

void coll_group_free(coll_group *g)
{
    if (!g) return;
    group_fini(g);
    free(g);
}

coll_group *coll_world(coll_ctx *c) { return &c->world; }
int coll_group_size(const coll_group *g) { return g->n; }
int coll_group_rank(const coll_group *g) { return g->me; }
int coll_group_hw_ok(const coll_group *g) { return g->hw_ok; }

int coll_begin(coll_ctx *c, coll_group *g, int op)
{
    if (c->op != OP_NONE) return -1;
    c->grp = g;
    c->cur = g->seq++;
    c->cur_gid = g->id;
    c->op = op;
    return 0;
}

int coll_is_current(coll_ctx *c, int op, const tsim_slot *s)
{
    coll_sw sw = coll_sw_get(s);
    if (c->op == op && sw.seq == c->cur && sw.gid == c->cur_gid) return 1;
    coll_stash(c, s);
    return 0;
}

coll_ctx *coll_init(ml_ctx *ml)
{
    coll_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ml = ml;
    c->pp = ml_proc(ml);
    c->map = ml_get_map(ml);
    c->g = c->pp->seg->geom;
    c->rank = ml_rank(ml);
    c->nranks = ml_nranks(ml);
    c->cpus = c->map->cpus == 2 ? 2 : 1;
    c->early_tail = &c->early;
    c->p2p_window = 8;
    if (group_init(c, &c->world, c->nranks, c->map->proc, 0) != 0) {
        free(c);
        return NULL;
    }
    if (ml_register_packet(ml, COLL_T_BCAST, coll_bcast_packet, c) != 0) {
        group_fini(&c->world);
        free(c);
        return NULL;
    }
    if (ml_register_packet(ml, COLL_T_A2A, coll_a2a_packet, c) != 0 ||
        ml_register_packet(ml, COLL_T_TREE, coll_tree_packet, c) != 0) {
        ml_unregister_packet(ml, COLL_T_A2A);
        ml_unregister_packet(ml, COLL_T_BCAST);
        group_fini(&c->world);
        free(c);
        return NULL;
    }
    return c;
}

coll_ctx *coll_init_with(ml_ctx *ml, coll_upcall_arg *ua)
{
    coll_ctx *c = coll_init(ml);
    if (c && ua) {
        ua->c = c;
        c->p2p_bound = 1;
    }
    return c;
}

void coll_finalize(coll_ctx *c)
{
    if (!c) return;
    ml_unregister_packet(c->ml, COLL_T_BCAST);
    ml_unregister_packet(c->ml, COLL_T_A2A);
    ml_unregister_packet(c->ml, COLL_T_TREE);
    coll_tree_fini(c);
    for (coll_early *e = c->early, *n; e; e = n) n = e->next, free(e);
    for (coll_p2p_early *e = c->p2p_early, *n; e; e = n) n = e->next, free(e->buf), free(e);
    free(c->have);
    free(c->peers);
    free(c->sblk);
    free(c->rblk);
    free(c->scur);
    free(c->rcur);
    group_fini(&c->world);
    free(c);
}

int coll_hw_ok(const coll_ctx *c) { return c->world.hw_ok; }
const coll_stats *coll_get_stats(const coll_ctx *c) { return &c->st; }
void coll_set_a2a_order(coll_ctx *c, int order) { c->a2a_order = order; }
void coll_set_p2p_window(coll_ctx *c, int window) { c->p2p_window = window; }

void coll_trace_op(coll_ctx *c, unsigned sub, uint64_t t0, int rc)
{
    if (!pl_tracing() || rc != 0) return;
    pl_trace_put(c->pp, PLT_COLL, sub, t0, pl_now(c->pp), -1, 0, pl_trace_count(c->pp, sub),
                 (uint32_t)c->nranks & 0xffff);
}

void coll_stash(coll_ctx *c, const tsim_slot *s)
{
    coll_early *e = malloc(sizeof *e);
    if (!e) abort();
    e->next = NULL;
    e->s = *s;
    *c->early_tail = e;
    c->early_tail = &e->next;
    c->st.pkts_early++;
    c->st.pkts_held++;
}

void coll_replay(coll_ctx *c, uint8_t type, void (*fn)(coll_ctx *, const tsim_slot *))
{
    coll_early **pp = &c->early;
    while (*pp) {
        coll_early *e = *pp;
        coll_sw sw = coll_sw_get(&e->s);
        if (sw.type == type && sw.seq == c->cur && sw.gid == c->cur_gid) {
            *pp = e->next;
            if (c->early_tail == &e->next) c->early_tail = pp;
            c->st.pkts_held--;
            fn(c, &e->s);
            free(e);
        } else {
            pp = &e->next;
        }
    }
}

int coll_inject(coll_ctx *c, int fifo, int dst_proc, unsigned flags, const coll_sw *sw,
                const void *data, size_t n)
{
    tsim_hwhdr hw;
    pl_header(c->pp, &hw, dst_proc, n, flags);
    if (pl_inject(c->pp, fifo, &hw, sw, data, n) != 0) {
        c->inj_wait |= TSIM_WAKE_INJ(fifo);
        return -1;
    }
    c->st.pkts_sent++;
    return 0;
}

coll_ctx *coll_open_env(const char *prog, coll_upcall_arg *ua, ml_ctx **mlp)
{
    char err[256];
    ml_ctx *ml = ml_init_env(coll_upcall, ua, err, sizeof err);
    if (!ml) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return NULL;
    }
    coll_ctx *c = coll_init_with(ml, ua);
    if (!c) {
        fprintf(stderr, "%s: cannot open the collectives\n", prog);
        ml_finalize(ml);
        return NULL;
    }
    *mlp = ml;
    return c;
}
