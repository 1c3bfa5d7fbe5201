/* The config (frae.h): its defaults and checks, and the shapes it gives
 * (each matrix's widths, the tensors in exchange order, which layers keep
 * a transposed copy, the learning-rate schedule).  Functions of a config
 * alone, below the model, its state and its forward pass, which all read
 * them. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/frae_internal.h"

void frae_config_default(frae_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->frame_dim = 80;
    cfg->history = 4;
    cfg->n_enc_hidden = 2;
    cfg->enc_hidden[0] = 512;
    cfg->enc_hidden[1] = 256;
    cfg->latent_dim = 16;
    cfg->n_dec_hidden = 2;
    cfg->dec_hidden[0] = 256;
    cfg->dec_hidden[1] = 512;
    cfg->activation = FRAE_ACT_RELU;
    cfg->quantizer = FRAE_QUANT_NONE;
    cfg->quant_levels = 0;
    cfg->seed = 1;
    cfg->batch = 1;
    cfg->window = 100;
    cfg->training = 1;
    cfg->feedback = FRAE_FEEDBACK_DETACHED;
    cfg->learning_rate = 1e-3f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->epsilon = 1e-7f;
    cfg->isa = FRAE_ISA_AUTO;
}

void frae_config_default_gru(frae_config *cfg)
{
    frae_config_default(cfg);
    cfg->family = FRAE_FAMILY_GRU;
    cfg->history = 0;
    cfg->n_enc_hidden = 1;
    cfg->enc_hidden[0] = 240;
    cfg->n_dec_hidden = 1;
    cfg->dec_hidden[0] = 240;
}

/* Widths are ints so that GEMM dimensions stay ints; products are checked. */
static int check_size(const char *what, long v, long lo, char *err,
                      size_t errlen)
{
    if (v < lo || v > INT_MAX)
        return frae_errorf(err, errlen, "%s must be in %ld..%d, got %ld", what,
                           lo, INT_MAX, v);
    return 0;
}

/* The prior's settings, the rate term and the pitch coders that need it. */
static int check_prior(const frae_config *cfg, char *err, size_t errlen)
{
    if (cfg->prior_hidden < 0)
        return frae_errorf(err, errlen, "prior width must be >= 0, got %d",
                           cfg->prior_hidden);
    if (cfg->prior_hidden > 0) {
        if (cfg->quantizer != FRAE_QUANT_BINARY &&
            cfg->quantizer != FRAE_QUANT_UNIFORM)
            return frae_errorf(err, errlen,
                               "a prior models quantized codes: it needs the "
                               "binary or a uniform quantizer");
        if (cfg->quantizer == FRAE_QUANT_UNIFORM && cfg->quant_levels > 4096)
            return frae_errorf(err, errlen,
                               "a prior over uniform codes takes at most "
                               "4096 levels, got %d",
                               cfg->quant_levels);
        if (frae_prior_context_width(cfg) == 0)
            return frae_errorf(err, errlen,
                               "a prior is conditioned on the decoder's "
                               "state: a dense model needs history K > 0");
        if (frae_prior_context_width(cfg) > INT_MAX ||
            (long)cfg->latent_dim * frae_prior_symbols(cfg) > INT_MAX)
            return frae_errorf(err, errlen, "the prior's widths overflow");
    }
    if (!(cfg->rate_lambda >= 0.0f) || !isfinite(cfg->rate_lambda))
        return frae_errorf(err, errlen, "rate lambda must be >= 0, got %g",
                           (double)cfg->rate_lambda);
    if (!(cfg->level_loss >= 0.0f && cfg->level_loss <= 1e6f))
        return frae_errorf(err, errlen,
                           "level loss must be in [0, 1e6], got %g",
                           (double)cfg->level_loss);
    if (!(cfg->emphasis >= 0.0f && cfg->emphasis <= 1000.0f))
        return frae_errorf(err, errlen, "emphasis must be in [0, 1000], got %g",
                           (double)cfg->emphasis);
    if (cfg->emphasis > 0.0f &&
        !(cfg->emphasis_from >= 0 && cfg->emphasis_from < cfg->emphasis_to &&
          cfg->emphasis_to <= cfg->frame_dim))
        return frae_errorf(err, errlen,
                           "emphasis must weigh values from..to-1 with 0 <= "
                           "from < to <= %d (the frame's), got %d..%d",
                           cfg->frame_dim, cfg->emphasis_from,
                           cfg->emphasis_to);
    if (!(cfg->level_scale >= 0.0f && cfg->level_scale <= 100.0f))
        return frae_errorf(err, errlen,
                           "level scale must be in [0, 100], got %g",
                           (double)cfg->level_scale);
    if (cfg->rate_lambda > 0.0f && cfg->prior_hidden == 0)
        return frae_errorf(err, errlen,
                           "a rate term needs a prior to measure the rate "
                           "(prior width > 0)");
    if (cfg->prior_ar != 0 && cfg->prior_ar != 1)
        return frae_errorf(err, errlen,
                           "prior autoregression must be 0 or 1, got %d",
                           cfg->prior_ar);
    if (cfg->prior_ar && cfg->prior_hidden == 0)
        return frae_errorf(err, errlen,
                           "the prior's autoregression needs a prior "
                           "(prior width > 0)");
    if (cfg->pitch_ranged < FRAE_PITCH_CODER_4BIT ||
        cfg->pitch_ranged > FRAE_PITCH_CODER_ENVELOPE)
        return frae_errorf(err, errlen,
                           "pitch_ranged must be 0, 1 or 2, got %d",
                           cfg->pitch_ranged);
    if (cfg->pitch_ranged && (!cfg->pitch || cfg->prior_hidden == 0))
        return frae_errorf(err, errlen,
                           "the range-coded pitch coder needs pitch and a "
                           "prior (prior width > 0)");
    return 0;
}

