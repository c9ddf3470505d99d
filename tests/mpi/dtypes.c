/* Derived datatypes across the protocols: vector, indexed, struct, and
 * unaligned buffers, each at a one-packet, an eager and a rendezvous size;
 * every byte is checked. Also non-contiguous on one side only. 2 ranks. */
#include <stddef.h>
#include <string.h>

#include "mpi_check.h"

static unsigned char pattern(size_t i, int round) { return (unsigned char)(i * 7 + round * 13 + 1); }

/* Sends count elements of type (over base of len bytes) from 0 to 1;
 * rank 1 receives into its own layout and compares the packed forms. */
static void roundtrip(int rank, const char *what, MPI_Datatype st, int scount, MPI_Datatype rt,
                      int rcount, size_t span, int round)
{
    unsigned char *buf = calloc(span + 64, 1);
    unsigned char *p = buf + (round & 7); /* unaligned on odd rounds */
    int packsize;
    MPI_Pack_size(scount, st, MPI_COMM_WORLD, &packsize);
    if (rank == 0) {
        for (size_t i = 0; i < span; i++) p[i] = pattern(i, round);
        MPI_Send(p, scount, st, 1, round, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status s;
        MPI_Recv(p, rcount, rt, 0, round, MPI_COMM_WORLD, &s);
        /* what arrived, packed with the receive type, must equal the sender's
         * data packed with the send type */
        unsigned char *src = calloc(span + 64, 1), *a = malloc((size_t)packsize),
                      *b = malloc((size_t)packsize);
        for (size_t i = 0; i < span; i++) src[i] = pattern(i, round);
        int pa = 0, pb = 0;
        MPI_Pack(src, scount, st, a, packsize, &pa, MPI_COMM_SELF);
        MPI_Pack(p, rcount, rt, b, packsize, &pb, MPI_COMM_SELF);
        int n;
        MPI_Get_count(&s, MPI_BYTE, &n);
        CHECK(pa == pb && !memcmp(a, b, (size_t)pa) && n == pa,
              "%s: %d bytes%s, every byte in place", what, pa, (round & 7) ? " (unaligned buffer)" : "");
        free(src), free(a), free(b);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int counts[] = {3, 100, 20000}; /* one-packet, eager, rendezvous (with 8-byte blocks) */
    int round = 0;
    for (int c = 0; c < 3; c++) {
        int k = counts[c];
        MPI_Datatype vec, idx, strct, contig;
        MPI_Type_vector(k, 2, 3, MPI_INT, &vec); /* 8 of every 12 bytes */
        MPI_Type_commit(&vec);
        int *bl = malloc(sizeof(int) * (size_t)k), *disp = malloc(sizeof(int) * (size_t)k);
        for (int i = 0; i < k; i++) bl[i] = 1 + i % 3, disp[i] = i * 5;
        MPI_Type_indexed(k, bl, disp, MPI_INT, &idx);
        MPI_Type_commit(&idx);
        struct rec { char c; double d; short s; };
        int sbl[3] = {1, 1, 1};
        MPI_Aint sdisp[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, s)};
        MPI_Datatype stypes[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT}, one;
        MPI_Type_create_struct(3, sbl, sdisp, stypes, &one);
        MPI_Type_create_resized(one, 0, sizeof(struct rec), &strct);
        MPI_Type_commit(&strct);
        MPI_Type_contiguous(2 * k, MPI_INT, &contig);
        MPI_Type_commit(&contig);
        size_t vspan = (size_t)k * 12, ispan = (size_t)(k * 5 + 3) * 4, sspan = (size_t)k * sizeof(struct rec);
        roundtrip(rank, "vector -> vector", vec, 1, vec, 1, vspan, round++);
        roundtrip(rank, "vector -> vector", vec, 1, vec, 1, vspan, round++);
        roundtrip(rank, "vector -> contiguous ints", vec, 1, contig, 1, vspan, round++);
        roundtrip(rank, "contiguous ints -> vector", contig, 1, vec, 1, vspan, round++);
        roundtrip(rank, "indexed -> indexed", idx, 1, idx, 1, ispan, round++);
        roundtrip(rank, "indexed -> indexed", idx, 1, idx, 1, ispan, round++);
        roundtrip(rank, "struct {char,double,short} -> same", strct, k, strct, k, sspan, round++);
        roundtrip(rank, "struct {char,double,short} -> same", strct, k, strct, k, sspan, round++);
        MPI_Type_free(&vec), MPI_Type_free(&idx), MPI_Type_free(&one), MPI_Type_free(&strct);
        MPI_Type_free(&contig);
        free(bl), free(disp);
    }
    /* a message shorter than its non-contiguous receive buffer (as MPICH's
     * recursive-doubling allgather posts): every other int, 1000 sent into
     * room for 3000, the receive posted first and then arriving late */
    MPI_Datatype one_int, every_other;
    MPI_Type_vector(1, 1, 2, MPI_INT, &one_int);
    MPI_Type_create_resized(one_int, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    int *b = malloc(sizeof(int) * 6000);
    for (int late = 0; late < 2 && n >= 2; late++) {
        if (rank == 0) {
            for (int i = 0; i < 2000; i++) b[i] = i % 2 ? -2 : i / 2 + late;
            if (late) MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(b, 1000, every_other, 1, 77, MPI_COMM_WORLD);
        } else if (rank == 1) {
            void *junk = malloc(48000); /* leave no zeroed memory for a fresh iov */
            memset(junk, 0x5a, 48000);
            free(junk);
            for (int i = 0; i < 6000; i++) b[i] = -1;
            MPI_Request q;
            MPI_Status st;
            int got = -1, bad = 0;
            MPI_Irecv(b, 3000, every_other, 0, 77, MPI_COMM_WORLD, &q);
            if (late) MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&q, &st);
            MPI_Get_count(&st, every_other, &got);
            for (int i = 0; i < 1000; i++) bad += b[2 * i] != i + late || b[2 * i + 1] != -1;
            for (int i = 2000; i < 6000; i++) bad += b[i] != -1;
            CHECK(got == 1000 && !bad, "1000 of every other int into room for 3000 (%s): count %d, %d wrong",
                  late ? "unexpected" : "receive posted first", got, bad);
        } else if (late) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    free(b);
    MPI_Type_free(&every_other), MPI_Type_free(&one_int);
    return mc_finish();
}
