/* The library against the PyTorch reference (tools/frae_torch.py), on
 * fixtures exported by tools/export_fixtures.py and committed, so no torch
 * is needed here.  For every tensor: max |frae - torch| / max |torch|,
 * printed, and at most FIXTURE_TOL. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"
#include "test_util.h"
#include "tests.h"

#define FIXTURE_TOL 1e-5

/* The fixture sets of tools/export_fixtures.py and their configs; the
 * prior's sets (prior > 0) also fix the quantizer, and their files the
 * rate's lambda. */
typedef struct {
    const char *path;
    frae_family family;
    int K, ne, enc[2], nd, dec[2];
    int prior;
    frae_quantizer quantizer;
    int levels;
    int targets;   /* trained toward targets other than the inputs */
    int prior_ar;  /* the prior's within-frame autoregression */
    int level;     /* trained with the level term (its file: weight, scale);
                      2: and an emphasis (its file's "emphasis": weight,
                      from, to) */
    int lookahead; /* the encoder's frames ahead */
    int lookahead_packet; /* ... none past the next packet's first */
} fixture_set;

static const fixture_set fixture_sets[] = {
    {"tests/fixtures/small.bin",
     FRAE_FAMILY_DENSE,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     0,
     0,
     0},
    {"tests/fixtures/gru.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     0,
     0,
     0},
    {"tests/fixtures/gru_k0.bin",
     FRAE_FAMILY_GRU,
     0,
     1,
     {7},
     1,
     {6},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     0,
     0,
     0},
    {"tests/fixtures/gru_lookahead.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     0,
     2,
     0},
    {"tests/fixtures/gru_lookahead_packet.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     0,
     2,
     3},
    {"tests/fixtures/prior_dense.bin",
     FRAE_FAMILY_DENSE,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     4,
     FRAE_QUANT_BINARY,
     0,
     0,
     0,
     0,
     0,
     0},
    {"tests/fixtures/prior_gru.bin",
     FRAE_FAMILY_GRU,
     0,
     1,
     {7},
     1,
     {6},
     4,
     FRAE_QUANT_UNIFORM,
     5,
     0,
     0,
     0,
     0,
     0},
    {"tests/fixtures/prior_ar_dense.bin",
     FRAE_FAMILY_DENSE,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     4,
     FRAE_QUANT_BINARY,
     0,
     0,
     1,
     0,
     0,
     0},
    {"tests/fixtures/prior_ar_gru.bin",
     FRAE_FAMILY_GRU,
     0,
     1,
     {7},
     1,
     {6},
     4,
     FRAE_QUANT_UNIFORM,
     5,
     0,
     1,
     0,
     0,
     0},
    {"tests/fixtures/targets_dense.bin",
     FRAE_FAMILY_DENSE,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     1,
     0,
     0,
     0,
     0},
    {"tests/fixtures/targets_gru.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     1,
     0,
     0,
     0,
     0},
    {"tests/fixtures/level_dense.bin",
     FRAE_FAMILY_DENSE,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     1,
     0,
     0},
    {"tests/fixtures/level_gru.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     1,
     0,
     0},
    {"tests/fixtures/level_emphasis_gru.bin",
     FRAE_FAMILY_GRU,
     2,
     2,
     {7, 6},
     2,
     {6, 7},
     0,
     FRAE_QUANT_NONE,
     0,
     0,
     0,
     2,
     0,
     0},
};

/* The kind of check a set is for: 0 plain, 1 a prior, 2 targets, 3 the
 * level term. */
static int set_kind(const fixture_set *fs)
{
    return fs->level ? 3 : fs->targets ? 2 : fs->prior > 0;
}

/* torch [out][in] weights + biases under prefix -> frae flat params
 * (Keras order: [in][out], a GRU's gates z, r, h). */
