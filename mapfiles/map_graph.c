/* The communication graph of a run (map.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"

static int by_pair(const void *a, const void *b)
{
    const map_edge *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

int map_graph_build(map_graph *gr, int n, const map_edge *e, int ne, char *err, size_t len)
{
    memset(gr, 0, sizeof *gr);
    gr->n = n;
    gr->e = malloc(sizeof *gr->e * (size_t)(ne > 0 ? ne : 1));
    gr->off = calloc((size_t)n + 1, sizeof *gr->off);
    if (!gr->e || !gr->off) goto oom;
    int k = 0;
    for (int i = 0; i < ne; i++) {
        if (e[i].from < 0 || e[i].from >= n || e[i].to < 0 || e[i].to >= n) {
            snprintf(err, len, "pair %d -> %d outside ranks 0..%d", e[i].from, e[i].to, n - 1);
            map_graph_free(gr);
            return -1;
        }
        /* a rank's traffic to itself never leaves its node: nothing to place */
        if (e[i].from != e[i].to && e[i].bytes) gr->e[k++] = e[i];
    }
    qsort(gr->e, (size_t)k, sizeof *gr->e, by_pair);
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (m && gr->e[m - 1].from == gr->e[i].from && gr->e[m - 1].to == gr->e[i].to)
            gr->e[m - 1].bytes += gr->e[i].bytes;
        else gr->e[m++] = gr->e[i];
    }
    gr->nedges = m;
    for (int i = 0; i < m; i++) gr->off[gr->e[i].from + 1]++, gr->off[gr->e[i].to + 1]++;
    for (int r = 0; r < n; r++) gr->off[r + 1] += gr->off[r];
    gr->inc = malloc(sizeof *gr->inc * (size_t)(2 * m + 1));
    int *fill = malloc(sizeof *fill * (size_t)(n + 1));
    if (!gr->inc || !fill) {
        free(fill);
        goto oom;
    }
    memcpy(fill, gr->off, sizeof *fill * (size_t)(n + 1));
    for (int i = 0; i < m; i++) gr->inc[fill[gr->e[i].from]++] = i, gr->inc[fill[gr->e[i].to]++] = i;
    free(fill);
    return 0;
oom:
    snprintf(err, len, "out of memory for a graph of %d ranks", n);
    map_graph_free(gr);
    return -1;
}

void map_graph_free(map_graph *gr)
{
    free(gr->e);
    free(gr->off);
    free(gr->inc);
    memset(gr, 0, sizeof *gr);
}

int map_machine_init(map_machine *m, const tsim_geom *g)
{
    m->g = *g;
    m->g.nnodes = g->dim[0] * g->dim[1] * g->dim[2];
    m->nprocs = m->g.nnodes * TSIM_CPUS;
    m->nbr = malloc(sizeof *m->nbr * (size_t)m->g.nnodes * TSIM_NPORTS);
    if (!m->nbr) return -1;
    for (int n = 0; n < m->g.nnodes; n++)
        for (int p = 0; p < TSIM_NPORTS; p++) m->nbr[n * TSIM_NPORTS + p] = tsim_neighbor(&m->g, n, p);
    return 0;
}

void map_machine_free(map_machine *m)
{
    free(m->nbr);
    m->nbr = NULL;
}
