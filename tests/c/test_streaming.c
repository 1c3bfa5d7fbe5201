/* Training in pieces, sequences of different lengths, gradient clipping. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "tests.h"

static void base_config(frae_config *c)
{
    const int enc[2] = {16, 12}, dec[2] = {12, 16};
    tiny_config(c, 5, 2, 2, enc, 3, 2, dec);
    c->batch = 2;
    c->window = 4;
}

/* Feeding W frames at a time as continued frae_step calls is one call
 * on the whole sequences, to the bit. */
int test_train_frames_equals_batch(void)
{
    int failures = 0;
    const int nseq = 2, T = 11, D = 5;
    for (int full = 0; full <= 1; full++) {
        frae_config c;
        base_config(&c);
        c.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        frae_model *a = create_or_die(&c), *b = create_or_die(&c);
        float *x = synth(nseq, T, D, 4);
        float *piece = malloc(sizeof(float) * nseq * c.window * D);
        frae_stats sa, sb, acc = {0};
        frae_step(
            a,
            &(frae_batch){
                .x = x, .nseq = nseq, .nframes = T, .kind = FRAE_STEP_TRAIN},
            &sa);
        frae_reset(b);
        for (int w0 = 0; w0 < T; w0 += c.window) {
            int nt = T - w0 < c.window ? T - w0 : c.window;
            for (int s = 0; s < nseq; s++)
                memcpy(piece + (size_t)s * nt * D, x + ((size_t)s * T + w0) * D,
                       sizeof(float) * nt * D);
            frae_step(b,
                      &(frae_batch){.x = piece,
                                    .nseq = nseq,
                                    .nframes = nt,
                                    .continued = 1,
                                    .kind = FRAE_STEP_TRAIN},
                      &sb);
            acc.sse += sb.sse, acc.values += sb.values, acc.steps += sb.steps;
        }
        size_t n = frae_param_count(a);
        float *pa = malloc(4 * n), *pb = malloc(4 * n);
        frae_get_params(a, pa), frae_get_params(b, pb);
        CHECK(!memcmp(pa, pb, 4 * n), "pieces differ from one batch (%s)",
              full ? "full" : "detached");
        CHECK(acc.steps == sa.steps && acc.values == sa.values,
              "steps %ld/%ld values %ld/%ld", acc.steps, sa.steps, acc.values,
              sa.values);
        CHECK(fabs(acc.sse / acc.values - sa.mse) <= 1e-12 * sa.mse,
              "loss %.12g vs %.12g", acc.sse / acc.values, sa.mse);
        free(pa), free(pb), free(x), free(piece);
        frae_destroy(a), frae_destroy(b);
    }
    return failures;
}

/* A batch whose second sequence is 3 frames shorter (zero padding) has the
 * gradient of the value-weighted mean of the two sequences' losses. */
int test_variable_lengths(void)
{
    int failures = 0;
    const int T = 4, D = 5, short_len = 1;
    for (int full = 0; full <= 1; full++) {
        frae_config c;
        base_config(&c);
        c.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        c.learning_rate = 1e-30f; /* a step that changes nothing */
        frae_model *m = create_or_die(&c);
        size_t n = frae_param_count(m);
        float *p0 = malloc(4 * n);
        frae_get_params(m, p0);
        float *x = synth(2, T, D, 6);
        for (int t = short_len; t < T; t++) /* padding after the end */
            memset(x + ((size_t)T + t) * D, 0, sizeof(float) * D);
        int valid[2] = {T, short_len};
        frae_stats st;
        frae_reset(m);
        frae_step(m,
                  &(frae_batch){.x = x,
                                .valid = valid,
                                .nseq = 2,
                                .nframes = T,
                                .continued = 1,
                                .kind = FRAE_STEP_TRAIN},
                  &st);
        float *g_masked = malloc(4 * n), *g0 = malloc(4 * n),
              *g1 = malloc(4 * n);
        frae_get_grads(m, g_masked);
        CHECK(st.values == (long)(T + short_len) * D, "valid values %ld",
              st.values);

        frae_config c1 = c;
        c1.batch = 1;
        frae_model *m1 = create_or_die(&c1);
        frae_set_params(m1, p0);
        frae_step(
            m1,
            &(frae_batch){
                .x = x, .nseq = 1, .nframes = T, .kind = FRAE_STEP_GRADIENTS},
            NULL);
        frae_get_grads(m1, g0);
        frae_step(m1,
                  &(frae_batch){.x = x + (size_t)T * D,
                                .nseq = 1,
                                .nframes = short_len,
                                .kind = FRAE_STEP_GRADIENTS},
                  NULL);
        frae_get_grads(m1, g1);
        float w0 = (float)T / (T + short_len), w1 = 1.0f - w0;
        for (size_t i = 0; i < n; i++)
            g0[i] = w0 * g0[i] + w1 * g1[i];
        double r = max_rel_diff(g_masked, g0, n);
        CHECK(r <= 1e-5, "masked gradient off by %.3g (%s)", r,
              full ? "full" : "detached");
        printf("    %-8s masked batch vs weighted sequences: rel %.1e\n",
               full ? "full" : "detached", r);
        free(p0), free(x), free(g_masked), free(g0), free(g1);
        frae_destroy(m), frae_destroy(m1);
    }
    return failures;
}

