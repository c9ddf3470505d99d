/* What a run leaves behind: the JSON report and the deadlock report.
 * Both contain simulated quantities only, so equal runs give equal bytes. */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"
#include "tsim_tree.h"


const tsim_link_stats *tsim_engine_link(tsim_engine *e, int node, int port)
{
    return &e->rt[node].link[port];
}

/* The collective networks, only for a job that used them (a report of
 * one that did not stays what it was before they existed). */
static void tree_report_json(tsim_engine *e, uint64_t span, unsigned show, FILE *f)
{
    tsim_tree_stats st;
    tsim_engine_tree_stats(e, &st);
    if (!st.injected && !st.barriers) return;
    const tsim_geom *g = &e->g;
    fprintf(f, ",\n  \"collective\": {\"depth\": %d, \"injected\": %llu, \"combined\": %llu, "
               "\"delivered\": %llu, \"barriers\": %llu, \"params\": ",
            tsim_tree_depth(g), (unsigned long long)st.injected, (unsigned long long)st.combined,
            (unsigned long long)st.delivered, (unsigned long long)st.barriers);
    tsim_params_json_all(&e->prm, f, show | TSIM_PARAMS_TREE);
    fprintf(f, ",\n    \"tree_links\": [");
    for (int n = 1; n < g->nnodes; n++) {
        int c[3], pc[3];
        tsim_coords(g, n, c);
        tsim_coords(g, tsim_tree_parent(g, n), pc);
        for (int up = 1; up >= 0; up--) {
            const tsim_link_stats *l = tsim_engine_tree_link(e, n, up);
            fprintf(f, "%s\n      {\"node\": [%d, %d, %d], \"parent\": [%d, %d, %d], \"dir\": \"%s\", "
                       "\"packets\": %llu, \"bytes\": %llu, \"busy_cycles\": %llu, \"utilization\": %.4f}",
                    n == 1 && up ? "" : ",", c[0], c[1], c[2], pc[0], pc[1], pc[2], up ? "up" : "down",
                    (unsigned long long)l->packets, (unsigned long long)l->bytes,
                    (unsigned long long)l->busy_cycles, (double)l->busy_cycles / (double)span);
        }
    }
    fprintf(f, "\n    ]}");
}

static const char *state_name(uint32_t st)
{
    switch (st) {
    case TSIM_P_RUNNING: return "running";
    case TSIM_P_BLOCKED: return "blocked";
    case TSIM_P_EXITED: return "exited";
    case TSIM_P_ENGINE: return "traffic";
    default: return "absent";
    }
}

static void print_waiters(tsim_engine *e, FILE *f)
{
    tsim_seg *s = e->seg;
    int idle = 0;
    fprintf(f, "bglemu: deadlock: every processor waits and no packet is in flight\n");
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &s->procs[i];
        if (atomic_load(&p->state) != TSIM_P_BLOCKED) continue;
        if (strcmp(p->waiting_on, "coprocessor idle") == 0) { /* waits for work: not a cause */
            idle++;
            continue;
        }
        int c[3];
        tsim_coords(&e->g, i / TSIM_CPUS, c);
        uint32_t mask = atomic_load(&p->wake_mask);
        fprintf(f, "  rank %d <%d,%d,%d,%d> at %llu cycles waits for %s%s%s\n", p->rank, c[0], c[1],
                c[2], i % TSIM_CPUS, (unsigned long long)atomic_load(&p->vt),
                (mask & 0xff) ? "a packet" : "FIFO room",
                p->waiting_on[0] ? ": " : "", p->waiting_on);
    }
    if (idle) fprintf(f, "  (and %d idle coprocessor%s)\n", idle, idle > 1 ? "s" : "");
    /* packets the network still holds (a simulator fault if there are any) */
    for (int n = 0; n < e->g.nnodes; n++) {
        const router *r = &e->rt[n];
        if (!r->waiting) continue;
        int c[3];
        tsim_coords(&e->g, n, c);
        fprintf(f, "  router <%d,%d,%d> holds %u packet%s:", c[0], c[1], c[2], r->waiting,
                r->waiting > 1 ? "s" : "");
        for (int q = 0; q < TSIM_NPORTS * TSIM_NVC; q++) {
            const pq *x = &r->inq[0][0] + q;
            if (x->head == NIL) continue;
            const npkt *pk = &e->pool[x->head];
            fprintf(f, " in %s/vc%d -> <%d,%d,%d> want 0x%x", tsim_port_name(q / TSIM_NVC), q % TSIM_NVC,
                    pk->s.p.hw.dst[0], pk->s.p.hw.dst[1], pk->s.p.hw.dst[2], pk->want);
        }
        for (int q = 0; q < TSIM_CPUS * TSIM_NINJ; q++) {
            const pq *x = &r->injq[0][0] + q;
            if (x->head == NIL) continue;
            const npkt *pk = &e->pool[x->head];
            fprintf(f, " inj %d/%d -> <%d,%d,%d> want 0x%x", q / TSIM_NINJ, q % TSIM_NINJ,
                    pk->s.p.hw.dst[0], pk->s.p.hw.dst[1], pk->s.p.hw.dst[2], pk->want);
        }
        fprintf(f, "; credits");
        for (int p = 0; p < TSIM_NPORTS; p++)
            fprintf(f, " %s %d/%d/%d/%d", tsim_port_name(p), r->credits[0][p], r->credits[1][p],
                    r->credits[2][p], r->credits[3][p]);
        fprintf(f, "; rec");
        for (int g = 0; g < TSIM_CPUS; g++)
            for (int q = 0; q < TSIM_NREC; q++)
                if (r->rec_used[g][q]) fprintf(f, " %d/%d:%d", g, q, r->rec_used[g][q]);
        fputc('\n', f);
    }
}

