/* The emulated node's boundary and one-sided communication.
 *
 * MPI_COMM_TYPE_SHARED holds the ranks of one emulated node: each rank's
 * shared communicator is exactly the ranks whose processor name has its
 * <x,y,z> (1 in CO mode, 2 in VN mode), and a shared window
 * (MPI_Win_allocate_shared) is loaded and stored only inside it. Then MPI
 * RMA over the torus, every result checked: put/get/accumulate under
 * fences, fetch-and-op and compare-and-swap under passive locks, a dynamic
 * window, a shared window inside the node nested in a window across nodes
 * (PGAS runtimes' split of intra- and inter-node traffic), and random-access
 * atomic updates (MPI_Accumulate with MPI_BXOR on random targets, the
 * table checked against a replay).   rma PER_NODE   (1 CO, 2 VN) */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

/* <x,y,z> of a rank's node, from its processor name "<x,y,z,t> in ..." */
static void node_of(const char *name, int xyz[3])
{
    int t;
    if (sscanf(name, "<%d,%d,%d,%d>", &xyz[0], &xyz[1], &xyz[2], &t) != 4)
        xyz[0] = xyz[1] = xyz[2] = -1;
}

static void shared_comm(int per_node, MPI_Comm *shm)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, *all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    int len, me[3], xyz[3], want = 0;
    MPI_Get_processor_name(name, &len);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    node_of(name, me);
    int *mates = calloc((size_t)size, sizeof *mates);
    for (int i = 0; i < size; i++) {
        node_of(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, xyz);
        if (!memcmp(xyz, me, sizeof xyz)) mates[want++] = i;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, shm);
    int n, same = 1;
    MPI_Comm_size(*shm, &n);
    MPI_Group wg, sg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(*shm, &sg);
    for (int i = 0; i < n && same && n == want; i++) {
        int w;
        MPI_Group_translate_ranks(sg, 1, &i, wg, &w);
        same = w == mates[i];
    }
    CHECK(n == want && n == per_node && same,
          "MPI_COMM_TYPE_SHARED: %d rank(s), the processors of node <%d,%d,%d> (want %d)", n,
          me[0], me[1], me[2], per_node);
    MPI_Group_free(&wg);
    MPI_Group_free(&sg);
    free(mates);
    free(all);
}

/* A shared window in the node, nested in a window across the nodes: the
 * node's ranks exchange by load and store, node roots by MPI_Put. */
static void shared_window(MPI_Comm shm)
{
    int lr, ln;
    MPI_Comm_rank(shm, &lr);
    MPI_Comm_size(shm, &ln);
    int64_t *mine;
    MPI_Win sw;
    MPI_Win_allocate_shared(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, shm, &mine, &sw);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, sw);
    *mine = 1000 + rank;
    MPI_Win_sync(sw);
    MPI_Barrier(shm);
    MPI_Win_sync(sw);
    int good = 1;
    for (int i = 0; i < ln; i++) {
        MPI_Aint sz;
        int du;
        int64_t *p;
        MPI_Win_shared_query(sw, i, &sz, &du, &p);
        int w;
        MPI_Group wg, sg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Comm_group(shm, &sg);
        MPI_Group_translate_ranks(sg, 1, &i, wg, &w);
        MPI_Group_free(&wg);
        MPI_Group_free(&sg);
        good &= sz == sizeof(int64_t) && *p == 1000 + w;
    }
    MPI_Win_unlock_all(sw);
    CHECK(good, "shared window: loads see the %d rank(s) of this node", ln);
    MPI_Win_free(&sw);

    /* node roots put to the next node's root through an ordinary window */
    MPI_Comm roots;
    MPI_Comm_split(MPI_COMM_WORLD, lr == 0 ? 0 : MPI_UNDEFINED, rank, &roots);
    if (roots != MPI_COMM_NULL) {
        int rr, rn;
        MPI_Comm_rank(roots, &rr);
        MPI_Comm_size(roots, &rn);
        int64_t box = -1, v = 7 * rank;
        MPI_Win w;
        MPI_Win_create(&box, sizeof box, sizeof box, MPI_INFO_NULL, roots, &w);
        MPI_Win_fence(0, w);
        MPI_Put(&v, 1, MPI_INT64_T, (rr + 1) % rn, 0, 1, MPI_INT64_T, w);
        MPI_Win_fence(0, w);
        int from;
        MPI_Group wg, gg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Comm_group(roots, &gg);
        int prev = (rr + rn - 1) % rn;
        MPI_Group_translate_ranks(gg, 1, &prev, wg, &from);
        MPI_Group_free(&wg);
        MPI_Group_free(&gg);
        CHECK(box == 7 * from, "node roots: MPI_Put across the torus from rank %d (got %lld)",
              from, (long long)box);
        MPI_Win_free(&w);
        MPI_Comm_free(&roots);
    }
}

static void fence_ops(void)
{
    int64_t buf[3] = {-1, -1, 0}, got = -1, one = 1, v = 100 + rank;
    MPI_Win w;
    MPI_Win_create(buf, sizeof buf, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_fence(0, w);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Put(&v, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, w);
    MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 2, 1, MPI_INT64_T, MPI_SUM, w);
    MPI_Win_fence(0, w);
    buf[1] = 200 + rank;
    MPI_Win_fence(0, w);
    MPI_Get(&got, 1, MPI_INT64_T, prev, 1, 1, MPI_INT64_T, w);
    MPI_Win_fence(0, w);
    CHECK(buf[0] == 100 + prev && got == 200 + prev && (rank != 0 || buf[2] == size),
          "fence: MPI_Put from %d, MPI_Get from %d, MPI_Accumulate count %lld at rank 0", prev,
          prev, (long long)(rank == 0 ? buf[2] : size));
    MPI_Win_free(&w);
}

