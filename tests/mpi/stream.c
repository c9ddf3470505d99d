/* A one-way stream: rank 0 sends COUNT messages of SIZE bytes to rank 1
 * (MPI_Send / MPI_Recv, one after the other); rank 1 answers the last one
 * with an empty message, so the time covers delivery. Every byte is
 * checked; prints the simulated time and bandwidth (rank 0's MPI_Wtime).
 *   stream [--count N] [--offset B] [--check-last] [SIZE]
 *                                              (default 2 x 1 MiB, offset 16)
 * --check-last fills the buffer once and checks only the last message, so
 * that the host time is the emulation's, not the byte loops' (make bench
 * compares it with the engine alone); the simulated result is the same.
 * SIZE takes a K or M suffix. The buffers start B bytes past a 64-byte
 * boundary: the default 16 keeps rendezvous data on the main processor;
 * 0 makes them 32-byte aligned, so that in CO mode the coprocessor receives
 * it (parameter ml_coproc_align). Either way the addresses' alignment is
 * fixed, so the simulated result does not depend on the heap. */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static unsigned char byte_of(long msg, long i) { return (unsigned char)(i * 131 + msg * 29 + (i >> 9)); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long size = 1L << 20, count = 2, offset = 16;
    int check_last = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--count") && a + 1 < argc) count = parse_size(argv[++a]);
        else if (!strcmp(argv[a], "--offset") && a + 1 < argc) offset = parse_size(argv[++a]);
        else if (!strcmp(argv[a], "--check-last")) check_last = 1;
        else size = parse_size(argv[a]);
    }
    if (n < 2 || size < 0 || size > (1L << 30) || count < 1 || offset < 0 || offset > 63) {
        if (!rank)
            fprintf(stderr, "stream: usage: mpirun -np 2 stream [--count N] [--offset 0..63] [--check-last] [SIZE]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *base = aligned_alloc(64, ((size_t)size + (size_t)offset + 63) / 64 * 64 + 64);
    unsigned char *buf = (unsigned char *)base + offset;
    long bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long m = 0; m < count && rank <= 1; m++) {
        long pat = check_last ? 0 : m; /* the pattern of message m */
        int touch = !check_last || m == 0 || m == count - 1;
        if (rank == 0) {
            if (!check_last || m == 0)
                for (long i = 0; i < size; i++) buf[i] = byte_of(pat, i);
            MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        } else {
            if (touch) memset(buf, 0, (size_t)size);
            MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!check_last || m == count - 1)
                for (long i = 0; i < size; i++) bad += buf[i] != byte_of(pat, i);
        }
    }
    if (rank == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else if (rank == 1) MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 1) CHECK(bad == 0, "stream: %ld x %ld bytes received intact (%ld wrong%s)", count, size, bad,
                          check_last ? ", the last message checked" : "");
    if (rank == 0)
        printf("stream: %ld x %ld bytes one way: %.0f cycles, %.2f MB/s simulated\n", count, size,
               mc_cycles(t), t > 0 ? (double)count * (double)size / t / 1e6 : 0.0);
    free(base);
    return mc_finish();
}
