/* bglemu CH4 netmod "bgl": the per-object state CH4 embeds in its requests,
 * communicators, datatypes, ops, windows, addresses and partitioned requests. The message layer's
 * message objects (ml_msg) will live in MPIDI_BGL_request_t. */
#ifndef BGL_PRE_H_INCLUDED
#define BGL_PRE_H_INCLUDED

typedef struct {
    int dummy;
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

typedef struct {
    int dummy;
} MPIDI_BGL_addr_t;

typedef struct {
    int dummy;
} MPIDI_BGL_part_t;

#endif /* BGL_PRE_H_INCLUDED */
