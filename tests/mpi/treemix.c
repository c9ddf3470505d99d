/* Messages arriving while their receivers wait in a long tree collective:
 * every even rank sends the next odd one a few eager messages and a
 * rendezvous one between two 64 KiB MPI_Allreduce on the collective
 * network; the odd ranks receive them after a third. The engine running blocked
 * ranks' tree loops (collectives/coll_tree_engine.c) must hand a rank back at
 * such a packet and give the same simulated result as ranks woken per
 * packet (programs.sh runs this with BGLEMU_PROXY=0 and compares reports).
 * Checks the sums and every message's bytes. */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

#define N (16 * 1024) /* ints: 64 KiB, 256 tree packets */
#define EAGER 4
#define BIG (64 * 1024)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    /* even ranks send, odd ranks (no sends of their own outstanding: the
     * engine runs their tree loops) receive */
    int sender = me % 2 == 0, peer = sender ? me + 1 : me - 1;
    static int32_t v[N], small[EAGER][64], got[EAGER][64];
    static char big[BIG], bigin[BIG];
    MPI_Request rq[EAGER + 1];
    int bad = 0;
    for (int round = 0; round < 3; round++) {
        if (round == 1 && sender) { /* they arrive while the peer waits for round 1's results */
            for (int k = 0; k < EAGER; k++) {
                for (int i = 0; i < 64; i++) small[k][i] = me * 1000 + k * 64 + i;
                MPI_Isend(small[k], 64, MPI_INT, peer, k, MPI_COMM_WORLD, &rq[k]);
            }
            for (int i = 0; i < BIG; i++) big[i] = (char)(me * 31 + i);
            MPI_Isend(big, BIG, MPI_CHAR, peer, 99, MPI_COMM_WORLD, &rq[EAGER]);
        }
        for (int i = 0; i < N; i++) v[i] = (int32_t)(i * 3 + me + round);
        MPI_Allreduce(MPI_IN_PLACE, v, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++)
            bad |= v[i] != (int32_t)(np * (i * 3 + round) + np * (np - 1) / 2);
    }
    CHECK(!bad, "3 x 64 KiB MPI_Allreduce (sum of ints) on the tree with messages in flight: exact");
    if (sender) {
        for (int k = 0; k <= EAGER; k++) MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
    } else {
        for (int k = 0; k < EAGER; k++)
            MPI_Recv(got[k], 64, MPI_INT, peer, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(bigin, BIG, MPI_CHAR, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = 0;
        for (int k = 0; k < EAGER; k++)
            for (int i = 0; i < 64; i++) bad |= got[k][i] != peer * 1000 + k * 64 + i;
        for (int i = 0; i < BIG; i++) bad |= bigin[i] != (char)(peer * 31 + i);
        CHECK(!bad, "%d eager messages and 64 KiB from rank %d, arriving during the allreduces, "
              "received after them: intact", EAGER, peer);
    }
    return mc_finish();
}
