/* bglemu CH4 netmod "bgl": initialization, finalization and the object hooks
 * CH4 calls on every communicator, datatype and op. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"

MPIDI_BGL_global_t MPIDI_BGL_global;
extern ml_upcall_fn MPIDI_BGL_upcall;

/* MPICH's node map follows the emulated node, not the host: ranks share a
 * node (MPI_COMM_TYPE_SHARED, shared-memory windows, MPICH's hierarchical
 * collectives) only when they are the processors of one BG/L node, so in
 * CO mode every rank is a node of its own. MPIR_pmi_init built the map
 * from the host names PMI gave (one host: one node); this runs before
 * anything is derived from it (MPIDU_Init_shm_init at MPI_COMM_WORLD's
 * commit) and redoes what MPIR_pmi_init derived (build_locality). Node ids
 * are dense, numbered by first rank. */
static int set_node_map(const ml_map * map)
{
    int size = MPIR_Process.size, rank = MPIR_Process.rank;
    int *id_of = MPL_malloc((size_t) map->nprocs / TSIM_CPUS * sizeof(int), MPL_MEM_ADDRESS);
    int *roots = MPL_malloc((size_t) size * sizeof(int), MPL_MEM_ADDRESS);
    if (!id_of || !roots) {
        MPL_free(id_of);
        MPL_free(roots);
        return MPI_ERR_NO_MEM;
    }
    for (int n = 0; n < map->nprocs / TSIM_CPUS; n++)
        id_of[n] = -1;
    int nodes = 0;
    for (int i = 0; i < size; i++) {
        int n = map->proc[i] / TSIM_CPUS;
        if (id_of[n] < 0) {
            roots[nodes] = i;
            id_of[n] = nodes++;
        }
        MPIR_Process.node_map[i] = id_of[n];
    }
    int me = MPIR_Process.node_map[rank], local_size = 0, local_rank = -1;
    for (int i = 0; i < size; i++)
        if (MPIR_Process.node_map[i] == me)
            local_size++;
    int *local = MPL_malloc((size_t) local_size * sizeof(int), MPL_MEM_ADDRESS);
    if (!local) {
        MPL_free(id_of);
        MPL_free(roots);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0, j = 0; i < size; i++)
        if (MPIR_Process.node_map[i] == me) {
            if (i == rank)
                local_rank = j;
            local[j++] = i;
        }
    MPL_free(id_of);
    MPL_free(MPIR_Process.node_root_map);
    MPL_free(MPIR_Process.node_local_map);
    MPIR_Process.num_nodes = nodes;
    MPIR_Process.node_root_map = roots;
    MPIR_Process.node_local_map = local;
    MPIR_Process.local_size = local_size;
    MPIR_Process.local_rank = local_rank;
    return MPI_SUCCESS;
}

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
    mpi_errno = set_node_map(ml_get_map(g->ml));
    MPIR_ERR_CHECK(mpi_errno);
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
        MPIDI_BGL_dt_finalize();
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

/* A datatype's identity for the layout cache (bgl_dt.c). */
int MPIDI_BGL_mpi_type_commit_hook(MPIR_Datatype * datatype_p)
{
    return MPIDI_BGL_dt_commit_hook(datatype_p);
}

int MPIDI_BGL_mpi_type_free_hook(MPIR_Datatype * datatype_p)
{
    return MPIDI_BGL_dt_free_hook(datatype_p);
}

int MPIDI_BGL_mpi_op_commit_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_free_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}
