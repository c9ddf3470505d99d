/* Message layer: setup, protocol choice, the advance loop and waiting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ml_internal.h"

static const char *const proto_names[ML_NPROTO] = {"auto", "one-packet", "eager",
                                                    "adaptive-eager", "rendezvous", "vn"};

const char *ml_proto_name(ml_proto p) { return (unsigned)p < ML_NPROTO ? proto_names[p] : "?"; }

int ml_proto_parse(const char *name)
{
    for (int i = 0; i < ML_NPROTO; i++)
        if (strcmp(name, proto_names[i]) == 0) return i;
    return -1;
}

int ml_rank(const ml_ctx *ml) { return ml->rank; }
int ml_nranks(const ml_ctx *ml) { return ml->map.nranks; }
pl_proc *ml_proc(ml_ctx *ml) { return ml->pp; }
const ml_map *ml_get_map(const ml_ctx *ml) { return &ml->map; }
const ml_stats *ml_get_stats(const ml_ctx *ml) { return &ml->st; }

ml_proto ml_choose(const ml_ctx *ml, int dst, size_t hdrlen, size_t len)
{
    if (ml->map.proc[dst] / TSIM_CPUS == ml->pp->node && ml->map.proc[dst] != ml->pp->index)
        return ML_VN; /* the other cpu of this node */
    if (hdrlen + len <= TSIM_PAYLOAD_MAX) return ML_ONEPKT;
    if (len <= ml->prm->ml_eager_max) return ml->prm->ml_adaptive_auto ? ML_ADAPTIVE : ML_EAGER;
    return ML_RZV;
}

/* Can this process read another's memory directly? (ptrace rules apply.) */
static int probe_vm_copy(void)
{
    if (getenv("BGLEMU_VN_NOCOPY")) return 0;
    char a = 1, b = 0;
    struct iovec l = {&b, 1}, r = {&a, 1};
    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1 && b == 1;
}

ml_ctx *ml_init(pl_proc *pp, int rank, ml_mode mode, ml_upcall_fn upcall, void *uarg)
{
    ml_ctx *ml = calloc(1, sizeof *ml);
    if (!ml) return NULL;
    ml->pp = pp;
    pl_port_init(pp, &ml->port);
    ml->rank = rank;
    ml->mode = mode;
    ml->prm = &pp->seg->params;
    ml->upcall = upcall;
    ml->uarg = uarg;
    if (ml_map_from_seg(&ml->map, pp->seg) != 0) {
        free(ml);
        return NULL;
    }
    ml->peer = calloc((size_t)ml->map.nranks, sizeof *ml->peer);
    ml->ring = calloc((size_t)ml->map.nranks, sizeof *ml->ring);
    if (!ml->peer || !ml->ring) {
        ml_finalize(ml);
        return NULL;
    }
    ml->vn_copy_ok = probe_vm_copy();
    const char *px = getenv("BGLEMU_PROXY");
    ml->proxy = !(px && strcmp(px, "0") == 0);
    const char *st = getenv("BGLEMU_STAGE");
    ml->stage = !(st && strcmp(st, "0") == 0);
    if (mode == ML_MODE_CO && ml_coproc_start(ml) != 0) {
        ml_finalize(ml);
        return NULL;
    }
    return ml;
}

ml_ctx *ml_init_env(ml_upcall_fn upcall, void *uarg, char *err, size_t errlen)
{
    pl_proc *pp = calloc(1, sizeof *pp);
    if (!pp || pl_attach_env(pp, err, errlen) != 0) {
        free(pp);
        return NULL;
    }
    const char *m = getenv("BGLEMU_MODE");
    ml_mode mode = pp->seg->geom.cpus == 2 ? ML_MODE_VN : ML_MODE_CO;
    if (m && strcmp(m, "HEATER") == 0) mode = ML_MODE_HEATER;
    ml_ctx *ml = ml_init(pp, (int)pp->p->rank, mode, upcall, uarg);
    if (!ml) {
        snprintf(err, errlen, "message layer: cannot read the rank map from the machine");
        pl_close(pp, 1);
        free(pp);
        return NULL;
    }
    ml->owns_pp = 1;
    return ml;
}

/* The rank's send phase from the cursor: a phase the engine handed back
 * in the middle of a round goes on at that position, its packets not
 * counted again. */
static int rank_send_round(void *ctx, ml_resume *a)
{
    a->moved += (uint32_t)ml_send_phase(ctx, (int)a->round_pos, (int)a->round_sent);
    return 0;
}

/* The rank's poll: whatever comes is dispatched (handlers may re-enter
 * ml_advance: the packet is copied first). */
