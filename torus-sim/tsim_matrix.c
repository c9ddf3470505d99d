/* The traffic matrix (tsim_matrix.h): counted at delivery, in the engine's
 * own memory; folded into ranks for the report. */
#include <stdlib.h>

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
