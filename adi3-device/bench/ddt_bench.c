/* ddt_bench: derived-datatype ping-pong in the style of DDTBench and
 * FALCON-X's microbenchmark. Rank 0 and rank 1 exchange `total` bytes laid
 * out as a vector of char blocks (block sizes min..max, stride twice the
 * block), once per BGLMPI_DATATYPE mode (pack, zerocopy, memo: the netmod
 * reads it per call), and the same bytes contiguous. For each, after one
 * warm-up round trip (which fills the memo cache), `iters` round trips:
 * simulated cycles per half round trip (MPI_Wtime is simulated time) and
 * host wall time per round trip. Run it with 2 ranks: CO over one torus link
 * (-shape 2x1x1) or VN within a node (-mode VN -shape 1x1x1). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "messagelayer/ml_size.h"

static const char *const modes[] = {"pack", "zerocopy", "memo"};


static double host_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One round trip of count x t at buf; returns nothing, times outside. */
static void round_trip(int rank, char *buf, int count, MPI_Datatype t)
{
    if (rank == 0) {
        MPI_Send(buf, count, t, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, count, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, count, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, count, t, 0, 0, MPI_COMM_WORLD);
    }
}

/* cycles per half round trip and host seconds per round trip */
static void measure(int rank, char *buf, int count, MPI_Datatype t, int iters, double *cyc,
                    double *host)
{
    MPI_Barrier(MPI_COMM_WORLD);
    round_trip(rank, buf, count, t); /* warm-up: translations cached (memo) */
    MPI_Barrier(MPI_COMM_WORLD);
    double w0 = host_now(), t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) round_trip(rank, buf, count, t);
    double t1 = MPI_Wtime(), w1 = host_now();
    *cyc = (t1 - t0) * 700e6 / (2.0 * iters);
    *host = (w1 - w0) / iters;
}

/* Layouts like the application kernels DDTBench and FALCON-X use. */
typedef struct kernel {
    const char *name;
    MPI_Datatype t;
} kernel;

static int make_kernels(kernel *k)
{
    int n = 0, sz3[3] = {64, 64, 64};
    /* NAS MG: faces of a 64^3 array of doubles */
    int sub_x[3] = {64, 64, 1}, sub_y[3] = {64, 1, 64}, at0[3] = {0, 0, 0};
    MPI_Type_create_subarray(3, sz3, sub_x, at0, MPI_ORDER_C, MPI_DOUBLE, &k[n].t);
    k[n++].name = "NAS MG x face (subarray, 4096 x 8 B)";
    MPI_Type_create_subarray(3, sz3, sub_y, at0, MPI_ORDER_C, MPI_DOUBLE, &k[n].t);
    k[n++].name = "NAS MG y face (subarray, 64 x 512 B)";
    /* MILC: su3 vectors (6 doubles) of the even sites, four directions */
    MPI_Datatype su3, even;
    MPI_Type_contiguous(6, MPI_DOUBLE, &su3);
    MPI_Type_vector(1024, 1, 2, su3, &even);
    MPI_Type_create_hvector(4, 1, 2048 * 48, even, &k[n].t);
    MPI_Type_free(&su3), MPI_Type_free(&even);
    k[n++].name = "MILC even-site su3 (hvector/vector/contig, 4096 x 48 B)";
    /* WRF: a 4-wide halo of a 128 x 64 float plane, over 32 levels */
    MPI_Datatype plane;
    MPI_Type_vector(64, 4, 128, MPI_FLOAT, &plane);
    MPI_Type_create_hvector(32, 1, 128 * 64 * 4, plane, &k[n].t);
    MPI_Type_free(&plane);
    k[n++].name = "WRF halo (hvector of vector, 2048 x 16 B)";
    /* Specfem: irregular blocks of doubles (1..16) with irregular gaps */
    int bl[4096], disp[4096], at = 0;
    unsigned r = 12345;
    for (int i = 0; i < 4096; i++) {
        r = r * 1103515245u + 12345u;
        bl[i] = 1 + (int)(r >> 16) % 16;
        disp[i] = at;
        at += bl[i] + (int)(r >> 24) % 17;
    }
    MPI_Type_indexed(4096, bl, disp, MPI_DOUBLE, &k[n].t);
    k[n++].name = "Specfem indexed (4096 irregular blocks of doubles)";
    for (int i = 0; i < n; i++) MPI_Type_commit(&k[i].t);
    return n;
}