int test_gradient_clipping(void)
{
    int failures = 0;
    frae_config c;
    base_config(&c);
    float *x = synth(2, 4, 5, 9);
    frae_model *m = create_or_die(&c);
    size_t n = frae_param_count(m);
    float *g = malloc(4 * n), *g_free = malloc(4 * n);
    frae_stats st;
    frae_step(
        m,
        &(frae_batch){.x = x, .nseq = 2, .nframes = 4, .kind = FRAE_STEP_TRAIN},
        &st);
    frae_get_grads(m, g_free);
    double norm = st.grad_norm;
    frae_destroy(m);

    c.clip_norm = (float)(norm / 4);
    m = create_or_die(&c);
    frae_step(
        m,
        &(frae_batch){.x = x, .nseq = 2, .nframes = 4, .kind = FRAE_STEP_TRAIN},
        &st);
    frae_get_grads(m, g);
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)g[i] * g[i];
    CHECK(fabs(sqrt(ss) - c.clip_norm) <= 1e-5 * c.clip_norm,
          "clipped norm %.9g, wanted %.9g", sqrt(ss), (double)c.clip_norm);
    CHECK(fabs(st.grad_norm - norm) <= 1e-12 * norm,
          "reported norm %.9g is not the unclipped %.9g", st.grad_norm, norm);
    for (size_t i = 0; i < n; i++)
        g[i] *= 4.0f;
    CHECK(max_rel_diff(g, g_free, n) <= 1e-6, "clipping changed direction");
    frae_destroy(m);

    c.clip_norm = (float)(norm * 2); /* above the norm: untouched */
    m = create_or_die(&c);
    frae_step(
        m,
        &(frae_batch){.x = x, .nseq = 2, .nframes = 4, .kind = FRAE_STEP_TRAIN},
        &st);
    frae_get_grads(m, g);
    CHECK(!memcmp(g, g_free, 4 * n), "a clip above the norm changed grads");
    frae_destroy(m);
    printf("    gradient norm %.4f clipped to %.4f\n", norm, norm / 4);
    free(x), free(g), free(g_free);
    return failures;
}

/* Padding cannot blow up: a model whose feedback loop diverges on its own
 * (weights x4), 2-frame sequences padded to 300 frames: the gradients are
 * exactly those of the 2-frame batch. */
