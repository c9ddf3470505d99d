/* What a placement costs (map.h): every pair's bytes along its
 * deterministic route, hop by hop, as the engine would send an eager
 * message: dimension order x, y, z, ties on an even ring the + way
 * (tsim_delta), so the prediction loads the very links a run would. */
#include <stdlib.h>

#include "map.h"

int map_route(const map_machine *m, int a, int b, int *links)
{
    const tsim_geom *g = &m->g;
    int ca[3], cb[3], k = 0, node = a;
    tsim_coords(g, a, ca);
    tsim_coords(g, b, cb);
    for (int i = 0; i < 3; i++) {
        int d = tsim_delta(ca[i], cb[i], g->dim[i], g->torus[i]);
        int port = 2 * i + (d < 0);
        for (int s = d < 0 ? -d : d; s > 0; s--) {
            links[k++] = node * TSIM_NPORTS + port;
            node = m->nbr[node * TSIM_NPORTS + port];
        }
    }
    return k;
}

int map_cost_eval(const map_graph *gr, const map_machine *m, const int *proc, map_cost *c)
{
    size_t nl = (size_t)m->g.nnodes * TSIM_NPORTS;
    uint64_t *load = calloc(nl, sizeof *load);
    if (!load) return -1;
    int links[3 * TSIM_MAX_DIM];
    *c = (map_cost){0};
    c->max_node = c->max_port = -1;
    for (int i = 0; i < gr->nedges; i++) {
        const map_edge *e = &gr->e[i];
        int k = map_route(m, proc[e->from] / TSIM_CPUS, proc[e->to] / TSIM_CPUS, links);
        c->bytes += e->bytes;
        c->hop_bytes += e->bytes * (uint64_t)k;
        for (int j = 0; j < k; j++) load[links[j]] += e->bytes;
    }
    for (size_t l = 0; l < nl; l++) {
        c->sumsq += (unsigned __int128)load[l] * load[l];
        if (load[l] > c->max_link) {
            c->max_link = load[l];
            c->max_node = (int)(l / TSIM_NPORTS);
            c->max_port = (int)(l % TSIM_NPORTS);
        }
    }
    free(load);
    return 0;
}
