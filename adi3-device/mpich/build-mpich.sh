#!/usr/bin/env bash
# Builds Debian's MPICH with bglemu's CH4 netmod "bgl" and installs it into
# PREFIX.  Usage: build-mpich.sh PREFIX
#
# The configured build tree lives outside the clone, in
#   ${BGLEMU_CACHE:-/var/cache/bglemu}/mpich-<version>-<key>/
# (key: hash of the configure flags, PREFIX included), so a netmod change
# costs an incremental make.  Every step is skipped when already done:
#   packages -> source (apt-get source; deb-src derived from debian.sources)
#   -> tree (copy of the source + our netmod + its registrations)
#   -> autogen (only when a registration or the netmod's subconfigure.m4
#      changed; only the error-message catalog when errnames.txt changed)
#   -> configure (once per tree) -> make -> install
# Logs and timings: <tree>/.bglemu/.  Environment: BGLEMU_CACHE, MPICH_JOBS
# (default 2), MPICH_NICE (default 19).  docs/mpich-build.md explains more.
set -euo pipefail

die() { echo "build-mpich: error: $*" >&2; exit 1; }
say() { echo "build-mpich: $*"; }
[ $# -eq 1 ] && [ -n "$1" ] || die "usage: build-mpich.sh PREFIX"
PREFIX=$(realpath -m "$1")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
NETMOD_SRC=$REPO/adi3-device/netmod/bgl
JOBS=${MPICH_JOBS:-2}
NICE="nice -n ${MPICH_NICE:-19}"
T_START=$SECONDS
[ -d "$NETMOD_SRC" ] || die "netmod sources not found ($NETMOD_SRC)"
SUDO=
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: cannot run apt-get"
    SUDO=sudo
fi

# Configure flags (the cache key is their hash):
#  ch4:bgl, no shared-memory module: every byte between ranks crosses the torus;
#  netmod not inlined: CH4 reaches the netmod through its function table, so
#    a netmod change recompiles the netmod's files, not all of MPICH;
#  system hwloc and the dataloop datatype engine: skip building the embedded
#    hwloc and yaksa (yaksa's generated kernels are a large part of a default
#    build); MPI features are unchanged;
#  gfortran 12 rejects MPICH's Fortran 77/90 bindings without
#    -fallow-argument-mismatch.
CONFIG_FLAGS=(
    --prefix="$PREFIX"
    --with-device=ch4:bgl --with-ch4-shmmods=none --disable-ch4-netmod-inline
    --enable-fortran --disable-f08 --disable-cxx --disable-doc
    --enable-fast=O2 --enable-g=none
    --with-hwloc=/usr --with-datatype-engine=dataloop
    FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch
)

# ---- cache directory ------------------------------------------------------
CACHE=${BGLEMU_CACHE:-/var/cache/bglemu}
if ! { mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ]; }; then
    [ -z "${BGLEMU_CACHE:-}" ] || die "BGLEMU_CACHE=$BGLEMU_CACHE is not writable"
    CACHE=$HOME/.cache/bglemu
    mkdir -p "$CACHE" || die "cannot create a cache directory ($CACHE)"
