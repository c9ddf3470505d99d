/* Receiving: dispatch by software header, per-pair matching order, the
 * protocols' receive sides. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ml_internal.h"
#include "../packetlayer/pl_trace.h"

static int rank_of(const ml_ctx *ml, const tsim_slot *s)
{
    return ml->map.rank[s->m.src];
}

static ml_sw sw_of(const tsim_slot *s)
{
    ml_sw sw;
    memcpy(&sw, s->p.sw, sizeof sw);
    return sw;
}

/* Bytes of payload a packet carries (its chunks minus the header). */
static size_t payload_of(const tsim_slot *s)
{
    return (size_t)s->p.hw.chunks * TSIM_CHUNK - TSIM_HDR_BYTES;
}

unsigned ml_rx_write(ml_rx *rx, uint64_t *reordered, size_t off, const void *data, size_t n)
{
    unsigned segs = 0;
    if (off < rx->hi) (*reordered)++;
    else rx->hi = off;
    if (off < rx->r.cap) {
        size_t k = off + n <= rx->r.cap ? n : rx->r.cap - off;
        if (rx->r.niov && !rx->r.buf)
            segs = ml_layout_copy(rx->r.iov, rx->r.niov, &rx->cur, off, (void *)data, k, 0);
        else if (k) memcpy((char *)rx->r.buf + off, data, k);
        if (rx->r.niov && rx->r.buf) segs = tsim_layout_segs(rx->r.iov, rx->r.niov, &rx->cur, off, k);
    }
    rx->got += n;
    return segs;
}

static void rx_write(ml_ctx *ml, ml_rx *rx, size_t off, const void *data, size_t n)
{
    unsigned segs = ml_rx_write(rx, &ml->st.reordered, off, data, n);
    if (segs) ml_charge_ddt(ml->pp, (uint64_t)segs * ml->prm->ddt_seg_cycles);
}

/* A layout's capacity is its segments' total; its buf is its host stage
 * (ml_layout.c) or NULL. The VN protocol copies into the layout itself. */
static void rx_set_cap(ml_ctx *ml, ml_rx *rx)
{
    if (rx->r.niov) {
        rx->r.cap = ml_layout_bytes(rx->r.iov, rx->r.niov);
        rx->r.buf = rx->r.proto != ML_VN && ml_stage_wanted(ml, rx->r.niov, rx->r.cap)
                        ? malloc(rx->r.cap ? rx->r.cap : 1) : NULL;
        ml->st.staged += rx->r.buf != NULL;
    }
}

static void rx_complete(ml_ctx *ml, ml_rx *rx)
{
    ml_act_del(ml, rx);
    if (rx->r.niov && rx->r.buf) {
        ml_stage_scatter(rx->r.iov, rx->r.niov, rx->r.buf, rx->len < rx->r.cap ? rx->len : rx->r.cap);
        free(rx->r.buf);
        rx->r.buf = NULL;
    }
    ml_recv r = rx->r;
    rx->used = 0;
    ml_charge(ml, ml->prm->ml_callback_cycles);
    if (r.done) r.done(ml, r.arg);
}

static void upcall(ml_ctx *ml, int src, const uint8_t *hdr, size_t hl, size_t len, ml_rx *rx,
                   ml_proto proto, unsigned token)
{
    ml_act_del(ml, rx);
    memset(rx, 0, sizeof *rx);
    rx->r.proto = proto;
    rx->r.token = token;
    uint64_t t0 = pl_now(ml->pp);
    ml_charge(ml, ml->prm->ml_callback_cycles);
    ml->upcall(ml, src, hdr, hl, len, &rx->r, ml->uarg);
    rx_set_cap(ml, rx);
    if (pl_tracing()) pl_trace_msg(ml->pp, PLT_RECV, proto, t0, pl_now(ml->pp), src, len);
    rx->len = len;
    rx->src = src;
    rx->used = 1;
}

static uint16_t slot_alloc(ml_ctx *ml)
{
    for (uint16_t i = 0; i < ML_MAX_IDS; i++)
        if (!ml->slots[i].used) return i;
    abort(); /* more than ML_MAX_IDS receptions in flight */
}

static void stash(ml_peer *p, const tsim_slot *s)
{
    ml_stash *st = malloc(sizeof *st);
    if (!st) abort();
    st->s = *s;
    st->next = NULL;
    if (!p->stash) p->stash_tail = &p->stash;
    *p->stash_tail = st;
    p->stash_tail = &st->next;
}

