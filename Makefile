# bglemu: a Blue Gene/L-style torus emulated on one Linux host.
#
#   make          build libraries, tools and MPICH into $(PREFIX) (default ./install)
#   make demo     install packages, build, run a small job and show its report
#   make check    fast unit + integration tests (no MPICH), under 5 minutes
#   make test     everything CI runs: check's tests, then MPI programs and MPICH's tests
#   make test-mpi the MPI tier alone
#   make install  bglemu only (no MPICH)
#   make bench    wall-clock and simulated-time measurements
#   make check-asan / check-tsan   the fast tier under sanitizers
#   make deps     install the Debian packages the build needs
#   make mpich    build MPICH with the ch4:bgl netmod (cached outside the clone)
#
# Sources are found by layout, so adding a file needs no Makefile edit:
#   <layer>/*.c            -> libbglemu (torus-sim, packetlayer, messagelayer, collectives, traffic, pictures)
#   <layer>/bin/NAME.c     -> $(PREFIX)/bin/NAME
#   adi3-device/mpirun/*.c -> $(PREFIX)/bin/mpirun
#   tests/unit/test_NAME.c -> a Check suite NAME_suite() in build/unit_tests
#   tests/integration/*.sh -> run by tests/run.sh after the unit tests

PREFIX   ?= $(CURDIR)/install
BUILD    ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -fPIC $(SAN) -I.
LDFLAGS  += -pthread $(SAN)
LDLIBS   += -lm -lrt

