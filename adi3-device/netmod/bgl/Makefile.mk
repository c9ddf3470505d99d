##
## bglemu: the CH4 netmod "bgl" (Blue Gene/L torus emulated by bglemu).
## Copied into src/mpid/ch4/netmod/bgl/ and included from
## src/mpid/ch4/netmod/Makefile.mk by adi3-device/mpich/build-mpich.sh.
##

if BUILD_CH4_NETMOD_BGL

# bglemu's own layers (message layer, packet layer, engine client) come from
# the same PREFIX MPICH installs into: headers for the netmod's .c files, the
# library linked into libmpi (a change to it relinks libmpi, nothing more).
AM_CPPFLAGS += -I$(prefix)/include/bglemu
pmpi_convenience_libs += $(prefix)/lib/libbglemu.a

noinst_HEADERS   += src/mpid/ch4/netmod/bgl/bgl_pre.h \
                    src/mpid/ch4/netmod/bgl/bgl_impl.h \
                    src/mpid/ch4/netmod/bgl/bgl_ml.h \
                    src/mpid/ch4/netmod/bgl/bgl_coll.h \
                    src/mpid/ch4/netmod/bgl/bgl_am.h \
                    src/mpid/ch4/netmod/bgl/bgl_progress.h \
                    src/mpid/ch4/netmod/bgl/bgl_proc.h \
                    src/mpid/ch4/netmod/bgl/bgl_request.h \
                    src/mpid/ch4/netmod/bgl/netmod_inline.h

mpi_core_sources += src/mpid/ch4/netmod/bgl/func_table.c \
                    src/mpid/ch4/netmod/bgl/bgl_init.c \
                    src/mpid/ch4/netmod/bgl/bgl_am.c \
                    src/mpid/ch4/netmod/bgl/bgl_clock.c \
                    src/mpid/ch4/netmod/bgl/bgl_coll.c \
                    src/mpid/ch4/netmod/bgl/bgl_dt.c \
                    src/mpid/ch4/netmod/bgl/bgl_comm.c \
                    src/mpid/ch4/netmod/bgl/bgl_trace.c \
                    src/mpid/ch4/netmod/bgl/bgl_win.c \
                    src/mpid/ch4/netmod/bgl/bgl_part.c \
                    src/mpid/ch4/netmod/bgl/bgl_spawn.c

errnames_txt_files += src/mpid/ch4/netmod/bgl/errnames.txt

endif
