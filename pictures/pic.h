/* Pictures and summaries of a finished run, drawn from its link counters
 * (prefix pic_). Above torus-sim, which only counts: the network model
 * knows nothing of how its counters are drawn.
 *
 * A pic_linkmap is a plain copy of what a heatmap needs (machine, job,
 * simulated time, every link's counters, which ranks sit on which node). It
 * is kept apart from the engine so that the same drawing code serves mpirun
 * and bgl-traffic (filled from the engine at the end of a job) and
 * bglemu-report (filled from the JSON report afterwards): all draw
 * byte-identical pictures. See docs/pictures.md. */
#ifndef PIC_H
#define PIC_H

#include <stdio.h>

#include "torus-sim/tsim.h"

#define PIC_LABEL_MAX 256

typedef struct pic_linkmap {
    tsim_geom g;                 /* dim, torus, cpus, nnodes, nranks */
    char job[PIC_LABEL_MAX];     /* the command that ran, "" if unknown */
    char mapping[PIC_LABEL_MAX];
    uint64_t end_cycles, packets_delivered, packet_hops;
    uint64_t clock_mhz;
    /* g.nnodes * TSIM_NPORTS, index node * TSIM_NPORTS + port; links that
     * do not exist (mesh edges, sides of length 1) stay zero */
    tsim_link_stats *link;
    /* g.nnodes * TSIM_CPUS: the rank on each processor, -1 none; a CO
     * node's coprocessor (t = 1) is not a rank */
    int *rank;
} pic_linkmap;

/* Allocates the arrays for geometry g (nnodes filled in here); 0 or -1. */
int pic_linkmap_init(pic_linkmap *m, const tsim_geom *g);
void pic_linkmap_free(pic_linkmap *m);
/* Copies the counters of the run engine e made on segment seg, whose
 * result is r; job may be NULL. 0 or -1. */
int pic_linkmap_from_run(pic_linkmap *m, const tsim_seg *seg, tsim_engine *e, const tsim_result *r,
                         const char *job);
/* Busy cycles over simulated time (a run of 0 cycles counts as 1). */
double pic_linkmap_util(const pic_linkmap *m, int node, int port);
/* The links in one line, as reports and the SVG's title show them: how
 * many carried packets of how many, mean and busiest utilization and
 * where. Returns how many carried packets. */
int pic_linkmap_summary(const pic_linkmap *m, char *buf, size_t len);

/* The text heatmap (busiest outgoing link per node, per z plane). */
void pic_linkmap_text(const pic_linkmap *m, FILE *f);
/* The heatmap of a run, straight from its engine, in format PIC_HEAT_*
 * (below); job (may be NULL) titles the SVG. 0, or -1 out of memory. */
int pic_run_heatmap(const tsim_seg *seg, tsim_engine *e, const tsim_result *r, const char *job, int format,
                    FILE *f);
/* The SVG heatmap: per z plane a grid of nodes, every existing link one
 * element of class "link uN" (N = utilization decile 0..9) or "link idle"
 * (no packet), a colour scale and the job in the title. */
void pic_linkmap_svg(const pic_linkmap *m, FILE *f);

/* What --heatmap FILE writes, from FILE's extension: PIC_HEAT_SVG for
 * .svg, PIC_HEAT_TEXT for "-", .txt and anything else (the format older
 * runs wrote); -1 with a reason in err for a picture format we do not draw
 * (.png and friends: convert the SVG instead). */
enum { PIC_HEAT_TEXT = 0, PIC_HEAT_SVG = 1 };
int pic_heatmap_format(const char *path, char *err, size_t errlen);

/* The utilization class of a link as the SVG names it: -1 idle (no packet),
 * else the decile 0..9 (1.0 and above are 9). */
int pic_util_class(const tsim_link_stats *l, double util);
/* The SVG's colour of a class (-1 idle, 0..9), for other pictures that
 * keep its scale (the traffic matrix, adi3-device/bin/report_matrix.h). */
const char *pic_svg_fill(int cls);
/* s as SVG text: markup escaped, control bytes as '?'. */
void pic_svg_text(FILE *f, const char *s);

/* The command line argv[0..] as one label for reports: words joined by
 * spaces, control bytes and invalid UTF-8 replaced by '?', cut with "..." to
 * fit len. */
void pic_job_label(char *dst, size_t len, char *const *argv);

#endif