static void flat_from_torch(const fixtures *fx, const char *prefix,
                            const frae_config *c, float *dst)
{
    char name[96];
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(c, e);
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "%s%s", prefix, e[k].name);
        const fix_tensor *t = fixtures_get(fx, name);
        if (e[k].bias) {
            const int out = (int)t->dims[0];
            for (int o = 0; o < out; o++)
                *dst++ = t->data[frae_keras_col(e[k].gru, o, out)];
            continue;
        }
        const int out = (int)t->dims[0], in = (int)t->dims[1];
        for (int i = 0; i < in; i++)
            for (int o = 0; o < out; o++)
                *dst++ =
                    t->data[(size_t)frae_keras_col(e[k].gru, o, out) * in + i];
    }
}

/* Parameters after Adam differ from the start by ~lr, so compare the
 * updates (after - init), not the parameters: a 1e-5 relative error on the
 * parameters would hide a 1% error in the step. */
static void subtract(float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] -= b[i];
}

/* Compares flat vectors tensor by tensor; prints each figure. */
static int compare_flat(const char *what, const float *got, const float *ref,
                        const frae_config *c)
{
    int failures = 0;
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(c, e);
    size_t off = 0;
    printf("    %-16s", what);
    for (int k = 0; k < n; k++) {
        int in, out;
        frae_layer_shape(c, e[k].mat, &in, &out);
        size_t count = e[k].bias ? (size_t)out : (size_t)in * out;
        double r = max_rel_diff(got + off, ref + off, count);
        printf(" %s %.1e%s", e[k].name, r,
               k % 4 == 3 && k + 1 < n ? "\n                    " : "");
        CHECK(r <= FIXTURE_TOL, "%s %s rel diff %.3g", what, e[k].name, r);
        off += count;
    }
    printf("\n");
    return failures;
}

static int check_scalar(const char *what, double got, double ref)
{
    int failures = 0;
    double rel = fabs(got - ref) / fabs(ref);
    printf("    %-16s %.9g vs torch %.9g, rel %.1e\n", what, got, ref, rel);
    CHECK(rel <= FIXTURE_TOL, "%s: %.9g vs %.9g", what, got, ref);
    return failures;
}

/* Loss (and with a prior, the rate) and gradients of one window in
 * feedback mode `mode`, against fixtures loss.<mode>, grad.<mode>.*; ref
 * keeps torch's gradients. */
static int check_grads(const frae_config *cm, const float *init,
                       const fixtures *fx, const fix_tensor *x, int nseq, int T,
                       const char *mode, int rate, float *got, float *ref)
{
    int failures = 0;
    char name[64];
    frae_model *m = create_or_die(cm);
    frae_set_params(m, init);
    frae_stats st;
    frae_step(m,
              &(frae_batch){.x = x->data,
                            .nseq = nseq,
                            .nframes = T,
                            .kind = FRAE_STEP_GRADIENTS},
              &st);
    snprintf(name, sizeof name, "loss.%s", mode);
    failures += check_scalar(name, st.mse, fixtures_get(fx, name)->data[0]);
    if (rate) {
        snprintf(name, sizeof name, "rate.%s", mode);
        failures +=
            check_scalar(name, st.rate, fixtures_get(fx, name)->data[0]);
    }
    frae_get_grads(m, got);
    snprintf(name, sizeof name, "grad.%s.", mode);
    flat_from_torch(fx, name, cm, ref);
    failures += compare_flat(name, got, ref, cm);
    frae_destroy(m);
    return failures;
}

/* The update training made to m's parameters (from init) against torch's,
 * tensors prefix.* of fx. */
static int check_update(const frae_model *m, const fixtures *fx,
                        const char *prefix, const frae_config *cm,
                        const float *init, float *got, float *ref)
{
    const size_t np = frae_param_count_for(cm);
    frae_get_params(m, got);
    flat_from_torch(fx, prefix, cm, ref);
    subtract(got, init, np), subtract(ref, init, np);
    return compare_flat(prefix, got, ref, cm);
}

/* Three Adam steps on one window, then truncated BPTT (windows of 4 and 2
 * frames, two steps, a backward pass in chunks of one frame), against
 * adam3.<mode>.* and tbptt.<mode>.*: the updates, not the parameters, and
 * the run's loss (and with extra, its rate, its level term).  targets:
 * NULL, or what the loss compares with. */
