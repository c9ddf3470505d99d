/* The SVG heatmap of a run: per z plane a grid of nodes, every outgoing link
 * an arrow (x and y) or a tile inside its node (z), coloured by utilization.
 *
 * Plain SVG 1.1 with the colour in each element's fill attribute (the class
 * names the decile too, for scripts and tests): no script, no CSS needed,
 * so browsers, rsvg-convert and Inkscape draw it alike. Every number is
 * printed from integers or fixed-point formats, so the same run gives the
 * same bytes from mpirun and from bglemu-report. */
#include <math.h>
#include <string.h>

#include "pic.h"


/* Yellow to dark red in ten steps of 10% (YlOrRd-like, darkening steadily
 * so the order reads in grey too); idle links light grey. */
static const char *const palette[10] = {"#ffe98a", "#fed35f", "#fdb547", "#fc9638", "#f9772e",
                                        "#f0562a", "#dc3427", "#bd1a26", "#940b25", "#5f0320"};
static const char *const idle_fill = "#e8e8e8";

enum {
    PITCH = 96,  /* between node centres */
    HALF = 17,   /* half a node box */
    LANE = 6,    /* a lane's offset from the line through the centres */
    GAP = 4,     /* between a node box and an arrow */
    PAD_L = 44,  /* panel: room for the y labels */
    PAD_T = 40,  /* panel: plane title and x labels */
    PAD_R = 12,
    PAD_B = 8,
    HEAD_H = 170 /* title lines but the job's, scale and key */
};

void pic_svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
        }
    }
}

static const char *fill_of(int cls)
{
    return cls < 0 ? idle_fill : palette[cls];
}

/* The class attribute and fill of one link, and its tooltip. */
static void link_attrs(FILE *f, const pic_linkmap *m, int node, int port)
{
    const tsim_link_stats *l = &m->link[node * TSIM_NPORTS + port];
    double u = pic_linkmap_util(m, node, port);
    int cls = pic_util_class(l, u);
    int c[3], d[3];
    tsim_coords(&m->g, node, c);
    tsim_coords(&m->g, tsim_neighbor(&m->g, node, port), d);
    if (cls < 0) fputs(" class=\"link idle\"", f);
    else fprintf(f, " class=\"link u%d\"", cls);
    fprintf(f, " fill=\"%s\" data-link=\"%s %d,%d,%d\" data-util=\"%.4f\"><title>%s of "
               "&lt;%d,%d,%d&gt; to &lt;%d,%d,%d&gt;: %.1f%% busy, %llu packets, %llu bytes</title>",
            fill_of(cls), tsim_port_name(port), c[0], c[1], c[2], u, tsim_port_name(port), c[0], c[1], c[2],
            d[0], d[1], d[2], 100.0 * u, (unsigned long long)l->packets,
            (unsigned long long)l->bytes);
}

/* An arrow from (x1,y1) to (x2,y2) along one axis: a shaft 4 wide and a head
 * 7 long, one polygon so that each link is one element. */
static void arrow(FILE *f, const pic_linkmap *m, int node, int port, int x1, int y1, int x2,
                  int y2)
{
    int dx = (x2 > x1) - (x2 < x1), dy = (y2 > y1) - (y2 < y1);
    int px = -dy, py = dx; /* across the arrow */
    int bx = x2 - 7 * dx, by = y2 - 7 * dy; /* base of the head */
    fprintf(f, "<polygon points=\"%d,%d %d,%d %d,%d %d,%d %d,%d %d,%d %d,%d\"", x1 + 2 * px,
            y1 + 2 * py, bx + 2 * px, by + 2 * py, bx + 5 * px, by + 5 * py, x2, y2, bx - 5 * px,
            by - 5 * py, bx - 2 * px, by - 2 * py, x1 - 2 * px, y1 - 2 * py);
    link_attrs(f, m, node, port);
    fputs("</polygon>\n", f);
}

