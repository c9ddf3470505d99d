/* The strict JSON reader (RFC 8259) of bglemu's report tools, and the
 * helpers that read a report's members: bglemu-report and bglemu-map read
 * the same reports and must reject the same files the same way. Static
 * functions in a header, as the tools are one source file each
 * (adi3-device/bin/NAME.c); the includer defines prog (its name) first.
 * Every failure is one line, "PROG: FILE:LINE:COL: reason", and exit 1. */
#ifndef REPORT_JSON_H
#define REPORT_JSON_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pictures/pic.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* One line, "PROG: reason", and exit with code. */
static void __attribute__((format(printf, 2, 3), noreturn)) die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}


/* The whole file at path ('-': standard input), NUL-terminated; *len its
 * bytes. A file that can't be read ends the tool with one line. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) die(1, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) die(1, "%s: out of memory", path);
    for (;;) {
        if (n == cap) {
            char *nb = cap < ((size_t)1 << 31) ? realloc(buf, (cap *= 2) + 1) : NULL;
            if (!nb) die(1, "%s: too large", path);
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) die(1, "%s: cannot read: %s", path, strerror(errno));
    if (f != stdin) fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* ---- a strict JSON reader ------------------------------------------------ */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    size_t off;           /* where the value starts, for messages */
    char *key;            /* member name inside an object */
    char *str;            /* J_STR: decoded UTF-8; J_NUM: the number as written */
    int b;
    struct jval *kid, *next; /* J_ARR/J_OBJ: first element; the next sibling */
    int n;                /* elements */
} jval;

typedef struct jparser {
    const char *buf, *p, *end;
    const char *file;
    int depth;
} jparser;

/* file:line:column of an offset: editors jump there. */
static void where(const char *buf, size_t off, const char *file, char *out, size_t len)
{
    int line = 1;
    size_t col = 1;
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') line++, col = 1;
        else col++;
    }
    snprintf(out, len, "%s:%d:%zu", file, line, col);
}

/* "PROG: FILE:LINE:COL: what" and exit 1. */
static void __attribute__((noreturn)) fail_at(const jparser *jp, size_t off, const char *what,
                                              const char *fmt, va_list ap)
{
    char loc[4200];
    where(jp->buf, off, jp->file, loc, sizeof loc);
    fprintf(stderr, "%s: %s: %s", prog, loc, what);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(1);
}

static void __attribute__((format(printf, 3, 4), noreturn))
jfail(const jparser *jp, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(jp, (size_t)(at - jp->buf), "", fmt, ap);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) die(1, "out of memory");
    return p;
}

static void skip_ws(jparser *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

/* What the reader found where it wanted something else. */
static const char *what_is(const jparser *jp)
{
    static char buf[32];
    unsigned char c = jp->p < jp->end ? (unsigned char)*jp->p : 0;
    if (jp->p >= jp->end) return "the end of the file";
    if (c > 0x20 && c < 0x7f) snprintf(buf, sizeof buf, "'%c'", c);
    else snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
}

static void put_utf8(char *o, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        o[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*n)++] = (char)(0xc0 | cp >> 6);
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        o[(*n)++] = (char)(0xe0 | cp >> 12);
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        o[(*n)++] = (char)(0xf0 | cp >> 18);
        o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

static int hex4(const char *s, const char *end, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        if (s + i >= end) return -1;
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* A string at jp->p (the opening quote), decoded. Escapes only shrink, so
 * the raw length bounds the result. */
static char *parse_string(jparser *jp)
{
    const char *start = jp->p++;
    char *out = xcalloc((size_t)(jp->end - jp->p) + 1, 1);
    size_t n = 0;
    for (;;) {
        if (jp->p >= jp->end) jfail(jp, start, "string not closed");
        unsigned char c = (unsigned char)*jp->p;
        if (c == '"') break;
        if (c < 0x20) jfail(jp, jp->p, "control character in a string");
        if (c != '\\') {
            out[n++] = (char)c;
            jp->p++;
            continue;
        }
        const char *esc = jp->p++;
        if (jp->p >= jp->end) jfail(jp, start, "string not closed");
        char e = *jp->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(jp->p, jp->end, &cp) != 0) jfail(jp, esc, "bad \\u escape");
            jp->p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff) jfail(jp, esc, "lone low surrogate in a \\u escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (jp->end - jp->p < 6 || jp->p[0] != '\\' || jp->p[1] != 'u' ||
                    hex4(jp->p + 2, jp->end, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
                    jfail(jp, esc, "high surrogate without its low half in a \\u escape");
                jp->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            put_utf8(out, &n, cp);
            break;
        }
        default: jfail(jp, esc, "bad escape '\\%c' in a string", e);
        }
    }
    jp->p++;
    out[n] = '\0';
    return out;
}

static const char *parse_number(jparser *jp)
{
    const char *s = jp->p, *p = s;
    if (p < jp->end && *p == '-') p++;
    if (p < jp->end && *p == '0') p++;
    else if (p < jp->end && *p >= '1' && *p <= '9')
        while (p < jp->end && *p >= '0' && *p <= '9') p++;
    else jfail(jp, s, "bad number");
    if (p < jp->end && *p == '.') {
        p++;
        if (!(p < jp->end && *p >= '0' && *p <= '9')) jfail(jp, s, "bad number: no digit after '.'");
        while (p < jp->end && *p >= '0' && *p <= '9') p++;
    }
    if (p < jp->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < jp->end && (*p == '+' || *p == '-')) p++;
        if (!(p < jp->end && *p >= '0' && *p <= '9')) jfail(jp, s, "bad number: no exponent digits");
        while (p < jp->end && *p >= '0' && *p <= '9') p++;
    }
    jp->p = p;
    return s;
}