LAYERS   := torus-sim packetlayer messagelayer collectives traffic pictures
LIB_SRCS := $(foreach d,$(LAYERS),$(wildcard $(d)/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libbglemu.a
# every header, but not the generated ones under build*/ (BUILD_ID_H)
HDRS     := $(filter-out build%,$(wildcard */*.h */*.def */*/*.h))

BIN_SRCS := $(wildcard $(addsuffix /bin/*.c,$(LAYERS) adi3-device tests))
BINS     := $(foreach s,$(BIN_SRCS),$(BUILD)/bin/$(basename $(notdir $(s))))
MPIRUN_SRCS := $(wildcard adi3-device/mpirun/*.c)
MPIRUN   := $(if $(MPIRUN_SRCS),$(BUILD)/bin/mpirun)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/%.o)
UNIT_BIN  := $(BUILD)/unit_tests
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt)

DEBS := build-essential pkg-config check libsubunit-dev libnuma-dev python3 time \
        libotf2-trace-dev otf2-tools libscotch-dev

# mpirun --trace FILE.otf2 through Debian's libotf2 (when it is installed)
OTF2_LIBS := $(shell pkg-config --libs otf2 2>/dev/null)
ifneq ($(OTF2_LIBS),)
$(BUILD)/adi3-device/mpirun/%.o: CFLAGS += -DBGLEMU_OTF2 $(shell pkg-config --cflags otf2)
$(BUILD)/bin/mpirun: LDLIBS += $(OTF2_LIBS)
endif

.PHONY: all install deps demo check test test-mpi bench check-asan check-tsan clean mpich help
all: install mpich

# bglemu-map (docs/mapping.md): the mapping code in mapfiles/ (prefix map_)
# on Debian's Scotch, linked into the tool and the unit tests only.
MAP_SRCS := $(wildcard mapfiles/*.c)
MAP_OBJS := $(MAP_SRCS:%.c=$(BUILD)/%.o)
MAP_LIB  := $(BUILD)/libbglemu-map.a
SCOTCH_LIBS := -lscotch
$(BUILD)/mapfiles/%.o: CFLAGS += -I/usr/include/scotch
$(MAP_LIB): $(MAP_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/bin/bglemu-map: $(BUILD)/adi3-device/bin/bglemu-map.o $(MAP_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(SCOTCH_LIBS) $(LDLIBS) -o $@

help:
	@sed -n '2,20p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The engine's functions are never interposed (-fPIC would let another
# definition replace them at run time): calls among them may then be
# inlined and specialized like static ones (issue 9, the engine's speed).
$(BUILD)/torus-sim/%.o: CFLAGS += -fno-semantic-interposition

# The build's identity (torus-sim/tsim_seg.c): a hash of the library's
# sources, written into the segment mpirun makes and checked by every
# process that attaches, so that an mpirun and a libmpi (or a tool) linked
# from different builds never run one job: their shared structures, the
# hand-off state among them, may differ while the segment's own does not.
BUILD_ID_H := $(BUILD)/gen/tsim_build_id.h
LIB_HDRS := $(foreach d,$(LAYERS),$(wildcard $(d)/*.h $(d)/*.def))
$(BUILD_ID_H): $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	@echo "#define TSIM_BUILD_ID \"$$(cat $(sort $(LIB_SRCS) $(LIB_HDRS)) | sha1sum | cut -c1-16)\"" > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/torus-sim/tsim_seg.o: $(BUILD_ID_H)
$(BUILD)/torus-sim/tsim_seg.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Each tool is linked from its own source's object, named by BIN_SRCS: an
# object left behind in build/ by a source that moved is never picked up.
define tool_rule
$(BUILD)/bin/$(basename $(notdir $(1))): $(BUILD)/$(1:.c=.o) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@
endef
$(foreach s,$(filter-out %/bglemu-map.c,$(BIN_SRCS)),$(eval $(call tool_rule,$(s))))

$(BUILD)/bin/mpirun: $(MPIRUN_SRCS:%.c=$(BUILD)/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# One Check runner: every tests/unit/test_NAME.c provides NAME_suite().
$(BUILD)/tests/unit/suites.h: $(UNIT_SRCS) Makefile
	@mkdir -p $(dir $@)
	@{ for f in $(UNIT_SRCS); do n=$$(basename $$f .c); n=$${n#test_}; echo "SUITE($$n)"; done; } > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/tests/unit/main.o: tests/unit/main.c $(BUILD)/tests/unit/suites.h $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -I$(BUILD)/tests/unit -c $< -o $@

$(UNIT_BIN): $(BUILD)/tests/unit/main.o $(UNIT_OBJS) $(MAP_LIB) $(LIB)
	$(CC) $(LDFLAGS) $^ $(CHECK_LIBS) $(SCOTCH_LIBS) $(LDLIBS) -o $@

# MPI_Wtime in simulated time and a reproducible address space
# (fixed_addresses.c), preloaded by mpirun into MPI ranks; once
# MPICH is installed, also the wrappers of every MPI entry point, generated
# from its mpi_proto.h (the cputime clock: adi3-device/wtime/mpi_wtime.c).
WTIME_LIB := $(BUILD)/libbglemu-wtime.so
MPI_PROTO := $(wildcard $(PREFIX)/include/mpi_proto.h)
WTIME_SRCS := adi3-device/wtime/mpi_wtime.c adi3-device/wtime/fixed_addresses.c $(if $(MPI_PROTO),$(BUILD)/wtime/pmpi_wrap.c)
$(BUILD)/wtime/pmpi_wrap.c: adi3-device/wtime/gen_pmpi.py $(MPI_PROTO)
	@mkdir -p $(dir $@)
	python3 adi3-device/wtime/gen_pmpi.py $(MPI_PROTO) $@
$(WTIME_LIB): $(WTIME_SRCS) adi3-device/wtime/pmpi_wrap.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(MPI_PROTO),-I$(PREFIX)/include) -shared $(WTIME_SRCS) -o $@

build-all: $(LIB) $(BINS) $(MPIRUN) $(UNIT_BIN) $(WTIME_LIB)

install: deps
	@$(MAKE) --no-print-directory build-all
	@mkdir -p $(PREFIX)/bin $(PREFIX)/lib $(PREFIX)/include/bglemu $(PREFIX)/share/bglemu/mapfiles
	@# install(1) replaces files (new inode): a running job keeps its programs and the
	@# preloaded MPI_Wtime library; -C leaves unchanged ones (and their mtimes) alone.
	@# MPICH's install leaves mpirun as a symlink to mpiexec.hydra: never write through it.
	rm -f $(PREFIX)/bin/mpirun
	install -C -m 755 $(BINS) $(MPIRUN) $(PREFIX)/bin/
	install -C -m 644 $(LIB) $(PREFIX)/lib/
	install -C -m 755 $(WTIME_LIB) $(PREFIX)/lib/
	@for d in $(LAYERS); do mkdir -p $(PREFIX)/include/bglemu/$$d; \
	  for h in $$d/*.h $$d/*.def; do [ -e "$$h" ] && cp "$$h" $(PREFIX)/include/bglemu/$$d/ || true; done; done
	cp mapfiles/*.map mapfiles/README.md $(PREFIX)/share/bglemu/mapfiles/ 2>/dev/null || true
	cp adi3-device/mpirun/ch4-coll.json $(PREFIX)/share/bglemu/

check: install
	@BUILD=$(BUILD) PREFIX=$(PREFIX) tests/run.sh

check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan PREFIX=$(CURDIR)/build-asan/install \
	  OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

# The engine and its clients under ThreadSanitizer: the suites where ranks
# (threads) and the engine share the segment.
TSAN_SUITES ?= engine determinism ml proxy proxy_a2a proxy_bcast coll_tree quiet
check-tsan: deps
	@$(MAKE) --no-print-directory build-all BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread"
	@for s in $(TSAN_SUITES); do CK_RUN_SUITE=$$s CK_VERBOSITY=verbose build-tsan/unit_tests || exit 1; done

# MPI level: needs MPICH with the bgl netmod (built once, then cached).
test: install mpich
	@BUILD=$(BUILD) PREFIX=$(PREFIX) TEST_DIRS="tests/integration tests/mpi" tests/run.sh
test-mpi: install mpich
	@BUILD=$(BUILD) PREFIX=$(PREFIX) TEST_DIRS=tests/mpi SKIP_UNIT=1 tests/run.sh

bench: install
	@BUILD=$(BUILD) PREFIX=$(PREFIX) tests/bench/run.sh

demo: install mpich
	@PREFIX=$(PREFIX) tests/demo.sh

include adi3-device/mpich/mpich.mk

clean:
	rm -rf build build-asan build-tsan install

# Keep program objects between builds (they are intermediates of pattern rules).
.SECONDARY:
