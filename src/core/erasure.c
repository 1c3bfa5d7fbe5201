/* Erasure training (cfg.erasure > 0): the channel that loses a training
 * window's packets, and the gradient through the frames a receiver
 * conceals.  Each sequence runs on two tracks, rows 0..S-1 and S..2S-1 of
 * the batch: the sender's, which loses nothing, so its encoder is fed back
 * what a real sender's is (a decoder that received every code), and the
 * receiver's, which decodes the sender's codes through the channel.  A
 * lost frame's decoder runs on the latent it ran last, halved
 * (frae_forward_frame_lossy, as frae_decoder_conceal does).  The loss is
 * the mean over both tracks: the sender's keeps the loss-free decode
 * trained; the receiver's teaches the decoder what to say when nothing
 * came and how to come back to the sender's state from codes made for it,
 * and teaches the encoder codes that survive a decoder that lost some. */
#include <string.h>

#include "core/frae_internal.h"

/* Mean burst in packets: between the study's random loss (about 1) and
 * its bursty channel (Gilbert-Elliott, 3). */
#define ERASURE_BURST 2.0

/* Fills tr.lost for the window's nt frames of nb = 2S rows: the sender's
 * rows lose nothing; per receiver's row, packets of erasure_frames frames
 * from the window's first frame, each lost or not on a two-state chain
 * (good -> burst with p / (burst (1 - p)), burst -> good with 1 / burst:
 * p of the packets lost, bursts of `burst` on average) that goes on from
 * the row's last window.  The draws are a function of the seed, the Adam
 * step, the sequence and the data-parallel replica's rank alone: the same
 * bits on every thread count, and again on a resume. */
void frae_erasure_channel(frae_model *m, int nt, int nb)
{
    const frae_config *c = &m->net.cfg;
    const int P = c->erasure_frames ? c->erasure_frames : 4, S = nb / 2;
    const double p = c->erasure;
    const double enter = p / (ERASURE_BURST * (1.0 - p));
    const double leave = 1.0 / ERASURE_BURST;
    /* data-parallel replicas each draw their own sequences' losses */
    const uint64_t rank = m->tr.reducer ? (uint64_t)m->tr.reducer->rank : 0;
    for (int t = 0; t < nt; t++)
        memset(m->tr.lost + (size_t)t * nb, 0, (size_t)S);
    for (int b = S; b < nb; b++) {
        uint64_t key = c->seed ^ 0x6572617375726521ull; /* "erasure!" */
        uint64_t s = frae_rng_next(&key) ^ (uint64_t)m->tr.adam_step;
        s = frae_rng_next(&s) ^ (uint64_t)(b - S) ^ (rank << 32);
        unsigned char bad = m->tr.lost_bad[b];
        for (int t = 0; t < nt; t++) {
            if (t % P == 0) {
                double r = (double)(frae_rng_next(&s) >> 11) * 0x1p-53;
                bad = bad ? r >= leave : r < enter;
            }
            m->tr.lost[(size_t)t * nb + b] = bad;
        }
        m->tr.lost_bad[b] = bad;
    }
}

/* dq [nb][L]: dL/d(the latent frame t's decoder ran on), from the decoder
 * at t, nb = 2S rows; the frames after t are done.  A receiver's lost
 * frame's latent is the one before it halved, so its gradient goes back,
 * halved, to that one (q_carry) and none to a code; a received frame's
 * takes what the lost frames after it carried, then joins the gradient of
 * the code it is, its sender's row's, and so goes on to the encoder
 * through the straight-through quantizer.  The receiver's own encoder
 * made no code used, so it gets none.  The window's first frame's latent
 * before it is a constant of the window, as h0 is. */
void frae_erasure_backward(frae_model *m, float *dq, int t, int nb)
{
    const int L = m->net.cfg.latent_dim, S = nb / 2;
    const unsigned char *lost = m->tr.lost + (size_t)t * nb;
    for (int b = S; b < nb; b++) {
        float *g = dq + (size_t)b * L, *carry = m->tr.q_carry + (size_t)b * L;
        float *sent = dq + (size_t)(b - S) * L;
        for (int u = 0; u < L; u++) {
            const float total = g[u] + carry[u];
            carry[u] = lost[b] ? FRAE_CONCEAL_DECAY * total : 0.0f;
            if (!lost[b])
                sent[u] += total;
            g[u] = 0.0f;
        }
    }
}