int frae_lookahead_delay(const frae_config *cfg)
{
    return cfg->lookahead_packet > 0 && cfg->lookahead > 0 ? 1 : cfg->lookahead;
}

int frae_config_check(const frae_config *cfg, char *err, size_t errlen)
{
    char what[64];
    if (!cfg)
        return frae_errorf(err, errlen, "config is NULL");
    if (check_size("frame dimension D", cfg->frame_dim, 1, err, errlen) ||
        check_size("history K", cfg->history, 0, err, errlen) ||
        check_size("latent dimension L", cfg->latent_dim, 1, err, errlen) ||
        check_size("batch", cfg->batch, 1, err, errlen) ||
        check_size("window", cfg->window, 1, err, errlen) ||
        check_size("chunk rows", cfg->chunk_rows, 0, err, errlen))
        return -1;
    if (!(cfg->clip_norm >= 0.0f) || !isfinite(cfg->clip_norm))
        return frae_errorf(err, errlen,
                           "gradient clip norm must be >= 0, got %g",
                           (double)cfg->clip_norm);
    if (cfg->n_enc_hidden < 0 || cfg->n_enc_hidden > FRAE_MAX_HIDDEN)
        return frae_errorf(err, errlen,
                           "encoder hidden layers must be 0..%d, got %d",
                           FRAE_MAX_HIDDEN, cfg->n_enc_hidden);
    if (cfg->n_dec_hidden < 0 || cfg->n_dec_hidden > FRAE_MAX_HIDDEN)
        return frae_errorf(err, errlen,
                           "decoder hidden layers must be 0..%d, got %d",
                           FRAE_MAX_HIDDEN, cfg->n_dec_hidden);
    for (int i = 0; i < cfg->n_enc_hidden; i++) {
        snprintf(what, sizeof what, "encoder hidden layer %d width", i + 1);
        if (check_size(what, cfg->enc_hidden[i], 1, err, errlen))
            return -1;
    }
    for (int i = 0; i < cfg->n_dec_hidden; i++) {
        snprintf(what, sizeof what, "decoder hidden layer %d width", i + 1);
        if (check_size(what, cfg->dec_hidden[i], 1, err, errlen))
            return -1;
    }
    if (cfg->family != FRAE_FAMILY_DENSE && cfg->family != FRAE_FAMILY_GRU)
        return frae_errorf(err, errlen, "unknown model family %d",
                           (int)cfg->family);
    if (cfg->normalize != 0 && cfg->normalize != 1)
        return frae_errorf(err, errlen, "normalize must be 0 or 1, got %d",
                           cfg->normalize);
    if (cfg->pitch != 0 && cfg->pitch != 1)
        return frae_errorf(err, errlen, "pitch must be 0 or 1, got %d",
                           cfg->pitch);
    if (cfg->family == FRAE_FAMILY_GRU) {
        if (cfg->n_enc_hidden < 1 || cfg->n_dec_hidden < 1)
            return frae_errorf(err, errlen,
                               "a GRU model needs at least one hidden layer "
                               "per side (the first is the GRU)");
        if (cfg->enc_hidden[0] > INT_MAX / 3 ||
            cfg->dec_hidden[0] > INT_MAX / 3)
            return frae_errorf(err, errlen, "GRU width must be at most %d",
                               INT_MAX / 3);
    }
    if (cfg->activation != FRAE_ACT_RELU && cfg->activation != FRAE_ACT_TANH)
        return frae_errorf(err, errlen, "unknown activation %d",
                           (int)cfg->activation);
    if (cfg->quantizer == FRAE_QUANT_UNIFORM) {
        if (cfg->quant_levels < 2 || cfg->quant_levels > 65536)
            return frae_errorf(
                err, errlen,
                "uniform quantizer levels must be 2..65536, got %d",
                cfg->quant_levels);
    } else if (cfg->quantizer != FRAE_QUANT_NONE &&
               cfg->quantizer != FRAE_QUANT_BINARY) {
        return frae_errorf(err, errlen, "unknown quantizer %d",
                           (int)cfg->quantizer);
    }
    if (check_prior(cfg, err, errlen))
        return -1;
    if (cfg->feedback != FRAE_FEEDBACK_DETACHED &&
        cfg->feedback != FRAE_FEEDBACK_FULL)
        return frae_errorf(err, errlen, "unknown feedback mode %d",
                           (int)cfg->feedback);
    if (!(cfg->learning_rate > 0.0f) || !isfinite(cfg->learning_rate))
        return frae_errorf(err, errlen, "learning rate must be > 0, got %g",
                           (double)cfg->learning_rate);
    if (cfg->lr_warmup < 0 || cfg->lr_decay_steps < 0)
        return frae_errorf(err, errlen,
                           "learning-rate warm-up and decay steps must be >= "
                           "0, got %d, %d",
                           cfg->lr_warmup, cfg->lr_decay_steps);
    if (!(cfg->lr_floor >= 0.0f && cfg->lr_floor <= 1.0f))
        return frae_errorf(err, errlen,
                           "learning-rate floor must be in [0, 1], got %g",
                           (double)cfg->lr_floor);
    if (!(cfg->erasure >= 0.0f && cfg->erasure <= 0.5f))
        return frae_errorf(err, errlen,
                           "erasure rate must be in [0, 0.5], got %g",
                           (double)cfg->erasure);
    if (cfg->lookahead < 0 || cfg->lookahead > FRAE_MAX_LOOKAHEAD ||
        (cfg->lookahead > 0 && cfg->family != FRAE_FAMILY_GRU))
        return frae_errorf(err, errlen,
                           "look-ahead must be 0 to 8 frames, GRU family only, "
                           "got %d",
                           cfg->lookahead);
    if (cfg->lookahead_packet < 0 ||
        cfg->lookahead_packet > FRAE_MAX_LOOKAHEAD ||
        (cfg->lookahead_packet > 0 &&
         (cfg->lookahead == 0 || cfg->lookahead_packet < cfg->lookahead)))
        return frae_errorf(err, errlen,
                           "look-ahead packets must be 0, or 1 to 8 frames "
                           "and no fewer than the look-ahead's %d, got %d",
                           cfg->lookahead, cfg->lookahead_packet);
    if (cfg->erasure_frames < 0 || cfg->erasure_frames > 1000)
        return frae_errorf(err, errlen,
                           "erasure packet must be 0 to 1000 frames, got %d",
                           cfg->erasure_frames);
    /* the concealment it trains is the fixed-rate GRU codec's; an
     * entropy-coded stream waits for its next resynchronisation point */
    if (cfg->erasure > 0.0f &&
        (cfg->family != FRAE_FAMILY_GRU || cfg->prior_hidden > 0))
        return frae_errorf(err, errlen,
                           "erasure training is for the GRU family without "
                           "a prior (fixed-rate codes)");
    /* it runs each sequence twice, as sent and as received */
    if (cfg->erasure > 0.0f && cfg->training && cfg->batch > INT_MAX / 2)
        return frae_errorf(err, errlen,
                           "erasure training runs 2 x batch rows: batch must "
                           "be at most %d, got %d",
                           INT_MAX / 2, cfg->batch);
    if (!(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f) ||
        !(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f))
        return frae_errorf(err, errlen,
                           "Adam betas must be in [0, 1), got %g, %g",
                           (double)cfg->beta1, (double)cfg->beta2);
    if (!(cfg->epsilon > 0.0f) || !isfinite(cfg->epsilon))
        return frae_errorf(err, errlen, "Adam epsilon must be > 0, got %g",
                           (double)cfg->epsilon);
    if (cfg->weights != FRAE_WEIGHTS_F32 && cfg->weights != FRAE_WEIGHTS_BF16)
        return frae_errorf(err, errlen, "unknown weight format %d",
                           (int)cfg->weights);
    if (cfg->weights == FRAE_WEIGHTS_BF16 && cfg->training)
        return frae_errorf(err, errlen,
                           "bf16 weights are for inference only: train in f32, "
                           "then convert (frae convert --weights bf16)");
    if (cfg->threads < 0 || cfg->threads > 1024)
        return frae_errorf(err, errlen, "threads must be 0..1024, got %d",
                           cfg->threads);
    if (cfg->isa < FRAE_ISA_AUTO || cfg->isa > FRAE_ISA_NEON)
        return frae_errorf(err, errlen, "unknown ISA %d", (int)cfg->isa);
    return 0;
}

