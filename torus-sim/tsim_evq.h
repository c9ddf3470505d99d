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
void evq_push(evq *q, const ev *v);
/* Pops the earliest event if its time is below h. */
int evq_pop_below(evq *q, uint64_t h, ev *out);
static inline size_t evq_count(const evq *q) { return q->ncal + q->nfar; }
/* Time of the earliest event, UINT64_MAX if none. */
uint64_t evq_min_time(const evq *q);

#endif
