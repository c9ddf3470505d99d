/* Point-to-point baselines: what MPICH's default algorithms do with
 * messages (a binomial broadcast tree; alltoall as every rank sending to
 * every other), over ordinary message-layer sends. Their messages carry a
 * small header that coll_upcall recognises. */
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

/* A buffer the collective receives into, 64-byte aligned: where it lies in
 * its cache lines decides which cpu receives (ml_recv.c's grant), and
 * malloc's placement is the host's, not the simulation's. */
static void *lines_alloc(size_t len)
{
    return aligned_alloc(64, (len + 63) / 64 * 64 + (len == 0) * 64);
}

typedef struct p2p_hdr {
    uint8_t magic[2]; /* 'C', 'L' */
    uint8_t kind;     /* OP_P2P_* */
    uint8_t pad;
    uint16_t seq;
} p2p_hdr;

static void count(ml_ctx *ml, void *arg)
{
    (void)ml;
    (*(volatile int *)arg)++;
}

static void early_done(ml_ctx *ml, void *arg)
{
    (void)ml;
    ((coll_p2p_early *)arg)->done = 1;
}

void coll_upcall(ml_ctx *ml, int src, const void *hdr, size_t hdrlen, size_t len, ml_recv *out,
                 void *uarg)
{
    coll_upcall_arg *ua = uarg;
    p2p_hdr h;
    if (hdrlen == sizeof h) memcpy(&h, hdr, sizeof h);
    if (hdrlen != sizeof h || h.magic[0] != 'C' || h.magic[1] != 'L' || !ua->c) {
        if (ua->next) ua->next(ml, src, hdr, hdrlen, len, out, ua->next_arg);
        else *out = (ml_recv){0};
        return;
    }
    coll_ctx *c = ua->c;
    if (c->op == h.kind && c->cur == h.seq) {
        if (c->op == OP_P2P_BCAST) {
            *out = (ml_recv){.buf = c->buf, .cap = c->len, .done = count, .arg = (void *)&c->p2p_got};
        } else {
            *out = (ml_recv){.buf = c->rbuf + c->rdispls[src], .cap = c->rcounts[src],
                             .done = count, .arg = (void *)&c->p2p_got};
        }
        return;
    }
    coll_p2p_early *e = calloc(1, sizeof *e);
    if (!e || !(e->buf = lines_alloc(len))) abort();
    e->seq = h.seq;
    e->src = src;
    e->len = len;
    e->next = c->p2p_early;
    c->p2p_early = e;
    c->st.pkts_early++;
    c->st.pkts_held++;
    *out = (ml_recv){.buf = e->buf, .cap = len, .done = early_done, .arg = e};
}

/* Takes messages of the running collective that arrived before it started. */
static int take_early(coll_ctx *c)
{
    coll_p2p_early **pp = &c->p2p_early;
    while (*pp) {
        coll_p2p_early *e = *pp;
        if (e->seq != c->cur) {
            pp = &e->next;
            continue;
        }
        while (!e->done)
            if (!ml_advance(c->ml) && ml_idle(c->ml, "coll p2p: early message") != 0) return -1;
        uint8_t *dst = c->op == OP_P2P_BCAST ? c->buf : c->rbuf + c->rdispls[e->src];
        size_t cap = c->op == OP_P2P_BCAST ? c->len : c->rcounts[e->src];
        memcpy(dst, e->buf, e->len < cap ? e->len : cap);
        c->p2p_got++;
        c->st.pkts_held--;
        *pp = e->next;
        free(e->buf);
        free(e);
    }
    return 0;
}

static int wait_counts(coll_ctx *c, int got, int sent, const char *why)
{
    while (c->p2p_got < got || c->p2p_sent < sent)
        if (!ml_advance(c->ml) && ml_idle(c->ml, why) != 0) return -1;
    return 0;
}

int coll_bcast_p2p(coll_ctx *c, void *buf, size_t len, int root)
{
    if (!c || root < 0 || root >= c->nranks || (len && !buf) || c->op != OP_NONE) return -1;
    if (!c->p2p_bound) return COLL_ENOTSUP;
    const int N = c->nranks, v = (c->rank - root + N) % N;
    c->cur = c->seq++;
    c->st.bcasts++;
    c->op = OP_P2P_BCAST;
    c->buf = buf;
    c->len = len;
    c->p2p_got = 0;
    c->p2p_sent = 0;
    int rc = take_early(c), mask = 1;
    while (mask < N && !(v & mask)) mask <<= 1;
    if (!rc && v) rc = wait_counts(c, 1, 0, "coll_bcast_p2p: from parent");
    p2p_hdr h = {{'C', 'L'}, OP_P2P_BCAST, 0, c->cur};
    ml_msg m[32];
    int nm = 0;
    for (mask >>= 1; !rc && mask > 0; mask >>= 1) {
        if (v + mask >= N) continue;
        m[nm] = (ml_msg){.dst = (v + mask + root) % N, .hdr = &h, .hdrlen = sizeof h, .buf = buf,
                         .len = len, .proto = ML_AUTO, .done = count, .arg = (void *)&c->p2p_sent};
        if (ml_send(c->ml, &m[nm]) != 0) rc = -1;
        else nm++;
    }
    if (!rc) rc = wait_counts(c, v ? 1 : 0, nm, "coll_bcast_p2p: children");
    c->op = OP_NONE;
    return rc;
}

