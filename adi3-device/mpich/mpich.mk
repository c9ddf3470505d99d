# make mpich: Debian's MPICH (apt-get source) with the CH4 netmod "bgl" from
# adi3-device/netmod/bgl, installed into $(PREFIX). The configured build tree
# is cached outside the clone (BGLEMU_CACHE, default /var/cache/bglemu), keyed
# by the MPICH version and a hash of the configure flags (PREFIX included), so
# a netmod change costs an incremental make. See docs/mpich-build.md.
# Part of `make`, `make demo` and `make test` (not of `make check`). It links
# PREFIX/lib/libbglemu.a into libmpi, so it needs `install` first.
# MPICH_JOBS (default 2) and MPICH_NICE (default 19) tune the build.
.PHONY: mpich
mpich: install
	adi3-device/mpich/build-mpich.sh "$(PREFIX)"
