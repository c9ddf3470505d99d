/* bglemu CH4 netmod "bgl": initialization, finalization and the object hooks
 * CH4 calls on every communicator, datatype and op. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

MPIDI_BGL_global_t MPIDI_BGL_global;
extern ml_upcall_fn MPIDI_BGL_upcall;

/* First call of MPI_Init: attach to the emulated machine mpirun prepared
 * (BGLEMU_SEG; this process is world rank PMI_RANK, placed by the rank map
 * BGLMPI_MAPPING that mpirun stored in the machine). */
int MPIDI_BGL_init_local(int *tag_bits)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    char err[512];

    *tag_bits = MPIR_TAG_BITS_DEFAULT;
    g->ml = ml_init_env(MPIDI_BGL_upcall, NULL, err, sizeof err);
    MPIR_ERR_CHKANDJUMP1(!g->ml, mpi_errno, MPI_ERR_OTHER, "**bgl_attach", "**bgl_attach %s", err);
    MPIR_ERR_CHKANDJUMP2(ml_nranks(g->ml) != MPIR_Process.size, mpi_errno, MPI_ERR_OTHER,
                         "**bgl_size", "**bgl_size %d %d", MPIR_Process.size, ml_nranks(g->ml));
    g->pp = ml_proc(g->ml);
    /* A rank is one emulated processor: progress happens in its own MPI
     * calls (and on the coprocessor), as on BG/L. MPICH's progress thread
     * would drive the same FIFOs from a second thread, so it is not started;
     * MPI semantics do not depend on it. */
    MPIR_CVAR_ASYNC_PROGRESS = 0;
    g->coll = coll_init(g->ml); /* NULL: MPICH's algorithms for every collective */
    g->prm = &g->pp->seg->params;
    g->force = ML_AUTO;
    const char *proto = getenv("BGLMPI_PROTOCOL");
    if (proto && *proto) {
        int p = ml_proto_parse(proto);
        MPIR_ERR_CHKANDJUMP1(p < 0 || p == ML_VN, mpi_errno, MPI_ERR_OTHER, "**bgl_protocol",
                             "**bgl_protocol %s", proto);
        g->force = (ml_proto) p;
    }
    MPIDI_BGL_clock_init();

    /* MPI_Get_processor_name: where this rank sits in the torus */
    const tsim_geom *geom = &g->pp->seg->geom;
    int c[4];
    ml_map_coords(ml_get_map(g->ml), geom, MPIR_Process.rank, c);
    snprintf(MPIDI_global.pname, MPI_MAX_PROCESSOR_NAME, "<%d,%d,%d,%d> in a <%d,%d,%d,%d> torus",
             c[0], c[1], c[2], c[3], geom->dim[0], geom->dim[1], geom->dim[2], geom->cpus);
    MPIDI_global.pname_len = (int) strlen(MPIDI_global.pname);
    MPIDI_global.pname_set = 1;

  fn_exit:
    return mpi_errno;
  fn_fail:
    if (g->ml) {
        ml_finalize(g->ml);
        g->ml = NULL;
    }
    goto fn_exit;
}

/* All ranks known (MPIR_Process.size): CH4 keeps the address vector; world
 * rank r is the message layer's rank r. */
int MPIDI_BGL_init_world(void)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_post_init(void)
{
    return MPI_SUCCESS;
}

/* Waits for this rank's sends to leave, stops the coprocessor and leaves
 * the machine (the engine no longer waits for this rank's clock). */
int MPIDI_BGL_mpi_finalize_hook(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->ml) {
        MPIDI_BGL_clock_enter();
        MPIDI_BGL_coll_finalize();
        if (g->coll)
            coll_finalize(g->coll);
        g->coll = NULL;
        ml_finalize(g->ml);
        g->ml = NULL;
        g->pp = NULL;
    }
    return MPI_SUCCESS;
}

int MPIDI_BGL_comm_set_hints(MPIR_Comm * comm_ptr, MPIR_Info * info)
{
    return MPI_SUCCESS;
}

void *MPIDI_BGL_mpi_alloc_mem(MPI_Aint size, MPIR_Info * info)
{
    return MPIDIG_mpi_alloc_mem(size, info);
}

int MPIDI_BGL_mpi_free_mem(void *ptr)
{
    return MPIDIG_mpi_free_mem(ptr);
}

int MPIDI_BGL_mpi_type_commit_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_type_free_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_commit_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_free_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}
