/* ml_bw: uni- and bidirectional bandwidth between ranks 0 and 1 through the
 * message layer, 1 B to 4 MiB, in simulated time (MB/s at clock_mhz).
 * A window of messages goes out back to back; the receiver answers the
 * last one with an empty message, so the time covers delivery. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ml_exchange.h"

#define WINDOW ML_EXCHANGE_MAX
#define MAXSZ (4u << 20)

/* Posts `send` messages to peer, then waits until they left and `recv`
 * messages arrived. */
static int exchange(ml_ctx *ml, ml_bench *b, int peer, ml_proto proto, size_t size, int send,
                    int recv)
{
    return ml_exchange(ml, b, NULL, peer, send, proto, &size, recv, "ml_bw");
}

int main(int argc, char **argv)
{
    int proto = ML_AUTO;
    size_t max = MAXSZ;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: mpirun -np N [options] ml_bw [--protocol NAME] [--max BYTES]\n"
                   "Uni- and bidirectional bandwidth between ranks 0 and 1, 1 B to 4 MiB,\n"
                   "window %d, simulated MB/s.\n", WINDOW);
            return 0;
        } else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            max = strtoul(argv[++i], NULL, 0);
            if (max < 1 || max > MAXSZ) {
                fprintf(stderr, "ml_bw: --max must be 1..%u\n", MAXSZ);
                return 2;
            }
        } else if (!strcmp(argv[i], "--protocol") && i + 1 < argc) {
            if ((proto = ml_proto_parse(argv[++i])) < 0) {
                fprintf(stderr, "ml_bw: unknown protocol '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "ml_bw: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    ml_bench b;
    ml_bench_init(&b, MAXSZ);
    char err[256];
    ml_ctx *ml = ml_init_env(ml_bench_upcall(), &b, err, sizeof err);
    if (!ml) {
        fprintf(stderr, "ml_bw: %s\n", err);
        return 1;
    }
    int me = ml_rank(ml), rc = 0;
    if (ml_nranks(ml) < 2) {
        fprintf(stderr, "ml_bw: needs at least 2 ranks\n");
        rc = 2;
    } else if (me < 2) {
        pl_proc *pp = ml_proc(ml);
        double mhz = (double)pp->seg->params.clock_mhz;
        if (me == 0) printf("%-10s %-14s %12s %10s %12s %10s\n", "bytes", "protocol", "uni cycles",
                            "uni MB/s", "bi cycles", "bi MB/s");
        for (size_t size = 1; size <= max && !rc; size *= 4) {
            ml_proto p = (ml_proto)proto;
            if (p == ML_ONEPKT && size + sizeof size > TSIM_PAYLOAD_MAX) continue;
            /* unidirectional: 0 sends WINDOW, 1 answers once */
            uint64_t t0 = pl_now(pp);
            if (me == 0) rc |= exchange(ml, &b, 1, p, size, WINDOW, 1);
            else rc |= exchange(ml, &b, 0, ML_AUTO, 0, 0, WINDOW) | ml_bench_send(ml, &b, 0, ML_AUTO, 0);
            uint64_t uni = pl_now(pp) - t0;
            /* bidirectional: both send WINDOW and receive WINDOW */
            t0 = pl_now(pp);
            rc |= exchange(ml, &b, 1 - me, p, size, WINDOW, WINDOW);
            uint64_t bi = pl_now(pp) - t0;
            if (me == 0)
                printf("%-10zu %-14s %12llu %10.2f %12llu %10.2f\n", size,
                       ml_proto_name(p ? p : ml_choose(ml, 1, sizeof size, size)),
                       (unsigned long long)uni, (double)WINDOW * size * mhz / (double)uni,
                       (unsigned long long)bi, 2.0 * WINDOW * size * mhz / (double)bi);
        }
    }
    ml_finalize(ml);
    ml_bench_free(&b);
    return rc ? 1 : 0;
}
