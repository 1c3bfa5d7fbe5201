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
 * Search order (frae_models_dir): each directory of $FRAE_MODELS
 * (colon-separated), then DIR/../share/frae/models and DIR/../models for
 * the directory DIR of the library holding this code, and of the running
 * program, then FRAE_MODELDIR (PREFIX/share/frae/models at build time). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "frae_codec.h"

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

/* The k-th candidate directory (existing or not), or -1 past the last. */
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
    char base[PATH_MAX];
    int got = -1;
    if (k < 4) {
        if (k < 2) {
            Dl_info info;
            got = dladdr((void *)&frae_models_dir, &info) && info.dli_fname
                      ? parent_of(info.dli_fname, base, sizeof base)
                      : -1;
        } else {
            got = parent_of("/proc/self/exe", base, sizeof base);
        }
        if (got)
            return 0;
        const char *tail = k % 2 ? "/../models" : "/../share/frae/models";
        char joined[PATH_MAX + 32];
        snprintf(joined, sizeof joined, "%s%s", base, tail);
        char real[PATH_MAX];
        if (!realpath(joined, real) || strlen(real) >= n)
            return 0;
        strcpy(dir, real);
        return 1;
    }
    if (k == 4) {
        if (strlen(FRAE_MODELDIR) >= n)
            return 0;
        strcpy(dir, FRAE_MODELDIR);
        return 1;
    }
    return -1;
}

int frae_models_dir(int index, char *dir, size_t n)
{
    char seen[5][PATH_MAX];
    int found = 0;
    for (int k = 0; k < 64 && found < 5; k++) {
        char d[PATH_MAX];
        const int c = candidate(k, d, sizeof d);
        if (c < 0)
            break;
        if (!c || !is_dir(d))
            continue;
        int dup = 0;
        for (int j = 0; j < found && !dup; j++)
            dup = !strcmp(seen[j], d);
        if (dup)
            continue;
        if (found == index) {
            if (strlen(d) >= n)
                return -1;
            strcpy(dir, d);
            return 0;
        }
        strcpy(seen[found++], d);
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

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

int frae_models_dir_list(const char *dir, char names[][FRAE_MODEL_NAME_MAX],
                         int cap)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        if (len > 12 && len < FRAE_MODEL_NAME_MAX &&
            !strcmp(e->d_name + len - 12, ".safetensors"))
            strcpy(names[n++], e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    return n;
}

frae_model *frae_load_by_hash(uint64_t hash, const frae_config *runtime,
                              char *path, size_t path_len, char *err,
                              size_t errlen)
{
    char dir[PATH_MAX];
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        /* in name order, so that the same file wins every time */
        char names[64][FRAE_MODEL_NAME_MAX];
        const int n = frae_models_dir_list(dir, names, 64);
        for (int j = 0; j < n; j++) {
            char file[2 * PATH_MAX];
            if ((size_t)snprintf(file, sizeof file, "%s/%s", dir, names[j]) >=
                sizeof file)
                continue;
            frae_model *m = frae_load(file, runtime, NULL, 0);
            if (m && frae_model_hash(frae_model_net(m)) == hash) {
                if (path && path_len)
                    snprintf(path, path_len, "%s", file);
                return m;
            }
            frae_destroy(m);
        }
    }
    if (err && errlen)
        snprintf(err, errlen,
                 "no installed model has hash %016llx ('frae "
                 "models' lists them; give the model that made the stream)",
                 (unsigned long long)hash);
    return NULL;
}
