/* The naive (concatenate and shift) reference against the library's
 * ring-buffer, split-weight forward pass: identical to the bit. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"
#include "test_util.h"
#include "tests.h"

/* erasure training's lost frames for the reference, [T][nseq] (NULL:
 * none) */
static const unsigned char *naive_lost;
void naive_set_lost(const unsigned char *lost) { naive_lost = lost; }
/* the level term's active frames and all frames, counted since the last
 * call (naive_level_counts) */
static long naive_level_active, naive_level_frames;
void naive_level_counts(long *active, long *frames)
{
    *active = naive_level_active, *frames = naive_level_frames;
    naive_level_active = naive_level_frames = 0;
}

#define REAL float
#define REAL_FMA fmaf
#define REAL_TANH frae_tanhf  /* layers.c: x86-64 glibc's tanhf everywhere */
#define REAL_EXP frae_gru_exp /* the GRU cell's, a few ulp from libm's */
#define REAL_GRU_TANH frae_gru_tanh
#define REAL_RINT nearbyintf
#include "naive_ref.h"
#undef REAL
#undef REAL_FMA
#undef REAL_TANH
#undef REAL_EXP
#undef REAL_GRU_TANH
#undef REAL_RINT

#define REAL double
#define REAL_FMA fma
#define REAL_TANH tanh
#define REAL_EXP exp
#define REAL_GRU_TANH tanh
#define REAL_RINT nearbyint
#include "naive_ref.h"
#undef REAL

double naive_forward_d(const frae_config *c, const double *params,
                       const float *x, int nseq, int T, double *y,
                       const double *frozen_hist, double *hist_out,
                       const double *frozen_qoff, double *qoff_out)
{
    return naive_forward_double(c, params, x, nseq, T, y, frozen_hist, hist_out,
                                frozen_qoff, qoff_out);
}

typedef struct {
    const char *name;
    int D, K, ne, enc[3], L, nd, dec[3];
    frae_activation act;
    frae_quantizer quant;
    int levels;
    int nseq, T;
    frae_family family;
} naive_case;

static const naive_case cases[] = {
    {"K=3 relu",
     6,
     3,
     2,
     {19, 11},
     4,
     2,
     {13, 21},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     3,
     9,
     FRAE_FAMILY_DENSE},
    {"K=0 plain AE",
     7,
     0,
     1,
     {33},
     5,
     1,
     {35},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     2,
     5,
     FRAE_FAMILY_DENSE},
    {"tanh binary",
     5,
     2,
     2,
     {17, 40},
     3,
     1,
     {70},
     FRAE_ACT_TANH,
     FRAE_QUANT_BINARY,
     0,
     4,
     7,
     FRAE_FAMILY_DENSE},
    {"uniform 7",
     9,
     4,
     1,
     {65},
     6,
     2,
     {18, 66},
     FRAE_ACT_RELU,
     FRAE_QUANT_UNIFORM,
     7,
     7,
     8,
     FRAE_FAMILY_DENSE},
    {"no hidden",
     4,
     2,
     0,
     {0},
     3,
     0,
     {0},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     2,
     6,
     FRAE_FAMILY_DENSE},
    /* one sequence: one-row GEMMs, so ReLU zeros take the sparse kernel */
    {"batch 1 relu",
     6,
     3,
     2,
     {70, 33},
     4,
     2,
     {40, 90},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     1,
     12,
     FRAE_FAMILY_DENSE},
    {"batch 1 uniform",
     5,
     2,
     1,
     {64},
     3,
     1,
     {65},
     FRAE_ACT_RELU,
     FRAE_QUANT_UNIFORM,
     4,
     1,
     9,
     FRAE_FAMILY_DENSE},
    /* the GRU family: state feedback alone, with the buffer, with dense
     * layers around the GRUs, at batch 1, 3 and past FRAE_PEND_MAX_ROWS */
    {"gru K=0",
     6,
     0,
     1,
     {70},
     4,
     1,
     {66},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     3,
     9,
     FRAE_FAMILY_GRU},
    {"gru K=2 dense",
     5,
     2,
     2,
     {33, 17},
     3,
     2,
     {40, 21},
     FRAE_ACT_RELU,
     FRAE_QUANT_BINARY,
     0,
     3,
     8,
     FRAE_FAMILY_GRU},
    {"gru batch 1",
     7,
     3,
     1,
     {65},
     4,
     2,
     {64, 30},
     FRAE_ACT_TANH,
     FRAE_QUANT_UNIFORM,
     5,
     1,
     10,
     FRAE_FAMILY_GRU},
    {"gru batch 6",
     4,
     2,
     1,
     {20},
     3,
     1,
     {18},
     FRAE_ACT_RELU,
     FRAE_QUANT_NONE,
     0,
     6,
     7,
     FRAE_FAMILY_GRU},
};