static void send_ctl(ml_ctx *ml, int src, int fifo, uint8_t type, uint8_t b, uint16_t id, uint32_t w)
{
    ml_sw sw = {type, b, id, w};
    ml_inject(ml, ml->map.proc[src], fifo, 0, 0, &sw, NULL, 0, NULL, 0);
}

/* Rendezvous: tells the sender where the data goes (now or, if the upcall
 * deferred it, from ml_accept). */
static void grant(ml_ctx *ml, uint16_t k)
{
    ml_rx *rx = &ml->slots[k];
    /* data whose buffer (or a layout's first segment) is cache-line aligned
     * is received by the coprocessor; a flat buffer that is not, by both:
     * the coprocessor its whole lines, if it has any (ml_split_end) */
    size_t align = ml->prm->ml_coproc_align;
    uintptr_t at = rx->r.niov ? (uintptr_t)rx->r.iov[0].iov_base : (uintptr_t)rx->r.buf;
    uint8_t b = ML_CPU_MAIN, cpu = ML_CPU_MAIN;
    if (ml->co_running && align && rx->r.cap >= rx->len) {
        size_t head = (align - at % align) % align;
        if (!head) {
            b = cpu = ML_CPU_CO;
        } else if (!rx->r.niov && align <= 128 && head < rx->len &&
                   ml_split_end(rx->len, head, align) > head) {
            b = (uint8_t)(ML_CPU_SPLIT + head);
            cpu = ML_CPU_SPLIT;
            rx->co_lo = (uint32_t)head;
            rx->co_hi = (uint32_t)ml_split_end(rx->len, head, align);
            ml_rx *c = &ml->co_part[k]; /* its bytes already counted as there */
            *c = (ml_rx){.r = {.buf = rx->r.buf, .cap = rx->r.cap}, .len = rx->co_hi,
                         .got = rx->co_lo, .src = rx->src, .used = 1, .cpu = ML_CPU_CO};
        }
    }
    rx->cpu = cpu;
    send_ctl(ml, rx->src, ml_fifo_for(ml, rx->src), T_GRANT, b, rx->sender_id, k);
    if (rx->len == 0) rx_complete(ml, rx);
    /* a split's own packets are few (its partial lines): the engine's loop
     * (ml_proxy.c) hands those back rather than know the split */
    else if (cpu == ML_CPU_MAIN) ml_act_add(ml, rx, T_RZV_DATA, k);
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
        send_ctl(ml, rx->src, TSIM_INJ_SP, T_VN_ACK, 0, rx->sender_id, 0);
        rx_complete(ml, rx);
    } else {
        ml_act_add(ml, rx, T_VN_DATA, k);
        send_ctl(ml, rx->src, TSIM_INJ_SP, T_VN_NACK, 0, rx->sender_id, k);
    }
}

static int accept(ml_ctx *ml, unsigned token, const ml_recv *where)
{
    if (token >= ML_MAX_IDS || !ml->slots[token].used || !ml->slots[token].r.defer) return -1;
    ml_rx *rx = &ml->slots[token];
    rx->r.buf = where->buf;
    rx->r.cap = where->cap;
    rx->r.iov = where->iov;
    rx->r.niov = where->niov;
    rx->r.done = where->done;
    rx->r.arg = where->arg;
    rx->r.defer = 0;
    rx->cur = (ml_cursor){0, 0};
    rx_set_cap(ml, rx);
    ml_charge(ml, ml->prm->ml_callback_cycles);
    if (rx->r.proto == ML_VN) vn_copy(ml, (uint16_t)token);
    else grant(ml, (uint16_t)token);
    return 0;
}

int ml_accept(ml_ctx *ml, unsigned token, void *buf, size_t cap, ml_done_fn done, void *arg)
{
    ml_recv w = {.buf = buf, .cap = cap, .done = done, .arg = arg};
    return accept(ml, token, &w);
}

int ml_accept_iov(ml_ctx *ml, unsigned token, const struct iovec *iov, size_t niov, ml_done_fn done,
                  void *arg)
{
    ml_recv w = {.iov = iov, .niov = niov, .done = done, .arg = arg};
    return accept(ml, token, &w);
}

