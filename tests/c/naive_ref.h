/* The naive reference FRAE, written the way the Keras model computed it:
 * every frame concatenates [x, buffer] into a fresh array, runs plain dense
 * layers, and shifts the buffer by copying.  Included twice by
 * test_naive.c: REAL = float (bit-exact comparison with the library, so
 * each dense output is the bias then fmaf over inputs in order) and
 * REAL = double (finite differences).
 *
 * Options for gradient checks:
 *  - frozen_hist [nseq][T][K*D + Hf]: use these buffer contents (and for
 *    the GRU family the Hf = H_dec values of h_dec fed to the encoder)
 *    instead of the decoded ones, which is what detached feedback
 *    differentiates;
 *  - frozen_qoff [nseq][T][L]: quantized latent = tanh output + this fixed
 *    offset, the straight-through estimator written as a function.
 * hist_out and qoff_out record those quantities from a normal run.
 *
 * With a prior (cfg.prior_hidden), the returned loss adds rate_lambda x
 * the mean over frames of the rate: -log2 p(q) under the prior on the
 * context (h_dec(t-1) or the buffer, taken from frozen_hist when given),
 * written as a function of q whose slope is the straight-through one:
 * bits(q's level) + (q - level) x the slope between neighbouring levels.
 * With the prior's within-frame autoregression (cfg.prior_ar), unit u's
 * logits also take b + sum_{j<u} A q_j, of the codes as they are.
 *
 * Erasure training: with naive_lost set (naive_set_lost, [T][nseq], 1 =
 * lost), each sequence runs twice, as the library trains it: first as
 * sent (nothing lost; its codes are kept), then as received: every frame's
 * decoder takes the code the first run made, or, where lost, the latent
 * this run's decoder ran last (0 at first) times FRAE_CONCEAL_DECAY; the
 * second run's own encoder output is not used.  The loss is the mean over
 * both runs; y, qoff_out and frozen_qoff are the first run's, and
 * hist_out / frozen_hist [2][nseq][T][fed] hold both runs'. */
#ifndef REAL
#error define REAL
#endif

#define NAIVE_CAT2(a, b) a##_##b
#define NAIVE_CAT(a, b) NAIVE_CAT2(a, b)
#define NAIVE(name) NAIVE_CAT(name, REAL)

static void NAIVE(dense)(const REAL *in, int n_in, const REAL *w, const REAL *b,
                         int n_out, REAL *out)
{
    for (int o = 0; o < n_out; o++) {
        REAL acc = b[o];
        for (int i = 0; i < n_in; i++)
            acc = REAL_FMA(in[i], w[(size_t)i * n_out + o], acc);
        out[o] = acc;
    }
}

/* A first layer over [head (head_w), frame 1 (D), ..., frame K (D)]: the
 * library's chain order is the bias, the fed-back frames oldest first, then
 * the head (README, numerical contract). */
static void NAIVE(dense_first)(const REAL *in, int head_w, int D, int K,
                               const REAL *w, const REAL *b, int n_out,
                               REAL *out)
{
    for (int o = 0; o < n_out; o++) {
        REAL acc = b[o];
        for (int j = K - 1; j >= 0; j--)
            for (int i = head_w + j * D; i < head_w + (j + 1) * D; i++)
                acc = REAL_FMA(in[i], w[(size_t)i * n_out + o], acc);
        for (int i = 0; i < head_w; i++)
            acc = REAL_FMA(in[i], w[(size_t)i * n_out + o], acc);
        out[o] = acc;
    }
}

/* A GRU layer of H units over n_in inputs, Keras reset_after=True layout
 * (frae's flat params, read at *p, which moves past them): kernel
 * [n_in][3H] (its input chained as dense_first does), recurrent kernel
 * [H][3H], bias [2][3H]; gates z, r, h.  h is updated in place and copied
 * to out. */
