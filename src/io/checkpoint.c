/* Checkpoints: saving, opening, the config from the metadata, restoring.
 * Conversion and imports from PyTorch and Keras are import.c's.
 *
 * A frae checkpoint is a safetensors file whose tensors are the PyTorch
 * state_dict of tools/frae_torch.py ("enc.0.weight" [out, in], ...), so
 * the weights open in PyTorch and NumPy without frae.  The model config,
 * the format version and a checksum of the tensor data are in
 * __metadata__; the Adam moments ("optimizer.m.<name>", "optimizer.v.
 * <name>", same layouts) and the step count are there when saved with the
 * optimizer; callers add their own metadata and int32 arrays (the CLI's
 * training state).
 * Kept as one file: the config's keys are written and read back here, side
 * by side, so that the two cannot drift apart. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/frae_internal.h"
#include "io/checkpoint_internal.h"
#include "io/formats.h"

#define FORMAT_NAME "frae-model"
/* frae.pitch: the 4-bit quantizer (with a prior its steps range-coded
 * from even start counts), or the coder made for range coding */
#define PITCH_CODER "f0-voicing-4bit"
#define PITCH_CODER_RANGED "f0-voicing-ranged"
#define PITCH_CODER_ENVELOPE "f0-voicing-envelope"
/* by frae_config.pitch_ranged (FRAE_PITCH_CODER_*) */
static const char *const pitch_coder_names[] = {PITCH_CODER, PITCH_CODER_RANGED,
                                                PITCH_CODER_ENVELOPE};
/* frae.targets: trained on (input, target) pairs, the loss on the target */
#define TARGETS_NAME "paired"
/* frae.prior_ar: unit u's logits also see the frame's codes before u */
#define PRIOR_AR_NAME "within-frame"
#define NORMALIZE_NAME "per-band" /* frae.normalize: z-score each band */
/* 2: the checksum covers the header fields as well as the tensor data.
 * Version 1 files (data only) are still read. */
#define FORMAT_VERSION 2

/* ---- saving ------------------------------------------------------------ */

/* The config's metadata, as strings exact for floats (%.9g), into keys
 * and vptr (the values in vals, or the normalization lists): how many. */