fi
CACHE=$(realpath "$CACHE")
case $CACHE/ in "$REPO"/*) die "the cache ($CACHE) must be outside the clone" ;; esac

# ---- prerequisites ----------------------------------------------------------
DEBS="dpkg-dev autoconf automake libtool gfortran python3 perl libhwloc-dev bison flex
      pkg-config make"
missing=""
for p in $DEBS; do
    case $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) in
        *" installed") ;;
        *) missing="$missing $p" ;;
    esac
done
if [ -n "$missing" ]; then
    say "installing$missing"
    $SUDO apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null ||
        die "apt-get install$missing failed"
fi

# ---- a deb-src entry ----------------------------------------------------------
# When no source entry exists, one is derived from the deb822 "Types: deb"
# stanzas of debian.sources: same URIs, Suites, Components, Signed-By (also a
# multi-line inline key), Architectures, Enabled; no host is written here.
has_deb_src() {
    grep -Eqs '^[[:space:]]*Types:.*\bdeb-src\b' /etc/apt/sources.list.d/*.sources ||
        grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
}
derive_deb_src() { # debian.sources -> deb-src stanzas on stdout
    awk 'BEGIN { RS = ""; ORS = "" }
         /(^|\n)Types:[ \t]*([^\n]*[ \t])?deb([ \t]|\n|$)/ {
             n = split($0, l, "\n"); out = ""; keep = 0
             for (i = 1; i <= n; i++) {
                 if (l[i] ~ /^#/) continue
                 if (l[i] ~ /^[ \t]/) { if (keep) out = out l[i] "\n"; continue }
                 keep = (l[i] ~ /^(Types|URIs|Suites|Components|Signed-By|Architectures|Enabled):/)
                 if (l[i] ~ /^Types:/) l[i] = "Types: deb-src"
                 if (keep) out = out l[i] "\n"
             }
             if (out ~ /(^|\n)URIs:/) print (nout++ ? "\n" : "") out
         }' "$1"
}
if ! has_deb_src; then
    SRC_LIST=/etc/apt/sources.list.d/debian.sources
    [ -f "$SRC_LIST" ] || die "no deb-src entry and no $SRC_LIST to derive one from"
    derive_deb_src "$SRC_LIST" >"$CACHE/bglemu-src.sources"
    [ -s "$CACHE/bglemu-src.sources" ] || die "no deb stanza with URIs in $SRC_LIST"
    say "adding deb-src entries: /etc/apt/sources.list.d/bglemu-src.sources (from $SRC_LIST)"
    $SUDO install -m 644 "$CACHE/bglemu-src.sources" /etc/apt/sources.list.d/bglemu-src.sources
    $SUDO apt-get update -qq || die "apt-get update failed"
fi

# ---- source, once per MPICH version ----------------------------------------
src_version() {
    apt-cache showsrc mpich 2>/dev/null | sed -n 's/^Version: \(.*\)-[^-]*$/\1/p' | sort -V | tail -n 1
}
VER=$(src_version)
if [ -z "$VER" ]; then # a deb-src entry whose index was never fetched
    $SUDO apt-get update -qq || die "apt-get update failed"
    VER=$(src_version)
fi
[ -n "$VER" ] || die "apt-cache showsrc mpich found no source package (deb-src entry?)"
SRC=$CACHE/src/mpich-$VER
if [ ! -f "$SRC/configure.ac" ]; then
    say "getting the source of mpich $VER (apt-get source) into $CACHE/src"
    rm -rf "$CACHE/src.tmp" && mkdir -p "$CACHE/src.tmp"
    (cd "$CACHE/src.tmp" && apt-get source -qq mpich >apt-source.log 2>&1) ||
        die "apt-get source mpich failed (log: $CACHE/src.tmp/apt-source.log)"
    [ -f "$CACHE/src.tmp/mpich-$VER/configure.ac" ] ||
        die "apt-get source did not unpack mpich-$VER (log: $CACHE/src.tmp/apt-source.log)"
    mkdir -p "$CACHE/src"
    rm -rf "$SRC"
    mv "$CACHE/src.tmp/mpich-$VER" "$SRC"
    mv "$CACHE"/src.tmp/* "$CACHE/src/" 2>/dev/null || true
    rm -rf "$CACHE/src.tmp"
fi

# ---- the build tree: one per (version, configure flags) ----------------------
KEY=$(printf '%s\n' "bglemu-mpich-1" "$VER" "${CONFIG_FLAGS[@]}" | sha1sum | cut -c1-12)
TREE=$CACHE/mpich-$VER-$KEY
STAMPS=$TREE/.bglemu
# One build per tree at a time (two sessions running make mpich).
exec 9>"$TREE.lock"
flock -n 9 || { say "waiting for another build of $TREE"; flock 9; }
if [ ! -f "$STAMPS/copied" ]; then
    say "new build tree $TREE"
    rm -rf "$TREE" "$TREE.tmp"
    cp -a "$SRC" "$TREE.tmp"
    mkdir -p "$TREE.tmp/.bglemu"
    printf '%s\n' "${CONFIG_FLAGS[@]}" >"$TREE.tmp/.bglemu/flags"
    mv "$TREE.tmp" "$TREE"
    touch "$STAMPS/copied"
fi
say "MPICH $VER, build tree $TREE"
echo "$(date -u +%FT%TZ) run start" >>"$STAMPS/timings"

step() { # name command...: logs to $STAMPS/name.log, appends the time to timings
    local name=$1; shift
    local log=$STAMPS/$name.log t0=$SECONDS
    say "$name ... (log: $log)"
    if ! "$@" >"$log" 2>&1; then
        tail -n 25 "$log" >&2
        echo "$(date -u +%FT%TZ) $name FAILED $((SECONDS - t0)) s" >>"$STAMPS/timings"
        die "$name failed after $((SECONDS - t0)) s (full log: $log)"
    fi
    echo "$(date -u +%FT%TZ) $name $((SECONDS - t0)) s" >>"$STAMPS/timings"
    say "$name done in $((SECONDS - t0)) s"
}

# Our netmod: copied file by file, only when the content differs, so make sees
# real changes only (unchanged files keep their mtimes).  Files we copied
# before and that are gone from the clone are removed (manifest).
NM=$TREE/src/mpid/ch4/netmod/bgl
mkdir -p "$NM"
relink=""
: >"$STAMPS/netmod-files.new"
for f in "$NETMOD_SRC"/*; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    [ "$b" = README.md ] && continue
    echo "$b" >>"$STAMPS/netmod-files.new"
    if ! cmp -s "$f" "$NM/$b"; then
        cp "$f" "$NM/$b"
        [ "$b" != Makefile.mk ] || relink=yes
    fi
done
if [ -f "$STAMPS/netmod-files" ]; then
    for b in $(comm -23 <(sort "$STAMPS/netmod-files") <(sort "$STAMPS/netmod-files.new")); do
        rm -f "$NM/$b"
    done
fi
mv "$STAMPS/netmod-files.new" "$STAMPS/netmod-files"

# The registrations MPICH needs for a new netmod (configure finds the netmod
# by its directory's subconfigure.m4, which autogen collects; nothing to add):
#  1. src/mpid/ch4/netmod/Makefile.mk includes the netmod's Makefile.mk;
#  2. maint/gen_ch4_api.py generates the netmod's func_table.c and
#     bgl_noinline.h, and netmod_impl.h selects bgl's netmod_inline.h when it
#     is the only netmod and inlined (__netmod_inline_bgl__).
MK=$TREE/src/mpid/ch4/netmod/Makefile.mk
grep -q 'netmod/bgl/Makefile.mk' "$MK" ||
    echo 'include $(top_srcdir)/src/mpid/ch4/netmod/bgl/Makefile.mk' >>"$MK"
python3 - "$TREE/maint/gen_ch4_api.py" <<'PY' || die "could not register bgl in maint/gen_ch4_api.py (layout of this MPICH version differs)"
import sys
path = sys.argv[1]
s = open(path).read()
if "__netmod_inline_bgl__" not in s:
    edits = [
        ('for m in "ofi", "ucx", "stubnm":\n        dump_func_table_c',
         'for m in "ofi", "ucx", "stubnm", "bgl":\n        dump_func_table_c'),
        ('for m in "ofi", "ucx", "stubnm":\n        dump_noinline_h',
         'for m in "ofi", "ucx", "stubnm", "bgl":\n        dump_noinline_h'),
        ('        print("#define __netmod_inline_ucx__   2", file=Out)\n',
         '        print("#define __netmod_inline_ucx__   2", file=Out)\n'
         '        print("#define __netmod_inline_bgl__   3", file=Out)\n'),
        ('        print("#include \\"../ucx/netmod_inline.h\\"", file=Out)\n',
         '        print("#include \\"../ucx/netmod_inline.h\\"", file=Out)\n'
         '        print("#elif NETMOD_INLINE==__netmod_inline_bgl__", file=Out)\n'
         '        print("#include \\"../bgl/netmod_inline.h\\"", file=Out)\n'),
    ]
    for old, new in edits:
        if s.count(old) != 1:
            sys.exit("gen_ch4_api.py: expected text not found: %r" % old[:60])
        s = s.replace(old, new)
    open(path, "w").write(s)
PY

# 3. CH4 calls every netmod's progress with blocking = 0, also from
#    MPID_Progress_wait's loop; the netmod needs to know that loop (it runs no
#    application code until a request completes, so the engine may do the
#    rank's message-layer steps while it waits: docs/simulated-time.md), so
#    MPIDI_progress_test passes its own `wait` flag on. One token, idempotent.
PROG=$TREE/src/mpid/ch4/src/ch4_progress.h
grep -q 'MPIDI_NM_progress(vci, wait)' "$PROG" ||
    sed -i 's/mpi_errno = MPIDI_NM_progress(vci, 0);\( *\\\)$/mpi_errno = MPIDI_NM_progress(vci, wait);\1/' "$PROG"
[ "$(grep -c 'MPIDI_NM_progress(vci, wait)' "$PROG")" = 2 ] ||
    die "could not pass the wait flag to the netmod in $PROG (layout of this MPICH version differs)"

# 4. Start and end at scale (docs/mpirun.md, "Start and end"): nothing may
#    spin or cost per rank more than it must while a job starts and ends.
#  a. The node mates' barrier of MPI_Init's and MPI_Finalize's node segment
#     (MPIDU_Init_shm: VN mode's two ranks of a node) waited with
#     sched_yield in a loop: with hundreds of ranks on two host cores a
#     waiting rank stayed runnable and took turns from the ranks it waited
#     for (1,024 VN ranks: load average 170, 60 s of CPU). It sleeps on a
#     futex on the barrier word (shared between processes) instead.
#  b. hydra's proxy (and mpiexec) allocated and cleared an array of 65,536
#     argument pointers (512 KiB, page faults included) for every PMI
#     command, one process serving every rank: 1.5 ms of host CPU a rank on
#     the job's critical path. The array comes from calloc (mmap'd pages
#     are already zero) and only the arguments present are touched.
# 5. What a wait is for (docs/simulated-time.md, "Quiet completions"):
#    MPIR_Wait, MPIR_Waitall and MPIR_Sendrecv_impl name the requests they
#    still wait for, in their order, while they call MPID_Progress_wait
#    (MPIDI_BGL_wait_reqs and _nreqs, cleared before anything else can
#    run), and MPICH says whether a progress hook is active
#    (MPIR_Progress_hook_any_active): then the netmod lets the engine record
#    the completions of the rank's requests instead of waking it for each,
#    until all are complete.
# A file is patched from MPICH's own copy of it (in $SRC) whenever it lacks
# its patch's mark, so a cached tree patched by an earlier version of a
# patch takes the current one.
python3 - "$TREE" "$SRC" <<'PY' || die "could not patch MPICH (layout of this MPICH version differs)"
import sys
tree, src = sys.argv[1], sys.argv[2]
def patch(rel, edits, mark):
    path = tree + "/" + rel
    s = open(path).read()
    if mark in s:
        return
    s = open(src + "/" + rel).read()
    for old, new in edits:
        if s.count(old) != 1:
            sys.exit("%s: expected text not found: %r" % (rel, old[:60]))
        s = s.replace(old, new)
    open(path, "w").write(s)
patch("src/mpid/common/shm/mpidu_init_shm.c", [
    ('#include "mpidu_shm_seg.h"\n',
     '#include "mpidu_shm_seg.h"\n#include <linux/futex.h>\n#include <limits.h>\n'
     '#include <sys/syscall.h>\n#include <unistd.h>\n'
     '/* bglemu: the node mates wait asleep */\n'
     '#define BGLEMU_FUTEX(w, op, v) syscall(SYS_futex, (int *) (w), (op), (v), NULL, NULL, 0)\n'),
    ('        MPL_atomic_store_int(&barrier->wait, 1 - sense);\n',
     '        MPL_atomic_store_int(&barrier->wait, 1 - sense);\n'
     '        BGLEMU_FUTEX(&barrier->wait, FUTEX_WAKE, INT_MAX);\n'),
    ('            MPL_sched_yield();  /* skip */\n',
     '            BGLEMU_FUTEX(&barrier->wait, FUTEX_WAIT, sense);\n'),
], "bglemu: the node mates wait asleep")
pmi_args = "HYDU_MALLOC_OR_JUMP(args, char **, MAX_PMI_%sARGS * sizeof(char *), status);\n"
calloc = ("/* bglemu: zero pages, untouched */ args = MPL_calloc(MAX_PMI_%sARGS, sizeof(char *), MPL_MEM_PM);\n"
          "    HYDU_ERR_CHKANDJUMP(status, args == NULL, HYD_NO_MEM, \"no memory for PMI arguments\\n\");\n")