static void NAIVE(gru)(const REAL *in, int n_in, int head_w, int D, int K,
                       const REAL **p, int H, REAL *h, REAL *out)
{
    const REAL *kernel = *p, *rec = kernel + (size_t)n_in * 3 * H;
    const REAL *bias = rec + (size_t)H * 3 * H;
    *p = bias + 6 * (size_t)H;
    REAL *gx = malloc(sizeof(REAL) * 3 * (size_t)H);
    REAL *gh = malloc(sizeof(REAL) * 3 * (size_t)H);
    NAIVE(dense_first)(in, head_w, D, K, kernel, bias, 3 * H, gx);
    /* the encoder's look-ahead frames, after the head (cfg.lookahead) */
    for (int o = 0; o < 3 * H; o++)
        for (int i = head_w + K * D; i < n_in; i++)
            gx[o] = REAL_FMA(in[i], kernel[(size_t)i * 3 * H + o], gx[o]);
    NAIVE(dense)(h, H, rec, bias + 3 * H, 3 * H, gh);
    for (int j = 0; j < H; j++) {
        REAL z = (REAL)1 / ((REAL)1 + REAL_EXP(-(gx[j] + gh[j])));
        REAL r = (REAL)1 / ((REAL)1 + REAL_EXP(-(gx[H + j] + gh[H + j])));
        REAL n = REAL_GRU_TANH(gx[2 * H + j] + r * gh[2 * H + j]);
        h[j] = n + z * (h[j] - n);
    }
    memcpy(out, h, sizeof(REAL) * (size_t)H);
    free(gx), free(gh);
}

static void NAIVE(act)(int act, REAL *z, int n)
{
    for (int i = 0; i < n; i++) {
        if (act == FRAE_ACT_RELU)
            z[i] = z[i] > 0 ? z[i] : 0;
        else
            z[i] = REAL_TANH(z[i]);
    }
}

static REAL NAIVE(quant)(const frae_config *c, REAL a)
{
    if (c->quantizer == FRAE_QUANT_BINARY)
        return a >= 0 ? 1 : -1;
    if (c->quantizer == FRAE_QUANT_UNIFORM) {
        REAL top = (REAL)(c->quant_levels - 1);
        REAL idx = REAL_RINT((a + 1) * (REAL)0.5 * top);
        idx = idx < 0 ? 0 : idx > top ? top : idx;
        return idx * ((REAL)2 / top) - 1;
    }
    return a;
}

/* Rate of one frame's codes q (L) under the prior on ctx (C values), its
 * parameters at p (Keras layout, after every other layer's). */
static double NAIVE(prior_rate)(const frae_config *c, const REAL *p,
                                const REAL *ctx, const REAL *q)
{
    const int L = c->latent_dim, P = c->prior_hidden;
    const int S = c->quantizer == FRAE_QUANT_UNIFORM ? c->quant_levels : 1;
    const int C = c->family == FRAE_FAMILY_GRU ? c->dec_hidden[0]
                                               : c->history * c->frame_dim;
    REAL *hid = malloc(sizeof(REAL) * (size_t)P);
    REAL *lg = malloc(sizeof(REAL) * (size_t)L * S);
    NAIVE(dense)(ctx, C, p, p + (size_t)C * P, P, hid);
    NAIVE(act)(FRAE_ACT_TANH, hid, P);
    p += (size_t)C * P + P;
    NAIVE(dense)(hid, P, p, p + (size_t)P * L * S, L * S, lg);
    if (c->prior_ar) { /* + b + sum_{j<u} A[j][u S + k] q_j, A [L][L S] */
        const REAL *a = p + (size_t)P * L * S + (size_t)L * S;
        const REAL *b = a + (size_t)L * L * S;
        for (int col = 0; col < L * S; col++) {
            REAL sum = lg[col] + b[col];
            for (int j = 0; j < col / S; j++)
                sum += a[(size_t)j * L * S + col] * q[j];
            lg[col] = sum;
        }
    }
    const double ln2 = log(2.0);
    double bits = 0;
    for (int u = 0; u < L; u++) {
        REAL qh = NAIVE(quant)(c, q[u]);
        if (S == 1) {
            double l = lg[u], x = qh > 0 ? -l : l;
            double sp = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
            bits += sp / ln2 + ((double)q[u] - qh) * (-l / (2 * ln2));
            continue;
        }
        const REAL *v = lg + (size_t)u * S;
        const int top = S - 1;
        int k = (int)lrint(((double)qh + 1) * 0.5 * top);
        double mx = v[0], sum = 0;
        for (int j = 1; j < S; j++)
            mx = v[j] > mx ? v[j] : mx;
        for (int j = 0; j < S; j++)
            sum += exp(v[j] - mx);
        double delta = 2.0 / top;
        int lo = k > 0 ? k - 1 : 0, hi = k < top ? k + 1 : top;
        double slope = ((double)v[lo] - v[hi]) / ((hi - lo) * delta * ln2);
        bits += (mx + log(sum) - v[k]) / ln2 + ((double)q[u] - qh) * slope;
    }
    free(hid), free(lg);
    return bits;
}

/* params in frae's flat layout (converted to REAL by the caller).
 * Returns the mean squared error over all nseq*T*D values. */
