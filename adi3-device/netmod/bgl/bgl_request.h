/* bglemu CH4 netmod "bgl": the netmod's part of MPIDIG's active-message requests. */
#ifndef BGL_REQUEST_H_INCLUDED
#define BGL_REQUEST_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_init(MPIR_Request * req)
{
    req->dev.ch4.am.netmod_am.bgl.pack_buffer = NULL;
    req->dev.ch4.am.netmod_am.bgl.handler_id = -1;
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_finalize(MPIR_Request * req)
{
    MPL_free(req->dev.ch4.am.netmod_am.bgl.pack_buffer);
    req->dev.ch4.am.netmod_am.bgl.pack_buffer = NULL;
}

#endif /* BGL_REQUEST_H_INCLUDED */
