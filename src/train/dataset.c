/* Datasets for training runs (frae_train.h): sequences of frames from
 * sources, each read a span at a time as float32 so that only the windows
 * in flight are ever copied out of files (mapped .npy files, audio
 * features on disk) or the caller's arrays.  Nothing here keeps a copy of
 * the data but the built-in frames, which exist nowhere else. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "frae_train.h"
#include "io/formats.h"

typedef struct {
    frae_source src;
    char *name; /* the dataset's copy of src.name */
} ds_source;

typedef struct {
    int src;    /* index into sources */
    long index; /* sequence within it */
} ds_seq;

struct frae_dataset {
    int dim;
    ds_source *sources;
    int n_sources, cap_sources;
    ds_seq *seqs;
    long n_seqs, cap_seqs;
    long total_frames;
    int has_audio;
};

frae_dataset *frae_dataset_create(int dim)
{
    frae_dataset *ds = calloc(1, sizeof *ds);
    if (ds)
        ds->dim = dim;
    return ds;
}

void frae_dataset_destroy(frae_dataset *ds)
{
    if (!ds)
        return;
    for (int i = 0; i < ds->n_sources; i++) {
        if (ds->sources[i].src.close)
            ds->sources[i].src.close(ds->sources[i].src.ctx);
        free(ds->sources[i].name);
    }
    free(ds->sources);
    free(ds->seqs);
    free(ds);
}

static int out_of_memory(const frae_source *src, char *err, size_t errlen)
{
    if (src->close)
        src->close(src->ctx);
    frae_errorf(err, errlen, "out of memory");
    return FRAE_RUN_FAILED;
}

int frae_dataset_add_source(frae_dataset *ds, const frae_source *src, char *err,
                            size_t errlen)
{
    const char *name = src->name ? src->name : "data";
    if (ds->dim == 0)
        ds->dim = src->dim;
    if (src->dim != ds->dim) {
        frae_errorf(err, errlen,
                    "%s: frame dimension %d does not match %d (the model's, "
                    "or the first file's)",
                    name, src->dim, ds->dim);
        if (src->close)
            src->close(src->ctx);
        return FRAE_RUN_BAD_INPUT;
    }
    if (src->sequences > INT32_MAX - ds->n_seqs) {
        frae_errorf(err, errlen, "%s: more than %d sequences in all", name,
                    INT32_MAX);
        if (src->close)
            src->close(src->ctx);
        return FRAE_RUN_BAD_INPUT;
    }
    if (ds->n_sources == ds->cap_sources) {
        int cap = ds->cap_sources ? 2 * ds->cap_sources : 8;
        ds_source *p = realloc(ds->sources, sizeof *p * (size_t)cap);
        if (!p)
            return out_of_memory(src, err, errlen);
        ds->sources = p, ds->cap_sources = cap;
    }
    if (ds->n_seqs + src->sequences > ds->cap_seqs) {
        long cap = ds->cap_seqs ? 2 * ds->cap_seqs : 64;
        while (cap < ds->n_seqs + src->sequences)
            cap *= 2;
        ds_seq *p = realloc(ds->seqs, sizeof *p * (size_t)cap);
        if (!p)
            return out_of_memory(src, err, errlen);
        ds->seqs = p, ds->cap_seqs = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return out_of_memory(src, err, errlen);
    const int at = ds->n_sources++;
    ds->sources[at] = (ds_source){*src, copy};
    ds->sources[at].src.name = copy;
    for (long s = 0; s < src->sequences; s++)
        ds->seqs[ds->n_seqs++] = (ds_seq){at, s};
    ds->total_frames += src->sequences * src->frames;
    ds->has_audio |= src->audio != 0;
    return 0;
}

/* ---- .npy files (and audio features kept as float32 on disk) ---------- */

typedef struct {
    frae_npy a;
    char *name;
} npy_source;

static int npy_read(void *ctx, long s, long t0, long nt, float *dst, char *err,
                    size_t errlen)
{
    npy_source *n = ctx;
    if (frae_npy_read(&n->a, s, t0, nt, dst))
        return frae_errorf(err, errlen, "%s: cannot read its features back: %s",
                           n->name, strerror(errno));
    return 0;
}

static int npy_check(void *ctx, long s0, long s1, char *err, size_t errlen)
{
    npy_source *n = ctx;
    return frae_npy_check_finite_seqs(&n->a, n->name, s0, s1, err, errlen);
}

static void npy_close(void *ctx)
{
    npy_source *n = ctx;
    frae_npy_close(&n->a);
    free(n->name);
    free(n);
}

int frae_source_from_npy(frae_npy *a, const char *name, int audio,
                         frae_source *out, char *err, size_t errlen)
{
    npy_source *n = malloc(sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n), free(copy);
        frae_npy_close(a);
        frae_errorf(err, errlen, "out of memory");
        return FRAE_RUN_FAILED;
    }
    n->a = *a, n->name = copy;
    /* audio features were checked as they were made */
    *out = (frae_source){copy,
                         a->n,
                         a->t,
                         (int)a->d,
                         audio,
                         npy_read,
                         audio ? NULL : npy_check,
                         npy_close,
                         n};
    return 0;
}

