/* The link sampler (tsim_trace.h). The engine calls tsim_trace_tick before
 * the first event at or after the next sampling time: every event earlier
 * than it is done then (events are processed in time order), so a sample
 * holds exactly the intervals' traffic. A link's counters grow when a
 * packet starts to cross it (busy by its whole serialization); the busy
 * cycles up to T are those minus what of the last packet lies beyond T
 * (busy_until - T): a link sends one packet at a time. */
#include <stdlib.h>

#include "tsim_engine_priv.h"
#include "tsim_trace.h"

typedef struct prev_link {
    uint64_t packets, bytes, busy;
    int shown; /* its last sample was not zero */
} prev_link;

struct tsim_trace {
    uint64_t interval, from, to, next, last;
    size_t max, n, cap;
    uint64_t dropped;
    prev_link *prev;
    tsim_link_sample *s;
};

int tsim_engine_trace_links(tsim_engine *e, uint64_t interval, uint64_t from, uint64_t to,
                            size_t max)
{
    if (!interval || e->trace) return -1;
    tsim_trace *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->prev = calloc((size_t)e->g.nnodes * TSIM_NPORTS, sizeof *t->prev);
    if (!t->prev) {
        free(t);
        return -1;
    }
    t->interval = interval;
    t->from = from;
    t->to = to;
    t->max = max;
    t->next = interval;
    e->trace = t;
    e->trace_at = interval;
    return 0;
}

static void keep(tsim_trace *t, const tsim_link_sample *s)
{
    if (s->t > t->to || s->t + s->len <= t->from) return;
    if (t->n >= t->max) {
        t->dropped++;
        return;
    }
    if (t->n == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 1024;
        if (c > t->max) c = t->max;
        tsim_link_sample *ns = realloc(t->s, c * sizeof *ns);
        if (!ns) {
            t->dropped++;
            return;
        }
        t->s = ns;
        t->cap = c;
    }
    t->s[t->n++] = *s;
}

/* Samples (last, at]; 1 if a link moved. */
static int sample(tsim_engine *e, uint64_t at, int final)
{
    tsim_trace *t = e->trace;
    int moved = 0;
    for (int node = 0; node < e->g.nnodes; node++) {
        const router *r = &e->rt[node];
        for (int port = 0; port < TSIM_NPORTS; port++) {
            if (r->nbr[port] < 0) continue;
            const tsim_link_stats *l = &r->link[port];
            uint64_t busy = l->busy_cycles;
            if (!final && r->busy_until[port] > at) busy -= r->busy_until[port] - at;
            prev_link *p = &t->prev[node * TSIM_NPORTS + port];
            tsim_link_sample s = {t->last, at - t->last, l->packets - p->packets,
                                  l->bytes - p->bytes, busy - p->busy, (uint32_t)node,
                                  (uint32_t)port};
            int any = s.packets || s.bytes || s.busy;
            moved |= any;
            if (any || p->shown) keep(t, &s);
            p->shown = any;
            p->packets = l->packets;
            p->bytes = l->bytes;
            p->busy = busy;
        }
    }
    t->last = at;
    return moved;
}

void tsim_trace_tick(tsim_engine *e, uint64_t now)
{
    tsim_trace *t = e->trace;
    while (t->next <= now) {
        uint64_t nx = t->next + t->interval;
        if (!sample(e, t->next, 0)) {
            /* nothing was on a link: nothing can be until the event at now */
            uint64_t last = now / t->interval * t->interval;
            if (last > nx) nx = last;
        }
        t->next = nx;
    }
    e->trace_at = t->next;
}

const tsim_link_sample *tsim_engine_link_samples(tsim_engine *e, uint64_t end, size_t *n,
                                                 uint64_t *dropped)
{
    tsim_trace *t = e->trace;
    if (!t) {
        *n = 0;
        *dropped = 0;
        return NULL;
    }
    if (end < t->last) end = t->last;
    if (t->next != UINT64_MAX) {
        if (end >= t->next) tsim_trace_tick(e, end);
        uint64_t at = end > t->last ? end : t->last + 1;
        sample(e, at, 1);
        /* every link that carried traffic in the last interval ends at zero */
        for (int i = 0; i < e->g.nnodes * TSIM_NPORTS; i++)
            if (t->prev[i].shown) {
                tsim_link_sample z = {at, 0, 0, 0, 0, (uint32_t)(i / TSIM_NPORTS),
                                      (uint32_t)(i % TSIM_NPORTS)};
                keep(t, &z);
                t->prev[i].shown = 0;
            }
        t->next = UINT64_MAX; /* closed */
        e->trace_at = UINT64_MAX;
    }
    *n = t->n;
    *dropped = t->dropped;
    return t->s;
}

void tsim_trace_free(tsim_engine *e)
{
    if (!e->trace) return;
    free(e->trace->prev);
    free(e->trace->s);
    free(e->trace);
    e->trace = NULL;
}
