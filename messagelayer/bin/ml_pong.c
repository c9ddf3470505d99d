/* ml_pong: half round trip between ranks 0 and 1 through the message layer,
 * in simulated cycles. Run with mpirun; the mapping decides where 0 and 1
 * sit. Prints "<protocol> <size> <N> cycles <us> us". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "messagelayer/ml_bench.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N [options] ml_pong [--protocol one-packet|eager|adaptive-eager|"
               "rendezvous|vn|auto] [--size BYTES] [--iters K]\n"
               "Half round trip between ranks 0 and 1 in simulated cycles (default: every\n"
               "protocol that applies to the pair, 1 byte, 10 round trips).\n");
}

int main(int argc, char **argv)
{
    int proto = -1, iters = 10;
    long size = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--protocol") && i + 1 < argc) {
            if ((proto = ml_proto_parse(argv[++i])) < 0) {
                fprintf(stderr, "ml_pong: unknown protocol '%s' (try --help)\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            char *end;
            size = strtol(argv[++i], &end, 0);
            if (*end || size < 0 || size > (1L << 30)) {
                fprintf(stderr, "ml_pong: --size must be 0..1073741824 bytes\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
            if (iters < 1) {
                fprintf(stderr, "ml_pong: --iters must be at least 1\n");
                return 2;
            }
        } else {
            fprintf(stderr, "ml_pong: unknown option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    ml_bench b;
    ml_bench_init(&b, (size_t)size);
    char err[256];
    ml_ctx *ml = ml_init_env(ml_bench_upcall(), &b, err, sizeof err);
    if (!ml) {
        fprintf(stderr, "ml_pong: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (ml_nranks(ml) < 2) {
        fprintf(stderr, "ml_pong: needs at least 2 ranks\n");
        rc = 2;
    } else if (ml_rank(ml) < 2) {
        int me = ml_rank(ml), same_node = ml_choose(ml, 1 - me, 0, 0) == ML_VN;
        for (int p = ML_ONEPKT; p < ML_NPROTO; p++) {
            if (proto >= 0 && p != proto) continue;
            if (proto == ML_AUTO) p = ML_AUTO;
            if (p == ML_VN && !same_node) {
                if (proto == ML_VN && me == 0)
                    fprintf(stderr, "ml_pong: vn needs ranks 0 and 1 on one node (-mode VN)\n");
                if (proto == ML_VN) rc = 2;
                continue;
            }
            if (p == ML_ONEPKT && (size_t)size + sizeof(size_t) > TSIM_PAYLOAD_MAX) continue;
            uint64_t c = ml_pingpong(ml, &b, 1 - me, me == 0, (ml_proto)p, (size_t)size, iters);
            if (!c) {
                rc = 1;
                break;
            }
            double mhz = (double)ml_proc(ml)->seg->params.clock_mhz;
            if (me == 0)
                printf("%s %ld %llu cycles %.3f us\n", ml_proto_name((ml_proto)p), size,
                       (unsigned long long)c, (double)c / mhz);
            if (proto == ML_AUTO) break;
        }
    }
    ml_finalize(ml);
    ml_bench_free(&b);
    return rc;
}
