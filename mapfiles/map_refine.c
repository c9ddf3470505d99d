/* Pair swaps on top of Scotch (map.h). Scotch minimizes a weighted
 * distance, blind to which links the routes share: on an even ring a
 * distance of n/2 is a tie that deterministic routing always breaks the +
 * way, so two placements with equal hop-bytes can load one direction twice
 * and the other not at all. The congestion (sum over links of bytes
 * squared) sees that, and a swap changes it only along the routes of the
 * two ranks' own edges, so each try is cheap: take their bytes off the
 * links, swap, put them back, keep the swap if the sum fell and no link
 * got busier than the busiest was (the busiest link bounds a
 * bandwidth-bound exchange: the sum alone would trade it for many small
 * gains elsewhere). */
#include <stdlib.h>
#include <time.h>

#include "map.h"

enum { PARTNERS = 8 };

static double elapsed(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

typedef struct rstate {
    const map_graph *gr;
    const map_machine *m;
    int *proc, *owner;
    uint64_t *load;
    unsigned __int128 sumsq;
    uint64_t max;  /* the busiest link's load as the pass started: no swap raises it */
    uint64_t tmax; /* the highest load a swap's routes left */
    int links[3 * TSIM_MAX_DIM];
} rstate;

static void put(rstate *s, const map_edge *e, int sign)
{
    int k = map_route(s->m, s->proc[e->from] / TSIM_CPUS, s->proc[e->to] / TSIM_CPUS, s->links);
    for (int j = 0; j < k; j++) {
        uint64_t *l = &s->load[s->links[j]];
        s->sumsq -= (unsigned __int128)*l * *l;
        *l = sign > 0 ? *l + e->bytes : *l - e->bytes;
        s->sumsq += (unsigned __int128)*l * *l;
        if (*l > s->tmax) s->tmax = *l;
    }
}

/* The edges of a and of b (each once) on or off the links. */
static void put_both(rstate *s, int a, int b, int sign)
{
    const map_graph *gr = s->gr;
    for (int i = gr->off[a]; i < gr->off[a + 1]; i++) put(s, &gr->e[gr->inc[i]], sign);
    if (b < 0) return;
    for (int i = gr->off[b]; i < gr->off[b + 1]; i++) {
        const map_edge *e = &gr->e[gr->inc[i]];
        if (e->from != a && e->to != a) put(s, e, sign);
    }
}

static void place(rstate *s, int a, int q)
{
    int pa = s->proc[a], b = s->owner[q];
    s->proc[a] = q;
    s->owner[q] = a;
    s->owner[pa] = b;
    if (b >= 0) s->proc[b] = pa;
}

/* Moves rank a to processor q (swapping with its rank, if any) when that
 * lowers the congestion without loading any link beyond the busiest: 1
 * kept, 0 undone. */
static int try_move(rstate *s, int a, int q)
{
    int pa = s->proc[a], b = s->owner[q];
    unsigned __int128 before = s->sumsq;
    put_both(s, a, b, -1);
    place(s, a, q);
    s->tmax = 0;
    put_both(s, a, b, +1);
    if (s->sumsq < before && s->tmax <= s->max) return 1;
    put_both(s, a, b, -1);
    place(s, a, pa);
    put_both(s, a, b, +1);
    return 0;
}

long map_refine(const map_graph *gr, const map_machine *m, int *proc, int passes, double budget)
{
    rstate s = {.gr = gr, .m = m, .proc = proc};
    s.owner = malloc(sizeof *s.owner * (size_t)m->nprocs);
    s.load = calloc((size_t)m->g.nnodes * TSIM_NPORTS, sizeof *s.load);
    if (!s.owner || !s.load) {
        free(s.owner);
        free(s.load);
        return 0;
    }
    for (int p = 0; p < m->nprocs; p++) s.owner[p] = -1;
    for (int r = 0; r < gr->n; r++) s.owner[proc[r]] = r;
    for (int i = 0; i < gr->nedges; i++) put(&s, &gr->e[i], +1);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* each rank's heaviest partners (all of them in a sparse graph): in a
     * dense one (an alltoall) every placement costs about the same and
     * trying them all would cost n^2 routes a rank */
    int *np = calloc((size_t)gr->n, sizeof *np);
    int *part = malloc(sizeof *part * (size_t)gr->n * PARTNERS);
    uint64_t *pw = malloc(sizeof *pw * (size_t)gr->n * PARTNERS);
    if (!np || !part || !pw) {
        free(np), free(part), free(pw), free(s.owner), free(s.load);
        return 0;
    }
    for (int a = 0; a < gr->n; a++)
        for (int i = gr->off[a]; i < gr->off[a + 1]; i++) {
            const map_edge *e = &gr->e[gr->inc[i]];
            int r = e->from == a ? e->to : e->from, *pa = part + a * PARTNERS, k;
            uint64_t *wa = pw + a * PARTNERS, w = e->bytes;
            for (k = 0; k < np[a] && pa[k] != r; k++) {}
            if (k < np[a]) w += wa[k]; /* the other direction of a pair already in */
            else if (np[a] < PARTNERS) k = np[a]++;
            else if (w > wa[PARTNERS - 1]) k = PARTNERS - 1;
            else continue;
            /* keep the list sorted by weight, heaviest first */
            while (k > 0 && wa[k - 1] < w) pa[k] = pa[k - 1], wa[k] = wa[k - 1], k--;
            pa[k] = r, wa[k] = w;
        }
    long swaps = 0;
    int cpus = m->g.cpus;
    size_t nl = (size_t)m->g.nnodes * TSIM_NPORTS;
    for (int pass = 0; pass < passes; pass++) {
        long before = swaps;
        s.max = 0;
        for (size_t l = 0; l < nl; l++) s.max = s.load[l] > s.max ? s.load[l] : s.max;
        for (int a = 0; a < gr->n; a++) {
            /* next to each of its heaviest partners: the partner's node's
             * other processor and the processors of the nodes around it */
            for (int i = 0; i < np[a]; i++) {
                int r = part[a * PARTNERS + i];
                int node = proc[r] / TSIM_CPUS;
                for (int p = -1; p < TSIM_NPORTS; p++) {
                    int n2 = p < 0 ? node : m->nbr[node * TSIM_NPORTS + p];
                    if (n2 < 0) continue;
                    for (int t = 0; t < cpus; t++) {
                        int q = n2 * TSIM_CPUS + t;
                        if (q != proc[a] && q != proc[r]) swaps += try_move(&s, a, q);
                    }
                }
            }
            if ((a & 63) == 63 && elapsed(&t0) > budget) break;
        }
        if (swaps == before || elapsed(&t0) > budget) break;
    }
    free(np);
    free(part);
    free(pw);
    free(s.owner);
    free(s.load);
    return swaps;
}
