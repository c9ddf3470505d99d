/* The rank map (see ml_map.h). Every rejection names where and why in one
 * line, because a bad mapping file is the most common launch mistake. */
#include "ml_map.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char DIMS[] = "XYZT";

int ml_map_parse_order(const char *spec, int perm[4])
{
    if (!spec || strlen(spec) != 4) return 0;
    int seen = 0;
    for (int k = 0; k < 4; k++) {
        const char *d = strchr(DIMS, toupper((unsigned char)spec[k]));
        if (!d || !spec[k]) return 0;
        int dim = (int)(d - DIMS);
        if (seen & (1 << dim)) return 0;
        seen |= 1 << dim;
        perm[k] = dim;
    }
    return 1;
}

int ml_map_looks_like_order(const char *spec)
{
    size_t n = spec ? strlen(spec) : 0;
    if (n < 1 || n > 8) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalpha((unsigned char)spec[i])) return 0;
    return 1;
}

static int alloc_map(ml_map *m, const tsim_geom *g)
{
    memset(m, 0, sizeof *m);
    m->nranks = g->nranks;
    m->cpus = g->cpus;
    m->nprocs = g->dim[0] * g->dim[1] * g->dim[2] * TSIM_CPUS;
    m->proc = malloc(sizeof *m->proc * (size_t)(g->nranks > 0 ? g->nranks : 1));
    m->rank = malloc(sizeof *m->rank * (size_t)m->nprocs);
    if (!m->proc || !m->rank) return -1;
    for (int i = 0; i < m->nprocs; i++) m->rank[i] = -1;
    return 0;
}

void ml_map_free(ml_map *m)
{
    free(m->proc);
    free(m->rank);
    m->proc = m->rank = NULL;
}

int ml_map_from_seg(ml_map *m, const tsim_seg *seg)
{
    if (alloc_map(m, &seg->geom) != 0) {
        ml_map_free(m);
        return -1;
    }
    for (int r = 0; r < seg->geom.nranks; r++) {
        int p = seg->rank_proc[r];
        if (p < 0 || p >= m->nprocs) {
            ml_map_free(m);
            return -1;
        }
        m->proc[r] = p;
        m->rank[p] = r;
    }
    int perm[4];
    if (ml_map_parse_order(seg->mapping, perm))
        for (int k = 0; k < 4; k++) m->order[k] = DIMS[perm[k]];
    return 0;
}

static void place(ml_map *m, const tsim_geom *g, int r, const int c[4])
{
    int p = tsim_proc_index(tsim_node_of(g, c[0], c[1], c[2]), c[3]);
    m->proc[r] = p;
    m->rank[p] = r;
}

static int build_order(ml_map *m, const int perm[4], const tsim_geom *g)
{
    int ext[4] = {g->dim[0], g->dim[1], g->dim[2], g->cpus};
    for (int r = 0; r < g->nranks; r++) {
        int c[4], rest = r;
        for (int k = 0; k < 4; k++) { /* mixed radix, perm[0] fastest */
            c[perm[k]] = rest % ext[perm[k]];
            rest /= ext[perm[k]];
        }
        place(m, g, r, c);
    }
    return 0;
}

/* Splits one line into at most 5 fields after removing a '#' comment. */
static int split(char *line, char *f[5])
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    int n = 0;
    for (char *s = strtok(line, " \t\r\n\v\f"); s && n < 5; s = strtok(NULL, " \t\r\n\v\f"))
        f[n++] = s;
    return n;
}

