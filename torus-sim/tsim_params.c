/* The named parameter table: defaults, overrides, the report's list. The
 * units and help texts are tsim_params.def's, for its readers. */
#include "tsim.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct param_desc {
    const char *name;
    uint64_t def;
    size_t off;
} param_desc;

static const param_desc descs[] = {
#define TSIM_PARAM(n, d, u, h) {#n, d, offsetof(tsim_params, n)},
#include "tsim_params.def"
#undef TSIM_PARAM
};
#define NDESC (sizeof descs / sizeof descs[0])

void tsim_params_default(tsim_params *p)
{
    for (size_t i = 0; i < NDESC; i++)
        *(uint64_t *)((char *)p + descs[i].off) = descs[i].def;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

int tsim_params_set(tsim_params *p, const char *assignment, char *err, size_t errlen)
{
    char buf[256];
    if (strlen(assignment) >= sizeof buf) {
        snprintf(err, errlen, "parameter assignment too long");
        return -1;
    }
    strcpy(buf, assignment);
    char *eq = strchr(buf, '=');
    if (!eq) {
        snprintf(err, errlen, "expected name=value, got '%s'", assignment);
        return -1;
    }
    *eq = 0;
    char *name = trim(buf), *val = trim(eq + 1);
    for (size_t i = 0; i < NDESC; i++) {
        if (strcmp(descs[i].name, name) != 0) continue;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(val, &end, 0);
        if (!*val || *end || errno || val[0] == '-') {
            snprintf(err, errlen, "parameter %s: '%s' is not a non-negative integer", name, val);
            return -1;
        }
        *(uint64_t *)((char *)p + descs[i].off) = v;
        return 0;
    }
    snprintf(err, errlen, "unknown parameter '%s'", name);
    return -1;
}

int tsim_params_load(tsim_params *p, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char line[512], why[256];
    int ln = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        if (tsim_params_set(p, s, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s:%d: %s", path, ln, why);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* The groups of parameters listed only when asked for or set away from
 * their defaults (TSIM_PARAMS_*), so that a report of a job that never used
 * them stays what it was before they existed. */
static unsigned group_of(const param_desc *d)
{
    if (strncmp(d->name, "tree_", 5) == 0 || strncmp(d->name, "gi_", 3) == 0) return TSIM_PARAMS_TREE;
    if (strncmp(d->name, "ddt_", 4) == 0) return TSIM_PARAMS_DDT;
    if (strcmp(d->name, "mpi_wtime_cycles") == 0) return TSIM_PARAMS_WTIME;
    return 0;
}

static int quiet(const param_desc *d, const tsim_params *p, unsigned show)
{
    unsigned g = group_of(d);
    return g && !(g & show) && *(const uint64_t *)((const char *)p + d->off) == d->def;
}

void tsim_params_json_all(const tsim_params *p, FILE *f, unsigned show)
{
    fputc('{', f);
    int n = 0;
    for (size_t i = 0; i < NDESC; i++) {
        if (quiet(&descs[i], p, show)) continue;
        fprintf(f, "%s\"%s\": %llu", n++ ? ", " : "", descs[i].name,
                (unsigned long long)*(const uint64_t *)((const char *)p + descs[i].off));
    }
    fputc('}', f);
}

