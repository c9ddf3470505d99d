/* bglemu-cpuscale: how much faster this host computes than a BG/L
 * processor, as the cputime_scale_pct to give mpirun (-p).
 *
 * The BG/L figure is a published one for a single processor: HPL on the
 * 131,072-processor BG/L at LLNL, 280.6 TFlop/s (TOP500, November 2005),
 * is 2.14 GFlop/s per 700 MHz PPC440 processor (76% of its 2.8 GFlop/s
 * peak). The host runs the same kind of work: a dense matrix product in
 * plain C, compiled as bglemu is, timed in thread CPU time (so a loaded
 * host gives the same answer), best of several runs. docs/calibration.md
 * explains the choice and what it does not cover.
 *
 *   bglemu-cpuscale [-q]     -q: print only the percentage */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BGL_GFLOPS 2.141 /* 280.6e12 / 131072 */
#define N 256
#define RUNS 5
#define RUN_SECONDS 0.2

static double a[N][N], b[N][N], c[N][N];

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* c += a * b, the row-by-row order a compiler vectorizes at -O2 */
static void dgemm(void)
{
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            double aik = a[i][k];
            for (int j = 0; j < N; j++) c[i][j] += aik * b[k][j];
        }
}

int main(int argc, char **argv)
{
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: bglemu-cpuscale [-q]\n"
                   "prints the cputime_scale_pct that makes this host's computation take as long\n"
                   "as on a BG/L processor (-q: the number alone)\n");
            return 0;
        } else {
            fprintf(stderr, "bglemu-cpuscale: unknown option '%s' (usage: bglemu-cpuscale [-q])\n",
                    argv[i]);
            return 2;
        }
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = 1.0 / (i + j + 1);
            b[i][j] = (double)(i - j) / N;
        }
    double best = 0;
    for (int r = 0; r < RUNS; r++) {
        memset(c, 0, sizeof c);
        double t0 = cpu_seconds(), t;
        long reps = 0;
        do {
            dgemm();
            reps++;
        } while ((t = cpu_seconds() - t0) < RUN_SECONDS);
        double gf = 2.0 * N * N * N * (double)reps / t * 1e-9;
        if (gf > best) best = gf;
    }
    if (c[N / 2][N / 3] != c[N / 2][N / 3]) return 1; /* keeps the product alive */
    int pct = (int)(best / BGL_GFLOPS * 100 + 0.5);
    if (pct < 1) pct = 1;
    if (quiet) {
        printf("%d\n", pct);
        return 0;
    }
    printf("bglemu-cpuscale: host: %.2f GFlop/s (%dx%d matrix product in plain C, thread CPU "
           "time, best of %d)\n", best, N, N, RUNS);
    printf("bglemu-cpuscale: BG/L processor: %.2f GFlop/s (HPL, TOP500 November 2005: 280.6 "
           "TFlop/s on 131,072 processors)\n", BGL_GFLOPS);
    printf("bglemu-cpuscale: this host computes %.2fx as fast: mpirun -p cputime_scale_pct=%d\n",
           best / BGL_GFLOPS, pct);
    return 0;
}
