/* Training: the loss, the backward pass and the BPTT windows, and the
 * calls built on them (the forward pass of a frame is forward.c's, on the
 * model's own stream state).  Nothing here allocates: every buffer was
 * carved by frae_create.
 *
 * Activations are stored row-major as [frame][sequence][width], so the rows
 * of a whole window form one matrix and the weight gradients of a layer are
 * a single GEMM over all of them. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"

/* Rows a training call runs per sequence: erasure training's two tracks
 * (erasure.c), else one. */
static int tracks_of(const frae_model *m) { return m->tr.lost ? 2 : 1; }

static void set_lookahead(frae_model *m, int t, int nb);

/* The model's decoded frame at window position t. */
static float *out_frame(const frae_model *m, long t)
{
    return frae_state_frame(&m->state, m->state.ring_pos + t);
}

typedef struct {
    double sse, sae, bits, level;
    long values, frames;
} loss_acc;

/* Adds frame t's errors to acc; if dy is non-NULL writes dL/dy there.
 * Rows past their sequence's end (t >= valid[b]) are padding: no loss and
 * no gradient. */
static void frame_loss(const frae_model *m, long t, const float *x,
                       ptrdiff_t x_rs, int nb, const int *valid, loss_acc *acc,
                       float *dy, float scale)
{
    const int D = m->net.cfg.frame_dim;
    const float *y = out_frame(m, t);
    for (int b = 0; b < nb; b++) {
        if (valid && t >= valid[b]) {
            if (dy)
                memset(dy + (size_t)b * D, 0, sizeof(float) * D);
            continue;
        }
        for (int d = 0; d < D; d++) {
            const float w = frae_value_weight(&m->net.cfg, d);
            float diff = y[(size_t)b * D + d] - x[b * x_rs + d];
            acc->sse += (double)w * diff * diff;
            acc->sae += fabs((double)diff);
            if (dy)
                dy[(size_t)b * D + d] = scale * (w * diff);
        }
        acc->values += D;
        acc->frames++;
    }
}

/* Padding frames (t >= valid[b]) carry nothing: after their forward pass
 * their output frame in the ring is zeroed, so the frames after them see a
 * silent buffer.  Left alone, a padded row would run the feedback loop on
 * its own outputs with no input, free to grow until it overflows, and an
 * Inf activation times its zero gradient makes a NaN weight gradient. */
static void silence_padding(frae_model *m, long t, int nb, const int *valid)
{
    const int D = m->net.cfg.frame_dim;
    float *y = out_frame(m, t);
    for (int b = 0; valid && b < nb; b++)
        if (t >= valid[b])
            memset(y + (size_t)b * D, 0, sizeof(float) * D);
}

/* The gradient before activation of matrix ly (one of m's). */
static float *layer_dz(const frae_model *m, const frae_layer *ly)
{
    return m->tr.dz[ly - m->net.layer];
}

/* Gradient rows of frame t for layer l: dL/dy (the output layer) is kept
 * for the whole window, the others for the chunk starting at frame c0. */
static float *dz_rows(const frae_model *m, int l, int t, int c0, int nb)
{
    const frae_layer *ly = &m->net.layer[l];
    int row_frame = l == m->net.n_layers - 1 ? t : t - c0;
    return m->tr.dz[l] + (size_t)row_frame * nb * ly->out;
}

/* Back-propagates the dz of layer `from` for frames t0..t0+nt-1 (inside
 * the chunk starting at c0) down through the layers above layer `to`: into
 * each dense layer's dz (then through its activation), from the first
 * decoder layer into the latent (through the straight-through quantizer),
 * and into a GRU's carried dL/dh (added).  Rows are independent, so the
 * dense family's detached mode runs a whole chunk as one call. */