int test_padding_is_inert(void)
{
    int failures = 0;
    for (int full = 0; full <= 1; full++) {
        frae_config c;
        base_config(&c);
        c.window = 300;
        c.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
        c.learning_rate = 1e-30f;
        frae_model *m = create_or_die(&c);
        size_t n = frae_param_count(m);
        float *p = malloc(4 * n), *g_pad = malloc(4 * n),
              *g_short = malloc(4 * n);
        frae_get_params(m, p);
        for (size_t i = 0; i < n; i++)
            p[i] *= 4.0f;
        frae_set_params(m, p);
        const int T = 300, D = 5;
        float *x = calloc((size_t)2 * T * D, sizeof(float));
        float *xs = synth(2, 2, D, 3);
        for (int s = 0; s < 2; s++)
            memcpy(x + (size_t)s * T * D, xs + (size_t)s * 2 * D,
                   sizeof(float) * 2 * D);
        int valid[2] = {2, 2};
        frae_stats st;
        frae_reset(m);
        frae_step(m,
                  &(frae_batch){.x = x,
                                .valid = valid,
                                .nseq = 2,
                                .nframes = T,
                                .continued = 1,
                                .kind = FRAE_STEP_TRAIN},
                  &st);
        frae_get_grads(m, g_pad);
        CHECK(isfinite(st.grad_norm), "padding made the gradient %g",
              st.grad_norm);
        frae_set_params(m, p);
        frae_reset(m);
        frae_step(m,
                  &(frae_batch){.x = xs,
                                .nseq = 2,
                                .nframes = 2,
                                .continued = 1,
                                .kind = FRAE_STEP_TRAIN},
                  &st);
        frae_get_grads(m, g_short);
        CHECK(!memcmp(g_pad, g_short, 4 * n),
              "%s: padded batch gradients differ from the short batch",
              full ? "full" : "detached");
        free(p), free(g_pad), free(g_short), free(x), free(xs);
        frae_destroy(m);
    }
    return failures;
}

/* The learning-rate schedule: its values against the closed form, Adam
 * using it (a first step under a warm-up of 4 is a step at lr / 4), and
 * the checkpoint keeping it. */
int test_lr_schedule(void)
{
    int failures = 0;
    frae_config c;
    base_config(&c);
    c.learning_rate = 1e-3f;
    c.lr_warmup = 4;
    c.lr_decay_steps = 10;
    c.lr_floor = 0.2f;
    const double lr = 1e-3f, fl = 0.2f, pi = 3.14159265358979323846;
    const long steps[] = {1, 3, 4, 5, 9, 13, 14, 15, 1000};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        long s = steps[i];
        double want =
            s <= 4 ? lr * s / 4
            : s >= 14
                ? lr * fl
                : lr * (fl + (1 - fl) * 0.5 * (1 + cos(pi * (s - 4) / 10)));
        CHECK(frae_learning_rate_at(&c, s) == (float)want,
              "lr at step %ld: %.9g, wanted %.9g", s,
              (double)frae_learning_rate_at(&c, s), want);
    }
    frae_config flat = c;
    flat.lr_warmup = flat.lr_decay_steps = 0;
    CHECK(frae_learning_rate_at(&flat, 7) == 1e-3f,
          "no schedule: not constant");

    float *x = synth(2, 4, 5, 9);
    frae_model *a = create_or_die(&c);
    frae_stats st;
    frae_step(
        a,
        &(frae_batch){.x = x, .nseq = 2, .nframes = 4, .kind = FRAE_STEP_TRAIN},
        &st);
    CHECK(st.steps == 1, "%ld steps, wanted 1", st.steps);
    frae_config quarter = flat;
    quarter.learning_rate = 1e-3f / 4;
    frae_model *b = create_or_die(&quarter);
    frae_step(
        b,
        &(frae_batch){.x = x, .nseq = 2, .nframes = 4, .kind = FRAE_STEP_TRAIN},
        NULL);
    size_t n = frae_param_count(a);
    float *pa = malloc(4 * n), *pb = malloc(4 * n);
    frae_get_params(a, pa), frae_get_params(b, pb);
    CHECK(!memcmp(pa, pb, 4 * n),
          "a first step under a warm-up of 4 is not a step at lr / 4");

    char path[] = "/tmp/frae-lr-XXXXXX";
    int fd = mkstemp(path);
    char err[256] = "";
    CHECK(fd >= 0 && !frae_save(a, path, 1, NULL, 0, NULL, 0, err, sizeof err),
          "save: %s", err);
    frae_config rt;
    frae_config_default(&rt);
    frae_model *back = frae_load(path, &rt, err, sizeof err);
    CHECK(back, "load: %s", err);
    if (back) {
        const frae_config *bc = frae_get_config(back);
        CHECK(bc->lr_warmup == 4 && bc->lr_decay_steps == 10 &&
                  bc->lr_floor == 0.2f,
              "the checkpoint's schedule came back as %d, %d, %g",
              bc->lr_warmup, bc->lr_decay_steps, (double)bc->lr_floor);
        frae_destroy(back);
    }
    if (fd >= 0)
        close(fd), unlink(path);
    c.lr_floor = 1.5f;
    CHECK(frae_create(&c, err, sizeof err) == NULL && strstr(err, "floor"),
          "a floor of 1.5 was accepted");
    free(pa), free(pb), free(x);
    frae_destroy(a), frae_destroy(b);
    return failures;
}