for rel, loops in (("src/pm/hydra/pm/pmiserv/pmip_cb.c",
                    [("", "    for (int i = 0; i < MAX_PMI_ARGS; i++)\n        args[i] = NULL;\n"),
                     ("INTERNAL_", "    for (i = 0; i < MAX_PMI_INTERNAL_ARGS; i++)\n        args[i] = NULL;\n")]),
                   ("src/pm/hydra/pm/pmiserv/pmiserv_cb.c",
                    [("", "    for (i = 0; i < MAX_PMI_ARGS; i++)\n        args[i] = NULL;\n")])):
    patch(rel, [(pmi_args % k + loop, calloc % k) for k, loop in loops], "bglemu: zero pages, untouched")
def named(reqs, n, ind, state="state"):
    return ("MPIDI_BGL_wait_reqs = %s;\n%sMPIDI_BGL_wait_nreqs = %s;\n%smpi_errno = MPID_Progress_wait(%s);\n"
            "%sMPIDI_BGL_wait_nreqs = 0;\n") % (reqs, ind, n, ind, state, ind)
def declared(mark):
    return ('#include "mpiimpl.h"\n', '#include "mpiimpl.h"\n/* %s */\n' % mark +
            'extern MPIR_Request **MPIDI_BGL_wait_reqs;\nextern int MPIDI_BGL_wait_nreqs;\n')