static void case_config(const naive_case *k, frae_config *c)
{
    tiny_config(c, k->D, k->K, k->ne, k->enc, k->L, k->nd, k->dec);
    c->activation = k->act;
    c->quantizer = k->quant;
    c->quant_levels = k->levels;
    c->batch = k->nseq;
    c->window = 4;
    c->family = k->family;
}

int test_naive_bitexact(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const naive_case *k = &cases[ci];
        frae_config c;
        case_config(k, &c);
        size_t nvals = (size_t)k->nseq * k->T * k->D;
        float *x = synth(k->nseq, k->T, k->D, 11 + ci);
        float *y_ref = malloc(sizeof(float) * nvals);
        float *y = malloc(sizeof(float) * nvals);
        float *params = NULL;
        for (int ii = 0; ii < nisa; ii++) {
            c.isa = isas[ii];
            for (int training = 0; training <= 1; training++) {
                c.training = training;
                frae_model *m = create_or_die(&c);
                if (!params) {
                    params = malloc(sizeof(float) * frae_param_count(m));
                    frae_get_params(m, params);
                    /* non-zero biases, so bias handling is exercised */
                    for (size_t i = 0; i < frae_param_count(m); i++)
                        params[i] += 0.01f * (float)((i * 7919) % 13) - 0.06f;
                    naive_forward_float(&c, params, x, k->nseq, k->T, y_ref,
                                        NULL, NULL, NULL, NULL);
                }
                frae_set_params(m, params);
                frae_reset(m);
                frae_forward(m, x, y, k->nseq, k->T);
                CHECK(!memcmp(y, y_ref, sizeof(float) * nvals),
                      "%s, %s, training=%d: forward differs from the naive "
                      "reference (max rel %.3g)",
                      k->name, frae_isa_name(m), training,
                      max_rel_diff(y, y_ref, nvals));
                frae_destroy(m);
            }
        }
        printf("    %-14s bit-identical on %d ISA(s)\n", k->name, nisa);
        free(x), free(y_ref), free(y), free(params);
    }
    return failures;
}

/* Streaming in chunks continues the buffers exactly: forward over T frames
 * equals forward over T1 then T - T1 frames. */