static void layers_backward(frae_model *m, int from, int to, int t0, int nt,
                            int nb, int c0)
{
    const int rows = nt * nb;
    for (int l = from; l > to; l--) {
        const frae_layer *ly = &m->net.layer[l];
        const int p = l == m->net.dec_first ? m->net.latent : l - 1;
        const frae_layer *pv = &m->net.layer[p];
        const int width =
            l == m->net.dec_first ? m->net.cfg.latent_dim : ly->in;
        const float *dz = dz_rows(m, l, t0, c0, nb);
        if (pv->act == ACT_GRU) { /* one frame at a time */
            frae_gemm_packed_b(&m->net, &m->state.scratch, rows, ly->out, dz,
                               ly->out, 1, ly->wt, ly->out, ly->in, 0, 0, width,
                               m->tr.dh_carry[p != 0], width, NULL, GEMM_ACC);
            continue;
        }
        float *dprev = dz_rows(m, p, t0, c0, nb);
        frae_gemm_packed_b(&m->net, &m->state.scratch, rows, ly->out, dz,
                           ly->out, 1, ly->wt, ly->out, ly->in, 0, 0, width,
                           dprev, pv->out, NULL, GEMM_ZERO);
        if (p == m->net.latent && m->tr.lost) /* GRU: one frame */
            frae_erasure_backward(m, dprev, t0, nb);
        if (p == m->net.latent && m->tr.rate_dq &&
            m->net.cfg.rate_lambda > 0.0f) {
            /* the rate's straight-through slope joins the distortion's */
            const float *dq = m->tr.rate_dq + (size_t)t0 * nb * pv->out;
            for (size_t i = 0; i < (size_t)rows * pv->out; i++)
                dprev[i] += dq[i];
        }
        frae_activation_backward(pv->act,
                                 m->state.a[p] + (size_t)t0 * nb * pv->out,
                                 dprev, (size_t)rows * pv->out);
    }
}

/* Full feedback: y_s fed frame s+1+j as buffer slot j through both first
 * layers.  dL/d(buffer) of frame t comes from the buffer columns of the two
 * first layers, one GEMM each over all K slots; slot j then goes back into
 * dL/dy of frame t-1-j. */
static void feedback_backward(frae_model *m, int t, int nb, int c0)
{
    const int D = m->net.cfg.frame_dim;
    const int KD = m->net.cfg.history * D;
    const int e0 = frae_buffer_row(&m->net, 0),
              d0 = frae_buffer_row(&m->net, 1);
    const frae_layer *enc = &m->net.layer[0],
                     *dec = &m->net.layer[m->net.dec_first];
    const int nslots = t < m->net.cfg.history ? t : m->net.cfg.history;
    if (nslots == 0)
        return;
    frae_gemm_packed_b(&m->net, &m->state.scratch, nb, enc->out,
                       dz_rows(m, 0, t, c0, nb), enc->out, 1, enc->wt, enc->out,
                       enc->in, 0, e0, e0 + nslots * D, m->tr.fb, KD, NULL,
                       GEMM_ZERO);
    frae_gemm_packed_b(&m->net, &m->state.scratch, nb, dec->out,
                       dz_rows(m, m->net.dec_first, t, c0, nb), dec->out, 1,
                       dec->wt, dec->out, dec->in, 0, d0, d0 + nslots * D,
                       m->tr.fb, KD, NULL, GEMM_ACC);
    for (int j = 0; j < nslots; j++) {
        float *dys = dz_rows(m, m->net.n_layers - 1, t - 1 - j, c0, nb);
        for (int b = 0; b < nb; b++)
            for (int d = 0; d < D; d++)
                dys[(size_t)b * D + d] += m->tr.fb[(size_t)b * KD + j * D + d];
    }
}

/* Weight-gradient rows head_w + j*D.. for buffer slot j over frames c0..
 * c0+nt-1: consecutive ring frames, split in two where the ring wraps. */
static void buffer_weight_grad(frae_model *m, const frae_layer *ly, int head_w,
                               int j, int c0, int nt, int nb, int init)
{
    const int D = m->net.cfg.frame_dim;
    const frae_state *st = &m->state;
    float *gw = m->tr.grads + ly->w_off;
    long p0 = (st->ring_pos + c0 - 1 - j) % st->ring_cap;
    if (p0 < 0)
        p0 += st->ring_cap;
    int n1 = st->ring_cap - p0 < nt ? (int)(st->ring_cap - p0) : nt;
    frae_gemm_packed_c(&m->net, &st->scratch, D, n1 * nb,
                       frae_state_frame(st, p0), D, layer_dz(m, ly), ly->out,
                       gw, ly->in, ly->out, head_w + j * D, init);
    if (n1 < nt)
        frae_gemm_packed_c(&m->net, &st->scratch, D, (nt - n1) * nb,
                           frae_state_frame(st, 0), D,
                           layer_dz(m, ly) + (size_t)n1 * nb * ly->out, ly->out,
                           gw, ly->in, ly->out, head_w + j * D, GEMM_ACC);
}

/* GRU family: weight-gradient rows row0.. of matrix ly (whose dz holds the
 * chunk's product gradients) from the GRU state of `side` one frame back,
 * h(t-1) for t = c0..c0+nt-1: the window's first frame reads the state the
 * window started from (h0), the others the kept activations. */
