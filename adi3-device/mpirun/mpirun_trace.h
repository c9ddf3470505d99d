/* mpirun --trace, shared by the three files that make it: mpirun_trace.c
 * (the ranks' buffers, and the merge of their records and the link
 * samples into one time order), mpirun_trace_json.c and
 * mpirun_trace_otf2.c (the two output formats). Both writers take the
 * same merged events, so a JSON file and an OTF2 archive of one job hold
 * the same slices and messages. */
#ifndef MPIRUN_TRACE_H
#define MPIRUN_TRACE_H

#include "mpirun.h"
#include "packetlayer/pl_trace.h"
#include "torus-sim/tsim_trace.h"

extern const char *const mpirun_trace_coll_names[PLT_COLL_N];
extern const char *const mpirun_trace_mpi_names[PL_TRACE_MPI_N];

/* Time in picoseconds (integers: a child slice never ends after its parent
 * in the file, whatever the rounding), printed as microseconds. */
typedef struct tev {
    uint64_t ps, end_ps;
    uint64_t order;     /* ties: metadata, slices (longer first), flows, counters */
    int kind;           /* EV_* below */
    int pid, tid;
    const pl_trace_rec *r;
    uint64_t id;        /* flow id, or collective lane data */
    const tsim_link_sample *ls;
    int rank;
    int peer;           /* flows: the rank at the other end */
    uint64_t cyc;       /* flows: this end's time in cycles */
} tev;

enum { E_SLICE, E_FLOW_S, E_FLOW_F, E_COLL, E_COUNTER };

typedef struct cinst {
    uint32_t gid, seq, sub, size;
    uint64_t t0, t1;
    int ranks;
} cinst;

/* What mpirun_trace_write hands a writer: every event in one time order,
 * the torus collectives' instances (an E_COLL event's id indexes ci), and
 * what the JSON file's header and track names report. */
typedef struct mpirun_trace_events {
    const tev *ev;
    size_t n;
    const cinst *ci;
    size_t ncoll, nsamp;        /* E_COLL and E_COUNTER events among them */
    const unsigned char *seen;  /* per rank: bit 0 cpu, bit 1 coprocessor has slices; may be NULL */
    uint64_t mhz;
    uint64_t cut, lost, sdrop;  /* events cut by --trace-max, lost by the ranks, link samples dropped */
    int coll_pid, link_pid;
} mpirun_trace_events;

/* Chrome trace-event JSON into f; 0. */
int mpirun_trace_write_json(mpirun_job *j, FILE *f, const mpirun_trace_events *m);
/* --trace FILE.otf2: exits MPIRUN_USAGE if the archive cannot be written
 * new (or this build has no libotf2). */
void mpirun_trace_otf2_check(const mpirun_opts *o);
/* The OTF2 archive --trace names; 0, or -1 after saying why. */
int mpirun_trace_write_otf2(mpirun_job *j, const mpirun_trace_events *m);

#endif
