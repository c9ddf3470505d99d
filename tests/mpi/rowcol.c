/* The communication pattern of NPB CG (conjugate gradient on a 2-D
 * process grid) as a small program of our own: many small messages and
 * medium rendezvous messages between fixed partners, each rank waiting for
 * the one it needs next (issue 25).
 *
 * P = R^2 ranks (1, 4, 16, 64, 256) form an R x R grid, rows of R
 * consecutive ranks, as CG 3.4 places them when P is a power of four.
 * Each rank owns a vector piece of n = NA / R doubles (class A: NA 14,000,
 * so 1,750 doubles, 14 KB, on 64 ranks: rendezvous). An iteration is one
 * matrix-vector product of CG's conj_grad:
 *   - a sparse product of the rank's block (NNZ values a row) into w;
 *   - the row's sum of w, recursive doubling: for each bit i of the column,
 *     MPI_Irecv n doubles from the partner rank ^ 2^i, MPI_Send w to it,
 *     MPI_Wait, add;
 *   - the transpose exchange: MPI_Irecv / MPI_Send / MPI_Wait of n
 *     doubles with the rank at the transposed place of the grid (a rank on
 *     the diagonal sends to itself, as CG does);
 *   - two dot products (CG's p.q and r.r), each summed over the row the
 *     same way with one double a message.
 * On 64 ranks that is 4 messages of 14 KB and 6 of 8 bytes a rank and
 * iteration (60 % one-packet, 40 % rendezvous), about 250 packets; NPB
 * CG.A.64's 269,375 messages and 6.77 M packets are about 410 such
 * iterations. Default 25 iterations (one conj_grad).
 *   rowcol [--iters N] [--na N] [--nnz N]
 * Checks that the ranks of a row found the same sums, added over all
 * iterations (recursive doubling adds the same pairs on both sides, so
 * they agree to the bit) and that each rank received what its transpose partner sent,
 * and prints the checksum, the message count and the host seconds of the
 * iterations (CLOCK_MONOTONIC: MPI_Wtime is simulated). */