/* ---- sizing -------------------------------------------------------------- */

int frae_layer_spec(const frae_config *c, int l, int *in, int *out, int *act,
                    int *units)
{
    const int ne = c->n_enc_hidden, nd = c->n_dec_hidden;
    const int gru = c->family == FRAE_FAMILY_GRU;
    const int n_layers = ne + nd + 2;
    long D = c->frame_dim, KD = (long)c->history * c->frame_dim;
    long i, o;
    if (c->prior_hidden > 0 && l >= frae_prior_mat(c, 0)) {
        /* the prior: a tanh layer on the context, then the logits; the
         * autoregression, the frame's codes to the logits */
        long P = c->prior_hidden;
        i = l == frae_prior_mat(c, 0)   ? frae_prior_context_width(c)
            : l == frae_prior_mat(c, 1) ? P
                                        : c->latent_dim;
        o = l == frae_prior_mat(c, 0)
                ? P
                : (long)c->latent_dim * frae_prior_symbols(c);
        if (i > INT_MAX || o > INT_MAX)
            return -1;
        *in = (int)i;
        *out = *units = (int)o;
        *act = l == frae_prior_mat(c, 0) ? ACT_TANH : ACT_LINEAR;
        return 0;
    }
    if (l >= n_layers) { /* a GRU's recurrent matrix: [H][3H] */
        long H = l == n_layers ? c->enc_hidden[0] : c->dec_hidden[0];
        *in = (int)H;
        *out = (int)(3 * H);
        *units = *out;
        *act = ACT_LINEAR;
        return 0;
    }
    if (l < ne) {
        i = l == 0
                ? D + KD +
                      (gru ? c->dec_hidden[0] + (long)frae_ahead_width(c) : 0)
                : c->enc_hidden[l - 1];
        o = c->enc_hidden[l];
        *act = gru && l == 0 ? ACT_GRU : (int)c->activation;
    } else if (l == ne) {
        i = ne == 0 ? D + KD : c->enc_hidden[ne - 1];
        o = c->latent_dim;
        *act = ACT_TANH;
    } else if (l <= ne + nd) {
        int k = l - ne - 1;
        i = k == 0 ? c->latent_dim + KD : c->dec_hidden[k - 1];
        o = c->dec_hidden[k];
        *act = gru && k == 0 ? ACT_GRU : (int)c->activation;
    } else {
        i = nd == 0 ? c->latent_dim + KD : c->dec_hidden[nd - 1];
        o = D;
        *act = ACT_LINEAR;
    }
    if (i > INT_MAX)
        return -1;
    *in = (int)i;
    *units = (int)o;
    *out = *act == ACT_GRU ? (int)(3 * o) : (int)o;
    return 0;
}

