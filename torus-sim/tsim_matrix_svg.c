/* The traffic matrix as a picture: sender down, receiver across, each
 * pair's bytes over the heaviest pair's in the link heatmap's ten steps and
 * colours (tsim_svg.c), so a glance says which pairs dominate; pairs that
 * sent nothing stay the heatmap's idle grey. Large jobs are drawn in blocks
 * of ranks (the block's sum), so the file stays small. */
#include <stdlib.h>

#include "tsim_matrix.h"
#include "tsim_report.h"

enum { SIDE = 640, MAXCELLS = 256, LEFT = 60, TOP = 150 };

void tsim_rankmatrix_svg(const tsim_rankmatrix *m, const char *title, FILE *f)
{
    int n = m->nranks > 0 ? m->nranks : 1;
    int blk = (n + MAXCELLS - 1) / MAXCELLS; /* ranks per cell side */
    int cells = (n + blk - 1) / blk;
    int cs = SIDE / cells > 1 ? SIDE / cells : 1;
    int side = cs * cells, W = LEFT + side + 20, H = TOP + side + 40;
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
    tsim_svg_text(f, title ? title : "");
    fputs(" \xe2\x80\x94 traffic matrix</title>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    fputs("<text x=\"12\" y=\"26\" font-size=\"15\" font-weight=\"bold\">", f);
    tsim_svg_text(f, title ? title : "");
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
            tsim_svg_fill(-1));
    for (int k = 0; k < 10; k++)
        fprintf(f, "<rect class=\"scale u%d\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"14\" "
                   "fill=\"%s\" stroke=\"#555\" stroke-width=\"0.5\"/>\n"
                   "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d%%</text>\n",
                k, lx + sw + k * sw, ly, sw, tsim_svg_fill(k), lx + sw + k * sw, ly + 26, 10 * k);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">idle</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">100%%</text>\n",
            lx + (sw - 6) / 2, ly + 26, lx + sw + 10 * sw, ly + 26);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">to rank "
               "\xe2\x86\x92</text>\n", LEFT + side / 2, TOP - 8);
    fprintf(f, "<text x=\"16\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %d)\">from rank \xe2\x86\x93</text>\n",
            TOP + side / 2, TOP + side / 2);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", LEFT, TOP,
            side, side, tsim_svg_fill(-1));
    /* rank labels every so often */
    int step = cells <= 16 ? 1 : cells <= 64 ? 8 : 32;
    for (int k = 0; k < cells; k += step)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"end\">%d</text>\n"
                   "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%d</text>\n",
                LEFT - 3, TOP + k * cs + cs / 2 + 3, k * blk, LEFT + k * cs + cs / 2,
                TOP + side + 12, k * blk);
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
                    cls, LEFT + d * cs, TOP + s * cs, cs, cs, tsim_svg_fill(cls), s * blk, d * blk,
                    (unsigned long long)v, s * blk, d * blk, (unsigned long long)v);
        }
    fputs("</svg>\n", f);
    free(b);
}
