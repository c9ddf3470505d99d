/* How a unit file lists its tests: UM_TCASE(suite, "name", timeout, test,
 * ...) adds a test case of those tests, in that order, each with timeout
 * seconds (0: Check's default). */
#ifndef UNIT_SUITE_H
#define UNIT_SUITE_H

#include <check.h>

static inline void um_tcase(Suite *s, const char *name, double timeout, const TTest *const *tests, size_t n)
{
    TCase *tc = tcase_create(name);
    if (timeout > 0) tcase_set_timeout(tc, timeout);
    for (size_t i = 0; i < n; i++) tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
}

#define UM_TCASE(s, name, timeout, ...)                                                            \
    um_tcase(s, name, timeout, (const TTest *const[]){__VA_ARGS__},                                \
             sizeof((const TTest *const[]){__VA_ARGS__}) / sizeof(const TTest *))

#endif
