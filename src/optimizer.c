/* Adam, in the form Keras uses: the bias correction is folded into the
 * step size and epsilon is added to sqrt(v) uncorrected ("epsilon hat"):
 *   alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
 *   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 *   p -= alpha * m / (sqrt(v) + eps)
 * torch.optim.Adam puts eps after the correction instead; the two differ
 * by a factor of sqrt(1 - beta2^t) in eps. */
#include <math.h>

#include "frae_internal.h"

void frae_adam_update(float *params, const float *grads, float *m, float *v,
                      size_t n, long step, float lr, float beta1, float beta2,
                      float eps)
{
    const double t = (double)step;
    const float alpha =
        (float)(lr * sqrt(1.0 - pow(beta2, t)) / (1.0 - pow(beta1, t)));
    const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        m[i] = beta1 * m[i] + one_b1 * g;
        v[i] = beta2 * v[i] + one_b2 * (g * g);
        params[i] -= alpha * m[i] / (sqrtf(v[i]) + eps);
    }
}

/* The input-gradient GEMMs read each kernel transposed; keep that copy in
 * step with the parameters.  Walks tile by tile (a source panel against a
 * destination panel) so both sides stay in L1. */
void frae_refresh_transposed(frae_model *m)
{
    for (int l = 0; l < m->n_layers; l++) {
        const frae_layer *ly = &m->layer[l];
        const int in = ly->in, out = ly->out;
        const float *w = m->params + ly->w_off;
        for (int o0 = 0; o0 < out; o0 += FRAE_PANEL) {
            const int wo = out - o0 < FRAE_PANEL ? out - o0 : FRAE_PANEL;
            const float *src_panel = w + (size_t)o0 * in; /* rows i, width wo */
            for (int i0 = 0; i0 < in; i0 += FRAE_PANEL) {
                const int wi = in - i0 < FRAE_PANEL ? in - i0 : FRAE_PANEL;
                float *dst_panel = ly->wt + (size_t)i0 * out; /* rows o, width wi */
                for (int o = 0; o < wo; o++)
                    for (int i = 0; i < wi; i++)
                        dst_panel[(size_t)(o0 + o) * wi + i] =
                            src_panel[(size_t)(i0 + i) * wo + o];
            }
        }
    }
}
