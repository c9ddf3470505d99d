/* bglemu CH4 netmod "bgl": MPI_Bcast and MPI_Alltoall over bglemu's torus
 * collectives (collectives/coll.h: deposit-bit broadcast, packet-scheduled
 * alltoall) on intracommunicators: the alltoall on any, the broadcast on
 * those whose ranks fill a box of nodes (MPI_COMM_WORLD on a full machine,
 * rectangular sub-meshes). Intercommunicators, MPI_IN_PLACE and other
 * broadcasts go to MPICH's algorithms. Non-contiguous datatypes travel as
 * layouts (each packet gathered from the sender's segments and scattered
 * into the receiver's; MPI_Alltoallw too) unless BGLMPI_DATATYPE=pack,
 * which packs them (the collective network's broadcast always does).
 * MPI_Barrier, MPI_Allreduce, MPI_Reduce (and MPI_Bcast with tree or auto)
 * on communicators that hold the whole partition go to the collective
 * network and the global interrupt (collectives/coll_tree.h).
 *
 * BGLMPI_BCAST = auto (default: the collective network on communicators
 * holding the whole partition, up to MPIDI_BGL_TREE_BCAST_MAX bytes, torus3
 * otherwise) | torus3 (three edge-disjoint routes from 720 bytes up, one
 * below) | torus1 | mpich | tree, BGLMPI_ALLTOALL = torus (default) |
 * mpich, BGLMPI_ALLREDUCE = tree (default; allreduce and reduce) | mpich,
 * BGLMPI_BARRIER = gi (default) | mpich choose per call, so a program can
 * compare both (setenv between calls). Every rank must see the same
 * choice, as with any collective algorithm parameter. The hardware is the
 * default where it serves (the whole partition, every processor slot
 * populated, a type and operation the ALU takes); MPICH's algorithms
 * everywhere else (docs/collectives.md). Nonblocking collectives
 * (MPI_Ibarrier, MPI_Iallreduce, MPI_Ireduce, ...) are MPICH's. */
#include "mpidimpl.h"
#include "bgl_impl.h"
#include "bgl_ml.h"
#include "collectives/coll_tree.h"

/* The collectives' group of each intracommunicator, by context id (unique
 * among the live communicators of a process): made on first use from the
 * member list alone, so every member makes the same one, and freed with the
 * communicator. MPI_COMM_WORLD (context id 0) is the partition's group. */
static coll_group **groups;

static coll_group *group_of(MPIR_Comm * comm)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (!g->coll || comm->comm_kind != MPIR_COMM_KIND__INTRACOMM)
        return NULL;
    if (comm->context_id == 0)
        return coll_world(g->coll);
    if (!groups && !(groups = MPL_calloc(1 << 16, sizeof *groups, MPL_MEM_COMM)))
        return NULL;
    coll_group **slot = &groups[comm->context_id];
    if (!*slot) {
        int n = comm->local_size, *ranks = MPL_malloc(n * sizeof *ranks, MPL_MEM_COMM);
        if (!ranks)
            return NULL;
        for (int i = 0; i < n; i++)
            ranks[i] = MPIDIU_rank_to_lpid(i, comm);
        *slot = coll_group_new(g->coll, n, ranks, comm->context_id);
        MPL_free(ranks);
    }
    return *slot;
}

void MPIDI_BGL_coll_comm_free(MPIR_Comm * comm)
{
    if (groups && comm->comm_kind == MPIR_COMM_KIND__INTRACOMM && comm->context_id) {
        coll_group_free(groups[comm->context_id]);
        groups[comm->context_id] = NULL;
    }
}

void MPIDI_BGL_coll_finalize(void)
{
    if (!groups)
        return;
    for (int i = 0; i < 1 << 16; i++)
        coll_group_free(groups[i]);
    MPL_free(groups);
    groups = NULL;
}

/* The value of env var name among choices (index; choices[0] when unset),
 * or -1 if unknown. */
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

