/* mpirun --trace FILE.json: the merged events (mpirun_trace.c) as Chrome
 * trace-event JSON (docs/trace.md), which chrome://tracing and Perfetto
 * read. Times are written from integers, so the same events give the same
 * file byte for byte. */
#include "mpirun_trace.h"
#include "pictures/pic.h"

static void put_us(FILE *f, uint64_t ps)
{
    fprintf(f, "%llu.%06llu", (unsigned long long)(ps / 1000000u),
            (unsigned long long)(ps % 1000000u));
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 32 || c == 127) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char *const dirs[TSIM_NPORTS] = {"x+", "x-", "y+", "y-", "z+", "z-"};

static void slice_name(FILE *f, const pl_trace_rec *r)
{
    char nm[128];
    switch (r->kind) {
    case PLT_BLOCK:
        snprintf(nm, sizeof nm, "%s", r->sub ? "blocked: injection FIFO full" : "blocked in the network");
        break;
    case PLT_SEND:
        snprintf(nm, sizeof nm, "send %s %llu B to %d", ml_proto_name((ml_proto)r->sub),
                 (unsigned long long)r->a, r->peer);
        break;
    case PLT_RECV:
        snprintf(nm, sizeof nm, "recv %s %llu B from %d", ml_proto_name((ml_proto)r->sub),
                 (unsigned long long)r->a, r->peer);
        break;
    case PLT_COLL:
        snprintf(nm, sizeof nm, "%s", mpirun_trace_coll_names[r->sub]);
        break;
    default:
        snprintf(nm, sizeof nm, "%s", mpirun_trace_mpi_names[r->sub]);
    }
    json_str(f, nm);
}

static void slice_args(FILE *f, const pl_trace_rec *r)
{
    fprintf(f, "{\"cycles\":%llu,\"end_cycles\":%llu", (unsigned long long)r->t0,
            (unsigned long long)r->t1);
    switch (r->kind) {
    case PLT_SEND:
    case PLT_RECV:
        fprintf(f, ",\"%s\":%d,\"bytes\":%llu,\"protocol\":\"%s\",\"message\":%u",
                r->kind == PLT_SEND ? "to" : "from", r->peer, (unsigned long long)r->a,
                ml_proto_name((ml_proto)r->sub), r->n);
        break;
    case PLT_COLL:
        fprintf(f, ",\"sequence\":%u,\"group\":%u,\"group_size\":%u", r->n, r->x >> 16,
                r->x & 0xffff);
        break;
    case PLT_MPI:
        if (r->peer >= 0) fprintf(f, ",\"peer\":%d", r->peer);
        fprintf(f, ",\"bytes\":%llu,\"comm_size\":%u", (unsigned long long)r->a, r->x);
        break;
    }
    fputc('}', f);
}

static const char *cat_of(int kind)
{
    switch (kind) {
    case PLT_BLOCK: return "wait";
    case PLT_SEND:
    case PLT_RECV: return "ml";
    case PLT_COLL: return "coll";
    default: return "mpi";
    }
}