/* The x or y link leaving node through port, drawn from the node box to the
 * next one, or to the panel's edge when it wraps around. */
static void xy_link(FILE *f, const pic_linkmap *m, int node, int port, int cx, int cy)
{
    int nb = tsim_neighbor(&m->g, node, port);
    if (nb < 0) return;
    int dim = port / 2, plus = !(port & 1);
    int c[3];
    tsim_coords(&m->g, node, c);
    int wraps = plus ? c[dim] == m->g.dim[dim] - 1 : c[dim] == 0;
    int len = wraps ? PITCH / 2 - HALF - GAP - 3 : PITCH - 2 * HALF - 2 * GAP;
    /* screen direction: x grows to the right, y grows upwards */
    int sx = dim == 0 ? (plus ? 1 : -1) : 0, sy = dim == 1 ? (plus ? -1 : 1) : 0;
    /* x+ runs above the centre line, x- below; y+ left of it, y- right */
    int ox = dim == 1 ? (plus ? -LANE : LANE) : 0, oy = dim == 0 ? (plus ? -LANE : LANE) : 0;
    int x1 = cx + ox + sx * (HALF + GAP), y1 = cy + oy + sy * (HALF + GAP);
    arrow(f, m, node, port, x1, y1, x1 + sx * len, y1 + sy * len);
}

/* A node in three passes, so that the links' common stroke is set once on
 * their group: 0 the box, 1 its links (x and y arrows, z tiles in the box),
 * 2 the labels over them. */
static void node(FILE *f, const pic_linkmap *m, int node, int cx, int cy, int pass)
{
    int c[3];
    tsim_coords(&m->g, node, c);
    if (pass == 0) {
        fprintf(f, "<rect class=\"node\" data-node=\"%d,%d,%d\" x=\"%d\" y=\"%d\" width=\"%d\" "
                   "height=\"%d\" rx=\"3\" fill=\"#fff\" stroke=\"#444\"/>\n",
                c[0], c[1], c[2], cx - HALF, cy - HALF, 2 * HALF, 2 * HALF);
        return;
    }
    if (pass == 1)
        for (int port = 0; port < 4; port++) xy_link(f, m, node, port, cx, cy);
    /* z links are tiles: z+ the upper half of the box, z- the lower */
    for (int port = 4; port < TSIM_NPORTS; port++) {
        if (tsim_neighbor(&m->g, node, port) < 0) continue;
        int y = port == 4 ? cy - HALF + 3 : cy + 1;
        if (pass == 1) {
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"", cx - HALF + 3, y,
                    2 * HALF - 6, HALF - 4);
            link_attrs(f, m, node, port);
            fputs("</rect>\n", f);
            continue;
        }
        const tsim_link_stats *l = &m->link[node * TSIM_NPORTS + port];
        int cls = pic_util_class(l, pic_linkmap_util(m, node, port));
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\"%s>%s</text>\n",
                cx, y + HALF - 7, cls >= 5 ? " fill=\"#fff\"" : "", tsim_port_name(port));
    }
    if (pass != 2) return;
    /* the ranks on the node, in the free corner up and left of it */
    int r0 = m->rank[node * TSIM_CPUS], r1 = m->rank[node * TSIM_CPUS + 1];
    if (r0 >= 0 || r1 >= 0) {
        fprintf(f, "<text class=\"ranks\" data-node=\"%d,%d,%d\" x=\"%d\" y=\"%d\" "
                   "font-size=\"10\" text-anchor=\"end\" fill=\"#333\">",
                c[0], c[1], c[2], cx - HALF - 1, cy - HALF - 3);
        if (r0 >= 0) fprintf(f, "%d", r0);
        if (r0 >= 0 && r1 >= 0) fputc(',', f);
        if (r1 >= 0) fprintf(f, "%d", r1);
        fputs("</text>\n", f);
    }
}

/* s cut into at most maxl lines of about maxc bytes, at spaces where it can
 * and never inside a UTF-8 character; the last line ends in "..." if s does
 * not fit. Returns the number of lines. */