patch("src/mpi/request/request_impl.c", [
    declared("bglemu: what a wait is for, all of it"),
    ('    while (!MPIR_Request_is_complete(request_ptr)) {\n        mpi_errno = MPID_Progress_wait(state);\n',
     '    while (!MPIR_Request_is_complete(request_ptr)) {\n        ' + named("&request_ptr", "1", " " * 8)),
    ('            while (!MPIR_Request_is_complete(request_ptrs[i])) {\n'
     '                mpi_errno = MPID_Progress_wait(state);\n',
     '            while (!MPIR_Request_is_complete(request_ptrs[i])) {\n                '
     + named("request_ptrs + i", "count - i", " " * 16)),
    ('GREQUEST);\n\n                mpi_errno = MPID_Progress_wait(state);\n',
     'GREQUEST);\n\n                ' + named("request_ptrs + i", "count - i", " " * 16)),
], "bglemu: what a wait is for, all of it")
patch("src/mpi/pt2pt/sendrecv.c", [
    declared("bglemu: what a wait is for, both"),
    ('            mpi_errno = MPID_Progress_wait(&progress_state);\n',
     '            MPIR_Request *bglemu_reqs[2] = { sreq, rreq };\n            '
     + named("bglemu_reqs", "2", " " * 12, "&progress_state")),
], "bglemu: what a wait is for, both")
patch("src/util/mpir_progress_hook.c", [
    ('static progress_hook_slot_t progress_hooks[MAX_PROGRESS_HOOKS];\n',
     'static progress_hook_slot_t progress_hooks[MAX_PROGRESS_HOOKS];\n\n'
     '/* bglemu: is any hook active */\n'
     'int MPIR_Progress_hook_any_active(void);\n'
     'int MPIR_Progress_hook_any_active(void)\n{\n'
     '    for (int i = 0; i < registered_progress_hooks; i++)\n'
     '        if (MPL_atomic_acquire_load_int(&progress_hooks[i].active) == TRUE)\n'
     '            return 1;\n'
     '    return 0;\n}\n'),
], "bglemu: is any hook active")
PY

