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

/* Panel p of gemm_packed_b below. */
static void panel_b(const frae_model *m, int p, int M, int K, const float *a,
                    ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b, int rows,
                    int cols, int k0, int c0, int c1, float *c, ptrdiff_t ldc,
                    const float *bias, int init, int nnz)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    int lo = c0 > pc0 ? c0 : pc0, hi = c1 < pc0 + w ? c1 : pc0 + w;
    const float *panel = b + (size_t)pc0 * rows + (lo - pc0);
    const float *pbias = bias ? bias + (lo - c0) : NULL;
    if (nnz >= 0)
        m->gemv_sparse(hi - lo, nnz, m->sp_idx, m->sp_val, panel, w,
                       c + (lo - c0), pbias, init);
    else
        m->gemm(M, hi - lo, K, a, a_rs, a_cs, panel + (size_t)k0 * w, w,
                c + (lo - c0), ldc, pbias, init);
}

/* C[M][c0..c1) = init + A . B[k0..k0+K)[c0..c1), with B a packed rows x
 * cols matrix: one GEMM per panel the column range touches.  bias and c
 * are indexed from c0.  A single row with enough zeros (ReLU outputs and
 * their gradients) goes through the sparse kernel: it streams only the
 * rows of B that meet a nonzero. */
static void gemm_packed_b(const frae_model *m, int M, int K, const float *a,
                          ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                          int rows, int cols, int k0, int c0, int c1, float *c,
                          ptrdiff_t ldc, const float *bias, int init)
{
    int nnz = -1;
    if (M == 1 && a_cs == 1) {
        nnz = m->compact(K, a, k0, m->sp_idx, m->sp_val);
        if (nnz > K - K / 8) /* too dense to pay for the indirection */
            nnz = -1;
    }
    const int p0 = c0 / FRAE_PANEL, p1 = (c1 + FRAE_PANEL - 1) / FRAE_PANEL;
    /* panels write disjoint columns and each output keeps its own FMA
     * chain: any thread count gives the same bits.  The OpenMP runtime is
     * entered only to thread: even a one-thread region costs a call, and
     * batch 1 makes dozens of these products per frame. */
    if (m->threads > 1 && nnz < 0 &&
        (double)M * K * (c1 - c0) > FRAE_THREAD_MACS) {
#pragma omp parallel for schedule(static) num_threads(m->threads)
        for (int p = p0; p < p1; p++)
            panel_b(m, p, M, K, a, a_rs, a_cs, b, rows, cols, k0, c0, c1, c,
                    ldc, bias, init, nnz);
    } else {
        for (int p = p0; p < p1; p++)
            panel_b(m, p, M, K, a, a_rs, a_cs, b, rows, cols, k0, c0, c1, c,
                    ldc, bias, init, nnz);
    }
}

/* Panel p of gemm_packed_c below. */
static void panel_c(const frae_model *m, int p, int M, int K, const float *a,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    int rows, int cols, int r0, int init)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    m->gemm(M, w, K, a, 1, a_cs, b + pc0, ldb,
            c + (size_t)pc0 * rows + (size_t)r0 * w, w, NULL, init);
}

/* Rows r0..r0+M of a packed rows x cols matrix C = init + A^T . B, where A
 * is K x M (row stride a_cs) and B is K x cols (row stride ldb): the
 * weight-gradient shape. */
static void gemm_packed_c(const frae_model *m, int M, int K, const float *a,
                          ptrdiff_t a_cs, const float *b, ptrdiff_t ldb,
                          float *c, int rows, int cols, int r0, int init)
{
    const int np = (cols + FRAE_PANEL - 1) / FRAE_PANEL;
    if (m->threads > 1 && (double)M * K * cols > FRAE_THREAD_MACS) {
#pragma omp parallel for schedule(static) num_threads(m->threads)
        for (int p = 0; p < np; p++)
            panel_c(m, p, M, K, a, a_cs, b, ldb, c, rows, cols, r0, init);
    } else {
        for (int p = 0; p < np; p++)
            panel_c(m, p, M, K, a, a_cs, b, ldb, c, rows, cols, r0, init);
    }
}