static int wrap(const char *s, int maxc, char lines[][PIC_LABEL_MAX], int maxl)
{
    if (maxc < 8) maxc = 8;
    if (maxc > PIC_LABEL_MAX - 4) maxc = PIC_LABEL_MAX - 4;
    int n = 0;
    size_t len = strlen(s);
    while (len && n < maxl) {
        size_t cut = len;
        if ((int)len > maxc) {
            cut = (size_t)maxc;
            size_t sp = cut;
            while (sp > 0 && s[sp] != ' ') sp--;
            if (sp > 0) cut = sp;
            else
                while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80) cut--;
            if (!cut) cut = (size_t)maxc; /* not UTF-8 after all: cut anywhere */
        }
        if (n == maxl - 1 && cut < len) {
            /* the last line: as much as fits, then "..." */
            cut = (size_t)maxc - 3 < len ? (size_t)maxc - 3 : len;
            while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80) cut--;
            snprintf(lines[n++], PIC_LABEL_MAX, "%.*s...", (int)cut, s);
            break;
        }
        snprintf(lines[n++], PIC_LABEL_MAX, "%.*s", (int)cut, s);
        s += cut;
        len -= cut;
        while (*s == ' ') s++, len--;
    }
    return n;
}

static void connection(const tsim_geom *g, char *buf, size_t len)
{
    int nt = g->torus[0] + g->torus[1] + g->torus[2];
    if (nt == 3 || nt == 0)
        snprintf(buf, len, "%s", nt ? "torus" : "mesh");
    else
        snprintf(buf, len, "%s,%s,%s", g->torus[0] ? "torus" : "mesh",
                 g->torus[1] ? "torus" : "mesh", g->torus[2] ? "torus" : "mesh");
}

static void text_line(FILE *f, int x, int y, int size, const char *weight, const char *s)
{
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"%d\"%s%s%s>", x, y, size,
            weight ? " font-weight=\"" : "", weight ? weight : "", weight ? "\"" : "");
    pic_svg_text(f, s);
    fputs("</text>\n", f);
}

