/* A fatal signal in mpirun itself (the engine's abort() on a broken
 * invariant or on memory exhaustion, a crash, a SIGQUIT from the user)
 * still removes the job's shared-memory names: the ranks die with mpirun
 * (PR_SET_PDEATHSIG), and nothing else would ever remove the names they
 * had not all attached through yet (mpirun_ranks.c removes them once they
 * have). The handler only unlinks paths prepared beforehand (unlink is
 * async-signal-safe, shm_unlink is not listed as such), then lets the
 * signal take its default action (a core dump where one is due). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpirun.h"

#define MAX_NAMES 4

static char path[MAX_NAMES][128];
static volatile sig_atomic_t npaths;

static void on_fatal(int sig)
{
    for (int i = 0; i < npaths; i++) unlink(path[i]);
    raise(sig); /* SA_RESETHAND | SA_NODEFER: now the default action */
}

void mpirun_fatal_unlinks(const char *shm_name)
{
    static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGQUIT, SIGTRAP, SIGSYS};
    if (npaths == MAX_NAMES || !shm_name[0]) return;
    /* glibc's shm_open names live in /dev/shm, the name's own '/' first */
    snprintf(path[npaths], sizeof path[npaths], "/dev/shm%s", shm_name);
    if (npaths++) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) sigaction(fatal[i], &sa, NULL);
}
