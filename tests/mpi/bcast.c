/* MPI_Bcast, MPI_Alltoall and MPI_Alltoallv through each algorithm (BGLMPI_BCAST torus3,
 * torus1, mpich; BGLMPI_ALLTOALL torus, mpich, switched with setenv between
 * calls): every root, sizes across packet boundaries, a non-contiguous
 * datatype, sub-communicators (halves, even/odd ranks), content checked on
 * every rank. Prints the simulated cycles of one 64 KiB broadcast per
 * algorithm, on the world and on the sub-communicators. */
#include <string.h>

#include "mpi_check.h"

static unsigned char val(int root, size_t i, int round) { return (unsigned char)(root * 31 + i * 7 + round); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    static const char *const algos[] = {"torus3", "torus1", "mpich"};
    static const int sizes[] = {0, 1, 239, 240, 241, 1000, 70000};
    unsigned char *buf = malloc(70000 * 2);
    for (int a = 0; a < 3; a++) {
        setenv("BGLMPI_BCAST", algos[a], 1);
        int bad = 0, round = 0;
        for (int root = 0; root < n; root++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++, round++) {
                size_t len = (size_t)sizes[s];
                for (size_t i = 0; i < len; i++) buf[i] = rank == root ? val(root, i, round) : 0;
                MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
                for (size_t i = 0; i < len; i++) bad += buf[i] != val(root, i, round);
            }
        CHECK(!bad, "MPI_Bcast %s: every root, 0..70000 bytes, contents right", algos[a]);
        /* every other int of 1000: packed for the torus */
        MPI_Datatype vec;
        MPI_Type_vector(1000, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int *v = calloc(2000, sizeof(int));
        if (rank == n - 1)
            for (int i = 0; i < 2000; i++) v[i] = i;
        MPI_Bcast(v, 1, vec, n - 1, MPI_COMM_WORLD);
        int vbad = 0;
        for (int i = 0; i < 2000; i++) vbad += v[i] != (i % 2 == 0 || rank == n - 1 ? i : 0);
        CHECK(!vbad, "MPI_Bcast %s of a vector type (every other int of 2000), holes untouched", algos[a]);
        free(v);
        MPI_Type_free(&vec);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Bcast(buf, 65536, MPI_BYTE, 0, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0, tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("bcast: %s 64 KiB on %d ranks: %.0f cycles\n", algos[a], n, tmax * 700e6);
    }
    /* sub-communicators: the first and second half of the ranks (on 2x2x2,
     * the planes z = 0 and z = 1: boxes, so the deposit broadcast serves
     * them), then even and odd ranks (no box: MPICH's broadcast, the torus
     * alltoall); each split twice, so freed groups make room for new ones */
    for (int split = 0; split < 4; split++) {
        int color = split % 2 ? rank % 2 : rank < n / 2, sr, sn;
        const char *what = split % 2 ? "even/odd" : "first/second half";
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
        MPI_Comm_rank(sub, &sr);
        MPI_Comm_size(sub, &sn);
        for (int a = 0; a < 3; a += 2) {
            setenv("BGLMPI_BCAST", algos[a], 1);
            int bad = 0, round = split * 100;
            for (int root = 0; root < sn; root++)
                for (size_t len = 1; len <= 5000; len = len * 16 + 1, round++) {
                    for (size_t i = 0; i < len; i++) buf[i] = sr == root ? val(root + color, i, round) : 0;
                    MPI_Bcast(buf, (int)len, MPI_BYTE, root, sub);
                    for (size_t i = 0; i < len; i++) bad += buf[i] != val(root + color, i, round);
                }
            CHECK(!bad, "MPI_Bcast %s on %s communicators (%d ranks): every root, 1..4369 bytes", algos[a],
                  what, sn);
            MPI_Barrier(sub);
            double t0 = MPI_Wtime();
            MPI_Bcast(buf, 65536, MPI_BYTE, 0, sub);
            double t = MPI_Wtime() - t0, tmax;
            MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0 && split < 2)
                printf("bcast: %s %s 64 KiB on %d ranks: %.0f cycles\n", what, algos[a], sn, tmax * 700e6);
        }
        setenv("BGLMPI_ALLTOALL", "torus", 1);
        int per = 100, bad = 0;
        int *sb = malloc(sizeof(int) * (size_t)(sn * per)), *rb = malloc(sizeof(int) * (size_t)(sn * per));
        for (int d = 0; d < sn; d++)
            for (int k = 0; k < per; k++) sb[d * per + k] = sr * 7919 + d * 31 + k + color;
        MPI_Alltoall(sb, per, MPI_INT, rb, per, MPI_INT, sub);
        for (int q = 0; q < sn; q++)
            for (int k = 0; k < per; k++) bad += rb[q * per + k] != q * 7919 + sr * 31 + k + color;
        CHECK(!bad, "MPI_Alltoall torus on %s communicators (%d ranks), contents right", what, sn);
        free(sb), free(rb);
        MPI_Comm_free(&sub);
    }
    setenv("BGLMPI_BCAST", "torus3", 1);

    static const char *const a2a[] = {"torus", "mpich"};
    for (int a = 0; a < 2; a++) {
        setenv("BGLMPI_ALLTOALL", a2a[a], 1);
        int per = 300, bad = 0;
        int *sb = malloc(sizeof(int) * (size_t)(n * per)), *rb = malloc(sizeof(int) * (size_t)(n * per));
        for (int d = 0; d < n; d++)
            for (int k = 0; k < per; k++) sb[d * per + k] = rank * 7919 + d * 31 + k;
        MPI_Alltoall(sb, per, MPI_INT, rb, per, MPI_INT, MPI_COMM_WORLD);
        for (int s = 0; s < n; s++)
            for (int k = 0; k < per; k++) bad += rb[s * per + k] != s * 7919 + rank * 31 + k;
        CHECK(!bad, "MPI_Alltoall %s: %d ints per pair, contents right", a2a[a], per);
        free(sb), free(rb);
        /* alltoallv: rank s sends (s * 37 + d * 101) % 400 ints to d, blocks
         * 3 ints apart (gaps stay untouched) */
        MPI_Aint sc[64], sd[64], rc[64], rd[64], st = 0, rt = 0;
        for (int d = 0; d < n && d < 64; d++) {
            sc[d] = (rank * 37 + d * 101) % 400, sd[d] = st, st += sc[d] + 3;
            rc[d] = (d * 37 + rank * 101) % 400, rd[d] = rt, rt += rc[d] + 3;
        }
        int *vs = malloc(sizeof(int) * (size_t)st), *vr = malloc(sizeof(int) * (size_t)rt);
        for (int d = 0; d < n; d++)
            for (MPI_Aint k = 0; k < sc[d]; k++) vs[sd[d] + k] = rank * 100003 + d * 1009 + (int)k;
        for (MPI_Aint k = 0; k < rt; k++) vr[k] = -1;
        int isc[64], isd[64], irc[64], ird[64];
        for (int d = 0; d < n; d++) isc[d] = (int)sc[d], isd[d] = (int)sd[d], irc[d] = (int)rc[d], ird[d] = (int)rd[d];
        MPI_Alltoallv(vs, isc, isd, MPI_INT, vr, irc, ird, MPI_INT, MPI_COMM_WORLD);
        bad = 0;
        for (int q = 0; q < n; q++) {
            for (MPI_Aint k = 0; k < rc[q]; k++) bad += vr[rd[q] + k] != q * 100003 + rank * 1009 + (int)k;
            for (MPI_Aint k = rc[q]; k < rc[q] + 3 && rd[q] + k < rt; k++) bad += vr[rd[q] + k] != -1;
        }
        CHECK(!bad, "MPI_Alltoallv %s: uneven counts 0..399 ints, gaps between blocks untouched", a2a[a]);
        free(vs), free(vr);
    }
    free(buf);
    return mc_finish();
}
