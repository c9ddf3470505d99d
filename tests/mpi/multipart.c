/* The communication pattern of NPB BT/SP (multi-partition ADI) on P = q^2
 * ranks, as a small program of our own: ranks hand rendezvous-sized
 * messages and their handshakes to each other (issue 25).
 *
 * Every rank owns q cells of C^3 points of 5 doubles (class A on 64
 * ranks: 64^3 points, q = 8 cells of 8^3 a rank), placed diagonally as in
 * BT, so each rank has a predecessor and a successor in each of the three
 * directions (its six neighbours). An iteration is
 *   - copy_faces: to and from each of the six neighbours, two layers of a
 *     cell face for each of its cells in one message, 2 x 5 x C^2 x q /
 *     FACEDIV doubles (FACEDIV 8: 5 KB), MPI_Irecv / MPI_Isend / MPI_Waitall;
 *   - x, y and z solve: q stages forward (receive the predecessor's
 *     elimination block for the cell, 22 x C^2 / LHSDIV doubles — LHSDIV 4:
 *     2.8 KB —, compute, send to the successor) and q stages back
 *     (5 x C^2 / 2 doubles: 1.3 KB), each stage an MPI_Irecv + MPI_Isend
 *     + MPI_Waitall.
 * Every message is above ml_eager_max (1000 bytes): all rendezvous (scout,
 * grant, data). Default 1 iteration (3,456 messages, 52,672 packets).
 *   multipart [--iters N] [--cell C]
 * Prints the checksum, the message count and the host seconds of the
 * iterations (CLOCK_MONOTONIC: MPI_Wtime is simulated). */
#include <math.h> /* isfinite: a macro, no libm */
#include <string.h>
#include <time.h>

#include "mpi_check.h"

#define V 5

static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A line solve's worth of work on n values: a few flops each. */
static double work(double *a, size_t n, const double *in, size_t nin, double s)
{
    double acc = 0;
    for (size_t x = 0; x < n; x++) {
        double v = 0.9 * a[x] + 0.1 * in[x % nin] * s;
        for (int r = 0; r < 6; r++) v = v - 0.01 * v * v / (1 + v * v);
        a[x] = v;
        acc += v;
    }
    return acc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long iters = 1, cell = 8;
    for (int a = 1; a + 1 < argc; a += 2) {
        long v = parse_size(argv[a + 1]);
        if (!strcmp(argv[a], "--iters")) iters = v;
        else if (!strcmp(argv[a], "--cell")) cell = v;
        else iters = -1;
    }
    int q = 1;
    while ((q + 1) * (q + 1) <= n) q++;
    if ((argc - 1) % 2 || iters < 1 || cell < 2 || cell > 256 || q * q != n) {
        if (!rank) fprintf(stderr, "multipart: usage: mpirun -np Q*Q multipart [--iters N] [--cell C]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int i = rank % q, j = rank / q;
    /* BT's successors and predecessors in x, y, z on the q x q grid */
    int succ[3] = {(i + 1) % q + q * j, i + q * ((j + 1) % q), (i + q - 1) % q + q * ((j + 1) % q)};
    int pred[3] = {(i + q - 1) % q + q * j, i + q * ((j + q - 1) % q), (i + 1) % q + q * ((j + q - 1) % q)};
    size_t c2 = (size_t)(cell * cell), pts = c2 * (size_t)cell * (size_t)q;
    size_t facelen = 2 * V * c2 * (size_t)q / 8, fwdlen = 22 * c2 / 4, bwdlen = V * c2 / 2;
    double *field = malloc(pts * V * sizeof(double));
    double *sb = malloc(6 * facelen * sizeof(double)), *rb = malloc(6 * facelen * sizeof(double));
    double *fs = malloc(fwdlen * sizeof(double)), *fr = malloc(fwdlen * sizeof(double));
    for (size_t x = 0; x < pts * V; x++) field[x] = 1.0 + 0.001 * (double)((x * 7 + (size_t)rank * 13) % 101);
    for (size_t x = 0; x < fwdlen; x++) fs[x] = fr[x] = 0;
    long sent = 0;
    double acc = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = host_now();
    for (long it = 0; it < iters; it++) {
        /* copy_faces */
        MPI_Request rq[12];
        MPI_Status st[12];
        int m = 0;
        for (int d = 0; d < 3; d++) {
            MPI_Irecv(rb + (2 * d) * facelen, (int)facelen, MPI_DOUBLE, pred[d], 10 + d, MPI_COMM_WORLD, &rq[m++]);
            MPI_Irecv(rb + (2 * d + 1) * facelen, (int)facelen, MPI_DOUBLE, succ[d], 20 + d, MPI_COMM_WORLD, &rq[m++]);
        }
        for (int d = 0; d < 3; d++) {
            for (int h = 0; h < 2; h++) {
                double *s = sb + (2 * d + h) * facelen;
                for (size_t x = 0; x < facelen; x++) s[x] = field[(x * 3 + (size_t)d) % (pts * V)];
            }
            MPI_Isend(sb + (2 * d) * facelen, (int)facelen, MPI_DOUBLE, succ[d], 10 + d, MPI_COMM_WORLD, &rq[m++]);
            MPI_Isend(sb + (2 * d + 1) * facelen, (int)facelen, MPI_DOUBLE, pred[d], 20 + d, MPI_COMM_WORLD, &rq[m++]);
            sent += 2;
        }
        MPI_Waitall(m, rq, st);
        /* compute_rhs on every point */
        acc += work(field, pts * V, rb, 6 * facelen, 1e-3);
        /* x, y, z solves: q stages forward, q back, one cell each */
        for (int d = 0; d < 3; d++) {
            for (int back = 0; back < 2; back++) {
                int from = back ? succ[d] : pred[d], to = back ? pred[d] : succ[d];
                size_t len = back ? bwdlen : fwdlen;
                for (int stage = 0; stage < q; stage++) {
                    MPI_Request r2[2];
                    MPI_Irecv(fr, (int)len, MPI_DOUBLE, from, 30 + 2 * d + back, MPI_COMM_WORLD, &r2[0]);
                    /* the cell's lines (stage 0 needs nothing received in BT; kept uniform here) */
                    double *cellp = field + (size_t)stage * c2 * (size_t)cell * V;
                    acc += work(cellp, c2 * (size_t)cell * V / (back ? 4 : 1), fr, len, 1e-3);
                    for (size_t x = 0; x < len; x++) fs[x] = cellp[x % (c2 * (size_t)cell * V)];
                    MPI_Isend(fs, (int)len, MPI_DOUBLE, to, 30 + 2 * d + back, MPI_COMM_WORLD, &r2[1]);
                    sent++;
                    MPI_Waitall(2, r2, st);
                }
            }
        }
    }
    double t1 = host_now();
    double total;
    long msgs;
    MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent, &msgs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("multipart: %d ranks, %d cells of %ld^3 a rank, %ld iterations: checksum %.10e, %ld messages "
               "(%zu, %zu, %zu bytes), host %.2f s\n", n, q, cell, iters, total, msgs, facelen * sizeof(double),
               fwdlen * sizeof(double), bwdlen * sizeof(double), t1 - t0);
    CHECK(isfinite(total) || rank, "multipart: checksum finite");
    free(field); free(sb); free(rb); free(fs); free(fr);
    return mc_finish();
}
