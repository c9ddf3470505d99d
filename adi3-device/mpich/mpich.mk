# make mpich: Debian's MPICH (apt-get source) with the CH4 netmod "bgl" from
# adi3-device/netmod/bgl, installed into $(PREFIX). The configured build tree
# is cached outside the clone (BGLEMU_CACHE, default /var/cache/bglemu), keyed
# by the MPICH version and a hash of the configure flags (PREFIX included), so
# a netmod change costs an incremental make. See docs/mpich-build.md.
# Part of `make`, `make demo` and `make test` (not of `make check`). It links
# PREFIX/lib/libbglemu.a into libmpi, so it needs `install` first.
# MPICH_JOBS (default 2) and MPICH_NICE (default 19) tune the build.
# Then the MPI benchmark programs (adi3-device/bench: coll_bcast,
# coll_alltoall) are built with the installed mpicc into $(PREFIX)/bin.
.PHONY: mpich mpi-bench mpi-wrap
mpich: install
	adi3-device/mpich/build-mpich.sh "$(PREFIX)"
	@$(MAKE) --no-print-directory mpi-bench mpi-wrap

MPI_BENCH_SRCS := $(wildcard adi3-device/bench/*.c)
MPI_BENCH      := $(MPI_BENCH_SRCS:adi3-device/bench/%.c=$(BUILD)/mpi-bench/%)

$(BUILD)/mpi-bench/%: adi3-device/bench/%.c adi3-device/bench/coll_bench.h $(PREFIX)/lib/libmpi.so
	@mkdir -p $(dir $@)
	$(PREFIX)/bin/mpicc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	  -I$(PREFIX)/include/bglemu $< -o $@

# mpirun --trace preloads this into MPI ranks (MPI calls on the timeline).
# MPICH's mpi.h, but not linked with libmpi: hydra gets the preload too, and
# the MPI functions are found in the rank's libmpi when first called.
TRACE_LIB := $(BUILD)/mpi-bench/libbglemu-trace.so
$(TRACE_LIB): adi3-device/trace/mpi_trace.c packetlayer/pl_trace.h $(PREFIX)/lib/libmpi.so
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -shared \
	  -I. -I$(PREFIX)/include $< -o $@ -ldl

mpi-bench: $(MPI_BENCH) $(TRACE_LIB)
	install -C -m 755 $(MPI_BENCH) $(PREFIX)/bin/
	install -C -m 755 $(TRACE_LIB) $(PREFIX)/lib/

# The preloaded library again, now with the wrappers of every MPI entry
# point (they need the installed mpi.h; see WTIME_LIB in the Makefile).
mpi-wrap: $(WTIME_LIB)
	install -C -m 755 $(WTIME_LIB) $(PREFIX)/lib/
