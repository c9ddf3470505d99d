/* The link map of a finished run and its text heatmap; the SVG is in
 * pic_svg.c. Only pic_linkmap_from_run reads an engine (through torus-sim's
 * public counters), so bglemu-report fills the same map from a report. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pic.h"


int pic_linkmap_init(pic_linkmap *m, const tsim_geom *g)
{
    memset(m, 0, sizeof *m);
    m->g = *g;
    m->g.nnodes = g->dim[0] * g->dim[1] * g->dim[2];
    size_t n = (size_t)m->g.nnodes;
    m->link = calloc(n * TSIM_NPORTS, sizeof *m->link);
    m->rank = malloc(n * TSIM_CPUS * sizeof *m->rank);
    if (!m->link || !m->rank) {
        pic_linkmap_free(m);
        return -1;
    }
    for (size_t i = 0; i < n * TSIM_CPUS; i++) m->rank[i] = -1;
    return 0;
}

void pic_linkmap_free(pic_linkmap *m)
{
    free(m->link);
    free(m->rank);
    m->link = NULL;
    m->rank = NULL;
}

int pic_linkmap_from_run(pic_linkmap *m, const tsim_seg *seg, tsim_engine *e, const tsim_result *r,
                         const char *job)
{
    if (pic_linkmap_init(m, &seg->geom) != 0) return -1;
    snprintf(m->job, sizeof m->job, "%s", job ? job : "");
    snprintf(m->mapping, sizeof m->mapping, "%s", seg->mapping);
    m->end_cycles = r->end_time;
    m->packets_delivered = r->packets_delivered;
    m->packet_hops = r->packet_hops;
    m->clock_mhz = seg->params.clock_mhz;
    for (int n = 0; n < m->g.nnodes; n++)
        for (int port = 0; port < TSIM_NPORTS; port++)
            if (tsim_neighbor(&m->g, n, port) >= 0) m->link[n * TSIM_NPORTS + port] = *tsim_engine_link(e, n, port);
    for (int i = 0; i < m->g.nnodes * TSIM_CPUS; i++) {
        const tsim_proc *p = &seg->procs[i];
        if (i % TSIM_CPUS < m->g.cpus && atomic_load(&p->state) != TSIM_P_ABSENT) m->rank[i] = p->rank;
    }
    return 0;
}

int pic_run_heatmap(const tsim_seg *seg, tsim_engine *e, const tsim_result *r, const char *job, int format,
                    FILE *f)
{
    pic_linkmap m;
    if (pic_linkmap_from_run(&m, seg, e, r, job) != 0) return -1;
    if (format == PIC_HEAT_SVG) pic_linkmap_svg(&m, f);
    else pic_linkmap_text(&m, f);
    pic_linkmap_free(&m);
    return 0;
}

double pic_linkmap_util(const pic_linkmap *m, int node, int port)
{
    double span = m->end_cycles ? (double)m->end_cycles : 1.0;
    return (double)m->link[node * TSIM_NPORTS + port].busy_cycles / span;
}

int pic_linkmap_summary(const pic_linkmap *m, char *buf, size_t len)
{
    const tsim_geom *g = &m->g;
    int links = 0, used = 0, bnode = 0, bport = 0;
    double usum = 0, umax = -1;
    for (int n = 0; n < g->nnodes; n++)
        for (int port = 0; port < TSIM_NPORTS; port++) {
            if (tsim_neighbor(g, n, port) < 0) continue;
            double u = pic_linkmap_util(m, n, port);
            links++;
            used += m->link[n * TSIM_NPORTS + port].packets > 0;
            usum += u;
            if (u > umax) umax = u, bnode = n, bport = port;
        }
    if (!used) {
        snprintf(buf, len, "links: none of %d carried packets", links);
        return 0;
    }
    int c[3];
    tsim_coords(g, bnode, c);
    snprintf(buf, len, "links: %d of %d carried packets; utilization mean %.1f%%, busiest %.1f%% "
             "(%s of <%d,%d,%d>)", used, links, 100.0 * usum / links, 100.0 * umax, tsim_port_name(bport),
             c[0], c[1], c[2]);
    return used;
}

int pic_util_class(const tsim_link_stats *l, double util)
{
    if (!l->packets && !l->busy_cycles) return -1;
    int c = (int)(util * 10.0);
    return c < 0 ? 0 : c > 9 ? 9 : c;
}

/* The same bytes as the heatmap mpirun printed before pictures existed:
 * scripts that read it keep working. */
