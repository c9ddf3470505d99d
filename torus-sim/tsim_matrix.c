/* The traffic matrix (tsim_matrix.h): counted at delivery, in the engine's
 * own memory; folded into ranks for the report. */
#include <stdlib.h>
#include <string.h>

#include "tsim_engine_priv.h"
#include "tsim_matrix.h"

int tsim_matrix_new(tsim_engine *e)
{
    /* Dense: one add per delivered packet, no lookup. Zero pages cost
     * nothing until touched, so the largest machine's 4096^2 cells are
     * only address space unless that many pairs talk. */
    e->mx = calloc((size_t)e->nprocs * (size_t)e->nprocs, sizeof *e->mx);
    return e->mx ? 0 : -1;
}

void tsim_matrix_free(tsim_engine *e)
{
    free(e->mx);
    e->mx = NULL;
}

int tsim_rankmatrix_init(tsim_rankmatrix *m, int nranks)
{
    m->nranks = nranks;
    m->p = calloc((size_t)nranks * (size_t)(nranks > 0 ? nranks : 1), sizeof *m->p);
    return m->p ? 0 : -1;
}

void tsim_rankmatrix_free(tsim_rankmatrix *m)
{
    free(m->p);
    m->p = NULL;
}

int tsim_rankmatrix_from_engine(tsim_rankmatrix *m, tsim_engine *e)
{
    const tsim_geom *g = &e->g;
    int nr = g->nranks;
    if (tsim_rankmatrix_init(m, nr) != 0) return -1;
    int *rank = malloc((size_t)e->nprocs * sizeof *rank);
    if (!rank) {
        tsim_rankmatrix_free(m);
        return -1;
    }
    for (int i = 0; i < e->nprocs; i++) rank[i] = -1;
    /* rank_proc is mpirun's, on the header ranks cannot write */
    for (int r = 0; r < nr && r < TSIM_MAX_PROCS; r++) {
        int p = e->seg->rank_proc[r];
        if (p < 0 || p >= e->nprocs) continue;
        rank[p] = r;
        /* in CO mode the coprocessor works for the node's rank */
        if (g->cpus == 1 && p % TSIM_CPUS == 0) rank[p + 1] = r;
    }
    size_t np = (size_t)e->nprocs;
    for (size_t s = 0; e->mx && s < np; s++) {
        if (rank[s] < 0) continue;
        for (size_t d = 0; d < np; d++) {
            const tsim_pair *c = &e->mx[s * np + d];
            if (!c->packets || rank[d] < 0) continue;
            tsim_pair *o = &m->p[(size_t)rank[s] * (size_t)nr + (size_t)rank[d]];
            o->packets += c->packets;
            o->bytes += c->bytes;
        }
    }
    free(rank);
    return 0;
}

void tsim_rankmatrix_json(const tsim_rankmatrix *m, FILE *f)
{
    int n = m->nranks, first = 1;
    fprintf(f, "  \"traffic\": {\"ranks\": %d, \"counted\": \"torus packets delivered, "
               "bytes = chunks x 32\", \"pairs\": [",
            n);
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            const tsim_pair *c = &m->p[(size_t)s * (size_t)n + (size_t)d];
            if (!c->packets) continue;
            fprintf(f, "%s\n    {\"from\": %d, \"to\": %d, \"packets\": %llu, \"bytes\": %llu}",
                    first ? "" : ",", s, d, (unsigned long long)c->packets,
                    (unsigned long long)c->bytes);
            first = 0;
        }
    fprintf(f, "\n  ]}");
}

static const tsim_rankmatrix *top_m; /* qsort has no context argument */

static int heavier(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    uint64_t x = top_m->p[i].bytes, y = top_m->p[j].bytes;
    if (x != y) return x > y ? -1 : 1;
    return (i > j) - (i < j); /* from * n + to: lower from, then lower to */
}

int tsim_rankmatrix_top(const tsim_rankmatrix *m, int n, int *out)
{
    size_t cells = (size_t)m->nranks * (size_t)m->nranks, k = 0;
    int *all = malloc((cells ? cells : 1) * sizeof *all);
    if (!all) return 0;
    for (size_t i = 0; i < cells; i++)
        if (m->p[i].packets) all[k++] = (int)i;
    top_m = m;
    qsort(all, k, sizeof *all, heavier);
    int got = (size_t)n < k ? n : (int)k;
    memcpy(out, all, (size_t)got * sizeof *out);
    free(all);
    return got;
}
