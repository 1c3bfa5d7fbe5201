/* Gradients against central finite differences of the double-precision
 * naive reference, for every parameter of a tiny model.
 * Detached feedback is the gradient with the buffer contents held fixed,
 * so its finite differences hold them fixed; the straight-through
 * quantizer is the gradient with the rounding offset held fixed. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"
#include "test_util.h"
#include "tests.h"

#define GRAD_TOL 1e-4 /* max |analytic - fd| / max |fd|, per tensor */

typedef struct {
    frae_feedback feedback;
    frae_quantizer quant;
    int levels;
    const char *label;
    int relu_batch1; /* ReLU and one sequence: the sparse one-row path */
    frae_family family;
    int prior;    /* a prior of this width, and a rate term */
    int prior_ar; /* ... with its within-frame autoregression */
} grad_case;

/* erasure training for the next gradcheck: this share of packets of this
 * many frames lost (0: off) */
static float case_erasure;
/* the encoder's look-ahead frames for the next gradcheck */
static int case_lookahead;
static int case_erasure_frames;
/* the level term for the next gradcheck (0: off), and its scale */
static float case_level, case_level_scale = 1.0f;
/* the squared error's emphasis for the next gradcheck (0: off) */
static float case_emphasis;

/* How far two finite-difference gradients of n values lie apart (max
 * relative difference, a rounded to float): a setting that should move
 * the gradient moves it by more than 1e-2. */
static double gradient_gap(const double *a, const double *b, size_t n)
{
    float tmp[4096];
    for (size_t i = 0; i < n; i++)
        tmp[i] = (float)a[i];
    return max_rel_diff_d(tmp, b, n);
}