enum { META_MAX = 64 };
static int config_meta(const frae_model *m, const frae_config *c, int with_opt,
                       char *const norm_list[2], char vals[META_MAX][128],
                       const char **keys, const char **vptr)
{
    int nm = 0;
#define META(key, ...)                                                         \
    do {                                                                       \
        keys[nm] = key;                                                        \
        snprintf(vals[nm], sizeof vals[nm], __VA_ARGS__);                      \
        vptr[nm] = vals[nm];                                                   \
        nm++;                                                                  \
    } while (0)
    META("frae.format", "%s", FORMAT_NAME);
    META("frae.format_version", "%d", FORMAT_VERSION);
    if (c->family != FRAE_FAMILY_DENSE) /* absent: dense, as before */
        META("frae.family", "%s", frae_family_names[c->family]);
    META("frae.frame_dim", "%d", c->frame_dim);
    META("frae.history", "%d", c->history);
    frae_widths_name(c->enc_hidden, c->n_enc_hidden, vals[nm], sizeof vals[nm]);
    keys[nm] = "frae.enc_hidden", vptr[nm] = vals[nm], nm++;
    META("frae.latent_dim", "%d", c->latent_dim);
    frae_widths_name(c->dec_hidden, c->n_dec_hidden, vals[nm], sizeof vals[nm]);
    keys[nm] = "frae.dec_hidden", vptr[nm] = vals[nm], nm++;
    META("frae.activation", "%s", frae_activation_names[c->activation]);
    frae_quantizer_name(c, vals[nm], sizeof vals[nm]);
    keys[nm] = "frae.quantizer", vptr[nm] = vals[nm], nm++;
    META("frae.seed", "%llu", (unsigned long long)c->seed);
    META("frae.weights", "%s", frae_weights_names[c->weights]);
    if (c->pitch) /* absent: the envelope alone */
        META("frae.pitch", "%s", pitch_coder_names[c->pitch_ranged]);
    if (c->prior_hidden > 0) /* absent: fixed-rate codes */
        META("frae.prior_hidden", "%d", c->prior_hidden);
    if (c->prior_ar) /* absent: the units coded independently */
        META("frae.prior_ar", "%s", PRIOR_AR_NAME);
    if (c->lookahead) /* absent: the encoder sees its frame alone */
        META("frae.lookahead", "%d", c->lookahead);
    if (c->lookahead_packet) /* absent: the frames ahead run on */
        META("frae.lookahead_packet", "%d", c->lookahead_packet);
    if (c->targets) /* absent: trained to rebuild its inputs */
        META("frae.targets", "%s", TARGETS_NAME);
    if (c->normalize) { /* absent: no normalization */
        META("frae.normalize", "%s", NORMALIZE_NAME);
        keys[nm] = "frae.norm_mean", vptr[nm] = norm_list[0], nm++;
        keys[nm] = "frae.norm_std", vptr[nm] = norm_list[1], nm++;
    }
    META("frae.feedback", "%s", frae_feedback_names[c->feedback]);
    META("frae.window", "%d", c->window);
    META("frae.batch", "%d", c->batch);
    META("frae.learning_rate", "%.9g", (double)c->learning_rate);
    META("frae.beta1", "%.9g", (double)c->beta1);
    META("frae.beta2", "%.9g", (double)c->beta2);
    META("frae.epsilon", "%.9g", (double)c->epsilon);
    META("frae.clip_norm", "%.9g", (double)c->clip_norm);
    if (c->rate_lambda > 0.0f) /* absent: distortion alone */
        META("frae.rate_lambda", "%.9g", (double)c->rate_lambda);
    if (c->level_loss > 0.0f) { /* absent: no level term */
        META("frae.level_loss", "%.9g", (double)c->level_loss);
        META("frae.level_scale", "%.9g", (double)c->level_scale);
    }
    if (c->emphasis > 0.0f) { /* absent: every value weighs 1 */
        META("frae.emphasis", "%.9g", (double)c->emphasis);
        META("frae.emphasis_from", "%d", c->emphasis_from);
        META("frae.emphasis_to", "%d", c->emphasis_to);
    }
    if (c->lr_warmup || c->lr_decay_steps) { /* absent: a constant rate */
        META("frae.lr_warmup", "%d", c->lr_warmup);
        META("frae.lr_decay_steps", "%d", c->lr_decay_steps);
        META("frae.lr_floor", "%.9g", (double)c->lr_floor);
    }
    if (c->erasure > 0.0f) { /* absent: no erasure training */
        META("frae.erasure", "%.9g", (double)c->erasure);
        META("frae.erasure_frames", "%d", c->erasure_frames);
    }
    META("frae.param_count", "%zu", m->net.n_params);
    META("frae.bits_per_frame", "%g", frae_bits_per_frame(m));
    /* what a stream of the model names: a models directory is searched by
     * it without hashing every file's weights (older files lack it) */
    META("frae.model_hash", "%016llx",
         (unsigned long long)frae_model_hash(&m->net));
    if (with_opt)
        META("frae.adam_step", "%ld", m->tr.adam_step);
#undef META
    return nm;
}

/* What the reader refuses, the writer does not write: a copy of the
 * parameters (the weights, Adam's moments) holding NaN or Inf.  0, or
 * -1 after saying which. */
static int check_finite_copy(const float *x, size_t n, int cpy,
                             const char *path, char *err, size_t errlen)
{
    static const char *const what[3] = {"the weights", "Adam's first moments",
                                        "Adam's second moments"};
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return frae_errorf(err, errlen,
                               "%s: not saved: %s hold %s (a checkpoint "
                               "holds finite values only)",
                               path, what[cpy], isnan(x[i]) ? "NaN" : "Inf");
    return 0;
}

/* Saves m; c gives the settings recorded in the metadata (m's own, or the
 * saved ones of a model converted at a smaller run-time size).  Refuses a
 * value the reader would refuse (NaN or Inf, normalization statistics
 * that frae_norm_stat_ok refuses: frae_set_normalization let none in). */