int test_forward_chunked(void)
{
    int failures = 0;
    frae_config c;
    case_config(&cases[0], &c);
    c.training = 0;
    const int nseq = 3, T = 9, D = c.frame_dim;
    size_t nvals = (size_t)nseq * T * D;
    float *x = synth(nseq, T, D, 5);
    float *y_full = malloc(sizeof(float) * nvals);
    float *y_part = malloc(sizeof(float) * nvals);
    float *x1 = malloc(sizeof(float) * nvals),
          *y1 = malloc(sizeof(float) * nvals);
    frae_model *m = create_or_die(&c);
    frae_forward(m, x, y_full, nseq, T);
    for (int T1 = 1; T1 < T; T1 += 3) {
        frae_reset(m);
        /* the chunks are [nseq][Tk][D] arrays of their own */
        for (int part = 0; part < 2; part++) {
            int t0 = part ? T1 : 0, tn = part ? T - T1 : T1;
            for (int s = 0; s < nseq; s++)
                memcpy(x1 + (size_t)s * tn * D, x + ((size_t)s * T + t0) * D,
                       sizeof(float) * tn * D);
            frae_forward(m, x1, y1, nseq, tn);
            for (int s = 0; s < nseq; s++)
                memcpy(y_part + ((size_t)s * T + t0) * D,
                       y1 + (size_t)s * tn * D, sizeof(float) * tn * D);
        }
        CHECK(!memcmp(y_full, y_part, sizeof(float) * nvals),
              "chunks %d + %d differ from one call", T1, T - T1);
    }
    /* a different batch without a reset is refused */
    CHECK(frae_forward(m, x, y1, nseq - 1, 2) == -1,
          "forward with a different nseq and no reset was accepted");
    frae_reset(m);
    CHECK(frae_forward(m, x, y1, nseq - 1, 2) == 0,
          "forward after reset with a new nseq was refused");
    frae_destroy(m);
    free(x), free(y_full), free(y_part), free(x1), free(y1);
    return failures;
}

/* Forward of frames [t0, t1) of x ([nseq][T][D]) into the same frames of
 * y, continuing m's buffers. */
static void forward_range(frae_model *m, const float *x, float *y, int nseq,
                          int T, int D, int t0, int t1)
{
    const int tn = t1 - t0;
    float *xs = calloc((size_t)nseq * tn * D, sizeof(float));
    float *ys = calloc((size_t)nseq * tn * D, sizeof(float));
    for (int s = 0; s < nseq; s++)
        memcpy(xs + (size_t)s * tn * D, x + ((size_t)s * T + t0) * D,
               sizeof(float) * tn * D);
    frae_forward(m, xs, ys, nseq, tn);
    for (int s = 0; s < nseq; s++)
        memcpy(y + ((size_t)s * T + t0) * D, ys + (size_t)s * tn * D,
               sizeof(float) * tn * D);
    free(xs), free(ys);
}

/* The first layers sum fed-back frames ahead of time; new weights in the
 * middle of a stream must rebuild those sums.  Setting the same weights
 * again changes nothing, to the bit; setting others gives, from then on,
 * exactly the naive model on the new weights fed the same buffers. */
int test_weights_change_midstream(void)
{
    int failures = 0;
    const int pick[] = {0, 3, 5, 2}; /* K = 3, 4, 3 (batch 1), 2 */
    long checked = 0;
    for (size_t pi = 0; pi < sizeof pick / sizeof *pick; pi++) {
        const naive_case *k = &cases[pick[pi]];
        frae_config c;
        case_config(k, &c);
        c.training = 0;
        const int nseq = k->nseq, T = k->T, D = k->D, K = k->K;
        size_t nvals = (size_t)nseq * T * D;
        float *x = synth(nseq, T, D, 40 + pi);
        float *y_full = malloc(sizeof(float) * nvals);
        float *y = malloc(sizeof(float) * nvals);
        float *y_ref = malloc(sizeof(float) * nvals);
        float *hist = calloc((size_t)nseq * T * K * D + 1, sizeof(float));
        frae_model *m = create_or_die(&c);
        size_t np = frae_param_count(m);
        float *p1 = malloc(sizeof(float) * np),
              *p2 = malloc(sizeof(float) * np);
        perturb_params(m, p1);
        frae_get_params(m, p1);
        for (size_t i = 0; i < np; i++)
            p2[i] = p1[i] * 0.9f + 0.01f * (float)((i * 31) % 7) - 0.03f;
        frae_reset(m);
        frae_forward(m, x, y_full, nseq, T);
        for (int t0 = 1; t0 < T; t0++) {
            frae_set_params(m, p1);
            frae_reset(m);
            forward_range(m, x, y, nseq, T, D, 0, t0);
            frae_set_params(m, p1); /* the same weights: a no-op */
            forward_range(m, x, y, nseq, T, D, t0, T);
            CHECK(!memcmp(y, y_full, sizeof(float) * nvals),
                  "%s: setting the same weights at frame %d changed the "
                  "output",
                  k->name, t0);
            frae_reset(m);
            forward_range(m, x, y, nseq, T, D, 0, t0);
            frae_set_params(m, p2);
            forward_range(m, x, y, nseq, T, D, t0, T);
            /* the reference sees the buffers the library had */
            for (int s = 0; s < nseq; s++)
                for (int t = 0; t < T; t++)
                    for (int j = 0; j < K; j++)
                        for (int d = 0; d < D; d++)
                            hist[(((size_t)s * T + t) * K + j) * D + d] =
                                t - 1 - j < 0
                                    ? 0.0f
                                    : y[((size_t)s * T + t - 1 - j) * D + d];
            naive_forward_float(&c, p2, x, nseq, T, y_ref, hist, NULL, NULL,
                                NULL);
            int same = 1;
            for (int s = 0; s < nseq; s++)
                same &= !memcmp(y + ((size_t)s * T + t0) * D,
                                y_ref + ((size_t)s * T + t0) * D,
                                sizeof(float) * (T - t0) * D);
            CHECK(same,
                  "%s: after new weights at frame %d the output is "
                  "not the naive model's",
                  k->name, t0);
            checked++;
        }
        frae_destroy(m);
        free(x), free(y_full), free(y), free(y_ref), free(hist), free(p1);
        free(p2);
    }
    printf("    %ld mid-stream weight changes: sums ahead rebuilt exactly\n",
           checked);
    return failures;
}