void report_snapshot_deadlock(tsim_engine *e)
{
    size_t len;
    FILE *f = open_memstream(&e->deadlock_report, &len);
    if (!f) return;
    print_waiters(e, f);
    fclose(f);
}

void tsim_engine_print_deadlock(tsim_engine *e, FILE *f)
{
    if (e->deadlock_report) fputs(e->deadlock_report, f);
    else print_waiters(e, f);
}

/* A JSON string body: quotes, backslashes and control bytes escaped. */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

void tsim_engine_report_json(tsim_engine *e, const tsim_result *r, FILE *f)
{
    tsim_engine_report_json_job(e, r, NULL, f);
}

void tsim_engine_report_json_job(tsim_engine *e, const tsim_result *r, const char *job, FILE *f)
{
    tsim_seg *s = e->seg;
    const tsim_geom *g = &e->g;
    const tsim_result *res = r ? r : &e->result;
    fputs("{\n", f);
    if (job && *job) {
        fputs("  \"job\": \"", f);
        json_str(f, job);
        fputs("\",\n", f);
    }
    fprintf(f, "  \"machine\": {\"shape\": [%d, %d, %d], \"torus\": [%d, %d, %d], "
               "\"cpus_per_node\": %d, \"ranks\": %d, \"mapping\": \"",
            g->dim[0], g->dim[1], g->dim[2], g->torus[0], g->torus[1], g->torus[2], g->cpus,
            g->nranks);
    json_str(f, s->mapping);
    fprintf(f, "\"},\n");
    /* derived-datatype work: its parameters and per-processor cycles appear
     * only for a job that did some */
    unsigned show = 0;
    for (int i = 0; i < e->nprocs; i++)
        if (atomic_load(&s->procs[i].ddt_cycles)) show = TSIM_PARAMS_DDT;
    fprintf(f, "  \"params\": ");
    tsim_params_json_all(&e->prm, f, show);
    fprintf(f, ",\n  \"result\": {\"end_cycles\": %llu, \"end_us\": %.3f, \"deadlock\": %d, "
               "\"events\": %llu, \"packet_hops\": %llu, \"packets_delivered\": %llu},\n",
            (unsigned long long)res->end_time, (double)res->end_time / (double)e->prm.clock_mhz,
            res->deadlock, (unsigned long long)res->events, (unsigned long long)res->packet_hops,
            (unsigned long long)res->packets_delivered);
    fprintf(f, "  \"processors\": [");
    int first = 1;
    for (int i = 0; i < e->nprocs; i++) {
        tsim_proc *p = &s->procs[i];
        uint32_t st = atomic_load(&p->state);
        if (st == TSIM_P_ABSENT) continue;
        int c[3];
        tsim_coords(g, i / TSIM_CPUS, c);
        fprintf(f, "%s\n    {\"proc\": %d, \"rank\": %d, \"coords\": [%d, %d, %d, %d], "
                   "\"state\": \"%s\", \"cycles\": %llu, \"pkts_injected\": %llu, "
                   "\"pkts_received\": %llu, \"bytes_injected\": %llu, \"bytes_received\": %llu, "
                   "\"msgs_sent\": [",
                first ? "" : ",", i, p->rank, c[0], c[1], c[2], i % TSIM_CPUS, state_name(st),
                (unsigned long long)atomic_load(&p->vt),
                (unsigned long long)atomic_load(&p->pkts_injected),
                (unsigned long long)atomic_load(&p->pkts_received),
                (unsigned long long)atomic_load(&p->bytes_injected),
                (unsigned long long)atomic_load(&p->bytes_received));
        for (int k = 0; k < TSIM_NSW_KINDS; k++)
            fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)atomic_load(&p->msgs_sent[k]));
        fprintf(f, "]");
        if (show & TSIM_PARAMS_DDT)
            fprintf(f, ", \"ddt_cycles\": %llu", (unsigned long long)atomic_load(&p->ddt_cycles));
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "\n  ],\n  \"links\": [");
    first = 1;
    uint64_t span = res->end_time ? res->end_time : 1;
    for (int n = 0; n < g->nnodes; n++) {
        int c[3];
        tsim_coords(g, n, c);
        for (int port = 0; port < TSIM_NPORTS; port++) {
            if (tsim_neighbor(g, n, port) < 0) continue;
            const tsim_link_stats *l = &e->rt[n].link[port];
            fprintf(f, "%s\n    {\"node\": [%d, %d, %d], \"dir\": \"%s\", \"packets\": %llu, "
                       "\"bytes\": %llu, \"busy_cycles\": %llu, \"utilization\": %.4f}",
                    first ? "" : ",", c[0], c[1], c[2], tsim_port_name(port),
                    (unsigned long long)l->packets, (unsigned long long)l->bytes,
                    (unsigned long long)l->busy_cycles, (double)l->busy_cycles / (double)span);
            first = 0;
        }
    }
    fprintf(f, "\n  ]");
    tsim_rankmatrix tm; /* per pair of ranks: what mapping tools read */
    if (tsim_rankmatrix_from_engine(&tm, e) == 0) {
        fputs(",\n", f);
        tsim_rankmatrix_json(&tm, f);
        tsim_rankmatrix_free(&tm);
    }
    tree_report_json(e, span, show, f);
    fprintf(f, "\n}\n");
}