enum { CHECK_RATE = 1, CHECK_LEVEL = 2 }; /* check_steps' extra values */

static int check_steps(const frae_config *cm, const float *init,
                       const fixtures *fx, const fix_tensor *x,
                       const float *targets, int nseq, int T, const char *mode,
                       int extra, float *got, float *ref)
{
    int failures = 0;
    char name[64];
    const frae_batch batch = {.x = x->data,
                              .targets = targets,
                              .nseq = nseq,
                              .nframes = T,
                              .kind = FRAE_STEP_TRAIN};
    frae_model *m = create_or_die(cm);
    frae_set_params(m, init);
    for (int s = 0; s < 3; s++)
        frae_step(m, &batch, NULL);
    snprintf(name, sizeof name, "adam3.%s.", mode);
    failures += check_update(m, fx, name, cm, init, got, ref);
    frae_destroy(m);

    frae_config ct = *cm;
    ct.window = 4;
    ct.chunk_rows = 1;
    m = create_or_die(&ct);
    frae_set_params(m, init);
    frae_stats st;
    frae_step(m, &batch, &st);
    CHECK(st.steps == 2, "tbptt took %ld steps, not 2", st.steps);
    snprintf(name, sizeof name, "tbptt.%s.loss", mode);
    failures += check_scalar(name, st.mse, fixtures_get(fx, name)->data[0]);
    if (extra & CHECK_RATE) {
        snprintf(name, sizeof name, "tbptt.%s.rate", mode);
        failures +=
            check_scalar(name, st.rate, fixtures_get(fx, name)->data[0]);
    }
    if (extra & CHECK_LEVEL) {
        snprintf(name, sizeof name, "tbptt.%s.level", mode);
        failures +=
            check_scalar(name, st.level, fixtures_get(fx, name)->data[0]);
    }
    snprintf(name, sizeof name, "tbptt.%s.", mode);
    failures += check_update(m, fx, name, cm, init, got, ref);
    frae_destroy(m);
    return failures;
}

/* Loads set fs into fx and its config into c (the window the fixtures'
 * length, Adam's settings and, for a prior, the rate's lambda from the
 * file); -1 if the file cannot be read. */
static int open_set(const fixture_set *fs, frae_isa isa, int threads,
                    fixtures *fx, frae_config *c)
{
    memset(fx, 0, sizeof *fx);
    if (fixtures_load(fs->path, fx)) {
        free(fx->buf), free(fx->floats);
        return -1;
    }
    tiny_config(c, 5, fs->K, fs->ne, fs->enc, 3, fs->nd, fs->dec);
    c->family = fs->family;
    c->lookahead = fs->lookahead;
    c->lookahead_packet = fs->lookahead_packet;
    c->batch = 2;
    c->window = (int)fixtures_get(fx, "x")->dims[1];
    c->isa = isa;
    c->threads = threads;
    const float *hp = fixtures_get(fx, "adam.hparams")->data;
    c->learning_rate = hp[0], c->beta1 = hp[1], c->beta2 = hp[2];
    c->epsilon = hp[3];
    if (fs->prior) {
        c->quantizer = fs->quantizer;
        c->quant_levels = fs->levels;
        c->prior_hidden = fs->prior;
        c->prior_ar = fs->prior_ar;
        c->rate_lambda = fixtures_get(fx, "rate_lambda")->data[0];
    }
    c->targets = fs->targets;
    if (fs->level) {
        const float *lv = fixtures_get(fx, "level")->data;
        c->level_loss = lv[0], c->level_scale = lv[1];
    }
    if (fs->level == 2) {
        const float *em = fixtures_get(fx, "emphasis")->data;
        c->emphasis = em[0];
        c->emphasis_from = (int)em[1], c->emphasis_to = (int)em[2];
    }
    return 0;
}

/* Every set of a kind (set_kind), on every instruction set and thread
 * count. */