int frae_dataset_add_npy(frae_dataset *ds, const char *path, char *err,
                         size_t errlen)
{
    frae_npy a;
    if (frae_npy_open(path, &a, err, errlen))
        return FRAE_RUN_BAD_INPUT;
    if (frae_npy_frames(&a, path, err, errlen)) {
        frae_npy_close(&a);
        return FRAE_RUN_BAD_INPUT;
    }
    frae_source src;
    int rc = frae_source_from_npy(&a, path, 0, &src, err, errlen);
    return rc ? rc : frae_dataset_add_source(ds, &src, err, errlen);
}

/* ---- arrays in memory ----------------------------------------------- */

typedef struct {
    const float *x;
    float *owned; /* the built-in data: freed with the source */
    const char *name;
    long sequences, frames;
    int dim;
} array_source;

static int array_read(void *ctx, long s, long t0, long nt, float *dst,
                      char *err, size_t errlen)
{
    (void)err, (void)errlen;
    const array_source *a = ctx;
    memcpy(dst, a->x + ((size_t)s * a->frames + (size_t)t0) * a->dim,
           sizeof(float) * (size_t)nt * a->dim);
    return 0;
}

static int array_check(void *ctx, long s0, long s1, char *err, size_t errlen)
{
    const array_source *a = ctx;
    const size_t per = (size_t)a->frames * a->dim;
    for (size_t i = (size_t)s0 * per; i < (size_t)s1 * per; i++)
        if (!isfinite(a->x[i]))
            return frae_errorf(err, errlen, "%s: %s at [%ld, %ld, %ld]",
                               a->name, isnan(a->x[i]) ? "NaN" : "Inf",
                               (long)(i / per), (long)(i % per / a->dim),
                               (long)(i % a->dim));
    return 0;
}

static void array_close(void *ctx)
{
    array_source *a = ctx;
    free(a->owned);
    free(a);
}

static int add_array(frae_dataset *ds, const char *name, const float *x,
                     float *owned, long sequences, long frames, int dim,
                     char *err, size_t errlen)
{
    array_source *a = malloc(sizeof *a);
    if (!a) {
        free(owned);
        frae_errorf(err, errlen, "out of memory");
        return FRAE_RUN_FAILED;
    }
    *a = (array_source){x, owned, name, sequences, frames, dim};
    frae_source src = {name,       sequences,   frames,      dim, 0,
                       array_read, array_check, array_close, a};
    int rc = frae_dataset_add_source(ds, &src, err, errlen);
    if (!rc) /* messages name the dataset's copy */
        a->name = ds->sources[ds->n_sources - 1].name;
    return rc;
}

int frae_dataset_add_array(frae_dataset *ds, const char *name, const float *x,
                           long sequences, long frames, int dim, char *err,
                           size_t errlen)
{
    if (!x || sequences < 1 || frames < 1 || dim < 1)
        return frae_errorf(err, errlen, "%s: no frames", name ? name : "data"),
               FRAE_RUN_BAD_INPUT;
    return add_array(ds, name ? name : "data", x, NULL, sequences, frames, dim,
                     err, errlen);
}

int frae_dataset_add_synthetic(frae_dataset *ds, int sequences, int frames,
                               uint64_t seed, char *err, size_t errlen)
{
    const int dim = ds->dim;
    size_t bytes;
    if (sequences < 1 || frames < 1 || dim < 1 ||
        __builtin_mul_overflow((size_t)sequences * frames, (size_t)dim * 4,
                               &bytes) ||
        bytes > ((size_t)1 << 36)) {
        frae_errorf(err, errlen,
                    "built-in dataset of %d x %d x %d floats is too large",
                    sequences, frames, dim);
        return FRAE_RUN_BAD_INPUT;
    }
    float *x = malloc(bytes);
    if (!x) {
        frae_errorf(err, errlen, "out of memory for the built-in data");
        return FRAE_RUN_FAILED;
    }
    frae_synth_sequences(x, sequences, frames, dim, seed);
    return add_array(ds, "built-in data", x, x, sequences, frames, dim, err,
                     errlen);
}

