/* The shipped models: where they are, and loading one by name or by the
 * hash a stream names.
 *
 * The default model is found at the install prefix, not compiled in.  The
 * reasons: one copy of the weights serves the command, the C library and
 * Python (the .safetensors files in models/, which 'make models' rebuilds and a test
 * checks bit for bit); the decoder picks a model by the stream's hash, so
 * it needs the files anyway; libfrae stays the size of its code (a static
 * link does not carry 1.2 MB of weights a program may never load); and a
 * model can be retrained or added without rebuilding the library.  The
 * cost, a file to find, is met by looking where the library (or the
 * program) itself is: for PREFIX/lib/libfrae.so or PREFIX/bin/frae that
 * is PREFIX/share/frae/models, wherever PREFIX was moved; for build/frae
 * in the source tree, models/.  FRAE_MODELS overrides them all.
 *
 * Search order (frae_models_dir; one order for the command, the C library
 * and Python, which asks through its extension): each directory of
 * $FRAE_MODELS (colon-separated), alone when set; else the user's
 * ($XDG_DATA_HOME/frae/models, or ~/.local/share/frae/models), then
 * DIR/../share/frae/models and DIR/../models for the directory DIR of the
 * library holding this code, and of the running program, then the
 * directories a caller added (frae_models_add_dir: the Python module's
 * package data, frae/models, and the source tree's models/ when run from
 * it), then FRAE_MODELDIR (PREFIX/share/frae/models at build time).  Each
 * directory once, those that exist. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "frae_codec.h"
#include "io/formats.h"

#ifndef FRAE_MODELDIR
#define FRAE_MODELDIR "/usr/local/share/frae/models"
#endif

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* dirname of an absolute file path into out */
static int parent_of(const char *file, char *out, size_t n)
{
    char real[PATH_MAX];
    if (!file || !realpath(file, real))
        return -1;
    char *slash = strrchr(real, '/');
    if (!slash)
        return -1;
    *slash = 0;
    if ((size_t)snprintf(out, n, "%s", real[0] ? real : "/") >= n)
        return -1;
    return 0;
}

/* The directories frae_models_add_dir added, in order. */
static pthread_mutex_t added_lock = PTHREAD_MUTEX_INITIALIZER;
static char added[FRAE_MODELS_ADDED_MAX][PATH_MAX];
static int n_added;

int frae_models_add_dir(const char *dir)
{
    if (!dir || !*dir || strlen(dir) >= PATH_MAX)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&added_lock);
    int dup = 0;
    for (int i = 0; i < n_added && !dup; i++)
        dup = !strcmp(added[i], dir);
    if (!dup && n_added == FRAE_MODELS_ADDED_MAX)
        rc = -1;
    else if (!dup)
        strcpy(added[n_added++], dir);
    pthread_mutex_unlock(&added_lock);
    return rc;
}

/* The k-th added directory into dir: 1, or 0 past the last (or too long). */
static int added_dir(int k, char *dir, size_t n)
{
    pthread_mutex_lock(&added_lock);
    const int ok = k < n_added && strlen(added[k]) < n;
    if (ok)
        strcpy(dir, added[k]);
    pthread_mutex_unlock(&added_lock);
    return ok;
}

/* path resolved (realpath) into dir: 1, or 0 if it does not resolve */
static int resolved(const char *path, char *dir, size_t n)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || strlen(real) >= n)
        return 0;
    strcpy(dir, real);
    return 1;
}

/* The user's directory: $XDG_DATA_HOME/frae/models (an absolute
 * XDG_DATA_HOME), else $HOME/.local/share/frae/models. */
static int user_dir(char *dir, size_t n)
{
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    char joined[PATH_MAX];
    int len;
    if (xdg && xdg[0] == '/')
        len = snprintf(joined, sizeof joined, "%s/frae/models", xdg);
    else if (home && home[0] == '/')
        len = snprintf(joined, sizeof joined, "%s/.local/share/frae/models",
                       home);
    else
        return 0;
    return (size_t)len < sizeof joined && resolved(joined, dir, n);
}

/* The k-th candidate directory: 1 (into dir; it may not exist), 0 for
 * none at k (skipped), or -1 past the last. */