int coll_alltoall_p2p(coll_ctx *c, const void *sbuf, void *rbuf, size_t per_pair)
{
    if (!c || c->op != OP_NONE) return -1;
    if (!c->p2p_bound) return COLL_ENOTSUP;
    const int N = c->nranks, me = c->rank;
    size_t *v = malloc(2 * (size_t)N * sizeof *v);
    ml_msg *m = malloc((size_t)N * sizeof *m);
    if (!v || !m) {
        free(v);
        free(m);
        return -1;
    }
    for (int i = 0; i < N; i++) v[i] = per_pair, v[N + i] = (size_t)i * per_pair;
    c->cur = c->seq++;
    c->st.alltoalls++;
    c->op = OP_P2P_A2A;
    c->rbuf = rbuf;
    c->rcounts = v;
    c->rdispls = v + N;
    c->p2p_got = 0;
    c->p2p_sent = 0;
    if (per_pair) memcpy((uint8_t *)rbuf + (size_t)me * per_pair,
                         (const uint8_t *)sbuf + (size_t)me * per_pair, per_pair);
    int rc = take_early(c), nm = 0, d = 0;
    p2p_hdr h = {{'C', 'L'}, OP_P2P_A2A, 0, c->cur};
    /* at most `window` sends outstanding (coll_set_p2p_window; <= 0: all) */
    int window = c->p2p_window > 0 ? c->p2p_window : N;
    while (!rc && (nm < N - 1 || c->p2p_got < N - 1 || c->p2p_sent < nm)) {
        int posted = 0;
        while (nm < N - 1 && nm - c->p2p_sent < window) {
            if (d == me) d++;
            m[nm] = (ml_msg){.dst = d, .hdr = &h, .hdrlen = sizeof h,
                             .buf = (const uint8_t *)sbuf + (size_t)d * per_pair, .len = per_pair,
                             .proto = ML_AUTO, .done = count, .arg = (void *)&c->p2p_sent};
            if (ml_send(c->ml, &m[nm]) != 0) {
                rc = -1;
                break;
            }
            nm++, d++, posted++;
        }
        if (rc || (nm == N - 1 && c->p2p_got >= N - 1 && c->p2p_sent >= nm)) break;
        if (!ml_advance(c->ml) && !posted && ml_idle(c->ml, "coll_alltoall_p2p") != 0) rc = -1;
    }
    c->op = OP_NONE;
    c->rcounts = c->rdispls = NULL;
    if (rc) return rc; /* the job is aborting: the layer may still hold m */
    free(m);
    free(v);
    return rc;
}

int coll_allreduce_max_p2p(coll_ctx *c, uint64_t *v, int n)
{
    if (!c || n < 1 || !v || c->op != OP_NONE) return -1;
    if (!c->p2p_bound) return COLL_ENOTSUP;
    const int N = c->nranks, me = c->rank;
    size_t bytes = (size_t)n * sizeof *v;
    size_t *cd = malloc(2 * (size_t)N * sizeof *cd);
    uint64_t *tmp = lines_alloc((size_t)N * bytes);
    if (!cd || !tmp) {
        free(cd);
        free(tmp);
        return -1;
    }
    for (int i = 0; i < N; i++) cd[i] = bytes, cd[N + i] = (size_t)i * bytes;
    c->cur = c->seq++;
    c->op = OP_P2P_REDUCE;
    c->rbuf = (uint8_t *)tmp;
    c->rcounts = cd;
    c->rdispls = cd + N;
    c->p2p_got = 0;
    c->p2p_sent = 0;
    int rc = take_early(c), mask = 1, nchild = 0;
    while (mask < N && !(me & mask)) {
        if (me + mask < N) nchild++;
        mask <<= 1;
    }
    if (!rc) rc = wait_counts(c, nchild, 0, "coll_allreduce_max_p2p: from children");
    for (int m = 1; !rc && m < mask && m < N; m <<= 1) {
        if (me + m >= N) continue;
        const uint64_t *x = tmp + (size_t)(me + m) * (size_t)n;
        for (int i = 0; i < n; i++)
            if (x[i] > v[i]) v[i] = x[i];
    }
    p2p_hdr h = {{'C', 'L'}, OP_P2P_REDUCE, 0, c->cur};
    ml_msg msg;
    if (!rc && me) {
        msg = (ml_msg){.dst = me - mask, .hdr = &h, .hdrlen = sizeof h, .buf = v, .len = bytes,
                       .proto = ML_AUTO, .done = count, .arg = (void *)&c->p2p_sent};
        rc = ml_send(c->ml, &msg);
        if (!rc) rc = wait_counts(c, nchild, 1, "coll_allreduce_max_p2p: to parent");
    }
    c->op = OP_NONE;
    c->rcounts = c->rdispls = NULL;
    if (rc) return rc;
    free(cd);
    free(tmp);
    return coll_bcast_p2p(c, v, bytes, 0);
}