/* ---- the collective network and the global interrupt ------------------- */
/* Broadcasts up to this many bytes take the collective network under
 * BGLMPI_BCAST=auto: every size, since torus3 does not overtake the tree up
 * to 4 MiB on 4x4x4 (docs/collectives.md, "Broadcast crossover"). */
#define MPIDI_BGL_TREE_BCAST_MAX MPIR_AINT_MAX

/* Does comm hold every rank of the partition (MPI_COMM_WORLD, its
 * duplicates, any reordering of them)? The collective network and the
 * global interrupt serve the partition only. */
static int spans_partition(MPIR_Comm * comm)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    return g->coll && comm->comm_kind == MPIR_COMM_KIND__INTRACOMM &&
        comm->local_size == ml_nranks(g->ml);
}

/* What MPI lets each operation take (MPI 4.0, 6.9.2): the groups of the
 * predefined types the ALU serves. MPI_CHAR, MPI_WCHAR and the Fortran and
 * complex types go to MPICH (with its checks). */
enum { K_INT, K_BYTE, K_BOOL, K_FLOAT, K_PAIR };

/* The ALU's name for a predefined MPI type and its group, -1 for the others. */
static int tree_type(MPI_Datatype t, int *kind)
{
    MPI_Aint sz, ext;
    *kind = K_FLOAT;
    if (t == MPI_FLOAT)
        return COLL_F32;
    if (t == MPI_DOUBLE)
        return COLL_F64;
    int pair = t == MPI_2INT ? COLL_2I32 : t == MPI_FLOAT_INT ? COLL_F32_I32 :
        t == MPI_DOUBLE_INT ? COLL_F64_I32 : t == MPI_SHORT_INT ? COLL_I16_I32 :
        t == MPI_LONG_INT && sizeof(long) == 8 ? COLL_I64_I32 : -1;
    if (pair >= 0) {
        /* the struct {value; int} as coll_tree.h lays it out */
        *kind = K_PAIR;
        MPIR_Datatype_get_extent_macro(t, ext);
        return (size_t) ext == coll_type_size(pair) ? pair : -1;
    }
    int sgn = t == MPI_INT || t == MPI_LONG || t == MPI_LONG_LONG || t == MPI_SHORT ||
        t == MPI_SIGNED_CHAR || t == MPI_INT8_T || t == MPI_INT16_T || t == MPI_INT32_T ||
        t == MPI_INT64_T || t == MPI_AINT || t == MPI_OFFSET || t == MPI_COUNT;
    int uns = t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG ||
        t == MPI_UNSIGNED_SHORT || t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T ||
        t == MPI_UINT16_T || t == MPI_UINT32_T || t == MPI_UINT64_T || t == MPI_BYTE ||
        t == MPI_C_BOOL;
    if (!sgn && !uns)
        return -1;
    *kind = t == MPI_BYTE ? K_BYTE : t == MPI_C_BOOL ? K_BOOL : K_INT;
    MPIR_Datatype_get_size_macro(t, sz);
    switch (sz) {
        case 1:
            return sgn ? COLL_I8 : COLL_U8;
        case 2:
            return sgn ? COLL_I16 : COLL_U16;
        case 4:
            return sgn ? COLL_I32 : COLL_U32;
        case 8:
            return sgn ? COLL_I64 : COLL_U64;
        default:
            return -1;
    }
}

/* The ALU's name for a predefined operation on a type of group kind, -1
 * where MPI does not define the pair (MPICH then reports it). */
