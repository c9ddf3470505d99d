/* Rank program for mpirun tests: attaches, sleeps SECONDS of host time
 * (simulated time does not move), then exits with CODE, calling pl_close
 * unless --no-close. Usage: tp_idle [--no-close] [--no-attach] [SECONDS] [CODE]
 * BGLEMU_IDLE_RANK=R applies SECONDS and CODE to rank R only (others: 0, 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packetlayer/pl.h"

int main(int argc, char **argv)
{
    int close_it = 1, attach = 1, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--no-close")) close_it = 0;
        else if (!strcmp(argv[i], "--no-attach")) attach = 0;
        else {
            fprintf(stderr, "tp_idle: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    double secs = i < argc ? atof(argv[i]) : 0;
    int code = i + 1 < argc ? atoi(argv[i + 1]) : 0;
    const char *only = getenv("BGLEMU_IDLE_RANK"), *me = getenv("BGLEMU_RANK");
    if (only && me && strcmp(only, me)) secs = 0, code = 0;
    pl_proc pp;
    char err[256];
    if (attach && pl_attach_env(&pp, err, sizeof err) != 0) {
        fprintf(stderr, "tp_idle: %s\n", err);
        return 2;
    }
    if (secs > 0) usleep((useconds_t)(secs * 1e6));
    if (attach && close_it) pl_close(&pp, code);
    return code;
}
