/* Forward, loss and backward over one BPTT window, and the calls built on
 * them.  Nothing here allocates: every buffer was carved by frae_create.
 *
 * Activations are stored row-major as [frame][sequence][width], so the rows
 * of a whole window form one matrix and the weight gradients of a layer are
 * a single GEMM over all of them. */
#include <math.h>
#include <string.h>

#include "frae_internal.h"

static float *ring_frame(const frae_model *m, long pos)
{
    long p = pos % m->ring_cap;
    if (p < 0)
        p += m->ring_cap;
    return m->ring + (size_t)p * m->ring_rows * m->cfg.frame_dim;
}

/* First encoder or decoder layer: z = b + head.W_head + sum_j slot_j.W_j,
 * with slot 0 the newest frame.  Each GEMM continues the same FMA chain, so
 * this equals the dense layer applied to [head, buffer] concatenated. */
static void first_layer_forward(frae_model *m, int l, long t, const float *head,
                                ptrdiff_t head_rs, int head_w, int nb, float *z)
{
    const frae_layer *ly = &m->layer[l];
    const float *w = m->params + ly->w_off;
    const int D = m->cfg.frame_dim;
    m->gemm(nb, ly->out, head_w, head, head_rs, 1, w, ly->out, z, ly->out,
            m->params + ly->b_off, GEMM_BIAS);
    for (int j = 0; j < m->cfg.history; j++)
        m->gemm(nb, ly->out, D, ring_frame(m, m->ring_pos + t - 1 - j), D, 1,
                w + (size_t)(head_w + j * D) * ly->out, ly->out, z, ly->out,
                NULL, GEMM_ACC);
}

/* One frame for nb sequences.  x points at frame t of sequence 0; rows are
 * x_rs apart.  The output frame goes into the ring. */
static void frame_forward(frae_model *m, long t, const float *x, ptrdiff_t x_rs,
                          int nb)
{
    const int L = m->cfg.latent_dim, last = m->n_layers - 1;
    const size_t slot = (size_t)(t % m->act_frames) * nb;
    float *q = m->q + slot * L;
    const float *prev = NULL;
    for (int l = 0; l <= last; l++) {
        const frae_layer *ly = &m->layer[l];
        float *z = l == last ? ring_frame(m, m->ring_pos + t)
                             : ly->a + slot * ly->out;
        if (l == 0)
            first_layer_forward(m, l, t, x, x_rs, m->cfg.frame_dim, nb, z);
        else if (l == m->dec_first)
            first_layer_forward(m, l, t, q, L, L, nb, z);
        else
            m->gemm(nb, ly->out, ly->in, prev, ly->in, 1,
                    m->params + ly->w_off, ly->out, z, ly->out,
                    m->params + ly->b_off, GEMM_BIAS);
        frae_activate(ly->act, z, (size_t)nb * ly->out);
        if (l == m->latent)
            frae_quantize(&m->cfg, z, q, (size_t)nb * L);
        prev = z;
    }
}

typedef struct {
    double sse, sae;
} loss_acc;

/* Adds frame t's errors to acc; if dy is non-NULL writes dL/dy there. */
static void frame_loss(const frae_model *m, long t, const float *x,
                       ptrdiff_t x_rs, int nb, loss_acc *acc, float *dy,
                       float scale)
{
    const int D = m->cfg.frame_dim;
    const float *y = ring_frame(m, m->ring_pos + t);
    for (int b = 0; b < nb; b++)
        for (int d = 0; d < D; d++) {
            float diff = y[(size_t)b * D + d] - x[b * x_rs + d];
            acc->sse += (double)diff * diff;
            acc->sae += fabs((double)diff);
            if (dy)
                dy[(size_t)b * D + d] = scale * diff;
        }
}

/* Back-propagates the output gradients of frames t0..t0+nt-1 (rows in
 * layer[last].dz) down to the first encoder layer's dz.  Rows are
 * independent, so detached mode runs the whole window as one call. */
static void backward_chain(frae_model *m, int t0, int nt, int nb)
{
    const int L = m->cfg.latent_dim;
    const size_t r0 = (size_t)t0 * nb;
    const int rows = nt * nb;
    for (int l = m->n_layers - 1; l >= 1; l--) {
        const frae_layer *ly = &m->layer[l];
        const float *dz = ly->dz + r0 * ly->out;
        /* the layer feeding this one: the latent for the first decoder
         * layer (through the straight-through quantizer), else l - 1 */
        const frae_layer *pv = &m->layer[l == m->dec_first ? m->latent : l - 1];
        float *dprev = pv->dz + r0 * pv->out;
        int width = l == m->dec_first ? L : ly->in;
        m->gemm(rows, width, ly->out, dz, ly->out, 1, ly->wt, ly->in, dprev,
                pv->out, NULL, GEMM_ZERO);
        frae_activation_backward(pv->act, pv->a + r0 * pv->out, dprev,
                                 (size_t)rows * pv->out);
    }
}