static int each_set(int kind, int (*on)(const fixture_set *, frae_isa, int))
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    for (size_t f = 0; f < sizeof fixture_sets / sizeof *fixture_sets; f++)
        for (int i = 0; i < nisa && set_kind(&fixture_sets[f]) == kind; i++)
            for (int threads = 1; threads <= 2; threads++) {
                printf("  -- %s, isa %d, %d thread%s\n", fixture_sets[f].path,
                       (int)isas[i], threads, threads == 1 ? "" : "s");
                failures += on(&fixture_sets[f], isas[i], threads);
            }
    return failures;
}

static int fixtures_on(const fixture_set *fs, frae_isa isa, int threads);

/* Forward of all nseq sequences in one call, then one sequence per call
 * (the one-row kernels), against the fixture `want`. */
static int check_forward(const frae_config *c, const float *init,
                         const float *x, int nseq, int T, const float *want,
                         const char *name, float *y)
{
    int failures = 0;
    const size_t count = (size_t)nseq * T * c->frame_dim;
    const size_t per = count / (size_t)nseq;
    for (int one = 0; one <= 1; one++) {
        frae_config cc = *c;
        if (one)
            cc.batch = 1;
        frae_model *m = create_or_die(&cc);
        frae_set_params(m, init);
        if (one)
            for (int sq = 0; sq < nseq; sq++) {
                frae_reset(m);
                frae_forward(m, x + sq * per, y + sq * per, 1, T);
            }
        else
            frae_forward(m, x, y, nseq, T);
        double r = max_rel_diff(y, want, count);
        printf("    %-16s rel %.1e%s\n", name, r,
               one ? " (one sequence per call)" : "");
        CHECK(r <= FIXTURE_TOL, "%s%s rel diff %.3g", name,
              one ? " batch 1" : "", r);
        frae_destroy(m);
    }
    return failures;
}

/* Every instruction set and thread count against the same fixtures. */
int test_pytorch_fixtures(void) { return each_set(0, fixtures_on); }

static int fixtures_on(const fixture_set *fs, frae_isa isa, int threads)
{
    int failures = 0;
    fixtures fx;
    frae_config c;
    CHECK(open_set(fs, isa, threads, &fx, &c) == 0, "cannot read %s", fs->path);
    if (failures)
        return failures;
    const fix_tensor *x = fixtures_get(&fx, "x");
    const int nseq = (int)x->dims[0], T = (int)x->dims[1];
    size_t np = frae_param_count_for(&c);
    float *init = malloc(4 * np), *ref = malloc(4 * np), *got = malloc(4 * np);
    float *y = malloc(4 * x->count);
    flat_from_torch(&fx, "param.", &c, init);

    /* forward, per quantizer */
    static const struct {
        const char *name;
        frae_quantizer q;
        int levels;
    } quants[] = {{"none", FRAE_QUANT_NONE, 0},
                  {"binary", FRAE_QUANT_BINARY, 0},
                  {"uniform", FRAE_QUANT_UNIFORM, 5}};
    for (int i = 0; i < 3; i++) {
        frae_config cq = c;
        cq.quantizer = quants[i].q;
        cq.quant_levels = quants[i].levels;
        char name[32];
        snprintf(name, sizeof name, "y.%s", quants[i].name);
        failures += check_forward(&cq, init, x->data, nseq, T,
                                  fixtures_get(&fx, name)->data, name, y);
    }

    /* bf16 weights: frae's rounding is torch's .bfloat16(), bit for bit,
     * and the forward passes (batched f32 GEMM, one-row bf16 kernels)
     * match torch computing on the rounded weights */
    {
        frae_config cb = c;
        cb.training = 0;
        cb.weights = FRAE_WEIGHTS_BF16;
        frae_model *m = create_or_die(&cb);
        frae_set_params(m, init);
        flat_from_torch(&fx, "bf16.param.", &c, ref);
        frae_get_params(m, got);
        CHECK(!memcmp(got, ref, 4 * np),
              "bf16 rounding of the weights differs from torch's");
        frae_destroy(m);
        failures +=
            check_forward(&cb, init, x->data, nseq, T,
                          fixtures_get(&fx, "y.bf16")->data, "y.bf16", y);
    }

    for (int full = 0; full <= 1; full++) {
        const char *mode = full ? "full" : "detached";
        char name[64];
        frae_config cm = c;
        cm.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;

        failures += check_grads(&cm, init, &fx, x, nseq, T, mode, 0, got, ref);

        /* the same gradients one sequence at a time (batch-1 kernels): the
         * batch loss is the mean of the per-sequence losses */
        frae_config c1 = cm;
        c1.batch = 1;
        frae_model *m1 = create_or_die(&c1);
        frae_set_params(m1, init);
        float *acc = calloc(np, sizeof(float));
        size_t per = x->count / nseq;
        for (int sq = 0; sq < nseq; sq++) {
            frae_step(m1,
                      &(frae_batch){.x = x->data + sq * per,
                                    .nseq = 1,
                                    .nframes = T,
                                    .kind = FRAE_STEP_GRADIENTS},
                      NULL);
            frae_get_grads(m1, got);
            for (size_t i = 0; i < np; i++)
                acc[i] += got[i] / (float)nseq;
        }
        snprintf(name, sizeof name, "b1grad.%s.", mode);
        failures += compare_flat(name, acc, ref, &cm);
        free(acc);
        frae_destroy(m1);

        failures +=
            check_steps(&cm, init, &fx, x, NULL, nseq, T, mode, 0, got, ref);
    }
    free(init), free(ref), free(got), free(y), free(fx.buf), free(fx.floats);
    return failures;
}

