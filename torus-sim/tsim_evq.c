/* Calendar event queue with a heap for far events (see tsim_evq.h). */
#include "tsim_evq.h"

#include <stdlib.h>
#include <string.h>

#define MASK (TSIM_EVQ_SPAN - 1)

static inline int less(const ev *a, const ev *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

int evq_init(evq *q)
{
    memset(q, 0, sizeof *q);
    q->freel = EVQ_NIL;
    q->far_due = UINT64_MAX;
    q->top.t = UINT64_MAX;
    q->bk = malloc(TSIM_EVQ_SPAN * sizeof *q->bk);
    q->capnd = 1024;
    q->nd = calloc(q->capnd, sizeof *q->nd); /* node EVQ_NONE: key 0 */
    if (!q->bk || !q->nd) {
        free(q->bk);
        free(q->nd);
        return -1;
    }
    q->nnd = 1;
    for (unsigned i = 0; i < TSIM_EVQ_SPAN; i++) {
        q->bk[i].head = EVQ_NIL;
        q->bk[i].tail = EVQ_NONE;
    }
    return 0;
}

void evq_free(evq *q)
{
    free(q->bk);
    free(q->nd);
    free(q->far);
    memset(q, 0, sizeof *q);
}

static void far_push(evq *q, const ev *v)
{
    if (q->nfar == q->capfar) {
        q->capfar = q->capfar ? q->capfar * 2 : 256;
        q->far = realloc(q->far, q->capfar * sizeof *q->far);
        if (!q->far) abort();
    }
    size_t i = q->nfar++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!less(v, &q->far[up])) break;
        q->far[i] = q->far[up];
        i = up;
    }
    q->far[i] = *v;
    q->far_due = q->far[0].t - (TSIM_EVQ_SPAN - 1); /* far: t >= cur + SPAN, no wrap */
}

static ev far_pop(evq *q)
{
    ev top = q->far[0], last = q->far[--q->nfar];
    size_t i = 0, n = q->nfar;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const ev *best = &last;
        if (l < n && less(&q->far[l], best)) m = l, best = &q->far[l];
        if (l + 1 < n && less(&q->far[l + 1], best)) m = l + 1;
        if (m == i) break;
        q->far[i] = q->far[m];
        i = m;
    }
    if (n) q->far[i] = last;
    q->far_due = n ? q->far[0].t - (TSIM_EVQ_SPAN - 1) : UINT64_MAX;
    return top;
}

static uint32_t node_alloc(evq *q)
{
    if (q->freel != EVQ_NIL) {
        uint32_t n = q->freel;
        q->freel = q->nd[n].next;
        return n;
    }
    if (q->nnd == q->capnd) {
        q->capnd = q->capnd ? q->capnd * 2 : 1024;
        q->nd = realloc(q->nd, q->capnd * sizeof *q->nd);
        if (!q->nd) abort();
    }
    return q->nnd++;
}

/* Into its bucket after every key not above its own (keys are unique
 * in practice; equal ones keep their push order). */
static void cal_insert(evq *q, const ev *v)
{
    unsigned idx = (unsigned)(v->t & MASK);
    uint32_t n = node_alloc(q);
    evq_bucket *b = &q->bk[idx];
    q->nd[n] = (evq_node){v->key, v->type, v->a, v->b, v->pkt, EVQ_NIL};
    uint32_t prev = EVQ_NIL, at = b->head;
    /* after the tail, without walking: a push at top's own time comes here
     * (a saturated cycle's bucket holds hundreds) */
    if (at != EVQ_NIL && q->nd[b->tail].key <= v->key) prev = b->tail, at = EVQ_NIL;
    while (at != EVQ_NIL && q->nd[at].key <= v->key) {
        prev = at;
        at = q->nd[at].next;
    }
    q->nd[n].next = at;
    if (prev == EVQ_NIL) b->head = n;
    else q->nd[prev].next = n;
    if (at == EVQ_NIL) b->tail = n;
    q->bits[idx / 64] |= 1ull << (idx % 64);
    q->ncal++;
}

void evq_push_slow(evq *q, uint64_t t, uint64_t key, uint32_t type, int32_t a, int32_t b,
                   uint32_t pkt)
{
    ev v = {t, key, type, a, b, pkt};
    if (!q->has_top || t < q->top.t || (t == q->top.t && key < q->top.key)) {
        /* the new earliest: the old one goes back in (equal keys: after) */
        ev old = q->top;
        q->top = v;
        if (!q->has_top) {
            q->has_top = 1;
            return;
        }
        v = old;
    }
    if (v.t - q->cur < TSIM_EVQ_SPAN) cal_insert(q, &v);
    else far_push(q, &v);
}

/* Moves far events that the calendar window [cur, cur + SPAN) now covers. */
void evq_migrate(evq *q)
{
    while (q->nfar && q->far[0].t - q->cur < TSIM_EVQ_SPAN) {
        ev v = far_pop(q);
        cal_insert(q, &v);
    }
}

/* Distance from cur to the first nonempty bucket (ncal > 0). */
static uint64_t next_offset(const evq *q)
{
    unsigned start = (unsigned)(q->cur & MASK);
    unsigned w = start / 64;
    uint64_t m = q->bits[w] & (~0ull << (start % 64));
    for (unsigned k = 0; k <= TSIM_EVQ_SPAN / 64; k++) {
        if (m) {
            unsigned idx = (w * 64 + (unsigned)__builtin_ctzll(m)) & MASK;
            return (idx - start) & MASK;
        }
        w = (w + 1) % (TSIM_EVQ_SPAN / 64);
        m = q->bits[w];
    }
    return 0; /* unreachable while ncal > 0 */
}

/* Top's successor beyond cur's bitmap word, or in the heap, or none. */
void evq_refill_slow(evq *q)
{
    if (q->ncal) {
        uint64_t t = q->cur + next_offset(q);
        evq_take(q, (unsigned)(t & MASK), t, &q->top);
    } else if (q->nfar) {
        q->top = far_pop(q); /* t >= cur + SPAN: cur moves when it is popped */
    } else {
        q->has_top = 0;
        q->top.t = UINT64_MAX;
    }
}
