/* Size arguments of the benchmark programs, message-layer and MPI alike.
 * Header-only: the MPI programs are built with mpicc against the installed
 * headers and do not link the message layer. */
#ifndef ML_SIZE_H
#define ML_SIZE_H

#include <stddef.h>
#include <stdlib.h>

/* "4096", "4K", "64k", "1M" -> bytes in *out: 0, or -1 if malformed. */
static inline int ml_parse_size(const char *s, size_t *out)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 0);
    if (e == s || *s == '-') return -1;
    if (*e == 'k' || *e == 'K') v <<= 10, e++;
    else if (*e == 'm' || *e == 'M') v <<= 20, e++;
    if (*e) return -1;
    *out = (size_t)v;
    return 0;
}

#endif