static void prev_state_grad(frae_model *m, int side, const frae_layer *ly,
                            int row0, int c0, int nt, int nb, int init)
{
    const frae_state *st = &m->state;
    const int lg = side ? m->net.dec_first : 0, H = m->net.layer[lg].units;
    float *gw = m->tr.grads + ly->w_off;
    const float *dz = layer_dz(m, ly); /* the chunk's first frame */
    if (c0 == 0) {
        frae_gemm_packed_c(&m->net, &st->scratch, H, nb, st->h0[side], H, dz,
                           ly->out, gw, ly->in, ly->out, row0, init);
        if (nt > 1)
            frae_gemm_packed_c(&m->net, &st->scratch, H, (nt - 1) * nb,
                               st->a[lg], H, dz + (size_t)nb * ly->out, ly->out,
                               gw, ly->in, ly->out, row0, GEMM_ACC);
    } else {
        frae_gemm_packed_c(&m->net, &st->scratch, H, nt * nb,
                           st->a[lg] + (size_t)(c0 - 1) * nb * H, H, dz,
                           ly->out, gw, ly->in, ly->out, row0, init);
    }
}

/* GRU family: the state h of `side` one frame before t. */
static const float *prev_state(const frae_model *m, int side, int t, int nb)
{
    const int lg = side ? m->net.dec_first : 0, H = m->net.layer[lg].units;
    return t == 0 ? m->state.h0[side]
                  : m->state.a[lg] + (size_t)(t - 1) * nb * H;
}

/* GRU family: dh_carry[side] holds the gradient carried from later frames
 * into h(t); completes it with the layers above (added to it) and runs the
 * cell backward: the products' gradients land in the dz rows of the input
 * and recurrent matrices, and dh_carry becomes what goes on to h(t-1). */
static void gru_cell_backward(frae_model *m, int side, int t, int nb, int c0)
{
    const int lg = side ? m->net.dec_first : 0, rec = m->net.rec[side];
    const frae_layer *ly = &m->net.layer[lg], *rl = &m->net.layer[rec];
    const int H = ly->units;
    float *carry = m->tr.dh_carry[side];
    float *dgx = dz_rows(m, lg, t, c0, nb), *dgh = dz_rows(m, rec, t, c0, nb);
    frae_gru_rows_backward(&m->net, &m->state.scratch, nb, H, carry,
                           m->state.gates[side] + (size_t)t * nb * 4 * H,
                           prev_state(m, side, t, nb), dgx, dgh, carry);
    frae_gemm_packed_b(&m->net, &m->state.scratch, nb, rl->out, dgh, rl->out, 1,
                       rl->wt, rl->out, rl->in, 0, 0, H, carry, H, NULL,
                       GEMM_ACC);
}

/* GRU family: back-propagates frame t (the frames after it done): the
 * decoder's dense layers, its GRU, the latent through the straight-through
 * quantizer, the encoder's dense layers and GRU; with full feedback also
 * into h_dec(t-1) and the fed-back frames. */
static void gru_backward_frame(frae_model *m, int t, int nb, int c0)
{
    const int D = m->net.cfg.frame_dim;
    const frae_layer *dec = &m->net.layer[m->net.dec_first],
                     *enc = &m->net.layer[0];
    layers_backward(m, m->net.n_layers - 1, m->net.dec_first, t, 1, nb, c0);
    gru_cell_backward(m, 1, t, nb, c0);
    layers_backward(m, m->net.dec_first, 0, t, 1, nb, c0);
    gru_cell_backward(m, 0, t, nb, c0);
    if (m->net.cfg.feedback == FRAE_FEEDBACK_FULL) {
        if (t > 0) /* h_dec(t-1) fed the encoder; h0 is a constant */
            frae_gemm_packed_b(&m->net, &m->state.scratch, nb, enc->out,
                               dz_rows(m, 0, t, c0, nb), enc->out, 1, enc->wt,
                               enc->out, enc->in, 0, D, D + dec->units,
                               m->tr.dh_carry[1], dec->units, NULL, GEMM_ACC);
        if (t > 0 && m->tr.prior_dctx) { /* ... and the prior's context */
            const size_t n = (size_t)nb * dec->units;
            const float *g = m->tr.prior_dctx + (size_t)t * n;
            for (size_t i = 0; i < n; i++)
                m->tr.dh_carry[1][i] += g[i];
        }
        if (m->net.cfg.history > 0)
            feedback_backward(m, t, nb, c0);
    }
}

/* Adds the chunk of frames c0..c0+nt-1 to every parameter gradient (init
 * GEMM_ZERO for the first chunk), one GEMM per weight block. */
