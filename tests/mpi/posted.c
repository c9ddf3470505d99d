/* Receives posted before their messages come, while the receiver waits
 * (issue 25): the engine matches rendezvous scouts against the receives
 * the netmod describes and grants them for the rank, which replays MPI's
 * matching when it wakes. MPI's rules must hold as without it: rank 0
 * posts, all three ranks meet in a barrier, ranks 1 and 2 send, rank 0
 * waits. Each round checks every byte and status:
 *   tags      three receives from rank 1 in the reverse of the send order
 *   wildcard  (1, 5), (any, any), (2, any): the first message (2, 9)
 *             takes the second receive, then (1, 5) the first, (2, 4) the third
 *   truncate  a 10,000-byte receive of a 20,000-byte message: MPI_ERR_TRUNCATE,
 *             nothing written past the buffer
 *   struct    a contiguous datatype whose data starts 64 bytes in
 *   ssend     MPI_Ssend into a posted receive (its acknowledgement is the rank's)
 *   vector    a non-contiguous receive (the rank's own landing)
 *   split     an unaligned 30,001-byte buffer, and an aligned one
 *   many      20 receives, more than a hand-off describes, matched in reverse
 * programs.sh runs it with and without the engine's help and compares the
 * reports.
 *   posted */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

#define LEN 20000
#define MANY 20

static unsigned char pat(int tag, size_t i) { return (unsigned char)(i * 7 + (size_t)tag * 13 + 1); }

static int filled(const unsigned char *b, size_t n, int tag)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(tag, i)) return 0;
    return 1;
}

static void fill(unsigned char *b, size_t n, int tag)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(tag, i);
}

/* rank 0 has posted: the senders go */
static void go(void) { MPI_Barrier(MPI_COMM_WORLD); }

static void send(int to, int tag, size_t n)
{
    unsigned char *b = malloc(n);
    fill(b, n, tag);
    MPI_Send(b, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD);
    free(b);
}