/* Per-band normalization: a model that normalizes computes, to the bit,
 * what a plain model computes on z-scored data (forward, training, the
 * codec), keeps its statistics in the checkpoint and its hash, and the
 * statistics pass handles a constant band. */
int test_normalization(void)
{
    int failures = 0;
    const int D = 6, B = 3, T = 30;
    const int enc[1] = {16}, dec[1] = {16};
    for (int gru = 0; gru <= 1; gru++) {
        frae_config c;
        tiny_config(&c, D, gru ? 0 : 2, 1, enc, 4, 1, dec);
        c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        c.batch = B;
        c.window = 12;
        c.feedback = FRAE_FEEDBACK_FULL;
        c.quantizer = FRAE_QUANT_UNIFORM;
        c.quant_levels = 4;
        frae_config cn = c;
        cn.normalize = 1;
        frae_model *plain = create_or_die(&c), *norm = create_or_die(&cn);
        float *x = synth(B, T, D, 5 + gru),
              *z = malloc(sizeof(float) * B * T * D);
        float mean[6], std[6];
        for (int d = 0; d < D; d++)
            mean[d] = 0.3f * (float)d - 0.7f, std[d] = 0.5f + 0.25f * (float)d;
        for (int i = 0; i < B * T * D; i++) {
            x[i] = x[i] * std[i % D] + mean[i % D];
            z[i] = (x[i] - mean[i % D]) / std[i % D];
        }
        CHECK(frae_set_normalization(plain, mean, std) == -1,
              "a plain model took statistics");
        std[2] = 0.0f;
        CHECK(frae_set_normalization(norm, mean, std) == -1,
              "a zero std was taken");
        std[2] = 1.0f;
        CHECK(frae_set_normalization(norm, mean, std) == 0, "stats refused");
        /* training: the same steps, the same parameters */
        frae_stats sa, sb;
        int same_loss = 1;
        for (int step = 0; step < 3; step++) {
            frae_step(
                plain,
                &(frae_batch){
                    .x = z, .nseq = B, .nframes = T, .kind = FRAE_STEP_TRAIN},
                &sa);
            frae_step(
                norm,
                &(frae_batch){
                    .x = x, .nseq = B, .nframes = T, .kind = FRAE_STEP_TRAIN},
                &sb);
            same_loss &= sa.sse == sb.sse;
        }
        size_t np = frae_param_count(plain);
        float *pa = malloc(sizeof(float) * np),
              *pb = malloc(sizeof(float) * np);
        frae_get_params(plain, pa);
        frae_get_params(norm, pb);
        CHECK(same_loss && !memcmp(pa, pb, sizeof(float) * np),
              "%s: training on x with normalization differs from training "
              "on z-scored x",
              gru ? "gru" : "dense");
        /* forward: y = y_plain * std + mean, and the codec decodes it */
        float *ya = malloc(sizeof(float) * B * T * D),
              *yb = malloc(sizeof(float) * B * T * D);
        frae_forward(plain, z, ya, B, T);
        frae_forward(norm, x, yb, B, T);
        int same_y = 1;
        for (int i = 0; i < B * T * D; i++) {
            float want = ya[i] * std[i % D] + mean[i % D];
            same_y &= !memcmp(&want, &yb[i], sizeof want);
        }
        CHECK(same_y, "forward: not y * std + mean of the plain model");
        frae_step(
            plain,
            &(frae_batch){
                .x = z, .nseq = B, .nframes = T, .kind = FRAE_STEP_EVALUATE},
            &sa);
        frae_step(
            norm,
            &(frae_batch){
                .x = x, .nseq = B, .nframes = T, .kind = FRAE_STEP_EVALUATE},
            &sb);
        CHECK(sa.sse == sb.sse, "eval loss %.9g against %.9g", sa.sse, sb.sse);
        frae_config ci = cn;
        ci.training = 0;
        ci.batch = 1;
        frae_model *inf = create_or_die(&ci);
        frae_set_params(inf, pb);
        frae_set_normalization(inf, mean, std);
        frae_reset(norm);
        frae_forward(norm, x, yb, 1, T);
        frae_encoder *e = frae_encoder_create(frae_model_net(inf));
        frae_decoder *dd = frae_decoder_create(frae_model_net(inf));
        unsigned char code[8];
        float rec[6], out[6];
        int same_codec = 1;
        for (int t = 0; t < T; t++) {
            frae_encode_frame(e, x + t * D, code, rec);
            frae_decode_frame(dd, code, out);
            same_codec &= !memcmp(out, yb + t * D, sizeof out) &&
                          !memcmp(rec, out, sizeof out);
        }
        CHECK(same_codec, "decode(encode(x)) differs from forward");
        /* the checkpoint keeps the statistics; the hash covers them */
        char path[] = "/tmp/frae-norm-XXXXXX";
        int fd = mkstemp(path);
        close(fd);
        char err[256];
        CHECK(!frae_save(inf, path, 0, NULL, 0, NULL, 0, err, sizeof err), "%s",
              err);
        frae_model *back = frae_load(path, NULL, err, sizeof err);
        float m2[6], s2[6];
        CHECK(back && !frae_get_normalization(back, m2, s2) &&
                  !memcmp(m2, mean, sizeof m2) && !memcmp(s2, std, sizeof s2),
              "statistics not kept: %s", back ? "" : err);
        uint64_t h = frae_model_hash(frae_model_net(inf));
        if (back)
            CHECK(frae_model_hash(frae_model_net(back)) == h,
                  "hash changed on reload");
        mean[0] += 1.0f;
        frae_set_normalization(inf, mean, std);
        CHECK(frae_model_hash(frae_model_net(inf)) != h,
              "the hash ignores the statistics");
        unlink(path);
        frae_destroy(back);
        frae_encoder_destroy(e), frae_decoder_destroy(dd);
        frae_destroy(inf), frae_destroy(plain), frae_destroy(norm);
        free(x), free(z), free(pa), free(pb), free(ya), free(yb);
        printf("    %s: normalizing model == plain model on z-scored data "
               "(train, forward, eval, codec), kept by save/load\n",
               gru ? "gru  " : "dense");
    }
    /* the statistics pass: exact moments, and a constant band only centred */
    float frames[4 * 3] = {1, 5, 2, 3, 5, 2, 5, 5, 2, 7, 5, 2};
    double acc[6];
    frae_band_stats bs;
    frae_band_stats_begin(&bs, 3, acc, acc + 3);
    frae_band_stats_add(&bs, frames, 2, 3);
    frae_band_stats_add(&bs, frames + 6, 2, 3);
    float mean[3], std[3];
    CHECK(!frae_band_stats_finish(&bs, mean, std), "no statistics");
    CHECK(mean[0] == 4 && fabsf(std[0] - sqrtf(5)) < 1e-6f && mean[1] == 5 &&
              std[1] == 1 && mean[2] == 2 && std[2] == 1,
          "stats %g %g | %g %g | %g %g", mean[0], std[0], mean[1], std[1],
          mean[2], std[2]);
    frae_band_stats_begin(&bs, 3, acc, acc + 3);
    CHECK(frae_band_stats_finish(&bs, mean, std) == -1, "stats of nothing");
    return failures;
}
