/* bglemu CH4 netmod "bgl": the per-object state CH4 embeds in its requests,
 * communicators, datatypes, ops, windows, addresses and partitioned requests
 * (configure's ch4_netmod_*_decl names MPIDI_BGL_<kind>_t for each).
 * Changing a type here changes MPIR_Request etc.: all of MPICH recompiles. */
#ifndef BGL_PRE_H_INCLUDED
#define BGL_PRE_H_INCLUDED

/* In every request MPIDIG uses for an active message (req->dev.ch4.am.netmod_am.bgl).
 * The message layer's per-message object (ml_msg) will live here. */
typedef struct {
    void *pack_buffer;          /* packed copy of non-contiguous data, or NULL */
    int handler_id;             /* MPIDIG origin callback to run on completion */
} MPIDI_BGL_am_request_t;

typedef struct {
    int dummy;
} MPIDI_BGL_request_t;

typedef struct {
    int dummy;
} MPIDI_BGL_comm_t;

typedef struct {
    int dummy;
} MPIDI_BGL_dt_t;

typedef struct {
    int dummy;
} MPIDI_BGL_op_t;

typedef struct {
    int dummy;
} MPIDI_BGL_win_t;

/* Per-rank address: a world rank is a torus node (x,y,z) plus a core t. */
typedef struct {
    int dummy;
} MPIDI_BGL_addr_t;

typedef struct {
    int dummy;
} MPIDI_BGL_part_t;

#endif /* BGL_PRE_H_INCLUDED */