int frae_mat_count(const frae_config *c)
{
    return frae_prior_mat(c, 0) + frae_prior_mats(c);
}

int frae_layer_shape(const frae_config *c, int l, int *in, int *out)
{
    int act, units;
    return frae_layer_spec(c, l, in, out, &act, &units);
}

int frae_tensor_entries(const frae_config *c, frae_tensor_entry *e)
{
    const int ne = c->n_enc_hidden, nd = c->n_dec_hidden;
    const int n_layers = ne + nd + 2, gru = c->family == FRAE_FAMILY_GRU;
    int n = 0;
    for (int l = 0; l < n_layers; l++) {
        char base[16];
        if (l < ne)
            snprintf(base, sizeof base, "enc.%d", l);
        else if (l == ne)
            snprintf(base, sizeof base, "latent");
        else if (l <= ne + nd)
            snprintf(base, sizeof base, "dec.%d", l - ne - 1);
        else
            snprintf(base, sizeof base, "out");
        if (gru && (l == 0 || l == ne + 1)) {
            int rec = n_layers + (l != 0);
            e[n++] = (frae_tensor_entry){l, 0, 1, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.weight_ih", base);
            e[n++] = (frae_tensor_entry){rec, 0, 1, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.weight_hh", base);
            e[n++] = (frae_tensor_entry){l, 1, 1, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.bias_ih", base);
            e[n++] = (frae_tensor_entry){rec, 1, 1, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.bias_hh", base);
        } else {
            e[n++] = (frae_tensor_entry){l, 0, 0, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.weight", base);
            e[n++] = (frae_tensor_entry){l, 1, 0, ""};
            snprintf(e[n - 1].name, sizeof e[n - 1].name, "%s.bias", base);
        }
    }
    for (int j = 0; j < frae_prior_mats(c); j++) {
        const int l = frae_prior_mat(c, j);
        e[n++] = (frae_tensor_entry){l, 0, 0, ""};
        snprintf(e[n - 1].name, sizeof e[n - 1].name, "prior.%d.weight", j);
        e[n++] = (frae_tensor_entry){l, 1, 0, ""};
        snprintf(e[n - 1].name, sizeof e[n - 1].name, "prior.%d.bias", j);
    }
    return n;
}

int frae_needs_transposed(const frae_config *c, int l)
{
    /* a GRU encoder's input gradient reaches h_dec with full feedback, and
     * so does the prior's, to its context */
    if (c->prior_hidden > 0 && l == frae_prior_mat(c, 0))
        return c->training && c->feedback == FRAE_FEEDBACK_FULL;
    return c->training &&
           (l > 0 || (c->feedback == FRAE_FEEDBACK_FULL &&
                      (c->history > 0 || c->family == FRAE_FAMILY_GRU)));
}

/* Computed in double and rounded to float once.  It does not depend on
 * the ISA or thread count (one libm cos of the same double argument), so
 * training stays bit-identical across them. */
float frae_learning_rate_at(const frae_config *cfg, long step)
{
    double lr = cfg->learning_rate;
    if (step < 1)
        step = 1;
    if (cfg->lr_warmup > 0 && step <= cfg->lr_warmup)
        return (float)(lr * (double)step / cfg->lr_warmup);
    if (cfg->lr_decay_steps > 0) {
        long s = step - cfg->lr_warmup; /* 1.. into the decay */
        double floor = cfg->lr_floor;
        if (s >= cfg->lr_decay_steps)
            return (float)(lr * floor);
        double c = 0.5 * (1.0 + cos(3.14159265358979323846 * (double)s /
                                    cfg->lr_decay_steps));
        return (float)(lr * (floor + (1.0 - floor) * c));
    }
    return (float)lr;
}