/* Layer l's forward product on its bf16 weights (kernels.h), nb rows of A
 * (row stride a_rs) over kernel rows k0..k0+K, each output the chain the
 * f32 path computes: one row takes gemm_packed_b's one-row route (the
 * zeros it skips and its density rule), two rows accumulating (the first
 * layers' pairs of fed-back frames) the two-row kernel, anything else the
 * dense kernel row by row, as the f32 GEMM does them. */
static void bf16_product(const frae_model *m, const frae_layer *ly, int nb,
                         int K, const float *a, ptrdiff_t a_rs, int k0,
                         float *z, const float *bias, int init)
{
    int nnz = K;
    if (nb == 1) {
        nnz = m->compact(K, a, k0, m->sp_idx, m->sp_val);
        if (nnz > K - K / 8) /* where the f32 path goes dense */
            nnz = K;
    }
    const int sparse = nnz < K;
    for (int pc0 = 0; pc0 < ly->out; pc0 += FRAE_PANEL_BF16) {
        int w = ly->out - pc0 < FRAE_PANEL_BF16 ? ly->out - pc0
                                                : FRAE_PANEL_BF16;
        int ldb = (w + 31) / 32 * 32;
        const uint16_t *panel = ly->wh + (size_t)pc0 * ly->in;
        const uint16_t *rows = panel + (size_t)k0 * ldb; /* dense forms */
        const float *bp = bias ? bias + pc0 : NULL;
        if (sparse)
            m->gemv_bf16(w, nnz, m->sp_idx, m->sp_val, panel, ldb, z + pc0,
                         bp, init);
        else if (nb == 2 && init == GEMM_ACC)
            m->gemv2_bf16(w, K, a, a + a_rs, rows, ldb, z + pc0,
                          z + ly->out + pc0);
        else
            for (int r = 0; r < nb; r++)
                m->gemv_bf16(w, K, NULL, a + r * a_rs, rows, ldb,
                             z + (size_t)r * ly->out + pc0, bp, init);
    }
}

/* Layer l's forward product for nb rows of A (row stride a_rs), over its
 * kernel rows k0..k0+K, into z (rows ly->out apart). */
static void layer_product(const frae_model *m, int l, int nb, int K,
                          const float *a, ptrdiff_t a_rs, int k0, float *z,
                          const float *bias, int init)
{
    const frae_layer *ly = &m->layer[l];
    if (ly->wh)
        bf16_product(m, ly, nb, K, a, a_rs, k0, z, bias, init);
    else
        gemm_packed_b(m, nb, K, a, a_rs, 1, m->params + ly->w_off, ly->in,
                      ly->out, k0, 0, ly->out, z, ly->out, bias, init);
}

/* ---- first layers: fed-back frames summed ahead of time ----------------
 *
 * A first layer's output for frame t is one FMA chain per unit: the bias,
 * then the fed-back frames oldest first (W_K y_{t-K}, ..., W_1 y_{t-1}),
 * then the head (x_t or the latent).  Every term but the head is known
 * before frame t, so the chain runs ahead in a pending sum per future
 * frame (m->pend, slot t % pend_cap).  That lets a buffer block W_k (k >=
 * 2) meet two frames per read instead of one: it is applied to the pair
 * (y_{s-1}, y_s) at the end of frame s whenever s + k is odd.  A chain
 * still receives its terms in order (W_k y_{s-1} is applied no later than
 * W_{k-1} y_s), and W_1 y_s at the end of every frame.  At batch 1 the
 * weights stream from L3, and this reads 3/8 fewer bytes of the default
 * model's first layers.  Nothing else changes: each output is still one
 * ordered chain, the same on every path.  With more than
 * FRAE_PEND_MAX_ROWS sequences each weight read already serves many rows,
 * and the chain is computed at the frame itself, with the same result. */

static float *pend_slot(const frae_model *m, int which, long j, int nb)
{
    const frae_layer *ly = &m->layer[which ? m->dec_first : 0];
    return m->pend[which] + (size_t)(j % m->pend_cap) * nb * ly->out;
}

