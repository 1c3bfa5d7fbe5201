/* The encoder's look-ahead (cfg.lookahead): the next A input frames each
 * frame's encoder sees, alike for training (a window's, staged), inference
 * and the codec (the state's own, frame by frame).  Past the sequence's
 * last valid frame they are held at it; a model with cfg.lookahead_packet
 * sees none past the first frame of the next packet either, and a frame it
 * does not see is zeros with a flag of 0 beside it (frae_ahead_width), so
 * that every fourth frame of 40 ms packets is not taken for a steady one. */
#include <string.h>

#include "core/frae_internal.h"

/* The last frame that frame t of sequence b may see: its last valid one
 * (valid[b] of nframes; NULL: all), frame 0 for a sequence with none, and
 * with packets of P frames (P > 0) the first frame of the packet after
 * t's. */
static long last_seen(long t, long nframes, const int *valid, int b, int P)
{
    long last = (valid && valid[b] < nframes ? valid[b] : nframes) - 1;
    last = last < 0 ? 0 : last;
    if (P > 0 && t - t % P + P < last)
        last = t - t % P + P;
    return last;
}

int frae_ahead_horizon(const frae_net *m, uint64_t t)
{
    const int A = m->cfg.lookahead, P = m->cfg.lookahead_packet;
    const int to_edge = P > 0 ? P - (int)(t % (uint64_t)P) : A;
    return to_edge < A ? to_edge : A;
}

/* frame (NULL: none, zeros and a flag of 0) into a view ahead's slot k,
 * dst the row's start */
static void put_slot(const frae_net *m, float *dst, int k, const float *frame)
{
    const int D = m->cfg.frame_dim, A = m->cfg.lookahead;
    float *d = dst + (size_t)k * D;
    if (!frame)
        memset(d, 0, sizeof(float) * D);
    else if (m->cfg.normalize)
        frae_normalize_rows(m, frame, 0, 1, d);
    else
        memcpy(d, frame, sizeof(float) * D);
    if (m->cfg.lookahead_packet > 0)
        dst[(size_t)A * D + k] = frame ? 1.0f : 0.0f;
}

void frae_ahead_put(const frae_net *m, frae_state *st, int b, int k,
                    const float *frame)
{
    const int width = frae_ahead_width(&m->cfg);
    put_slot(m, st->ahead + (size_t)b * width, k, frame);
    st->la = st->ahead;
    st->la_rs = width;
}

/* Frame t of sequence b's k-th frame ahead (0: the next) from x (rows rs
 * apart), NULL for a packet model's frame it does not see. */
static const float *ahead_of(const frae_net *m, const float *x, ptrdiff_t rs,
                             long t, int k, long nframes, const int *valid,
                             int b)
{
    const int P = m->cfg.lookahead_packet;
    const long last = last_seen(t, nframes, valid, b, P);
    if (P > 0 && t + 1 + k > last)
        return NULL;
    return x + b * rs +
           (t + 1 + k < last ? t + 1 + k : last) * m->cfg.frame_dim;
}

void frae_ahead_rows(const frae_net *m, frae_state *st, const float *x,
                     ptrdiff_t rs, int nseq, long t, long nframes,
                     const int *valid)
{
    for (int b = 0; b < nseq; b++)
        for (int k = 0; k < m->cfg.lookahead; k++)
            frae_ahead_put(m, st, b, k,
                           ahead_of(m, x, rs, t, k, nframes, valid, b));
}

/* cfg.lookahead: stages each of the nt frames' view ahead into m->tr.xla as
 * [frame][row][frae_ahead_width] (z-scored if the model normalizes), as a
 * stream encoder gives them.  Erasure training's second track takes the
 * same rows. */
void frae_lookahead_stage(frae_model *m, const float *x, ptrdiff_t x_rs,
                          int nseq, int nframes, const int *valid, int w0,
                          int nt, int tracks)
{
    const frae_net *net = &m->net;
    const size_t row = (size_t)frae_ahead_width(&net->cfg),
                 one = (size_t)nseq * row;
    for (int t = 0; t < nt; t++) {
        float *dst = m->tr.xla + (size_t)t * tracks * one;
        for (int b = 0; b < nseq; b++)
            for (int k = 0; k < net->cfg.lookahead; k++)
                put_slot(net, dst + (size_t)b * row, k,
                         ahead_of(net, x, x_rs, w0 + t, k, nframes, valid, b));
        if (tracks == 2)
            memcpy(dst + one, dst, sizeof(float) * one);
    }
}
