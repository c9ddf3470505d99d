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

Suite *evq_suite(void)
{
    Suite *s = suite_create("evq");
    TCase *tc = tcase_create("any_before");
    tcase_add_test(tc, any_before_agrees_with_min);
    suite_add_tcase(s, tc);
    return s;
}
