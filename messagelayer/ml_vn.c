/* Virtual node mode between the two processors of a node: the sender
 * hands its buffer's address (or its layout's segment list) over the
 * scratchpad; the receiver copies the data straight from the sender's
 * memory and acknowledges it. Where it cannot read that memory it refuses
 * (NACK) and the sender streams the data over the scratchpad instead. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ml_internal.h"

static int vn_send(ml_ctx *ml, ml_peer *p, ml_msg *m)
{
    int dproc = ml->map.proc[m->dst];
    ml_sw sw = {T_VN_ADDR, (uint8_t)m->hdrlen, m->seq, (uint32_t)m->len};
    if (m->niov) { /* our layout, for the receiver to copy from */
        ml_vn_layout l = {{(int32_t)getpid(), 0, 0, (uint64_t)(uintptr_t)m->iov}, m->niov, m->layout_key};
        sw.type = T_VN_LAYOUT;
        return ml_send_with_id(ml, p, m, dproc, TSIM_INJ_SP, &sw, &l, sizeof l);
    }
    ml_vn_addr a = {(int32_t)getpid(), 0, 0, (uint64_t)(uintptr_t)m->buf};
    return ml_send_with_id(ml, p, m, dproc, TSIM_INJ_SP, &sw, &a, sizeof a);
}

/* The fallback's data packets of m from m->off (m->seq is the receiver's
 * slot), over the scratchpad to the other processor. */
static void vn_wire(const ml_ctx *ml, const ml_msg *m, ml_ho_tx *t)
{
    ml_wire_of(ml, m, t, T_VN_DATA, m->seq, TSIM_INJ_SP, 0, (uint8_t)(ml->map.proc[m->dst] % TSIM_CPUS));
}

/* VN with a layout on either side: the sender's segment list is read from
 * its memory (the layout exchange: its bytes at the copy rate), then the
 * data is copied piece by piece, a piece being where a segment of one side
 * meets a segment of the other (each costs ddt_seg_cycles). Returns 0, or
 * -1 if the sender's memory can't be read (the scratchpad fallback). */
static int vn_copy_layout(ml_ctx *ml, ml_rx *rx, size_t n)
{
    int self = rx->vn_pid == (int32_t)getpid();
    struct iovec one_r = {(void *)(uintptr_t)rx->vn_addr, n}, one_l = {rx->r.buf, n};
    const struct iovec *rv = &one_r, *lv = rx->r.niov ? rx->r.iov : &one_l;
    size_t rn = 1, ln = rx->r.niov ? rx->r.niov : 1;
    struct iovec *rlist = NULL;
    if (rx->vn_niov) {
        rn = (size_t)rx->vn_niov;
        size_t lb = rn * sizeof *rlist;
        if (self) {
            rv = (const struct iovec *)(uintptr_t)rx->vn_addr;
        } else {
            if (!(rlist = malloc(lb))) abort();
            struct iovec l = {rlist, lb}, r = {(void *)(uintptr_t)rx->vn_addr, lb};
            if (process_vm_readv(rx->vn_pid, &l, 1, &r, 1, 0) != (ssize_t)lb) {
                free(rlist);
                return -1;
            }
            rv = rlist;
        }
        /* the layout exchange: reading the list, or (a key this peer's
         * layouts had before) a lookup of what it said */
        ml_peer *p = &ml->peer[rx->src];
        int seen = 0;
        for (int i = 0; i < ML_VN_KEYS && rx->vn_key; i++) seen |= p->vn_keys[i] == rx->vn_key;
        if (seen) {
            ml_charge_ddt(ml->pp, ml->prm->ddt_lookup_cycles);
        } else {
            ml_charge_ddt(ml->pp, (uint64_t)lb * ml->prm->ml_copy_cycles_per_kb / 1024);
            if (rx->vn_key && ml->prm->ddt_cache_entries) {
                p->vn_keys[p->vn_key_next] = rx->vn_key;
                p->vn_key_next = (uint8_t)((p->vn_key_next + 1) % ML_VN_KEYS);
            }
        }
    }
    /* Host speed only: the kernel pins pages per remote segment, so many
     * small ones are read faster as the one span they lie in (when it is
     * not much larger than the data), then copied out locally. */
    char *span = NULL;
    uintptr_t s_lo = UINTPTR_MAX, s_hi = 0;
    if (!self && rn > 64) {
        for (size_t i = 0; i < rn; i++) {
            if (!rv[i].iov_len) continue;
            uintptr_t a = (uintptr_t)rv[i].iov_base;
            if (a < s_lo) s_lo = a;
            if (a + rv[i].iov_len > s_hi) s_hi = a + rv[i].iov_len;
        }
        if (s_hi > s_lo && s_hi - s_lo <= 4 * n + (1u << 20) && (span = malloc(s_hi - s_lo))) {
            struct iovec l = {span, s_hi - s_lo}, r = {(void *)s_lo, s_hi - s_lo};
            if (process_vm_readv(rx->vn_pid, &l, 1, &r, 1, 0) != (ssize_t)(s_hi - s_lo)) {
                free(span);
                span = NULL;
            }
        }
    }
    enum { BATCH = 512 };
    struct iovec bl[BATCH], br[BATCH];
    size_t li = 0, lo = 0, ri = 0, ro = 0, done = 0, nb = 0, batch_bytes = 0;
    uint64_t pieces = 0;
    int rc = 0;
    while (done < n && rc == 0) {
        while (li < ln && lo == lv[li].iov_len) li++, lo = 0;
        while (ri < rn && ro == rv[ri].iov_len) ri++, ro = 0;
        if (li == ln || ri == rn) break;
        size_t k = lv[li].iov_len - lo;
        if (rv[ri].iov_len - ro < k) k = rv[ri].iov_len - ro;
        if (n - done < k) k = n - done;
        bl[nb] = (struct iovec){(char *)lv[li].iov_base + lo, k};
        br[nb] = (struct iovec){(char *)rv[ri].iov_base + ro, k};
        nb++;
        batch_bytes += k;
        lo += k;
        ro += k;
        done += k;
        pieces++;
        if (nb == BATCH || done == n) {
            if (self) {
                for (size_t j = 0; j < nb; j++) memcpy(bl[j].iov_base, br[j].iov_base, bl[j].iov_len);
            } else if (span) {
                for (size_t j = 0; j < nb; j++)
                    memcpy(bl[j].iov_base, span + ((uintptr_t)br[j].iov_base - s_lo), bl[j].iov_len);
            } else if (process_vm_readv(rx->vn_pid, bl, nb, br, nb, 0) != (ssize_t)batch_bytes) {
                rc = -1;
            }
            nb = 0;
            batch_bytes = 0;
        }
    }
    free(rlist);
    free(span);
    if (rc == 0)
        ml_charge_ddt(ml->pp, pieces * ml->prm->ddt_seg_cycles);
    return rc;
}

