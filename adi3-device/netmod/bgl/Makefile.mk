##
## bglemu: the CH4 netmod "bgl" (Blue Gene/L torus emulated by bglemu).
## Included from src/mpid/ch4/netmod/Makefile.mk by adi3-device/mpich/build-mpich.sh.
##

if BUILD_CH4_NETMOD_BGL

mpi_core_sources += src/mpid/ch4/netmod/bgl/func_table.c \
                    src/mpid/ch4/netmod/bgl/bgl_noinline.c

endif
