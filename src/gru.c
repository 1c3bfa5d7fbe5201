/* The GRU cell's element-wise part, as torch.nn.GRUCell computes it (ATen's
 * gru_cell): with gx = b_ih + W_ih x and gh = b_hh + W_hh h, each cut into
 * r, z, n thirds,
 *   r = sigmoid(gx_r + gh_r)    z = sigmoid(gx_z + gh_z)
 *   n = tanh(gx_n + r * gh_n)   h' = n + z * (h - n)
 * The two products are the model's ordered chains (gemm.c); this part is
 * plain scalar code, one path for every ISA, so it is the same bits
 * everywhere. */
#include <math.h>

#include "frae_internal.h"

static inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

void frae_gru_forward(int nb, int H, const float *gx, const float *gh,
                      const float *h_prev, float *gates, float *h)
{
    for (int b = 0; b < nb; b++) {
        const float *xi = gx + (size_t)b * 3 * H, *hi = gh + (size_t)b * 3 * H;
        const float *hp = h_prev + (size_t)b * H;
        float *g = gates + (size_t)b * 4 * H, *ho = h + (size_t)b * H;
        for (int j = 0; j < H; j++) {
            float r = sigmoid(xi[j] + hi[j]);
            float z = sigmoid(xi[H + j] + hi[H + j]);
            float hn = hi[2 * H + j];
            float rn = r * hn;
            float n = tanhf(xi[2 * H + j] + rn);
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

void frae_gru_backward(int nb, int H, const float *dh, const float *gates,
                       const float *h_prev, float *dgx, float *dgh,
                       float *dh_prev)
{
    for (int b = 0; b < nb; b++) {
        const float *d = dh + (size_t)b * H, *hp = h_prev + (size_t)b * H;
        const float *g = gates + (size_t)b * 4 * H;
        float *gx = dgx + (size_t)b * 3 * H, *gh = dgh + (size_t)b * 3 * H;
        float *dp = dh_prev + (size_t)b * H;
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
