/* bglemu CH4 netmod "bgl": MPI_Bcast and MPI_Alltoall over bglemu's torus
 * collectives (collectives/coll.h: deposit-bit broadcast, packet-scheduled
 * alltoall) on communicators whose ranks are the world's in order
 * (MPI_COMM_WORLD and its duplicates); everything else, MPI_IN_PLACE, and
 * the broadcast on a partly populated machine go to MPICH's algorithms.
 * Non-contiguous datatypes are packed.
 *
 * BGLMPI_BCAST = torus3 (default: three edge-disjoint routes from 720
 * bytes up, one below) | torus1 | mpich and BGLMPI_ALLTOALL = torus
 * (default) | mpich choose per call, so a program can compare both (setenv
 * between calls). Every rank must see the same choice, as with any
 * collective algorithm parameter. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

static int is_world(MPIR_Comm * comm)
{
    if (comm->comm_kind != MPIR_COMM_KIND__INTRACOMM || comm->local_size != MPIR_Process.size)
        return 0;
    for (int i = 0; i < comm->local_size; i++)
        if (MPIDIU_rank_to_lpid(i, comm) != i)
            return 0;
    return 1;
}

/* The value of env var name among choices (index), or -1 if unknown. */
static int choice(const char *name, const char *const *choices, int n)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, choices[i]))
            return i;
    return -1;
}

int MPIDI_BGL_mpi_bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    static const char *const algos[] = { "torus3", "torus1", "mpich" };
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int a = choice("BGLMPI_BCAST", algos, 3);
    MPIR_ERR_CHKANDJUMP1(a < 0, mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo",
                         "**bgl_collalgo %s", "BGLMPI_BCAST=torus3|torus1|mpich");
    /* the deposit-bit trees need a rank on every processor the mode uses */
    if (a == 2 || !g->coll || !coll_hw_ok(g->coll) || !is_world(comm_ptr))
        return MPIR_Bcast_impl(buffer, count, datatype, root, comm_ptr, errflag);

    int dt_contig;
    MPI_Aint data_sz, true_lb;
    MPIR_Datatype *dt_ptr;
    MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, true_lb);
    void *buf = (char *) buffer + true_lb, *tmp = NULL;
    MPI_Aint done;
    if (!dt_contig && data_sz > 0) {
        tmp = MPL_malloc(data_sz, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!tmp, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        if (comm_ptr->rank == root)
            MPIR_Typerep_pack(buffer, count, datatype, 0, tmp, data_sz, &done);
        buf = tmp;
    }
    MPIDI_BGL_clock_enter();
    /* the three-route trees are deeper (an extra hop, one more stage): with
     * less than a packet per route one tree is sooner */
    int routes = a == 0 && data_sz >= 3 * TSIM_PAYLOAD_MAX ? 3 : 1;
    if (coll_bcast(g->coll, buf, (size_t) data_sz, root, routes) != 0)
        MPIDI_BGL_job_aborted("broadcast");
    MPIDI_BGL_clock_leave();
    if (tmp) {
        if (comm_ptr->rank != root)
            MPIR_Typerep_unpack(tmp, data_sz, buffer, count, datatype, 0, &done);
        MPL_free(tmp);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* The n blocks of count elements of type, packed one after the other, are
 * they simply the buffer from its true lower bound? */
static int blocks_contig(MPI_Aint count, MPI_Datatype type, MPI_Aint * bytes, MPI_Aint * lb)
{
    int contig;
    MPIR_Datatype *dt_ptr;
    MPI_Aint extent;
    MPIDI_Datatype_get_info(count, type, contig, *bytes, dt_ptr, *lb);
    MPIR_Datatype_get_extent_macro(type, extent);
    return contig && extent * count == *bytes;
}

int MPIDI_BGL_mpi_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                           MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    static const char *const algos[] = { "torus", "mpich" };
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int a = choice("BGLMPI_ALLTOALL", algos, 2);
    MPIR_ERR_CHKANDJUMP1(a < 0, mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo",
                         "**bgl_collalgo %s", "BGLMPI_ALLTOALL=torus|mpich");
    if (a == 1 || !g->coll || sendbuf == MPI_IN_PLACE || !is_world(comm_ptr))
        return MPIR_Alltoall_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm_ptr, errflag);

    int n = comm_ptr->local_size;
    MPI_Aint sbytes, slb, rbytes, rlb, done;
    int scontig = blocks_contig(sendcount, sendtype, &sbytes, &slb);
    int rcontig = blocks_contig(recvcount, recvtype, &rbytes, &rlb);
    MPIR_ERR_CHKANDJUMP2(sbytes != rbytes, mpi_errno, MPI_ERR_TRUNCATE, "**bgl_a2asize",
                         "**bgl_a2asize %L %L", (long long) sbytes, (long long) rbytes);
    const void *sb = (const char *) sendbuf + slb;
    void *rb = (char *) recvbuf + rlb, *stmp = NULL, *rtmp = NULL;
    if (!scontig && sbytes > 0) {
        stmp = MPL_malloc(sbytes * n, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!stmp, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        MPIR_Typerep_pack(sendbuf, sendcount * n, sendtype, 0, stmp, sbytes * n, &done);
        sb = stmp;
    }
    if (!rcontig && rbytes > 0) {
        rtmp = MPL_malloc(rbytes * n, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!rtmp, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        rb = rtmp;
    }
    MPIDI_BGL_clock_enter();
    if (coll_alltoall(g->coll, sb, rb, (size_t) sbytes) != 0)
        MPIDI_BGL_job_aborted("alltoall");
    MPIDI_BGL_clock_leave();
    if (rtmp)
        MPIR_Typerep_unpack(rtmp, rbytes * n, recvbuf, recvcount * n, recvtype, 0, &done);
  fn_exit:
    MPL_free(stmp);
    MPL_free(rtmp);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