int frae_checkpoint_save_as(const frae_model *m, const frae_config *c,
                            const char *path, int with_optimizer,
                            const frae_meta *meta, int n_meta,
                            const frae_i32_array *extra, int n_extra, char *err,
                            size_t errlen)
{
    const int with_opt = with_optimizer && m->tr.adam_m;
    const int copies = with_opt ? 3 : 1;
    frae_tensor_entry ent[FRAE_MAX_TENSORS];
    const int n_ent = frae_tensor_entries(&m->net.cfg, ent);
    const int nt = n_ent * copies + n_extra;
    const int bf16 = c->weights == FRAE_WEIGHTS_BF16;
    float *buf = malloc(sizeof(float) * m->net.n_params * (size_t)copies);
    st_out_tensor *t = calloc((size_t)nt, sizeof *t);
    char(*names)[96] = calloc((size_t)nt, sizeof *names);
    if (!buf || !t || !names) {
        free(buf), free(t), free(names);
        return frae_errorf(err, errlen, "%s: out of memory saving", path);
    }
    static const char *const prefix[3] = {"", "optimizer.m.", "optimizer.v."};
    const float *src[3] = {NULL, m->tr.adam_m,
                           m->tr.adam_v}; /* NULL: the params */
    /* the normalization statistics, D floats each as %.9g lists */
    char *norm_list[2] = {NULL, NULL};
    if (c->normalize) {
        const size_t cap = (size_t)c->frame_dim * 18 + 1;
        for (int i = 0; i < 2; i++) {
            const float *v = i ? m->norm_std : m->norm_mean;
            char *s = norm_list[i] = malloc(cap);
            if (!s)
                break;
            size_t at = 0;
            for (int d = 0; d < c->frame_dim; d++)
                at += (size_t)snprintf(s + at, cap - at, d ? ",%.9g" : "%.9g",
                                       (double)v[d]);
        }
        if (!norm_list[0] || !norm_list[1]) {
            free(buf), free(t), free(names);
            free(norm_list[0]), free(norm_list[1]);
            return frae_errorf(err, errlen, "%s: out of memory saving", path);
        }
    }
    int k = 0;
    for (int cpy = 0; cpy < copies; cpy++) {
        float *dst = buf + m->net.n_params * (size_t)cpy;
        frae_export_params(&m->net, src[cpy], dst, 1); /* in ent's order */
        if (check_finite_copy(dst, m->net.n_params, cpy, path, err, errlen)) {
            free(buf), free(t), free(names);
            free(norm_list[0]), free(norm_list[1]);
            return -1;
        }
        for (int e = 0; e < n_ent; e++, k++) {
            const frae_layer *ly = &m->net.layer[ent[e].mat];
            snprintf(names[k], sizeof names[k], "%s%s", prefix[cpy],
                     ent[e].name);
            if (ent[e].bias) {
                t[k] = (st_out_tensor){names[k], ST_F32, 1, {ly->out}, dst};
                dst += ly->out;
                continue;
            }
            const size_t nw = (size_t)ly->in * ly->out;
            if (bf16 && cpy == 0) {
                /* exact: the weights are bf16 values; packed in place,
                 * the front half of this tensor's f32 values */
                for (size_t i = 0; i < nw; i++) {
                    uint16_t h = frae_f32_to_bf16(dst[i]);
                    memcpy((char *)dst + 2 * i, &h, 2);
                }
            }
            t[k] = (st_out_tensor){names[k],
                                   bf16 && cpy == 0 ? ST_BF16 : ST_F32,
                                   2,
                                   {ly->out, ly->in},
                                   dst};
            dst += nw;
        }
    }
    for (int i = 0; i < n_extra; i++, k++)
        t[k] = (st_out_tensor){
            extra[i].name, ST_I32, 1, {extra[i].count}, extra[i].data};

    /* metadata: the config as strings, exact for floats (%.9g) */
    char vals[META_MAX][128];
    const char *keys[META_MAX + 64], *vptr[META_MAX + 64];
    const int nm = config_meta(m, c, with_opt, norm_list, vals, keys, vptr);
    int total = nm;
    for (int i = 0; i < n_meta && total < META_MAX + 64; i++) {
        if (!strncmp(meta[i].key, "frae.", 5)) {
            free(buf), free(t), free(names);
            free(norm_list[0]), free(norm_list[1]);
            return frae_errorf(
                err, errlen, "metadata key '%s': the frae. prefix is reserved",
                meta[i].key);
        }
        keys[total] = meta[i].key;
        vptr[total++] = meta[i].value;
    }
    int rc = frae_st_write(path, t, nt, keys, vptr, total, err, errlen);
    free(buf), free(t), free(names);
    free(norm_list[0]), free(norm_list[1]);
    return rc;
}

int frae_save(const frae_model *m, const char *path, int with_optimizer,
              const frae_meta *meta, int n_meta, const frae_i32_array *extra,
              int n_extra, char *err, size_t errlen)
{
    return frae_checkpoint_save_as(m, &m->net.cfg, path, with_optimizer, meta,
                                   n_meta, extra, n_extra, err, errlen);
}

/* ---- opening ----------------------------------------------------------- */