/* The codec's autoregression term (frae_weight_column_dot: a column of the
 * prior's "prior.2" read down its panel) against the same sum through
 * frae_weight_get, weight by weight: the same bits, f32 and bf16 weights,
 * columns in the first, middle and last (partial) panels. */
int test_prior_ar_column_dot(void)
{
    int failures = 0;
    long checked = 0;
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        frae_config c;
        const int enc[1] = {8}, dec[1] = {8};
        tiny_config(&c, 5, 0, 1, enc, 20, 1, dec);
        c.family = FRAE_FAMILY_GRU;
        c.quantizer = FRAE_QUANT_UNIFORM;
        c.quant_levels = 9; /* 180 logits: panels of 64 (f32), 128 (bf16) */
        c.prior_hidden = 4;
        c.prior_ar = 1;
        c.training = 0;
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL); /* a causal, non-zero autoregression */
        size_t np = frae_param_count(m);
        float *p = malloc(sizeof(float) * np);
        frae_get_params(m, p);
        if (bf16) {
            frae_destroy(m);
            c.weights = FRAE_WEIGHTS_BF16;
            m = create_or_die(&c);
            frae_set_params(m, p);
        }
        const int l = m->net.prior[2], L = c.latent_dim;
        float q[20];
        for (int j = 0; j < L; j++)
            q[j] = (float)((j * 7) % 9) * 0.25f - 1.0f;
        int same = 1, nonzero = 0;
        for (int col = 0; col < m->net.layer[l].out; col++) {
            const int u = col / c.quant_levels;
            float want = m->net.layer[l].bias[col];
            for (int j = 0; j < u; j++)
                want += frae_weight_get(&m->net, l, j, col) * q[j];
            float got = frae_weight_column_dot(&m->net, l, col, q, u,
                                               m->net.layer[l].bias[col]);
            same &= memcmp(&got, &want, sizeof got) == 0;
            nonzero += u > 0 && frae_weight_get(&m->net, l, u - 1, col) != 0.0f;
            checked++;
        }
        CHECK(same, "%s: the column sums differ", bf16 ? "bf16" : "f32");
        CHECK(nonzero > 100, "%s: only %d columns see a non-zero weight",
              bf16 ? "bf16" : "f32", nonzero);
        frae_destroy(m);
        free(p);
    }
    printf("    %ld columns, f32 and bf16: the same bits\n", checked);
    return failures;
}