static int candidate(int k, char *dir, size_t n)
{
    const char *env = getenv("FRAE_MODELS");
    if (env && *env) {
        const char *p = env;
        for (int i = 0; *p; i++) {
            const char *end = strchr(p, ':');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (i == k) {
                if (len == 0 || len >= n)
                    return 0; /* empty or too long: skipped */
                memcpy(dir, p, len);
                dir[len] = 0;
                return 1;
            }
            p += len + (end != NULL);
        }
        return -1; /* FRAE_MODELS set: only its directories */
    }
    if (k == 0)
        return user_dir(dir, n);
    if (k <= 4) { /* beside the library (1, 2) and the program (3, 4) */
        char base[PATH_MAX];
        int got;
        if (k <= 2) {
            Dl_info info;
            got = dladdr((void *)&frae_models_dir, &info) && info.dli_fname
                      ? parent_of(info.dli_fname, base, sizeof base)
                      : -1;
        } else {
            got = parent_of("/proc/self/exe", base, sizeof base);
        }
        if (got)
            return 0;
        const char *tail = k % 2 ? "/../share/frae/models" : "/../models";
        char joined[PATH_MAX + 32];
        snprintf(joined, sizeof joined, "%s%s", base, tail);
        return resolved(joined, dir, n);
    }
    if (k < 5 + FRAE_MODELS_ADDED_MAX) {
        char given[PATH_MAX];
        return added_dir(k - 5, given, sizeof given) && resolved(given, dir, n);
    }
    if (k == 5 + FRAE_MODELS_ADDED_MAX)
        return resolved(FRAE_MODELDIR, dir, n);
    return -1;
}

int frae_models_dir(int index, char *dir, size_t n)
{
    int found = 0;
    char d[PATH_MAX], e[PATH_MAX];
    for (int k = 0;; k++) {
        const int c = candidate(k, d, sizeof d);
        if (c < 0)
            break;
        if (!c || !is_dir(d))
            continue;
        int dup = 0; /* an earlier candidate, the same directory */
        for (int j = 0; j < k && !dup; j++)
            dup = candidate(j, e, sizeof e) == 1 && !strcmp(e, d);
        if (dup)
            continue;
        if (found++ == index) {
            if (strlen(d) >= n)
                return -1;
            strcpy(dir, d);
            return 0;
        }
    }
    return -1;
}

static int plain_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return 0;
    return name[0] != '.';
}

frae_model *frae_load_shipped(const char *name, const frae_config *runtime,
                              char *path, size_t path_len, char *err,
                              size_t errlen)
{
    if (!name)
        name = FRAE_DEFAULT_MODEL;
    if (!plain_name(name)) {
        frae_errorf(err, errlen,
                    "'%s' is not a shipped model's name (letters, "
                    "digits, - and _)",
                    name);
        return NULL;
    }
    char dir[PATH_MAX];
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        char file[2 * PATH_MAX];
        if ((size_t)snprintf(file, sizeof file, "%s/%s.safetensors", dir,
                             name) >= sizeof file ||
            access(file, R_OK))
            continue;
        if (path && path_len)
            snprintf(path, path_len, "%s", file);
        return frae_load(file, runtime, err, errlen);
    }
    if (frae_models_dir(0, dir, sizeof dir))
        frae_errorf(err, errlen,
                    "no shipped model '%s': no models directory "
                    "(FRAE_MODELS, PREFIX/share/frae/models, or the "
                    "source tree's models/)",
                    name);
    else
        frae_errorf(err, errlen,
                    "no shipped model '%s' in the models "
                    "directories ('frae models' lists them)",
                    name);
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Every checkpoint (NAME.safetensors) of dir, however many, in name
 * order: how many, their names in *out (free_names); 0 if dir cannot be
 * read, -1 out of memory. */
static int list_all(const char *dir, char ***out)
{
    *out = NULL;
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return 0;
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = strlen(e->d_name);
        if (len <= 12 || len >= FRAE_MODEL_NAME_MAX ||
            strcmp(e->d_name + len - 12, ".safetensors"))
            continue;
        if (n == cap) {
            const int more = cap ? 2 * cap : 64;
            char **grown = cap < INT_MAX / 4
                               ? realloc(names, sizeof *names * (size_t)more)
                               : NULL;
            if (!grown)
                goto oom;
            names = grown, cap = more;
        }
        if (!(names[n] = strdup(e->d_name)))
            goto oom;
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, (size_t)n, sizeof *names, by_name);
    *out = names;
    return n;
oom:
    closedir(d);
    free_names(names, n);
    return -1;
}