/* A whole decimal in lo..hi, nothing around it. */
static int parse_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *v == ' ' || *end || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* Opens a file (buf NULL) or a buffer the caller keeps alive. */
static frae_checkpoint *checkpoint_open(const void *buf, size_t size,
                                        const char *path, char *err,
                                        size_t errlen)
{
    frae_checkpoint *ck = calloc(1, sizeof *ck);
    if (!ck) {
        frae_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(ck->path, sizeof ck->path, "%s", path);
    if (buf ? frae_st_parse(buf, size, path, &ck->st, err, errlen)
            : frae_st_open(path, &ck->st, err, errlen)) {
        free(ck);
        return NULL;
    }
    const char *fmt = frae_st_meta(&ck->st, "frae.format");
    const char *ver = frae_st_meta(&ck->st, "frae.format_version");
    const char *sum = frae_st_meta(&ck->st, "frae.checksum");
    if (!fmt || strcmp(fmt, FORMAT_NAME)) {
        frae_errorf(err, errlen,
                    "%s: a safetensors file, but not a frae checkpoint (no "
                    "frae.format metadata); to load foreign weights use "
                    "'frae import'",
                    path);
        goto fail;
    }
    long version;
    if (!ver || parse_long(ver, 1, FORMAT_VERSION, &version)) {
        frae_errorf(
            err, errlen,
            "%s: checkpoint format version %s; this frae reads versions "
            "1 to %d",
            path, ver ? ver : "(missing)", FORMAT_VERSION);
        goto fail;
    }
    char want[40];
    snprintf(want, sizeof want, "fnv1a64:%016llx",
             (unsigned long long)frae_st_checksum(&ck->st, version >= 2));
    if (!FRAE_FUZZING && (!sum || strcmp(sum, want))) {
        frae_errorf(
            err, errlen,
            "%s: corrupted or edited: the checksum of its %s is %s, the "
            "header says %s",
            path, version >= 2 ? "header and tensor data" : "tensor data", want,
            sum ? sum : "(missing)");
        goto fail;
    }
    return ck;
fail:
    frae_st_close(&ck->st);
    free(ck);
    return NULL;
}

frae_checkpoint *frae_checkpoint_open(const char *path, char *err,
                                      size_t errlen)
{
    return checkpoint_open(NULL, 0, path, err, errlen);
}

frae_checkpoint *frae_checkpoint_parse(const void *buf, size_t size,
                                       const char *name, char *err,
                                       size_t errlen)
{
    return checkpoint_open(buf, size, name, err, errlen);
}

void frae_checkpoint_close(frae_checkpoint *ck)
{
    if (!ck)
        return;
    frae_st_close(&ck->st);
    free(ck);
}

const char *frae_checkpoint_meta(const frae_checkpoint *ck, const char *key)
{
    return frae_st_meta(&ck->st, key);
}

long frae_checkpoint_i32(const frae_checkpoint *ck, const char *name,
                         int32_t *dst, long cap)
{
    const st_tensor *t = frae_st_find(&ck->st, name);
    if (!t || t->dtype != ST_I32 || t->ndim != 1)
        return -1;
    long n = (long)t->shape[0];
    if (dst) {
        if (n > cap)
            return -1;
        memcpy(dst, ck->st.data + t->begin, sizeof(int32_t) * (size_t)n);
    }
    return n;
}

int frae_checkpoint_has_optimizer(const frae_checkpoint *ck)
{
    return frae_st_meta(&ck->st, "frae.adam_step") != NULL;
}

/* ---- config from metadata ------------------------------------------------ */

static int meta_long(const frae_checkpoint *ck, const char *key, long lo,
                     long hi, long *out, char *err, size_t errlen)
{
    const char *v = frae_st_meta(&ck->st, key);
    if (!v)
        return frae_errorf(err, errlen, "%s: metadata '%s' missing", ck->path,
                           key);
    if (parse_long(v, lo, hi, out))
        return frae_errorf(err, errlen,
                           "%s: metadata '%s' = '%s' is not an integer in "
                           "%ld..%ld",
                           ck->path, key, v, lo, hi);
    return 0;
}

/* meta_long into an int setting (lo..hi within an int's); absent, an
 * optional one (required 0) keeps its default. */
static int meta_int(const frae_checkpoint *ck, const char *key, int required,
                    long lo, long hi, int *out, char *err, size_t errlen)
{
    long v;
    if (!required && !frae_st_meta(&ck->st, key))
        return 0;
    if (meta_long(ck, key, lo, hi, &v, err, errlen))
        return -1;
    *out = (int)v;
    return 0;
}

static int meta_float(const frae_checkpoint *ck, const char *key, float *out,
                      char *err, size_t errlen)
{
    const char *v = frae_st_meta(&ck->st, key);
    if (!v)
        return frae_errorf(err, errlen, "%s: metadata '%s' missing", ck->path,
                           key);
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end)
        return frae_errorf(err, errlen, "%s: metadata '%s' = '%s' is invalid",
                           ck->path, key, v);
    *out = (float)x;
    return 0;
}

