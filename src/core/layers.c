/* Element-wise parts of the layers: activations, their derivatives, the
 * quantizer and bias gradients.  Plain loops; the compiler vectorises them
 * without changing any result (no fast-math). */
#include <math.h>

#include "core/frae_internal.h"

void frae_activate(int act, float *z, size_t n)
{
    if (act == ACT_RELU) {
        for (size_t i = 0; i < n; i++)
            z[i] = z[i] > 0.0f ? z[i] : 0.0f;
    } else if (act == ACT_TANH) {
        for (size_t i = 0; i < n; i++)
            z[i] = frae_tanhf(z[i]); /* tanhf, the same bits everywhere */
    }
}

/* dz holds dL/da on entry and dL/dz on exit; a is the activation output. */
void frae_activation_backward(int act, const float *a, float *dz, size_t n)
{
    if (act == ACT_RELU) {
        for (size_t i = 0; i < n; i++)
            dz[i] = a[i] > 0.0f ? dz[i] : 0.0f;
    } else if (act == ACT_TANH) {
        for (size_t i = 0; i < n; i++)
            dz[i] = dz[i] * (1.0f - a[i] * a[i]);
    }
}

/* Forward of the quantizer.  Its backward pass is the identity
 * (straight-through), so there is no backward function. */
void frae_quantize(const frae_config *cfg, const float *a, float *q, size_t n)
{
    switch (cfg->quantizer) {
    case FRAE_QUANT_BINARY:
        for (size_t i = 0; i < n; i++)
            q[i] = a[i] >= 0.0f ? 1.0f : -1.0f;
        break;
    case FRAE_QUANT_UNIFORM: {
        const float top = (float)(cfg->quant_levels - 1);
        const float step = 2.0f / top;
        for (size_t i = 0; i < n; i++) {
            /* round half to even, as torch.round and numpy.round do */
            float idx = nearbyintf((a[i] + 1.0f) * 0.5f * top);
            idx = idx < 0.0f ? 0.0f : idx > top ? top : idx;
            q[i] = idx * step - 1.0f;
        }
        break;
    }
    default:
        for (size_t i = 0; i < n; i++)
            q[i] = a[i];
        break;
    }
}

/* gb[o] (+)= sum over rows of dz[row][o], rows in order. */
void frae_bias_grad(const float *dz, int rows, int out, float *gb,
                    int accumulate)
{
    if (!accumulate)
        for (int o = 0; o < out; o++)
            gb[o] = 0.0f;
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++)
            gb[o] += dz[(size_t)r * out + o];
}

/* Bits per latent value: the quantizer's (frae.h, "Streaming codec"). */
int frae_code_bits(const frae_net *m)
{
    const frae_config *c = &m->cfg;
    if (c->quantizer == FRAE_QUANT_BINARY)
        return 1;
    if (c->quantizer == FRAE_QUANT_UNIFORM) {
        int bits = 0;
        while ((1L << bits) < c->quant_levels)
            bits++;
        return bits;
    }
    return 32; /* no quantizer: the float itself */
}