/* ---- reading --------------------------------------------------------- */

long frae_dataset_sequences(const frae_dataset *ds) { return ds->n_seqs; }
long frae_dataset_total_frames(const frae_dataset *ds)
{
    return ds->total_frames;
}
int frae_dataset_dim(const frae_dataset *ds) { return ds->dim; }
int frae_dataset_has_audio(const frae_dataset *ds) { return ds->has_audio; }

long frae_dataset_length(const frae_dataset *ds, long s)
{
    return ds->sources[ds->seqs[s].src].src.frames;
}

const char *frae_dataset_origin(const frae_dataset *ds, long s, long *index)
{
    if (index)
        *index = ds->seqs[s].index;
    return ds->sources[ds->seqs[s].src].name;
}

int frae_dataset_read(const frae_dataset *ds, long s, long t0, long nt,
                      float *dst, char *err, size_t errlen)
{
    const ds_seq *q = &ds->seqs[s];
    const frae_source *src = &ds->sources[q->src].src;
    return src->read(src->ctx, q->index, t0, nt, dst, err, errlen)
               ? FRAE_RUN_FAILED
               : 0;
}

int frae_dataset_check(const frae_dataset *ds, long s0, long s1, char *err,
                       size_t errlen)
{
    /* source by source: the sequences of each in one call */
    for (long q = s0; q < s1;) {
        const ds_seq *sq = &ds->seqs[q];
        const frae_source *src = &ds->sources[sq->src].src;
        long end = src->sequences - sq->index < s1 - q ? src->sequences
                                                       : sq->index + (s1 - q);
        if (src->check && src->check(src->ctx, sq->index, end, err, errlen))
            return FRAE_RUN_BAD_INPUT;
        q += end - sq->index;
    }
    return 0;
}

long frae_share(long n, int rank, int size, long *first)
{
    long a = n * rank / size, b = n * (rank + 1) / size;
    if (first)
        *first = a;
    return b - a;
}

/* ---- paths ------------------------------------------------------------ */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void frae_free_paths(char **files, int count)
{
    for (int k = 0; files && k < count; k++)
        free(files[k]);
    free(files);
}

int frae_expand_paths(const char *const *paths, int n, char ***out, int *n_out,
                      char *err, size_t errlen)
{
    int cap = n + 16, count = 0;
    char **list = malloc(sizeof *list * (size_t)cap);
    if (!list)
        return frae_errorf(err, errlen, "out of memory"), FRAE_RUN_FAILED;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (stat(paths[i], &sb)) {
            frae_errorf(err, errlen, "%s: cannot open: %s", paths[i],
                        strerror(errno));
            frae_free_paths(list, count);
            return FRAE_RUN_BAD_INPUT;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (!(list[count] = strdup(paths[i]))) {
                frae_free_paths(list, count);
                return frae_errorf(err, errlen, "out of memory"),
                       FRAE_RUN_FAILED;
            }
            count++;
            continue;
        }
        DIR *d = opendir(paths[i]);
        if (!d) {
            frae_errorf(err, errlen, "%s: cannot read directory: %s", paths[i],
                        strerror(errno));
            frae_free_paths(list, count);
            return FRAE_RUN_BAD_INPUT;
        }
        int first = count;
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 5 || (strcmp(e->d_name + len - 4, ".npy") &&
                            strcmp(e->d_name + len - 4, ".wav") &&
                            strcmp(e->d_name + len - 5, ".flac")))
                continue;
            if (count + 1 >= cap) {
                cap *= 2;
                char **nl = realloc(list, sizeof *list * (size_t)cap);
                if (!nl) {
                    closedir(d);
                    frae_free_paths(list, count);
                    return frae_errorf(err, errlen, "out of memory"),
                           FRAE_RUN_FAILED;
                }
                list = nl;
            }
            size_t plen = strlen(paths[i]) + len + 2;
            if (!(list[count] = malloc(plen))) {
                closedir(d);
                frae_free_paths(list, count);
                return frae_errorf(err, errlen, "out of memory"),
                       FRAE_RUN_FAILED;
            }
            snprintf(list[count++], plen, "%s/%s", paths[i], e->d_name);
        }
        closedir(d);
        if (count == first) {
            frae_errorf(err, errlen,
                        "%s: directory has no .npy, .wav or .flac files",
                        paths[i]);
            frae_free_paths(list, count);
            return FRAE_RUN_BAD_INPUT;
        }
        qsort(list + first, (size_t)(count - first), sizeof *list, name_cmp);
    }
    *out = list;
    *n_out = count;
    return 0;
}
