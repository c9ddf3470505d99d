/* startend: a job that is almost only start and end, for timing how long
 * mpirun takes to start and end N ranks. Each rank passes a value around
 * the ring ITERS times (MPI_Sendrecv to rank+1, from rank-1) and then takes
 * one MPI_Allreduce; rank 0 checks the sum. Under -clock none the job is a
 * few tens of simulated microseconds, so the wall time is start and end.
 *   mpirun -np N [-mode VN] -clock none startend [--iters K] [--times FILE]
 * --times FILE: every rank appends one line to FILE after MPI_Finalize,
 *   "rank start main init job fin" in CLOCK_REALTIME seconds: when its
 *   process was created (/proc/self/stat, 10 ms steps), main entered, MPI_Init
 *   returned, its last message (the allreduce) done, MPI_Finalize returned.
 *   tests/bench/bench_startend.sh turns them into phases. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* the process's creation in CLOCK_REALTIME seconds: field 22 of
 * /proc/self/stat (clock ticks since boot) + btime of /proc/stat */
static double started(void)
{
    char buf[1024];
    double t = 0;
    FILE *f = fopen("/proc/self/stat", "r");
    if (f && fgets(buf, sizeof buf, f)) {
        char *p = strrchr(buf, ')');
        unsigned long long ticks = 0;
        for (int field = 2; p && *p && field < 22; p++)
            if (*p == ' ') field++;
        if (p && sscanf(p, "%llu", &ticks) == 1) t = (double)ticks / (double)sysconf(_SC_CLK_TCK);
    }
    if (f) fclose(f);
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "r");
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "btime %llu", &btime) == 1) break;
    if (f) fclose(f);
    return t + (double)btime;
}

int main(int argc, char **argv)
{
    double t_main = now();
    long iters = 10;
    const char *times = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--times") && i + 1 < argc) times = argv[++i];
        else {
            fprintf(stderr, "usage: startend [--iters K] [--times FILE]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    double t_init = now();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long v = rank, got = -1;
    for (long i = 0; i < iters; i++) {
        MPI_Sendrecv(&v, 1, MPI_LONG, (rank + 1) % size, 0, &got, 1, MPI_LONG, (rank + size - 1) % size, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v = got;
    }
    long sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double t_job = now();
    long want = (long)size * (size - 1) / 2;
    if (rank == 0)
        printf("startend: %d ranks, %ld ring exchanges and an allreduce: sum %ld %s\n", size, iters, sum,
               sum == want ? "right" : "WRONG");
    MPI_Finalize();
    double t_fin = now();
    if (times) {
        char line[160];
        int n = snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f %.6f\n", rank, started(), t_main, t_init, t_job,
                         t_fin);
        int fd = open(times, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd < 0 || write(fd, line, (size_t)n) != n) perror(times);
        if (fd >= 0) close(fd);
    }
    return sum == want ? 0 : 1;
}
