/* The GRU cell's element-wise part, as torch.nn.GRUCell computes it (ATen's
 * gru_cell): with gx = b_ih + W_ih x and gh = b_hh + W_hh h, each cut into
 * r, z, n thirds,
 *   r = sigmoid(gx_r + gh_r)    z = sigmoid(gx_z + gh_z)
 *   n = tanh(gx_n + r * gh_n)   h' = n + z * (h - n)
 * The two products are the model's ordered chains (gemm.c).  This part is
 * plain C, compiled three times (GRU_ISA: scalar, avx2, avx512; the
 * kernel table picks one).  Every operation is a single IEEE-rounded add,
 * multiply, divide, compare or exact conversion, and -ffp-contract=off
 * keeps the compiler from fusing any, so each lane of a wider vector
 * computes the bits the baseline build computes.
 *
 * libm's tanhf and expf are scalar calls, and were 30% of a batch-32 GRU
 * step.  frae_gru_exp and frae_gru_tanh below are branch-free polynomials
 * (Cody-Waite reduction, Cephes' coefficients) that the compiler
 * vectorises; tests/c/test_kernels.c holds them to a few ulp of double
 * precision over the whole float range. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/frae_internal.h"

#ifndef GRU_ISA /* the baseline build, which also exports exp and tanh */
#define GRU_ISA scalar
#define GRU_EXPORT_MATH
#endif
#define GRU_CAT2(a, b) a##_##b
#define GRU_CAT(a, b) GRU_CAT2(a, b)
#define GRU_FN(name) GRU_CAT(name, GRU_ISA)

/* "no dependence between iterations", for GCC's vectoriser (clang
 * vectorises these loops with run-time alias checks, and would warn) */
#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

static inline float gru_exp(float x)
{
    /* e^x = 2^n e^r, n = round(x log2 e), |r| <= ln2/2 */
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.3365478515625f ? -87.3365478515625f : x;
    float t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23 rounds */
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * (r * r) + r + 1.0f;
    /* times 2^n: n is in -126..127 after the clamps */
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

static inline float gru_tanh(float x)
{
    float a = x < 0.0f ? -x : x;
    /* small |x|: an odd polynomial (no cancellation near 0) */
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    /* larger: 1 - 2 / (e^{2|x|} + 1), exactly 1 past |x| = 10 */
    float e = gru_exp(2.0f * (a < 10.0f ? a : 10.0f));
    float large = 1.0f - 2.0f / (e + 1.0f);
    large = x < 0.0f ? -large : large;
    return a < 0.625f ? small : large;
}

#ifdef GRU_EXPORT_MATH
float frae_gru_exp(float x) { return gru_exp(x); }
float frae_gru_tanh(float x) { return gru_tanh(x); }
/* The same over arrays (the prior's): one loop the compiler vectorises,
 * the same bits as the calls one by one. */
void frae_gru_tanh_n(float *x, size_t n)
{
    IVDEP
    for (size_t i = 0; i < n; i++)
        x[i] = gru_tanh(x[i]);
}
void frae_gru_sigmoid_n(float *x, size_t n)
{
    IVDEP
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f / (1.0f + gru_exp(-x[i]));
}
void frae_gru_exp_n(float *x, size_t n)
{
    IVDEP
    for (size_t i = 0; i < n; i++)
        x[i] = gru_exp(x[i]);
}
#endif

static inline float sigmoid(float v) { return 1.0f / (1.0f + gru_exp(-v)); }

void GRU_FN(frae_gru_forward)(int nb, int H, const float *gx, const float *gh,
                              const float *h_prev, float *gates, float *h)
{
    for (int b = 0; b < nb; b++) {
        const float *xi = gx + (size_t)b * 3 * H, *hi = gh + (size_t)b * 3 * H;
        const float *hp = h_prev + (size_t)b * H;
        float *g = gates + (size_t)b * 4 * H, *ho = h + (size_t)b * H;
        /* no dependence between units (h may be h_prev, unit for unit) */
        IVDEP
        for (int j = 0; j < H; j++) {
            float r = sigmoid(xi[j] + hi[j]);
            float z = sigmoid(xi[H + j] + hi[H + j]);
            float hn = hi[2 * H + j];
            float rn = r * hn;
            float n = gru_tanh(xi[2 * H + j] + rn);
            float diff = hp[j] - n;
            float zd = z * diff;
            g[j] = r;
            g[H + j] = z;
            g[2 * H + j] = n;
            g[3 * H + j] = hn;
            ho[j] = n + zd; /* h may alias h_prev: read before written */
        }
    }
}

void GRU_FN(frae_gru_backward)(int nb, int H, const float *dh,
                               const float *gates, const float *h_prev,
                               float *dgx, float *dgh, float *dh_prev)
{
    for (int b = 0; b < nb; b++) {
        const float *d = dh + (size_t)b * H, *hp = h_prev + (size_t)b * H;
        const float *g = gates + (size_t)b * 4 * H;
        float *gx = dgx + (size_t)b * 3 * H, *gh = dgh + (size_t)b * 3 * H;
        float *dp = dh_prev + (size_t)b * H;
        IVDEP
        for (int j = 0; j < H; j++) {
            float r = g[j], z = g[H + j], n = g[2 * H + j], hn = g[3 * H + j];
            float dn = d[j] * (1.0f - z);
            float dz = d[j] * (hp[j] - n);
            float dan = dn * (1.0f - n * n);
            float dr = dan * hn;
            float dar = dr * (r * (1.0f - r));
            float daz = dz * (z * (1.0f - z));
            gx[j] = gh[j] = dar;
            gx[H + j] = gh[H + j] = daz;
            gx[2 * H + j] = dan;
            gh[2 * H + j] = dan * r;
            dp[j] = d[j] * z;
        }
    }
}
