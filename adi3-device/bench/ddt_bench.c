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

static void usage(FILE *f)
{
    fprintf(f, "usage: ddt_bench [--min SIZE] [--max SIZE] [--step N] [--total SIZE] [--iters N]\n"
               "Ping-pong of TOTAL bytes (default 2M) as a vector of char blocks of MIN (128)\n"
               "to MAX (TOTAL) bytes, each STEP (4) times the last, stride twice the block, in\n"
               "each BGLMPI_DATATYPE mode and contiguous; ITERS (1) timed round trips after a\n"
               "warm-up. 2 ranks (CO: -shape 2x1x1; VN: -mode VN -shape 1x1x1). Prints\n"
               "simulated cycles per half round trip and host ms per round trip.\n"
               "       ddt_bench --kernels [--iters N]\n"
               "The same for layouts of application kernels (NAS MG faces, MILC, WRF, Specfem).\n");
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