/* Returns failures; writes the finite-difference gradient to fd_out. */
static int gradcheck(const grad_case *g, double *fd_out, size_t *n_out)
{
    int failures = 0;
    const int enc[2] = {5, 4}, dec[2] = {4, 5};
    const int nseq = g->relu_batch1 ? 1 : 2, T = 5;
    frae_config c;
    tiny_config(&c, 3, 2, 2, enc, 3, 2, dec);
    /* tanh is smooth, so differences converge; ReLU's kinks are met with
     * probability ~0 at h = 1e-6, and its zeros exercise the sparse path */
    c.activation = g->relu_batch1 ? FRAE_ACT_RELU : FRAE_ACT_TANH;
    c.quantizer = g->quant;
    c.quant_levels = g->levels;
    c.feedback = g->feedback;
    c.family = g->family;
    c.prior_hidden = g->prior;
    c.prior_ar = g->prior_ar;
    c.rate_lambda = g->prior ? 0.3f : 0.0f;
    c.erasure = case_erasure;
    c.lookahead = case_lookahead;
    c.level_loss = case_level;
    c.level_scale = case_level_scale;
    c.emphasis = case_emphasis;
    c.emphasis_from = 1, c.emphasis_to = 3; /* of D = 3: all but value 0 */
    c.erasure_frames = case_erasure_frames;
    c.batch = nseq;
    c.window = T;
    c.chunk_rows = 2 * nseq; /* chunks of 2, 2 and 1 frames */
    frae_model *m = create_or_die(&c);
    size_t n = frae_param_count(m);
    float *pf = malloc(sizeof(float) * n), *grad = malloc(sizeof(float) * n);
    double *pd = malloc(sizeof(double) * n), *fd = fd_out;
    perturb_params(m, pf);
    for (size_t i = 0; i < n; i++)
        pd[i] = pf[i];
    float *x = synth(nseq, T, c.frame_dim, 21);
    if (case_level_scale > 1.0f) /* a quiet frame: the level term skips it */
        for (int d = 0; d < c.frame_dim; d++)
            x[2 * c.frame_dim + d] = -3.0f;
    size_t nv = (size_t)nseq * T * c.frame_dim;
    double *y = malloc(sizeof(double) * nv);
    /* fed back per frame: the buffer, and a GRU model's h_dec */
    const int fed = c.history * c.frame_dim +
                    (c.family == FRAE_FAMILY_GRU ? c.dec_hidden[0] : 0);
    /* two runs' with erasure training (naive_ref.h) */
    double *hist = malloc(sizeof(double) * 2 * nseq * T * fed);
    unsigned char *lost_seq = malloc((size_t)nseq * T);
    double *qoff = malloc(sizeof(double) * nseq * T * c.latent_dim);

    frae_stats st;
    CHECK(frae_step(m,
                    &(frae_batch){.x = x,
                                  .nseq = nseq,
                                  .nframes = T,
                                  .kind = FRAE_STEP_GRADIENTS},
                    &st) == 0,
          "compute_grads failed");
    frae_get_grads(m, grad);
    if (c.erasure > 0) {
        /* the reference loses the frames the step lost (its rows are the
         * sequences as sent, which lose nothing, then as received); the
         * check means something only if some were lost, some not, and a
         * lost frame followed another (the halved latent's own gradient) */
        const unsigned char *lost = m->tr.lost;
        int n_lost = 0, runs = 0, starts = 0, sent_lost = 0;
        for (int t = 0; t < T; t++)
            for (int b = 0; b < nseq; b++) {
                const unsigned char *row = lost + (size_t)t * 2 * nseq;
                const int now = row[nseq + b];
                const int before =
                    t > 0 && lost[(size_t)(t - 1) * 2 * nseq + nseq + b];
                lost_seq[t * nseq + b] = (unsigned char)now;
                sent_lost += row[b];
                n_lost += now;
                runs += now && before;
                starts += now && t > 0 && !before;
            }
        CHECK(sent_lost == 0 && n_lost < nseq * T && runs > 0 && starts > 0,
              "%s: %d of %d frames lost (%d sent), %d after a lost one, %d "
              "after a received one",
              g->label, n_lost, nseq * T, sent_lost, runs, starts);
        naive_set_lost(lost_seq);
    }
    double loss =
        naive_forward_d(&c, pd, x, nseq, T, y, NULL, hist, NULL, qoff);
    const double objective = st.mse + (double)c.rate_lambda * st.rate +
                             (double)c.level_loss * st.level;
    CHECK(fabs(loss - objective) <= 1e-5 * loss, "%s: loss %.9g vs naive %.9g",
          g->label, objective, loss);

    const int detached = g->feedback == FRAE_FEEDBACK_DETACHED;
    const int ste = g->quant != FRAE_QUANT_NONE;
    const double h = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double keep = pd[i];
        pd[i] = keep + h;
        double lp =
            naive_forward_d(&c, pd, x, nseq, T, y, detached ? hist : NULL, NULL,
                            ste ? qoff : NULL, NULL);
        pd[i] = keep - h;
        double lm =
            naive_forward_d(&c, pd, x, nseq, T, y, detached ? hist : NULL, NULL,
                            ste ? qoff : NULL, NULL);
        pd[i] = keep;
        fd[i] = (lp - lm) / (2 * h);
    }

    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int ne = frae_tensor_entries(&c, e);
    size_t off = 0;
    double worst = 0;
    for (int k = 0; k < ne; k++) {
        int in, out;
        frae_layer_shape(&c, e[k].mat, &in, &out);
        size_t count = e[k].bias ? (size_t)out : (size_t)in * out;
        double r = max_rel_diff_d(grad + off, fd + off, count);
        CHECK(r <= GRAD_TOL, "%s %s: rel diff %.3g", g->label, e[k].name, r);
        worst = fmax(worst, r);
        off += count;
    }
    naive_set_lost(NULL);
    printf("    %-30s %2d tensors, worst rel diff %.2e\n", g->label, ne, worst);
    *n_out = n;
    frae_destroy(m);
    free(pf), free(grad), free(pd), free(x), free(y), free(hist), free(qoff);
    free(lost_seq);
    return failures;
}