static int build_file(ml_map *m, const char *path, FILE *fp, const tsim_geom *g, char *err,
                      size_t errlen)
{
    /* line where each processor slot was placed, to name the earlier line */
    int *line_of = calloc((size_t)m->nprocs, sizeof *line_of);
    char *buf = NULL;
    size_t cap = 0;
    int lineno = 0, r = 0, rc = -1;
    static const char *const name[4] = {"x", "y", "z", "t"};
    int ext[4] = {g->dim[0], g->dim[1], g->dim[2], g->cpus};
    if (!line_of) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    while (getline(&buf, &cap, fp) >= 0) {
        lineno++;
        char *f[5];
        int n = split(buf, f);
        if (n == 0) continue;
        int c[4];
        for (int k = 0; k < n && k < 4; k++) {
            char *end;
            errno = 0;
            long v = strtol(f[k], &end, 10);
            if (*end || end == f[k]) {
                snprintf(err, errlen, "%s:%d: %s coordinate '%.32s' is not a number", path, lineno,
                         name[k], f[k]);
                goto out;
            }
            if (errno || v < 0 || v >= ext[k]) {
                if (k == 3)
                    snprintf(err, errlen, "%s:%d: t=%.32s out of range for %s mode (t must be %s)",
                             path, lineno, f[k], g->cpus == 1 ? "CO" : "VN",
                             g->cpus == 1 ? "0" : "0 or 1");
                else
                    snprintf(err, errlen, "%s:%d: %s=%.32s outside the shape %dx%dx%d (%s must be 0..%d)",
                             path, lineno, name[k], f[k], g->dim[0], g->dim[1], g->dim[2], name[k],
                             ext[k] - 1);
                goto out;
            }
            c[k] = (int)v;
        }
        if (n < 4) {
            snprintf(err, errlen, "%s:%d: expected 4 numbers 'x y z t', found %d", path, lineno, n);
            goto out;
        }
        if (n > 4) {
            snprintf(err, errlen, "%s:%d: unexpected '%.32s' after 'x y z t'", path, lineno, f[4]);
            goto out;
        }
        if (r >= g->nranks) {
            snprintf(err, errlen, "%s:%d: too many lines: a line for rank %d, but -np %d maps ranks 0..%d",
                     path, lineno, r, g->nranks, g->nranks - 1);
            goto out;
        }
        int p = tsim_proc_index(tsim_node_of(g, c[0], c[1], c[2]), c[3]);
        if (m->rank[p] >= 0) {
            snprintf(err, errlen, "%s:%d: duplicate <%d,%d,%d,%d>, already rank %d on line %d",
                     path, lineno, c[0], c[1], c[2], c[3], m->rank[p], line_of[p]);
            goto out;
        }
        line_of[p] = lineno;
        place(m, g, r++, c);
    }
    if (ferror(fp)) {
        snprintf(err, errlen, "%s:%d: read error: %s", path, lineno + 1, strerror(errno));
        goto out;
    }
    if (r < g->nranks) {
        snprintf(err, errlen, "%s:%d: too few lines: %d rank%s mapped, -np %d needs %d", path,
                 lineno, r, r == 1 ? "" : "s", g->nranks, g->nranks);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    free(line_of);
    return rc;
}

int ml_map_build(ml_map *m, const char *spec, const tsim_geom *g, char *err, size_t errlen)
{
    if (!spec || !*spec) spec = "XYZT";
    int nodes = g->dim[0] * g->dim[1] * g->dim[2];
    if (g->cpus < 1 || g->cpus > TSIM_CPUS || g->nranks < 1 || g->nranks > nodes * g->cpus) {
        snprintf(err, errlen, "%d ranks do not fit %dx%dx%d in %s mode (%d processors)", g->nranks,
                 g->dim[0], g->dim[1], g->dim[2], g->cpus == 2 ? "VN" : "CO", nodes * g->cpus);
        memset(m, 0, sizeof *m);
        return -1;
    }
    if (alloc_map(m, g) != 0) {
        snprintf(err, errlen, "out of memory for %d ranks", g->nranks);
        ml_map_free(m);
        return -1;
    }
    int perm[4];
    if (ml_map_parse_order(spec, perm)) {
        for (int k = 0; k < 4; k++) m->order[k] = DIMS[perm[k]];
        return build_order(m, perm, g);
    }
    FILE *fp = fopen(spec, "r");
    if (!fp) {
        int e = errno;
        if (ml_map_looks_like_order(spec))
            snprintf(err, errlen, "mapping order '%s': not a permutation of X, Y, Z and T "
                     "(e.g. XYZT, TXYZ), nor a mapping file", spec);
        else
            snprintf(err, errlen, "%s: cannot open mapping file: %s", spec, strerror(e));
        ml_map_free(m);
        return -1;
    }
    int rc = build_file(m, spec, fp, g, err, errlen);
    fclose(fp);
    if (rc != 0) ml_map_free(m);
    return rc;
}

void ml_map_coords(const ml_map *m, const tsim_geom *g, int rank, int c[4])
{
    int p = m->proc[rank];
    tsim_coords(g, p / TSIM_CPUS, c);
    c[3] = p % TSIM_CPUS;
}

int ml_shape_default(int nranks, int cpus, int dim[3])
{
    if (nranks < 1 || cpus < 1) return -1;
    int need = (nranks + cpus - 1) / cpus, best = 0, bestmax = 0;
    for (int x = 1; x <= TSIM_MAX_DIM; x++)
        for (int y = 1; y <= x; y++)
            for (int z = 1; z <= y; z++) {
                int v = x * y * z;
                if (v < need || v * TSIM_CPUS > TSIM_MAX_PROCS) continue;
                if (!best || x < bestmax || (x == bestmax && v < best)) {
                    best = v;
                    bestmax = x;
                    dim[0] = x, dim[1] = y, dim[2] = z;
                }
            }
    return best ? 0 : -1;
}
