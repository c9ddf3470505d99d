/* Derived datatypes in the torus collectives, in each BGLMPI_DATATYPE mode
 * (pack, zerocopy, memo; read per call): MPI_Alltoall, MPI_Alltoallv,
 * MPI_Alltoallw and MPI_Bcast (BGLMPI_BCAST=torus3 and torus1: the deposit
 * broadcast) with vector, indexed, struct, subarray and resized types, the
 * sender and the receiver using different layouts of one type signature.
 * Every byte is checked, gaps included. Then the cost: an alltoall and a
 * broadcast of a fragmented type must take fewer simulated cycles with
 * zerocopy and memo than with pack (the staging through a packed buffer
 * must not come back). Any number of ranks, CO or VN. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static const char *const modes[] = {"pack", "zerocopy", "memo"};
enum { NFAM = 5 };
static const char *const fams[NFAM] = {"vector", "indexed", "struct", "subarray", "resized"};

/* One family: a send element type and a receive element type with the
 * same signature and different layouts. */
typedef struct { MPI_Datatype st, rt; } pair;

struct rec { char c; double d; short s; };

static pair make_pair(int f, int k)
{
    pair p;
    switch (f) {
    case 0: /* 2k ints: 2 of every 3, or 1 of every 2 */
        MPI_Type_vector(k, 2, 3, MPI_INT, &p.st);
        MPI_Type_vector(2 * k, 1, 2, MPI_INT, &p.rt);
        break;
    case 1: { /* irregular int blocks, received one int every 3 */
        int *bl = malloc(sizeof(int) * (size_t)k), *disp = malloc(sizeof(int) * (size_t)k), s = 0;
        for (int i = 0; i < k; i++) bl[i] = 1 + i % 3, disp[i] = i * 5 + (i % 2), s += bl[i];
        MPI_Type_indexed(k, bl, disp, MPI_INT, &p.st);
        MPI_Type_vector(s, 1, 3, MPI_INT, &p.rt);
        free(bl), free(disp);
        break;
    }
    case 2: { /* char, double, short: C's layout, or the fields in other places */
        int bl[3] = {1, 1, 1};
        MPI_Aint d1[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, s)};
        MPI_Aint d2[3] = {20, 2, 12};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT}, a, b;
        MPI_Type_create_struct(3, bl, d1, ty, &a);
        MPI_Type_create_resized(a, 0, sizeof(struct rec), &p.st);
        MPI_Type_create_struct(3, bl, d2, ty, &b);
        MPI_Type_create_resized(b, 0, 24, &p.rt);
        MPI_Type_free(&a), MPI_Type_free(&b);
        break;
    }
    case 3: { /* a 2-D subarray of floats, received as a vector of rows */
        int rows = k / 4 + 1, sizes[2] = {rows + 1, 16}, sub[2] = {rows, 8}, start[2] = {1, 4};
        MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_FLOAT, &p.st);
        MPI_Type_vector(rows, 8, 10, MPI_FLOAT, &p.rt);
        break;
    }
    default: /* one int every 12 bytes, received one every 8 from byte 4 */
        MPI_Type_create_resized(MPI_INT, 0, 12, &p.st);
        {
            MPI_Datatype t;
            MPI_Type_create_hindexed_block(1, 1, (MPI_Aint[]){4}, MPI_INT, &t);
            MPI_Type_create_resized(t, 0, 8, &p.rt);
            MPI_Type_free(&t);
        }
    }
    MPI_Type_commit(&p.st);
    MPI_Type_commit(&p.rt);
    return p;
}

static unsigned char pat(int src, int dst, size_t i, int round)
{
    return (unsigned char)(src * 31 + dst * 17 + i * 7 + round * 13 + 1);
}

/* count x t at base, packed (what the type selects, in order) into out
 * (at least size bytes); the byte count. */
static int pack_of(const void *base, int count, MPI_Datatype t, unsigned char *out, int size)
{
    int pos = 0;
    if (count) MPI_Pack(base, count, t, out, size, &pos, MPI_COMM_SELF);
    return pos;
}

