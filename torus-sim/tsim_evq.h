/* The engine's event queue, ordered by (time, key).
 *
 * Nearly every event lands within a few thousand cycles of now (a hop, a
 * packet's serialization), so a calendar of one-cycle buckets covering the
 * next TSIM_EVQ_SPAN cycles holds them, with a bitmap to skip empty
 * buckets; events further out wait in a binary heap and move into the
 * calendar as time reaches them. Pushes are never earlier than the last
 * popped time, so every calendar event lies in [cur, cur + SPAN) and a
 * bucket holds one time only, sorted by key.
 *
 * The earliest event waits apart, in top, taken out of the calendar (or
 * the heap) as soon as the one before it is popped: a pop hands it over
 * at once, and the engine's dispatch on its type does not wait for the
 * bitmap, bucket and node loads behind it (the type varies from event to
 * event unpredictably, and the sooner a mispredicted jump resolves, the
 * less it costs); the search for the next one overlaps with the event's
 * processing. A push earlier than top (rare) swaps with it. */
#ifndef TSIM_EVQ_H
#define TSIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

/* 8192 cycles: at load 0.5 a source's next packet is often more than 4096
 * cycles on, and went through the heap (15 % of its wake-ups) */
#define TSIM_EVQ_BITS 13
#define TSIM_EVQ_SPAN (1u << TSIM_EVQ_BITS)

typedef struct ev {
    uint64_t t, key;
    uint32_t type;
    int32_t a, b;
    uint32_t pkt;
} ev;

/* A calendar event: its time is its bucket's. Nodes come from one pool
 * and go back to a LIFO free list, so the few in use stay in cache (an
 * array per bucket spread the calendar over a megabyte). */
typedef struct evq_node {
    uint64_t key;
    uint32_t type;
    int32_t a, b;
    uint32_t pkt;
    uint32_t next; /* next in the bucket, by key; EVQ_NIL ends it */
} evq_node;

#define EVQ_NIL UINT32_MAX
/* Node 0 is never an event: an empty bucket's tail, with key 0, so that
 * the inline push appends without asking whether the bucket is empty
 * (which of the two it is varies from push to push, unpredictably). */
#define EVQ_NONE 0u

typedef struct evq_bucket {
    uint32_t head, tail; /* empty: head EVQ_NIL, tail EVQ_NONE */
} evq_bucket;

typedef struct evq {
    ev top;                               /* the earliest event; top.t UINT64_MAX: none */
    int has_top;
    evq_bucket *bk;                       /* TSIM_EVQ_SPAN buckets */
    evq_node *nd;                         /* node pool */
    uint32_t nnd, capnd, freel;           /* used, allocated, free list */
    uint64_t bits[TSIM_EVQ_SPAN / 64];    /* nonempty buckets */
    uint64_t cur;                         /* the last popped time: the calendar's first slot */
    size_t ncal;                          /* events in the calendar */
    ev *far;                              /* heap of events beyond the calendar */
    size_t nfar, capfar;
    /* the cur from which the earliest far event lies in the window
     * (far[0].t - SPAN + 1), UINT64_MAX with none: a pop asks this one
     * field whether to move far events in */
    uint64_t far_due;
} evq;

int evq_init(evq *q);
void evq_free(evq *q);
/* By value: a pointer would make every inline push build the event in
 * memory first, for the rare call. */
void evq_push_slow(evq *q, uint64_t t, uint64_t key, uint32_t type, int32_t a, int32_t b,
                   uint32_t pkt);
void evq_refill_slow(evq *q);

/* The common cases inline (one event each way per hop): a push later
 * than top that lands in the calendar after every key already in its
 * bucket (engine keys grow in processing order), and a pop of top, whose
 * successor is found inline when it shares cur's bitmap word (below
 * saturation events are a few cycles apart: nearly always; far events all
 * lie at or after cur + SPAN, and a bucket holds one time only).
 * Everything else takes the general path, which keeps the same order. */
static inline void evq_push(evq *q, const ev *v)
{
    if (v->t > q->top.t && v->t - q->cur < TSIM_EVQ_SPAN && q->freel != EVQ_NIL) {
        unsigned idx = (unsigned)(v->t & (TSIM_EVQ_SPAN - 1));
        evq_bucket *b = &q->bk[idx];
        if (q->nd[b->tail].key < v->key) { /* an empty bucket's tail: key 0 */
            uint32_t n = q->freel;
            evq_node *x = &q->nd[n];
            q->freel = x->next;
            *x = (evq_node){v->key, v->type, v->a, v->b, v->pkt, EVQ_NIL};
            q->nd[b->tail].next = n; /* node EVQ_NONE's next is never read */
            uint32_t was_empty = -(uint32_t)(b->tail == EVQ_NONE); /* a mask: no branch */
            b->head = (n & was_empty) | (b->head & ~was_empty);
            b->tail = n;
            q->bits[idx / 64] |= 1ull << (idx % 64);
            q->ncal++;
            return;
        }
    }
    evq_push_slow(q, v->t, v->key, v->type, v->a, v->b, v->pkt);
}

/* Takes the head of bucket idx, whose time is t (the bucket is nonempty). */
static inline void evq_take(evq *q, unsigned idx, uint64_t t, ev *out)
{
    evq_bucket *b = &q->bk[idx];
    uint32_t n = b->head;
    evq_node *x = &q->nd[n];
    *out = (ev){t, x->key, x->type, x->a, x->b, x->pkt};
    b->head = x->next;
    uint64_t emptied = b->head == EVQ_NIL;
    _Static_assert(EVQ_NONE == 0, "evq_take: an emptied tail is masked to EVQ_NONE");
    b->tail &= (uint32_t)emptied - 1; /* masks, not branches */
    q->bits[idx / 64] &= ~(emptied << (idx % 64));
    x->next = q->freel;
    q->freel = n;
    q->ncal--;
}

void evq_migrate(evq *q);

/* Moves the earliest event of the calendar and the heap into top. */
static inline void evq_refill(evq *q)
{
    unsigned idx = (unsigned)(q->cur & (TSIM_EVQ_SPAN - 1));
    uint64_t m = q->bits[idx / 64] >> (idx % 64);
    if (m) { /* calendar events lie in [cur, cur + SPAN): bit k of m is time cur + k */
        uint64_t k = (unsigned)__builtin_ctzll(m); /* unsigned: no sign extension */
        evq_take(q, idx + (unsigned)k, q->cur + k, &q->top);
        return;
    }
    evq_refill_slow(q);
}

/* Pops the earliest event if its time is below h. */
static inline int evq_pop_below(evq *q, uint64_t h, ev *out)
{
    uint64_t t = q->top.t;
    if (t >= h) return 0;
    *out = q->top;
    q->cur = t;
    if (t >= q->far_due) evq_migrate(q);
    evq_refill(q);
    return 1;
}
static inline size_t evq_count(const evq *q) { return (size_t)q->has_top + q->ncal + q->nfar; }
/* Time of the earliest event, UINT64_MAX if none: top's. */
static inline uint64_t evq_min_time(const evq *q) { return q->top.t; }
/* Whether an event lies before t. Inline: a blocked processor's
 * engine-run loop asks it at every step, with t just ahead of now (an MPI
 * stream asks it about 13 times a packet). */
static inline int evq_any_before(const evq *q, uint64_t t) { return q->has_top && q->top.t < t; }

#endif
