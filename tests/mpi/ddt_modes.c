/* Derived datatypes in each BGLMPI_DATATYPE mode (pack, zerocopy, memo; the
 * netmod reads it per call, so this program switches it between phases):
 * vector, indexed, struct, subarray and resized types at one-packet, eager,
 * rendezvous and beyond-pack-buffer sizes, sender and receiver using
 * different layouts of one type signature, received as posted and as
 * unexpected messages, zero bytes, a truncated receive, and the type-reuse
 * hazard of the layout cache (a freed type's handle taken by a different
 * type). Every byte is checked, gaps included. 2 ranks (CO or VN). */
#include <stddef.h>
#include <string.h>

#include "mpi_check.h"

static const char *const modes[] = {"pack", "zerocopy", "memo"};

static unsigned char pat(size_t i, int round) { return (unsigned char)(i * 7 + round * 13 + 1); }

/* count x type over span bytes, packed: what the type selects, in order */
static unsigned char *packed(void *base, int count, MPI_Datatype t, int *len)
{
    int sz;
    MPI_Pack_size(count, t, MPI_COMM_SELF, &sz);
    unsigned char *p = malloc((size_t)sz + 1);
    *len = 0;
    MPI_Pack(base, count, t, p, sz, len, MPI_COMM_SELF);
    return p;
}

/* Rank 0 sends scount x st, rank 1 receives rcount x rt (posted first, or
 * unexpected: after the message has arrived). Checks that the bytes rt
 * selects equal the bytes st selected, and that nothing else changed. */
