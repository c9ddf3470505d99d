/* collectives: setup, the progress loop, early packets, injection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

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
    c->hw_ok = 1;
    for (int n = 0; n < c->g.nnodes; n++)
        for (int cpu = 0; cpu < c->cpus; cpu++) {
            int p = tsim_proc_index(n, cpu);
            if (p >= c->map->nprocs || c->map->rank[p] < 0) c->hw_ok = 0;
        }
    if (ml_register_packet(ml, COLL_T_BCAST, coll_bcast_packet, c) != 0) {
        free(c);
        return NULL;
    }
    if (ml_register_packet(ml, COLL_T_A2A, coll_a2a_packet, c) != 0) {
        ml_unregister_packet(ml, COLL_T_BCAST);
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
    for (coll_early *e = c->early, *n; e; e = n) n = e->next, free(e);
    for (coll_p2p_early *e = c->p2p_early, *n; e; e = n) n = e->next, free(e->buf), free(e);
    free(c->have);
    free(c->order);
    free(c->sent);
    free(c);
}

int coll_hw_ok(const coll_ctx *c) { return c->hw_ok; }
const coll_stats *coll_get_stats(const coll_ctx *c) { return &c->st; }
void coll_set_a2a_order(coll_ctx *c, int order) { c->a2a_order = order; }
void coll_set_p2p_window(coll_ctx *c, int window) { c->p2p_window = window; }

int coll_run(coll_ctx *c, int (*done)(coll_ctx *), int (*push)(coll_ctx *), const char *why)
{
    for (;;) {
        int moved = push ? push(c) : 0;
        if (done(c)) return 0;
        moved += ml_advance(c->ml);
        if (push) moved += push(c);
        if (done(c)) return 0;
        if (moved) continue;
        int rc;
        if (c->inj_wait) {
            char note[112];
            snprintf(note, sizeof note, "rank %d: %s (injection FIFO full)", c->rank, why);
            rc = pl_block_need(c->pp, TSIM_WAKE_REC_ALL | c->inj_wait, TSIM_MAX_CHUNKS, note);
        } else {
            rc = ml_idle(c->ml, why);
        }
        c->inj_wait = 0;
        if (rc != 0 || pl_aborting(c->pp)) return -1;
    }
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
}

void coll_replay(coll_ctx *c, uint8_t type, void (*fn)(coll_ctx *, const tsim_slot *))
{
    coll_early **pp = &c->early;
    while (*pp) {
        coll_early *e = *pp;
        coll_sw sw = coll_sw_get(&e->s);
        if (sw.type == type && sw.seq == c->cur) {
            *pp = e->next;
            if (c->early_tail == &e->next) c->early_tail = pp;
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
