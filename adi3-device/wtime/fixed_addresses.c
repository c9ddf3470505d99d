/* A reproducible address space for an MPI rank; part of the library
 * mpirun preloads into MPI ranks (mpi_wtime.c). docs/mpi.md, "A
 * reproducible address space".
 *
 * Simulated results follow the addresses of the buffers MPI is handed,
 * modulo 64 (the layout cache's key, bgl_dt.c; where the coprocessor takes
 * a rendezvous reception, by the buffer's place in a 32-byte line). Two
 * things of the host would move those addresses from run to run: Linux
 * starts every process's stack at a random address, below the argument
 * and environment strings; and glibc moves the environment's pointer
 * array into the heap the first time a variable is added, one pointer per
 * variable, so every heap buffer allocated after a program's first setenv
 * would follow the number of variables the job was started with.
 *
 * The stack: an MPI rank started by mpirun is re-executed once, before
 * anything else runs, without address-space randomization (personality
 * ADDR_NO_RANDOMIZE), like a BG/L compute node's kernel, which gives a
 * program the same addresses every time. The strings above the stack
 * differ between runs and ranks (mpirun's pid in BGLEMU_SEG, PMI_RANK, the
 * working directory, the variables themselves): so the re-execution adds
 * padding variables (STACKPAD) that make the strings' total size a
 * multiple of 64 and the number of argv and environment pointers a
 * multiple of 8, and with them the stack's addresses the same modulo 64
 * (a cache line and more) in every rank and run. The new image removes the
 * padding at once, in place, so the program sees its own environment.
 *
 * The heap: in the re-executed image, setenv, putenv, unsetenv and
 * clearenv are the ones below, with glibc's semantics, and they never
 * allocate from the heap: the pointer array and the strings setenv makes
 * live in pages of their own (mmap). mmap hands out whole pages, so their
 * number moves no buffer within a page. The heap (brk) and mmap are
 * page-aligned with and without randomization, so a rank's heap buffers
 * have the same addresses whatever environment the job started with.
 *
 * BGLEMU_ASLR=1 keeps the host's randomization and glibc's environment;
 * so do ranks not started by mpirun (no BGLEMU_SEG) and processes without
 * the netmod. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

double MPIDI_BGL_wtime(void) __attribute__((weak));
extern char **environ;

#define STACKPAD "BGLEMU_STACKPAD"

/* set in the re-executed image: the environment functions are ours */
static int owned;

/* ---- the environment, off the heap ----
 *
 * environ is `vec` once a variable was added; before, it is the array
 * the kernel built on the stack (replacing and removing variables work in
 * place in either, as in glibc). Strings setenv made stay for
 * the process's life (a getenv result may still be in use, as in glibc)
 * and an identical "NAME=value" made again is the same string, so a
 * program switching a variable between a few values does not grow. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static char **vec;
static size_t vec_cap; /* pointers vec holds, its NULL included */

struct pool {
    struct pool *next;
    size_t used, size; /* bytes of text[] */
    char text[];
};
static struct pool *pools;

static void *pages(size_t *bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *bytes = (*bytes + page - 1) / page * page;
    void *p = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* environ as vec with room for one more variable; 0, or -1 with errno */
static int env_room(size_t n)
{
    if (n + 2 <= vec_cap) {
        if (environ != vec) {
            if (n) memmove(vec, environ, n * sizeof *vec);
            vec[n] = NULL;
            environ = vec;
        }
        return 0;
    }
    size_t cap = vec_cap ? vec_cap : 512;
    while (cap < n + 2) cap *= 2;
    size_t bytes = cap * sizeof *vec;
    char **v = pages(&bytes);
    if (!v) return errno = ENOMEM, -1;
    if (n) memcpy(v, environ, n * sizeof *v);
    v[n] = NULL;
    if (vec) munmap(vec, vec_cap * sizeof *vec);
    vec = v;
    vec_cap = bytes / sizeof *vec;
    environ = vec;
    return 0;
}

/* "NAME=value", made once */
static char *env_string(const char *name, size_t nlen, const char *value)
{
    size_t vlen = strlen(value), len = nlen + 1 + vlen + 1;
    for (struct pool *p = pools; p; p = p->next)
        for (size_t at = 0; at < p->used; at += strlen(p->text + at) + 1)
            if (!strncmp(p->text + at, name, nlen) && p->text[at + nlen] == '=' &&
                !strcmp(p->text + at + nlen + 1, value))
                return p->text + at;
    if (!pools || pools->size - pools->used < len) {
        size_t bytes = sizeof(struct pool) + (len > 4096 ? len : 4096);
        struct pool *p = pages(&bytes);
        if (!p) return errno = ENOMEM, NULL;
        p->next = pools;
        p->used = 0;
        p->size = bytes - sizeof *p;
        pools = p;
    }
    char *s = pools->text + pools->used;
    memcpy(s, name, nlen);
    s[nlen] = '=';
    memcpy(s + nlen + 1, value, vlen + 1);
    pools->used += len;
    return s;
}

/* the index of the first NAME=..., or the count of variables */
static size_t env_find(const char *name, size_t nlen)
{
    size_t i = 0;
    if (environ)
        for (; environ[i]; i++)
            if (!strncmp(environ[i], name, nlen) && environ[i][nlen] == '=') break;
    return i;
}

/* puts s at NAME's place, or appends it */
static int env_put(const char *name, size_t nlen, char *s)
{
    size_t i = env_find(name, nlen);
    if (environ && environ[i]) {
        environ[i] = s;
        return 0;
    }
    if (env_room(i) != 0) return -1;
    environ[i] = s;
    environ[i + 1] = NULL;
    return 0;
}

static void env_remove(const char *name, size_t nlen)
{
    if (!environ) return;
    char **out = environ;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, name, nlen) || (*e)[nlen] != '=') *out++ = *e;
    *out = NULL;
}

