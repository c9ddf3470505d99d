/* bglemu CH4 netmod "bgl": partitioned communication through MPIDIG. */
#include "mpidimpl.h"
#include "bgl_impl.h"

int MPIDI_BGL_mpi_psend_init(const void *buf, int partitions, MPI_Aint count,
                             MPI_Datatype datatype, int rank, int tag, MPIR_Comm * comm,
                             MPIR_Info * info, MPIDI_av_entry_t * av, MPIR_Request ** req_p)
{
    return MPIDIG_mpi_psend_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}

int MPIDI_BGL_mpi_precv_init(void *buf, int partitions, MPI_Aint count,
                             MPI_Datatype datatype, int rank, int tag, MPIR_Comm * comm,
                             MPIR_Info * info, MPIDI_av_entry_t * av, MPIR_Request ** req_p)
{
    return MPIDIG_mpi_precv_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}