/* An optional feature named by its one known value: *on = present. */
static int meta_option(const frae_checkpoint *ck, const char *key,
                       const char *known, const char *what, int *on, char *err,
                       size_t errlen)
{
    const char *v = frae_st_meta(&ck->st, key);
    if (v && strcmp(v, known))
        return frae_errorf(err, errlen,
                           "%s: metadata '%s' = '%s' is not a %s this frae "
                           "knows ('%s')",
                           ck->path, key, v, what, known);
    *on = v != NULL;
    return 0;
}

/* "frae.family": dense when absent (files from before the GRU family). */
static int meta_family(const frae_checkpoint *ck, frae_family *out, char *err,
                       size_t errlen)
{
    const char *fam = frae_st_meta(&ck->st, "frae.family");
    int i = fam ? frae_name_index(frae_family_names,
                                  FRAE_NAME_COUNT(frae_family_names), fam)
                : FRAE_FAMILY_DENSE;
    if (i < 0)
        return frae_errorf(err, errlen,
                           "%s: metadata 'frae.family' = '%s' is invalid "
                           "(dense or gru)",
                           ck->path, fam);
    *out = (frae_family)i;
    return 0;
}

/* Finds "<prefix><tensor>" as a float tensor of the shape the config
 * gives; an error names it and that shape. */
static const st_tensor *find_entry_tensor(const frae_safetensors *st,
                                          const frae_config *c,
                                          const frae_tensor_entry *e,
                                          const char *prefix, const char *path,
                                          char *err, size_t errlen)
{
    int in, out;
    char name[96];
    snprintf(name, sizeof name, "%s%s", prefix, e->name);
    if (frae_layer_shape(c, e->mat, &in, &out)) {
        frae_errorf(err, errlen, "%s: layer '%s' is too wide", path, name);
        return NULL;
    }
    const st_tensor *t = frae_st_find(st, name);
    if (!t) {
        frae_errorf(err, errlen, "%s: tensor '%s' missing", path, name);
        return NULL;
    }
    int ok =
        t->dtype <= ST_BF16 &&
        (e->bias ? t->ndim == 1 && t->shape[0] == out
                 : t->ndim == 2 && t->shape[0] == out && t->shape[1] == in);
    if (!ok) {
        if (e->bias)
            frae_errorf(err, errlen,
                        "%s: tensor '%s' should be a float [%d] vector", path,
                        name, out);
        else
            frae_errorf(err, errlen,
                        "%s: tensor '%s' should be a float [%d, %d] matrix",
                        path, name, out, in);
        return NULL;
    }
    return t;
}

static int check_tensors(const frae_checkpoint *ck, const frae_config *c,
                         const char *prefix, char *err, size_t errlen)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(c, e);
    for (int k = 0; k < n; k++)
        if (!find_entry_tensor(&ck->st, c, &e[k], prefix, ck->path, err,
                               errlen))
            return -1;
    return 0;
}