static void run_kernels(int rank, int iters)
{
    kernel k[8];
    int n = make_kernels(k);
    if (!rank)
        printf("# ddt_bench --kernels: simulated cycles per half round trip\n"
               "# %-56s %8s %11s %11s %11s %11s %9s %9s\n", "layout", "bytes", "contiguous", "pack",
               "zerocopy", "memo", "pack/zc", "pack/memo");
    for (int i = 0; i < n; i++) {
        MPI_Aint lb, extent;
        int size;
        MPI_Type_get_extent(k[i].t, &lb, &extent);
        MPI_Type_size(k[i].t, &size);
        char *buf = calloc((size_t)(extent > size ? extent : size) + 64, 1);
        double c, h, cyc[3], host[3];
        unsetenv("BGLMPI_DATATYPE");
        measure(rank, buf, size, MPI_BYTE, iters, &c, &h);
        for (int m = 0; m < 3; m++) {
            setenv("BGLMPI_DATATYPE", modes[m], 1);
            measure(rank, buf, 1, k[i].t, iters, &cyc[m], &host[m]);
        }
        unsetenv("BGLMPI_DATATYPE");
        if (!rank)
            printf("  %-56s %8d %11.0f %11.0f %11.0f %11.0f %8.2fx %8.2fx\n", k[i].name, size, c,
                   cyc[0], cyc[1], cyc[2], cyc[0] / cyc[1], cyc[0] / cyc[2]);
        fflush(stdout);
        free(buf);
        MPI_Type_free(&k[i].t);
    }
}

/* ---- alltoall: a zero-copy Bruck alltoall built on datatypes ----------
 * (EPiGRAM's: the local rotations and reorganisations of Bruck's algorithm
 * become derived datatypes instead of copies; p2p over MPI_Sendrecv)
 * against MPI_Alltoall with contiguous buffers, and the torus alltoall of a
 * non-contiguous type. Bruck: block i of rank r (the data for r + i) is
 * sent at every step k whose bit is set in i, to r + 2^k; after the last,
 * block i holds what rank r - i sent r. Here no block is ever moved by a
 * copy: block i starts where it lies in the send buffer (the rotation is an
 * address), each step's blocks are one hindexed type of absolute addresses
 * (MPI_BOTTOM) on both sides, a block received at an intermediate step
 * lands in one of two scratch areas (never the one it is sent from), and
 * at its last step straight into its final place in the receive buffer
 * (the inverse rotation is an address too). The types are built once per
 * buffer set, as a persistent collective would, so memo finds them cached. */
typedef struct bruck {
    int n, steps;
    MPI_Datatype st[16], rt[16]; /* per step: the blocks sent, the blocks received */
    int to[16], from[16];
} bruck;