static void weight_grads(frae_model *m, int c0, int nt, int nb, int init)
{
    const int rows = nt * nb, D = m->net.cfg.frame_dim,
              L = m->net.cfg.latent_dim;
    const size_t r0 = (size_t)c0 * nb;
    for (int l = 0; l < m->net.n_layers; l++) {
        const frae_layer *ly = &m->net.layer[l];
        float *gw = m->tr.grads + ly->w_off;
        const float *dz = dz_rows(m, l, c0, c0, nb);
        if (l == 0 || l == m->net.dec_first) {
            int head_w = l == 0 ? D : L;
            const float *head =
                (l == 0 ? m->tr.xwin : m->state.q) + r0 * head_w;
            frae_gemm_packed_c(&m->net, &m->state.scratch, head_w, rows, head,
                               head_w, dz, ly->out, gw, ly->in, ly->out, 0,
                               init);
            if (m->net.gru && l == 0) /* the GRU encoder's h_dec(t-1) rows */
                prev_state_grad(m, 1, ly, D, c0, nt, nb, init);
            if (l == 0 && m->net.cfg.lookahead > 0) {
                const int aw = frae_ahead_width(&m->net.cfg);
                frae_gemm_packed_c(&m->net, &m->state.scratch, aw, rows,
                                   m->tr.xla + r0 * aw, aw, dz, ly->out, gw,
                                   ly->in, ly->out, frae_lookahead_row(&m->net),
                                   init);
            }
            for (int j = 0; j < m->net.cfg.history; j++)
                buffer_weight_grad(m, ly, frae_buffer_row(&m->net, l != 0), j,
                                   c0, nt, nb, init);
        } else {
            frae_gemm_packed_c(&m->net, &m->state.scratch, ly->in, rows,
                               m->state.a[l - 1] + r0 * ly->in, ly->in, dz,
                               ly->out, gw, ly->in, ly->out, 0, init);
        }
        frae_bias_grad(dz, rows, ly->out, m->tr.grads + ly->b_off,
                       init == GEMM_ACC);
    }
    for (int side = 0; m->net.gru && side < 2; side++) {
        const frae_layer *rec = &m->net.layer[m->net.rec[side]];
        prev_state_grad(m, side, rec, 0, c0, nt, nb, init);
        frae_bias_grad(dz_rows(m, m->net.rec[side], c0, c0, nb), rows, rec->out,
                       m->tr.grads + rec->b_off, init == GEMM_ACC);
    }
}

/* The prior over the window's nt frames (their contexts taken during the
 * forward pass): its logits, the rate of the valid frames' codes, and with
 * grads its gradients and the codes' (scaled by rate_scale). */
static void window_rate(frae_model *m, int nt, int nb, const int *valid,
                        float rate_scale, int grads, loss_acc *acc)
{
    const frae_config *c = &m->net.cfg;
    frae_state *st = &m->state;
    const int L = c->latent_dim, LS = L * frae_prior_symbols(c);
    frae_prior_forward(&m->net, &st->scratch, nt * nb, st->prior_ctx,
                       st->prior_hid, st->prior_logit);
    frae_prior_ar_forward(&m->net, &st->scratch, nt * nb, st->q,
                          st->prior_logit);
    float *dlogit = grads ? m->tr.dz[m->net.prior[1]] : NULL;
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < nb; b++) {
            const size_t r = (size_t)t * nb + b;
            if (valid && t >= valid[b]) {
                if (grads) {
                    memset(dlogit + r * LS, 0, sizeof(float) * LS);
                    memset(m->tr.rate_dq + r * L, 0, sizeof(float) * L);
                }
                continue;
            }
            acc->bits += frae_prior_bits(
                c, st->prior_logit + r * LS, st->q + r * L,
                grads ? dlogit + r * LS : NULL,
                grads ? m->tr.rate_dq + r * L : NULL, rate_scale);
        }
    if (!grads)
        return;
    frae_prior_backward(m, nt * nb);
    frae_prior_ar_backward(m, nt * nb, st->q, m->tr.rate_dq);
    if (!m->tr.prior_dctx || m->net.gru) /* the GRU's: in gru_backward_frame */
        return;
    /* dense, full feedback: frame t's context is y_{t-1-j} in slot j, so
     * its gradient joins dL/dy of those frames (the window's own; earlier
     * ones are constants), before the backward pass reads them */
    const int D = c->frame_dim, K = c->history, C = K * D;
    float *dy = m->tr.dz[m->net.n_layers - 1];
    for (int t = 1; t < nt; t++)
        for (int j = 0; j < K && t - 1 - j >= 0; j++)
            for (int b = 0; b < nb; b++) {
                const float *g =
                    m->tr.prior_dctx + ((size_t)t * nb + b) * C + (size_t)j * D;
                float *d = dy + ((size_t)(t - 1 - j) * nb + b) * D;
                for (int k = 0; k < D; k++)
                    d[k] += g[k];
            }
}

