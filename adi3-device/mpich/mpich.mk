# make mpich: Debian's MPICH with the ch4:bgl netmod, built in a cache outside
# the clone (adi3-device/mpich/build-mpich.sh; docs/mpich-build.md).
# Not yet part of `make` or `make test`: the netmod is still a stub.
.PHONY: mpich
mpich:
	adi3-device/mpich/build-mpich.sh $(PREFIX)
