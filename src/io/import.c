/* Weight-format conversion and imports (frae.h): a checkpoint converted
 * to f32 or bf16 weights, and models made from weights PyTorch (a
 * state_dict in safetensors) or Keras (np.savez of get_weights()) wrote,
 * their config inferred from the tensors' shapes and the caller's hints. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/frae_internal.h"
#include "io/checkpoint_internal.h"
#include "io/formats.h"

/* ---- conversion of the weight format ---------------------------------------- */

int frae_convert(const char *in_path, const char *out_path,
                 frae_weights weights, size_t *moved, char *err, size_t errlen)
{
    frae_checkpoint *ck = frae_checkpoint_open(in_path, err, errlen);
    frae_config saved;
    if (!ck || frae_checkpoint_config(ck, &saved, err, errlen)) {
        frae_checkpoint_close(ck);
        return -1;
    }
    /* nothing runs: both models are sized for one sequence, and the saved
     * run-time settings are recorded as they were */
    frae_config src_cfg = saved, dst_cfg;
    src_cfg.training = 0;
    src_cfg.batch = 1;
    dst_cfg = src_cfg;
    dst_cfg.weights = weights;
    saved.weights = weights;
    int rc = -1;
    float *p = NULL, *q = NULL;
    frae_meta *meta = NULL;
    frae_model *src = frae_create(&src_cfg, err, errlen);
    frae_model *dst = src ? frae_create(&dst_cfg, err, errlen) : NULL;
    if (!dst || frae_checkpoint_restore(ck, src, 0, err, errlen))
        goto done;
    p = malloc(sizeof(float) * src->net.n_params);
    q = malloc(sizeof(float) * src->net.n_params);
    meta = calloc((size_t)ck->st.n_meta + 1, sizeof *meta);
    if (!p || !q || !meta) {
        frae_errorf(err, errlen, "%s: out of memory", in_path);
        goto done;
    }
    frae_get_params(src, p);
    frae_set_params(dst, p); /* rounds, for bf16 */
    if (saved.normalize) {   /* q is free until below */
        frae_get_normalization(src, q, q + src->net.cfg.frame_dim);
        frae_set_normalization(dst, q, q + src->net.cfg.frame_dim);
    }
    frae_get_params(dst, q);
    size_t changed = 0;
    for (size_t i = 0; i < src->net.n_params; i++) {
        /* bf16 keeps float32's range but rounds up past its largest
         * finite value, 3.3895e38: such a weight would become Inf */
        if (!isfinite(q[i])) {
            frae_errorf(err, errlen,
                        "%s: parameter %zu of %zu (flat, in Keras order) is "
                        "%g, which bf16 rounds to Inf (its largest finite "
                        "value is 3.3895e+38)",
                        in_path, i, src->net.n_params, (double)p[i]);
            goto done;
        }
        changed += p[i] != q[i];
    }
    if (moved)
        *moved = changed;
    /* the caller's metadata (audio features, ...) stays; frae's own is
     * rewritten, and the training state does not apply to new weights */
    int n = 0;
    for (int i = 0; i < ck->st.n_meta; i++) {
        const char *k = ck->st.meta[i].key;
        if (strncmp(k, "frae.", 5) && strncmp(k, "train.", 6))
            meta[n++] = (frae_meta){k, ck->st.meta[i].value};
    }
    rc = frae_checkpoint_save_as(dst, &saved, out_path, 0, meta, n, NULL, 0,
                                 err, errlen)
             ? -2
             : 0;
done:
    free(p), free(q), free(meta);
    frae_destroy(src), frae_destroy(dst);
    frae_checkpoint_close(ck);
    return rc;
}

/* ---- imports: weights made by PyTorch or Keras ----------------------------- */

typedef struct {
    int n;                                         /* layers */
    int in[FRAE_MAX_LAYERS], out[FRAE_MAX_LAYERS]; /* a GRU's out is 3H */
    int gru[FRAE_MAX_LAYERS];
    char what[FRAE_MAX_LAYERS][80]; /* the tensor that gave the shape */
} shapes;

/* Finds the family, D, K, the widths and the latent layer from the layer
 * shapes.  A GRU FRAE has two GRU layers, the encoder's first and the one
 * right after the latent; its encoder GRU also takes h_dec. */
