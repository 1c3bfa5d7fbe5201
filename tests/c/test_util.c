#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

double max_rel_diff(const float *a, const float *b, size_t n)
{
    double md = 0, mb = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > md || isnan(d))
            md = d;
        if (fabs((double)b[i]) > mb)
            mb = fabs((double)b[i]);
    }
    return mb > 0 ? md / mb : md;
}

double max_rel_diff_d(const float *a, const double *b, size_t n)
{
    double md = 0, mb = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > md || isnan(d))
            md = d;
        if (fabs(b[i]) > mb)
            mb = fabs(b[i]);
    }
    return mb > 0 ? md / mb : md;
}

void tiny_config(frae_config *c, int D, int K, int ne, const int *enc, int L,
                 int nd, const int *dec)
{
    frae_config_default(c);
    c->frame_dim = D;
    c->history = K;
    c->n_enc_hidden = ne;
    for (int i = 0; i < ne; i++)
        c->enc_hidden[i] = enc[i];
    c->latent_dim = L;
    c->n_dec_hidden = nd;
    for (int i = 0; i < nd; i++)
        c->dec_hidden[i] = dec[i];
    c->seed = 3;
}

float *synth(int nseq, int nframes, int dim, uint64_t seed)
{
    float *x = malloc(sizeof(float) * (size_t)nseq * nframes * dim);
    frae_synth_sequences(x, nseq, nframes, dim, seed);
    return x;
}

frae_model *create_or_die(const frae_config *c)
{
    char err[256];
    frae_model *m = frae_create(c, err, sizeof err);
    if (!m) {
        printf("frae_create failed: %s\n", err);
        exit(1);
    }
    return m;
}

frae_model *model_on_isa(const frae_model *m, const frae_config *c,
                         frae_isa isa)
{
    frae_config ci = *c;
    ci.isa = isa;
    frae_model *mi = create_or_die(&ci);
    float *p = malloc(sizeof(float) * frae_param_count(m));
    frae_get_params(m, p);
    frae_set_params(mi, p);
    free(p);
    return mi;
}

int available_isas(frae_isa *out)
{
    int n = 0;
    /* at most three on one machine: x86 has no NEON, aarch64 no AVX */
    static const frae_isa all[] = {FRAE_ISA_SCALAR, FRAE_ISA_AVX2,
                                   FRAE_ISA_AVX512, FRAE_ISA_NEON};
    const char *only = getenv("FRAE_TEST_ISAS");
    for (int i = 0; i < (only && !strcmp(only, "scalar") ? 1 : 4) && n < 3;
         i++) {
        frae_config c;
        tiny_config(&c, 2, 1, 0, NULL, 1, 0, NULL);
        c.isa = all[i];
        frae_model *m = frae_create(&c, NULL, 0);
        if (m) {
            out[n++] = all[i];
            frae_destroy(m);
        }
    }
    return n;
}

int layer_shapes(const frae_config *c, int *in, int *out)
{
    int n = 0, KD = c->history * c->frame_dim, prev = c->frame_dim + KD;
    for (int i = 0; i < c->n_enc_hidden; i++, n++) {
        in[n] = prev;
        out[n] = prev = c->enc_hidden[i];
    }
    in[n] = prev;
    out[n++] = c->latent_dim;
    prev = c->latent_dim + KD;
    for (int i = 0; i < c->n_dec_hidden; i++, n++) {
        in[n] = prev;
        out[n] = prev = c->dec_hidden[i];
    }
    in[n] = prev;
    out[n++] = c->frame_dim;
    return n;
}

void perturb_params(frae_model *m, float *params)
{
    size_t n = frae_param_count(m);
    float *p = malloc(sizeof(float) * n);
    frae_get_params(m, p);
    for (size_t i = 0; i < n; i++)
        p[i] += 0.02f * (float)((i * 7919) % 13) - 0.12f;
    frae_set_params(m, p);
    if (params)
        memcpy(params, p, sizeof(float) * n);
    free(p);
}

/* ---- fixtures: FRAEFIX1 files of named float32 tensors ---------------- */

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

int fixtures_load(const char *path, fixtures *fx)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("    cannot open %s (run from the repository root)\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    fx->buf = malloc((size_t)len);
    if (!fx->buf || fread(fx->buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return -1;
    }
    fclose(f);
    const unsigned char *p = fx->buf, *end = fx->buf + len;
    if (len < 12 || memcmp(p, "FRAEFIX1", 8))
        return -1;
    uint32_t count = rd_u32(p + 8);
    p += 12;
    if (count > MAX_TENSORS)
        return -1;
    for (fx->n = 0; fx->n < (int)count; fx->n++) {
        fix_tensor *t = &fx->t[fx->n];
        if (end - p < 4)
            return -1;
        uint32_t nl = rd_u32(p);
        p += 4;
        if (nl >= sizeof t->name || (size_t)(end - p) < nl + 4)
            return -1;
        memcpy(t->name, p, nl);
        t->name[nl] = 0;
        p += nl;
        t->ndim = (int)rd_u32(p);
        p += 4;
        if (t->ndim > 4 || end - p < 4 * t->ndim)
            return -1;
        t->count = 1;
        for (int d = 0; d < t->ndim; d++, p += 4)
            t->count *= t->dims[d] = rd_u32(p);
        if ((size_t)(end - p) < 4 * t->count)
            return -1;
        t->data = (const float *)(uintptr_t)(p - fx->buf); /* offset for now */
        p += 4 * t->count;
    }
    if (p != end)
        return -1;
    /* one aligned copy of all tensor data (little-endian host assumed) */
    size_t total = 0;
    for (int i = 0; i < fx->n; i++)
        total += fx->t[i].count;
    fx->floats = malloc(sizeof(float) * (total ? total : 1));
    float *dst = fx->floats;
    for (int i = 0; i < fx->n; i++) {
        memcpy(dst, fx->buf + (uintptr_t)fx->t[i].data,
               sizeof(float) * fx->t[i].count);
        fx->t[i].data = dst;
        dst += fx->t[i].count;
    }
    return 0;
}

const fix_tensor *fixtures_get(const fixtures *fx, const char *name)
{
    for (int i = 0; i < fx->n; i++)
        if (!strcmp(fx->t[i].name, name))
            return &fx->t[i];
    printf("    fixture tensor '%s' missing\n", name);
    exit(1);
}