/* The first packet of a message, in per-pair order. */
static void first(ml_ctx *ml, int src, const tsim_slot *s, ml_sw sw)
{
    ml_peer *p = &ml->peer[src];
    const uint8_t *pl = s->p.payload;
    size_t hl = sw.b, len = sw.w, room = payload_of(s) - hl;
    switch (sw.type) {
    case T_ONE:
    case T_EAGER:
    case T_AE: {
        ml_rx one = {0}, *rx = sw.type == T_ONE ? &one : &p->eager;
        if (sw.type == T_AE) {
            rx = calloc(1, sizeof *rx);
            if (!rx) abort();
        }
        ml_charge(ml, sw.type == T_EAGER ? ml->prm->ml_eager_cycles
                      : sw.type == T_AE  ? ml->prm->ml_adaptive_cycles : 0);
        upcall(ml, src, pl, hl, len, rx,
               sw.type == T_ONE ? ML_ONEPKT : sw.type == T_EAGER ? ML_EAGER : ML_ADAPTIVE, 0);
        rx->seq = sw.id;
        rx_write(ml, rx, 0, pl + hl, len < room ? len : room);
        if (sw.type == T_AE) {
            send_ctl(ml, src, ml_fifo_for(ml, src), T_AE_CONFIRM, 0, 0, 0);
            for (ml_stash **pe = &p->ae_early; *pe;) { /* data that overtook this packet */
                ml_stash *e = *pe;
                ml_sw d = sw_of(&e->s);
                if (d.id != sw.id) {
                    pe = &e->next;
                    continue;
                }
                *pe = e->next;
                size_t n = len - d.w < TSIM_PAYLOAD_MAX ? len - d.w : TSIM_PAYLOAD_MAX;
                rx_write(ml, rx, d.w, e->s.p.payload, n);
                free(e);
            }
        }
        if (sw.type == T_AE) {
            if (rx->got >= len) {
                rx_complete(ml, rx);
                free(rx);
            } else {
                rx->next = p->ae;
                p->ae = rx;
                ml_act_add(ml, rx, T_AE_DATA, sw.id);
            }
        } else if (rx->got >= len) {
            rx_complete(ml, rx);
        } else if (sw.type == T_EAGER) {
            ml_act_add(ml, rx, T_EAGER_DATA, sw.id);
        }
        break;
    }
    case T_SCOUT: {
        uint16_t id;
        memcpy(&id, pl + hl, sizeof id);
        ml_charge(ml, ml->prm->ml_rzv_cycles);
        uint16_t k = slot_alloc(ml);
        ml_rx *rx = &ml->slots[k];
        upcall(ml, src, pl, hl, len, rx, ML_RZV, k);
        rx->sender_id = id;
        if (!rx->r.defer) grant(ml, k);
        break;
    }
    case T_VN_ADDR:
    case T_VN_LAYOUT: {
        ml_vn_layout l = {0};
        memcpy(&l, pl + hl, sw.type == T_VN_LAYOUT ? sizeof l : sizeof l.a);
        ml_vn_addr a = l.a;
        ml_charge(ml, ml->prm->ml_vn_cycles);
        uint16_t k = slot_alloc(ml);
        ml_rx *rx = &ml->slots[k];
        upcall(ml, src, pl, hl, len, rx, ML_VN, k);
        rx->sender_id = a.id;
        rx->vn_pid = a.pid;
        rx->vn_addr = a.addr;
        rx->vn_niov = l.niov;
        rx->vn_key = l.key;
        if (!rx->r.defer) vn_copy(ml, k);
        break;
    }
    default: /* is_first() knows every first type: unreachable */
        abort();
    }
}

static int is_first(uint8_t t)
{
    return t == T_ONE || t == T_EAGER || t == T_AE || t == T_SCOUT || t == T_VN_ADDR ||
           t == T_VN_LAYOUT;
}

static void dispatch(ml_ctx *ml, const tsim_slot *s, int replay);

/* Re-dispatches held packets in arrival order until no more can go. */
static void replay_stash(ml_ctx *ml, ml_peer *p)
{
    uint16_t before;
    do {
        before = p->rx_seq;
        ml_stash *list = p->stash;
        p->stash = NULL;
        while (list) {
            ml_stash *e = list;
            list = e->next;
            dispatch(ml, &e->s, 1);
            free(e);
        }
    } while (p->stash && p->rx_seq != before);
}

