/* MPI_Allreduce, MPI_Reduce, MPI_Bcast and MPI_Barrier on the collective
 * network and the global interrupt (BGLMPI_ALLREDUCE=tree,
 * BGLMPI_BCAST=tree, BGLMPI_BARRIER=gi) against MPICH's own algorithms
 * (the same calls with =mpich, setenv between calls, the same on every
 * rank): every (type, op) pair the hardware takes (1- to 8-byte integers,
 * MPI_BYTE, MPI_C_BOOL, float, double, the MAXLOC/MINLOC pairs), counts 0, 1, a packet's
 * worth +-1 and 1 MiB, MPI_IN_PLACE; integers exact, floating-point sums
 * within the documented bound and the same bits on every rank; what the
 * ALU can't do (MPI_PROD, a derived type, a sub-communicator) falls back
 * and is still right; nobody leaves the barrier before all have entered
 * (simulated clocks). Usage: treecoll [--big] (int and double sums of 1 MiB
 * of elements' worth of ints instead of every pair). */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static int me, np;

/* No libm (the test programs link without it): x * 2^e, exactly. */
static double scale2(double x, int e)
{
    for (; e > 0; e--) x *= 2;
    for (; e < 0; e++) x *= 0.5;
    return x;
}
static double absd(double x) { return x < 0 ? -x : x; }
static double maxd(double a, double b) { return a > b ? a : b; }

static void use(const char *var, const char *val)
{
    setenv(var, val, 1);
}

typedef struct tcase {
    MPI_Datatype type;
    const char *name;
    int size, is_float;
} tcase;

static void fill(void *buf, const tcase *t, long n, int r)
{
    for (long i = 0; i < n; i++) {
        long v = ((r * 37 + 11) * (i * 13 + 5)) % 1001 - 500;
        if (t->is_float) {
            double d = scale2((double)v + 0.1 * r, (int)(i % 40) - 20);
            if (t->size == 4) ((float *)buf)[i] = (float)d;
            else ((double *)buf)[i] = d;
        } else if (t->size == 4) {
            ((int32_t *)buf)[i] = (int32_t)v;
        } else {
            ((int64_t *)buf)[i] = (int64_t)v * 1000000007LL;
        }
    }
}

/* The tree's result against MPICH's: equal for integers and MAX/MIN;
 * within 2 ulp of the larger magnitude for float sums (MPICH's own sum is
 * not exactly rounded either). */
static int same(const void *a, const void *b, const tcase *t, MPI_Op op, long n, long *where)
{
    for (long i = 0; i < n; i++) {
        *where = i;
        if (t->is_float && op == MPI_SUM) {
            double x = t->size == 4 ? ((const float *)a)[i] : ((const double *)a)[i];
            double y = t->size == 4 ? ((const float *)b)[i] : ((const double *)b)[i];
            double eps = t->size == 4 ? FLT_EPSILON : DBL_EPSILON;
            double big = 0;
            for (int r = 0; r < np; r++) { /* the largest term, for the cancellation bound */
                double v = scale2((double)(((r * 37 + 11) * (i * 13 + 5)) % 1001 - 500) + 0.1 * r,
                                 (int)(i % 40) - 20);
                if (absd(v) > big) big = absd(v);
            }
            if (absd(x - y) > 2 * eps * maxd(absd(x), absd(y)) + np * eps * big) return 0;
        } else if (memcmp((const char *)a + i * t->size, (const char *)b + i * t->size,
                          (size_t)t->size)) {
            return 0;
        }
    }
    return 1;
}

