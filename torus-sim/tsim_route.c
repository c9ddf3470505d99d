/* Routing arithmetic: minimal directions, dimension order, neighbours. */
#include "tsim.h"

#include <stdlib.h>

int tsim_delta(int a, int b, int n, int torus)
{
    int d = b - a;
    if (!torus || d == 0) return d;
    if (d < 0) d += n;         /* 0 < d < n going + */
    if (2 * d <= n) return d;  /* ties (d == n/2) go + */
    return d - n;
}

static void delta3(const tsim_geom *g, int node, const uint8_t dst[3], int d[3])
{
    int c[3];
    tsim_coords(g, node, c);
    for (int i = 0; i < 3; i++) d[i] = tsim_delta(c[i], dst[i], g->dim[i], g->torus[i]);
}

int tsim_route_det(const tsim_geom *g, int node, const uint8_t dst[3])
{
    int d[3];
    delta3(g, node, dst, d);
    for (int i = 0; i < 3; i++)
        if (d[i]) return 2 * i + (d[i] < 0);
    return -1;
}

unsigned tsim_route_profitable(const tsim_geom *g, int node, const uint8_t dst[3])
{
    int d[3];
    unsigned m = 0;
    delta3(g, node, dst, d);
    for (int i = 0; i < 3; i++) {
        if (d[i]) m |= 1u << (2 * i + (d[i] < 0));
        /* a tie on an even ring is minimal both ways; adaptive routing (or
         * the hint bits) may take either, so ties need not all load the +
         * links (deterministic routing still goes +) */
        if (g->torus[i] && 2 * d[i] == g->dim[i]) m |= 2u << (2 * i);
    }
    return m;
}

int tsim_neighbor(const tsim_geom *g, int node, int port)
{
    int c[3];
    tsim_coords(g, node, c);
    int i = port / 2, step = (port & 1) ? -1 : 1;
    int v = c[i] + step;
    if (v < 0 || v >= g->dim[i]) {
        if (!g->torus[i] || g->dim[i] == 1) return -1;
        v = (v + g->dim[i]) % g->dim[i];
    }
    c[i] = v;
    return tsim_node_of(g, c[0], c[1], c[2]);
}

int tsim_hops(const tsim_geom *g, int a, int b)
{
    int ca[3], cb[3], h = 0;
    tsim_coords(g, a, ca);
    tsim_coords(g, b, cb);
    for (int i = 0; i < 3; i++) h += abs(tsim_delta(ca[i], cb[i], g->dim[i], g->torus[i]));
    return h;
}