# Regeneration, each keyed by a hash of its inputs (stamps in $STAMPS):
#  autogen -quick + configure: the two registrations and the netmod's
#    subconfigure.m4 (rare: a full autogen regenerates files all of MPICH
#    depends on, so the following make is nearly a full build);
#  error catalog only (autogen's extracterrmsgs step; defmsg.h is replaced
#    only when it differs, which recompiles MPICH's error module): the
#    netmod's errnames.txt and the "**key" strings its sources use.
#  The netmod's Makefile.mk (e.g. a new .c file) needs neither: MPICH builds
#  in maintainer mode, so make reruns automake and config.status itself.
hash_of() { cat "$@" 2>/dev/null | sha1sum | cut -c1-12; }
REGEN_KEY=$(hash_of "$MK" "$TREE/maint/gen_ch4_api.py" "$NM/subconfigure.m4")
ERR_KEY=$( { cat "$NM/errnames.txt" 2>/dev/null
             grep -ho '"\*\*[A-Za-z0-9_]*' "$NM"/*.c "$NM"/*.h 2>/dev/null | sort -u; } |
           sha1sum | cut -c1-12)
cd "$TREE"
if [ "$(cat "$STAMPS/autogen" 2>/dev/null)" != "$REGEN_KEY" ]; then
    rm -f "$STAMPS/autogen" "$STAMPS/errmsgs" "$STAMPS/configure"
    step autogen $NICE ./autogen.sh -quick
    echo "$REGEN_KEY" >"$STAMPS/autogen"
    echo "$ERR_KEY" >"$STAMPS/errmsgs"
fi
extract_errmsgs() { # what autogen.sh does for its geterrmsgs step
    local new=$STAMPS/defmsg.h.new
    # shellcheck disable=SC2046
    maint/extracterrmsgs -careful="$STAMPS/unusederr.txt" -skip=src/util/multichannel/mpi.c \
        $(cat maint/errmsgdirs) >"$new" 2>"$STAMPS/extracterrmsgs.err" || return 1
    cat "$STAMPS/extracterrmsgs.err"
    if grep -v 'Warning:' "$STAMPS/extracterrmsgs.err" | grep -q .; then return 1; fi
    [ -s "$new" ] || return 1
    if cmp -s "$new" src/mpi/errhan/defmsg.h; then rm -f "$new"
    else mv "$new" src/mpi/errhan/defmsg.h; fi
}
if [ "$(cat "$STAMPS/errmsgs" 2>/dev/null)" != "$ERR_KEY" ]; then
    step errmsgs extract_errmsgs
    echo "$ERR_KEY" >"$STAMPS/errmsgs"
fi
if [ ! -f "$STAMPS/configure" ]; then
    step configure $NICE ./configure "${CONFIG_FLAGS[@]}"
    touch "$STAMPS/configure"
fi
# A source dropped from the netmod's Makefile.mk makes no remaining object
# newer than libmpi: make would keep the old library. Relink it.
[ -z "$relink" ] || rm -f "$TREE/lib/libmpi.la"
step make $NICE make -j"$JOBS"

# make install puts hydra's mpirun symlink into PREFIX/bin; bglemu's own
# mpirun (a regular file, installed by the top-level make) stays.
ours=""
if [ -f "$PREFIX/bin/mpirun" ] && [ ! -L "$PREFIX/bin/mpirun" ]; then
    ours=$STAMPS/mpirun.bglemu
    cp -p "$PREFIX/bin/mpirun" "$ours"
fi
step install $NICE make install
if [ -n "$ours" ]; then
    rm -f "$PREFIX/bin/mpirun"
    cp -p "$ours" "$PREFIX/bin/mpirun"
fi
[ -x "$PREFIX/bin/mpicc" ] || die "make install left no $PREFIX/bin/mpicc"
echo "$PREFIX" >"$STAMPS/prefix"
echo "$(date -u +%FT%TZ) total $((SECONDS - T_START)) s" >>"$STAMPS/timings"
say "MPICH $VER with ch4:bgl installed in $PREFIX in $((SECONDS - T_START)) s (tree $TREE, timings $STAMPS/timings)"