/* VN: copies the message from the sender's memory and acknowledges it (now
 * or, if the upcall deferred it, from ml_accept); without a direct copy the
 * sender streams it over the scratchpad instead. */
static void vn_copy(ml_ctx *ml, uint16_t k)
{
    ml_rx *rx = &ml->slots[k];
    size_t n = rx->len < rx->r.cap ? rx->len : rx->r.cap;
    int ok = 1;
    if (n) {
        if (!ml->vn_copy_ok) {
            ok = 0;
        } else if (rx->vn_niov || rx->r.niov) {
            ok = vn_copy_layout(ml, rx, n) == 0;
        } else if (rx->vn_pid == (int32_t)getpid()) {
            memcpy(rx->r.buf, (const void *)(uintptr_t)rx->vn_addr, n);
        } else {
            struct iovec l = {rx->r.buf, n}, r = {(void *)(uintptr_t)rx->vn_addr, n};
            ok = process_vm_readv(rx->vn_pid, &l, 1, &r, 1, 0) == (ssize_t)n;
        }
    }
    if (ok) {
        ml_charge(ml, (uint64_t)n * ml->prm->ml_copy_cycles_per_kb / 1024);
        rx->got = rx->len;
        ml_send_ctl(ml, rx->src, TSIM_INJ_SP, T_VN_ACK, 0, rx->sender_id, 0);
        ml_rx_complete(ml, rx);
    } else {
        ml_act_add(ml, rx, T_VN_DATA, k);
        ml_send_ctl(ml, rx->src, TSIM_INJ_SP, T_VN_NACK, 0, rx->sender_id, k);
    }
}


void ml_vn_accept(ml_ctx *ml, uint16_t k) { vn_copy(ml, k); }

static void vn_first(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    const uint8_t *pl = s->p.payload;
    size_t hl = sw.b;
    ml_vn_layout l = {0};
    memcpy(&l, pl + hl, sw.type == T_VN_LAYOUT ? sizeof l : sizeof l.a);
    ml_vn_addr a = l.a;
    ml_charge(ml, ml->prm->ml_vn_cycles);
    uint16_t k = ml_slot_alloc(ml);
    ml_rx *rx = &ml->slots[k];
    ml_upcall(ml, src, pl, hl, sw.w, rx, ML_VN, k);
    rx->sender_id = a.id;
    rx->vn_pid = a.pid;
    rx->vn_addr = a.addr;
    rx->vn_niov = l.niov;
    rx->vn_key = l.key;
    if (!rx->r.defer) vn_copy(ml, k);
}

static void vn_packet(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    (void)src;
    switch (sw.type) {
    case T_VN_NACK: { /* the receiver can't read our memory: stream it */
        ml_msg *m = ml->ids[sw.id];
        ml->ids[sw.id] = NULL;
        ml_data_phase(ml, m, (uint16_t)sw.w, sw.b);
        break;
    }
    case T_VN_DATA: {
        ml_rx *rx = &ml->slots[sw.id];
        ml_rx_data(ml, rx, sw.w, s->p.payload, rx->len - sw.w < TSIM_PAYLOAD_MAX ? rx->len - sw.w : TSIM_PAYLOAD_MAX);
        if (rx->got >= rx->len) ml_rx_complete(ml, rx);
        break;
    }
    case T_VN_ACK: {
        ml_msg *m = ml->ids[sw.id];
        ml->ids[sw.id] = NULL;
        ml_msg_finished(ml, m);
        break;
    }
    }
}

const ml_proto_ops ml_vn_proto = {
    .name = "vn",
    .send = vn_send,
    .first = vn_first,
    .packet = vn_packet,
    .wire = vn_wire,
};
