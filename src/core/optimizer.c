/* Adam, in the form Keras uses: the bias correction is folded into the
 * step size and epsilon is added to sqrt(v) uncorrected ("epsilon hat"):
 *   alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
 *   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 *   p -= alpha * m / (sqrt(v) + eps)
 * torch.optim.Adam puts eps after the correction instead; the two differ
 * by a factor of sqrt(1 - beta2^t) in eps. */
#include <math.h>

#include "core/frae_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/adam_loop.h"

void frae_adam_scalar(float *params, const float *grads, float *m, float *v,
                      size_t n, float alpha, float beta1, float beta2,
                      float eps)
{
    adam_loop(params, grads, m, v, n, alpha, beta1, beta2, eps);
}

void frae_adam_update(const frae_net *mod, float *params, const float *grads,
                      float *m, float *v, size_t n, long step, float lr,
                      float beta1, float beta2, float eps)
{
    const double t = (double)step;
    const float alpha =
        (float)(lr * sqrt(1.0 - pow(beta2, t)) / (1.0 - pow(beta1, t)));
    mod->adam(params, grads, m, v, n, alpha, beta1, beta2, eps);
}

/* dst[o][i] = src[i][o] for a tile of ni x no values; src rows are
 * src_ld apart, dst rows dst_ld apart.  4x4 blocks in SSE registers (part
 * of x86-64 itself, so no dispatch), the ragged edges one by one. */
static void transpose_tile(const float *src, int src_ld, float *dst, int dst_ld,
                           int ni, int no)
{
    int i0 = 0;
#if defined(__SSE2__)
    for (; i0 + 4 <= ni; i0 += 4) {
        int o = 0;
        for (; o + 4 <= no; o += 4) {
            __m128 r0 = _mm_loadu_ps(src + (size_t)(i0 + 0) * src_ld + o);
            __m128 r1 = _mm_loadu_ps(src + (size_t)(i0 + 1) * src_ld + o);
            __m128 r2 = _mm_loadu_ps(src + (size_t)(i0 + 2) * src_ld + o);
            __m128 r3 = _mm_loadu_ps(src + (size_t)(i0 + 3) * src_ld + o);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dst + (size_t)(o + 0) * dst_ld + i0, r0);
            _mm_storeu_ps(dst + (size_t)(o + 1) * dst_ld + i0, r1);
            _mm_storeu_ps(dst + (size_t)(o + 2) * dst_ld + i0, r2);
            _mm_storeu_ps(dst + (size_t)(o + 3) * dst_ld + i0, r3);
        }
        for (; o < no; o++)
            for (int i = i0; i < i0 + 4; i++)
                dst[(size_t)o * dst_ld + i] = src[(size_t)i * src_ld + o];
    }
#endif
    for (int i = i0; i < ni; i++)
        for (int o = 0; o < no; o++)
            dst[(size_t)o * dst_ld + i] = src[(size_t)i * src_ld + o];
}

/* The input-gradient GEMMs read each kernel transposed; keep that copy in
 * step with the parameters.  Works one source panel against one
 * destination panel at a time, so both sides stay in L1. */
void frae_refresh_transposed(frae_model *m)
{
    for (int l = 0; l < m->net.n_mats; l++) {
        const frae_layer *ly = &m->net.layer[l];
        const int in = ly->in, out = ly->out;
        if (!m->wt[l])
            continue;
        const float *w = m->params + ly->w_off;
        for (int o0 = 0; o0 < out; o0 += FRAE_PANEL) {
            const int wo = out - o0 < FRAE_PANEL ? out - o0 : FRAE_PANEL;
            const float *src_panel = w + (size_t)o0 * in; /* in rows, wo wide */
            for (int i0 = 0; i0 < in; i0 += FRAE_PANEL) {
                const int wi = in - i0 < FRAE_PANEL ? in - i0 : FRAE_PANEL;
                float *dst_panel =
                    m->wt[l] + (size_t)i0 * out; /* out rows, wi wide */
                transpose_tile(src_panel + (size_t)i0 * wo, wo,
                               dst_panel + (size_t)o0 * wi, wi, wi, wo);
            }
        }
    }
}