int mpirun_trace_write_json(mpirun_job *j, FILE *f, const mpirun_trace_events *m)
{
    const mpirun_opts *o = j->o;
    int np = j->g.nranks;
    const tev *ev = m->ev;
    const cinst *ci = m->ci;
    const unsigned char *seen = m->seen;
    size_t total = m->n, ncoll = m->ncoll, nsamp = m->nsamp;
    uint64_t mhz = m->mhz, cut = m->cut, lost = m->lost, sdrop = m->sdrop;
    int coll_pid = m->coll_pid, link_pid = m->link_pid;

    char job[PIC_LABEL_MAX];
    pic_job_label(job, sizeof job, o->argv);
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"job\":");
    json_str(f, job);
    fprintf(f, ",\"shape\":\"%dx%dx%d\",\"mode\":\"%s\",\"ranks\":%d,\"clock_mhz\":%llu,"
               "\"time_unit\":\"us of simulated time\",\"end_cycles\":%llu,"
               "\"link_interval_cycles\":%llu,\"events\":%zu,\"cut_events\":%llu,"
               "\"lost_events\":%llu,\"cut_link_samples\":%llu},\n\"traceEvents\":[\n",
            j->g.dim[0], j->g.dim[1], j->g.dim[2], j->g.cpus == 2 ? "VN" : "CO", np,
            (unsigned long long)mhz, (unsigned long long)j->res.end_time,
            (unsigned long long)o->trace_interval, total, (unsigned long long)cut,
            (unsigned long long)lost, (unsigned long long)sdrop);
    /* names of the tracks */
    int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
    for (int r = 0; r < np && seen; r++) {
        if (!seen[r]) continue;
        int c[4];
        ml_map_coords(&j->map, &j->g, r, c);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d "
                   "<%d,%d,%d,%d>\"}}", SEP(), r + 1, r, c[0], c[1], c[2], c[3]);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                r + 1, r);
        if (seen[r] & 1)
            fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":"
                       "\"cpu %d\"}}", r + 1, c[3]);
        if (seen[r] & 2)
            fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":2,\"args\":{\"name\":"
                       "\"coprocessor\"}}", r + 1);
    }
    if (ncoll) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"torus "
                   "collectives\"}}", SEP(), coll_pid);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                coll_pid, np);
    }
    if (nsamp) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"links "
                   "(utilization, sampled every %llu cycles)\"}}", SEP(), link_pid,
                (unsigned long long)o->trace_interval);
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                link_pid, np + 1);
    }
    for (size_t i = 0; i < total; i++) {
        const tev *e = &ev[i];
        if (e->kind == E_SLICE) {
            fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", SEP(), cat_of(e->r->kind));
            slice_name(f, e->r);
            fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":", e->pid, e->tid);
            put_us(f, e->ps);
            fputs(",\"dur\":", f);
            put_us(f, e->end_ps - e->ps);
            fputs(",\"args\":", f);
            slice_args(f, e->r);
            fputc('}', f);
        } else if (e->kind == E_FLOW_S || e->kind == E_FLOW_F) {
            fprintf(f, "%s{\"ph\":\"%s\",\"cat\":\"msg\",\"name\":\"%s %llu B\",\"id\":%llu,"
                       "\"pid\":%d,\"tid\":%d,\"ts\":", SEP(), e->kind == E_FLOW_S ? "s" : "f",
                    ml_proto_name((ml_proto)e->r->sub), (unsigned long long)e->r->a,
                    (unsigned long long)e->id + 1, e->pid, e->tid);
            put_us(f, e->ps);
            fputs(e->kind == E_FLOW_F ? ",\"bp\":\"e\"}" : "}", f);
        } else if (e->kind == E_COLL) {
            const cinst *c = &ci[e->id];
            fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"coll\",\"name\":\"%s (group %u, %u)\",\"pid\":%d,"
                       "\"tid\":%d,\"ts\":", SEP(), mpirun_trace_coll_names[c->sub], c->gid, c->seq, e->pid, e->tid);
            put_us(f, e->ps);
            fputs(",\"dur\":", f);
            put_us(f, e->end_ps - e->ps);
            fprintf(f, ",\"args\":{\"cycles\":%llu,\"end_cycles\":%llu,\"group_size\":%u,"
                       "\"ranks_traced\":%d}}", (unsigned long long)c->t0, (unsigned long long)c->t1,
                    c->size, c->ranks);
        } else {
            const tsim_link_sample *s = e->ls;
            int c[3];
            tsim_coords(&j->g, (int)s->node, c);
            double u = s->len ? 100.0 * (double)s->busy / (double)s->len : 0.0;
            fprintf(f, "%s{\"ph\":\"C\",\"name\":\"%s <%d,%d,%d>\",\"pid\":%d,\"ts\":", SEP(),
                    dirs[s->port], c[0], c[1], c[2], e->pid);
            put_us(f, e->ps);
            fprintf(f, ",\"args\":{\"busy_pct\":%.3f,\"bytes\":%llu,\"packets\":%llu}}", u,
                    (unsigned long long)s->bytes, (unsigned long long)s->packets);
        }
    }
#undef SEP
    fputs("\n]}\n", f);
    return 0;
}
