#include "test_util.h"

#include <math.h>
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
