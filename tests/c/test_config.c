/* Bad configs give a clear error and NULL, never a crash; sizes are right. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "test_util.h"
#include "tests.h"

typedef void (*mutator)(frae_config *c);
#define MUT(name, body)                                                        \
    static void name(frae_config *c) { body; }

MUT(zero_dim, c->frame_dim = 0)
MUT(neg_dim, c->frame_dim = -3)
MUT(neg_hist, c->history = -1)
MUT(zero_latent, c->latent_dim = 0)
MUT(zero_enc, c->enc_hidden[1] = 0)
MUT(neg_dec, c->dec_hidden[0] = -512)
MUT(too_many_layers, c->n_enc_hidden = FRAE_MAX_HIDDEN + 1)
MUT(zero_batch, c->batch = 0)
MUT(zero_window, c->window = 0)
MUT(neg_chunk, c->chunk_rows = -1)
MUT(bad_levels, c->quantizer = FRAE_QUANT_UNIFORM; c->quant_levels = 1)
MUT(bad_quant, c->quantizer = (frae_quantizer)9)
MUT(bad_act, c->activation = (frae_activation)5)
MUT(bad_lr, c->learning_rate = -1.0f)
MUT(bad_beta, c->beta2 = 1.0f)
MUT(history_overflow, c->history = 1 << 20; c->frame_dim = 1 << 12)
MUT(params_overflow, c->enc_hidden[0] = INT_MAX; c->enc_hidden[1] = INT_MAX)
MUT(rows_overflow, c->batch = 1 << 20; c->window = 1 << 20)
MUT(too_large, c->enc_hidden[0] = 200000; c->enc_hidden[1] = 200000)

static void erasure_dense(frae_config *c) { c->erasure = 0.1f; }
static void erasure_prior(frae_config *c)
{
    c->family = FRAE_FAMILY_GRU, c->quantizer = FRAE_QUANT_BINARY;
    c->prior_hidden = 8, c->erasure = 0.1f;
}
static void erasure_high(frae_config *c)
{
    c->family = FRAE_FAMILY_GRU, c->erasure = 0.6f;
}
static void erasure_nan(frae_config *c)
{
    c->family = FRAE_FAMILY_GRU, c->erasure = NAN;
}
/* two tracks of rows: 2 x batch must fit an int */
static void erasure_rows(frae_config *c)
{
    c->family = FRAE_FAMILY_GRU, c->erasure = 0.1f, c->batch = INT_MAX / 2 + 1;
}
static void erasure_frames(frae_config *c)
{
    c->family = FRAE_FAMILY_GRU, c->erasure = 0.1f, c->erasure_frames = -1;
}