static int tree_op(MPI_Op op, int kind)
{
    static const MPI_Op ops[] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
        MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MAXLOC, MPI_MINLOC
    };
    static const int names[] = { COLL_SUM, COLL_MAX, COLL_MIN, COLL_BAND, COLL_BOR, COLL_BXOR,
        COLL_LAND, COLL_LOR, COLL_LXOR, COLL_MAXLOC, COLL_MINLOC
    };
    int o = -1;
    for (int i = 0; i < (int) (sizeof ops / sizeof ops[0]); i++)
        if (op == ops[i])
            o = names[i];
    if (o < 0)
        return -1;
    switch (kind) {
        case K_INT:
            return o <= COLL_LXOR ? o : -1;
        case K_BYTE:
            return o >= COLL_BAND && o <= COLL_BXOR ? o : -1;
        case K_BOOL:
            return o >= COLL_LAND && o <= COLL_LXOR ? o : -1;
        case K_FLOAT:
            return o <= COLL_MIN ? o : -1;
        default:
            return o == COLL_MAXLOC || o == COLL_MINLOC ? o : -1;
    }
}

/* 1 if the collective network can do this reduction: BGLMPI_ALLREDUCE=tree,
 * the whole partition with every processor slot populated, a type and an operation the ALU takes
 * (MPI_PROD, MPI_REPLACE/NO_OP, user-defined operations and derived types go to MPICH). */
static int tree_reduction(MPIR_Comm * comm, MPI_Datatype type, MPI_Op op, int *t, int *o,
                          int *mpi_errno)
{
    static const char *const algos[] = { "tree", "mpich" };
    int a = choice("BGLMPI_ALLREDUCE", algos, 2);
    *mpi_errno = MPI_SUCCESS;
    if (a < 0) {
        MPIR_ERR_SET1(*mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo", "**bgl_collalgo %s",
                      "BGLMPI_ALLREDUCE=tree|mpich");
        return 0;
    }
    int kind;
    *t = tree_type(type, &kind);
    *o = *t >= 0 ? tree_op(op, kind) : -1;
    return a == 0 && spans_partition(comm) && coll_tree_ok(MPIDI_BGL_global.coll) && *t >= 0 &&
        *o >= 0 && coll_tree_takes(*t, *o);
}

