/* The programs the engine runs for a blocked rank, registered once by
 * mpirun (torus-sim/tsim_prog.h): the message layer's and the
 * collectives'. */
#include "coll.h"

int coll_engine_register(void)
{
    if (ml_engine_register() != 0) return -1;
    if (tsim_prog_register(&coll_a2a_prog) != 0) return -1;
    if (tsim_prog_register(&coll_bcast_prog) != 0) return -1;
    if (tsim_prog_register(&coll_tree_vn_prog) != 0) return -1;
    return tsim_prog_register(&coll_tree_prog);
}