/* A user-defined operation on a derived type: MPICH's business. */
static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < 2 * *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int big = argc > 1 && !strcmp(argv[1], "--big");
    const tcase types[] = {{MPI_INT, "int", 4, 0},          {MPI_UNSIGNED, "unsigned", 4, 0},
                           {MPI_LONG, "long", 8, 0},        {MPI_UNSIGNED_LONG, "unsigned long", 8, 0},
                           {MPI_FLOAT, "float", 4, 1},      {MPI_DOUBLE, "double", 8, 1}};
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR};
    const char *opn[] = {"sum", "max", "min", "band", "bor", "bxor"};
    long counts[] = {0, 1, 15, 16, 17, 63, 64, 65, 1000, 4096};
    int ncounts = sizeof counts / sizeof counts[0];
    if (big) { /* 1 MiB of ints and 2 MiB of doubles, sums only: MPICH's side is slow */
        counts[0] = (1L << 20) / 4;
        ncounts = 1;
    }
    long maxn = counts[ncounts - 1];
    size_t cap = (size_t)maxn * 8 > 100000 ? (size_t)maxn * 8 : 100000; /* the largest bcast too */
    char *s = malloc(cap), *a = malloc(cap), *b = malloc(cap);
    for (int t = 0; t < 6; t++) {
        int bad = 0, checked = 0;
        for (int o = 0; o < 6; o++) {
            if (types[t].is_float && o >= 3) continue;
            if (big && (o != 0 || (t != 0 && t != 5))) continue;
            for (int k = 0; k < ncounts; k++) {
                long n = counts[k], where = -1;
                fill(s, &types[t], n, me);
                use("BGLMPI_ALLREDUCE", "tree");
                if (k % 2) { /* in place */
                    memcpy(a, s, (size_t)(n * types[t].size));
                    MPI_Allreduce(MPI_IN_PLACE, a, (int)n, types[t].type, ops[o], MPI_COMM_WORLD);
                } else {
                    MPI_Allreduce(s, a, (int)n, types[t].type, ops[o], MPI_COMM_WORLD);
                }
                use("BGLMPI_ALLREDUCE", "mpich");
                MPI_Allreduce(s, b, (int)n, types[t].type, ops[o], MPI_COMM_WORLD);
                if (!same(a, b, &types[t], ops[o], n, &where)) {
                    if (!bad) CHECK(0, "allreduce %s %s count %ld: element %ld differs from MPICH's",
                                    types[t].name, opn[o], n, where);
                    bad = 1;
                }
                checked++;
                /* floating-point sums: the same bits on every rank */
                if (types[t].is_float && o == 0 && n) {
                    uint64_t h = 1469598103934665603ull, hh[2];
                    for (long i = 0; i < n * types[t].size; i++) h = (h ^ (uint8_t)a[i]) * 1099511628211ull;
                    hh[0] = h, hh[1] = ~h;
                    MPI_Allreduce(MPI_IN_PLACE, hh, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
                    if (hh[0] != ~hh[1]) {
                        if (!bad) CHECK(0, "allreduce %s sum count %ld: ranks hold different bits",
                                        types[t].name, n);
                        bad = 1;
                    }
                }
            }
        }
        if (checked)
            CHECK(!bad, "MPI_Allreduce on the tree, %s: %d (op, count) pairs as MPICH's (counts %s%ld, "
              "half in place%s)", types[t].name, checked, big ? "" : "0..", maxn,
              types[t].is_float ? "; sums within the bound, identical on every rank" : "");
    }

    /* 1- and 2-byte integers, MPI_BYTE (bitwise), MPI_C_BOOL and wider
     * integers (logical), the MAXLOC/MINLOC pairs: widened or encoded into
     * one ALU operand each, against MPICH's results (the fields; a pair's
     * padding is not compared) */
    if (!big) {
        typedef struct xcase {
            MPI_Datatype type;
            const char *name;
            int size;           /* bytes compared per element: the fields */
            int ext;            /* extent */
            int cls;            /* 0 integer, 1 byte, 2 bool, 3 pair */
            int voff;           /* pairs: value type 0 int, 1 short, 2 float, 3 double, 4 long */
        } xcase;
        const xcase xs[] = {{MPI_SIGNED_CHAR, "signed char", 1, 1, 0, 0},
                            {MPI_UNSIGNED_CHAR, "unsigned char", 1, 1, 0, 0},
                            {MPI_SHORT, "short", 2, 2, 0, 0},
                            {MPI_UNSIGNED_SHORT, "unsigned short", 2, 2, 0, 0},
                            {MPI_INT8_T, "int8_t", 1, 1, 0, 0},
                            {MPI_UINT16_T, "uint16_t", 2, 2, 0, 0},
                            {MPI_INT, "int", 4, 4, 0, 0},
                            {MPI_UNSIGNED_LONG, "unsigned long", 8, 8, 0, 0},
                            {MPI_BYTE, "byte", 1, 1, 1, 0},
                            {MPI_C_BOOL, "C bool", 1, 1, 2, 0},
                            {MPI_2INT, "2int", 8, 8, 3, 0},
                            {MPI_SHORT_INT, "short_int", 0, 8, 3, 1},
                            {MPI_FLOAT_INT, "float_int", 8, 8, 3, 2},
                            {MPI_DOUBLE_INT, "double_int", 0, 16, 3, 3},
                            {MPI_LONG_INT, "long_int", 0, 16, 3, 4}};
        const MPI_Op xops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR,
                               MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MAXLOC, MPI_MINLOC};
        const long xcounts[] = {0, 1, 15, 16, 17, 33, 63, 64, 65, 1000};
        for (int t = 0; t < (int)(sizeof xs / sizeof xs[0]); t++) {
            const xcase *x = &xs[t];
            int bad = 0, checked = 0;
            for (int o = 0; o < 11; o++) {
                int ok = x->cls == 0 ? o < 9 : x->cls == 1 ? o >= 3 && o < 6
                       : x->cls == 2 ? o >= 6 && o < 9 : o >= 9;
                if (!ok || (x->cls == 0 && x->size >= 4 && o < 6)) continue; /* those: above */
                for (int k = 0; k < 10; k++) {
                    long n = xcounts[k];
                    memset(s, 0, (size_t)(n * x->ext));
                    for (long i = 0; i < n; i++) {
                        char *e = s + i * x->ext;
                        long v = ((me * 37 + 11) * (i * 13 + 5)) % 1001 - 500;
                        if (x->cls == 2) {
                            e[0] = (i + me) % 3 != 0;
                        } else if (x->cls < 2) {
                            long long w = i % 3 == 2 ? 0 : v * 1237LL;
                            memcpy(e, &w, (size_t)x->size); /* little-endian: the low bytes */
                        } else {
                            /* few values, so that ties pick the smallest index */
                            int q = (me * 7 + (int)i) % 5 - 2, idx = 100 - 40 * me + (int)i;
                            int off = x->voff == 3 || x->voff == 4 ? 8 : 4;
                            if (x->voff == 0) { int y = q; memcpy(e, &y, 4); }
                            else if (x->voff == 1) { short y = (short)q; memcpy(e, &y, 2); }
                            else if (x->voff == 2) { float y = (float)q * 0.5f; memcpy(e, &y, 4); }
                            else if (x->voff == 3) { double y = q * 0.25; memcpy(e, &y, 8); }
                            else { long y = q * 1000000007L; memcpy(e, &y, 8); }
                            memcpy(e + off, &idx, 4);
                        }
                    }
                    memset(a, 0, (size_t)(n * x->ext));
                    memset(b, 0, (size_t)(n * x->ext));
                    use("BGLMPI_ALLREDUCE", "tree");
                    if (k % 2) {
                        memcpy(a, s, (size_t)(n * x->ext));
                        MPI_Allreduce(MPI_IN_PLACE, a, (int)n, x->type, xops[o], MPI_COMM_WORLD);
                    } else {
                        MPI_Allreduce(s, a, (int)n, x->type, xops[o], MPI_COMM_WORLD);
                    }
                    use("BGLMPI_ALLREDUCE", "mpich");
                    MPI_Allreduce(s, b, (int)n, x->type, xops[o], MPI_COMM_WORLD);
                    for (long i = 0; i < n && !bad; i++) {
                        const char *p = a + i * x->ext, *q = b + i * x->ext;
                        int vsz = x->voff == 1 ? 2 : x->voff >= 3 ? 8 : 4;
                        int off = x->voff == 3 || x->voff == 4 ? 8 : 4;
                        int diff = x->cls < 3 ? memcmp(p, q, (size_t)x->size)
                                              : memcmp(p, q, (size_t)vsz) || memcmp(p + off, q + off, 4);
                        if (diff) {
                            CHECK(0, "allreduce %s op %d count %ld: element %ld differs from MPICH's",
                                  x->name, o, n, i);
                            bad = 1;
                        }
                    }
                    checked++;
                }
            }
            CHECK(!bad, "MPI_Allreduce on the tree, %s: %d (op, count) pairs (%s) as MPICH's (counts "
                  "0..1000, half in place)", x->name, checked,
                  x->cls == 0 ? (x->size < 4 ? "sum max min band bor bxor land lor lxor" : "land lor lxor")
                  : x->cls == 1 ? "band bor bxor" : x->cls == 2 ? "land lor lxor" : "maxloc minloc");
        }
    }

    /* reduce to a root in the middle, in place there */
    {
        int32_t v[100], r1[100], r2[100];
        for (int i = 0; i < 100; i++) v[i] = me * 3 - i;
        int root = np / 2;
        use("BGLMPI_ALLREDUCE", "tree");
        memcpy(r1, v, sizeof v);
        MPI_Reduce(me == root ? MPI_IN_PLACE : v, me == root ? r1 : NULL, 100, MPI_INT, MPI_MAX,
                   root, MPI_COMM_WORLD);
        use("BGLMPI_ALLREDUCE", "mpich");
        MPI_Reduce(v, r2, 100, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD);
        if (me == root) CHECK(!memcmp(r1, r2, sizeof r1), "MPI_Reduce (max, in place at root %d) on the tree as MPICH's", root);
    }

    /* what the ALU can't do falls back and is right */
    {
        use("BGLMPI_ALLREDUCE", "tree");
        double p = 1.0 + me, q;
        MPI_Allreduce(&p, &q, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
        double w = 1;
        for (int r = 1; r <= np; r++) w *= r;
        int ok = q == w;
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        MPI_Op pairsum;
        MPI_Op_create(pair_sum, 1, &pairsum);
        int pv[2] = {me, 1}, pr[2] = {0, 0};
        MPI_Allreduce(pv, pr, 1, pair, pairsum, MPI_COMM_WORLD);
        ok &= pr[0] == np * (np - 1) / 2 && pr[1] == np;
        MPI_Op_free(&pairsum);
        MPI_Type_free(&pair);
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
        int one = 1, cnt = 0;
        MPI_Allreduce(&one, &cnt, 1, MPI_INT, MPI_SUM, half);
        ok &= cnt == (np + 1 - me % 2) / 2;
        MPI_Comm_free(&half);
        use("BGLMPI_ALLREDUCE", "mpich");
        CHECK(ok, "MPI_PROD, a user operation on a derived type and a sub-communicator with "
              "BGLMPI_ALLREDUCE=tree fall back to MPICH: %g = %d!, %d ranks in my half", q, np, cnt);
    }

    /* broadcast on the tree from every root, lengths around a packet */
    {
        static const int lens[] = {0, 1, 255, 256, 257, 100000};
        int bad = 0;
        use("BGLMPI_BCAST", "tree");
        for (int k = 0; k < 6; k++) {
            int root = (k * 5) % np, n = lens[k];
            for (int i = 0; i < n; i++) a[i] = me == root ? (char)(i * 7 + k) : 0;
            MPI_Bcast(a, n, MPI_CHAR, root, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++) bad |= a[i] != (char)(i * 7 + k);
        }
        use("BGLMPI_BCAST", "torus3");
        CHECK(!bad, "MPI_Bcast on the tree: 0, 1, 255, 256, 257 and 100,000 bytes from several roots");
    }

    /* barrier: nobody leaves before everyone has entered (simulated clocks);
     * rank 0 and 1 are late (a few round trips first) */
    {
        use("BGLMPI_BARRIER", "gi");
        MPI_Barrier(MPI_COMM_WORLD);
        if (np > 1 && me < 2)
            for (int i = 0; i < 20; i++) {
                if (me == 0) {
                    MPI_Send(a, 1000, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(a, 1000, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(a, 1000, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(a, 1000, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
                }
            }
        double in = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double out = MPI_Wtime();
        use("BGLMPI_BARRIER", "mpich");
        double lastin;
        MPI_Allreduce(&in, &lastin, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        CHECK(out > lastin, "MPI_Barrier on the global interrupt: in at %.0f, out at %.0f cycles, "
              "after the last in (%.0f)", mc_cycles(in), mc_cycles(out), mc_cycles(lastin));
    }
    free(s);
    free(a);
    free(b);
    return mc_finish();
}