static void passive_atomics(void)
{
    enum { K = 8, ROUNDS = 2 };
    int64_t *ctr, one = 1, old, prev_seen = -1, mono = 1;
    int64_t lock[1];
    MPI_Win w, lw;
    MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &ctr, &w);
    MPI_Win_create(lock, sizeof lock, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &lw);
    *ctr = 0;
    lock[0] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    /* fetch-and-op: each rank takes K tickets from rank size-1 */
    int t = size - 1;
    for (int i = 0; i < K; i++) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w);
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, 0, MPI_SUM, w);
        MPI_Win_unlock(t, w);
        mono &= old > prev_seen;
        prev_seen = old;
    }
    /* compare-and-swap: a spin lock at rank 0 guarding a read-modify-write */
    int64_t zero = 0, me = rank + 1, res;
    for (int i = 0; i < ROUNDS; i++) {
        do {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, lw);
            MPI_Compare_and_swap(&me, &zero, &res, MPI_INT64_T, 0, 0, lw);
            MPI_Win_unlock(0, lw);
        } while (res != 0);
        int64_t c;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w);
        MPI_Get(&c, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w);
        MPI_Win_flush(t, w);
        c += 1000;
        MPI_Put(&c, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w);
        MPI_Win_unlock(t, w);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, lw);
        MPI_Compare_and_swap(&zero, &me, &res, MPI_INT64_T, 0, 0, lw);
        MPI_Win_unlock(0, lw);
        mono &= res == me;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t final = -1;
    if (rank == t) final = *ctr;
    MPI_Bcast(&final, 1, MPI_INT64_T, t, MPI_COMM_WORLD);
    CHECK(mono && final == (int64_t)size * (K + ROUNDS * 1000),
          "passive target: %d MPI_Fetch_and_op tickets each (increasing), %d MPI_Compare_and_swap "
          "lock rounds each: counter %lld (want %lld)", K, ROUNDS, (long long)final,
          (long long)size * (K + ROUNDS * 1000));
    MPI_Win_free(&lw);
    MPI_Win_free(&w);
}

static void dynamic_window(void)
{
    MPI_Win w;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    int64_t *area = calloc(4, sizeof *area);
    MPI_Win_attach(w, area, 4 * sizeof *area);
    MPI_Aint mine, *addr = calloc((size_t)size, sizeof *addr);
    MPI_Get_address(area, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int64_t v[2] = {rank * 10 + 1, rank * 10 + 2};
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w);
    MPI_Put(v, 2, MPI_INT64_T, next, MPI_Aint_add(addr[next], sizeof(int64_t)), 2, MPI_INT64_T, w);
    MPI_Win_unlock(next, w);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(area[0] == 0 && area[1] == prev * 10 + 1 && area[2] == prev * 10 + 2 && area[3] == 0,
          "dynamic window: MPI_Put from rank %d into an attached buffer at its address", prev);
    MPI_Win_detach(w, area);
    MPI_Win_free(&w);
    free(addr);
    free(area);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random access (HPCC's RandomAccess, small): XOR updates to random slots
 * of a table spread over all ranks, as MPI_Accumulate(MPI_BXOR). */
static void random_access(void)
{
    enum { SLOTS = 64, UPDATES = 128, BATCH = 32 };
    uint64_t *t, vals[BATCH]; /* an origin buffer stays untouched until the flush */
    MPI_Win w;
    MPI_Win_allocate(SLOTS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &t, &w);
    memset(t, 0, SLOTS * sizeof(uint64_t));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w);
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1);
    for (int i = 0; i < UPDATES; i++) {
        uint64_t r = next_rand(&s), *v = &vals[i % BATCH];
        *v = r * 0x2545f4914f6cdd1dull;
        int target = (int)(r % (uint64_t)size);
        MPI_Aint slot = (MPI_Aint)((r >> 20) % SLOTS);
        MPI_Accumulate(v, 1, MPI_UINT64_T, target, slot, 1, MPI_UINT64_T, MPI_BXOR, w);
        if (i % BATCH == BATCH - 1) MPI_Win_flush_all(w);
    }
    MPI_Win_unlock_all(w);
    MPI_Barrier(MPI_COMM_WORLD);
    /* replay every rank's updates for this rank's part of the table */
    int good = 1;
    uint64_t want[SLOTS] = {0};
    for (int src = 0; src < size; src++) {
        uint64_t q = 0x9e3779b97f4a7c15ull ^ (uint64_t)(src + 1);
        for (int i = 0; i < UPDATES; i++) {
            uint64_t r = next_rand(&q), v = r * 0x2545f4914f6cdd1dull;
            if ((int)(r % (uint64_t)size) == rank) want[(r >> 20) % SLOTS] ^= v;
        }
    }
    for (int i = 0; i < SLOTS; i++) good &= t[i] == want[i];
    CHECK(good, "random access: %d MPI_Accumulate(MPI_BXOR) updates per rank to random slots, "
                "this rank's %d slots match the replay", UPDATES, SLOTS);
    MPI_Win_free(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int per_node = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Comm shm;
    shared_comm(per_node, &shm);
    shared_window(shm);
    MPI_Comm_free(&shm);
    fence_ops();
    passive_atomics();
    dynamic_window();
    random_access();
    return mc_finish();
}
