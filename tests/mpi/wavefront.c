/* The communication pattern of NPB LU (SSOR with pipelined wavefront
 * sweeps) on a 2-D process grid, as a small program of our own: the host
 * cost of a job whose ranks hand small messages to each other (issue 25).
 *
 * Each rank owns NX x NY x NZ points of 5 doubles (class A on 64 ranks:
 * 64^3 points on an 8x8 grid, 8 x 8 x 64 a rank). An iteration is
 *   - the rhs exchange (LU's exchange_3): two layers of the rank's faces,
 *     5 x 2 x NX x NZ doubles (40 KB: rendezvous) to and from each of its
 *     four grid neighbours, then a rhs-like computation on every point;
 *   - the lower sweep (blts): for every plane k = 1 .. NZ-2, receive
 *     5 x NX doubles from the north and 5 x NY from the west (320 B:
 *     eager, two packets), a block computation per point of the plane, send
 *     to the south and the east;
 *   - the upper sweep (buts): the same from the south-east corner back.
 * As in LU, the receives are MPI_Irecv + MPI_Wait and the sends MPI_Send.
 * Per iteration of class A that is 13,888 sweep messages and 224 rhs
 * messages, about 67,600 packets: LU.A.64's 16.9 M packets are 250 such
 * iterations. Default 2 iterations (134,528 packets).
 *   wavefront [--iters N] [--nx N] [--ny N] [--nz N]
 * Prints the checksum of the field, the message count and the host
 * seconds of the iterations (CLOCK_MONOTONIC: MPI_Wtime is simulated). */
#include <math.h> /* isfinite: a macro, no libm */
#include <string.h>
#include <time.h>

#include "mpi_check.h"

#define V 5 /* values a point */

static int nx = 8, ny = 8, nz = 64;
static double *u, *rsd;
#define U(i, j, k, m) u[((((size_t)(k) * (ny + 2) + (j)) * (nx + 2) + (i)) * V) + (m)]
#define R(i, j, k, m) rsd[((((size_t)(k) * ny + (j)) * nx + (i)) * V) + (m)]

static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A 5x5 block (fixed, diagonally dominant) times a 5-vector, added. */
static void block_mv(const double *x, double *y, double s)
{
    for (int a = 0; a < V; a++) {
        double t = 0;
        for (int b = 0; b < V; b++) t += (a == b ? 4.0 : 0.1 * (a + 1) / (b + 2)) * x[b];
        y[a] += s * t;
    }
}

/* One point of a sweep: three neighbour blocks, then a 5x5 solve by
 * Gaussian elimination of a fixed diagonally dominant block. */