/* ---- the learned prior and the rate term ------------------------------ */

static int prior_fixtures_on(const fixture_set *fs, frae_isa isa, int threads)
{
    int failures = 0;
    fixtures fx;
    frae_config c;
    CHECK(open_set(fs, isa, threads, &fx, &c) == 0, "cannot read %s", fs->path);
    if (failures)
        return failures;
    const fix_tensor *x = fixtures_get(&fx, "x");
    const int nseq = (int)x->dims[0], T = (int)x->dims[1];
    size_t np = frae_param_count_for(&c);
    float *init = malloc(4 * np), *ref = malloc(4 * np), *got = malloc(4 * np);
    float *y = malloc(4 * x->count);
    flat_from_torch(&fx, "param.", &c, init);
    failures += check_forward(&c, init, x->data, nseq, T,
                              fixtures_get(&fx, "y")->data, "y", y);
    /* the rate of the forward pass, batched and one sequence at a time */
    for (int one = 0; one <= 1; one++) {
        frae_config cc = c;
        cc.batch = one ? 1 : nseq;
        frae_model *m = create_or_die(&cc);
        frae_set_params(m, init);
        double bits = 0;
        const size_t per = x->count / (size_t)nseq;
        frae_stats st;
        for (int sq = 0; sq < (one ? nseq : 1); sq++) {
            frae_step(m,
                      &(frae_batch){.x = x->data + sq * per,
                                    .nseq = one ? 1 : nseq,
                                    .nframes = T,
                                    .kind = FRAE_STEP_EVALUATE},
                      &st);
            bits += st.rate_bits;
        }
        failures += check_scalar(one ? "rate (batch 1)" : "rate",
                                 bits / ((double)nseq * T),
                                 fixtures_get(&fx, "rate")->data[0]);
        frae_destroy(m);
    }
    for (int full = 0; full <= 1; full++) {
        const char *mode = full ? "full" : "detached";
        frae_config cm = c;
        cm.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        failures += check_grads(&cm, init, &fx, x, nseq, T, mode, 1, got, ref);
        failures += check_steps(&cm, init, &fx, x, NULL, nseq, T, mode,
                                CHECK_RATE, got, ref);
    }
    free(init), free(ref), free(got), free(y), free(fx.buf), free(fx.floats);
    return failures;
}

