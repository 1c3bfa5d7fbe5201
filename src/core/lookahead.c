/* The encoder's look-ahead (cfg.lookahead): the next A input frames each
 * frame's encoder sees, held at the sequence's last valid frame past it,
 * alike for training (a window's, staged), inference and the codec (the
 * state's own, frame by frame). */
#include <string.h>

#include "core/frae_internal.h"

/* The frame that frame t's k-th frame ahead (0: the next) is: t + 1 + k,
 * held at sequence b's last valid frame (valid[b] of nframes; NULL:
 * all), frame 0 for a sequence with none. */
static long ahead_frame(long t, int k, long nframes, const int *valid, int b)
{
    long last = (valid && valid[b] < nframes ? valid[b] : nframes) - 1;
    last = last < 0 ? 0 : last;
    return t + 1 + k < last ? t + 1 + k : last;
}

void frae_ahead_put(const frae_net *m, frae_state *st, int b, int k,
                    const float *frame)
{
    const int D = m->cfg.frame_dim, A = m->cfg.lookahead;
    float *dst = st->ahead + ((size_t)b * A + k) * D;
    if (m->cfg.normalize)
        frae_normalize_rows(m, frame, 0, 1, dst);
    else
        memcpy(dst, frame, sizeof(float) * D);
    st->la = st->ahead;
    st->la_rs = (ptrdiff_t)A * D;
}

void frae_ahead_rows(const frae_net *m, frae_state *st, const float *x,
                     ptrdiff_t rs, int nseq, long t, long nframes,
                     const int *valid)
{
    const int D = m->cfg.frame_dim;
    for (int b = 0; b < nseq; b++)
        for (int k = 0; k < m->cfg.lookahead; k++)
            frae_ahead_put(m, st, b, k,
                           x + b * rs +
                               ahead_frame(t, k, nframes, valid, b) * D);
}

/* cfg.lookahead: stages each of the nt frames' next A input frames into
 * m->tr.xla as [frame][row][A*D] (z-scored if the model normalizes): frame
 * w0+t+a of sequence b, held at the sequence's last valid frame past it,
 * as a stream encoder holds its last frame at the end.  Erasure training's
 * second track takes the same rows. */
void frae_lookahead_stage(frae_model *m, const float *x, ptrdiff_t x_rs,
                          int nseq, int nframes, const int *valid, int w0,
                          int nt, int tracks)
{
    const int D = m->net.cfg.frame_dim, A = m->net.cfg.lookahead;
    const size_t row = (size_t)A * D, one = (size_t)nseq * row;
    for (int t = 0; t < nt; t++) {
        float *dst = m->tr.xla + (size_t)t * tracks * one;
        for (int b = 0; b < nseq; b++) {
            for (int a = 1; a <= A; a++) {
                const float *src =
                    x + b * x_rs +
                    ahead_frame(w0 + t, a - 1, nframes, valid, b) * D;
                float *d = dst + (size_t)b * row + (size_t)(a - 1) * D;
                if (m->net.cfg.normalize)
                    frae_normalize_rows(&m->net, src, x_rs, 1, d);
                else
                    memcpy(d, src, sizeof(float) * D);
            }
        }
        if (tracks == 2)
            memcpy(dst + one, dst, sizeof(float) * one);
    }
}