int test_bad_configs(void)
{
    int failures = 0;
    static const struct {
        const char *what;
        mutator fn;
        int has_count; /* valid shape, only too big: the count exists */
    } bad[] = {
        {"zero D", zero_dim, 0},
        {"negative D", neg_dim, 0},
        {"negative K", neg_hist, 0},
        {"zero L", zero_latent, 0},
        {"zero encoder width", zero_enc, 0},
        {"negative decoder width", neg_dec, 0},
        {"too many layers", too_many_layers, 0},
        {"zero batch", zero_batch, 0},
        {"zero window", zero_window, 0},
        {"negative chunk rows", neg_chunk, 0},
        {"uniform with 1 level", bad_levels, 0},
        {"unknown quantizer", bad_quant, 0},
        {"unknown activation", bad_act, 0},
        {"negative lr", bad_lr, 0},
        {"beta2 = 1", bad_beta, 0},
        {"erasure on a dense model", erasure_dense, 0},
        {"erasure with a prior", erasure_prior, 0},
        {"erasure 0.6", erasure_high, 0},
        {"erasure NaN", erasure_nan, 0},
        {"erasure packet -1", erasure_frames, 0},
        {"erasure, 2 x batch overflows", erasure_rows, 0},
        {"K x D overflows", history_overflow, 0},
        {"params overflow", params_overflow, 0},
        {"batch x window overflows", rows_overflow, 0},
        {"too large for memory", too_large, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        frae_config c;
        frae_config_default(&c);
        bad[i].fn(&c);
        char err[256] = "";
        frae_model *m = frae_create(&c, err, sizeof err);
        CHECK(m == NULL, "%s: model was created", bad[i].what);
        CHECK(strlen(err) > 10 && !strchr(err, '\n'),
              "%s: error is not one clear line: '%s'", bad[i].what, err);
        CHECK((frae_param_count_for(&c) != 0) == bad[i].has_count,
              "%s: param count %zu", bad[i].what, frae_param_count_for(&c));
        printf("    %-26s -> %s\n", bad[i].what, err);
        frae_destroy(m);
    }
    CHECK(frae_create(NULL, NULL, 0) == NULL, "NULL config accepted");
    return failures;
}

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

int test_sizes(void)
{
    int failures = 0;
    frae_config c;
    frae_config_default(&c);
    frae_model *m = create_or_die(&c);
    CHECK(frae_param_count(m) == 599648, "default params %zu != 599648",
          frae_param_count(m));
    CHECK(frae_param_count_for(&c) == 599648, "param_count_for");
    CHECK(frae_bits_per_frame(m) == 512, "bits none");
    /* params, grads, m, v and transposed weights: 5 copies at least */
    CHECK(frae_bytes_allocated(m) >= 5 * 599648 * sizeof(float),
          "bytes allocated %zu too small", frae_bytes_allocated(m));
    size_t train_bytes = frae_bytes_allocated(m);
#if defined(__SSE__)
    /* FTZ/DAZ inside frae's calls; the caller's MXCSR comes back intact */
    unsigned int csr = _mm_getcsr();
    float *xs = synth(1, 3, 80, 1), *ys = malloc(sizeof(float) * 3 * 80);
    frae_step(m,
              &(frae_batch){
                  .x = xs, .nseq = 1, .nframes = 3, .kind = FRAE_STEP_TRAIN},
              NULL);
    frae_reset(m);
    frae_forward(m, xs, ys, 1, 3);
    CHECK(_mm_getcsr() == csr, "MXCSR changed from %#x to %#x", csr,
          _mm_getcsr());
    free(xs), free(ys);
#endif
    frae_destroy(m);
    c.quantizer = FRAE_QUANT_BINARY;
    c.training = 0;
    m = create_or_die(&c);
    CHECK(frae_bits_per_frame(m) == 16, "bits binary");
    CHECK(frae_bytes_allocated(m) < train_bytes / 2,
          "inference model is not smaller: %zu vs %zu", frae_bytes_allocated(m),
          train_bytes);
    float *g = malloc(sizeof(float) * frae_param_count(m));
    g[0] = 1.0f;
    frae_get_grads(m, g); /* inference-only: zeros */
    CHECK(g[0] == 0.0f, "inference model has gradients");
    CHECK(
        frae_step(m,
                  &(frae_batch){
                      .x = g, .nseq = 1, .nframes = 1, .kind = FRAE_STEP_TRAIN},
                  NULL) == -1,
        "inference model trained");
    free(g);
    frae_destroy(m);
    c.quantizer = FRAE_QUANT_UNIFORM;
    c.quant_levels = 5;
    m = create_or_die(&c);
    CHECK(frae_bits_per_frame(m) == 48, "bits uniform 5: %g",
          frae_bits_per_frame(m));
    frae_destroy(m);
    /* activation memory depends on the window, not the sequence length */
    frae_config_default(&c);
    c.window = 50;
    m = create_or_die(&c);
    size_t w50 = frae_bytes_allocated(m);
    frae_destroy(m);
    c.window = 100;
    m = create_or_die(&c);
    CHECK(frae_bytes_allocated(m) > w50, "window does not size activations");
    frae_destroy(m);
    /* same seed, same model; other seed, other model */
    frae_config_default(&c);
    frae_model *a = create_or_die(&c), *b = create_or_die(&c);
    c.seed = 2;
    frae_model *d = create_or_die(&c);
    size_t n = frae_param_count(a);
    float *pa = malloc(4 * n), *pb = malloc(4 * n), *pd = malloc(4 * n);
    frae_get_params(a, pa), frae_get_params(b, pb), frae_get_params(d, pd);
    CHECK(!memcmp(pa, pb, 4 * n), "same seed gave different models");
    CHECK(memcmp(pa, pd, 4 * n), "different seeds gave the same model");
    /* Glorot bound of the first layer: sqrt(6 / (400 + 512)) */
    float mx = 0;
    for (size_t i = 0; i < 400 * 512; i++)
        mx = pa[i] > mx ? pa[i] : mx;
    CHECK(mx <= 0.0811108f && mx > 0.080f,
          "first-layer max %g not at the Glorot "
          "limit 0.08111",
          mx);
    free(pa), free(pb), free(pd);
    frae_destroy(a), frae_destroy(b), frae_destroy(d);
    return failures;
}