static int infer_config(const shapes *s, const frae_config *hints,
                        int latent_at, frae_config *c, const char *path,
                        char *err, size_t errlen)
{
    *c = *hints;
    c->family = FRAE_FAMILY_DENSE;
    if (s->n < 2 || s->n > FRAE_MAX_LAYERS)
        return frae_errorf(err, errlen, "%s: %d layers; an FRAE has 2..%d",
                           path, s->n, FRAE_MAX_LAYERS);
    int units[FRAE_MAX_LAYERS], gru_at = -1, n_gru = 0;
    for (int i = 0; i < s->n; i++) {
        units[i] = s->out[i];
        if (!s->gru[i])
            continue;
        if (s->out[i] % 3)
            return frae_errorf(err, errlen,
                               "%s: %s has %d gate rows; a GRU's are 3 x its "
                               "units",
                               path, s->what[i], s->out[i]);
        units[i] = s->out[i] / 3;
        n_gru++;
        if (i > 0)
            gru_at = i;
    }
    int fed = 0; /* h_dec's width in the encoder's input */
    if (n_gru) {
        if (!s->gru[0] || n_gru != 2 || gru_at < 2 || gru_at > s->n - 2)
            return frae_errorf(err, errlen,
                               "%s: a GRU FRAE has exactly two GRU layers, "
                               "the encoder's first and the decoder's first",
                               path);
        c->family = FRAE_FAMILY_GRU;
        latent_at = gru_at - 1;
        fed = units[gru_at];
    }
    const int D = s->out[s->n - 1];
    const long KD = (long)s->in[0] - D - fed;
    if (KD < 0 || KD % D)
        return frae_errorf(err, errlen,
                           "%s: %s takes %d inputs: not x (%d)%s and K "
                           "frames of %d",
                           path, s->what[0], s->in[0], D, fed ? ", h_dec" : "",
                           D);
    if (latent_at < 0) {
        for (int i = 0; i + 1 < s->n && latent_at < 0; i++)
            if (KD > 0 && s->in[i + 1] == s->out[i] + KD)
                latent_at = i;
        for (int i = 0; i + 1 < s->n && latent_at < 0; i++)
            if (KD == 0 && s->out[i] == hints->latent_dim)
                latent_at = i;
        if (latent_at < 0)
            return frae_errorf(err, errlen,
                               "%s: cannot tell which layer is the latent from "
                               "the shapes%s",
                               path, KD ? "" : " (history 0: give --latent)");
    }
    c->frame_dim = D;
    c->history = (int)(KD / D);
    c->latent_dim = s->out[latent_at];
    c->n_enc_hidden = latent_at;
    c->n_dec_hidden = s->n - latent_at - 2;
    if (c->n_enc_hidden > FRAE_MAX_HIDDEN || c->n_dec_hidden > FRAE_MAX_HIDDEN)
        return frae_errorf(err, errlen, "%s: too many hidden layers", path);
    for (int i = 0; i < latent_at; i++)
        c->enc_hidden[i] = units[i];
    for (int i = 0; i < c->n_dec_hidden; i++)
        c->dec_hidden[i] = units[latent_at + 1 + i];
    /* every layer must then have the shape the config implies */
    for (int i = 1; i < s->n; i++) {
        int want = i == latent_at + 1 ? c->latent_dim + (int)KD : units[i - 1];
        if (s->in[i] != want)
            return frae_errorf(
                err, errlen,
                "%s: %s takes %d inputs; the architecture needs %d", path,
                s->what[i], s->in[i], want);
    }
    return frae_config_check(c, err, errlen);
}

