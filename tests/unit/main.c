/* One Check runner for every unit suite (tests/unit/test_NAME.c -> NAME_suite).
 * CK_RUN_SUITE / CK_RUN_CASE select a subset; CK_VERBOSITY=verbose is the
 * default so each test prints what it checked. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "collectives/coll.h"

#define SUITE(n) Suite *n##_suite(void);
#include "suites.h"
#undef SUITE

int main(void)
{
    /* the in-process engines run every layer's programs, as mpirun's do */
    if (coll_engine_register() != 0) {
        fprintf(stderr, "unit tests: the engine programs could not be registered\n");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(NULL);
#define SUITE(n) srunner_add_suite(sr, n##_suite());
#include "suites.h"
#undef SUITE
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