/* The prior's forward, rate, gradients (the straight-through slope into
 * the encoder included) and Adam steps against PyTorch, on every
 * instruction set and thread count. */
int test_prior_fixtures(void) { return each_set(1, prior_fixtures_on); }

/* ---- targets other than the inputs ------------------------------------ */

/* The loss against the target, three Adam steps on one window and
 * truncated BPTT (windows of 4 and 2, a backward pass in chunks of one
 * frame), against the fixtures: the updates, not the parameters. */
static int targets_fixtures_on(const fixture_set *fs, frae_isa isa, int threads)
{
    int failures = 0;
    fixtures fx;
    frae_config c;
    CHECK(open_set(fs, isa, threads, &fx, &c) == 0, "cannot read %s", fs->path);
    if (failures)
        return failures;
    const fix_tensor *x = fixtures_get(&fx, "x"),
                     *tg = fixtures_get(&fx, "target");
    const int nseq = (int)x->dims[0], T = (int)x->dims[1];
    const size_t np = frae_param_count_for(&c);
    float *init = malloc(4 * np), *ref = malloc(4 * np), *got = malloc(4 * np);
    flat_from_torch(&fx, "param.", &c, init);
    frae_stats st;
    frae_model *m = create_or_die(&c);
    frae_set_params(m, init);
    frae_reset(m);
    CHECK(frae_step(m,
                    &(frae_batch){.x = x->data,
                                  .targets = tg->data,
                                  .nseq = nseq,
                                  .nframes = T,
                                  .continued = 1,
                                  .kind = FRAE_STEP_EVALUATE},
                    &st) == 0,
          "eval with targets refused");
    failures +=
        check_scalar("loss", st.mse, fixtures_get(&fx, "loss")->data[0]);
    frae_destroy(m);
    for (int full = 0; full <= 1; full++) {
        frae_config cm = c;
        cm.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        failures += check_steps(&cm, init, &fx, x, tg->data, nseq, T,
                                full ? "full" : "detached", 0, got, ref);
    }
    /* a model made without cfg.targets refuses them */
    frae_config cn = c;
    cn.targets = 0;
    m = create_or_die(&cn);
    frae_reset(m);
    CHECK(frae_step(m,
                    &(frae_batch){.x = x->data,
                                  .targets = tg->data,
                                  .nseq = nseq,
                                  .nframes = T,
                                  .continued = 1,
                                  .kind = FRAE_STEP_TRAIN},
                    NULL) == -1,
          "a model without cfg.targets trained toward targets");
    frae_destroy(m);
    free(init), free(ref), free(got), free(fx.buf), free(fx.floats);
    return failures;
}

int test_targets_fixtures(void) { return each_set(2, targets_fixtures_on); }

/* ---- the level term ---------------------------------------------------- */

/* Three Adam steps on one window and truncated BPTT (windows of 4 and 2,
 * a backward pass in chunks of one frame) with the level term, against
 * PyTorch's: the updates, and the term's value over the windows. */
static int level_fixtures_on(const fixture_set *fs, frae_isa isa, int threads)
{
    int failures = 0;
    fixtures fx;
    frae_config c;
    CHECK(open_set(fs, isa, threads, &fx, &c) == 0, "cannot read %s", fs->path);
    if (failures)
        return failures;
    const fix_tensor *x = fixtures_get(&fx, "x");
    const int nseq = (int)x->dims[0], T = (int)x->dims[1];
    const size_t np = frae_param_count_for(&c);
    float *init = malloc(4 * np), *ref = malloc(4 * np), *got = malloc(4 * np);
    flat_from_torch(&fx, "param.", &c, init);
    for (int full = 0; full <= 1; full++) {
        frae_config cm = c;
        cm.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        failures +=
            check_steps(&cm, init, &fx, x, NULL, nseq, T,
                        full ? "full" : "detached", CHECK_LEVEL, got, ref);
    }
    free(init), free(ref), free(got), free(fx.buf), free(fx.floats);
    return failures;
}

int test_level_fixtures(void) { return each_set(3, level_fixtures_on); }