/* rank from hands the turn to rank to (a zero-byte message between senders) */
static void turn(int me, int from, int to)
{
    if (me == from) MPI_Send(NULL, 0, MPI_BYTE, to, 99, MPI_COMM_WORLD);
    if (me == to) MPI_Recv(NULL, 0, MPI_BYTE, from, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 3) {
        if (!me) fprintf(stderr, "posted: usage: mpirun -np 3 posted\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char *buf = aligned_alloc(64, (MANY + 4) * (size_t)LEN + 64);
    MPI_Request rq[MANY];
    MPI_Status st[MANY];

    /* tags */
    if (me == 0) {
        memset(buf, 0, 3 * LEN);
        for (int t = 3; t >= 1; t--)
            MPI_Irecv(buf + (size_t)(3 - t) * LEN, LEN, MPI_BYTE, 1, t, MPI_COMM_WORLD, &rq[3 - t]);
    }
    go();
    if (me == 1)
        for (int t = 1; t <= 3; t++) send(0, t, LEN);
    if (me == 0) {
        MPI_Waitall(3, rq, st);
        int ok = 1;
        for (int t = 3; t >= 1; t--) ok &= filled(buf + (size_t)(3 - t) * LEN, LEN, t) && st[3 - t].MPI_TAG == t;
        CHECK(ok, "posted: tags: three receives matched by tag, in the reverse of their send order");
    }

    /* wildcard */
    if (me == 0) {
        memset(buf, 0, 3 * LEN);
        MPI_Irecv(buf, LEN, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(buf + LEN, LEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[1]);
        MPI_Irecv(buf + 2 * LEN, LEN, MPI_BYTE, 2, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[2]);
    }
    go();
    if (me == 2) send(0, 9, LEN);
    turn(me, 2, 1);
    if (me == 1) send(0, 5, LEN);
    turn(me, 1, 2);
    if (me == 2) send(0, 4, LEN);
    if (me == 0) {
        MPI_Waitall(3, rq, st);
        CHECK(st[1].MPI_SOURCE == 2 && st[1].MPI_TAG == 9 && filled(buf + LEN, LEN, 9) &&
                  st[0].MPI_SOURCE == 1 && st[0].MPI_TAG == 5 && filled(buf, LEN, 5) &&
                  st[2].MPI_SOURCE == 2 && st[2].MPI_TAG == 4 && filled(buf + 2 * LEN, LEN, 4),
              "posted: wildcard: (2, 9) took (any, any) before (2, any); (1, 5) and (2, 4) theirs "
              "(sources %d %d %d, tags %d %d %d)", st[0].MPI_SOURCE, st[1].MPI_SOURCE, st[2].MPI_SOURCE,
              st[0].MPI_TAG, st[1].MPI_TAG, st[2].MPI_TAG);
    }

    /* truncate */
    if (me == 0) {
        memset(buf, 0, 2 * LEN);
        MPI_Irecv(buf, LEN / 2, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &rq[0]);
    }
    go();
    if (me == 1) send(0, 6, LEN);
    if (me == 0) {
        int rc = MPI_Wait(&rq[0], &st[0]), cls = MPI_SUCCESS, untouched = 1;
        MPI_Error_class(rc == MPI_SUCCESS ? st[0].MPI_ERROR : rc, &cls);
        for (size_t i = LEN / 2; i < 2 * LEN; i++) untouched &= buf[i] == 0;
        CHECK(cls == MPI_ERR_TRUNCATE && filled(buf, LEN / 2, 6) && untouched,
              "posted: truncate: 20000 bytes into a 10000-byte receive: MPI_ERR_TRUNCATE, nothing past it");
    }

    /* struct: one block of LEN bytes 64 in */
    MPI_Datatype dt;
    int bl = LEN;
    MPI_Aint disp = 64;
    MPI_Datatype byte = MPI_BYTE;
    MPI_Type_create_struct(1, &bl, &disp, &byte, &dt);
    MPI_Type_commit(&dt);
    if (me == 0) {
        memset(buf, 0, LEN + 128);
        MPI_Irecv(buf, 1, dt, 2, 7, MPI_COMM_WORLD, &rq[0]);
    }
    go();
    if (me == 2) send(0, 7, LEN);
    if (me == 0) {
        MPI_Wait(&rq[0], &st[0]);
        int count = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &count);
        CHECK(filled(buf + 64, LEN, 7) && buf[63] == 0 && buf[64 + LEN] == 0 && count == LEN,
              "posted: struct: a contiguous type 64 bytes in, %d bytes", count);
    }
    MPI_Type_free(&dt);

    /* ssend */
    if (me == 0) {
        memset(buf, 0, LEN);
        MPI_Irecv(buf, LEN, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &rq[0]);
    }
    go();
    if (me == 1) {
        unsigned char *b = malloc(LEN);
        fill(b, LEN, 8);
        MPI_Ssend(b, LEN, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        free(b);
    }
    if (me == 0) {
        MPI_Wait(&rq[0], &st[0]);
        CHECK(filled(buf, LEN, 8), "posted: ssend: MPI_Ssend into a posted receive");
    }

    /* vector: 100 blocks of 100 bytes, 200 apart */
    MPI_Type_vector(100, 100, 200, MPI_BYTE, &dt);
    MPI_Type_commit(&dt);
    if (me == 0) {
        memset(buf, 0, LEN);
        MPI_Irecv(buf, 1, dt, 2, 10, MPI_COMM_WORLD, &rq[0]);
    }
    go();
    if (me == 2) send(0, 10, 10000);
    if (me == 0) {
        MPI_Wait(&rq[0], &st[0]);
        int ok = 1;
        for (size_t i = 0; i < 10000; i++) ok &= buf[i / 100 * 200 + i % 100] == pat(10, i);
        for (size_t i = 0; i < 100; i++) ok &= buf[i * 200 + 100] == 0;
        CHECK(ok, "posted: vector: a non-contiguous receive");
    }
    MPI_Type_free(&dt);

    /* split and aligned */
    if (me == 0) {
        memset(buf, 0, 3 * LEN);
        MPI_Irecv(buf + 16, 30001, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(buf + 2 * LEN + 64, 30001, MPI_BYTE, 2, 12, MPI_COMM_WORLD, &rq[1]);
    }
    go();
    if (me == 1) send(0, 11, 30001);
    if (me == 2) send(0, 12, 30001);
    if (me == 0) {
        MPI_Waitall(2, rq, st);
        CHECK(filled(buf + 16, 30001, 11) && filled(buf + 2 * LEN + 64, 30001, 12) && buf[15] == 0,
              "posted: split: 30001 bytes at offset 16 and at a 64-byte boundary");
    }

    /* many */
    if (me == 0) {
        memset(buf, 0, (size_t)MANY * LEN);
        for (int t = 0; t < MANY; t++)
            MPI_Irecv(buf + (size_t)t * LEN, LEN, MPI_BYTE, 1, 100 + t, MPI_COMM_WORLD, &rq[t]);
    }
    go();
    if (me == 1)
        for (int t = MANY - 1; t >= 0; t--) send(0, 100 + t, LEN);
    if (me == 0) {
        MPI_Waitall(MANY, rq, st);
        int ok = 1;
        for (int t = 0; t < MANY; t++) ok &= filled(buf + (size_t)t * LEN, LEN, 100 + t);
        CHECK(ok, "posted: many: %d receives, matched from the last posted", MANY);
    }

    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    return mc_finish();
}
