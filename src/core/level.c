/* The level term (frae.h, cfg.level_loss): the squared log ratio of the
 * decoded to the input power over each training window's active frames,
 * and its gradient (docs/2026-12-04-loudness.md).  A codec trained on
 * squared log-mel errors alone decodes the mean log of what it cannot
 * code, below the speech's power; this keeps the power where the encoder
 * can see it.  train.c calls it after a window's forward pass. */
#include <math.h>

#include "core/frae_internal.h"

#define LEVEL_ACTIVE_DB 30.0 /* the frames a window's level counts */

/* ln sum_d exp(k v_d) of one frame, v the frame's values in log-power
 * units (the normalization's inverse applied), and its largest term. */
double frae_frame_log_power(const frae_net *n, const float *v, double k,
                            double *top)
{
    const int D = n->cfg.frame_dim;
    const float *mu = n->cfg.normalize ? n->norm_mean : NULL;
    const float *sd = n->cfg.normalize ? n->norm_std : NULL;
    double mx = -HUGE_VAL, sum = 0;
    for (int d = 0; d < D; d++) {
        double a = k * (sd ? v[d] * sd[d] + mu[d] : v[d]);
        mx = a > mx ? a : mx;
    }
    for (int d = 0; d < D; d++)
        sum += exp(k * (sd ? v[d] * sd[d] + mu[d] : v[d]) - mx);
    *top = mx;
    return mx + log(sum);
}

/* The level term of one window: returns its sum over the sequences of
 * |A| delta^2 and adds its gradient into dy ([t][b][D]; NULL: none).  Per
 * sequence b, delta = ln SY - ln SX over
 * the window's active frames A (inputs within LEVEL_ACTIVE_DB of its
 * loudest valid input), SY = sum_A sum_d exp(k yhat), SX likewise, and
 * the term level_loss |A| delta^2 / total, so that dL/dy[t][d] =
 * 2 level_loss |A| delta exp(k yhat[t][d]) / SY k std_d / total. */
double frae_level_window(const frae_model *m, int nt, int nb, const int *valid,
                         int targets, float scale, float *dy)
{
    const frae_net *n = &m->net;
    const int D = n->cfg.frame_dim;
    const double k = n->cfg.level_scale > 0 ? n->cfg.level_scale : 5.0;
    const double span = LEVEL_ACTIVE_DB / 10.0 * log(10.0);
    const float *xs = targets ? m->tr.twin : m->tr.xwin;
    double *lx = m->tr.level_lx; /* [t][b], each frame's once */
    double sum = 0;
    for (int b = 0; b < nb; b++) {
        const int nv = valid ? (valid[b] < nt ? valid[b] : nt) : nt;
        double loudest = -HUGE_VAL, top;
        for (int t = 0; t < nv; t++) {
            double l = lx[(size_t)t * nb + b] =
                frae_frame_log_power(n, xs + ((size_t)t * nb + b) * D, k, &top);
            loudest = l > loudest ? l : loudest;
        }
        /* the sums, each relative to the loudest input frame's power */
        double sy = 0, sx = 0;
        int active = 0;
        for (int t = 0; t < nv; t++) {
            const double l = lx[(size_t)t * nb + b];
            if (l < loudest - span)
                continue;
            double ly = frae_frame_log_power(
                n,
                frae_state_frame(&m->state, m->state.ring_pos + t) +
                    (size_t)b * D,
                k, &top);
            sx += exp(l - loudest), sy += exp(ly - loudest);
            active++;
        }
        if (!active || !(sy > 0))
            continue;
        const double delta = log(sy) - log(sx);
        sum += active * delta * delta;
        if (!dy)
            continue;
        /* scale = 2 / (total D): the squared error's */
        const double g = (double)scale * D * n->cfg.level_loss * active * delta;
        const float *mu = n->cfg.normalize ? n->norm_mean : NULL;
        const float *sd = n->cfg.normalize ? n->norm_std : NULL;
        for (int t = 0; t < nv; t++) {
            if (lx[(size_t)t * nb + b] < loudest - span)
                continue;
            const float *y =
                frae_state_frame(&m->state, m->state.ring_pos + t) +
                (size_t)b * D;
            float *gy = dy + ((size_t)t * nb + b) * D;
            for (int d = 0; d < D; d++) {
                double v = k * (sd ? y[d] * sd[d] + mu[d] : y[d]);
                double share = exp(v - loudest) / sy;
                gy[d] += (float)(g * share * k * (sd ? sd[d] : 1.0));
            }
        }
    }
    return sum;
}
