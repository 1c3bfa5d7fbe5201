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

/* The input-gradient GEMMs read each kernel as [out][in]; keep that copy in
 * step with the parameters.  Blocked so both sides stay in cache. */
void frae_refresh_transposed(frae_model *m)
{
    enum { TB = 32 };
    for (int l = 0; l < m->n_layers; l++) {
        const frae_layer *ly = &m->layer[l];
        const float *w = m->params + ly->w_off;
        for (int i0 = 0; i0 < ly->in; i0 += TB)
            for (int o0 = 0; o0 < ly->out; o0 += TB) {
                int i1 = i0 + TB < ly->in ? i0 + TB : ly->in;
                int o1 = o0 + TB < ly->out ? o0 + TB : ly->out;
                for (int i = i0; i < i1; i++)
                    for (int o = o0; o < o1; o++)
                        ly->wt[(size_t)o * ly->in + i] =
                            w[(size_t)i * ly->out + o];
            }
    }
}
