/* The event queue's early question (torus-sim/tsim_evq.c evq_any_before):
 * whether an event lies before t must agree with the earliest event's
 * time, for every t, as the calendar's window slides past its wrap and far
 * events move in. A blocked processor's engine-run loop asks it at every
 * step (tsim_proxy.c prx_settled), so a wrong answer would let it read a
 * view that is not final yet. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>

#include "torus-sim/tsim_evq.h"
#include "suite.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Every t from below now to past the window: the answer is min < t. */
static unsigned check_all(const evq *q, uint64_t now)
{
    uint64_t m = evq_count(q) ? evq_min_time(q) : UINT64_MAX;
    unsigned asked = 0;
    for (uint64_t t = now > 3 ? now - 3 : 0; t < now + 2 * TSIM_EVQ_SPAN + 8; t += 1 + t % 37, asked++) {
        int want = m < t;
        ck_assert_msg(evq_any_before(q, t) == want,
                      "now %llu, earliest %llu: evq_any_before(%llu) = %d, want %d",
                      (unsigned long long)now, (unsigned long long)m, (unsigned long long)t, !want, want);
    }
    return asked;
}

START_TEST(any_before_agrees_with_min)
{
    evq q;
    ck_assert_int_eq(evq_init(&q), 0);
    uint64_t now = 0, key = 1;
    unsigned asked = check_all(&q, now), pops = 0, far = 0;
    for (int round = 0; round < 1500; round++) {
        int pushes = (int)(next_rand() % 4);
        for (int i = 0; i < pushes; i++) {
            uint64_t r = next_rand(), d;
            /* mostly near, some beyond the window (the heap), a few at now */
            if (r % 10 == 0) d = TSIM_EVQ_SPAN + r % (3 * TSIM_EVQ_SPAN), far++;
            else if (r % 10 == 1) d = 0;
            else d = (r >> 8) % 700;
            ev v = {now + d, key++, 0, 0, 0, 0};
            evq_push(&q, &v);
        }
        asked += check_all(&q, now);
        ev out;
        uint64_t h = now + 1 + next_rand() % 900;
        while (evq_pop_below(&q, h, &out)) {
            ck_assert_uint_ge(out.t, now);
            now = out.t;
            pops++;
        }
        if (!evq_count(&q)) now = h; /* time moves on past an empty queue */
        asked += check_all(&q, now);
    }
    printf("evq_any_before: %u questions over %u pops (%u far pushes, the window wrapped %llu times) "
           "agree with the earliest event's time\n",
           asked, pops, far, (unsigned long long)(now / TSIM_EVQ_SPAN));
    evq_free(&q);
}
END_TEST

/* The queue's order, against a plain list searched for its (time, key)
 * minimum: pops must come out in that order whatever path they take (the
 * inline ones, the bitmap scan past cur's word, far events moving in), with
 * keys pushed in and out of order (engine keys grow; a processor's or a
 * blocked processor's step may sort before what a bucket holds), bounds
 * below and above the earliest event, and the window wrapping. */
typedef struct { uint64_t t, key; } ref_ev;

START_TEST(pops_in_time_key_order)
{
    evq q;
    ck_assert_int_eq(evq_init(&q), 0);
    static ref_ev ref[1 << 16];
    size_t nref = 0;
    uint64_t now = 0, key = 1000000;
    unsigned pops = 0, far = 0, gaps = 0, lows = 0;
    for (int round = 0; round < 20000; round++) {
        int pushes = (int)(next_rand() % 4);
        for (int i = 0; i < pushes && nref < sizeof ref / sizeof *ref; i++) {
            uint64_t r = next_rand(), d, k;
            if (r % 16 == 0) d = TSIM_EVQ_SPAN - 8 + r % (3 * TSIM_EVQ_SPAN), far++;
            else if (r % 16 == 1) d = 0;
            else if (r % 16 == 2) d = 64 + (r >> 8) % 300, gaps++; /* past cur's word */
            else d = (r >> 8) % 40;
            /* mostly growing keys; some below every engine key, some unique
             * high ones in any order */
            uint64_t kr = (r >> 20) % 8;
            if (kr == 0) k = (r >> 24) % 1000000 * 64 + (uint64_t)(nref % 64);
            else if (kr == 1) k = (1ull << 62) | ((r >> 24) << 20) | (uint64_t)round;
            else k = key++;
            ev v = {now + d, k, (uint32_t)(k & 0xff), (int32_t)(k >> 8 & 0xff), (int32_t)d,
                    (uint32_t)(k ^ d)};
            /* low keys, as a blocked processor's step is pushed: the
             * general path puts them first in their bucket */
            lows += kr == 0;
            evq_push(&q, &v);
            ref[nref++] = (ref_ev){v.t, k};
        }
        ck_assert_uint_eq(evq_count(&q), nref);
        uint64_t h = next_rand() % 3 ? now + 1 + next_rand() % 60 : now + next_rand() % (2 * TSIM_EVQ_SPAN);
        ev out;
        for (;;) {
            size_t m = 0;
            for (size_t i = 1; i < nref; i++)
                if (ref[i].t < ref[m].t || (ref[i].t == ref[m].t && ref[i].key < ref[m].key)) m = i;
            int want = nref && ref[m].t < h;
            int got = evq_pop_below(&q, h, &out);
            ck_assert_msg(got == want, "pop below %llu: got %d, want %d (earliest %llu)",
                          (unsigned long long)h, got, want,
                          nref ? (unsigned long long)ref[m].t : 0ull);
            if (!got) break;
            ck_assert_msg(out.t == ref[m].t && out.key == ref[m].key,
                          "pop %u: got (%llu, %llu), want (%llu, %llu)", pops,
                          (unsigned long long)out.t, (unsigned long long)out.key,
                          (unsigned long long)ref[m].t, (unsigned long long)ref[m].key);
            ck_assert_uint_eq(out.type, (uint32_t)(out.key & 0xff));
            ck_assert_int_eq(out.a, (int32_t)(out.key >> 8 & 0xff));
            ck_assert_uint_eq(out.pkt, (uint32_t)(out.key ^ (uint64_t)out.b));
            ref[m] = ref[--nref];
            now = out.t;
            pops++;
        }
        if (!nref) now = h;
    }
    printf("evq order: %u pops (%u far pushes, %u past cur's word, %u with low keys) came out in "
           "(time, key) order, the window wrapped %llu times\n",
           pops, far, gaps, lows, (unsigned long long)(now / TSIM_EVQ_SPAN));
    evq_free(&q);
}
END_TEST

Suite *evq_suite(void)
{
    Suite *s = suite_create("evq");
    /* millions of questions: seconds under a sanitizer on a loaded host */
    UM_TCASE(s, "any_before", 60, any_before_agrees_with_min);
    UM_TCASE(s, "order", 60, pops_in_time_key_order);
    return s;
}
