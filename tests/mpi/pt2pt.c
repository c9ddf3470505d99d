/* Point-to-point semantics over the bgl netmod: wildcards, probe/iprobe,
 * cancel, synchronous send, truncation, many outstanding requests, large
 * unexpected messages, communicator split/dup. Needs >= 2 ranks (rank 0 and 1 talk; the rest
 * join the collective parts). */
#include <string.h>

#include "mpi_check.h"

static void wildcards(int rank, int n)
{
    /* every other rank sends its rank with tag = rank; 0 takes them in any order */
    if (rank == 0) {
        int seen = 0, tags_ok = 1;
        for (int i = 1; i < n; i++) {
            int v;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            seen |= 1 << st.MPI_SOURCE;
            tags_ok &= st.MPI_TAG == v && st.MPI_SOURCE == v;
        }
        CHECK(seen == ((1 << n) - 2) && tags_ok,
              "ANY_SOURCE/ANY_TAG: one message from each of %d ranks, status source/tag right", n - 1);
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, rank, MPI_COMM_WORLD);
    }
}

static void probes(int rank)
{
    if (rank == 1) {
        int a[100];
        for (int i = 0; i < 100; i++) a[i] = i * 3;
        MPI_Send(a, 77, MPI_INT, 0, 42, MPI_COMM_WORLD);
        MPI_Send(a, 5, MPI_INT, 0, 43, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        int count, flag = 0;
        MPI_Probe(1, 42, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 77 && st.MPI_TAG == 42, "MPI_Probe sees 77 ints with tag 42 before receiving");
        int *b = malloc(sizeof(int) * (size_t)count);
        MPI_Recv(b, count, MPI_INT, 1, 42, MPI_COMM_WORLD, &st);
        CHECK(b[76] == 228, "received the probed message");
        free(b);
        while (!flag) MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(st.MPI_TAG == 43 && count == 5, "MPI_Iprobe loop finds the next message (tag 43, 5 ints)");
        int c[5];
        MPI_Recv(c, 5, MPI_INT, 1, 43, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "MPI_Iprobe says nothing is left");
    }
}

static void cancels(int rank)
{
    if (rank == 0) {
        MPI_Request r;
        MPI_Status st;
        int v, cancelled = 0;
        MPI_Irecv(&v, 1, MPI_INT, 1, 999, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "a posted receive nobody matches is cancelled");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void ssends(int rank)
{
    if (rank == 0) {
        int v = 7;
        double t0 = MPI_Wtime();
        MPI_Ssend(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        int after;
        MPI_Recv(&after, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* rank 1 computes 100000 cycles of simulated time before it posts the receive */
        CHECK(t * 700e6 >= 100000, "MPI_Ssend returned only after the receive was posted (%.0f cycles)", t * 700e6);
    } else if (rank == 1) {
        int v = 0;
        /* stand-in for computation: let simulated time pass with a timed wait */
        double t0 = MPI_Wtime();
        MPI_Request r;
        int flag = 0;
        MPI_Irecv(&v, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &r); /* never sent: polls spend time */
        while ((MPI_Wtime() - t0) * 700e6 < 100000) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        CHECK(v == 7, "MPI_Ssend's data arrived");
    }
}

static void truncation(int rank)
{
    if (rank == 1) {
        char big[1000];
        memset(big, 1, sizeof big);
        MPI_Send(big, 100, MPI_CHAR, 0, 8, MPI_COMM_WORLD);
        MPI_Send(big, 1000, MPI_CHAR, 0, 9, MPI_COMM_WORLD);
        char *huge = calloc(100000, 1);
        MPI_Send(huge, 100000, MPI_CHAR, 0, 10, MPI_COMM_WORLD);
        free(huge);
    } else if (rank == 0) {
        char small[50];
        MPI_Status st;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int err = MPI_Recv(small, 50, MPI_CHAR, 1, 8, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(err, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "100 bytes into a 50-byte buffer: MPI_ERR_TRUNCATE (one packet)");
        err = MPI_Recv(small, 50, MPI_CHAR, 1, 9, MPI_COMM_WORLD, &st);
        MPI_Error_class(err, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "1000 bytes into a 50-byte buffer: MPI_ERR_TRUNCATE (eager)");
        err = MPI_Recv(small, 50, MPI_CHAR, 1, 10, MPI_COMM_WORLD, &st);
        MPI_Error_class(err, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "100000 bytes into a 50-byte buffer: MPI_ERR_TRUNCATE (rendezvous)");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
}

static void many(int rank)
{
    enum { N = 2000 };
    static int in[N], out[N];
    static MPI_Status sts[N];
    MPI_Request r[N];
    if (rank <= 1) {
        int peer = 1 - rank;
        for (int i = 0; i < N; i++) {
            out[i] = rank * 100000 + i;
            if (rank == 0) MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &r[i]);
            else MPI_Isend(&out[i], 1, MPI_INT, peer, N - 1 - i, MPI_COMM_WORLD, &r[i]);
        }
        MPI_Waitall(N, r, sts);
        if (rank == 0) {
            int good = 1;
            for (int i = 0; i < N; i++) good &= in[i] == 100000 + (N - 1 - i);
            CHECK(good, "%d outstanding receives matched by tag against sends in reverse order", N);
        }
    }
}

/* Large messages that arrive before their receive (rendezvous, granted only
 * when the receive is posted), probed, matched in order, one by mprobe. */
static void unexpected_large(int rank)
{
    enum { BIG = 300000 };
    if (rank == 0) {
        MPI_Request r[3];
        MPI_Status sts[3];
        char *m = malloc(3 * (size_t)BIG);
        for (int k = 0; k < 3; k++) {
            memset(m + k * BIG, k + 1, BIG);
            MPI_Isend(m + k * BIG, BIG, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[k]);
        }
        int x = 42;
        MPI_Send(&x, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
        MPI_Waitall(3, r, sts);
        free(m);
    } else if (rank == 1) {
        char *b = malloc(BIG);
        int x, flag = 0, c = -1, good = 1;
        MPI_Status st;
        MPI_Recv(&x, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Iprobe(0, 5, MPI_COMM_WORLD, &flag, &st);
        if (flag) MPI_Get_count(&st, MPI_BYTE, &c);
        CHECK(x == 42 && flag && c == BIG,
              "a small message overtakes 3 unreceived %d-byte ones; iprobe sees the first", BIG);
        for (int k = 0; k < 2; k++) {
            MPI_Recv(b, BIG, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &c);
            for (int i = 0; i < BIG; i++) good &= b[i] == k + 1;
            good &= c == BIG;
        }
        MPI_Message msg;
        MPI_Mprobe(0, 5, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(b, BIG, MPI_BYTE, &msg, &st);
        MPI_Get_count(&st, MPI_BYTE, &c);
        for (int i = 0; i < BIG; i++) good &= b[i] == 3;
        CHECK(good && c == BIG, "the 3 unexpected large messages received in order (2 recv, 1 mprobe/mrecv)");
        free(b);
    }
}

static void comms(int rank, int n)
{
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    int expect_n = (n + 1 - rank % 2) / 2;
    int sum = 0, one = rank;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half);
    int expect_sum = 0;
    for (int r = rank % 2; r < n; r += 2) expect_sum += r;
    MPI_Comm_dup(half, &dup);
    int v = hr == 0 ? 1234 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, dup);
    CHECK(hn == expect_n && hr == (n - 1 - rank) / 2 && sum == expect_sum && v == 1234,
          "split by parity (size %d, reversed key) + allreduce sum %d + bcast on a dup", hn, sum);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2 || n > 30) {
        if (!rank) fprintf(stderr, "pt2pt: needs 2..30 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    wildcards(rank, n);
    MPI_Barrier(MPI_COMM_WORLD);
    probes(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    cancels(rank);
    ssends(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    truncation(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    many(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    unexpected_large(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    comms(rank, n);
    return mc_finish();
}
