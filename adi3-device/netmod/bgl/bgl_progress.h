/* bglemu CH4 netmod "bgl": progress (forwards to bgl_am.c). */
#ifndef BGL_PROGRESS_H_INCLUDED
#define BGL_PROGRESS_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int blocking)
{
    return MPIDI_BGL_progress(vci, blocking);
}

#endif /* BGL_PROGRESS_H_INCLUDED */
