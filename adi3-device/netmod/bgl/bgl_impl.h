/* bglemu CH4 netmod "bgl": what the netmod's implementation files share. */
#ifndef BGL_IMPL_H_INCLUDED
#define BGL_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"

#endif /* BGL_IMPL_H_INCLUDED */