/* Forward, loss and gradients of one window of nt frames (x staged in
 * m->tr.xwin).  The ring position is left at the window's start.  The
 * backward pass runs chunk by chunk from the end of the window. */
static void window_grads(frae_model *m, int nt, int nb, const int *valid,
                         int targets, float scale, float rate_scale,
                         loss_acc *acc)
{
    const int D = m->net.cfg.frame_dim, C = m->tr.chunk_frames;
    const int full =
        m->net.cfg.feedback == FRAE_FEEDBACK_FULL && m->net.cfg.history > 0;
    float *dy = m->tr.dz[m->net.n_layers - 1];
    for (int side = 0; m->net.gru && side < 2; side++) {
        /* the window starts from these states (constants for it) and its
         * backward from no gradient beyond it */
        const size_t n = (size_t)nb * m->net.layer[m->net.rec[side]].in;
        if (m->state.h[side] != m->state.h0[side]) {
            memcpy(m->state.h0[side], m->state.h[side], sizeof(float) * n);
            m->state.h[side] = m->state.h0[side];
        }
        memset(m->tr.dh_carry[side], 0, sizeof(float) * n);
    }
    if (m->tr.lost) { /* erasure training: this window's lost frames */
        frae_erasure_channel(m, nt, nb);
        memset(m->tr.q_carry, 0,
               sizeof(float) * (size_t)nb * m->net.cfg.latent_dim);
    }
    for (int t = 0; t < nt; t++) {
        const float *xt = m->tr.xwin + (size_t)t * nb * D;
        if (m->net.prior[0] >= 0) /* what the decoder holds before frame t */
            frae_prior_context(&m->net, &m->state, t, nb,
                               m->state.prior_ctx +
                                   (size_t)t * nb *
                                       m->net.layer[m->net.prior[0]].in);
        set_lookahead(m, t, nb);
        if (m->tr.lost)
            frae_forward_frame_lossy(&m->net, &m->state, t, xt, D, nb,
                                     m->tr.lost + (size_t)t * nb, m->tr.last_q);
        else
            frae_forward_frame(&m->net, &m->state, t, xt, D, nb);
        silence_padding(m, t, nb, valid);
        frame_loss(m, t, targets ? m->tr.twin + (size_t)t * nb * D : xt, D, nb,
                   valid, acc, dy + (size_t)t * nb * D, scale);
    }
    if (m->net.cfg.level_loss > 0.0f) /* level.c */
        acc->level += frae_level_window(m, nt, nb, valid, targets, scale, dy);
    if (m->net.prior[0] >= 0)
        window_rate(m, nt, nb, valid, rate_scale, 1, acc);
    int last_c0 = (nt - 1) / C * C;
    for (int c0 = last_c0; c0 >= 0; c0 -= C) {
        int cn = nt - c0 < C ? nt - c0 : C;
        if (m->net.gru) {
            for (int t = c0 + cn - 1; t >= c0; t--)
                gru_backward_frame(m, t, nb, c0);
        } else if (full) {
            for (int t = c0 + cn - 1; t >= c0; t--) {
                layers_backward(m, m->net.n_layers - 1, 0, t, 1, nb, c0);
                feedback_backward(m, t, nb, c0);
            }
        } else {
            layers_backward(m, m->net.n_layers - 1, 0, c0, cn, nb, c0);
        }
        weight_grads(m, c0, cn, nb, c0 == last_c0 ? GEMM_ZERO : GEMM_ACC);
    }
}

/* Copies frames w0..w0+nt-1 of nseq sequences (rows x_rs apart) into
 * win (m->tr.xwin, or m->tr.twin for targets) as [frame][row][D], z-scored
 * if the model normalizes.  With `tracks` 2 (erasure training) each
 * sequence takes two rows, b and nseq + b. */
static void stage_window(frae_model *m, float *win, const float *x,
                         ptrdiff_t x_rs, int nseq, int w0, int nt, int tracks)
{
    const int D = m->net.cfg.frame_dim;
    const size_t one = (size_t)nseq * D;
    for (int t = 0; t < nt; t++) {
        float *dst = win + (size_t)t * tracks * one;
        if (m->net.cfg.normalize) {
            frae_normalize_rows(&m->net, x + (ptrdiff_t)(w0 + t) * D, x_rs,
                                nseq, dst);
        } else {
            for (int b = 0; b < nseq; b++)
                memcpy(dst + (size_t)b * D,
                       x + b * x_rs + (ptrdiff_t)(w0 + t) * D,
                       sizeof(float) * D);
        }
        if (tracks == 2)
            memcpy(dst + one, dst, sizeof(float) * one);
    }
}