static void bruck_plan(bruck *b, int rank, int n, char *sbuf, char *rbuf, char *scr[2], size_t bs)
{
    char **loc = malloc(sizeof *loc * (size_t)n);
    int *par = calloc((size_t)n, sizeof *par);
    MPI_Aint *sd = malloc(sizeof *sd * (size_t)n), *rd = malloc(sizeof *rd * (size_t)n);
    for (int i = 0; i < n; i++) loc[i] = sbuf + (size_t)((rank + i) % n) * bs;
    b->n = n, b->steps = 0;
    for (int pof2 = 1; pof2 < n; pof2 *= 2, b->steps++) {
        int k = b->steps, c = 0;
        for (int i = 1; i < n; i++) {
            if (!(i & pof2)) continue;
            MPI_Get_address(loc[i], &sd[c]);
            /* its last step: straight to where the inverse rotation puts it */
            char *dst = 2 * pof2 > i ? rbuf + (size_t)((rank - i + n) % n) * bs
                                     : scr[par[i]] + (size_t)i * bs;
            par[i] ^= 1;
            MPI_Get_address(dst, &rd[c++]);
            loc[i] = dst;
        }
        MPI_Type_create_hindexed_block(c, (int)bs, sd, MPI_BYTE, &b->st[k]);
        MPI_Type_create_hindexed_block(c, (int)bs, rd, MPI_BYTE, &b->rt[k]);
        MPI_Type_commit(&b->st[k]);
        MPI_Type_commit(&b->rt[k]);
        b->to[k] = (rank + pof2) % n, b->from[k] = (rank - pof2 + n) % n;
    }
    free(loc), free(par), free(sd), free(rd);
}