/* Full feedback: y_s fed frame s+1+j as buffer slot j through both first
 * layers; send that gradient back into dL/dy_s. */
static void feedback_backward(frae_model *m, int t, int nb)
{
    const int D = m->cfg.frame_dim, L = m->cfg.latent_dim;
    const frae_layer *enc = &m->layer[0], *dec = &m->layer[m->dec_first];
    float *dy_all = m->layer[m->n_layers - 1].dz;
    for (int j = 0; j < m->cfg.history && t - 1 - j >= 0; j++) {
        float *dys = dy_all + (size_t)(t - 1 - j) * nb * D;
        m->gemm(nb, D, enc->out, enc->dz + (size_t)t * nb * enc->out,
                enc->out, 1, enc->wt + D + j * D, enc->in, dys, D, NULL,
                GEMM_ACC);
        m->gemm(nb, D, dec->out, dec->dz + (size_t)t * nb * dec->out,
                dec->out, 1, dec->wt + L + j * D, dec->in, dys, D, NULL,
                GEMM_ACC);
    }
}

/* gW[head_w + j*D ...] for buffer slot j: the slot's frames over the window
 * are consecutive ring frames, split in two where the ring wraps. */
static void buffer_weight_grad(frae_model *m, const frae_layer *ly, int head_w,
                               int j, int nt, int nb)
{
    const int D = m->cfg.frame_dim;
    float *gw = m->grads + ly->w_off + (size_t)(head_w + j * D) * ly->out;
    long p0 = (m->ring_pos - 1 - j) % m->ring_cap;
    if (p0 < 0)
        p0 += m->ring_cap;
    int n1 = m->ring_cap - p0 < nt ? (int)(m->ring_cap - p0) : nt;
    m->gemm(D, ly->out, n1 * nb, ring_frame(m, p0), 1, D, ly->dz, ly->out, gw,
            ly->out, NULL, GEMM_ZERO);
    if (n1 < nt)
        m->gemm(D, ly->out, (nt - n1) * nb, ring_frame(m, 0), 1, D,
                ly->dz + (size_t)n1 * nb * ly->out, ly->out, gw, ly->out, NULL,
                GEMM_ACC);
}

/* All parameter gradients of the window, one GEMM per weight block. */
static void weight_grads(frae_model *m, int nt, int nb)
{
    const int rows = nt * nb, D = m->cfg.frame_dim, L = m->cfg.latent_dim;
    for (int l = 0; l < m->n_layers; l++) {
        const frae_layer *ly = &m->layer[l];
        float *gw = m->grads + ly->w_off;
        if (l == 0 || l == m->dec_first) {
            const float *head = l == 0 ? m->xwin : m->q;
            int head_w = l == 0 ? D : L;
            m->gemm(head_w, ly->out, rows, head, 1, head_w, ly->dz, ly->out,
                    gw, ly->out, NULL, GEMM_ZERO);
            for (int j = 0; j < m->cfg.history; j++)
                buffer_weight_grad(m, ly, head_w, j, nt, nb);
        } else {
            const float *in = m->layer[l - 1].a;
            m->gemm(ly->in, ly->out, rows, in, 1, ly->in, ly->dz, ly->out, gw,
                    ly->out, NULL, GEMM_ZERO);
        }
        frae_bias_grad(ly->dz, rows, ly->out, m->grads + ly->b_off);
    }
}

/* Forward, loss and gradients of one window of nt frames (x staged in
 * m->xwin).  The ring position is left at the window's start. */
static void window_grads(frae_model *m, int nt, int nb, float scale,
                         loss_acc *acc)
{
    const int D = m->cfg.frame_dim;
    float *dy = m->layer[m->n_layers - 1].dz;
    for (int t = 0; t < nt; t++) {
        const float *xt = m->xwin + (size_t)t * nb * D;
        frame_forward(m, t, xt, D, nb);
        frame_loss(m, t, xt, D, nb, acc, dy + (size_t)t * nb * D, scale);
    }
    if (m->cfg.feedback == FRAE_FEEDBACK_FULL && m->cfg.history > 0) {
        for (int t = nt - 1; t >= 0; t--) {
            backward_chain(m, t, 1, nb);
            feedback_backward(m, t, nb);
        }
    } else {
        backward_chain(m, 0, nt, nb);
    }
    weight_grads(m, nt, nb);
}