/* Points the state at frame t's look-ahead rows (nb of them). */
static void set_lookahead(frae_model *m, int t, int nb)
{
    const size_t row = (size_t)frae_ahead_width(&m->net.cfg);
    if (row == 0)
        return;
    m->state.la = m->tr.xla + (size_t)t * nb * row;
    m->state.la_rs = (ptrdiff_t)row;
}

/* Frame t of nseq sequences (rows x_rs apart) as the network takes it: in
 * place, or z-scored into m->xnorm.  Sets *rs to its row stride. */
static const float *net_rows(frae_model *m, float *norm, const float *x,
                             ptrdiff_t x_rs, int nseq, long t, ptrdiff_t *rs)
{
    const int D = m->net.cfg.frame_dim;
    if (!m->net.cfg.normalize) {
        *rs = x_rs;
        return x + t * D;
    }
    frae_normalize_rows(&m->net, x + t * D, x_rs, nseq, norm);
    *rs = D;
    return norm;
}

static const float *net_input(frae_model *m, const float *x, ptrdiff_t x_rs,
                              int nseq, long t, ptrdiff_t *rs)
{
    return net_rows(m, m->xnorm, x, x_rs, nseq, t, rs);
}

static int bad_sizes(const frae_model *m, int nseq, int nframes)
{
    return nseq < 1 || nseq > m->net.cfg.batch || nframes < 1;
}

static void fill_stats(frae_stats *st, const loss_acc *acc, long steps,
                       double grad_norm)
{
    if (!st)
        return;
    st->mse = acc->values ? acc->sse / (double)acc->values : 0.0;
    st->mae = acc->values ? acc->sae / (double)acc->values : 0.0;
    st->rate_bits = acc->bits;
    st->rate = acc->frames ? acc->bits / (double)acc->frames : 0.0;
    st->level_sum = acc->level;
    st->level = acc->frames ? acc->level / (double)acc->frames : 0.0;
    st->sse = acc->sse;
    st->sae = acc->sae;
    st->values = acc->values;
    st->frames = acc->frames;
    st->steps = steps;
    st->grad_norm = grad_norm;
}

/* The ring moves on past the nt frames just run. */
static void advance(frae_model *m, long nt)
{
    frae_state *st = &m->state;
    st->ring_pos = (int)((st->ring_pos + nt) % st->ring_cap);
}

/* The buffers belong to the sequences in flight since the last reset. */
static int claim_rows(frae_model *m, int nseq)
{
    if (m->state.ring_rows == 0)
        m->state.ring_rows = nseq;
    return m->state.ring_rows == nseq ? 0 : -1;
}

/* Scales the gradients to global L2 norm cfg.clip_norm when above it.
 * Returns the norm before clipping. */
static double clip_gradients(frae_model *m)
{
    /* eight running sums, added in a fixed order at the end: the compiler
     * can vectorise this (one serial sum was 8% of a batch-1 step) and the
     * result is still the same on every path */
    double part[8] = {0};
    size_t j = 0;
    for (; j + 8 <= m->net.n_params; j += 8)
        for (int k = 0; k < 8; k++)
            part[k] += (double)m->tr.grads[j + k] * m->tr.grads[j + k];
    for (; j < m->net.n_params; j++)
        part[0] += (double)m->tr.grads[j] * m->tr.grads[j];
    double ss = ((part[0] + part[1]) + (part[2] + part[3])) +
                ((part[4] + part[5]) + (part[6] + part[7]));
    double norm = sqrt(ss);
    if (m->net.cfg.clip_norm > 0.0f && norm > m->net.cfg.clip_norm) {
        float scale = (float)(m->net.cfg.clip_norm / norm);
        for (size_t i = 0; i < m->net.n_params; i++)
            m->tr.grads[i] *= scale;
    }
    return norm;
}

/* The window's forward pass alone, for rows that are all padding: the
 * buffers still move on.  Erasure training's two tracks run from the
 * staged window (its rows are the sequences twice). */
static void padding_forward(frae_model *m, const float *x, ptrdiff_t x_rs,
                            int nseq, int w0, int nt, int tracks)
{
    const int D = m->net.cfg.frame_dim, nb = tracks * nseq;
    if (tracks == 2)
        stage_window(m, m->tr.xwin, x, x_rs, nseq, w0, nt, tracks);
    for (int t = 0; t < nt; t++) {
        ptrdiff_t rs = D;
        const float *xt =
            tracks == 2 ? m->tr.xwin + (size_t)t * nb * D
                        : net_input(m, x + (ptrdiff_t)w0 * D, x_rs, nb, t, &rs);
        set_lookahead(m, t, nb);
        frae_forward_frame(&m->net, &m->state, t, xt, rs, nb);
        silence_padding(m, t, nb, m->wvalid);
    }
}