int test_gradcheck_detached(void)
{
    double fd[4096];
    size_t n;
    grad_case g = {FRAE_FEEDBACK_DETACHED,
                   FRAE_QUANT_NONE,
                   0,
                   "detached",
                   0,
                   FRAE_FAMILY_DENSE,
                   0,
                   0};
    return gradcheck(&g, fd, &n);
}

/* Also checks that the feedback path matters here, so the full-mode check
 * could not pass by computing the detached gradient. */
int test_gradcheck_full(void)
{
    int failures = 0;
    double fd_full[4096], fd_det[4096];
    size_t n;
    grad_case g = {FRAE_FEEDBACK_FULL,
                   FRAE_QUANT_NONE,
                   0,
                   "full",
                   0,
                   FRAE_FAMILY_DENSE,
                   0,
                   0};
    failures += gradcheck(&g, fd_full, &n);
    grad_case d = {FRAE_FEEDBACK_DETACHED,
                   FRAE_QUANT_NONE,
                   0,
                   "detached",
                   0,
                   FRAE_FAMILY_DENSE,
                   0,
                   0};
    failures += gradcheck(&d, fd_det, &n);
    double gap = gradient_gap(fd_det, fd_full, n);
    CHECK(gap > 1e-2, "full and detached gradients differ by only %.3g", gap);
    printf("    full vs detached gradients differ by %.3g (rel)\n", gap);
    return failures;
}