static void dispatch(ml_ctx *ml, const tsim_slot *s, int replay)
{
    ml_sw sw = sw_of(s);
    int src = rank_of(ml, s);
    ml_peer *p = src >= 0 ? &ml->peer[src] : NULL;
    if (!replay) ml_charge(ml, ml->prm->ml_dispatch_cycles);
    if (is_first(sw.type)) {
        if (sw.id != p->rx_seq) {
            stash(p, s);
            ml->st.reordered++;
            return;
        }
        p->rx_seq++;
        first(ml, src, s, sw);
        if (p->stash && !replay) replay_stash(ml, p);
        return;
    }
    switch (sw.type) {
    case T_EAGER_DATA:
        if (!p->eager.used || p->eager.seq != sw.id) { /* its first packet is held */
            stash(p, s);
            return;
        }
        rx_write(ml, &p->eager, sw.w, s->p.payload,
                    p->eager.len - sw.w < TSIM_PAYLOAD_MAX ? p->eager.len - sw.w : TSIM_PAYLOAD_MAX);
        if (p->eager.got >= p->eager.len) rx_complete(ml, &p->eager);
        break;
    case T_AE_DATA: {
        ml_rx **pr = &p->ae;
        while (*pr && (*pr)->seq != sw.id) pr = &(*pr)->next;
        if (!*pr) { /* overtook its first packet */
            ml_stash *e = malloc(sizeof *e);
            if (!e) abort();
            e->s = *s;
            e->next = p->ae_early;
            p->ae_early = e;
            ml->st.reordered++;
            return;
        }
        ml_rx *rx = *pr;
        rx_write(ml, rx, sw.w, s->p.payload,
                    rx->len - sw.w < TSIM_PAYLOAD_MAX ? rx->len - sw.w : TSIM_PAYLOAD_MAX);
        if (rx->got >= rx->len) {
            *pr = rx->next;
            rx_complete(ml, rx);
            free(rx);
        }
        break;
    }
    case T_AE_CONFIRM:
        p->ae_wait--;
        break;
    case T_GRANT:
    case T_VN_NACK: {
        ml_msg *m = ml->ids[sw.id];
        ml->ids[sw.id] = NULL;
        if (sw.type == T_GRANT) ml_charge(ml, ml->prm->ml_rzv_cycles);
        if (m->len == 0) {
            ml_msg_finished(ml, m);
            break;
        }
        m->seq = (uint16_t)sw.w; /* the receiver's slot */
        m->used = sw.b;          /* the receiving cpu */
        m->off = 0;
        m->state = S_DATA;
        m->next = ml->data_head;
        ml->data_head = m;
        break;
    }
    case T_RZV_DATA:
    case T_VN_DATA: {
        ml_rx *rx = &ml->slots[sw.id];
        size_t end = rx->cpu == ML_CPU_SPLIT && sw.w < rx->co_lo ? rx->co_lo : rx->len;
        rx_write(ml, rx, sw.w, s->p.payload,
                    end - sw.w < TSIM_PAYLOAD_MAX ? end - sw.w : TSIM_PAYLOAD_MAX);
        if (rx->got >= rx->len) rx_complete(ml, rx);
        break;
    }
    case T_CO_RZV_DONE: {
        ml_rx *rx = &ml->slots[sw.id & (ML_CO_PART - 1)];
        if (sw.id & ML_CO_PART) { /* the coprocessor's part of a split is in */
            ml->co_part[sw.id & (ML_CO_PART - 1)].used = 0;
            rx->got += rx->co_hi - rx->co_lo;
        }
        if (!(sw.id & ML_CO_PART) || rx->got >= rx->len) rx_complete(ml, rx);
        break;
    }
    case T_VN_ACK: {
        ml_msg *m = ml->ids[sw.id];
        ml->ids[sw.id] = NULL;
        ml_msg_finished(ml, m);
        break;
    }
    case T_CO_DONE:
        ml->co_done = 1;
        break;
    default: /* intact as delivered (pl_poll): its sender made it so */
        pl_bad_packet(ml->pp, s, "a packet of software type %u, which no protocol of the message "
                      "layer has", sw.type);
    }
}

void ml_dispatch(ml_ctx *ml, const tsim_slot *s)
{
    ml->st.pkts_recv++;
    uint8_t type = s->p.sw[0];
    if (type >= ML_TYPE_USER) {
        ml_charge(ml, ml->prm->ml_dispatch_cycles);
        ml_packet_fn fn = ml->user_fn[type - ML_TYPE_USER];
        if (!fn) /* a packet nobody on this rank expects */
            pl_bad_packet(ml->pp, s, "a packet of software type %u, which nothing on it has "
                          "registered", type);
        fn(ml, s, ml->user_arg[type - ML_TYPE_USER]);
        return;
    }
    dispatch(ml, s, 0);
}

int ml_register_packet(ml_ctx *ml, unsigned type, ml_packet_fn fn, void *arg)
{
    if (type < ML_TYPE_USER || type > 255 || !fn || ml->user_fn[type - ML_TYPE_USER]) return -1;
    ml->user_fn[type - ML_TYPE_USER] = fn;
    ml->user_arg[type - ML_TYPE_USER] = arg;
    return 0;
}

void ml_unregister_packet(ml_ctx *ml, unsigned type)
{
    if (type >= ML_TYPE_USER && type <= 255) ml->user_fn[type - ML_TYPE_USER] = NULL;
}