static void xfer(int rank, const char *mode, const char *what, MPI_Datatype st, int scount,
                 MPI_Datatype rt, int rcount, size_t span, int unexpected, int round)
{
    unsigned char *buf = malloc(span + 8), *p = buf + (round & 3);
    if (rank == 0) {
        for (size_t i = 0; i < span; i++) p[i] = pat(i, round);
        if (unexpected) {
            MPI_Send(p, scount, st, 1, round, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(p, scount, st, 1, round, MPI_COMM_WORLD);
        }
    } else if (rank == 1) {
        memset(p, 0xee, span);
        MPI_Request q;
        MPI_Status s;
        if (unexpected) { /* the message is here before the receive */
            int flag = 0;
            while (!flag) MPI_Iprobe(0, round, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            MPI_Irecv(p, rcount, rt, 0, round, MPI_COMM_WORLD, &q);
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Irecv(p, rcount, rt, 0, round, MPI_COMM_WORLD, &q);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        MPI_Wait(&q, &s);
        unsigned char *src = malloc(span + 8), *mark = malloc(span + 8);
        for (size_t i = 0; i < span; i++) src[i] = pat(i, round);
        int la, lb, lm, n;
        unsigned char *a = packed(src, scount, st, &la), *b = packed(p, rcount, rt, &lb);
        /* the gaps: bytes rt does not select keep their 0xee */
        memset(mark, 0, span);
        unsigned char *ones = malloc((size_t)lb + 1);
        memset(ones, 1, (size_t)lb + 1);
        int pos = 0;
        MPI_Unpack(ones, lb, &pos, mark, rcount, rt, MPI_COMM_SELF);
        size_t gaps = 0, badgap = 0;
        for (size_t i = 0; i < span; i++)
            if (!mark[i]) gaps++, badgap += p[i] != 0xee;
        lm = la;
        MPI_Get_count(&s, MPI_BYTE, &n);
        CHECK(la == lb && !memcmp(a, b, (size_t)la) && n == lm && !badgap,
              "%s: %s%s: %d bytes in place, %zu gap bytes untouched", mode, what,
              unexpected ? " (unexpected)" : "", la, gaps);
        free(src), free(mark), free(a), free(b), free(ones);
    }
    free(buf);
}

/* The type-reuse hazard: a vector type is sent (its layout cached), freed,
 * and a different type created — MPICH hands out the freed handle again —
 * with the same size, extent and count, only the places differ, and sent
 * from the same buffer: the data must follow the new type. */
static void reuse(int rank, const char *mode, int round)
{
    enum { N = 4096 };
    int *buf = malloc(sizeof(int) * 2 * N), *disp = malloc(sizeof(int) * N), *at = malloc(sizeof(int) * N);
    MPI_Datatype t1, t2 = MPI_DATATYPE_NULL;
    MPI_Type_vector(N, 1, 2, MPI_INT, &t1); /* ints 0, 2, 4, ..., 2N-2 */
    MPI_Type_commit(&t1);
    MPI_Datatype first = t1;
    for (int k = 0; k < 2; k++) {
        MPI_Datatype t = t1;
        for (int i = 0; i < N; i++) at[i] = 2 * i;
        if (k == 1) { /* ints 0, 3, 5, ..., 2N-3, 2N-2: same size and extent */
            MPI_Type_free(&t1);
            for (int i = 0; i < N; i++) disp[i] = i == 0 ? 0 : i == N - 1 ? 2 * N - 2 : 2 * i + 1;
            MPI_Type_create_indexed_block(N, 1, disp, MPI_INT, &t2);
            MPI_Type_commit(&t2);
            t = t2;
            memcpy(at, disp, sizeof(int) * N);
        }
        if (rank == 0) {
            for (int i = 0; i < 2 * N; i++) buf[i] = -7;
            for (int i = 0; i < N; i++) buf[at[i]] = i + 100 * k;
            MPI_Send(buf, 1, t, 1, round + k, MPI_COMM_WORLD);
        } else if (rank == 1) {
            for (int i = 0; i < 2 * N; i++) buf[i] = -1;
            MPI_Recv(buf, 1, t, 0, round + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int i = 0; i < N; i++) bad += buf[at[i]] != i + 100 * k, buf[at[i]] = -1;
            for (int i = 0; i < 2 * N; i++) bad += buf[i] != -1;
            if (k == 0)
                CHECK(!bad, "%s: type reuse: vector of every other int sent and received, %d wrong",
                      mode, bad);
            else
                CHECK(!bad, "%s: type reuse: freed, an indexed type of the same size and extent "
                      "created (%s handle), sent again: %d wrong", mode,
                      t == first ? "the same" : "another", bad);
        }
    }
    MPI_Type_free(&t2);
    free(buf), free(disp), free(at);
}

/* MPIDIG unpacks an unexpected message into a non-contiguous receive as the
 * receive is posted, in every mode: that copy is charged. The same 8000
 * bytes, arrived before their receive, take at least 2000 segments'
 * ddt_seg_cycles (20) longer into 2000 ints of a vector than into 2000
 * contiguous ints (uncharged, the two took the same time). */
static void unexp_cost(int rank, const char *mode, int round)
{
    enum { N = 2000 };
    int *b = malloc(sizeof(int) * 2 * N), bad = 0;
    MPI_Datatype v;
    MPI_Type_vector(N, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    double took[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        if (rank == 0) {
            for (int i = 0; i < N; i++) b[i] = i + k;
            MPI_Send(b, N, MPI_INT, 1, round + k, MPI_COMM_WORLD);
        } else if (rank == 1) {
            int flag = 0;
            for (int i = 0; i < 2 * N; i++) b[i] = -1;
            while (!flag) MPI_Iprobe(0, round + k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            double t0 = MPI_Wtime();
            MPI_Recv(b, k ? 1 : N, k ? v : MPI_INT, 0, round + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            took[k] = MPI_Wtime() - t0;
            for (int i = 0; i < N; i++) bad += b[k ? 2 * i : i] != i + k;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 1) {
        double extra = (took[1] - took[0]) * 700e6; /* cycles of the 700 MHz node */
        CHECK(!bad && extra >= N * 20.0, "%s: an unexpected 8000-byte message unpacked into a vector "
              "costs %.0f cycles more than into contiguous ints (at least %d), data in place",
              mode, extra, N * 20);
    }
    MPI_Type_free(&v);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int round = 0;
    for (int m = 0; m < 3; m++) {
        setenv("BGLMPI_DATATYPE", modes[m], 1);
        const int counts[] = {3, 100, 2000, 20000}; /* one-packet .. beyond the 68 KiB pack buffer */
        for (int c = 0; c < 4; c++) {
            int k = counts[c];
            MPI_Datatype vec, vec2, idx, strct, one, sub, res, contig;
            MPI_Type_vector(k, 2, 3, MPI_INT, &vec); /* 8 of every 12 bytes */
            MPI_Type_vector(2 * k, 1, 2, MPI_INT, &vec2); /* same signature, another layout */
            int *bl = malloc(sizeof(int) * (size_t)k), *disp = malloc(sizeof(int) * (size_t)k);
            for (int i = 0; i < k; i++) bl[i] = 1 + i % 3, disp[i] = i * 5 + (i % 2);
            MPI_Type_indexed(k, bl, disp, MPI_INT, &idx);
            struct rec { char c; double d; short s; };
            int sbl[3] = {1, 1, 1};
            MPI_Aint sd[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, s)};
            MPI_Datatype sty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT};
            MPI_Type_create_struct(3, sbl, sd, sty, &one);
            MPI_Type_create_resized(one, 0, sizeof(struct rec), &strct);
            int sizes[2] = {k / 4 + 2, 16}, sub_sz[2] = {k / 4 + 1, 8}, start[2] = {1, 4};
            MPI_Type_create_subarray(2, sizes, sub_sz, start, MPI_ORDER_C, MPI_FLOAT, &sub);
            MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &res); /* an int every 12 bytes */
            MPI_Type_contiguous(2 * k, MPI_INT, &contig);
            MPI_Datatype all[] = {vec, vec2, idx, strct, sub, res, contig};
            for (int i = 0; i < 7; i++) MPI_Type_commit(&all[i]);
            vec = all[0], vec2 = all[1], idx = all[2], strct = all[3], sub = all[4], res = all[5];
            contig = all[6];
            size_t vspan = (size_t)k * 12, ispan = (size_t)(k * 5 + 4) * 4;
            size_t sspan = (size_t)k * sizeof(struct rec), subspan = (size_t)sizes[0] * 16 * 4;
            size_t rspan = (size_t)k * 12;
            for (int u = 0; u < 2; u++) {
                xfer(rank, modes[m], "vector -> vector", vec, 1, vec, 1, vspan, u, round++);
                xfer(rank, modes[m], "vector -> another vector layout", vec, 1, vec2, 1, 2 * vspan, u, round++);
                xfer(rank, modes[m], "vector -> contiguous", vec, 1, contig, 1, vspan, u, round++);
                xfer(rank, modes[m], "contiguous -> vector", contig, 1, vec, 1, vspan, u, round++);
                xfer(rank, modes[m], "indexed -> indexed", idx, 1, idx, 1, ispan, u, round++);
                xfer(rank, modes[m], "struct {char,double,short} -> same", strct, k, strct, k, sspan, u, round++);
                xfer(rank, modes[m], "subarray -> subarray", sub, 1, sub, 1, subspan, u, round++);
                xfer(rank, modes[m], "resized int -> resized int", res, k, res, k, rspan, u, round++);
            }
            for (int i = 0; i < 7; i++) MPI_Type_free(&all[i]);
            MPI_Type_free(&one);
            free(bl), free(disp);
        }
        /* zero bytes of a derived type, and a truncated receive */
        MPI_Datatype v;
        MPI_Type_vector(1000, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        int *b = malloc(sizeof(int) * 4000);
        if (rank == 0) {
            for (int i = 0; i < 4000; i++) b[i] = i;
            MPI_Send(b, 0, v, 1, 900, MPI_COMM_WORLD);
            MPI_Send(b, 2, v, 1, 901, MPI_COMM_WORLD); /* 2000 ints */
        } else if (rank == 1) {
            MPI_Status s;
            int n = -1;
            for (int i = 0; i < 4000; i++) b[i] = -1;
            MPI_Recv(b, 1, v, 0, 900, MPI_COMM_WORLD, &s);
            MPI_Get_count(&s, MPI_BYTE, &n);
            int untouched = 1;
            for (int i = 0; i < 4000; i++) untouched &= b[i] == -1;
            CHECK(n == 0 && untouched, "%s: zero elements of a vector: count %d, buffer untouched", modes[m], n);
            int rc = MPI_Recv(b, 1, v, 0, 901, MPI_COMM_WORLD, &s); /* room for 1000 of 2000 */
            int cls = -1, bad = 0;
            MPI_Error_class(rc, &cls);
            for (int i = 0; i < 2000; i++) bad += b[i] != (i % 2 ? -1 : i);
            for (int i = 2000; i < 4000; i++) bad += b[i] != -1;
            CHECK(cls == MPI_ERR_TRUNCATE && !bad, "%s: 8000 bytes into a vector with room for 4000: "
                  "MPI_ERR_TRUNCATE, the first 1000 ints in place, nothing beyond (%d wrong)", modes[m], bad);
        }
        free(b);
        MPI_Type_free(&v);
        reuse(rank, modes[m], 1000 + 10 * m);
        unexp_cost(rank, modes[m], 1100 + 10 * m);
    }
    /* A bad value is one clear error. */
    setenv("BGLMPI_DATATYPE", "bogus", 1);
    if (rank == 0) {
        MPI_Datatype v;
        MPI_Type_vector(4, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        int b[8] = {0}, len = 0, rc = MPI_Send(b, 1, v, 1, 999, MPI_COMM_WORLD);
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_string(rc, msg, &len);
        CHECK(rc != MPI_SUCCESS && strstr(msg, "BGLMPI_DATATYPE=bogus: want pack, zerocopy or memo"),
              "BGLMPI_DATATYPE=bogus: the send fails naming the value and the choices");
        MPI_Type_free(&v);
    }
    unsetenv("BGLMPI_DATATYPE");
    (void)np;
    return mc_finish();
}