/* One window of nt <= W frames of nseq sequences, continuing the
 * buffers: forward, loss over the valid frames, backward, and (if update)
 * clipping and an Adam step.  x holds frame w0 of sequence 0; sequence
 * rows are x_rs apart; valid[b] counts the valid frames of sequence b from
 * x's frame 0 (NULL: all).  Erasure training runs each sequence on two
 * tracks (erasure.c), 2 nseq rows, and the loss is their mean.  With a
 * reducer the count and the gradients are the replicas' sums, and a
 * replica whose rows are all padding adds zeros.  Returns -1 if the
 * reducer failed. */
static int train_window(frae_model *m, const float *x, const float *target,
                        ptrdiff_t x_rs, int nseq, int w0, int nt,
                        const int *valid, int update, loss_acc *acc,
                        long *steps, double *grad_norm)
{
    const int D = m->net.cfg.frame_dim;
    const int tracks = tracks_of(m), nb = tracks * nseq;
    const frae_reducer *red = m->tr.reducer;
    long count = 0;
    for (int b = 0; b < nb; b++) {
        long v = valid ? valid[b % nseq] - (long)w0 : nt;
        m->wvalid[b] = (int)(v < 0 ? 0 : v > nt ? nt : v);
        count += m->wvalid[b];
    }
    if (m->net.cfg.lookahead > 0)
        frae_lookahead_stage(m, x, x_rs, nseq, (int)(x_rs / D), valid, w0, nt,
                             tracks);
    double total = (double)count; /* exact: far below 2^53 */
    if (red && red->sum_f64(red->ctx, &total, 1))
        return -1;
    if (total > 0) {
        float scale = 2.0f / (float)(total * D);
        float rate_scale = m->net.cfg.rate_lambda / (float)total;
        if (count > 0) {
            stage_window(m, m->tr.xwin, x, x_rs, nseq, w0, nt, tracks);
            if (target)
                stage_window(m, m->tr.twin, target, x_rs, nseq, w0, nt, tracks);
            window_grads(m, nt, nb, valid ? m->wvalid : NULL, target != NULL,
                         scale, rate_scale, acc);
        } else {
            padding_forward(m, x, x_rs, nseq, w0, nt, tracks);
            memset(m->tr.grads, 0, sizeof(float) * m->net.n_params);
        }
        if (red && red->sum_f32(red->ctx, m->tr.grads, m->net.n_params))
            return -1;
        if (update) {
            *grad_norm = clip_gradients(m);
            m->tr.adam_step++;
            frae_adam_update(
                &m->net, m->params, m->tr.grads, m->tr.adam_m, m->tr.adam_v,
                m->net.n_params, m->tr.adam_step,
                frae_learning_rate_at(&m->net.cfg, m->tr.adam_step),
                m->net.cfg.beta1, m->net.cfg.beta2, m->net.cfg.epsilon);
            frae_refresh_transposed(m);
            (*steps)++;
        }
    } else {
        /* only padding: nothing to learn; the buffers still move on */
        padding_forward(m, x, x_rs, nseq, w0, nt, tracks);
    }
    advance(m, nt);
    if (update && total > 0) /* the sums ahead were made with old weights */
        frae_state_rebuild(&m->net, &m->state);
    return 0;
}

/* Trains (update) or computes gradients over nframes frames in windows of
 * W, from reset buffers or continuing them. */
static int train_impl(frae_model *m, const float *x, const float *target,
                      int nseq, int nframes, const int *valid, int update,
                      int reset, frae_stats *stats)
{
    if (!m->net.cfg.training || bad_sizes(m, nseq, nframes) ||
        (target && !m->net.cfg.targets))
        return -1;
    if (reset)
        frae_reset(m);
    if (claim_rows(m, tracks_of(m) * nseq))
        return -1;
    const int D = m->net.cfg.frame_dim, W = m->net.cfg.window;
    loss_acc acc = {0};
    long steps = 0;
    double grad_norm = 0.0;
    for (int w0 = 0; w0 < nframes; w0 += W) {
        int nt = nframes - w0 < W ? nframes - w0 : W;
        if (train_window(m, x, target, (ptrdiff_t)nframes * D, nseq, w0, nt,
                         valid, update, &acc, &steps, &grad_norm))
            return -1;
    }
    if (tracks_of(m) == 2) {
        /* two tracks of the same frames: the stats count the data's frames
         * once, their errors the mean over both tracks (exact halves: each
         * track has the same valid frames) */
        acc.sse /= 2, acc.sae /= 2, acc.bits /= 2, acc.level /= 2;
        acc.values /= 2, acc.frames /= 2;
    }
    fill_stats(stats, &acc, steps, grad_norm);
    return 0;
}

