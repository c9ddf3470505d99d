/* The traffic matrix for bglemu-report (docs/mapping.md): its heaviest
 * pairs and its picture, drawn from the report's rank matrix
 * (torus-sim/tsim_matrix.h). Presentation only, so it lives beside its tool
 * rather than in the network model. Static functions in a header, as
 * report_json.h, since the tools are one source file each. */
#ifndef REPORT_MATRIX_H
#define REPORT_MATRIX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torus-sim/tsim_matrix.h"
#include "pictures/pic.h"

static const tsim_rankmatrix *matrix_top_m; /* qsort has no context argument */

static int matrix_heavier(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    uint64_t x = matrix_top_m->p[i].bytes, y = matrix_top_m->p[j].bytes;
    if (x != y) return x > y ? -1 : 1;
    return (i > j) - (i < j); /* from * n + to: lower from, then lower to */
}

/* The pairs in decreasing bytes (ties: lower from, then lower to): the
 * first n of them into out (indices from * nranks + to); returns how many. */
static int report_matrix_top(const tsim_rankmatrix *m, int n, int *out)
{
    size_t cells = (size_t)m->nranks * (size_t)m->nranks, k = 0;
    int *all = malloc((cells ? cells : 1) * sizeof *all);
    if (!all) return 0;
    for (size_t i = 0; i < cells; i++)
        if (m->p[i].packets) all[k++] = (int)i;
    matrix_top_m = m;
    qsort(all, k, sizeof *all, matrix_heavier);
    int got = (size_t)n < k ? n : (int)k;
    memcpy(out, all, (size_t)got * sizeof *out);
    free(all);
    return got;
}

enum { MX_SIDE = 640, MX_MAXCELLS = 256, MX_LEFT = 60, MX_TOP = 150 };

/* The traffic matrix as a picture: sender down, receiver across, each
 * pair's bytes over the heaviest pair's in the link heatmap's ten steps and
 * colours (pictures/pic_svg.c), so a glance says which pairs dominate; pairs that
 * sent nothing stay the heatmap's idle grey. Large jobs are drawn in blocks
 * of ranks (the block's sum), so the file stays small. */
static void report_matrix_svg(const tsim_rankmatrix *m, const char *title, FILE *f)
{
    int n = m->nranks > 0 ? m->nranks : 1;
    int blk = (n + MX_MAXCELLS - 1) / MX_MAXCELLS; /* ranks per cell side */
    int cells = (n + blk - 1) / blk;
    int cs = MX_SIDE / cells > 1 ? MX_SIDE / cells : 1;
    int side = cs * cells, W = MX_LEFT + side + 20, H = MX_TOP + side + 40;
    uint64_t *b = calloc((size_t)cells * (size_t)cells, sizeof *b);
    uint64_t max = 0, total = 0, pairs = 0;
    for (int s = 0; b && s < m->nranks; s++)
        for (int d = 0; d < m->nranks; d++) {
            const tsim_pair *c = &m->p[(size_t)s * (size_t)m->nranks + (size_t)d];
            if (!c->packets) continue;
            uint64_t *o = &b[(size_t)(s / blk) * (size_t)cells + (size_t)(d / blk)];
            *o += c->bytes ? c->bytes : 1;
            total += c->bytes;
            pairs++;
        }
    for (size_t i = 0; b && i < (size_t)cells * (size_t)cells; i++) max = b[i] > max ? b[i] : max;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Verdana, "
               "sans-serif\">\n<title>",
            W, H, W, H);
    pic_svg_text(f, title ? title : "");
    fputs(" \xe2\x80\x94 traffic matrix</title>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    fputs("<text x=\"12\" y=\"26\" font-size=\"15\" font-weight=\"bold\">", f);
    pic_svg_text(f, title ? title : "");
    fputs("</text>\n", f);
    fprintf(f, "<text x=\"12\" y=\"48\" font-size=\"13\">%d ranks, %llu pairs sent "
               "%llu bytes over the torus; heaviest %s %llu bytes%s</text>\n",
            m->nranks, (unsigned long long)pairs, (unsigned long long)total,
            blk > 1 ? "block" : "pair", (unsigned long long)max,
            blk > 1 ? "" : "");
    if (blk > 1)
        fprintf(f, "<text x=\"12\" y=\"66\" font-size=\"12\">each cell: %d x %d ranks "
                   "(their sum)</text>\n", blk, blk);
    /* the scale: the heatmap's idle grey and ten deciles of the heaviest */
    int ly = 84, lx = 12, sw = 44;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">bytes from row to column / heaviest "
               "cell</text>\n", lx, ly - 6);
    fprintf(f, "<rect class=\"scale idle\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" "
               "fill=\"%s\" stroke=\"#555\" stroke-width=\"0.5\"/>\n", lx, ly, sw - 6,
            pic_svg_fill(-1));
    for (int k = 0; k < 10; k++)
        fprintf(f, "<rect class=\"scale u%d\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" "
                   "fill=\"%s\" stroke=\"#555\" stroke-width=\"0.5\"/>\n"
                   "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d%%</text>\n",
                k, lx + sw + k * sw, ly, sw, pic_svg_fill(k), lx + sw + k * sw, ly + 26, 10 * k);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">idle</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">100%%</text>\n",
            lx + (sw - 6) / 2, ly + 26, lx + sw + 10 * sw, ly + 26);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">to rank "
               "\xe2\x86\x92</text>\n", MX_LEFT + side / 2, MX_TOP - 8);
    fprintf(f, "<text x=\"16\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %d)\">from rank \xe2\x86\x93</text>\n",
            MX_TOP + side / 2, MX_TOP + side / 2);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", MX_LEFT, MX_TOP,
            side, side, pic_svg_fill(-1));
    /* rank labels every so often */
    int step = cells <= 16 ? 1 : cells <= 64 ? 8 : 32;
    for (int k = 0; k < cells; k += step)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"end\">%d</text>\n"
                   "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%d</text>\n",
                MX_LEFT - 3, MX_TOP + k * cs + cs / 2 + 3, k * blk, MX_LEFT + k * cs + cs / 2,
                MX_TOP + side + 12, k * blk);
    for (int s = 0; b && s < cells; s++)
        for (int d = 0; d < cells; d++) {
            uint64_t v = b[(size_t)s * (size_t)cells + (size_t)d];
            if (!v) continue;
            double u = (double)v / (double)max;
            int cls = (int)(u * 10.0);
            cls = cls > 9 ? 9 : cls;
            fprintf(f, "<rect class=\"pair u%d\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                       "fill=\"%s\" data-pair=\"%d %d\" data-bytes=\"%llu\"><title>%d \xe2\x86\x92 "
                       "%d: %llu bytes</title></rect>\n",
                    cls, MX_LEFT + d * cs, MX_TOP + s * cs, cs, cs, pic_svg_fill(cls), s * blk, d * blk,
                    (unsigned long long)v, s * blk, d * blk, (unsigned long long)v);
        }
    fputs("</svg>\n", f);
    free(b);
}

#endif