static void fill_bias(const frae_layer *ly, const float *bias, float *dst,
                      int rows)
{
    for (int r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * ly->out, bias, sizeof(float) * ly->out);
}

/* The end of frame s when W_k (k >= 2) takes y_s into its sums. */
static long pend_when(int k, long s) { return k == 1 || ((s + k) & 1) ? s : s + 1; }

/* Applies the fed-back terms due at the end of frame s (s >= 0) to first
 * layer `which`'s pending sums; t is frame s + 1's window position. */
static void pend_feed(frae_model *m, int which, long s, long t, int nb)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const int D = m->cfg.frame_dim, K = m->cfg.history;
    const int head_w = which ? m->cfg.latent_dim : D;
    const float *ys = ring_frame(m, m->ring_pos + t - 1);
    const float *pair = ring_frame(m, m->ring_pos + t - 2);
    if (K >= 2 && pair + (size_t)nb * D != ys) {
        /* the ring wraps between the two: side by side in pair_in */
        memcpy(m->pair_in, pair, sizeof(float) * (size_t)nb * D);
        memcpy(m->pair_in + (size_t)nb * D, ys, sizeof(float) * (size_t)nb * D);
        pair = m->pair_in;
    }
    /* W_K is every chain's first term, so it starts the sum from the bias
     * (the slot's last frame has been consumed) */
    for (int k = K; k >= 2; k--)
        if ((s + k) & 1) /* targets s-1+k (even: its pair of slots is
                            contiguous, pend_cap being even) and s+k */
            layer_product(m, l, 2 * nb, D, pair, D, head_w + (k - 1) * D,
                          pend_slot(m, which, s - 1 + k, nb),
                          k == K ? ly->bias : NULL,
                          k == K ? GEMM_BIAS : GEMM_ACC);
    layer_product(m, l, nb, D, ys, D, head_w, pend_slot(m, which, s + 1, nb),
                  K == 1 ? ly->bias : NULL, K == 1 ? GEMM_BIAS : GEMM_ACC);
}

/* Recomputes the pending sums from the ring after the weights changed
 * mid-stream (an Adam step between windows, set_params): each sum gets the
 * terms the schedule above has applied so far, in the same order. */
static void pend_rebuild(frae_model *m, int which)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const float *bias = ly->bias;
    const int D = m->cfg.frame_dim, K = m->cfg.history;
    const int head_w = which ? m->cfg.latent_dim : D;
    const int nb = m->ring_rows;
    const long tau = m->pend_next[which];
    if (nb == 0 || tau == 0 || nb > FRAE_PEND_MAX_ROWS) { /* none applied */
        fill_bias(ly, bias, m->pend[which], m->pend_cap * m->cfg.batch);
        return;
    }
    for (long j = tau; j < tau + m->pend_cap; j++) {
        float *acc = pend_slot(m, which, j, nb);
        fill_bias(ly, bias, acc, nb);
        for (int k = K; k >= 1; k--) {
            long s = j - k, e = pend_when(k, s);
            if (e < 0 || e > tau - 2)
                continue;
            /* frame s sits tau - s frames before the next one, whose
             * window position is 0 once the window has moved on */
            layer_product(m, l, nb, D, ring_frame(m, m->ring_pos - (tau - s)),
                          D, head_w + (k - 1) * D, acc, NULL, GEMM_ACC);
        }
    }
}

void frae_pend_rebuild(frae_model *m)
{
    if (m->cfg.history == 0)
        return;
    pend_rebuild(m, 0);
    pend_rebuild(m, 1);
}

/* First encoder or decoder layer (`which` 0 or 1) for frame t (window
 * position) of nb sequences: z = its pending sum + head . W_head. */