static int bad_name(const char *name)
{
    return !name || !*name || strchr(name, '=');
}

#define NEXT(ret, fn, ...)                                                                      \
    static ret (*next)(__VA_ARGS__);                                                            \
    if (!next) *(void **)&next = dlsym(RTLD_NEXT, fn);                                         \
    if (!next) return errno = ENOSYS, -1

int setenv(const char *name, const char *value, int replace)
{
    if (!owned) {
        NEXT(int, "setenv", const char *, const char *, int);
        return next(name, value, replace);
    }
    if (bad_name(name)) return errno = EINVAL, -1;
    size_t nlen = strlen(name);
    pthread_mutex_lock(&env_lock);
    int rc = 0;
    if (replace || !environ || !environ[env_find(name, nlen)]) {
        char *s = env_string(name, nlen, value);
        rc = s ? env_put(name, nlen, s) : -1;
    }
    pthread_mutex_unlock(&env_lock);
    return rc;
}

int putenv(char *string)
{
    if (!owned) {
        NEXT(int, "putenv", char *);
        return next(string);
    }
    const char *eq = strchr(string, '=');
    if (!eq) return unsetenv(string); /* as glibc: "NAME" alone removes it */
    pthread_mutex_lock(&env_lock);
    int rc = env_put(string, (size_t)(eq - string), string);
    pthread_mutex_unlock(&env_lock);
    return rc;
}

int unsetenv(const char *name)
{
    if (!owned) {
        NEXT(int, "unsetenv", const char *);
        return next(name);
    }
    if (bad_name(name)) return errno = EINVAL, -1;
    pthread_mutex_lock(&env_lock);
    env_remove(name, strlen(name));
    pthread_mutex_unlock(&env_lock);
    return 0;
}

int clearenv(void)
{
    if (!owned) {
        NEXT(int, "clearenv", void);
        return next();
    }
    pthread_mutex_lock(&env_lock);
    environ = NULL;
    pthread_mutex_unlock(&env_lock);
    return 0;
}

/* ---- the re-execution ---- */

__attribute__((constructor)) static void fixed_addresses(int argc, char **argv, char **envp)
{
    if (getenv(STACKPAD)) { /* the re-executed image */
        owned = 1;
        unsetenv(STACKPAD);
        return;
    }
    const char *opt = getenv("BGLEMU_ASLR");
    if (!getenv("BGLEMU_SEG") || !getenv("PMI_RANK") || (opt && !strcmp(opt, "1")) || !argv ||
        !envp || !MPIDI_BGL_wtime)
        return;
    int pers = personality(0xffffffff);
    if (pers == -1 || personality((unsigned long)pers | ADDR_NO_RANDOMIZE) == -1) return;
    /* the program's own path, not /proc/self/exe: the kernel names the
     * process after the file executed (ps, top, pgrep would say "exe") */
    static char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || len >= (ssize_t)sizeof exe - 1 || access(exe, X_OK) != 0)
        len = (ssize_t)strlen(strcpy(exe, "/proc/self/exe"));
    exe[len] = 0;
    size_t n = 0, bytes = (size_t)len + 1; /* every string with its NUL, the file name too */
    for (int i = 0; i < argc; i++) bytes += strlen(argv[i]) + 1;
    for (char **e = envp; *e; e++) bytes += strlen(*e) + 1, n++;
    size_t pads = 8 - (size_t)(argc + (int)n) % 8; /* 1..8 more pointers */
    size_t fill = (64 - (bytes + pads * sizeof STACKPAD "=") % 64) % 64;
    char **env = malloc(sizeof *env * (n + pads + 1));
    char *pad = malloc(sizeof STACKPAD "=" + fill), *none = STACKPAD "=";
    if (!env || !pad) goto out;
    memcpy(pad, none, sizeof STACKPAD "=" - 1);
    memset(pad + sizeof STACKPAD "=" - 1, 'x', fill);
    pad[sizeof STACKPAD "=" - 1 + fill] = 0;
    memcpy(env, envp, sizeof *env * n);
    env[n] = pad;
    for (size_t i = 1; i < pads; i++) env[n + i] = none;
    env[n + pads] = NULL;
    execve(exe, argv, env); /* returns only if it failed: go on as we are */
out:
    free(env);
    free(pad);
    personality((unsigned long)pers);
}