static frae_model *import_torch(const unsigned char *buf, size_t size,
                                const char *path, const frae_config *hints,
                                char *err, size_t errlen)
{
    frae_safetensors st;
    if (frae_st_parse(buf, size, path, &st, err, errlen))
        return NULL;
    shapes s = {0};
    char name[64];
    /* a GRU model's first layers are "enc.0.weight_ih", "dec.0.weight_ih" */
    const int gru = frae_st_find(&st, "enc.0.weight_ih") != NULL;
    int ne = gru, nd = gru, latent_at;
    while (snprintf(name, sizeof name, "enc.%d.weight", ne),
           frae_st_find(&st, name) && ne < FRAE_MAX_HIDDEN)
        ne++;
    while (snprintf(name, sizeof name, "dec.%d.weight", nd),
           frae_st_find(&st, name) && nd < FRAE_MAX_HIDDEN)
        nd++;
    latent_at = ne;
    s.n = ne + nd + 2;
    frae_model *m = NULL;
    for (int l = 0; l < s.n; l++) {
        const char *sfx =
            gru && (l == 0 || l == ne + 1) ? "weight_ih" : "weight";
        s.gru[l] = gru && (l == 0 || l == ne + 1);
        if (l < ne)
            snprintf(name, sizeof name, "enc.%d.%s", l, sfx);
        else if (l == ne)
            snprintf(name, sizeof name, "latent.weight");
        else if (l < s.n - 1)
            snprintf(name, sizeof name, "dec.%d.%s", l - ne - 1, sfx);
        else
            snprintf(name, sizeof name, "out.weight");
        snprintf(s.what[l], sizeof s.what[l], "tensor '%s'", name);
        const st_tensor *t = frae_st_find(&st, name);
        if (!t || t->ndim != 2 || t->dtype > ST_BF16 || t->shape[0] > INT_MAX ||
            t->shape[1] > INT_MAX || t->shape[0] < 1 || t->shape[1] < 1) {
            frae_errorf(err, errlen,
                        "%s: no float matrix '%s': not a state_dict of "
                        "tools/frae_torch.py",
                        path, name);
            goto done;
        }
        s.out[l] = (int)t->shape[0];
        s.in[l] = (int)t->shape[1];
    }
    frae_config c;
    /* every tensor's shape is then checked against the config, and a
     * wrong one named with the shape it needs (read_params) */
    if (infer_config(&s, hints, latent_at, &c, path, err, errlen))
        goto done;
    /* a learned prior: "prior.0.weight" [P, C] gives its width */
    const st_tensor *pt = frae_st_find(&st, "prior.0.weight");
    c.prior_hidden = 0;
    if (pt && (pt->ndim != 2 || pt->shape[0] < 1 || pt->shape[0] > (1 << 20))) {
        frae_errorf(err, errlen,
                    "%s: tensor 'prior.0.weight' should be a [P, C] matrix "
                    "with 1 <= P <= %d",
                    path, 1 << 20);
        goto done;
    }
    if (pt)
        c.prior_hidden = (int)pt->shape[0];
    /* ... and "prior.2.weight" its within-frame autoregression */
    c.prior_ar = pt && frae_st_find(&st, "prior.2.weight") != NULL;
    m = frae_create(&c, err, errlen);
    if (m && frae_checkpoint_read_params(&st, m, "", NULL, path, err, errlen)) {
        frae_destroy(m);
        m = NULL;
    }
    if (m)
        frae_weights_changed(m);
done:
    frae_st_close(&st);
    return m;
}

enum { KERAS_CAP = 2 * FRAE_MAX_LAYERS + 2 };