#include <math.h> /* isfinite: a macro, no libm */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* recursive doubling over the row: x (len values) becomes the row's sum */
static long row_sum(double *x, double *tmp, int len, int l2, int me, int tag)
{
    for (int i = 0; i < l2; i++) {
        MPI_Request rq;
        int partner = me ^ (1 << i);
        MPI_Irecv(tmp, len, MPI_DOUBLE, partner, tag + i, MPI_COMM_WORLD, &rq);
        MPI_Send(x, len, MPI_DOUBLE, partner, tag + i, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        for (int k = 0; k < len; k++) x[k] += tmp[k];
    }
    return l2;
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int k = 0; k < n; k++) s += a[k] * b[k];
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    long iters = 25, na = 14000, nnz = 16;
    for (int a = 1; a + 1 < argc; a += 2) {
        long v = parse_size(argv[a + 1]);
        if (!strcmp(argv[a], "--iters")) iters = v;
        else if (!strcmp(argv[a], "--na")) na = v;
        else if (!strcmp(argv[a], "--nnz")) nnz = v;
        else iters = -1;
    }
    int r = 1, l2 = 0;
    while (r * r < np) r *= 2, l2++;
    if ((argc - 1) % 2 || iters < 1 || nnz < 1 || nnz > 1024 || r * r != np || na < r || na % r ||
        na / r > (1 << 24)) {
        if (!me)
            fprintf(stderr, "rowcol: usage: mpirun -np P rowcol [--iters N] [--na N] [--nnz N] "
                            "(P a power of four; NA a multiple of sqrt(P))\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = (int)(na / r), row = me / r, col = me % r;
    int exch = col * r + row; /* the transposed place */
    double *a = malloc((size_t)n * (size_t)nnz * sizeof *a), *p = malloc((size_t)n * sizeof *p);
    double *w = malloc((size_t)n * sizeof *w), *q = malloc((size_t)n * sizeof *q);
    uint32_t *ci = malloc((size_t)n * (size_t)nnz * sizeof *ci);
    if (!a || !p || !w || !q || !ci) MPI_Abort(MPI_COMM_WORLD, 1);
    /* a fixed sparse block: values in [0.5, 1.5), columns spread by hashing */
    for (long k = 0; k < n * nnz; k++) {
        a[k] = 0.5 + (double)((k * 7 + me * 13) % 100) / 100.0;
        ci[k] = (uint32_t)(((uint64_t)k * 2654435761u + (uint64_t)me * 40503u) % (uint64_t)n);
    }
    for (int k = 0; k < n; k++) p[k] = 1.0;
    /* keeps p near 1: a row of w sums nnz products, the row's sum r of those */
    double scale = 1.0 / ((double)nnz * r);
    long sent = 0;
    double rho = 0, pq = 0;
    /* over all iterations: the row's sums of w (what goes to the transpose
     * partner), its dot products, and the sum of what came back from it */
    double sums[3] = {0, 0, 0}, got_sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = host_now();
    for (long it = 0; it < iters; it++) {
        for (int k = 0; k < n; k++) {
            const double *ak = a + (size_t)k * (size_t)nnz;
            const uint32_t *ck = ci + (size_t)k * (size_t)nnz;
            double s = 0;
            for (int j = 0; j < nnz; j++) s += ak[j] * p[ck[j]];
            w[k] = s;
        }
        sent += row_sum(w, q, n, l2, me, 10);
        double ws = 0, qs = 0;
        for (int k = 0; k < n; k++) ws += w[k];
        sums[0] += ws;
        if (l2) {
            MPI_Request rq;
            MPI_Irecv(q, n, MPI_DOUBLE, exch, 20, MPI_COMM_WORLD, &rq);
            MPI_Send(w, n, MPI_DOUBLE, exch, 20, MPI_COMM_WORLD);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            sent++;
        } else {
            memcpy(q, w, (size_t)n * sizeof *q);
        }
        for (int k = 0; k < n; k++) qs += q[k];
        got_sum += qs;
        pq = dot(p, q, n);
        sent += row_sum(&pq, &rho, 1, l2, me, 30);
        for (int k = 0; k < n; k++) p[k] = q[k] * scale;
        rho = dot(p, p, n);
        double t;
        sent += row_sum(&rho, &t, 1, l2, me, 40);
        sums[1] += pq;
        sums[2] += rho;
    }
    double t1 = host_now();
    /* the ranks of a row found the same sums, to the bit */
    MPI_Comm rowc;
    MPI_Comm_split(MPI_COMM_WORLD, row, col, &rowc);
    double lo[3], hi[3];
    MPI_Allreduce(sums, lo, 3, MPI_DOUBLE, MPI_MIN, rowc);
    MPI_Allreduce(sums, hi, 3, MPI_DOUBLE, MPI_MAX, rowc);
    MPI_Comm_free(&rowc);
    /* what the transpose partner says it sent is what this rank received */
    double partner_sent;
    MPI_Sendrecv(&sums[0], 1, MPI_DOUBLE, exch, 50, &partner_sent, 1, MPI_DOUBLE, exch, 50, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double total;
    long msgs;
    MPI_Reduce(&rho, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent, &msgs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!me)
        printf("rowcol: %d ranks (%dx%d grid), %d doubles a vector, %ld iterations: checksum %.10e, "
               "%ld messages (%zu and %zu bytes), host %.2f s\n", np, r, r, n, iters, total, msgs,
               (size_t)n * sizeof(double), sizeof(double), t1 - t0);
    CHECK(lo[0] == hi[0], "rowcol: the row's sums of w over all iterations agree to the bit");
    CHECK(lo[1] == hi[1] && lo[2] == hi[2], "rowcol: the row's dot products over all iterations agree to the bit");
    CHECK(got_sum == partner_sent, "rowcol: received from the transpose partner what it sent");
    CHECK(isfinite(rho) && rho > 0, "rowcol: dot product finite and positive");
    free(a); free(p); free(w); free(q); free(ci);
    return mc_finish();
}