static jval *parse_value(jparser *jp)
{
    skip_ws(jp);
    jval *v = xcalloc(1, sizeof *v);
    v->off = (size_t)(jp->p - jp->buf);
    if (jp->p >= jp->end) jfail(jp, jp->p, "expected a value, found the end of the file");
    char c = *jp->p;
    if (c == '{' || c == '[') {
        /* reports nest 4 deep; a bound keeps hostile input off the stack */
        if (++jp->depth > 64) jfail(jp, jp->p, "nested more than 64 deep");
        char close = c == '{' ? '}' : ']';
        v->t = c == '{' ? J_OBJ : J_ARR;
        jp->p++;
        skip_ws(jp);
        jval **tail = &v->kid;
        if (jp->p < jp->end && *jp->p == close) {
            jp->p++;
        } else {
            for (;;) {
                char *key = NULL;
                if (v->t == J_OBJ) {
                    skip_ws(jp);
                    if (jp->p >= jp->end || *jp->p != '"')
                        jfail(jp, jp->p, "expected a member name in quotes, found %s", what_is(jp));
                    key = parse_string(jp);
                    skip_ws(jp);
                    if (jp->p >= jp->end || *jp->p != ':')
                        jfail(jp, jp->p, "expected ':' after the member name \"%s\"", key);
                    jp->p++;
                }
                jval *k = parse_value(jp);
                k->key = key;
                *tail = k;
                tail = &k->next;
                v->n++;
                skip_ws(jp);
                if (jp->p < jp->end && *jp->p == ',') {
                    jp->p++;
                    continue;
                }
                if (jp->p < jp->end && *jp->p == close) {
                    jp->p++;
                    break;
                }
                jfail(jp, jp->p, "expected ',' or '%c', found %s", close, what_is(jp));
            }
        }
        jp->depth--;
    } else if (c == '"') {
        v->t = J_STR;
        v->str = parse_string(jp);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->t = J_NUM;
        const char *s = parse_number(jp);
        v->str = xcalloc((size_t)(jp->p - s) + 1, 1);
        memcpy(v->str, s, (size_t)(jp->p - s));
    } else if (jp->end - jp->p >= 4 && !memcmp(jp->p, "true", 4)) {
        v->t = J_BOOL, v->b = 1, jp->p += 4;
    } else if (jp->end - jp->p >= 5 && !memcmp(jp->p, "false", 5)) {
        v->t = J_BOOL, jp->p += 5;
    } else if (jp->end - jp->p >= 4 && !memcmp(jp->p, "null", 4)) {
        v->t = J_NULL, jp->p += 4;
    } else {
        jfail(jp, jp->p, "expected a value (object, array, string, number, true, false, null)");
    }
    return v;
}

static void jfree(jval *v)
{
    while (v) {
        jval *next = v->next;
        jfree(v->kid);
        free(v->key);
        free(v->str);
        free(v);
        v = next;
    }
}

/* ---- the report's members ------------------------------------------------ */

typedef struct report {
    jparser jp;
    jval *root;
} report;

static void __attribute__((format(printf, 3, 4), noreturn))
rfail(const report *r, const jval *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(&r->jp, at ? at->off : 0, "not a bglemu report: ", fmt, ap);
}

static jval *member(const jval *obj, const char *key)
{
    for (jval *k = obj->kid; k; k = k->next)
        if (!strcmp(k->key, key)) return k;
    return NULL;
}

static jval *need(const report *r, const jval *obj, const char *key, jtype t)
{
    static const char *const tname[] = {"null", "true or false", "a number", "a string",
                                        "an array", "an object"};
    jval *v = member(obj, key);
    if (!v && obj->key) rfail(r, obj, "no \"%s\" in \"%s\"", key, obj->key);
    if (!v) rfail(r, obj, "no \"%s\" in this object", key);
    if (v->t != t) rfail(r, v, "\"%s\" should be %s", key, tname[t]);
    return v;
}

/* A non-negative integer member, exactly (counters exceed 2^53). */
static uint64_t num_u64(const report *r, const jval *v, const char *what, uint64_t max)
{
    if (v->t != J_NUM || v->str[0] == '-' || strpbrk(v->str, ".eE"))
        rfail(r, v, "%s should be a non-negative integer", what);
    errno = 0;
    unsigned long long x = strtoull(v->str, NULL, 10);
    if (errno || x > max) rfail(r, v, "%s %s is too large (at most %llu)", what, v->str,
                                (unsigned long long)max);
    return x;
}

static uint64_t get_u64(const report *r, const jval *obj, const char *key, uint64_t max)
{
    return num_u64(r, need(r, obj, key, J_NUM), key, max);
}

/* An array of exactly n small integers into out. */
static void get_ints(const report *r, const jval *obj, const char *key, int n, int *out, int max)
{
    jval *a = need(r, obj, key, J_ARR);
    if (a->n != n) rfail(r, a, "\"%s\" should have %d elements, has %d", key, n, a->n);
    int i = 0;
    for (jval *k = a->kid; k; k = k->next) out[i++] = (int)num_u64(r, k, key, (uint64_t)max);
}

/* Labels are printed in SVG and on terminals: keep them valid UTF-8 without
 * control characters, as mpirun's own are. */
static void label(char *dst, size_t len, const char *s)
{
    char *argv[] = {(char *)s, NULL};
    pic_job_label(dst, len, argv);
}

#pragma GCC diagnostic pop

#endif