int frae_checkpoint_config(const frae_checkpoint *ck, frae_config *cfg,
                           char *err, size_t errlen)
{
    frae_config c;
    frae_config_default(&c);
    long v;
    if (meta_int(ck, "frae.frame_dim", 1, 1, INT_MAX, &c.frame_dim, err,
                 errlen) ||
        meta_int(ck, "frae.history", 1, 0, INT_MAX, &c.history, err, errlen) ||
        meta_int(ck, "frae.latent_dim", 1, 1, INT_MAX, &c.latent_dim, err,
                 errlen))
        return -1;
    const char *enc = frae_st_meta(&ck->st, "frae.enc_hidden");
    const char *dec = frae_st_meta(&ck->st, "frae.dec_hidden");
    if (!enc || !dec || frae_parse_widths(enc, &c.n_enc_hidden, c.enc_hidden) ||
        frae_parse_widths(dec, &c.n_dec_hidden, c.dec_hidden))
        return frae_errorf(err, errlen, "%s: bad hidden widths in metadata",
                           ck->path);
    if (meta_family(ck, &c.family, err, errlen))
        return -1;
    const char *act = frae_st_meta(&ck->st, "frae.activation");
    const char *q = frae_st_meta(&ck->st, "frae.quantizer");
    const char *fb = frae_st_meta(&ck->st, "frae.feedback");
    const char *wf = frae_st_meta(&ck->st, "frae.weights");
    int a_i = frae_name_index(frae_activation_names,
                              FRAE_NAME_COUNT(frae_activation_names), act);
    int f_i = frae_name_index(frae_feedback_names,
                              FRAE_NAME_COUNT(frae_feedback_names), fb);
    int w_i = wf ? frae_name_index(frae_weights_names,
                                   FRAE_NAME_COUNT(frae_weights_names), wf)
                 : FRAE_WEIGHTS_F32; /* absent: f32 */
    if (a_i < 0)
        return frae_errorf(err, errlen, "%s: bad activation in metadata",
                           ck->path);
    if (!q || frae_quantizer_parse(q, &c))
        return frae_errorf(err, errlen, "%s: bad quantizer in metadata",
                           ck->path);
    if (f_i < 0)
        return frae_errorf(err, errlen, "%s: bad feedback mode in metadata",
                           ck->path);
    if (w_i < 0)
        return frae_errorf(err, errlen,
                           "%s: metadata 'frae.weights' = '%s' is invalid (f32 "
                           "or bf16)",
                           ck->path, wf);
    c.activation = (frae_activation)a_i;
    c.feedback = (frae_feedback)f_i;
    c.weights = (frae_weights)w_i;
    if (c.weights == FRAE_WEIGHTS_BF16)
        c.training = 0;
    const char *seed = frae_st_meta(&ck->st, "frae.seed");
    c.seed = 0;
    if (seed) {
        char *end;
        errno = 0;
        c.seed = strtoull(seed, &end, 10);
        if (!*seed || *seed == '-' || *end || errno)
            return frae_errorf(err, errlen,
                               "%s: metadata 'frae.seed' = '%s' is invalid",
                               ck->path, seed);
    }
    if (meta_int(ck, "frae.window", 1, 1, INT_MAX, &c.window, err, errlen) ||
        meta_int(ck, "frae.batch", 1, 1, INT_MAX, &c.batch, err, errlen) ||
        meta_float(ck, "frae.learning_rate", &c.learning_rate, err, errlen) ||
        meta_float(ck, "frae.beta1", &c.beta1, err, errlen) ||
        meta_float(ck, "frae.beta2", &c.beta2, err, errlen) ||
        meta_float(ck, "frae.epsilon", &c.epsilon, err, errlen) ||
        meta_float(ck, "frae.clip_norm", &c.clip_norm, err, errlen))
        return -1;
    const char *pitch = frae_st_meta(&ck->st, "frae.pitch");
    c.pitch_ranged = FRAE_PITCH_CODER_4BIT; /* absent: no pitch at all */
    int known = !pitch;
    for (int k = 0; pitch && k < (int)(sizeof pitch_coder_names /
                                       sizeof *pitch_coder_names);
         k++)
        if (!strcmp(pitch, pitch_coder_names[k]))
            c.pitch_ranged = k, known = 1;
    if (!known)
        return frae_errorf(err, errlen,
                           "%s: metadata 'frae.pitch' = '%s' is not a pitch "
                           "coder this frae knows ('%s', '%s' or '%s')",
                           ck->path, pitch, PITCH_CODER, PITCH_CODER_RANGED,
                           PITCH_CODER_ENVELOPE);
    c.pitch = pitch != NULL;
    if (meta_option(ck, "frae.normalize", NORMALIZE_NAME, "normalization",
                    &c.normalize, err, errlen) ||
        meta_option(ck, "frae.targets", TARGETS_NAME, "kind of targets",
                    &c.targets, err, errlen) ||
        meta_option(ck, "frae.prior_ar", PRIOR_AR_NAME, "prior autoregression",
                    &c.prior_ar, err, errlen))
        return -1;
    /* absent: no look-ahead, none stopped at packets, no prior */
    if (meta_int(ck, "frae.lookahead", 0, 1, FRAE_MAX_LOOKAHEAD, &c.lookahead,
                 err, errlen) ||
        meta_int(ck, "frae.lookahead_packet", 0, 1, FRAE_MAX_LOOKAHEAD,
                 &c.lookahead_packet, err, errlen) ||
        meta_int(ck, "frae.prior_hidden", 0, 1, INT_MAX, &c.prior_hidden, err,
                 errlen))
        return -1;
    if (frae_st_meta(&ck->st, "frae.rate_lambda") &&
        meta_float(ck, "frae.rate_lambda", &c.rate_lambda, err, errlen))
        return -1;
    if (frae_st_meta(&ck->st, "frae.level_loss") &&
        (meta_float(ck, "frae.level_loss", &c.level_loss, err, errlen) ||
         meta_float(ck, "frae.level_scale", &c.level_scale, err, errlen)))
        return -1;
    if (frae_st_meta(&ck->st, "frae.emphasis") && /* else all alike */
        (meta_float(ck, "frae.emphasis", &c.emphasis, err, errlen) ||
         meta_int(ck, "frae.emphasis_from", 1, 0, INT_MAX, &c.emphasis_from,
                  err, errlen) ||
         meta_int(ck, "frae.emphasis_to", 1, 0, INT_MAX, &c.emphasis_to, err,
                  errlen)))
        return -1;
    if (frae_st_meta(&ck->st, "frae.lr_warmup") && /* else constant */
        (meta_int(ck, "frae.lr_warmup", 1, 0, INT_MAX, &c.lr_warmup, err,
                  errlen) ||
         meta_int(ck, "frae.lr_decay_steps", 1, 0, INT_MAX, &c.lr_decay_steps,
                  err, errlen) ||
         meta_float(ck, "frae.lr_floor", &c.lr_floor, err, errlen)))
        return -1;
    if (frae_st_meta(&ck->st, "frae.erasure") && /* else off */
        (meta_float(ck, "frae.erasure", &c.erasure, err, errlen) ||
         meta_int(ck, "frae.erasure_frames", 1, 0, 1000, &c.erasure_frames, err,
                  errlen)))
        return -1;
    char why[200];
    if (frae_config_check(&c, why, sizeof why))
        return frae_errorf(err, errlen, "%s: bad config in metadata: %s",
                           ck->path, why);
    /* the tensors must be there before anything is sized from the config:
     * then a model is never larger than the file that describes it */
    if (check_tensors(ck, &c, "", err, errlen))
        return -1;
    if (frae_checkpoint_has_optimizer(ck) &&
        (meta_long(ck, "frae.adam_step", 0, LONG_MAX, &v, err, errlen) ||
         check_tensors(ck, &c, "optimizer.m.", err, errlen) ||
         check_tensors(ck, &c, "optimizer.v.", err, errlen)))
        return -1;
    *cfg = c;
    return 0;
}

