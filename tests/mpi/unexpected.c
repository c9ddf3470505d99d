/* Large messages that arrive before their receive is posted: rank 0 sends
 * 100 KB, 1 MiB and 4 MiB (tags 1..3, MPI_Isend) and enters a barrier;
 * rank 1 posts its receives only after the barrier, in reverse tag order,
 * the 1 MiB one after an MPI_Probe. Between the two processors of a node
 * (VN mode) the VN protocol keeps each message in the sender's memory until
 * its receive is posted, as the rendezvous does across the torus; every
 * byte is checked.   unexpected */
#include <string.h>

#include "mpi_check.h"

static const int sizes[3] = {100000, 1 << 20, 4 << 20};

static unsigned char pattern(int tag, size_t i) { return (unsigned char)(i * 7 + (size_t)tag * 13); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *buf[3];
    for (int k = 0; k < 3; k++) {
        buf[k] = malloc((size_t)sizes[k]);
        for (size_t i = 0; i < (size_t)sizes[k]; i++) buf[k][i] = rank == 0 ? pattern(k + 1, i) : 0;
    }
    if (rank == 0) {
        MPI_Request rq[3];
        MPI_Status sts[3];
        for (int k = 0; k < 3; k++)
            MPI_Isend(buf[k], sizes[k], MPI_BYTE, 1, k + 1, MPI_COMM_WORLD, &rq[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(3, rq, sts);
        CHECK(1, "unexpected: 3 large sends complete once their receives are posted");
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Status st;
        int count = -1;
        for (int k = 2; k >= 0; k--) {
            if (k == 1) {
                MPI_Probe(0, k + 1, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
            }
            MPI_Recv(buf[k], sizes[k], MPI_BYTE, 0, k + 1, MPI_COMM_WORLD, &st);
            int n, good = 1;
            MPI_Get_count(&st, MPI_BYTE, &n);
            for (size_t i = 0; i < (size_t)sizes[k]; i++) good &= buf[k][i] == pattern(k + 1, i);
            CHECK(good && n == sizes[k] && st.MPI_TAG == k + 1 && (k != 1 || count == sizes[k]),
                  "unexpected: %d bytes (tag %d) received after the barrier, in reverse order%s: "
                  "data and status intact", sizes[k], k + 1, k == 1 ? ", probed first" : "");
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int k = 0; k < 3; k++) free(buf[k]);
    return mc_finish();
}
