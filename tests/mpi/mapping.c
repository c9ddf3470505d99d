/* Where ranks sit: MPI_Get_processor_name against the placement an order
 * (BGLMPI_MAPPING, e.g. TXYZ: first letter fastest) gives on an X x Y x Z
 * machine.   mapping X Y Z T   (the shape and processors per node) */
#include <string.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, len, dim[4] = {1, 1, 1, 1};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 4 && i + 1 < argc; i++) dim[i] = atoi(argv[i + 1]);
    const char *order = getenv("BGLMPI_MAPPING");
    int c[4] = {0}, r = rank; /* x y z t */
    for (const char *o = order; o && *o; o++) {
        int d = *o == 'X' ? 0 : *o == 'Y' ? 1 : *o == 'Z' ? 2 : 3;
        c[d] = r % dim[d];
        r /= dim[d];
    }
    char want[MPI_MAX_PROCESSOR_NAME], name[MPI_MAX_PROCESSOR_NAME];
    snprintf(want, sizeof want, "<%d,%d,%d,%d> in a <%d,%d,%d,%d> torus", c[0], c[1], c[2], c[3],
             dim[0], dim[1], dim[2], dim[3]);
    MPI_Get_processor_name(name, &len);
    CHECK(!strcmp(name, want) && len == (int)strlen(want), "BGLMPI_MAPPING=%s: rank %d is %s",
          order ? order : "(unset)", rank, name);
    return mc_finish();
}
