/* Link utilization over simulated time, for the timeline trace (mpirun
 * --trace, docs/trace.md): the engine samples every link's counters at a
 * fixed simulated interval. Off unless asked for, and then it only reads
 * counters: the simulation is the same with and without it. */
#ifndef TSIM_TRACE_H
#define TSIM_TRACE_H

#include "tsim.h"

/* What one link did in [t, t + len): packets and bytes whose transmission
 * started there, and the cycles it was busy sending (a packet's
 * serialization split between the intervals it spans). A sample follows
 * every interval a link was busy in, and one with zeros after its last. */
typedef struct tsim_link_sample {
    uint64_t t, len;
    uint64_t packets, bytes, busy;
    uint32_t node;
    uint32_t port;
} tsim_link_sample;

/* Before the run: sample every `interval` cycles (> 0), keeping samples
 * that overlap [from, to], at most max of them (the rest are counted).
 * Returns 0, or -1 out of memory. */
int tsim_engine_trace_links(tsim_engine *e, uint64_t interval, uint64_t from, uint64_t to,
                            size_t max);
/* After the run: closes the last interval at `end` (the job's end time),
 * so the samples of a link add up to its counters (tsim_engine_link), and
 * returns them in time order; *dropped: samples over max. */
const tsim_link_sample *tsim_engine_link_samples(tsim_engine *e, uint64_t end, size_t *n,
                                                 uint64_t *dropped);

#endif
