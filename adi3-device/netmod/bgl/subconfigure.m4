[#] start of __file__
dnl bglemu: configure hooks of the CH4 netmod "bgl" (same shape as stubnm's).
dnl MPICH_SUBCFG_AFTER=src/mpid/ch4

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_COND_IF([BUILD_CH4],[
        for net in $ch4_netmods ; do
            AS_CASE([$net],[bgl],[build_ch4_netmod_bgl=yes])
        done
    ])
    AM_CONDITIONAL([BUILD_CH4_NETMOD_BGL],[test "X$build_ch4_netmod_bgl" = "Xyes"])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
AM_COND_IF([BUILD_CH4_NETMOD_BGL],[
    AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch4:bgl])
    AC_DEFINE(MPIDI_BUILD_CH4_LOCALITY_INFO, 1, [CH4 should build locality info])
])dnl end AM_COND_IF(BUILD_CH4_NETMOD_BGL,...)
])dnl end _BODY

[#] end of __file__