static void bruck_run(const bruck *b, int rank, const char *sbuf, char *rbuf, size_t bs)
{
    memcpy(rbuf + (size_t)rank * bs, sbuf + (size_t)rank * bs, bs); /* block 0: its own */
    for (int k = 0; k < b->steps; k++)
        MPI_Sendrecv(MPI_BOTTOM, 1, b->st[k], b->to[k], k, MPI_BOTTOM, 1, b->rt[k], b->from[k], k,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void bruck_free(bruck *b)
{
    for (int k = 0; k < b->steps; k++) MPI_Type_free(&b->st[k]), MPI_Type_free(&b->rt[k]);
}

static unsigned char a2a_pat(int s, int d, size_t i) { return (unsigned char)(s * 29 + d * 7 + i * 3 + 1); }

/* Simulated cycles of one call of what (the slowest rank), after a warm-up
 * call and a barrier. */
enum { A2A_CONTIG, A2A_BRUCK, A2A_VECTOR };
static double a2a_time(int what, int rank, int n, const bruck *b, char *sbuf, char *rbuf, size_t bs,
                       MPI_Datatype vec, int iters)
{
    double t = 0, mx;
    for (int it = -1; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (what == A2A_CONTIG) MPI_Alltoall(sbuf, (int)bs, MPI_BYTE, rbuf, (int)bs, MPI_BYTE, MPI_COMM_WORLD);
        else if (what == A2A_BRUCK) bruck_run(b, rank, sbuf, rbuf, bs);
        else MPI_Alltoall(sbuf, 1, vec, rbuf, 1, vec, MPI_COMM_WORLD);
        if (it >= 0) t += MPI_Wtime() - t0;
    }
    (void)n;
    t /= iters;
    MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx * 700e6;
}

/* Did every rank get every block right (contiguous layout of bs per pair)? */
static size_t vec_blk(size_t bs) { return bs < 256 ? bs / 2 : 128; }

/* byte i of a block laid out as the vector (blk bytes at a 2 blk stride) */
static size_t vec_at(size_t i, size_t blk) { return i / blk * 2 * blk + i % blk; }

static int a2a_ok(int rank, int n, const char *rbuf, size_t bs, size_t stride)
{
    int bad = 0;
    for (int s = 0; s < n; s++)
        for (size_t i = 0; i < bs; i++)
            bad += (unsigned char)rbuf[(size_t)s * stride + (stride == bs ? i : vec_at(i, vec_blk(bs)))] !=
                   a2a_pat(s, rank, i);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return all == 0;
}

static void run_a2a(int rank, int n, int iters)
{
    static const size_t sizes[] = {64, 256, 1024, 8192, 32768};
    if (!rank)
        printf("# ddt_bench --alltoall: %d ranks, simulated cycles per alltoall (the slowest rank)\n"
               "# %8s %11s | %11s %11s %11s | %11s %11s %11s\n"
               "# %8s %11s | %35s | %35s\n",
               n, "per pair", "contiguous", "pack", "zerocopy", "memo", "pack", "zerocopy", "memo", "",
               "MPI_Alltoall", "Bruck on datatypes (MPI_Sendrecv)", "MPI_Alltoall of a vector (b / 2b)");
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t bs = sizes[si];
        char *sbuf = malloc(bs * (size_t)n * 2), *rbuf = malloc(bs * (size_t)n * 2), *scr[2];
        scr[0] = malloc(bs * (size_t)n), scr[1] = malloc(bs * (size_t)n);
        for (int d = 0; d < n; d++)
            for (size_t i = 0; i < bs; i++) sbuf[(size_t)d * bs + i] = (char)a2a_pat(rank, d, i);
        double contig = a2a_time(A2A_CONTIG, rank, n, NULL, sbuf, rbuf, bs, MPI_DATATYPE_NULL, iters);
        int ok = a2a_ok(rank, n, rbuf, bs, bs);
        bruck b;
        bruck_plan(&b, rank, n, sbuf, rbuf, scr, bs);
        double br[3], vc[3];
        for (int m = 0; m < 3; m++) {
            setenv("BGLMPI_DATATYPE", modes[m], 1);
            memset(rbuf, 0, bs * (size_t)n);
            br[m] = a2a_time(A2A_BRUCK, rank, n, &b, sbuf, rbuf, bs, MPI_DATATYPE_NULL, iters);
            ok &= a2a_ok(rank, n, rbuf, bs, bs);
        }
        bruck_free(&b);
        /* the same bytes as blocks of b = 128 bytes (half the block below
         * 256) at a stride of 2b */
        MPI_Datatype v0, vec;
        size_t blk = vec_blk(bs);
        MPI_Type_vector((int)(bs / blk), (int)blk, (int)(2 * blk), MPI_BYTE, &v0);
        MPI_Type_create_resized(v0, 0, (MPI_Aint)(2 * bs), &vec);
        MPI_Type_commit(&vec);
        MPI_Type_free(&v0);
        for (int d = 0; d < n; d++)
            for (size_t i = 0; i < bs; i++) sbuf[(size_t)d * 2 * bs + vec_at(i, blk)] = (char)a2a_pat(rank, d, i);
        for (int m = 0; m < 3; m++) {
            setenv("BGLMPI_DATATYPE", modes[m], 1);
            memset(rbuf, 0, 2 * bs * (size_t)n);
            vc[m] = a2a_time(A2A_VECTOR, rank, n, NULL, sbuf, rbuf, bs, vec, iters);
            ok &= a2a_ok(rank, n, rbuf, bs, 2 * bs);
        }
        unsetenv("BGLMPI_DATATYPE");
        MPI_Type_free(&vec);
        if (!rank)
            printf("  %8zu %11.0f | %11.0f %11.0f %11.0f | %11.0f %11.0f %11.0f%s\n", bs, contig, br[0], br[1], br[2],
                   vc[0], vc[1], vc[2], ok ? "" : "  DATA WRONG");
        fflush(stdout);
        free(sbuf), free(rbuf), free(scr[0]), free(scr[1]);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ddt_bench [--min SIZE] [--max SIZE] [--step N] [--total SIZE] [--iters N]\n"
               "Ping-pong of TOTAL bytes (default 2M) as a vector of char blocks of MIN (128)\n"
               "to MAX (TOTAL) bytes, each STEP (4) times the last, stride twice the block, in\n"
               "each BGLMPI_DATATYPE mode and contiguous; ITERS (1) timed round trips after a\n"
               "warm-up. 2 ranks (CO: -shape 2x1x1; VN: -mode VN -shape 1x1x1). Prints\n"
               "simulated cycles per half round trip and host ms per round trip.\n"
               "       ddt_bench --kernels [--iters N]\n"
               "The same for layouts of application kernels (NAS MG faces, MILC, WRF, Specfem).\n"
               "       ddt_bench --alltoall [--iters N]\n"
               "Any number of ranks (16: -np 16 -shape 4x2x2): MPI_Alltoall of contiguous blocks\n"
               "(64 B to 32 KiB per pair), a zero-copy Bruck alltoall built on datatypes over\n"
               "MPI_Sendrecv, and MPI_Alltoall of a vector type, per mode; simulated cycles.\n");
}

int main(int argc, char **argv)
{
    size_t min = 128, max = 0, total = 2u << 20, step = 4;
    int iters = 1, kernels = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--kernels")) {
            kernels = 1;
            continue;
        }
        if (!strcmp(argv[i], "--alltoall")) {
            kernels = 2;
            continue;
        }
        size_t v;
        if (i + 1 >= argc || ml_parse_size(argv[i + 1], &v) != 0 || !v) {
            fprintf(stderr, "ddt_bench: bad option or value '%s'; see --help\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--min")) min = v;
        else if (!strcmp(argv[i], "--max")) max = v;
        else if (!strcmp(argv[i], "--total")) total = v;
        else if (!strcmp(argv[i], "--step") && v > 1) step = v;
        else if (!strcmp(argv[i], "--iters")) iters = (int)v;
        else {
            fprintf(stderr, "ddt_bench: bad option or value '%s'; see --help\n", argv[i]);
            return 2;
        }
        i++;
    }
    if (!max || max > total) max = total;
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (kernels == 2) {
        run_a2a(rank, np, iters);
        MPI_Finalize();
        return 0;
    }
    if (np != 2) {
        if (!rank) fprintf(stderr, "ddt_bench: run with 2 ranks (got %d)\n", np);
        MPI_Finalize();
        return 2;
    }
    if (kernels) {
        run_kernels(rank, iters);
        MPI_Finalize();
        return 0;
    }
    char *buf = calloc(2 * total, 1);
    double ccyc[3], chost[3];
    for (int m = 0; m < 3; m++) { /* contiguous data: the mode must not matter */
        setenv("BGLMPI_DATATYPE", modes[m], 1);
        measure(rank, buf, (int)total, MPI_CHAR, iters, &ccyc[m], &chost[m]);
    }
    if (!rank) {
        printf("# ddt_bench: %zu bytes as a vector of char blocks (stride 2 x block); simulated "
               "cycles per half round trip, host ms per round trip\n", total);
        printf("# contiguous: pack %.0f %.1f ms, zerocopy %.0f %.1f ms, memo %.0f %.1f ms\n", ccyc[0],
               chost[0] * 1e3, ccyc[1], chost[1] * 1e3, ccyc[2], chost[2] * 1e3);
        printf("# %9s %11s %7s %11s %7s %11s %7s %14s %10s\n", "block", "pack", "ms", "zerocopy",
               "ms", "memo", "ms", "pack/zerocopy", "pack/memo");
    }
    for (size_t b = min; b <= max; b *= step) {
        MPI_Datatype v;
        MPI_Type_vector((int)(total / b), (int)b, (int)(2 * b), MPI_CHAR, &v);
        MPI_Type_commit(&v);
        double cyc[3], host[3];
        for (int m = 0; m < 3; m++) {
            setenv("BGLMPI_DATATYPE", modes[m], 1);
            measure(rank, buf, 1, v, iters, &cyc[m], &host[m]);
        }
        unsetenv("BGLMPI_DATATYPE");
        MPI_Type_free(&v);
        if (!rank)
            printf("  %9zu %11.0f %7.1f %11.0f %7.1f %11.0f %7.1f %13.2fx %9.2fx\n", b, cyc[0],
                   host[0] * 1e3, cyc[1], host[1] * 1e3, cyc[2], host[2] * 1e3, cyc[0] / cyc[1],
                   cyc[0] / cyc[2]);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
