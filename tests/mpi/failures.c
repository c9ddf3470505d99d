/* MPI programs that go wrong on purpose, for mpirun's error paths:
 *   failures deadlock     every rank receives first: the engine reports it
 *   failures crash        rank 1 dies of SIGSEGV in the middle of a job
 *   failures crash-busy   rank 1 writes through NULL while the others compute
 *   failures crash-thread a helper thread of the last rank writes through
 *                         NULL while that rank waits in MPI_Recv and the
 *                         others compute
 *   failures exit-busy    rank 2 calls exit(7) while the others compute
 *   failures spawn        MPI_Comm_spawn fails with a clear error class
 *   failures stray        rank 1 writes 4 KiB of random bytes over the
 *                         machine segment's header (geometry, parameters,
 *                         horizon), found the way a wild pointer would
 *   failures stray-rec    rank 1 pushes a garbage packet into rank 0's
 *                         reception FIFO 0
 *   failures stray-head   rank 1 moves its injection FIFO 0's head on by
 *                         100,000 (issue 15's table, rows 4 and 2)
 * In the -busy and -thread cases the innocent ranks are running when hydra
 * kills them and the failing one may be blocked: whichever mpirun sees
 * vanish first, or running, says nothing about which rank failed. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_check.h"
#include "torus-sim/tsim.h" /* the segment's layout, as a program reading bglemu's headers knows it */

static void null_write(void)
{
    volatile int *volatile bad = NULL;
    *bad = 1;
}

static void *crash_later(void *arg)
{
    (void)arg;
    sleep(1); /* host time: the main thread is asleep in MPI_Recv by then */
    null_write();
    return NULL;
}

/* Computation between MPI calls, for at most `secs` of host time (the
 * failing rank ends the job long before). */
static void compute(double secs)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 1000000; i++) x += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) < secs);
}

/* The start of the machine segment in this process: the mapping of a
 * /dev/shm/bglemu.* object at file offset 0. */
static unsigned char *segment(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned char *at = NULL;
    while (f && !at && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        if (strstr(line, "/dev/shm/bglemu.") && sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3 &&
            off == 0)
            at = (unsigned char *)(uintptr_t)lo;
    }
    if (f) fclose(f);
    return at;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "deadlock")) {
        MPI_Recv(&v, 1, MPI_INT, (rank + 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, (rank + 1) % n, 0, MPI_COMM_WORLD);
    } else if (!strcmp(what, "crash")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            usleep(300000); /* host time: the others are asleep in MPI_Recv by then */
            raise(SIGSEGV);
        }
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(what, "crash-busy") || !strcmp(what, "exit-busy") ||
               !strcmp(what, "crash-thread")) {
        int thread = !strcmp(what, "crash-thread");
        int culprit = thread ? n - 1 : what[0] == 'e' ? 2 : 1;
        /* no barrier first: a rank computing holds simulated time back (the
         * engine's horizon), so the failing rank could still be waiting for
         * the barrier's last packet when the others are already computing */
        if (rank == culprit && thread) {
            pthread_t t;
            pthread_create(&t, NULL, crash_later, NULL);
            MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == culprit) {
            usleep(300000); /* host time: the others are computing by then */
            if (what[0] == 'e') exit(7);
            null_write();
        } else {
            compute(60);
            if (thread && rank == 0) MPI_Send(&v, 1, MPI_INT, culprit, 0, MPI_COMM_WORLD);
        }
    } else if (!strcmp(what, "stray")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            unsigned char *seg = segment();
            CHECK(seg != NULL, "the machine segment is mapped in rank 1");
            srand(15);
            for (int i = 0; seg && i < 4096; i++) seg[i] = (unsigned char)rand();
            CHECK(0, "rank 1 wrote over the segment header and lived");
        }
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(what, "stray-rec") || !strcmp(what, "stray-head")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            tsim_seg *s = (tsim_seg *)segment();
            CHECK(s != NULL, "the machine segment is mapped in rank 1");
            if (s && what[6] == 'r') {
                tsim_ring *r = &s->procs[s->rank_proc[0]].rec[0];
                uint32_t h = atomic_load(&r->head);
                memset(&r->slot[h % TSIM_RING_SLOTS], 0x5a, sizeof(tsim_slot));
                atomic_store(&r->head, h + 1);
                CHECK(0, "rank 1 wrote into rank 0's reception FIFO and lived");
            } else if (s) {
                atomic_fetch_add(&s->procs[s->rank_proc[1]].inj[0].head, 100000);
                tsim_kick(s); /* what its next packet would do */
            }
        }
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(what, "spawn")) {
        MPI_Comm child;
        int errs[1];
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int err = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF,
                                 &child, errs);
        int cls = MPI_SUCCESS, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        for (char *c = msg; *c; c++)
            if (*c == '\n') *c = ' ';
        /* MPICH asks the process manager first; hydra's refusal comes back
         * as an MPI error, and the job goes on */
        CHECK(err != MPI_SUCCESS && strstr(msg, "spawn"),
              "MPI_Comm_spawn returns an error (class %d, \"%.60s...\"), no crash", cls, msg);
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == n, "the job goes on after the failed spawn (allreduce = %d)", sum);
    } else {
        if (!rank) fprintf(stderr, "usage: failures deadlock|crash|crash-busy|crash-thread|exit-busy|spawn|stray|stray-rec|stray-head\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return mc_finish();
}