/* Marks with 1 the bytes count x t selects at mark (which is zeroed first
 * over span bytes). */
static void mark_of(unsigned char *mark, size_t span, int count, MPI_Datatype t)
{
    int sz;
    memset(mark, 0, span);
    if (!count) return;
    MPI_Pack_size(count, t, MPI_COMM_SELF, &sz);
    unsigned char *ones = malloc((size_t)sz + 1);
    memset(ones, 1, (size_t)sz + 1);
    int pos = 0;
    MPI_Unpack(ones, sz, &pos, mark, count, t, MPI_COMM_SELF);
    free(ones);
}

static MPI_Aint extent(MPI_Datatype t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

/* The sender s's send area as s fills it: byte i of its block to d. */
static void fill(unsigned char *area, size_t span, int s, int d, int round)
{
    for (size_t i = 0; i < span; i++) area[i] = pat(s, d, i, round);
}

/* Block from s to me: count x st of s's area for me against count' x rt at
 * r (span bytes, 0xee where rt selects nothing). Returns wrong bytes. */
static long check_block(int s, int me, int round, MPI_Datatype st, int scount, size_t sspan,
                        const unsigned char *r, MPI_Datatype rt, int rcount, size_t rspan, size_t *gaps)
{
    int ssz, rsz;
    MPI_Pack_size(scount, st, MPI_COMM_SELF, &ssz);
    MPI_Pack_size(rcount, rt, MPI_COMM_SELF, &rsz);
    unsigned char *src = malloc(sspan + 1), *a = malloc((size_t)ssz + 1), *b = malloc((size_t)rsz + 1),
                  *mark = malloc(rspan + 1);
    fill(src, sspan, s, me, round);
    int la = pack_of(src, scount, st, a, ssz), lb = pack_of(r, rcount, rt, b, rsz);
    long bad = la != lb ? 1 + labs((long)la - lb) : 0;
    for (int i = 0; i < la && i < lb; i++) bad += a[i] != b[i];
    mark_of(mark, rspan, rcount, rt);
    for (size_t i = 0; i < rspan; i++)
        if (!mark[i]) (*gaps)++, bad += r[i] != 0xee;
    free(src), free(a), free(b), free(mark);
    return bad;
}

static int rank, np;

/* Data buffers 64-byte aligned: the memo cache's key includes the base's
 * alignment, so results must not depend on where malloc puts them (the
 * heap differs with and without the engine's data path, BGLEMU_PROXY). */
static unsigned char *abuf(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) abort();
    return p;
}

/* MPI_Alltoall of cnt x st each way, received as cnt x rt. */
static void t_alltoall(const char *mode, int f, pair p, int cnt, int round)
{
    MPI_Aint se = extent(p.st) * cnt, re = extent(p.rt) * cnt;
    unsigned char *sb = abuf((size_t)(se * np) + 1), *rb = abuf((size_t)(re * np) + 1);
    for (int d = 0; d < np; d++) fill(sb + d * se, (size_t)se, rank, d, round);
    memset(rb, 0xee, (size_t)(re * np));
    int rc = MPI_Alltoall(sb, cnt, p.st, rb, cnt, p.rt, MPI_COMM_WORLD);
    long bad = 0;
    size_t gaps = 0;
    for (int s = 0; s < np; s++)
        bad += check_block(s, rank, round, p.st, cnt, (size_t)se, rb + s * re, p.rt, cnt, (size_t)re, &gaps);
    CHECK(rc == MPI_SUCCESS && !bad, "%s: alltoall %s x%d: %d blocks in place, %zu gap bytes untouched (%ld wrong)",
          mode, fams[f], cnt, np, gaps, bad);
    free(sb), free(rb);
}

/* MPI_Alltoallv: 1 + (me + peer) % 3 elements per pair (the same formula
 * both ways), each block one element apart. */