static double NAIVE(naive_forward)(const frae_config *c, const REAL *params,
                                   const float *x, int nseq, int T, REAL *y,
                                   const REAL *frozen_hist, REAL *hist_out,
                                   const REAL *frozen_qoff, REAL *qoff_out)
{
    const int D = c->frame_dim, K = c->history, L = c->latent_dim;
    const int ne = c->n_enc_hidden, nd = c->n_dec_hidden;
    const int gru = c->family == FRAE_FAMILY_GRU;
    const int Hf = gru ? c->dec_hidden[0] : 0; /* h_dec fed to the encoder */
    const int fed = K * D + Hf;                /* fed-back values per frame */
    int widths[2 * FRAE_MAX_HIDDEN + 3];
    int nw = 0;
    const int A = c->lookahead;
    widths[nw++] = D + Hf + K * D + A * D;
    for (int i = 0; i < ne; i++)
        widths[nw++] = c->enc_hidden[i];
    widths[nw++] = L;
    const int dec_in = nw;
    widths[nw++] = L + K * D;
    for (int i = 0; i < nd; i++)
        widths[nw++] = c->dec_hidden[i];
    widths[nw++] = D;
    /* widths: enc input, enc hidden..., L | dec input, dec hidden..., D */
    double sse = 0, rate = 0, level = 0;
    /* the level term's frame log powers (c->level_loss, frae.h) */
    double *lx = malloc(sizeof(double) * ((size_t)T + 1));
    double *ly = malloc(sizeof(double) * ((size_t)T + 1));
    const double lk = c->level_scale > 0 ? c->level_scale : 5.0;
    const int C = gru ? Hf : K * D; /* the prior's context */
    REAL *ctx = malloc(sizeof(REAL) * ((size_t)C + 1));
    REAL *qv = malloc(sizeof(REAL) * (size_t)L);
    /* erasure training: the sent codes [T][L] of the sequence's first run */
    REAL *sent = malloc(sizeof(REAL) * ((size_t)T * L + 1));
    const int runs = naive_lost ? 2 : 1;
    for (int sr = 0; sr < nseq * runs; sr++) {
        const int s = sr / runs, run = sr % runs; /* as sent, as received */
        REAL *buffer = calloc((size_t)K * D + 1, sizeof(REAL));
        REAL *h_enc = calloc(gru ? (size_t)c->enc_hidden[0] : 1, sizeof(REAL));
        REAL *h_dec = calloc(gru ? (size_t)Hf : 1, sizeof(REAL));
        REAL *last_q = calloc((size_t)L, sizeof(REAL));
        for (int t = 0; t < T; t++) {
            const float *xt = x + ((size_t)s * T + t) * D;
            const size_t fr = (size_t)s * T + t;
            const size_t hr = (size_t)run * nseq * T + fr; /* hist's row */
            /* what the encoder is fed: the buffer, then h_dec */
            REAL *fedv = malloc(sizeof(REAL) * ((size_t)fed + 1));
            for (int i = 0; i < K * D; i++)
                fedv[i] = buffer[i];
            for (int i = 0; i < Hf; i++)
                fedv[K * D + i] = h_dec[i];
            if (frozen_hist)
                for (int i = 0; i < fed; i++)
                    fedv[i] = frozen_hist[hr * fed + i];
            if (hist_out)
                for (int i = 0; i < fed; i++)
                    hist_out[hr * fed + i] = fedv[i];
            for (int i = 0; i < C; i++) /* the buffer, or h_dec */
                ctx[i] = fedv[gru ? K * D + i : i];
            for (int i = 0; i < K * D; i++)
                buffer[i] = fedv[i];
            /* encoder: xin = concat(x_t, [h_dec,] buffer), a fresh array */
            REAL *cur = malloc(sizeof(REAL) * (size_t)widths[0]);
            for (int i = 0; i < D; i++)
                cur[i] = (REAL)xt[i];
            for (int i = 0; i < Hf; i++)
                cur[D + i] = fedv[K * D + i];
            for (int i = 0; i < K * D; i++)
                cur[D + Hf + i] = buffer[i];
            for (int a = 1; a <= A; a++) /* held at the last frame */
                for (int i = 0; i < D; i++)
                    cur[D + Hf + K * D + (a - 1) * D + i] = (REAL)
                        x[((size_t)s * T + (t + a < T ? t + a : T - 1)) * D +
                          i];
            free(fedv);
            const REAL *p = params;
            int li = 0;
            for (; li < dec_in - 1; li++) {
                int in = widths[li], out = widths[li + 1];
                REAL *nxt = malloc(sizeof(REAL) * (size_t)out);
                if (li == 0 && gru) {
                    NAIVE(gru)(cur, in, D + Hf, D, K, &p, out, h_enc, nxt);
                    free(cur);
                    cur = nxt;
                    continue;
                }
                if (li == 0)
                    NAIVE(dense_first)
                (cur, D, D, K, p, p + (size_t)in * out, out, nxt);
                else NAIVE(dense)(cur, in, p, p + (size_t)in * out, out, nxt);
                p += (size_t)in * out + out;
                NAIVE(act)
                (li == dec_in - 2 ? FRAE_ACT_TANH : c->activation, nxt, out);
                free(cur);
                cur = nxt;
            }
            /* cur = tanh latent; quantize; decin = concat(q, buffer) */
            REAL *decin = malloc(sizeof(REAL) * (size_t)widths[dec_in]);
            for (int i = 0; i < L; i++) {
                REAL q;
                if (run == 1) /* as received */
                    q = naive_lost[(size_t)t * nseq + s]
                            ? (REAL)FRAE_CONCEAL_DECAY * last_q[i]
                            : sent[(size_t)t * L + i];
                else if (frozen_qoff)
                    q = cur[i] + frozen_qoff[fr * L + i];
                else
                    q = NAIVE(quant)(c, cur[i]);
                if (qoff_out && run == 0)
                    qoff_out[fr * L + i] = q - cur[i];
                if (run == 0)
                    sent[(size_t)t * L + i] = q;
                last_q[i] = q;
                decin[i] = q;
                qv[i] = q;
            }
            for (int i = 0; i < K * D; i++)
                decin[L + i] = buffer[i];
            free(cur);
            cur = decin;
            for (li = dec_in; li < nw - 1; li++) {
                int in = widths[li], out = widths[li + 1];
                REAL *nxt = malloc(sizeof(REAL) * (size_t)out);
                if (li == dec_in && gru) {
                    NAIVE(gru)(cur, in, L, D, K, &p, out, h_dec, nxt);
                    free(cur);
                    cur = nxt;
                    continue;
                }
                if (li == dec_in)
                    NAIVE(dense_first)
                (cur, L, D, K, p, p + (size_t)in * out, out, nxt);
                else NAIVE(dense)(cur, in, p, p + (size_t)in * out, out, nxt);
                p += (size_t)in * out + out;
                if (li != nw - 2)
                    NAIVE(act)(c->activation, nxt, out);
                free(cur);
                cur = nxt;
            }
            if (c->prior_hidden > 0) /* p: past every other layer */
                rate += NAIVE(prior_rate)(c, p, ctx, qv);
            double px = 0, py = 0;
            for (int i = 0; i < D; i++) {
                if (run == 0)
                    y[fr * D + i] = cur[i];
                double diff = (double)cur[i] - (double)xt[i];
                /* cfg.emphasis: values in [from, to) weigh it, the rest 1 */
                const double w = c->emphasis > 0 && i >= c->emphasis_from &&
                                         i < c->emphasis_to
                                     ? (double)c->emphasis
                                     : 1.0;
                sse += w * diff * diff;
                px += exp(lk * (double)xt[i]), py += exp(lk * (double)cur[i]);
            }
            lx[t] = log(px), ly[t] = log(py);
            /* shift the buffer by copying, newest frame to the front */
            if (K > 0) {
                memmove(buffer + D, buffer, sizeof(REAL) * (size_t)(K - 1) * D);
                memcpy(buffer, cur, sizeof(REAL) * D);
            }
            free(cur);
        }
        free(buffer), free(h_enc), free(h_dec), free(last_q);
        if (c->level_loss > 0) { /* over the frames within 30 dB */
            double loudest = -HUGE_VAL, sx = 0, sy = 0;
            int active = 0;
            for (int t = 0; t < T; t++)
                loudest = lx[t] > loudest ? lx[t] : loudest;
            for (int t = 0; t < T; t++)
                if (lx[t] >= loudest - 3.0 * log(10.0)) {
                    sx += exp(lx[t] - loudest), sy += exp(ly[t] - loudest);
                    active++;
                }
            level += active * (log(sy) - log(sx)) * (log(sy) - log(sx));
            naive_level_active += active, naive_level_frames += T;
        }
    }
    free(ctx), free(qv), free(sent), free(lx), free(ly);
    return sse / ((double)runs * nseq * T * D) +
           (double)c->rate_lambda * rate / ((double)nseq * T) +
           (double)c->level_loss * level / ((double)runs * nseq * T);
}

#undef NAIVE
#undef NAIVE_CAT
#undef NAIVE_CAT2
