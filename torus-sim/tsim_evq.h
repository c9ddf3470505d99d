/* The engine's event queue, ordered by (time, key).
 *
 * Nearly every event lands within a few thousand cycles of now (a hop, a
 * packet's serialization), so a calendar of one-cycle buckets covering the
 * next TSIM_EVQ_SPAN cycles holds them, with a bitmap to skip empty
 * buckets; events further out wait in a binary heap and move into the
 * calendar as time reaches them. Pushes are never earlier than the last
 * popped time, so every calendar event lies in [cur, cur + SPAN) and a
 * bucket holds one time only, sorted by key. */
#ifndef TSIM_EVQ_H
#define TSIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

#define TSIM_EVQ_BITS 12
#define TSIM_EVQ_SPAN (1u << TSIM_EVQ_BITS)

typedef struct ev {
    uint64_t t, key;
    uint32_t type;
    int32_t a, b;
    uint32_t pkt;
} ev;

typedef struct evq_bucket {
    ev *v;
    uint32_t n, pos, cap;
} evq_bucket;

typedef struct evq {
    evq_bucket *bk;                       /* TSIM_EVQ_SPAN buckets */
    uint64_t bits[TSIM_EVQ_SPAN / 64];    /* nonempty buckets */
    uint64_t cur;                         /* time of the earliest calendar slot */
    size_t ncal;                          /* events in the calendar */
    ev *far;                              /* heap of events beyond the calendar */
    size_t nfar, capfar;
} evq;

int evq_init(evq *q);
void evq_free(evq *q);
void evq_push_slow(evq *q, const ev *v);
int evq_pop_below_slow(evq *q, uint64_t h, ev *out);

/* The common cases inline (one event each way per hop): a push that
 * lands in the calendar after every key already in its bucket (engine
 * keys grow in processing order), and a pop from the bucket of time cur
 * itself, which holds the earliest events (far events all lie at or after
 * cur + SPAN, and a bucket holds one time only). Everything else takes
 * the general path, which keeps the same order. */
static inline void evq_push(evq *q, const ev *v)
{
    if (v->t - q->cur < TSIM_EVQ_SPAN) {
        unsigned idx = (unsigned)(v->t & (TSIM_EVQ_SPAN - 1));
        evq_bucket *b = &q->bk[idx];
        if (b->n < b->cap && (b->n == b->pos || b->v[b->n - 1].key < v->key)) {
            b->v[b->n++] = *v;
            q->bits[idx / 64] |= 1ull << (idx % 64);
            q->ncal++;
            return;
        }
    }
    evq_push_slow(q, v);
}

/* Pops the earliest event if its time is below h. */
static inline int evq_pop_below(evq *q, uint64_t h, ev *out)
{
    if (q->cur < h) {
        unsigned idx = (unsigned)(q->cur & (TSIM_EVQ_SPAN - 1));
        evq_bucket *b = &q->bk[idx];
        if (b->pos < b->n) {
            *out = b->v[b->pos++];
            if (b->pos == b->n) {
                b->pos = b->n = 0;
                q->bits[idx / 64] &= ~(1ull << (idx % 64));
            }
            q->ncal--;
            return 1;
        }
    }
    return evq_pop_below_slow(q, h, out);
}
static inline size_t evq_count(const evq *q) { return q->ncal + q->nfar; }
/* Time of the earliest event, UINT64_MAX if none. */
uint64_t evq_min_time(const evq *q);

#endif
