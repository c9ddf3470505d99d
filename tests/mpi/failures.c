/* MPI programs that go wrong on purpose, for mpirun's error paths:
 *   failures deadlock   every rank receives first: the engine reports it
 *   failures crash      rank 1 dies of SIGSEGV in the middle of a job
 *   failures spawn      MPI_Comm_spawn fails with a clear error class */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n, v = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "deadlock")) {
        MPI_Recv(&v, 1, MPI_INT, (rank + 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, (rank + 1) % n, 0, MPI_COMM_WORLD);
    } else if (!strcmp(what, "crash")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            usleep(300000); /* host time: the others are asleep in MPI_Recv by then */
            raise(SIGSEGV);
        }
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(what, "spawn")) {
        MPI_Comm child;
        int errs[1];
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int err = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF,
                                 &child, errs);
        int cls = MPI_SUCCESS, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, msg, &len);
        for (char *c = msg; *c; c++)
            if (*c == '\n') *c = ' ';
        /* MPICH asks the process manager first; hydra's refusal comes back
         * as an MPI error, and the job goes on */
        CHECK(err != MPI_SUCCESS && strstr(msg, "spawn"),
              "MPI_Comm_spawn returns an error (class %d, \"%.60s...\"), no crash", cls, msg);
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == n, "the job goes on after the failed spawn (allreduce = %d)", sum);
    } else {
        if (!rank) fprintf(stderr, "usage: failures deadlock|crash|spawn\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return mc_finish();
}
