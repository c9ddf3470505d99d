/* One Check runner for every unit suite (tests/unit/test_NAME.c -> NAME_suite).
 * CK_RUN_SUITE / CK_RUN_CASE select a subset; CK_VERBOSITY=verbose is the
 * default so each test prints what it checked. */
#include <check.h>
#include <stdlib.h>

#define SUITE(n) Suite *n##_suite(void);
#include "suites.h"
#undef SUITE

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define SUITE(n) srunner_add_suite(sr, n##_suite());
#include "suites.h"
#undef SUITE
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