static void t_alltoallv(const char *mode, int f, pair p, int round)
{
    MPI_Aint se = extent(p.st), re = extent(p.rt);
    int *sc = malloc(sizeof(int) * (size_t)np * 4), *sd = sc + np, *rc = sd + np, *rd = rc + np, so = 0, ro = 0;
    for (int j = 0; j < np; j++) {
        sc[j] = rc[j] = 1 + (rank + j) % 3;
        sd[j] = so, so += sc[j] + 1;
        rd[j] = ro, ro += rc[j] + 1;
    }
    unsigned char *sb = abuf((size_t)(se * so) + 1), *rb = abuf((size_t)(re * ro) + 1);
    for (int d = 0; d < np; d++) fill(sb + sd[d] * se, (size_t)(sc[d] * se), rank, d, round);
    memset(rb, 0xee, (size_t)(re * ro));
    int r = MPI_Alltoallv(sb, sc, sd, p.st, rb, rc, rd, p.rt, MPI_COMM_WORLD);
    long bad = 0;
    size_t gaps = 0;
    for (int s = 0; s < np; s++) /* sender s's block for me: rc[s] elements */
        bad += check_block(s, rank, round, p.st, rc[s], (size_t)(rc[s] * se), rb + rd[s] * re, p.rt, rc[s],
                           (size_t)((rc[s] + 1) * re), &gaps);
    CHECK(r == MPI_SUCCESS && !bad, "%s: alltoallv %s, 1-3 elements per pair: %zu gap bytes untouched (%ld wrong)",
          mode, fams[f], gaps, bad);
    free(sc), free(sb), free(rb);
}

/* MPI_Alltoallw: the pair (me, peer) uses family (me + peer + base) % 5,
 * 2 elements, byte displacements. */
static void t_alltoallw(const char *mode, pair *ps, int base, int round)
{
    int *sc = malloc(sizeof(int) * (size_t)np * 4), *sd = sc + np, *rc = sd + np, *rd = rc + np, so = 0, ro = 0;
    MPI_Datatype *st = malloc(sizeof *st * (size_t)np * 2), *rt = st + np;
    MPI_Aint *span = malloc(sizeof *span * (size_t)np * 2), *rspan = span + np;
    for (int j = 0; j < np; j++) {
        pair p = ps[(rank + j + base) % NFAM];
        st[j] = p.st, rt[j] = p.rt, sc[j] = rc[j] = 2;
        span[j] = extent(p.st) * 2, rspan[j] = extent(p.rt) * 2;
        sd[j] = so, so += (int)span[j] + 5;
        rd[j] = ro, ro += (int)rspan[j] + 3;
    }
    unsigned char *sb = abuf((size_t)so + 1), *rb = abuf((size_t)ro + 1);
    for (int d = 0; d < np; d++) fill(sb + sd[d], (size_t)span[d], rank, d, round);
    memset(rb, 0xee, (size_t)ro);
    int r = MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD);
    long bad = 0;
    size_t gaps = 0;
    for (int s = 0; s < np; s++)
        bad += check_block(s, rank, round, st[s], 2, (size_t)span[s], rb + rd[s], rt[s], 2,
                           (size_t)rspan[s] + 3, &gaps);
    CHECK(r == MPI_SUCCESS && !bad, "%s: alltoallw, a type family per pair: %zu gap bytes untouched (%ld wrong)",
          mode, gaps, bad);
    free(sc), free(st), free(span), free(sb), free(rb);
}

/* MPI_Bcast from root: cnt x st at the root, cnt x rt everywhere else. */
static void t_bcast(const char *mode, const char *algo, int f, pair p, int cnt, int root, int round)
{
    setenv("BGLMPI_BCAST", algo, 1);
    MPI_Datatype t = rank == root ? p.st : p.rt;
    MPI_Aint span = extent(t) * cnt;
    unsigned char *b = abuf((size_t)span + 1);
    if (rank == root) fill(b, (size_t)span, root, 0, round);
    else memset(b, 0xee, (size_t)span);
    int r = MPI_Bcast(b, cnt, t, root, MPI_COMM_WORLD);
    long bad = 0;
    size_t gaps = 0;
    if (rank != root) bad = check_block(root, 0, round, p.st, cnt, (size_t)(extent(p.st) * cnt), b, p.rt, cnt, (size_t)span, &gaps);
    CHECK(r == MPI_SUCCESS && !bad, "%s: bcast %s %s x%d from %d: %zu gap bytes untouched (%ld wrong)", mode, algo,
          fams[f], cnt, root, gaps, bad);
    free(b);
    unsetenv("BGLMPI_BCAST");
}