static void first_layer_forward(frae_model *m, int which, long t,
                                const float *head, ptrdiff_t head_rs,
                                int head_w, int nb, float *z)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const float *bias = ly->bias;
    if (m->cfg.history == 0) {
        layer_product(m, l, nb, head_w, head, head_rs, 0, z, bias, GEMM_BIAS);
        return;
    }
    const long tau = m->pend_next[which]++;
    if (nb > FRAE_PEND_MAX_ROWS) {
        /* many rows already share each weight read: the same chain, in
         * the same order, computed at the frame itself */
        const int D = m->cfg.frame_dim, K = m->cfg.history;
        for (int k = K; k >= 1; k--)
            layer_product(m, l, nb, D, ring_frame(m, m->ring_pos + t - k), D,
                          head_w + (k - 1) * D, z, k == K ? bias : NULL,
                          k == K ? GEMM_BIAS : GEMM_ACC);
        layer_product(m, l, nb, head_w, head, head_rs, 0, z, NULL, GEMM_ACC);
        return;
    }
    if (tau > 0)
        pend_feed(m, which, tau - 1, t, nb);
    const float *acc = pend_slot(m, which, tau, nb);
    if (nb == 1) { /* the sum is the head's starting row */
        layer_product(m, l, 1, head_w, head, head_rs, 0, z, acc, GEMM_BIAS);
        return;
    }
    memcpy(z, acc, sizeof(float) * (size_t)nb * ly->out);
    layer_product(m, l, nb, head_w, head, head_rs, 0, z, NULL, GEMM_ACC);
}

/* Layers from..to of frame t for nb sequences.  x points at frame t of
 * sequence 0 (rows x_rs apart; read by layer 0 only).  The latent layer
 * also quantizes into m->q; the output layer writes into the ring. */
static void run_layers(frae_model *m, long t, const float *x, ptrdiff_t x_rs,
                       int nb, int from, int to)
{
    const int L = m->cfg.latent_dim, last = m->n_layers - 1;
    const size_t slot = (size_t)(t % m->act_frames) * nb;
    float *q = m->q + slot * L;
    for (int l = from; l <= to; l++) {
        const frae_layer *ly = &m->layer[l];
        float *z = l == last ? ring_frame(m, m->ring_pos + t)
                             : ly->a + slot * ly->out;
        if (l == 0)
            first_layer_forward(m, 0, t, x, x_rs, m->cfg.frame_dim, nb, z);
        else if (l == m->dec_first)
            first_layer_forward(m, 1, t, q, L, L, nb, z);
        else
            layer_product(m, l, nb, ly->in, m->layer[l - 1].a + slot * ly->in,
                          ly->in, 0, z, ly->bias, GEMM_BIAS);
        frae_activate(ly->act, z, (size_t)nb * ly->out);
        if (l == m->latent)
            frae_quantize(&m->cfg, z, q, (size_t)nb * L);
    }
}

/* One frame for nb sequences: the encoder (x -> quantized latent) then the
 * decoder (latent and buffer -> the output frame, into the ring). */
static void frame_forward(frae_model *m, long t, const float *x, ptrdiff_t x_rs,
                          int nb)
{
    run_layers(m, t, x, x_rs, nb, 0, m->n_layers - 1);
}

/* The two halves, for the streaming codec (codec.c): frame t of one
 * sequence.  Encoding leaves the latent code in m->q; decoding reads it
 * and writes the frame into the ring without moving ring_pos. */
void frae_frame_encode(frae_model *m, long t, const float *x)
{
    run_layers(m, t, x, m->cfg.frame_dim, 1, 0, m->latent);
}

void frae_frame_decode(frae_model *m, long t)
{
    run_layers(m, t, NULL, 0, 1, m->dec_first, m->n_layers - 1);
}

float *frae_ring_frame(const frae_model *m, long pos)
{
    return ring_frame(m, pos);
}

typedef struct {
    double sse, sae;
    long values, frames;
} loss_acc;

/* Adds frame t's errors to acc; if dy is non-NULL writes dL/dy there.
 * Rows past their sequence's end (t >= valid[b]) are padding: no loss and
 * no gradient. */