int MPIDI_BGL_mpi_allreduce(const void *sendbuf, void *recvbuf, MPI_Aint count,
                            MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm_ptr,
                            MPIR_Errflag_t * errflag)
{
    int mpi_errno, t, o;
    if (!tree_reduction(comm_ptr, datatype, op, &t, &o, &mpi_errno))
        return mpi_errno != MPI_SUCCESS ? mpi_errno :
            MPIR_Allreduce_impl(sendbuf, recvbuf, count, datatype, op, comm_ptr, errflag);
    MPIDI_BGL_clock_enter();
    if (coll_tree_allreduce(MPIDI_BGL_global.coll, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                            recvbuf, (size_t) count, t, o) != 0)
        MPIDI_BGL_job_aborted("allreduce");
    MPIDI_BGL_clock_leave();
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_reduce(const void *sendbuf, void *recvbuf, MPI_Aint count,
                         MPI_Datatype datatype, MPI_Op op, int root, MPIR_Comm * comm_ptr,
                         MPIR_Errflag_t * errflag)
{
    int mpi_errno, t, o;
    if (!tree_reduction(comm_ptr, datatype, op, &t, &o, &mpi_errno))
        return mpi_errno != MPI_SUCCESS ? mpi_errno :
            MPIR_Reduce_impl(sendbuf, recvbuf, count, datatype, op, root, comm_ptr, errflag);
    int me_root = comm_ptr->rank == root;
    MPIDI_BGL_clock_enter();
    if (coll_tree_reduce(MPIDI_BGL_global.coll, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                         me_root ? recvbuf : NULL, (size_t) count, t, o,
                         MPIDIU_rank_to_lpid(root, comm_ptr)) != 0)
        MPIDI_BGL_job_aborted("reduce");
    MPIDI_BGL_clock_leave();
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_barrier(MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    static const char *const algos[] = { "gi", "mpich" };
    int mpi_errno = MPI_SUCCESS;
    int a = choice("BGLMPI_BARRIER", algos, 2);
    MPIR_ERR_CHKANDJUMP1(a < 0, mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo",
                         "**bgl_collalgo %s", "BGLMPI_BARRIER=gi|mpich");
    if (a != 0 || !spans_partition(comm_ptr))
        return MPIR_Barrier_impl(comm_ptr, errflag);
    MPIDI_BGL_clock_enter();
    if (coll_gi_barrier(MPIDI_BGL_global.coll) != 0)
        MPIDI_BGL_job_aborted("barrier");
    MPIDI_BGL_clock_leave();
  fn_fail:
    return mpi_errno;
}

int MPIDI_BGL_mpi_bcast(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                        MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    static const char *const algos[] = { "auto", "torus3", "torus1", "mpich", "tree" };
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int a = choice("BGLMPI_BCAST", algos, 5);
    MPIR_ERR_CHKANDJUMP1(a < 0, mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo",
                         "**bgl_collalgo %s", "BGLMPI_BCAST=auto|torus3|torus1|mpich|tree");
    int dt_contig;
    MPI_Aint data_sz, true_lb;
    MPIR_Datatype *dt_ptr;
    MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, true_lb);
    /* the collective network for the whole partition (auto: up to the
     * crossover where the torus's links overtake its one) */
    int tree = (a == 4 || (a == 0 && data_sz <= MPIDI_BGL_TREE_BCAST_MAX)) &&
        spans_partition(comm_ptr) && coll_tree_ok(g->coll);
    if (a == 0 && !tree)
        a = 1;
    /* the deposit-bit trees need the communicator's ranks to fill a box */
    coll_group *grp = tree || a >= 3 ? NULL : group_of(comm_ptr);
    if (!tree && (!grp || !coll_group_hw_ok(grp)))
        return MPIR_Bcast_impl(buffer, count, datatype, root, comm_ptr, errflag);

    int mode;
    mpi_errno = MPIDI_BGL_dt_mode(&mode);
    MPIR_ERR_CHECK(mpi_errno);
    /* the three-route trees are deeper (an extra hop, one more stage): with
     * less than a packet per route one tree is sooner */
    int routes = a == 1 && data_sz >= 3 * TSIM_PAYLOAD_MAX ? 3 : 1;
    if (!dt_contig && data_sz > 0 && mode != MPIDI_BGL_DT_PACK) {
        /* zero-copy: the root gathers every packet from its layout, every
         * other rank scatters it into its own (on the deposit trees, and
         * forwards from there; on the collective network each 256-byte
         * tree packet, coll_tree_bcast_layout) */
        MPIDI_BGL_layout_t l;
        mpi_errno = MPIDI_BGL_dt_layout(buffer, count, datatype, data_sz, mode, &l);
        MPIR_ERR_CHECK(mpi_errno);
        coll_layout blk = { NULL, l.iov, l.n, (size_t) data_sz };
        MPIDI_BGL_clock_enter();
        if (tree ? coll_tree_bcast_layout(g->coll, &blk, MPIDIU_rank_to_lpid(root, comm_ptr)) != 0 :
            coll_bcast_layout_in(g->coll, grp, &blk, root, routes) != 0)
            MPIDI_BGL_job_aborted("broadcast");
        MPIDI_BGL_clock_leave();
        MPIDI_BGL_dt_layout_free(&l);
        goto fn_exit;
    }
    void *buf = (char *) buffer + true_lb, *tmp = NULL, *tmp_mem = NULL;
    MPI_Aint done;
    if (!dt_contig && data_sz > 0) {
        tmp_mem = MPL_malloc(data_sz + MPIDI_BGL_LINE_ALIGN - 1, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!tmp_mem, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        tmp = MPIDI_BGL_lines(tmp_mem);
        if (comm_ptr->rank == root) {   /* staging is charged (bgl_dt.c) */
            MPIR_Typerep_pack(buffer, count, datatype, 0, tmp, data_sz, &done);
            MPIDI_BGL_dt_charge_copy(count, datatype, data_sz);
        }
        buf = tmp;
    }
    MPIDI_BGL_clock_enter();
    if (tree) {
        if (coll_tree_bcast(g->coll, buf, (size_t) data_sz, MPIDIU_rank_to_lpid(root, comm_ptr)))
            MPIDI_BGL_job_aborted("broadcast");
    } else if (coll_bcast_in(g->coll, grp, buf, (size_t) data_sz, root, routes) != 0) {
        MPIDI_BGL_job_aborted("broadcast");
    }
    MPIDI_BGL_clock_leave();
    if (tmp) {
        if (comm_ptr->rank != root) {
            MPIR_Typerep_unpack(tmp, data_sz, buffer, count, datatype, 0, &done);
            MPIDI_BGL_dt_charge_copy(count, datatype, data_sz);
        }
        MPL_free(tmp_mem);
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

/* The group an alltoall(v) runs in, or NULL for MPICH's algorithm
 * (BGLMPI_ALLTOALL=mpich, MPI_IN_PLACE, an intercommunicator). */
static int a2a_group(const void *sendbuf, MPIR_Comm * comm, coll_group ** grp)
{
    static const char *const algos[] = { "torus", "mpich" };
    int mpi_errno = MPI_SUCCESS;
    int a = choice("BGLMPI_ALLTOALL", algos, 2);
    *grp = NULL;
    MPIR_ERR_CHKANDJUMP1(a < 0, mpi_errno, MPI_ERR_OTHER, "**bgl_collalgo",
                         "**bgl_collalgo %s", "BGLMPI_ALLTOALL=torus|mpich");
    if (a == 0 && sendbuf != MPI_IN_PLACE)
        *grp = group_of(comm);
  fn_fail:
    return mpi_errno;
}

/* ---- derived datatypes in the torus alltoall: each peer's block a layout ----
 * (BGLMPI_DATATYPE=zerocopy|memo; bgl_dt.c). The alltoall gathers each
 * packet from the sender's segments and scatters it into the receiver's:
 * no block is packed or unpacked. */

/* n blocks' description and what to free after the call. */
typedef struct {
    coll_layout *send, *recv;
    MPIDI_BGL_layout_t *keep;   /* 2n translations (iov NULL: none) */
    struct iovec *split[2];     /* the alltoall's split lists */
    int n;
} a2a_blocks;

static int blocks_new(a2a_blocks * b, int n)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->send = MPL_calloc(2 * (size_t) n, sizeof *b->send, MPL_MEM_BUFFER);
    b->keep = MPL_calloc(2 * (size_t) n, sizeof *b->keep, MPL_MEM_BUFFER);
    if (!b->send || !b->keep)
        return MPI_ERR_NO_MEM;
    b->recv = b->send + n;
    return MPI_SUCCESS;
}

static void blocks_free(a2a_blocks * b)
{
    for (int i = 0; b->keep && i < 2 * b->n; i++)
        MPIDI_BGL_dt_layout_free(&b->keep[i]);
    MPL_free(b->keep);
    MPL_free(b->send);
    MPL_free(b->split[0]);
    MPL_free(b->split[1]);
}

/* count x type at buf as one block: the buffer from its true lower bound
 * when contiguous, else the datatype's layout (translated or looked up,
 * charged: bgl_dt.c). */
static int one_block(const void *buf, MPI_Aint count, MPI_Datatype type, int mode, coll_layout * out,
                     MPIDI_BGL_layout_t * keep)
{
    int contig;
    MPI_Aint bytes, lb;
    MPIR_Datatype *dtp;
    if (count == 0) {   /* nothing: the type is not looked at (it may be MPI_DATATYPE_NULL) */
        *out = (coll_layout) {(void *) buf, NULL, 0, 0};
        return MPI_SUCCESS;
    }
    MPIDI_Datatype_get_info(count, type, contig, bytes, dtp, lb);
    (void) dtp;
    if (contig || bytes == 0) {
        *out = (coll_layout) {(char *) buf + lb, NULL, 0, (size_t) bytes};
        return MPI_SUCCESS;
    }
    int mpi_errno = MPIDI_BGL_dt_layout(buf, count, type, bytes, mode, keep);
    *out = (coll_layout) {NULL, keep->iov, keep->n, (size_t) bytes};
    return mpi_errno;
}

/* The alltoall's n blocks of count x type each, one after the other from
 * buf: one translation of n*count elements, cut at every `per` bytes. */
static int split_blocks(const void *buf, MPI_Aint count, MPI_Datatype type, int n, int mode,
                        coll_layout * out, MPIDI_BGL_layout_t * keep, struct iovec **split)
{
    coll_layout all;
    int mpi_errno = one_block(buf, count * n, type, mode, &all, keep);
    if (mpi_errno != MPI_SUCCESS)
        return mpi_errno;
    size_t per = all.len / (size_t) n;
    if (!all.niov) {
        for (int i = 0; i < n; i++)
            out[i] = (coll_layout) {(char *) all.buf + (size_t) i * per, NULL, 0, per};
        return MPI_SUCCESS;
    }
    /* a block boundary may cut a segment: at most n - 1 more pieces */
    struct iovec *v = MPL_malloc((all.niov + (size_t) n) * sizeof *v, MPL_MEM_BUFFER);
    if (!v)
        return MPI_ERR_NO_MEM;
    *split = v;
    ml_cursor cur = { 0, 0 };
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        size_t first = k, got, done = 0;
        uint64_t addr;
        while (done < per &&
               (got = ml_layout_piece(all.iov, all.niov, &cur, (size_t) i * per + done, per - done,
                                        &addr))) {
            v[k++] = (struct iovec) {(void *) (uintptr_t) addr, got};
            done += got;
        }
        out[i] = (coll_layout) {NULL, v + first, k - first, per};
        if (!per)
            out[i] = (coll_layout) {(void *) buf, NULL, 0, 0};
    }
    return MPI_SUCCESS;
}

static int a2a_layouts(coll_group * grp, a2a_blocks * b, const char *what)
{
    MPIDI_BGL_clock_enter();
    if (coll_alltoallw_in(MPIDI_BGL_global.coll, grp, b->send, b->recv) != 0)
        MPIDI_BGL_job_aborted(what);
    MPIDI_BGL_clock_leave();
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_alltoall(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                           MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    coll_group *grp;
    void *stmp = NULL, *rtmp = NULL, *rtmp_mem = NULL;  /* before any jump to fn_exit, which frees them */
    mpi_errno = a2a_group(sendbuf, comm_ptr, &grp);
    MPIR_ERR_CHECK(mpi_errno);
    if (!grp)
        return MPIR_Alltoall_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm_ptr, errflag);

    int n = comm_ptr->local_size;
    MPI_Aint sbytes, slb, rbytes, rlb, done;
    int scontig = blocks_contig(sendcount, sendtype, &sbytes, &slb);
    int rcontig = blocks_contig(recvcount, recvtype, &rbytes, &rlb);
    MPIR_ERR_CHKANDJUMP2(sbytes != rbytes, mpi_errno, MPI_ERR_TRUNCATE, "**bgl_a2asize",
                         "**bgl_a2asize %L %L", (long long) sbytes, (long long) rbytes);
    int mode;
    mpi_errno = MPIDI_BGL_dt_mode(&mode);
    MPIR_ERR_CHECK(mpi_errno);
    if ((!scontig || !rcontig) && sbytes > 0 && mode != MPIDI_BGL_DT_PACK) {
        /* zero-copy: every peer's block a layout (or a plain block) */
        a2a_blocks b;
        mpi_errno = blocks_new(&b, n);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = split_blocks(sendbuf, sendcount, sendtype, n, mode, b.send, &b.keep[0],
                                     &b.split[0]);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = split_blocks(recvbuf, recvcount, recvtype, n, mode, b.recv, &b.keep[1],
                                     &b.split[1]);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = a2a_layouts(grp, &b, "alltoall");
        blocks_free(&b);
        return mpi_errno;
    }
    const void *sb = (const char *) sendbuf + slb;
    void *rb = (char *) recvbuf + rlb;
    if (!scontig && sbytes > 0) {
        stmp = MPL_malloc(sbytes * n, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!stmp, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        MPIR_Typerep_pack(sendbuf, sendcount * n, sendtype, 0, stmp, sbytes * n, &done);
        MPIDI_BGL_dt_charge_copy(sendcount * n, sendtype, sbytes * n);
        sb = stmp;
    }
    if (!rcontig && rbytes > 0) {
        rtmp_mem = MPL_malloc(rbytes * n + MPIDI_BGL_LINE_ALIGN - 1, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(!rtmp_mem, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
        rtmp = MPIDI_BGL_lines(rtmp_mem);
        rb = rtmp;
    }
    MPIDI_BGL_clock_enter();
    if (coll_alltoall_in(g->coll, grp, sb, rb, (size_t) sbytes) != 0)
        MPIDI_BGL_job_aborted("alltoall");
    MPIDI_BGL_clock_leave();
    if (rtmp) {
        MPIR_Typerep_unpack(rtmp, rbytes * n, recvbuf, recvcount * n, recvtype, 0, &done);
        MPIDI_BGL_dt_charge_copy(recvcount * n, recvtype, rbytes * n);
    }
  fn_exit:
    MPL_free(stmp);
    MPL_free(rtmp_mem);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Bytes per element and the extent of type, when elements are contiguous
 * and packed (extent == size): counts and displacements then scale to
 * bytes. 0 otherwise. */
static int packed_type(MPI_Datatype type, MPI_Aint * size, MPI_Aint * extent, MPI_Aint * lb)
{
    int contig;
    MPIR_Datatype *dt_ptr;
    MPI_Aint bytes;
    MPIDI_Datatype_get_info(1, type, contig, bytes, dt_ptr, *lb);
    MPIR_Datatype_get_extent_macro(type, *extent);
    *size = bytes;
    return contig && bytes > 0 && *extent == bytes;
}

int MPIDI_BGL_mpi_alltoallv(const void *sendbuf, const MPI_Aint * sendcounts,
                            const MPI_Aint * sdispls, MPI_Datatype sendtype, void *recvbuf,
                            const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                            MPI_Datatype recvtype, MPIR_Comm * comm_ptr, MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    coll_group *grp;
    mpi_errno = a2a_group(sendbuf, comm_ptr, &grp);
    MPIR_ERR_CHECK(mpi_errno);
    MPI_Aint ssz, sext, slb, rsz, rext, rlb;
    int mode, n = comm_ptr->local_size;
    mpi_errno = MPIDI_BGL_dt_mode(&mode);
    MPIR_ERR_CHECK(mpi_errno);
    int spacked = packed_type(sendtype, &ssz, &sext, &slb);
    int rpacked = packed_type(recvtype, &rsz, &rext, &rlb);
    if (grp && (!spacked || !rpacked) && mode != MPIDI_BGL_DT_PACK) {
        /* zero-copy: each peer's elements a layout */
        for (int i = 0; i < n; i++)
            if (sendcounts[i] < 0 || recvcounts[i] < 0)
                grp = NULL;
        a2a_blocks b;
        if (grp && (mpi_errno = blocks_new(&b, n)) == MPI_SUCCESS) {
            for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
                mpi_errno = one_block((const char *) sendbuf + sdispls[i] * sext, sendcounts[i],
                                      sendtype, mode, &b.send[i], &b.keep[i]);
                if (mpi_errno == MPI_SUCCESS)
                    mpi_errno = one_block((char *) recvbuf + rdispls[i] * rext, recvcounts[i],
                                          recvtype, mode, &b.recv[i], &b.keep[n + i]);
            }
            if (mpi_errno == MPI_SUCCESS)
                mpi_errno = a2a_layouts(grp, &b, "alltoallv");
        }
        if (grp) {
            blocks_free(&b);
            return mpi_errno;
        }
    }
    /* element types that are not packed bytes (BGLMPI_DATATYPE=pack): MPICH's algorithm */
    if (!grp || !spacked || !rpacked)
        return MPIR_Alltoallv_impl(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm_ptr, errflag);
    size_t *v = MPL_malloc(4 * (size_t) n * sizeof *v, MPL_MEM_BUFFER);
    MPIR_ERR_CHKANDJUMP(!v, mpi_errno, MPI_ERR_NO_MEM, "**nomem");
    for (int i = 0; i < n; i++) {
        if (sdispls[i] < 0 || rdispls[i] < 0 || sendcounts[i] < 0 || recvcounts[i] < 0) {
            MPL_free(v);
            return MPIR_Alltoallv_impl(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm_ptr, errflag);
        }
        v[i] = (size_t) (sendcounts[i] * ssz);
        v[n + i] = (size_t) (sdispls[i] * sext);
        v[2 * n + i] = (size_t) (recvcounts[i] * rsz);
        v[3 * n + i] = (size_t) (rdispls[i] * rext);
    }
    MPIDI_BGL_clock_enter();
    if (coll_alltoallv_in(g->coll, grp, (const char *) sendbuf + slb, v, v + n,
                          (char *) recvbuf + rlb, v + 2 * n, v + 3 * n) != 0)
        MPIDI_BGL_job_aborted("alltoallv");
    MPIDI_BGL_clock_leave();
    MPL_free(v);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPI_Alltoallw on the torus alltoall (BGLMPI_ALLTOALL=torus, where
 * MPI_Alltoall goes): each peer's block, of its own type at its own byte
 * displacement, is a layout or a plain block. BGLMPI_DATATYPE=pack (the
 * layouts' staging is what alltoallw never had) and MPI_IN_PLACE: MPICH's
 * algorithm, as before. */
int MPIDI_BGL_mpi_alltoallw(const void *sendbuf, const MPI_Aint * sendcounts,
                            const MPI_Aint * sdispls, const MPI_Datatype * sendtypes,
                            void *recvbuf, const MPI_Aint * recvcounts, const MPI_Aint * rdispls,
                            const MPI_Datatype * recvtypes, MPIR_Comm * comm_ptr,
                            MPIR_Errflag_t * errflag)
{
    int mpi_errno = MPI_SUCCESS, mode;
    coll_group *grp;
    mpi_errno = a2a_group(sendbuf, comm_ptr, &grp);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_BGL_dt_mode(&mode);
    MPIR_ERR_CHECK(mpi_errno);
    int n = comm_ptr->local_size;
    for (int i = 0; grp && i < n; i++)
        if (sendcounts[i] < 0 || recvcounts[i] < 0)
            grp = NULL;
    if (!grp || mode == MPIDI_BGL_DT_PACK)
        return MPIR_Alltoallw_impl(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm_ptr, errflag);
    a2a_blocks b;
    mpi_errno = blocks_new(&b, n);
    for (int i = 0; i < n && mpi_errno == MPI_SUCCESS; i++) {
        mpi_errno = one_block((const char *) sendbuf + sdispls[i], sendcounts[i], sendtypes[i], mode,
                              &b.send[i], &b.keep[i]);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = one_block((char *) recvbuf + rdispls[i], recvcounts[i], recvtypes[i], mode,
                                  &b.recv[i], &b.keep[n + i]);
    }
    /* the torus alltoall needs each pair's sizes to agree (MPI requires it) */
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = a2a_layouts(grp, &b, "alltoallw");
    blocks_free(&b);
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