/* ---- restoring ------------------------------------------------------------ */

/* Reads tensors "<prefix><tensor>" into a packed param array (dst), or
 * into the model's weights (dst NULL). */
int frae_checkpoint_read_params(const frae_safetensors *st, frae_model *m,
                                const char *prefix, float *dst,
                                const char *path, char *err, size_t errlen)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(&m->net.cfg, e);
    for (int k = 0; k < n; k++) {
        const int l = e[k].mat;
        const frae_layer *ly = &m->net.layer[l];
        const st_tensor *t = find_entry_tensor(st, &m->net.cfg, &e[k], prefix,
                                               path, err, errlen);
        if (!t)
            return -1;
        if (e[k].bias) {
            for (int o = 0; o < ly->out; o++) {
                float v = frae_st_float(st, t, (size_t)o);
                if (!isfinite(v))
                    return frae_errorf(err, errlen,
                                       "%s: tensor '%s' has %s at [%d]", path,
                                       t->name, isnan(v) ? "NaN" : "Inf", o);
                (dst ? dst + ly->b_off : m->wbias[l])[o] =
                    v == 0.0f ? 0.0f : v; /* no -0 biases */
            }
            continue;
        }
        for (int o = 0; o < ly->out; o++)
            for (int i = 0; i < ly->in; i++) {
                float v = frae_st_float(st, t, (size_t)o * ly->in + i);
                if (!isfinite(v))
                    return frae_errorf(
                        err, errlen, "%s: tensor '%s' has %s at [%d, %d]", path,
                        t->name, isnan(v) ? "NaN" : "Inf", o, i);
                if (dst)
                    dst[ly->w_off + packed_index(ly->in, ly->out, i, o)] = v;
                else
                    frae_weight_set(m, l, i, o, v);
            }
    }
    if (m->net.prior[2] >= 0) {
        /* the prior's autoregression sees only codes already coded: a
         * weight that breaks that is refused; Adam's moments there are
         * dropped, so training keeps it causal */
        char why[256];
        if (dst)
            frae_prior_ar_mask(&m->net,
                               dst + m->net.layer[m->net.prior[2]].w_off);
        else if (frae_prior_ar_check(&m->net, why, sizeof why))
            return frae_errorf(err, errlen, "%s: %s", path, why);
    }
    return 0;
}

