/* MPI_Waitall over a synchronous send and a rendezvous send (issue 25):
 * rank 0 sends rank 1 a one-int MPI_Issend (S) and a 100 KB MPI_Isend (A)
 * and waits for both, in the order {A, S}, then {S, A}. Rank 1 receives A
 * first and S only after some simulated time (a loop of MPI_Wtime calls,
 * each of which costs cycles), so that rank 0 waits for S's
 * acknowledgement alone once A is done: then its MPI_Waitall polls as a
 * wait with nothing owed by the network would, which the engine's loop
 * must not cut short. programs.sh runs it with and without the engine's
 * help and compares the reports. Every byte is checked.
 *   waitall_ssend */
#include <string.h>

#include "mpi_check.h"

#define BIG (100 * 1000)

static unsigned char pattern(int round, size_t i) { return (unsigned char)(i * 11 + (size_t)round * 5 + 1); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (!rank) fprintf(stderr, "waitall_ssend: usage: mpirun -np 2 waitall_ssend\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *big = malloc(BIG);
    for (int round = 0; round < 2; round++) {
        int one = rank == 0 ? 1000 + round : -1;
        for (size_t i = 0; i < BIG; i++) big[i] = rank == 0 ? pattern(round, i) : 0;
        if (rank == 0) {
            MPI_Request rq[2];
            MPI_Status sts[2];
            MPI_Request *s = &rq[round == 0 ? 1 : 0], *a = &rq[round == 0 ? 0 : 1];
            MPI_Issend(&one, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, s);
            MPI_Isend(big, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, a);
            MPI_Waitall(2, rq, sts);
            CHECK(1, "waitall_ssend: round %d, MPI_Waitall over %s complete", round,
                  round == 0 ? "{rendezvous, synchronous}" : "{synchronous, rendezvous}");
        } else {
            MPI_Recv(big, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double t = 0;
            for (int k = 0; k < 200; k++) t += MPI_Wtime();
            MPI_Recv(&one, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            size_t bad = 0;
            for (size_t i = 0; i < BIG; i++) bad += big[i] != pattern(round, i);
            CHECK(bad == 0 && one == 1000 + round && t > 0,
                  "waitall_ssend: round %d, 100 KB and the synchronous int received intact (%zu wrong)",
                  round, bad);
        }
    }
    free(big);
    return mc_finish();
}