void pic_linkmap_text(const pic_linkmap *m, FILE *f)
{
    const tsim_geom *g = &m->g;
    double dir_busy[TSIM_NPORTS] = {0};
    int dir_links[TSIM_NPORTS] = {0};
    fprintf(f, "link utilization: busiest outgoing link of each node, %% of %llu cycles\n",
            (unsigned long long)m->end_cycles);
    for (int z = 0; z < g->dim[2]; z++) {
        fprintf(f, "z=%-3d", z);
        for (int x = 0; x < g->dim[0]; x++) fprintf(f, " x=%-2d", x);
        fputc('\n', f);
        for (int y = g->dim[1] - 1; y >= 0; y--) {
            fprintf(f, " y=%-2d", y);
            for (int x = 0; x < g->dim[0]; x++) {
                int n = tsim_node_of(g, x, y, z);
                double best = 0;
                for (int port = 0; port < TSIM_NPORTS; port++) {
                    if (tsim_neighbor(g, n, port) < 0) continue;
                    double u = pic_linkmap_util(m, n, port);
                    if (u > best) best = u;
                    dir_busy[port] += u;
                    dir_links[port]++;
                }
                fprintf(f, " %4.0f", best * 100.0);
            }
            fputc('\n', f);
        }
    }
    fprintf(f, "mean by direction:");
    for (int port = 0; port < TSIM_NPORTS; port++)
        if (dir_links[port])
            fprintf(f, " %s %.1f%%", tsim_port_name(port), 100.0 * dir_busy[port] / dir_links[port]);
    fputc('\n', f);
}

int pic_heatmap_format(const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot) return PIC_HEAT_TEXT;
    if (!strcasecmp(dot, ".svg")) return PIC_HEAT_SVG;
    static const char *const raster[] = {".png", ".jpg", ".jpeg", ".gif", ".pdf", ".svgz", ".webp"};
    for (size_t i = 0; i < sizeof raster / sizeof *raster; i++)
        if (!strcasecmp(dot, raster[i])) {
            snprintf(err, errlen, "%s: only .svg pictures are drawn (or text: .txt, '-'); "
                     "convert the SVG, e.g. rsvg-convert -o %.*s.png %.*s.svg", path,
                     (int)(dot - path), path, (int)(dot - path), path);
            return -1;
        }
    return PIC_HEAT_TEXT;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid:
 * a label must be valid in the JSON and XML it goes into. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xe0) == 0xc0) len = 2, cp = s[0] & 0x1f, min = 0x80;
    else if ((s[0] & 0xf0) == 0xe0) len = 3, cp = s[0] & 0x0f, min = 0x800;
    else if ((s[0] & 0xf8) == 0xf0) len = 4, cp = s[0] & 0x07, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void pic_job_label(char *dst, size_t len, char *const *argv)
{
    if (!len) return;
    size_t o = 0;
    int cut = 0;
    for (int a = 0; argv && argv[a] && !cut; a++) {
        const unsigned char *s = (const unsigned char *)argv[a];
        size_t n = strlen(argv[a]);
        if (a) {
            if (o + 1 >= len) { cut = 1; break; }
            dst[o++] = ' ';
        }
        for (size_t i = 0; i < n;) {
            size_t k = utf8_len(s + i, n - i);
            int bad = k == 0 || s[i] < 0x20 || s[i] == 0x7f;
            size_t w = bad ? 1 : k;
            if (o + w >= len) { cut = 1; break; }
            if (bad) dst[o++] = '?';
            else memcpy(dst + o, s + i, w), o += w;
            i += bad ? 1 : k;
        }
    }
    dst[o] = '\0';
    if (cut && len > 4) {
        /* step back to a character boundary so "..." fits */
        size_t end = len - 4 < o ? len - 4 : o;
        while (end > 0 && ((unsigned char)dst[end] & 0xc0) == 0x80) end--;
        memcpy(dst + end, "...", 4);
    }
}