/* Evaluation, frame by frame: the prior's context of frame t before it
 * runs, then the rate of its codes (the state keeps `frames` slots). */
static void frame_rate_context(frae_model *m, long t, int nb)
{
    frae_state *st = &m->state;
    const size_t slot = (size_t)(t % st->frames) * nb;
    frae_prior_context(&m->net, st, t, nb,
                       st->prior_ctx + slot * m->net.layer[m->net.prior[0]].in);
}

static void frame_rate(frae_model *m, long t, int nb, const int *valid,
                       loss_acc *acc)
{
    const frae_config *c = &m->net.cfg;
    frae_state *st = &m->state;
    const int L = c->latent_dim, LS = L * frae_prior_symbols(c);
    const size_t slot = (size_t)(t % st->frames) * nb;
    float *logit = st->prior_logit + slot * LS;
    frae_prior_forward(&m->net, &st->scratch, nb,
                       st->prior_ctx + slot * m->net.layer[m->net.prior[0]].in,
                       st->prior_hid + slot * m->net.layer[m->net.prior[0]].out,
                       logit);
    frae_prior_ar_forward(&m->net, &st->scratch, nb, st->q + slot * L, logit);
    for (int b = 0; b < nb; b++)
        if (!(valid && t >= valid[b]))
            acc->bits +=
                frae_prior_bits(c, logit + (size_t)b * LS,
                                st->q + (slot + b) * L, NULL, NULL, 0.0f);
}

static int eval_impl(frae_model *m, const float *x, const float *target,
                     int nseq, int nframes, const int *valid, int reset,
                     frae_stats *stats)
{
    if (bad_sizes(m, nseq, nframes) || (target && !m->net.cfg.targets))
        return -1;
    if (reset)
        frae_reset(m);
    if (claim_rows(m, nseq))
        return -1;
    const int D = m->net.cfg.frame_dim;
    const ptrdiff_t x_rs = (ptrdiff_t)nframes * D;
    loss_acc acc = {0};
    for (long t = 0; t < nframes; t++) {
        ptrdiff_t rs;
        const float *xt = net_input(m, x, x_rs, nseq, t, &rs);
        if (m->net.prior[0] >= 0)
            frame_rate_context(m, t, nseq);
        if (m->net.cfg.lookahead > 0)
            frae_ahead_rows(&m->net, &m->state, x, x_rs, nseq, t, nframes,
                            valid);
        frae_forward_frame(&m->net, &m->state, t, xt, rs, nseq);
        silence_padding(m, t, nseq, valid);
        if (target) {
            ptrdiff_t trs;
            const float *tt =
                net_rows(m, m->tr.tnorm, target, x_rs, nseq, t, &trs);
            frame_loss(m, t, tt, trs, nseq, valid, &acc, NULL, 0.0f);
        } else {
            frame_loss(m, t, xt, rs, nseq, valid, &acc, NULL, 0.0f);
        }
        if (m->net.prior[0] >= 0)
            frame_rate(m, t, nseq, valid, &acc);
    }
    advance(m, nframes);
    fill_stats(stats, &acc, 0, 0.0);
    return 0;
}

/* ---- public entry points: floating-point environment in, out ------- */

int frae_step(frae_model *m, const frae_batch *b, frae_stats *stats)
{
    if (!b)
        return -1;
    if (b->kind == FRAE_STEP_GRADIENTS && b->nframes > m->net.cfg.window)
        return -1; /* the gradients of one window */
    fp_env env = fp_enter();
    int rc = -1;
    switch (b->kind) {
    case FRAE_STEP_TRAIN:
    case FRAE_STEP_GRADIENTS:
        rc = train_impl(m, b->x, b->targets, b->nseq, b->nframes, b->valid,
                        b->kind == FRAE_STEP_TRAIN, !b->continued, stats);
        break;
    case FRAE_STEP_EVALUATE:
        rc = eval_impl(m, b->x, b->targets, b->nseq, b->nframes, b->valid,
                       !b->continued, stats);
        break;
    }
    fp_leave(env);
    return rc;
}

int frae_forward(frae_model *m, const float *x, float *y, int nseq, int nframes)
{
    fp_env env = fp_enter();
    int rc =
        frae_run_forward(&m->net, &m->state, m->xnorm, x, y, nseq, nframes);
    fp_leave(env);
    return rc;
}

void frae_set_reducer(frae_model *m, const frae_reducer *r)
{
    m->tr.reducer = r;
}