/* The model of a Keras get_weights() list, the .npz's members. */
static frae_model *keras_from_members(const frae_npz_member *mem, int nmem,
                                      const char *path,
                                      const frae_config *hints, char *err,
                                      size_t errlen)
{
    frae_npy arr[KERAS_CAP];
    /* np.savez(path, *weights) names them arr_0.npy, arr_1.npy, ... */
    for (int i = 0; i < nmem; i++) {
        char want[32];
        snprintf(want, sizeof want, "arr_%d.npy", i);
        int found = -1;
        for (int k = 0; k < nmem; k++)
            if (!strcmp(mem[k].name, want))
                found = k;
        if (found < 0) {
            frae_errorf(err, errlen,
                        "%s: no member '%s'; expected np.savez(path, "
                        "*model.get_weights())",
                        path, want);
            return NULL;
        }
        char label[300];
        snprintf(label, sizeof label, "%s:%s", path, want);
        if (frae_npy_parse(mem[found].data, mem[found].size, label, &arr[i],
                           err, errlen))
            return NULL;
    }
    /* layer by layer: a Dense layer is kernel [in, out] and bias [out]; a
     * GRU (reset_after=True) kernel [in, 3H], recurrent kernel [H, 3H]
     * and bias [2, 3H] */
    shapes s = {0};
    int gru_model = 0;
    for (int i = 0; i < nmem; i++)
        gru_model |= arr[i].ndim == 2 && arr[i].dims[0] == 2 && i >= 2 &&
                     arr[i - 1].ndim == 2 && arr[i - 2].ndim == 2;
    int at = 0;
    while (at < nmem) {
        if (s.n == FRAE_MAX_LAYERS) {
            frae_errorf(err, errlen, "%s: more than %d layers", path,
                        FRAE_MAX_LAYERS);
            return NULL;
        }
        const frae_npy *k = &arr[at];
        const int l = s.n;
        if (k->ndim != 2 || k->dims[0] < 1 || k->dims[1] < 1 ||
            k->dims[0] > INT_MAX || k->dims[1] > INT_MAX) {
            frae_errorf(err, errlen, "%s: arr_%d is not a kernel [in, out]",
                        path, at);
            return NULL;
        }
        const int is_gru = gru_model && at + 2 < nmem &&
                           arr[at + 2].ndim == 2 && arr[at + 2].dims[0] == 2;
        snprintf(s.what[l], sizeof s.what[l], "arr_%d", at);
        s.in[l] = (int)k->dims[0];
        s.out[l] = (int)k->dims[1];
        s.gru[l] = is_gru;
        if (is_gru) {
            const frae_npy *r = &arr[at + 1], *b = &arr[at + 2];
            const long G = (long)k->dims[1], H = G / 3;
            if (G % 3) {
                frae_errorf(err, errlen,
                            "%s: arr_%d (a GRU kernel) has %ld columns; a "
                            "GRU's are 3 x its units",
                            path, at, G);
                return NULL;
            }
            if (r->ndim != 2 || r->dims[0] != H || r->dims[1] != G) {
                frae_errorf(err, errlen,
                            "%s: arr_%d (the GRU's recurrent kernel) should "
                            "be [%ld, %ld]",
                            path, at + 1, H, G);
                return NULL;
            }
            if (b->dims[1] != G) {
                frae_errorf(err, errlen,
                            "%s: arr_%d (the GRU's bias) should be [2, %ld]",
                            path, at + 2, G);
                return NULL;
            }
            at += 3;
        } else {
            const frae_npy *b = at + 1 < nmem ? &arr[at + 1] : NULL;
            if (!b || b->ndim != 1 || b->dims[0] != k->dims[1]) {
                frae_errorf(err, errlen,
                            "%s: arr_%d/arr_%d are not a Dense kernel [in, "
                            "out] and its bias [out]: Keras weights come in "
                            "kernel, bias pairs",
                            path, at, at + 1);
                return NULL;
            }
            at += 2;
        }
        s.n++;
    }
    frae_config c;
    if (infer_config(&s, hints, -1, &c, path, err, errlen))
        return NULL;
    c.prior_hidden = 0; /* get_weights() of the Keras model: no prior */
    c.prior_ar = 0;
    c.rate_lambda = 0.0f;
    frae_model *m = frae_create(&c, err, errlen);
    if (!m)
        return NULL;
    /* Keras kernels are [in][out], frae's exchange layout */
    float *flat = malloc(sizeof(float) * m->net.n_params), *p = flat;
    if (!flat) {
        frae_destroy(m);
        frae_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    for (int i = 0; i < nmem; i++) {
        size_t n = 1;
        for (int d = 0; d < arr[i].ndim; d++)
            n *= (size_t)arr[i].dims[d];
        for (size_t k = 0; k < n; k++) {
            float v = frae_npy_value(&arr[i], k);
            if (!isfinite(v)) {
                frae_destroy(m);
                free(flat);
                frae_errorf(err, errlen,
                            "%s: arr_%d.npy has %s at flat index %zu", path, i,
                            isnan(v) ? "NaN"
                                     : "a value too large for "
                                       "float32 or Inf",
                            k);
                return NULL;
            }
            *p++ = v;
        }
    }
    frae_set_params(m, flat);
    free(flat);
    return m;
}

static frae_model *import_keras(const unsigned char *buf, size_t size,
                                const char *path, const frae_config *hints,
                                char *err, size_t errlen)
{
    frae_npz_member mem[KERAS_CAP];
    int nmem = frae_npz_read(buf, size, path, mem, KERAS_CAP, err, errlen);
    if (nmem < 0)
        return NULL;
    frae_model *m = keras_from_members(mem, nmem, path, hints, err, errlen);
    frae_npz_free(mem, nmem);
    return m;
}

frae_model *frae_import_buffer(const void *buf, size_t size, const char *name,
                               const frae_config *hints, char *err,
                               size_t errlen)
{
    frae_config h;
    if (hints)
        h = *hints;
    else
        frae_config_default(&h);
    if (size >= 4 && !memcmp(buf, "PK\x03\x04", 4))
        return import_keras(buf, size, name, &h, err, errlen);
    return import_torch(buf, size, name, &h, err, errlen);
}

frae_model *frae_import(const char *path, const frae_config *hints, char *err,
                        size_t errlen)
{
    void *map;
    size_t size;
    if (frae_map_file(path, 8, &map, &size, err, errlen))
        return NULL;
    frae_model *m = frae_import_buffer(map, size, path, hints, err, errlen);
    munmap(map, size);
    return m;
}