/* Simulated cycles of fn (the slowest rank's), after a barrier. */
static double timed(void (*fn)(void *), void *arg)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    fn(arg);
    double t = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mc_cycles(mx);
}

typedef struct { MPI_Datatype t; int cnt; unsigned char *s, *r; } costarg;
static void run_a2a(void *a)
{
    costarg *c = a;
    MPI_Alltoall(c->s, c->cnt, c->t, c->r, c->cnt, c->t, MPI_COMM_WORLD);
}
static void run_bcast(void *a)
{
    costarg *c = a;
    setenv("BGLMPI_BCAST", "torus3", 1);
    MPI_Bcast(c->s, c->cnt, c->t, 0, MPI_COMM_WORLD);
    unsetenv("BGLMPI_BCAST");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int round = 0;
    for (int m = 0; m < 3; m++) {
        setenv("BGLMPI_DATATYPE", modes[m], 1);
        const int ks[] = {3, 200}; /* one packet per pair .. many */
        for (int ki = 0; ki < 2; ki++) {
            pair ps[NFAM];
            for (int f = 0; f < NFAM; f++) ps[f] = make_pair(f, ks[ki]);
            for (int f = 0; f < NFAM; f++) {
                t_alltoall(modes[m], f, ps[f], 2, ++round);
                t_alltoallv(modes[m], f, ps[f], ++round);
                t_bcast(modes[m], "torus3", f, ps[f], 2, 0, ++round);
                t_bcast(modes[m], "torus1", f, ps[f], 3, np - 1, ++round);
            }
            t_alltoallw(modes[m], ps, ki, ++round);
            for (int f = 0; f < NFAM; f++) MPI_Type_free(&ps[f].st), MPI_Type_free(&ps[f].rt);
        }
    }
    /* the cost: a fragmented type (128-byte blocks, stride 256) */
    MPI_Datatype frag;
    MPI_Type_vector(64, 32, 64, MPI_INT, &frag);
    MPI_Type_commit(&frag);
    MPI_Aint fe = extent(frag);
    costarg ca = {frag, 1, abuf((size_t)(fe * np)), abuf((size_t)(fe * np))};
    memset(ca.s, 0, (size_t)(fe * np)), memset(ca.r, 0, (size_t)(fe * np));
    double a2a[3], bc[3];
    for (int m = 0; m < 3; m++) {
        setenv("BGLMPI_DATATYPE", modes[m], 1);
        run_a2a(&ca), run_bcast(&ca); /* warm: the memo cache filled */
        a2a[m] = timed(run_a2a, &ca);
        bc[m] = timed(run_bcast, &ca);
    }
    if (rank == 0) {
        printf("ddt_coll: %d ranks, alltoall of a 64 x 128 B vector per pair: pack %.0f, zerocopy %.0f, memo %.0f cycles\n",
               np, a2a[0], a2a[1], a2a[2]);
        printf("ddt_coll: bcast torus3 of the same 8 KiB: pack %.0f, zerocopy %.0f, memo %.0f cycles\n", bc[0],
               bc[1], bc[2]);
        fflush(stdout);
    }
    CHECK(a2a[1] < a2a[0] && a2a[2] < a2a[0],
          "alltoall of a fragmented type: zerocopy %.0f and memo %.0f cycles, fewer than pack's %.0f", a2a[1],
          a2a[2], a2a[0]);
    CHECK(bc[1] < bc[0] && bc[2] < bc[0],
          "bcast of a fragmented type: zerocopy %.0f and memo %.0f cycles, fewer than pack's %.0f", bc[1], bc[2],
          bc[0]);
    MPI_Type_free(&frag);
    free(ca.s), free(ca.r);
    unsetenv("BGLMPI_DATATYPE");
    return mc_finish();
}
