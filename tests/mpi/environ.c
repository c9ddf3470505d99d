/* The environment in an MPI rank (docs/mpi.md, "A reproducible address
 * space"): setenv, putenv, unsetenv and clearenv behave as glibc's, before
 * MPI_Init and after, and a buffer allocated after the environment changed
 * has the same address whatever environment the job started with. Each
 * rank prints its checks and, last,
 *
 *   environ: rank R heap ADDRESS
 *
 * (a malloc made after the program's first setenv and MPI_Init);
 * tests/mpi/determinism.sh runs the program with more variables and
 * longer values and compares those lines. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"

extern char **environ;

static int count(const char *prefix)
{
    int n = 0;
    for (char **e = environ; e && *e; e++) n += !strncmp(*e, prefix, strlen(prefix));
    return n;
}

int main(int argc, char **argv)
{
    /* before MPI_Init, as a program choosing MPICH's settings would */
    int early = setenv("BGLEMU_ENV_EARLY", "1", 1);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *heap = malloc(40);
    CHECK(early == 0 && getenv("BGLEMU_ENV_EARLY") && !strcmp(getenv("BGLEMU_ENV_EARLY"), "1"),
          "setenv before MPI_Init: the variable is there after it");

    CHECK(setenv("BGLEMU_ENV_A", "a", 1) == 0 && !strcmp(getenv("BGLEMU_ENV_A"), "a") &&
              setenv("BGLEMU_ENV_A", "b", 0) == 0 && !strcmp(getenv("BGLEMU_ENV_A"), "a") &&
              setenv("BGLEMU_ENV_A", "b", 1) == 0 && !strcmp(getenv("BGLEMU_ENV_A"), "b") &&
              count("BGLEMU_ENV_A=") == 1,
          "setenv adds, keeps without replace, replaces in place");
    errno = 0;
    int r1 = setenv("", "x", 1), e1 = errno;
    errno = 0;
    int r2 = setenv("BGLEMU_ENV=B", "x", 1), e2 = errno;
    errno = 0;
    int r3 = unsetenv("BGLEMU_ENV=B"), e3 = errno;
    CHECK(r1 == -1 && e1 == EINVAL && r2 == -1 && e2 == EINVAL && r3 == -1 && e3 == EINVAL &&
              !getenv(""),
          "an empty name or one with '=' is EINVAL");

    static char put[] = "BGLEMU_ENV_P=x";
    int rp = putenv(put);
    const char *got = getenv("BGLEMU_ENV_P");
    put[13] = 'y';
    CHECK(rp == 0 && got == put + 13 && !strcmp(getenv("BGLEMU_ENV_P"), "y"),
          "putenv puts the string itself: a change to it is the variable's");
    static char name_only[] = "BGLEMU_ENV_P";
    CHECK(putenv(name_only) == 0 && !getenv("BGLEMU_ENV_P"), "putenv of a name alone removes it");

    CHECK(unsetenv("BGLEMU_ENV_A") == 0 && !getenv("BGLEMU_ENV_A") &&
              unsetenv("BGLEMU_ENV_A") == 0 && getenv("PATH"),
          "unsetenv removes, an absent name is no error, the rest stays");

    int grown = 1;
    char name[32], value[32];
    for (int i = 0; i < 1500; i++) {
        snprintf(name, sizeof name, "BGLEMU_ENV_N%d", i);
        snprintf(value, sizeof value, "%d", i * 7);
        grown &= setenv(name, value, 1) == 0;
    }
    for (int i = 0; i < 1500; i += 7) {
        snprintf(name, sizeof name, "BGLEMU_ENV_N%d", i);
        snprintf(value, sizeof value, "%d", i * 7);
        grown &= getenv(name) && !strcmp(getenv(name), value);
    }
    grown &= count("BGLEMU_ENV_N") == 1500 && getenv("PATH") && getenv("BGLEMU_ENV_EARLY");
    for (int i = 0; i < 1500; i++) {
        snprintf(name, sizeof name, "BGLEMU_ENV_N%d", i);
        grown &= unsetenv(name) == 0;
    }
    CHECK(grown && count("BGLEMU_ENV_N") == 0 && getenv("PATH"),
          "1500 variables added, read and removed; the others stay");

    /* a program may set environ itself: duplicates, then changes on top;
     * the job's variables restored from a copy afterwards (a change to the
     * environment may reuse the array environ was: so may glibc's) */
    size_t n = 0;
    while (environ[n]) n++;
    char **saved = malloc(sizeof *saved * (n + 1));
    if (!saved) MPI_Abort(MPI_COMM_WORLD, 1);
    memcpy(saved, environ, sizeof *saved * (n + 1));
    char *mine[] = {"BGLEMU_ENV_D=1", "BGLEMU_ENV_E=2", "BGLEMU_ENV_D=3", NULL};
    environ = mine;
    CHECK(unsetenv("BGLEMU_ENV_D") == 0 && count("BGLEMU_ENV_D=") == 0 &&
              setenv("BGLEMU_ENV_F", "4", 1) == 0 && count("BGLEMU_ENV_") == 2 &&
              !strcmp(getenv("BGLEMU_ENV_E"), "2") && !strcmp(getenv("BGLEMU_ENV_F"), "4"),
          "an environ the program set: unsetenv removes every copy, setenv adds to it");
    CHECK(clearenv() == 0 && !getenv("BGLEMU_ENV_E") && (!environ || !*environ) &&
              setenv("BGLEMU_ENV_G", "5", 1) == 0 && environ && environ[0] && !environ[1] &&
              !strcmp(environ[0], "BGLEMU_ENV_G=5"),
          "clearenv empties it, setenv starts again");
    environ = saved;
    CHECK(getenv("PATH") && !getenv("BGLEMU_ENV_G") && setenv("BGLEMU_ENV_H", "6", 1) == 0 &&
              count("BGLEMU_ENV_") == 2 && getenv("BGLEMU_ENV_EARLY"),
          "environ restored by the program, and changed again");

    printf("environ: rank %d heap %p\n", rank, heap);
    free(heap);
    return mc_finish();
}