static void frame_loss(const frae_model *m, long t, const float *x,
                       ptrdiff_t x_rs, int nb, const int *valid, loss_acc *acc,
                       float *dy, float scale)
{
    const int D = m->cfg.frame_dim;
    const float *y = ring_frame(m, m->ring_pos + t);
    for (int b = 0; b < nb; b++) {
        if (valid && t >= valid[b]) {
            if (dy)
                memset(dy + (size_t)b * D, 0, sizeof(float) * D);
            continue;
        }
        for (int d = 0; d < D; d++) {
            float diff = y[(size_t)b * D + d] - x[b * x_rs + d];
            acc->sse += (double)diff * diff;
            acc->sae += fabs((double)diff);
            if (dy)
                dy[(size_t)b * D + d] = scale * diff;
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
    const int D = m->cfg.frame_dim;
    float *y = ring_frame(m, m->ring_pos + t);
    for (int b = 0; valid && b < nb; b++)
        if (t >= valid[b])
            memset(y + (size_t)b * D, 0, sizeof(float) * D);
}

/* Gradient rows of frame t for layer l: dL/dy (the output layer) is kept
 * for the whole window, the others for the chunk starting at frame c0. */
static float *dz_rows(const frae_model *m, int l, int t, int c0, int nb)
{
    const frae_layer *ly = &m->layer[l];
    int row_frame = l == m->n_layers - 1 ? t : t - c0;
    return ly->dz + (size_t)row_frame * nb * ly->out;
}

/* Back-propagates dL/dy of frames t0..t0+nt-1 (inside the chunk starting at
 * c0) down to the first encoder layer's dz.  Rows are independent, so
 * detached mode runs a whole chunk as one call. */
static void backward_chain(frae_model *m, int t0, int nt, int nb, int c0)
{
    const int L = m->cfg.latent_dim;
    const int rows = nt * nb;
    for (int l = m->n_layers - 1; l >= 1; l--) {
        const frae_layer *ly = &m->layer[l];
        /* the layer feeding this one: the latent for the first decoder
         * layer (through the straight-through quantizer), else l - 1 */
        int p = l == m->dec_first ? m->latent : l - 1;
        const frae_layer *pv = &m->layer[p];
        float *dprev = dz_rows(m, p, t0, c0, nb);
        int width = l == m->dec_first ? L : ly->in;
        gemm_packed_b(m, rows, ly->out, dz_rows(m, l, t0, c0, nb), ly->out, 1,
                      ly->wt, ly->out, ly->in, 0, 0, width, dprev, pv->out,
                      NULL, GEMM_ZERO);
        frae_activation_backward(pv->act, pv->a + (size_t)t0 * nb * pv->out,
                                 dprev, (size_t)rows * pv->out);
    }
}

/* Full feedback: y_s fed frame s+1+j as buffer slot j through both first
 * layers.  dL/d(buffer) of frame t comes from the buffer columns of the two
 * first layers, one GEMM each over all K slots; slot j then goes back into
 * dL/dy of frame t-1-j. */
static void feedback_backward(frae_model *m, int t, int nb, int c0)
{
    const int D = m->cfg.frame_dim, L = m->cfg.latent_dim;
    const int KD = m->cfg.history * D;
    const frae_layer *enc = &m->layer[0], *dec = &m->layer[m->dec_first];
    const int nslots = t < m->cfg.history ? t : m->cfg.history;
    if (nslots == 0)
        return;
    gemm_packed_b(m, nb, enc->out, dz_rows(m, 0, t, c0, nb), enc->out, 1,
                  enc->wt, enc->out, enc->in, 0, D, D + nslots * D, m->fb, KD,
                  NULL, GEMM_ZERO);
    gemm_packed_b(m, nb, dec->out, dz_rows(m, m->dec_first, t, c0, nb),
                  dec->out, 1, dec->wt, dec->out, dec->in, 0, L,
                  L + nslots * D, m->fb, KD, NULL, GEMM_ACC);
    for (int j = 0; j < nslots; j++) {
        float *dys = dz_rows(m, m->n_layers - 1, t - 1 - j, c0, nb);
        for (int b = 0; b < nb; b++)
            for (int d = 0; d < D; d++)
                dys[(size_t)b * D + d] += m->fb[(size_t)b * KD + j * D + d];
    }
}

/* Weight-gradient rows head_w + j*D.. for buffer slot j over frames c0..
 * c0+nt-1: consecutive ring frames, split in two where the ring wraps. */
static void buffer_weight_grad(frae_model *m, const frae_layer *ly, int head_w,
                               int j, int c0, int nt, int nb, int init)
{
    const int D = m->cfg.frame_dim;
    float *gw = m->grads + ly->w_off;
    long p0 = (m->ring_pos + c0 - 1 - j) % m->ring_cap;
    if (p0 < 0)
        p0 += m->ring_cap;
    int n1 = m->ring_cap - p0 < nt ? (int)(m->ring_cap - p0) : nt;
    gemm_packed_c(m, D, n1 * nb, ring_frame(m, p0), D, ly->dz, ly->out, gw,
                  ly->in, ly->out, head_w + j * D, init);
    if (n1 < nt)
        gemm_packed_c(m, D, (nt - n1) * nb, ring_frame(m, 0), D,
                      ly->dz + (size_t)n1 * nb * ly->out, ly->out, gw, ly->in,
                      ly->out, head_w + j * D, GEMM_ACC);
}

/* Adds the chunk of frames c0..c0+nt-1 to every parameter gradient (init
 * GEMM_ZERO for the first chunk), one GEMM per weight block. */
static void weight_grads(frae_model *m, int c0, int nt, int nb, int init)
{
    const int rows = nt * nb, D = m->cfg.frame_dim, L = m->cfg.latent_dim;
    const size_t r0 = (size_t)c0 * nb;
    for (int l = 0; l < m->n_layers; l++) {
        const frae_layer *ly = &m->layer[l];
        float *gw = m->grads + ly->w_off;
        const float *dz = dz_rows(m, l, c0, c0, nb);
        if (l == 0 || l == m->dec_first) {
            int head_w = l == 0 ? D : L;
            const float *head = (l == 0 ? m->xwin : m->q) + r0 * head_w;
            gemm_packed_c(m, head_w, rows, head, head_w, dz, ly->out, gw,
                          ly->in, ly->out, 0, init);
            for (int j = 0; j < m->cfg.history; j++)
                buffer_weight_grad(m, ly, head_w, j, c0, nt, nb, init);
        } else {
            const frae_layer *in = &m->layer[l - 1];
            gemm_packed_c(m, ly->in, rows, in->a + r0 * in->out, ly->in, dz,
                          ly->out, gw, ly->in, ly->out, 0, init);
        }
        frae_bias_grad(dz, rows, ly->out, m->grads + ly->b_off,
                       init == GEMM_ACC);
    }
}

/* Forward, loss and gradients of one window of nt frames (x staged in
 * m->xwin).  The ring position is left at the window's start.  The
 * backward pass runs chunk by chunk from the end of the window. */
static void window_grads(frae_model *m, int nt, int nb, const int *valid,
                         float scale, loss_acc *acc)
{
    const int D = m->cfg.frame_dim, C = m->chunk_frames;
    const int full = m->cfg.feedback == FRAE_FEEDBACK_FULL &&
                     m->cfg.history > 0;
    float *dy = m->layer[m->n_layers - 1].dz;
    for (int t = 0; t < nt; t++) {
        const float *xt = m->xwin + (size_t)t * nb * D;
        frame_forward(m, t, xt, D, nb);
        silence_padding(m, t, nb, valid);
        frame_loss(m, t, xt, D, nb, valid, acc, dy + (size_t)t * nb * D,
                   scale);
    }
    int last_c0 = (nt - 1) / C * C;
    for (int c0 = last_c0; c0 >= 0; c0 -= C) {
        int cn = nt - c0 < C ? nt - c0 : C;
        if (full) {
            for (int t = c0 + cn - 1; t >= c0; t--) {
                backward_chain(m, t, 1, nb, c0);
                feedback_backward(m, t, nb, c0);
            }
        } else {
            backward_chain(m, c0, cn, nb, c0);
        }
        weight_grads(m, c0, cn, nb, c0 == last_c0 ? GEMM_ZERO : GEMM_ACC);
    }
}

/* Copies frames w0..w0+nt-1 of nseq sequences (rows x_rs apart) into
 * m->xwin as [frame][sequence][D]. */
static void stage_window(frae_model *m, const float *x, ptrdiff_t x_rs,
                         int nseq, int w0, int nt)
{
    const int D = m->cfg.frame_dim;
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < nseq; b++)
            memcpy(m->xwin + ((size_t)t * nseq + b) * D,
                   x + b * x_rs + (ptrdiff_t)(w0 + t) * D, sizeof(float) * D);
}

static int bad_sizes(const frae_model *m, int nseq, int nframes)
{
    return nseq < 1 || nseq > m->cfg.batch || nframes < 1;
}

static void fill_stats(frae_stats *st, const loss_acc *acc, long steps,
                       double grad_norm)
{
    if (!st)
        return;
    st->mse = acc->values ? acc->sse / (double)acc->values : 0.0;
    st->mae = acc->values ? acc->sae / (double)acc->values : 0.0;
    st->sse = acc->sse;
    st->sae = acc->sae;
    st->values = acc->values;
    st->frames = acc->frames;
    st->steps = steps;
    st->grad_norm = grad_norm;
}

/* The buffers belong to the sequences in flight since the last reset. */
static int claim_rows(frae_model *m, int nseq)
{
    if (m->ring_rows == 0)
        m->ring_rows = nseq;
    return m->ring_rows == nseq ? 0 : -1;
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
    for (; j + 8 <= m->n_params; j += 8)
        for (int k = 0; k < 8; k++)
            part[k] += (double)m->grads[j + k] * m->grads[j + k];
    for (; j < m->n_params; j++)
        part[0] += (double)m->grads[j] * m->grads[j];
    double ss = ((part[0] + part[1]) + (part[2] + part[3])) +
                ((part[4] + part[5]) + (part[6] + part[7]));
    double norm = sqrt(ss);
    if (m->cfg.clip_norm > 0.0f && norm > m->cfg.clip_norm) {
        float scale = (float)(m->cfg.clip_norm / norm);
        for (size_t i = 0; i < m->n_params; i++)
            m->grads[i] *= scale;
    }
    return norm;
}

/* One window of nt <= W frames, continuing the buffers: forward, loss over
 * the valid frames, backward, and (if update) clipping and an Adam step.
 * x holds frame w0 of sequence 0; sequence rows are x_rs apart; valid[b]
 * counts the valid frames of sequence b from x's frame 0 (NULL: all). */
static void train_window(frae_model *m, const float *x, ptrdiff_t x_rs, int nb,
                         int w0, int nt, const int *valid, int update,
                         loss_acc *acc, long *steps, double *grad_norm)
{
    const int D = m->cfg.frame_dim;
    long count = 0;
    for (int b = 0; b < nb; b++) {
        long v = valid ? valid[b] - (long)w0 : nt;
        m->wvalid[b] = (int)(v < 0 ? 0 : v > nt ? nt : v);
        count += m->wvalid[b];
    }
    if (count > 0) {
        float scale = 2.0f / (float)((double)count * D);
        stage_window(m, x, x_rs, nb, w0, nt);
        window_grads(m, nt, nb, valid ? m->wvalid : NULL, scale, acc);
        if (update) {
            *grad_norm = clip_gradients(m);
            m->adam_step++;
            frae_adam_update(m, m->params, m->grads, m->adam_m, m->adam_v,
                             m->n_params, m->adam_step, m->cfg.learning_rate,
                             m->cfg.beta1, m->cfg.beta2, m->cfg.epsilon);
            frae_refresh_transposed(m);
            (*steps)++;
        }
    } else {
        /* only padding: nothing to learn; the buffers still move on */
        for (int t = 0; t < nt; t++) {
            frame_forward(m, t, x + (ptrdiff_t)(w0 + t) * D, x_rs, nb);
            silence_padding(m, t, nb, m->wvalid);
        }
    }
    m->ring_pos = (int)((m->ring_pos + (long)nt) % m->ring_cap);
    if (update && count > 0) /* the sums ahead were made with old weights */
        frae_pend_rebuild(m);
}

/* Trains (update) or computes gradients over nframes frames in windows of
 * W, from reset buffers or continuing them. */
static int train_impl(frae_model *m, const float *x, int nseq, int nframes,
                      const int *valid, int update, int reset,
                      frae_stats *stats)
{
    if (!m->cfg.training || bad_sizes(m, nseq, nframes))
        return -1;
    if (reset)
        frae_reset(m);
    if (claim_rows(m, nseq))
        return -1;
    const int D = m->cfg.frame_dim, W = m->cfg.window;
    loss_acc acc = {0, 0, 0, 0};
    long steps = 0;
    double grad_norm = 0.0;
    for (int w0 = 0; w0 < nframes; w0 += W) {
        int nt = nframes - w0 < W ? nframes - w0 : W;
        train_window(m, x, (ptrdiff_t)nframes * D, nseq, w0, nt, valid, update,
                     &acc, &steps, &grad_norm);
    }
    fill_stats(stats, &acc, steps, grad_norm);
    return 0;
}

static int eval_impl(frae_model *m, const float *x, int nseq, int nframes,
                     const int *valid, int reset, frae_stats *stats)
{
    if (bad_sizes(m, nseq, nframes))
        return -1;
    if (reset)
        frae_reset(m);
    if (claim_rows(m, nseq))
        return -1;
    const int D = m->cfg.frame_dim;
    const ptrdiff_t x_rs = (ptrdiff_t)nframes * D;
    loss_acc acc = {0, 0, 0, 0};
    for (long t = 0; t < nframes; t++) {
        frame_forward(m, t, x + t * D, x_rs, nseq);
        silence_padding(m, t, nseq, valid);
        frame_loss(m, t, x + t * D, x_rs, nseq, valid, &acc, NULL, 0.0f);
    }
    m->ring_pos = (int)((m->ring_pos + (long)nframes) % m->ring_cap);
    fill_stats(stats, &acc, 0, 0.0);
    return 0;
}

static int forward_impl(frae_model *m, const float *x, float *y, int nseq,
                        int nframes)
{
    if (bad_sizes(m, nseq, nframes) || claim_rows(m, nseq))
        return -1;
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

/* ---- public entry points: floating-point environment in, out ------- */

int frae_train_batch(frae_model *m, const float *x, int nseq, int nframes,
                     frae_stats *stats)
{
    fp_env env = fp_enter();
    int rc = train_impl(m, x, nseq, nframes, NULL, 1, 1, stats);
    fp_leave(env);
    return rc;
}

int frae_train_frames(frae_model *m, const float *x, int nseq, int nframes,
                      const int *valid, frae_stats *stats)
{
    fp_env env = fp_enter();
    int rc = train_impl(m, x, nseq, nframes, valid, 1, 0, stats);
    fp_leave(env);
    return rc;
}

int frae_compute_grads(frae_model *m, const float *x, int nseq, int nframes,
                       frae_stats *stats)
{
    if (nframes > m->cfg.window)
        return -1;
    fp_env env = fp_enter();
    int rc = train_impl(m, x, nseq, nframes, NULL, 0, 1, stats);
    fp_leave(env);
    return rc;
}

int frae_eval_batch(frae_model *m, const float *x, int nseq, int nframes,
                    frae_stats *stats)
{
    fp_env env = fp_enter();
    int rc = eval_impl(m, x, nseq, nframes, NULL, 1, stats);
    fp_leave(env);
    return rc;
}

int frae_eval_frames(frae_model *m, const float *x, int nseq, int nframes,
                     const int *valid, frae_stats *stats)
{
    fp_env env = fp_enter();
    int rc = eval_impl(m, x, nseq, nframes, valid, 0, stats);
    fp_leave(env);
    return rc;
}

int frae_forward(frae_model *m, const float *x, float *y, int nseq,
                 int nframes)
{
    fp_env env = fp_enter();
    int rc = forward_impl(m, x, y, nseq, nframes);
    fp_leave(env);
    return rc;
}
