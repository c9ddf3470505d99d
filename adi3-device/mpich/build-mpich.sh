#!/usr/bin/env bash
# Builds Debian's MPICH with bglemu's CH4 netmod "bgl". The configured build
# tree and its installation are cached outside the clone, keyed by the MPICH
# version and a hash of the configure flags, so every clone on the machine
# shares one build and a netmod change costs an incremental make; PREFIX/mpich
# links to the installation.  Usage: build-mpich.sh PREFIX
#
# Steps (each logged in the cache dir, each skipped when already done):
#   deps -> source (apt-get source, deb-src derived from the deb entries)
#   -> tree (copy of the source + our netmod + two registrations)
#   -> autogen (only when registrations or m4 changed) -> configure -> make -> install
set -euo pipefail

die() { echo "build-mpich: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: build-mpich.sh PREFIX"
PREFIX=$(realpath -m "$1")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
NETMOD_SRC=$REPO/adi3-device/netmod/bgl
JOBS=${MPICH_JOBS:-$(nproc)}
NICE="nice -n 10"

CONFIG_FLAGS="--with-device=ch4:bgl --with-ch4-shmmods=none --enable-fortran=all --disable-f08
--disable-cxx --disable-doc --enable-fast=O2 --with-hwloc=/usr --with-datatype-engine=dataloop
--enable-g=none --disable-dependency-tracking FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch"
CONFIG_FLAGS=$(echo $CONFIG_FLAGS)

CACHE=${BGLEMU_CACHE:-/var/cache/bglemu}
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || CACHE=$HOME/.cache/bglemu
mkdir -p "$CACHE" || die "cannot create a cache directory ($CACHE)"

SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

step() { # name, command...: runs once per tree, logs to $TREE/.bglemu/name.log
    local name=$1; shift
    local log=$STAMPS/$name.log t0=$SECONDS
    echo "build-mpich: $name ..."
    if ! "$@" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "$name failed (full log: $log)"
    fi
    echo "$name $((SECONDS - t0)) s" >>"$STAMPS/timings"
    echo "build-mpich: $name done in $((SECONDS - t0)) s"
}

# ---- prerequisites ------------------------------------------------------
DEBS="dpkg-dev autoconf automake libtool gfortran python3 libhwloc-dev bison flex pkg-config"
missing=""; for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
add_deb_src() { # derive deb-src entries from the existing deb ones (deb822)
    grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
    local src=/etc/apt/sources.list.d/debian.sources
    [ -f "$src" ] || die "no deb-src entry and no $src to derive one from"
    awk 'BEGIN { RS = ""; ORS = "\n\n" } /Types:[ \t]*deb/ { sub(/Types:[ \t]*deb/, "Types: deb-src"); print }' \
        "$src" | $SUDO tee /etc/apt/sources.list.d/bglemu-src.sources >/dev/null
    $SUDO apt-get update -qq
}
if [ -n "$missing" ]; then
    echo "build-mpich: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
add_deb_src

# ---- source (cached per version) ---------------------------------------
VER=$(apt-cache showsrc mpich 2>/dev/null | sed -n 's/^Version: \(.*\)-[^-]*$/\1/p' | head -n 1)
[ -n "$VER" ] || die "apt-cache showsrc mpich found no source package"
SRC=$CACHE/src/mpich-$VER
if [ ! -f "$SRC/configure.ac" ]; then
    mkdir -p "$CACHE/src"
    (cd "$CACHE/src" && apt-get source -qq mpich >"$CACHE/src/apt-source.log" 2>&1) ||
        die "apt-get source mpich failed (log: $CACHE/src/apt-source.log)"
fi

# ---- the configured tree, keyed by version + flags + prefix ------------
KEY=$(printf '%s\n' "$CONFIG_FLAGS" | sha1sum | cut -c1-12)
TREE=$CACHE/mpich-$VER-$KEY
MPICH_PREFIX=$TREE/install
STAMPS=$TREE/.bglemu
if [ ! -f "$STAMPS/copied" ]; then
    rm -rf "$TREE"
    cp -a "$SRC" "$TREE"
    mkdir -p "$STAMPS"
    echo "$CONFIG_FLAGS" >"$STAMPS/flags"
    touch "$STAMPS/copied"
fi
echo "build-mpich: MPICH $VER, build tree $TREE"

# Our netmod files, copied only when changed so make sees real changes only.
NM=$TREE/src/mpid/ch4/netmod/bgl
mkdir -p "$NM"
regen=0
for f in "$NETMOD_SRC"/*; do
    [ "$(basename "$f")" = README.md ] && continue
    if ! cmp -s "$f" "$NM/$(basename "$f")"; then
        cp "$f" "$NM/"
        case $f in *.m4|*Makefile.mk) regen=1 ;; esac
    fi
done

# Until the netmod implements them, the stub netmod's collective tables
# serve (generated into the tree, never committed).
for f in coll_params.h coll_globals_default.c; do
    [ -f "$NETMOD_SRC/bgl_$f" ] && continue
    sed -e 's/STUBNM/BGL/g' -e 's/stubnm/bgl/g' "$TREE/src/mpid/ch4/netmod/stubnm/stubnm_$f" >"$NM/bgl_$f.new"
    cmp -s "$NM/bgl_$f.new" "$NM/bgl_$f" && rm "$NM/bgl_$f.new" || mv "$NM/bgl_$f.new" "$NM/bgl_$f"
done

# The two registrations: the netmod's Makefile.mk, and the netmod lists of
# maint/gen_ch4_api.py (function table, inline selection, stub bodies for
# what the netmod doesn't implement yet).
MK=$TREE/src/mpid/ch4/netmod/Makefile.mk
grep -q 'netmod/bgl/Makefile.mk' "$MK" ||
    { echo 'include $(top_srcdir)/src/mpid/ch4/netmod/bgl/Makefile.mk' >>"$MK"; regen=1; }
GEN=$TREE/maint/gen_ch4_api.py
if ! grep -q '"bgl"' "$GEN"; then
    sed -i -e 's/for m in "ofi", "ucx", "stubnm":/for m in "ofi", "ucx", "stubnm", "bgl":/' \
        -e 's|^\(\s*\)dump_stub("src/mpid/ch4/netmod/stubnm", .stubnm., is_nm=True)|&\n\1dump_stub("src/mpid/ch4/netmod/bgl", "bgl", is_nm=True)|' \
        -e 's|^\(\s*\)print("#define __netmod_inline_ucx__   2", file=Out)|&\n\1print("#define __netmod_inline_bgl__   3", file=Out)|' \
        -e 's|^\(\s*\)print("#include \\"../ucx/netmod_inline.h\\"", file=Out)|&\n\1print("#elif NETMOD_INLINE==__netmod_inline_bgl__", file=Out)\n\1print("#include \\"../bgl/netmod_inline.h\\"", file=Out)|' \
        "$GEN"
    grep -q '__netmod_inline_bgl__' "$GEN" && grep -q 'netmod/bgl", "bgl"' "$GEN" ||
        die "could not register bgl in maint/gen_ch4_api.py (MPICH $VER changed its layout?)"
    regen=1
fi

cd "$TREE"
[ -f "$STAMPS/autogen" ] && [ $regen = 0 ] || { step autogen $NICE ./autogen.sh -quick; touch "$STAMPS/autogen"; rm -f "$STAMPS/configure"; }
[ -f "$STAMPS/configure" ] || { step configure $NICE ./configure --prefix="$MPICH_PREFIX" $CONFIG_FLAGS; touch "$STAMPS/configure"; }
step make $NICE make -j"$JOBS"
step install make install
mkdir -p "$PREFIX"
ln -sfn "$MPICH_PREFIX" "$PREFIX/mpich"
echo "build-mpich: MPICH $VER with ch4:bgl in $MPICH_PREFIX, linked as $PREFIX/mpich (timings: $STAMPS/timings)"
