/* Erasure training (cfg.erasure > 0): the channel that loses a training
 * window's packets, and the gradient through the frames a receiver
 * conceals.  A lost frame's decoder runs on the latent it ran last,
 * halved (frae_forward_frame_lossy, as frae_decoder_conceal does), so the
 * loss on its output teaches the decoder what to say when nothing came,
 * and the frames after it teach it to come back.  The encoder runs every
 * frame as its sender would; what it is fed back is the decoder's, lost
 * frames included, so it sees the loss after the fact, as no real sender
 * does (docs/2026-12-02-loss-study.md says what that costs). */
#include <string.h>

#include "core/frae_internal.h"

/* Mean burst in packets: between the study's random loss (about 1) and
 * its bursty channel (Gilbert-Elliott, 3). */
#define ERASURE_BURST 2.0

/* Fills tr.lost for the window's nt frames of nb rows: per row, packets
 * of erasure_frames frames from the window's first frame, each lost or
 * not on a two-state chain (good -> burst with p / (burst (1 - p)), burst
 * -> good with 1 / burst: p of the packets lost, bursts of `burst` on
 * average) that goes on from the row's last window.  The draws are a
 * function of the seed, the Adam step and the row alone: the same bits on
 * every thread count, and again on a resume. */
void frae_erasure_channel(frae_model *m, int nt, int nb)
{
    const frae_config *c = &m->net.cfg;
    const int P = c->erasure_frames ? c->erasure_frames : 4;
    const double p = c->erasure;
    const double enter = p / (ERASURE_BURST * (1.0 - p));
    const double leave = 1.0 / ERASURE_BURST;
    for (int b = 0; b < nb; b++) {
        uint64_t key = c->seed ^ 0x6572617375726521ull; /* "erasure!" */
        uint64_t s = frae_rng_next(&key) ^ (uint64_t)m->tr.adam_step;
        s = frae_rng_next(&s) ^ (uint64_t)b;
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
 * at t; the frames after t are done.  A lost frame's latent is the one
 * before it halved, so its gradient goes back, halved, to that one
 * (q_carry) and none to the encoder, whose code was lost; a received
 * frame's takes what the lost frames after it carried, then goes on to
 * the encoder through the straight-through quantizer.  The window's first
 * frame's latent before it is a constant of the window, as h0 is. */
void frae_erasure_backward(frae_model *m, float *dq, int t, int nb)
{
    const int L = m->net.cfg.latent_dim;
    const unsigned char *lost = m->tr.lost + (size_t)t * nb;
    for (int b = 0; b < nb; b++) {
        float *g = dq + (size_t)b * L, *carry = m->tr.q_carry + (size_t)b * L;
        for (int u = 0; u < L; u++) {
            const float total = g[u] + carry[u];
            carry[u] = lost[b] ? FRAE_CONCEAL_DECAY * total : 0.0f;
            g[u] = lost[b] ? 0.0f : total;
        }
    }
}