static int take(ml_ctx *ml, int f)
{
    if (f < 0) return 0;
    tsim_slot s = *pl_peek(ml->pp, f);
    pl_consume(ml->pp, f);
    ml_dispatch(ml, &s);
    return 1;
}

static int rank_take(void *ctx, ml_resume *a)
{
    (void)a;
    return take(ctx, pl_poll(((ml_ctx *)ctx)->pp, TSIM_WAKE_REC_ALL));
}

/* ml_advance_then_hand's: a poll only a sync could answer stops the
 * advance (TSIM_RUN_WAIT: the observation is not final yet), uncharged. */
static int rank_take_or_stop(void *ctx, ml_resume *a)
{
    (void)a;
    int f = pl_poll_nosync(((ml_ctx *)ctx)->pp, TSIM_WAKE_REC_ALL);
    return f == PL_POLL_SYNC ? TSIM_RUN_WAIT : take(ctx, f);
}

static const ml_adv_ops rank_ops = {NULL, rank_send_round, rank_take};
static const ml_adv_ops rank_ops_stop = {NULL, rank_send_round, rank_take_or_stop};

static int advance(ml_ctx *ml, const ml_adv_ops *ops)
{
    /* after the engine ran this loop (ml_engine.c), the advance it stopped
     * in goes on from its cursor */
    ml_resume a = ml->resume;
    ml->resume.point = ML_RESUME_NONE;
    if (a.point == ML_RESUME_OVER) return (int)a.moved; /* the engine ran it to its end */
    if (a.point == ML_RESUME_STOPPED) a.point = ML_RESUME_POLL;
    if (a.point == ML_RESUME_NONE || a.point == ML_RESUME_DONE) ml_adv_begin(&a);
    ml->depth++;
    int rc = ml_adv_step(&a, ops, ml, ML_ADVANCE_BATCH);
    ml->depth--;
    if (rc == TSIM_RUN_WAIT) { /* stopped at a poll (a handler's nested advance never is) */
        ml->resume = a;
        ml->resume.point = ML_RESUME_STOPPED;
    }
    return (int)a.moved;
}

int ml_advance(ml_ctx *ml) { return advance(ml, &rank_ops); }

int ml_advance_then_hand(ml_ctx *ml) { return advance(ml, ml->depth ? &rank_ops : &rank_ops_stop); }

int ml_advance_stopped(const ml_ctx *ml) { return ml->resume.point == ML_RESUME_STOPPED; }

void ml_wait_note(const ml_ctx *ml, const char *why, char *buf, size_t len)
{
    snprintf(buf, len, "rank %d: %s (%d sends outstanding)", ml->rank,
             why ? why : "message layer waits", ml->outstanding);
}

int ml_block(ml_ctx *ml, const char *why)
{
    char buf[112];
    ml_wait_note(ml, why, buf, sizeof buf);
    return pl_block_need(ml->pp, TSIM_WAKE_REC_ALL | ml->inj_full, TSIM_MAX_CHUNKS, buf);
}

int ml_idle(ml_ctx *ml, const char *why)
{
    ml->pp->p->handoff.prog = 0; /* nothing for the engine to do on this rank's behalf */
    return ml_block(ml, why);
}

int ml_wait(ml_ctx *ml, volatile int *flag)
{
    while (!*flag) {
        if (ml_advance(ml) || *flag) continue;
        if (ml_wait_idle(ml, NULL, 1) != 0) return -1;
    }
    return 0;
}

static int no_outstanding(ml_ctx *ml)
{
    return ml->outstanding == 0 && !ml->ctl_head;
}

int ml_busy(const ml_ctx *ml)
{
    return ml->outstanding > 0 || ml->ctl_head != NULL;
}

unsigned ml_inj_wait(const ml_ctx *ml) { return ml->inj_full; }

void ml_finalize(ml_ctx *ml)
{
    if (!ml) return;
    if (ml->peer) {
        while (!no_outstanding(ml)) {
            if (ml_advance(ml)) continue;
            if (ml_idle(ml, "finalize") != 0) break;
        }
    }
    ml_coproc_stop(ml);
    for (int i = 0; ml->peer && i < ml->map.nranks; i++) {
        for (ml_stash_e *e = ml->peer[i].stash, *n; e; e = n) n = e->next, free(e);
        for (ml_stash_e *e = ml->peer[i].ae_early, *n; e; e = n) n = e->next, free(e);
        for (ml_rx *e = ml->peer[i].ae, *n; e; e = n) n = e->next, free(e);
    }
    free(ml->peer);
    free(ml->ring);
    ml_map_free(&ml->map);
    if (ml->owns_pp) {
        pl_close(ml->pp, 0);
        tsim_seg_detach(ml->pp->seg);
        free(ml->pp);
    }
    free(ml);
}