void pic_linkmap_svg(const pic_linkmap *m, FILE *f)
{
    const tsim_geom *g = &m->g;
    int X = g->dim[0], Y = g->dim[1], Z = g->dim[2];
    int cols = (int)ceil(sqrt((double)Z));
    while (cols * cols < Z) cols++; /* sqrt may round down a perfect square */
    int rows = (Z + cols - 1) / cols;
    int pw = PAD_L + X * PITCH + PAD_R, ph = PAD_T + Y * PITCH + PAD_B;
    int width = cols * pw + 20;
    if (width < 760) width = 760;
    /* the job in bold 17 px (some 11 px a character) wrapped to the width */
    char jl[4][PIC_LABEL_MAX];
    int njl = m->job[0] ? wrap(m->job, (width - 24) / 11, jl, 4) : 0;
    int head = HEAD_H + 22 * njl;
    int height = head + rows * ph + 10;

    char conn[32], machine[512], timing[256], linkline[256];
    connection(g, conn, sizeof conn);
    snprintf(machine, sizeof machine, "%d rank%s on %dx%dx%d %s, %s mode, mapping %s", g->nranks,
             g->nranks == 1 ? "" : "s", X, Y, Z, conn, g->cpus == 2 ? "VN" : "CO", m->mapping);
    double mhz = m->clock_mhz ? (double)m->clock_mhz : 1.0;
    snprintf(timing, sizeof timing, "simulated time %llu cycles = %.3f \xc2\xb5s at %llu MHz; "
             "%llu packets delivered, %llu packet-hops", (unsigned long long)m->end_cycles,
             (double)m->end_cycles / mhz, (unsigned long long)m->clock_mhz,
             (unsigned long long)m->packets_delivered, (unsigned long long)m->packet_hops);
    pic_linkmap_summary(m, linkline, sizeof linkline); /* as mpirun's report line has them */

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Verdana, "
               "sans-serif\">\n<title>",
            width, height, width, height);
    if (m->job[0]) pic_svg_text(f, m->job), fputs(": ", f);
    pic_svg_text(f, machine);
    fputs(" \xe2\x80\x94 link utilization</title>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, height);

    /* title: the job, the machine, the time, the links */
    int y = 26;
    for (int k = 0; k < njl; k++, y += 22) text_line(f, 12, y, 17, "bold", jl[k]);
    text_line(f, 12, y, njl ? 13 : 17, njl ? NULL : "bold", machine);
    text_line(f, 12, y + 20, 13, NULL, timing);
    text_line(f, 12, y + 40, 13, NULL, linkline);

    /* the colour scale: idle, then ten deciles with their bounds */
    int ly = y + 68, lx = 12, sw = 44;
    text_line(f, lx, ly - 6, 12, NULL, "link utilization = busy cycles / simulated time");
    fprintf(f, "<rect class=\"scale idle\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" "
               "fill=\"%s\" stroke=\"#555\" stroke-width=\"0.5\"/>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">idle</text>\n",
            lx, ly, sw - 6, idle_fill, lx + (sw - 6) / 2, ly + 26);
    for (int k = 0; k < 10; k++) {
        int x = lx + sw + k * sw;
        fprintf(f, "<rect class=\"scale u%d\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" "
                   "fill=\"%s\" stroke=\"#555\" stroke-width=\"0.5\"/>\n",
                k, x, ly, sw, palette[k]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d%%</text>\n",
                x, ly + 26, 10 * k);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">100%%</text>\n",
            lx + sw + 10 * sw, ly + 26);
    /* the key says only what this machine has */
    int zlinks = Z > 1, wraps = 0;
    for (int d = 0; d < 2; d++) wraps |= g->torus[d] && g->dim[d] > 1;
    char key[512];
    snprintf(key, sizeof key, "The outgoing links of each node: x+ \xe2\x86\x92 above x- "
             "\xe2\x86\x90, y+ \xe2\x86\x91 left of y- \xe2\x86\x93%s.",
             zlinks ? "; z+ and z- are the tiles in the node box" : "");
    text_line(f, lx, ly + 48, 11, NULL, key);
    snprintf(key, sizeof key, "%sThe numbers by a node are its ranks. Hover over a link for its "
             "figures.", wraps ? "An arrow leaving a plane wraps around the torus. " : "");
    text_line(f, lx, ly + 63, 11, NULL, key);

    for (int z = 0; z < Z; z++) {
        int px = 10 + (z % cols) * pw, py = head + (z / cols) * ph;
        fprintf(f, "<g class=\"plane\" data-z=\"%d\">\n", z);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">z = %d</text>\n",
                px + 4, py + 14, z);
        for (int x = 0; x < X; x++)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
                       "fill=\"#666\">x=%d</text>\n",
                    px + PAD_L + x * PITCH + PITCH / 2, py + PAD_T - 9, x);
        for (int yy = 0; yy < Y; yy++)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\" "
                       "fill=\"#666\">y=%d</text>\n",
                    px + PAD_L - 6, py + PAD_T + (Y - 1 - yy) * PITCH + PITCH / 2 + 4, yy);
        for (int pass = 0; pass < 3; pass++) {
            if (pass == 1) fputs("<g stroke=\"#555\" stroke-width=\"0.5\">\n", f);
            for (int yy = 0; yy < Y; yy++)
                for (int x = 0; x < X; x++)
                    node(f, m, tsim_node_of(g, x, yy, z), px + PAD_L + x * PITCH + PITCH / 2,
                         py + PAD_T + (Y - 1 - yy) * PITCH + PITCH / 2, pass);
            if (pass == 1) fputs("</g>\n", f);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
}

const char *pic_svg_fill(int cls)
{
    return fill_of(cls < 0 ? -1 : cls > 9 ? 9 : cls);
}
