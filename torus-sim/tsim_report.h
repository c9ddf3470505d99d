/* Pictures and summaries of a finished run, drawn from its link counters.
 *
 * A tsim_linkmap is a plain copy of what a heatmap needs (machine, job,
 * simulated time, every link's counters, which ranks sit on which node). It
 * is kept apart from the engine so that the same drawing code serves mpirun
 * (filled from the engine at the end of a job) and bglemu-report (filled
 * from the JSON report afterwards): both draw byte-identical pictures.
 * See docs/pictures.md. */
#ifndef TSIM_REPORT_H
#define TSIM_REPORT_H

#include <stdio.h>

#include "tsim.h"

#define TSIM_LABEL_MAX 256

typedef struct tsim_linkmap {
    tsim_geom g;                 /* dim, torus, cpus, nnodes, nranks */
    char job[TSIM_LABEL_MAX];    /* the command that ran, "" if unknown */
    char mapping[TSIM_LABEL_MAX];
    uint64_t end_cycles, packets_delivered, packet_hops;
    uint64_t clock_mhz;
    /* g.nnodes * TSIM_NPORTS, index node * TSIM_NPORTS + port; links that
     * do not exist (mesh edges, sides of length 1) stay zero */
    tsim_link_stats *link;
    /* g.nnodes * TSIM_CPUS: the rank on each processor, -1 none; a CO
     * node's coprocessor (t = 1) is not a rank */
    int *rank;
} tsim_linkmap;

/* Allocates the arrays for geometry g (nnodes filled in here); 0 or -1. */
int tsim_linkmap_init(tsim_linkmap *m, const tsim_geom *g);
void tsim_linkmap_free(tsim_linkmap *m);
/* Copies the engine's counters after a run; job may be NULL. 0 or -1. */
int tsim_linkmap_from_engine(tsim_linkmap *m, tsim_engine *e, const tsim_result *r,
                             const char *job);
/* Busy cycles over simulated time (a run of 0 cycles counts as 1). */
double tsim_linkmap_util(const tsim_linkmap *m, int node, int port);
/* The links in one line, as reports and the SVG's title show them: how
 * many carried packets of how many, mean and busiest utilization and
 * where. Returns how many carried packets. */
int tsim_linkmap_summary(const tsim_linkmap *m, char *buf, size_t len);

/* The text heatmap (busiest outgoing link per node, per z plane). */
void tsim_linkmap_text(const tsim_linkmap *m, FILE *f);
/* The SVG heatmap: per z plane a grid of nodes, every existing link one
 * element of class "link uN" (N = utilization decile 0..9) or "link idle"
 * (no packet), a colour scale and the job in the title. */
void tsim_linkmap_svg(const tsim_linkmap *m, FILE *f);

/* What --heatmap FILE writes, from FILE's extension: TSIM_HEAT_SVG for
 * .svg, TSIM_HEAT_TEXT for "-", .txt and anything else (the format older
 * runs wrote); -1 with a reason in err for a picture format we do not draw
 * (.png and friends: convert the SVG instead). */
enum { TSIM_HEAT_TEXT = 0, TSIM_HEAT_SVG = 1 };
int tsim_heatmap_format(const char *path, char *err, size_t errlen);

/* The utilization class of a link as the SVG names it: -1 idle (no packet),
 * else the decile 0..9 (1.0 and above are 9). */
int tsim_util_class(const tsim_link_stats *l, double util);
/* The SVG's colour of a class (-1 idle, 0..9), for other pictures that
 * keep its scale (the traffic matrix, adi3-device/bin/report_matrix.h). */
const char *tsim_svg_fill(int cls);
/* s as SVG text: markup escaped, control bytes as '?'. */
void tsim_svg_text(FILE *f, const char *s);

/* The command line argv[0..] as one label for reports: words joined by
 * spaces, control bytes and invalid UTF-8 replaced by '?', cut with "..." to
 * fit len. */
void tsim_job_label(char *dst, size_t len, char *const *argv);
/* tsim_engine_report_json with a "job" member first (omitted when job is
 * NULL or ""). */
void tsim_engine_report_json_job(tsim_engine *e, const tsim_result *r, const char *job, FILE *f);

#endif