/* frae.norm_mean and frae.norm_std: D strict floats each, as
 * frae_norm_stat_ok takes them (what frae_set_normalization takes). */
static int read_normalization(const frae_checkpoint *ck, frae_model *m,
                              char *err, size_t errlen)
{
    if (!m->net.cfg.normalize)
        return 0;
    static const char *const keys[2] = {"frae.norm_mean", "frae.norm_std"};
    const int D = m->net.cfg.frame_dim;
    float *mean = malloc(sizeof(float) * 2 * (size_t)D);
    if (!mean)
        return frae_errorf(err, errlen, "%s: out of memory", ck->path);
    float *std = mean + D;
    float *dst[2] = {mean, std};
    for (int i = 0; i < 2; i++) {
        const char *s = frae_st_meta(&ck->st, keys[i]);
        if (!s) {
            free(mean);
            return frae_errorf(err, errlen, "%s: metadata '%s' missing",
                               ck->path, keys[i]);
        }
        for (int d = 0; d < D; d++) {
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end != s && !errno && (d < D - 1 ? !*end : *end == ',')) {
                free(mean);
                return frae_errorf(err, errlen,
                                   "%s: metadata '%s' has %s%d values; the "
                                   "model has %d bands",
                                   ck->path, keys[i], *end ? "more than " : "",
                                   *end ? D : d + 1, D);
            }
            if (end == s || errno || !frae_norm_stat_ok(x, i == 1) ||
                (d < D - 1 ? *end != ',' : *end)) {
                free(mean);
                return frae_errorf(err, errlen,
                                   "%s: metadata '%s': value %d of %d is "
                                   "missing or invalid%s",
                                   ck->path, keys[i], d + 1, D,
                                   i == 1 ? " (a std must be finite, > 0 and "
                                            "at most 3e38)"
                                          : " (at most 3e38 in magnitude)");
            }
            dst[i][d] = (float)x;
            s = end + (d < D - 1);
        }
    }
    int rc = frae_set_normalization(m, mean, std);
    free(mean);
    return rc ? frae_errorf(err, errlen, "%s: bad normalization statistics",
                            ck->path)
              : 0;
}

int frae_checkpoint_restore(const frae_checkpoint *ck, frae_model *m,
                            int with_optimizer, char *err, size_t errlen)
{
    frae_family family = FRAE_FAMILY_DENSE;
    if (meta_family(ck, &family, err, errlen))
        return -1;
    if (family != m->net.cfg.family)
        return frae_errorf(err, errlen, "%s holds a %s model; this model is %s",
                           ck->path, frae_family_names[family],
                           frae_family_names[m->net.cfg.family]);
    if (frae_checkpoint_read_params(&ck->st, m, "", NULL, ck->path, err,
                                    errlen) ||
        read_normalization(ck, m, err, errlen))
        return -1;
    frae_weights_changed(m);
    if (with_optimizer && m->tr.adam_m && frae_checkpoint_has_optimizer(ck)) {
        long step;
        if (frae_checkpoint_read_params(&ck->st, m, "optimizer.m.",
                                        m->tr.adam_m, ck->path, err, errlen) ||
            frae_checkpoint_read_params(&ck->st, m, "optimizer.v.",
                                        m->tr.adam_v, ck->path, err, errlen) ||
            meta_long(ck, "frae.adam_step", 0, LONG_MAX, &step, err, errlen))
            return -1;
        m->tr.adam_step = step;
    }
    return 0;
}

frae_model *frae_load(const char *path, const frae_config *runtime, char *err,
                      size_t errlen)
{
    frae_checkpoint *ck = frae_checkpoint_open(path, err, errlen);
    if (!ck)
        return NULL;
    frae_config c;
    frae_model *m = NULL;
    if (!frae_checkpoint_config(ck, &c, err, errlen)) {
        if (runtime) {
            c.batch = runtime->batch;
            c.window = runtime->window;
            c.training = runtime->training;
            c.isa = runtime->isa;
            c.chunk_rows = runtime->chunk_rows;
        }
        m = frae_create(&c, err, errlen);
        if (m && frae_checkpoint_restore(ck, m, 1, err, errlen)) {
            frae_destroy(m);
            m = NULL;
        }
    }
    frae_checkpoint_close(ck);
    return m;
}