int frae_models_each(frae_models_fn fn, void *ctx)
{
    char dir[PATH_MAX];
    char **used = NULL; /* the names taken, each once */
    int n_used = 0, cap = 0, visited = 0, stop = 0;
    for (int i = 0; !stop && frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        char **names;
        const int n = list_all(dir, &names);
        if (n < 0)
            goto oom;
        for (int j = 0; j < n && !stop; j++) {
            char path[2 * PATH_MAX], name[FRAE_MODEL_NAME_MAX];
            snprintf(name, sizeof name, "%s", names[j]);
            name[strlen(name) - 12] = 0; /* less .safetensors */
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[j]) >=
                sizeof path)
                continue;
            int taken = 0;
            for (int u = 0; u < n_used && !taken; u++)
                taken = !strcmp(used[u], name);
            const int first = !taken && access(path, R_OK) == 0;
            if (first) { /* the one frae_load_shipped(name) loads */
                char **grown = used;
                if (n_used == cap) {
                    const int more = cap ? 2 * cap : 64;
                    grown = cap < INT_MAX / 4
                                ? realloc(used, sizeof *used * (size_t)more)
                                : NULL;
                    if (grown)
                        used = grown, cap = more;
                }
                if (!grown || !(used[n_used] = strdup(name))) {
                    free_names(names, n);
                    goto oom;
                }
                n_used++;
            }
            visited++;
            stop = fn(dir, name, path, first, ctx) != 0;
        }
        free_names(names, n);
    }
    free_names(used, n_used);
    return visited;
oom:
    free_names(used, n_used);
    return -1;
}

/* The hash file's metadata records (frae.model_hash, which saves write),
 * its header alone read: 1 and *h; 0 if it records none (an older file),
 * or if file is no safetensors file (frae_load says why). */
static int recorded_hash(const char *file, uint64_t *h)
{
    frae_safetensors st;
    if (frae_st_open(file, &st, NULL, 0))
        return 0;
    const char *v = frae_st_meta(&st, "frae.model_hash");
    const int ok = v && strlen(v) == 16 && strspn(v, "0123456789abcdef") == 16;
    if (ok)
        *h = strtoull(v, NULL, 16);
    frae_st_close(&st);
    return ok;
}

/* The first checkpoint of dir, in name order, whose frae_model_hash is
 * hash: 1 with its path, and (out not NULL) the model loaded as
 * frae_load does; 0 if none; -1 out of memory.  A file whose metadata
 * records another hash is passed over unread; one that records this hash
 * is loaded and its weights hashed, so that a wrong record never picks a
 * model; one that records none (an older file) is loaded and hashed. */
static int find_in_dir(const char *dir, uint64_t hash,
                       const frae_config *runtime, char *path, size_t path_len,
                       frae_model **out)
{
    char **names;
    const int n = list_all(dir, &names);
    int found = n < 0 ? -1 : 0;
    for (int j = 0; j < n && !found; j++) {
        char file[2 * PATH_MAX];
        uint64_t recorded;
        if ((size_t)snprintf(file, sizeof file, "%s/%s", dir, names[j]) >=
                sizeof file ||
            (recorded_hash(file, &recorded) && recorded != hash))
            continue;
        frae_model *m = frae_load(file, runtime, NULL, 0);
        if (m && frae_model_hash(frae_model_net(m)) == hash) {
            found = 1;
            if (path && path_len)
                snprintf(path, path_len, "%s", file);
            if (out)
                *out = m, m = NULL;
        }
        frae_destroy(m);
    }
    free_names(names, n);
    return found;
}

int frae_models_dir_find(const char *dir, uint64_t hash, char *path,
                         size_t path_len)
{
    frae_config rt; /* the check's load: for inference, one sequence */
    frae_config_default(&rt);
    rt.training = 0;
    rt.batch = 1;
    return dir ? find_in_dir(dir, hash, &rt, path, path_len, NULL) : 0;
}

frae_model *frae_load_by_hash(uint64_t hash, const frae_config *runtime,
                              char *path, size_t path_len, char *err,
                              size_t errlen)
{
    char dir[PATH_MAX];
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        frae_model *m = NULL;
        const int found = find_in_dir(dir, hash, runtime, path, path_len, &m);
        if (found > 0)
            return m;
        if (found < 0) {
            frae_errorf(err, errlen, "%s: out of memory listing its models",
                        dir);
            return NULL;
        }
    }
    frae_errorf(err, errlen,
                "no installed model has hash %016llx ('frae "
                "models' lists them; give the model that made the stream)",
                (unsigned long long)hash);
    return NULL;
}