int test_gradcheck_relu_batch1(void)
{
    int failures = 0;
    double fd[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_NONE, 0, "relu batch 1, detached",
         1, FRAE_FAMILY_DENSE, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "relu batch 1, full", 1,
         FRAE_FAMILY_DENSE, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        failures += gradcheck(&cs[i], fd, &n);
    return failures;
}

int test_gradcheck_straight_through(void)
{
    int failures = 0;
    double fd[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_BINARY, 0, "binary, detached", 0,
         FRAE_FAMILY_DENSE, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0, "binary, full", 0,
         FRAE_FAMILY_DENSE, 0, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_UNIFORM, 5, "uniform 5, detached",
         0, FRAE_FAMILY_DENSE, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_UNIFORM, 5, "uniform 5, full", 0,
         FRAE_FAMILY_DENSE, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        failures += gradcheck(&cs[i], fd, &n);
    return failures;
}

/* The GRU family: BPTT through both GRUs' states (chunks of 2, 2 and 1
 * frames, so the carried gradient crosses chunks), h_dec and the buffer
 * fed back; full feedback must differ from detached. */
int test_gradcheck_gru(void)
{
    int failures = 0;
    double fd_full[4096], fd_det[4096], fd[4096];
    size_t n;
    grad_case full = {FRAE_FEEDBACK_FULL,
                      FRAE_QUANT_NONE,
                      0,
                      "gru full",
                      0,
                      FRAE_FAMILY_GRU,
                      0,
                      0};
    grad_case det = {FRAE_FEEDBACK_DETACHED,
                     FRAE_QUANT_NONE,
                     0,
                     "gru detached",
                     0,
                     FRAE_FAMILY_GRU,
                     0,
                     0};
    failures += gradcheck(&full, fd_full, &n);
    failures += gradcheck(&det, fd_det, &n);
    double gap = gradient_gap(fd_det, fd_full, n);
    CHECK(gap > 1e-2, "gru full and detached gradients differ by only %.3g",
          gap);
    printf("    gru full vs detached gradients differ by %.3g (rel)\n", gap);
    const grad_case cs[] = {
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0, "gru binary, full", 0,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_UNIFORM, 5,
         "gru uniform 5, detached", 0, FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "gru relu batch 1, full", 1,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_NONE, 0,
         "gru relu batch 1, detached", 1, FRAE_FAMILY_GRU, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        failures += gradcheck(&cs[i], fd, &n);
    return failures;
}

/* The learned prior and the rate term: the prior's exact gradients and
 * the straight-through slope into the encoder, both families and both
 * quantizers; detached feedback holds the prior's context fixed, full
 * feedback differentiates through it. */
int test_gradcheck_prior(void)
{
    int failures = 0;
    double fd[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_BINARY, 0, "prior, binary", 0,
         FRAE_FAMILY_DENSE, 3, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_UNIFORM, 5, "prior, uniform 5", 0,
         FRAE_FAMILY_DENSE, 3, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_BINARY, 0, "gru prior, binary", 0,
         FRAE_FAMILY_GRU, 3, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_UNIFORM, 4, "gru prior, uniform 4",
         0, FRAE_FAMILY_GRU, 3, 0},
        /* full feedback: the rate's gradient also reaches the decoder's
         * state through the prior's context */
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0, "prior, binary, full", 0,
         FRAE_FAMILY_DENSE, 3, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_UNIFORM, 5,
         "gru prior, uniform 5, full", 0, FRAE_FAMILY_GRU, 3, 0},
        /* the within-frame autoregression: its weights, and the codes'
         * share of the rate through it */
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_BINARY, 0, "prior ar, binary", 0,
         FRAE_FAMILY_DENSE, 3, 1},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_UNIFORM, 4,
         "gru prior ar, uniform 4, full", 0, FRAE_FAMILY_GRU, 3, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        failures += gradcheck(&cs[i], fd, &n);
    return failures;
}

/* The encoder's look-ahead (cfg.lookahead): the next frames' kernel rows
 * learn, with and without erasure training's two tracks; held at the
 * sequence's last frame past it. */
int test_gradcheck_lookahead(void)
{
    int failures = 0;
    double fd[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "gru look-ahead 2, full", 0,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_BINARY, 0,
         "gru look-ahead 1 binary, detached", 0, FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0,
         "gru look-ahead 1 prior, full", 0, FRAE_FAMILY_GRU, 3, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0,
         "gru look-ahead 1 erasure, full", 0, FRAE_FAMILY_GRU, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        case_lookahead = i == 0 ? 2 : 1;
        case_erasure = i == 3 ? 0.5f : 0.0f;
        case_erasure_frames = i == 3 ? 2 : 0;
        failures += gradcheck(&cs[i], fd, &n);
    }
    case_lookahead = 0, case_erasure = 0.0f, case_erasure_frames = 0;
    return failures;
}

/* Erasure training: the decoder runs lost frames on the last latent
 * halved; the gradient goes through the halving to the frame before and
 * not to the lost frame's code (the reference loses the same frames). */
int test_gradcheck_erasure(void)
{
    int failures = 0;
    double fd[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "gru erasure, full", 0,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0, "gru erasure binary, full",
         0, FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_UNIFORM, 5,
         "gru erasure uniform 5, detached", 0, FRAE_FAMILY_GRU, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        case_erasure = 0.5f;
        case_erasure_frames = i == 2 ? 1 : 2;
        failures += gradcheck(&cs[i], fd, &n);
    }
    case_erasure = 0.0f, case_erasure_frames = 0;
    return failures;
}

/* The level term (frae.h, level_loss): the squared log ratio of the
 * decoded to the input power over the window's active frames; on both
 * tracks of erasure training alike.  Also checks it is not nothing. */
int test_gradcheck_level(void)
{
    int failures = 0;
    double fd[4096], fd_off[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "gru level, full", 0,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0, "dense level binary, full",
         0, FRAE_FAMILY_DENSE, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        case_level = 0.0f;
        failures += gradcheck(&cs[i], fd_off, &n);
        case_level = 0.7f;
        failures += gradcheck(&cs[i], fd, &n);
        double gap = gradient_gap(fd_off, fd, n);
        CHECK(gap > 1e-2, "%s: the level term moves the gradient by only %.3g",
              cs[i].label, gap);
    }
    case_level = 0.7f, case_erasure = 0.5f, case_erasure_frames = 2;
    failures += gradcheck(&cs[0], fd, &n);
    /* at scale 20 the frames' powers span more than 30 dB: some are not
     * active, and pass neither loss nor gradient */
    case_erasure = 0.0f, case_erasure_frames = 0, case_level_scale = 20.0f;
    long active, frames;
    naive_level_counts(&active, &frames);
    failures += gradcheck(&cs[0], fd, &n);
    naive_level_counts(&active, &frames);
    CHECK(active > 0 && active < frames,
          "scale 20: %ld of %ld frames active (some, not all)", active, frames);
    printf("    scale 20: %ld of %ld frames active\n", active, frames);
    case_level = 0.0f, case_level_scale = 1.0f;
    return failures;
}

/* The squared error's emphasis (frae.h, cfg.emphasis): values 1 and 2
 * of each frame weigh 3, value 0 weighs 1; the training's loss against
 * the naive reference's and its gradient against finite differences,
 * with a prior's rate and the level term beside it.  Also checks that it
 * moves the gradient. */
int test_gradcheck_emphasis(void)
{
    int failures = 0;
    double fd[4096], fd_off[4096];
    size_t n;
    const grad_case cs[] = {
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_NONE, 0, "gru emphasis, full", 0,
         FRAE_FAMILY_GRU, 0, 0},
        {FRAE_FEEDBACK_FULL, FRAE_QUANT_BINARY, 0,
         "gru emphasis binary, prior, full", 0, FRAE_FAMILY_GRU, 3, 1},
        {FRAE_FEEDBACK_DETACHED, FRAE_QUANT_NONE, 0, "dense emphasis, detached",
         0, FRAE_FAMILY_DENSE, 0, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        case_emphasis = 0.0f;
        failures += gradcheck(&cs[i], fd_off, &n);
        case_emphasis = 3.0f;
        case_level = i == 1 ? 0.7f : 0.0f;
        failures += gradcheck(&cs[i], fd, &n);
        case_level = 0.0f;
        double gap = gradient_gap(fd_off, fd, n);
        CHECK(gap > 1e-2, "%s: the emphasis moves the gradient by only %.3g",
              cs[i].label, gap);
    }
    case_emphasis = 0.0f;
    return failures;
}

/* Look-ahead across training windows: a frame at a window's end sees the
 * next window's first frames (from the sequence, as inference does), not
 * its own window's last frame held.  Training steps of almost nothing
 * (the gradient clipped to 1e-30) over windows of 5 frames give the loss
 * that evaluation gives over the whole sequence. */
int test_lookahead_windows(void)
{
    int failures = 0;
    const int enc[1] = {6}, dec[1] = {5}, nseq = 2, T = 12;
    frae_config c;
    tiny_config(&c, 3, 0, 1, enc, 3, 1, dec);
    c.family = FRAE_FAMILY_GRU;
    c.quantizer = FRAE_QUANT_NONE; /* every change in the latent shows */
    c.lookahead = 2;
    c.batch = nseq;
    c.window = 5;
    c.clip_norm = 1e-30f;
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    float *x = synth(nseq, T, c.frame_dim, 23);
    frae_stats tr, ev;
    CHECK(!frae_step(m,
                     &(frae_batch){.x = x,
                                   .nseq = nseq,
                                   .nframes = T,
                                   .kind = FRAE_STEP_EVALUATE},
                     &ev) &&
              !frae_step(m,
                         &(frae_batch){.x = x,
                                       .nseq = nseq,
                                       .nframes = T,
                                       .kind = FRAE_STEP_TRAIN},
                         &tr),
          "steps failed");
    CHECK(fabs(tr.mse - ev.mse) <= 1e-9 * ev.mse && tr.steps == 3,
          "training over windows %.12g, evaluation %.12g (%ld steps)", tr.mse,
          ev.mse, tr.steps);
    printf("    look-ahead 2 over windows of 5: training %.9g, evaluation "
           "%.9g\n",
           tr.mse, ev.mse);
    free(x);
    frae_destroy(m);
    return failures;
}
