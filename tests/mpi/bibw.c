/* Bidirectional bandwidth sweep between ranks 0 and 1: for each size, both
 * post WINDOW MPI_Irecv and WINDOW MPI_Isend of SIZE bytes to each other at
 * once and MPI_Waitall, ITERS times. Every byte is checked; prints per size
 * the simulated cycles per iteration (rank 0's MPI_Wtime, from leaving a
 * barrier) and both directions' bandwidth together.
 *   bibw [--min B] [--max B] [--step F] [--window W] [--iters K] [--offset B]
 * Defaults: 1 B .. 1 MiB, F = 4, W = 4, K = 2, offset 16. Sizes take K or M
 * suffixes. Each buffer of the window starts B bytes past a 64-byte boundary
 * (16: rendezvous data stays on the main processor; 0: 32-byte aligned, the
 * coprocessor receives it in CO mode), so the simulated result does not
 * depend on the heap. */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

#define MAXW 64

static unsigned char byte_of(int src, long iter, int slot, long i)
{
    return (unsigned char)(i * 131 + src * 7 + iter * 29 + slot * 17 + (i >> 9));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long min = 1, max = 1L << 20, step = 4, window = 4, iters = 2, offset = 16, *v = NULL;
    int usage = n < 2;
    for (int a = 1; a < argc && !usage; a++) {
        if (a + 1 >= argc) usage = 1;
        else if (!strcmp(argv[a], "--min")) v = &min;
        else if (!strcmp(argv[a], "--max")) v = &max;
        else if (!strcmp(argv[a], "--step")) v = &step;
        else if (!strcmp(argv[a], "--window")) v = &window;
        else if (!strcmp(argv[a], "--iters")) v = &iters;
        else if (!strcmp(argv[a], "--offset")) v = &offset;
        else usage = 1;
        if (!usage) *v = parse_size(argv[++a]);
    }
    if (usage || min < 0 || max < min || max > (1L << 28) || step < 2 || window < 1 ||
        window > MAXW || iters < 1 || offset < 0 || offset > 63) {
        if (!rank)
            fprintf(stderr, "bibw: usage: mpirun -np 2 bibw [--min B] [--max B] [--step F] "
                            "[--window 1..%d] [--iters K] [--offset 0..63]\n", MAXW);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t stride = ((size_t)max + (size_t)offset + 63) / 64 * 64;
    char *sbase = aligned_alloc(64, stride * (size_t)window + 64);
    char *rbase = aligned_alloc(64, stride * (size_t)window + 64);
    int peer = 1 - rank;
    for (long size = min;; size = size ? size * step : 1) {
        if (size > max) break;
        long bad = 0;
        double t = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long it = 0; it < iters && rank <= 1; it++) {
            MPI_Request req[2 * MAXW];
            MPI_Status st[2 * MAXW]; /* not MPI_STATUSES_IGNORE: gcc 12 warns (stringop-overflow) */
            for (int w = 0; w < window; w++) {
                unsigned char *r = (unsigned char *)rbase + stride * (size_t)w + offset;
                memset(r, 0, (size_t)size);
                MPI_Irecv(r, (int)size, MPI_BYTE, peer, w, MPI_COMM_WORLD, &req[w]);
            }
            for (int w = 0; w < window; w++) {
                unsigned char *s = (unsigned char *)sbase + stride * (size_t)w + offset;
                for (long i = 0; i < size; i++) s[i] = byte_of(rank, it, w, i);
                MPI_Isend(s, (int)size, MPI_BYTE, peer, w, MPI_COMM_WORLD, &req[window + w]);
            }
            MPI_Waitall(2 * (int)window, req, st);
            for (int w = 0; w < window; w++) {
                unsigned char *r = (unsigned char *)rbase + stride * (size_t)w + offset;
                for (long i = 0; i < size; i++) bad += r[i] != byte_of(peer, it, w, i);
            }
        }
        t = (MPI_Wtime() - t0) / (double)iters;
        if (rank <= 1)
            CHECK(bad == 0, "bibw %ld bytes: %ld x %ld messages each way intact (%ld wrong bytes)",
                  size, iters, window, bad);
        if (rank == 0)
            printf("bibw: %ld bytes x %ld each way: %.0f cycles per iteration, %.2f MB/s both ways\n",
                   size, window, mc_cycles(t), t > 0 ? 2.0 * (double)window * (double)size / t / 1e6 : 0.0);
        if (size == max) break;
    }
    free(sbase);
    free(rbase);
    return mc_finish();
}