static void point(int i, int j, int k, int di, int dj, int dk)
{
    double v[V] = {0};
    block_mv(&U(i - di, j, k, 0), v, -0.05);
    block_mv(&U(i, j - dj, k, 0), v, -0.05);
    block_mv(&U(i, j, k - dk, 0), v, -0.05);
    double a[V][V + 1];
    for (int r = 0; r < V; r++) {
        for (int c = 0; c < V; c++) a[r][c] = r == c ? 5.0 : 0.2 / (1 + r + c);
        a[r][V] = R(i - 1, j - 1, k, r) + v[r];
    }
    for (int p = 0; p < V; p++)
        for (int r = p + 1; r < V; r++) {
            double f = a[r][p] / a[p][p];
            for (int c = p; c <= V; c++) a[r][c] -= f * a[p][c];
        }
    for (int r = V - 1; r >= 0; r--) {
        double s = a[r][V];
        for (int c = r + 1; c < V; c++) s -= a[r][c] * U(i, j, k, c);
        U(i, j, k, r) = 0.5 * U(i, j, k, r) + 0.5 * s / a[r][r];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long iters = 2;
    for (int a = 1; a + 1 < argc; a += 2) {
        long v = parse_size(argv[a + 1]);
        if (!strcmp(argv[a], "--iters")) iters = v;
        else if (!strcmp(argv[a], "--nx")) nx = (int)v;
        else if (!strcmp(argv[a], "--ny")) ny = (int)v;
        else if (!strcmp(argv[a], "--nz")) nz = (int)v;
        else iters = -1;
    }
    if ((argc - 1) % 2 || iters < 1 || nx < 1 || ny < 1 || nz < 3 || nx > 4096 || ny > 4096 || nz > 4096) {
        if (!rank) fprintf(stderr, "wavefront: usage: mpirun -np N wavefront [--iters N] [--nx N] [--ny N] [--nz N]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dims[2] = {0, 0};
    MPI_Dims_create(n, 2, dims);
    int row = rank / dims[1], col = rank % dims[1];
    int north = row > 0 ? rank - dims[1] : MPI_PROC_NULL, south = row < dims[0] - 1 ? rank + dims[1] : MPI_PROC_NULL;
    int west = col > 0 ? rank - 1 : MPI_PROC_NULL, east = col < dims[1] - 1 ? rank + 1 : MPI_PROC_NULL;

    u = calloc((size_t)(nx + 2) * (ny + 2) * nz * V, sizeof(double));
    rsd = calloc((size_t)nx * ny * nz * V, sizeof(double));
    size_t face = (size_t)2 * V * (nx > ny ? nx : ny) * nz; /* doubles of two layers of a face */
    double *sb = malloc(4 * face * sizeof(double)), *rb = malloc(4 * face * sizeof(double));
    double *ns = malloc((size_t)V * nx * sizeof(double)), *ws = malloc((size_t)V * ny * sizeof(double));
    for (int k = 0; k < nz; k++)
        for (int j = 0; j <= ny + 1; j++)
            for (int i = 0; i <= nx + 1; i++)
                for (int m = 0; m < V; m++)
                    U(i, j, k, m) = 1.0 + 0.01 * ((rank * 7 + i * 3 + j * 5 + k + m) % 17);
    long sent = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = host_now();
    for (long it = 0; it < iters; it++) {
        /* rhs exchange: two layers of each face to the four neighbours */
        int nb[4] = {north, south, west, east};
        size_t len[4] = {(size_t)2 * V * nx * nz, (size_t)2 * V * nx * nz, (size_t)2 * V * ny * nz,
                         (size_t)2 * V * ny * nz};
        MPI_Request rq[8];
        int m = 0;
        for (int d = 0; d < 4; d++) {
            if (nb[d] == MPI_PROC_NULL) continue;
            MPI_Irecv(rb + d * face, (int)len[d], MPI_DOUBLE, nb[d], 100 + (d ^ 1), MPI_COMM_WORLD, &rq[m++]);
        }
        for (int d = 0; d < 4; d++) {
            if (nb[d] == MPI_PROC_NULL) continue;
            double *s = sb + d * face;
            for (size_t x = 0; x < len[d]; x++) s[x] = U(1 + (int)(x % nx), 1 + (int)(x / V % ny), (int)(x % nz), x % V);
            MPI_Isend(s, (int)len[d], MPI_DOUBLE, nb[d], 100 + d, MPI_COMM_WORLD, &rq[m++]);
            sent++;
        }
        MPI_Status st[8];
        MPI_Waitall(m, rq, st);
        /* rhs: a flux-like stencil on every point from the received faces */
        for (int k = 1; k < nz - 1; k++)
            for (int j = 1; j <= ny; j++)
                for (int i = 1; i <= nx; i++)
                    for (int c = 0; c < V; c++) {
                        double f = 0;
                        for (int r = 0; r < 16; r++) { /* LU's rhs: a few hundred flops a value */
                            double x = 0.1 * r + U(i, j, k, c) - 1.0, w = x - x * x * x / 6 + x * x * x * x * x / 120;
                            f += 0.01 * w * (U(i - 1, j, k, c) + U(i + 1, j, k, c) + U(i, j - 1, k, c) +
                                             U(i, j + 1, k, c) + U(i, j, k - 1, c) + U(i, j, k + 1, c)) / (1 + x * x);
                        }
                        R(i - 1, j - 1, k, c) = 0.05 * f + (m ? 1e-6 * rb[(size_t)(i + j + k) % face] : 0);
                    }
        /* lower sweep from the north-west, then upper sweep from the south-east */
        for (int sweep = 0; sweep < 2; sweep++) {
            int from1 = sweep ? south : north, from2 = sweep ? east : west;
            int to1 = sweep ? north : south, to2 = sweep ? west : east;
            int dd = sweep ? -1 : 1;
            for (int kk = 1; kk < nz - 1; kk++) {
                int k = sweep ? nz - 1 - kk : kk;
                MPI_Request r2[2];
                int jr = sweep ? ny + 1 : 0, ir = sweep ? nx + 1 : 0; /* ghost row / column */
                MPI_Irecv(ns, V * nx, MPI_DOUBLE, from1, 1 + sweep, MPI_COMM_WORLD, &r2[0]);
                MPI_Wait(&r2[0], MPI_STATUS_IGNORE);
                if (from1 != MPI_PROC_NULL) memcpy(&U(1, jr, k, 0), ns, (size_t)V * nx * sizeof(double));
                MPI_Irecv(ws, V * ny, MPI_DOUBLE, from2, 3 + sweep, MPI_COMM_WORLD, &r2[1]);
                MPI_Wait(&r2[1], MPI_STATUS_IGNORE);
                if (from2 != MPI_PROC_NULL)
                    for (int j = 1; j <= ny; j++) memcpy(&U(ir, j, k, 0), ws + (size_t)(j - 1) * V, V * sizeof(double));
                for (int jj = 1; jj <= ny; jj++)
                    for (int ii = 1; ii <= nx; ii++) {
                        int i = sweep ? nx + 1 - ii : ii, j = sweep ? ny + 1 - jj : jj;
                        point(i, j, k, dd, dd, dd);
                    }
                int js = sweep ? 1 : ny, is = sweep ? 1 : nx; /* the row / column the next ranks need */
                if (to1 != MPI_PROC_NULL) {
                    memcpy(ns, &U(1, js, k, 0), (size_t)V * nx * sizeof(double));
                    MPI_Send(ns, V * nx, MPI_DOUBLE, to1, 1 + sweep, MPI_COMM_WORLD);
                    sent++;
                }
                if (to2 != MPI_PROC_NULL) {
                    for (int j = 1; j <= ny; j++) memcpy(ws + (size_t)(j - 1) * V, &U(is, j, k, 0), V * sizeof(double));
                    MPI_Send(ws, V * ny, MPI_DOUBLE, to2, 3 + sweep, MPI_COMM_WORLD);
                    sent++;
                }
            }
        }
    }
    double t1 = host_now();
    double sum = 0;
    for (int k = 1; k < nz - 1; k++)
        for (int j = 1; j <= ny; j++)
            for (int i = 1; i <= nx; i++)
                for (int c = 0; c < V; c++) sum += U(i, j, k, c);
    double total;
    long msgs;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent, &msgs, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("wavefront: %dx%d ranks, %dx%dx%d points a rank, %ld iterations: checksum %.10e, %ld messages, "
               "host %.2f s\n", dims[0], dims[1], nx, ny, nz, iters, total, msgs, t1 - t0);
    CHECK(isfinite(total) || rank, "wavefront: checksum finite");
    free(u); free(rsd); free(sb); free(rb); free(ns); free(ws);
    return mc_finish();
}