static void stage_window(frae_model *m, const float *x, int nseq, int nframes,
                         int w0, int nt)
{
    const int D = m->cfg.frame_dim;
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < nseq; b++)
            memcpy(m->xwin + ((size_t)t * nseq + b) * D,
                   x + ((size_t)b * nframes + w0 + t) * D, sizeof(float) * D);
}

static int bad_sizes(const frae_model *m, int nseq, int nframes)
{
    return nseq < 1 || nseq > m->cfg.batch || nframes < 1;
}

static void fill_stats(frae_stats *st, const loss_acc *acc, long count,
                       long frames, long steps)
{
    if (!st)
        return;
    st->mse = acc->sse / (double)count;
    st->mae = acc->sae / (double)count;
    st->frames = frames;
    st->steps = steps;
}

static void begin_sequences(frae_model *m, int nseq)
{
    frae_reset(m);
    m->ring_rows = nseq;
}

static int run_windows(frae_model *m, const float *x, int nseq, int nframes,
                       frae_stats *stats, int update)
{
    const int D = m->cfg.frame_dim, W = m->cfg.window;
    loss_acc acc = {0, 0};
    long steps = 0;
    begin_sequences(m, nseq);
    for (int w0 = 0; w0 < nframes; w0 += W) {
        int nt = nframes - w0 < W ? nframes - w0 : W;
        float scale = 2.0f / (float)((double)nt * nseq * D);
        stage_window(m, x, nseq, nframes, w0, nt);
        window_grads(m, nt, nseq, scale, &acc);
        if (update) {
            m->adam_step++;
            frae_adam_update(m->params, m->grads, m->adam_m, m->adam_v,
                             m->n_params, m->adam_step, m->cfg.learning_rate,
                             m->cfg.beta1, m->cfg.beta2, m->cfg.epsilon);
            frae_refresh_transposed(m);
            steps++;
        }
        m->ring_pos = (int)((m->ring_pos + (long)nt) % m->ring_cap);
    }
    fill_stats(stats, &acc, (long)nseq * nframes * D, (long)nseq * nframes,
               steps);
    return 0;
}

int frae_train_batch(frae_model *m, const float *x, int nseq, int nframes,
                     frae_stats *stats)
{
    if (!m->cfg.training || bad_sizes(m, nseq, nframes))
        return -1;
    return run_windows(m, x, nseq, nframes, stats, 1);
}

int frae_compute_grads(frae_model *m, const float *x, int nseq, int nframes,
                       frae_stats *stats)
{
    if (!m->cfg.training || bad_sizes(m, nseq, nframes) ||
        nframes > m->cfg.window)
        return -1;
    return run_windows(m, x, nseq, nframes, stats, 0);
}

int frae_eval_batch(frae_model *m, const float *x, int nseq, int nframes,
                    frae_stats *stats)
{
    if (bad_sizes(m, nseq, nframes))
        return -1;
    const int D = m->cfg.frame_dim;
    const ptrdiff_t x_rs = (ptrdiff_t)nframes * D;
    loss_acc acc = {0, 0};
    begin_sequences(m, nseq);
    for (long t = 0; t < nframes; t++) {
        frame_forward(m, t, x + t * D, x_rs, nseq);
        frame_loss(m, t, x + t * D, x_rs, nseq, &acc, NULL, 0.0f);
    }
    m->ring_pos = (int)((m->ring_pos + (long)nframes) % m->ring_cap);
    fill_stats(stats, &acc, (long)nseq * nframes * D, (long)nseq * nframes, 0);
    return 0;
}

int frae_forward(frae_model *m, const float *x, float *y, int nseq,
                 int nframes)
{
    if (bad_sizes(m, nseq, nframes))
        return -1;
    if (m->ring_rows == 0)
        m->ring_rows = nseq;
    else if (m->ring_rows != nseq)
        return -1; /* the buffers belong to a different batch: reset first */
    const int D = m->cfg.frame_dim;
    const ptrdiff_t rs = (ptrdiff_t)nframes * D;
    for (long t = 0; t < nframes; t++) {
        frame_forward(m, t, x + t * D, rs, nseq);
        const float *yt = ring_frame(m, m->ring_pos + t);
        for (int b = 0; b < nseq; b++)
            memcpy(y + b * rs + t * D, yt + (size_t)b * D, sizeof(float) * D);
    }
    m->ring_pos = (int)((m->ring_pos + (long)nframes) % m->ring_cap);
    return 0;
}
