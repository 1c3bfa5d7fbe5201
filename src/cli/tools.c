/* frae predict, frae info, frae import. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define FRAE_INFO_MAX_D 4096 /* bands shown by frae info */

/* ---- predict ---------------------------------------------------------- */

static void predict_help(void)
{
    cli_printf(
        "usage: frae predict MODEL IN -o OUT.npy [--isa I] [--no-resample]\n"
        "example: frae predict model.safetensors x.npy -o y.npy\n"
        "\n"
        "Reconstructs sequences: runs each sequence of IN ([T, D] or\n"
        "[N, T, D] .npy, float32 or float64; or an audio file, whose\n"
        "features are computed as the model was trained) through the\n"
        "model from empty buffers, and writes the decoded frames as\n"
        "float32 in the same shape.  Prints the MSE against the input.\n"
        "  -o, --output OUT.npy the decoded frames\n"
        "  --isa I              auto, scalar, avx2, avx512 or neon (auto)\n"
        "  --no-resample        refuse audio at another sample rate\n"
        "\n"
        "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
        "options, model or input.\n");
}

static const cli_opt predict_list[] = {
    {"--output", 1},      {"--isa", 1},  {"--sample-rate", 1},
    {"--no-resample", 0}, {"--mels", 1}, {"--hop", 1},
    {"--win", 1},         {"--fft", 1},  {"--fmin", 1},
    {"--fmax", 1},        {NULL, 0}};

static int predict_opt(void *ctx, const char *name, const char *v)
{
    int rc = cli_io_option(ctx, name, v);
    return rc == 1 ? cli_fail(EXIT_USAGE, "unknown option '%s'", name) : rc;
}

static int predict_pos(void *ctx, const char *arg)
{
    return cli_io_positional(ctx, arg);
}

/* predict's frames: a batch of sequences at a time, in chunks of frames
 * (the buffers carry over), each chunk written to its place in af (in
 * order for a pipe).  0; 1 a write failed; 2 the input could not be read
 * back; 0 with *bad_seq >= 0 at a non-finite output, which is never
 * written. */
static int predict_chunks(frae_model *m, const frae_npy *in,
                          frae_atomic_file *af, int batch, int in_order,
                          float *x, float *y, long chunk, double *sse,
                          long *bad_seq, long *bad_frame)
{
    const int D = frae_get_config(m)->frame_dim;
    const off_t data_at = ftello(af->f);
    const int fd = fileno(af->f);
    if (fflush(af->f))
        return 1;
    for (long s0 = 0; s0 < in->n; s0 += batch) {
        const int nb = in->n - s0 < batch ? (int)(in->n - s0) : batch;
        frae_reset(m);
        for (long t0 = 0; t0 < in->t; t0 += chunk) {
            const int nt = (int)(in->t - t0 < chunk ? in->t - t0 : chunk);
            const size_t seq_vals = (size_t)nt * D;
            for (int b = 0; b < nb; b++)
                if (frae_npy_read(in, s0 + b, t0, nt, x + b * seq_vals))
                    return 2;
            frae_forward(m, x, y, nb, nt);
            for (size_t i = 0; i < (size_t)nb * seq_vals; i++)
                *sse += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
            /* finite weights can still overflow */
            if (!isfinite(*sse)) {
                const long i = cli_first_nonfinite(y, (size_t)nb * seq_vals);
                *bad_seq = s0 + i / (long)seq_vals;
                *bad_frame = t0 + i % (long)seq_vals / D;
                return 0;
            }
            for (int b = 0; b < nb; b++) {
                const off_t at = data_at + (off_t)sizeof(float) * D *
                                               ((s0 + b) * in->t + t0);
                if (in_order
                        ? fwrite(y, sizeof(float), seq_vals, af->f) != seq_vals
                        : pwrite(fd, y + b * seq_vals, sizeof(float) * seq_vals,
                                 at) != (ssize_t)(sizeof(float) * seq_vals))
                    return 1;
            }
        }
    }
    return 0;
}

/* predict's end: the output committed and the error said, or aborted
 * and why: the exit code. */
static int predict_outcome(const cli_io *o, const frae_npy *in, frae_model *m,
                           frae_atomic_file *af, int st, double sse,
                           long bad_seq, long bad_frame)
{
    char err[512];
    const int D = frae_get_config(m)->frame_dim;
    const int bad = st == 1, bad_input = st == 2;
    int rc = EXIT_OK;
    if (bad_seq >= 0) {
        frae_atomic_abort(af);
        rc = cli_fail_nonfinite(o->model, bad_seq, bad_frame);
    } else if (bad || bad_input) {
        frae_atomic_abort(af);
        rc = bad_input ? cli_fail(EXIT_FAILED,
                                  "%s: cannot read its features back: %s",
                                  o->input, strerror(errno))
                       : cli_fail(EXIT_FAILED, "%s: write failed", o->output);
    } else if (frae_atomic_commit(af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
    } else {
        cli_printf("%ld sequence%s of %ld frames -> %s  mse %.6g\n", in->n,
                   in->n == 1 ? "" : "s", in->t, o->output,
                   sse / ((double)in->n * in->t * D));
    }
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    cli_cmd = "frae predict";
    cli_io o;
    cli_io_default(&o);
    int rc = cli_parse(argc, argv, predict_list, predict_opt, predict_pos,
                       predict_help, &o);
    if (rc)
        return rc;
    if (!o.model || !o.input || !o.output)
        return cli_fail(EXIT_USAGE, "needs MODEL, IN and -o OUT.npy (see "
                                    "'frae predict --help')");
    char err[512];
    frae_npy in;
    if ((rc = cli_open_frames(&o, &in)))
        return rc;
    frae_config rt;
    frae_config_default(&rt);
    rt.training = 0;
    /* a pipe or "-" takes the output in order: a sequence at a time */
    const int in_order = !cli_output_seekable(o.output);
    rt.batch = in_order ? 1 : in.n < 64 ? (int)in.n : 64;
    rt.isa = o.isa;
    frae_model *m = frae_load(o.model, &rt, err, sizeof err);
    if (!m) {
        frae_npy_close(&in);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    const int D = frae_get_config(m)->frame_dim;
    if (in.d != D) {
        rc = cli_fail(EXIT_USAGE,
                      "%s: frame dimension %ld does not match the model's %d",
                      o.input, in.d, D);
        frae_npy_close(&in);
        frae_destroy(m);
        return rc;
    }
    /* a batch of sequences at a time, in chunks of frames (the buffers
     * carry over), each chunk written to its place in the output: memory
     * does not grow with the sequences' length */
    const long chunk = in.t < 512 ? in.t : 512;
    size_t chunk_vals = (size_t)rt.batch * chunk * D;
    float *x = malloc(sizeof(float) * chunk_vals);
    float *y = malloc(sizeof(float) * chunk_vals);
    long shape[3] = {in.n, in.t, in.d};
    if (in.ndim == 2)
        shape[0] = in.t, shape[1] = in.d;
    frae_atomic_file af;
    if (!x || !y) {
        rc = cli_fail(EXIT_FAILED, "out of memory for %zu values", chunk_vals);
    } else if (frae_npy_begin(&af, o.output, in.ndim, shape, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
    } else {
        double sse = 0;
        long bad_seq = -1, bad_frame = -1; /* a non-finite output */
        const int st = predict_chunks(m, &in, &af, rt.batch, in_order, x, y,
                                      chunk, &sse, &bad_seq, &bad_frame);
        rc = predict_outcome(&o, &in, m, &af, st, sse, bad_seq, bad_frame);
    }
    free(x), free(y);
    frae_npy_close(&in);
    frae_destroy(m);
    return rc;
}

/* ---- info ----------------------------------------------------------------- */

static void info_help(void)
{
    cli_printf("usage: frae info MODEL\n"
               "example: frae info model.safetensors\n"
               "\n"
               "Prints a checkpoint's architecture, parameter count, bits per\n"
               "frame, training settings and training state, after verifying\n"
               "its format version and checksum.\n"
               "\n"
               "Exit codes: 0 done, 2 bad options or checkpoint.\n");
}

static int info_pos(void *ctx, const char *arg)
{
    const char **path = ctx;
    if (*path)
        return cli_fail(EXIT_USAGE, "unexpected argument '%s'", arg);
    *path = arg;
    return 0;
}

/* frae info's look-ahead line: the frames the encoder sees ahead, and the
 * delay they cost. */
static void info_lookahead(const frae_config *c)
{
    char packets[64] = ""; /* the frames ahead stop at a packet's end */
    if (c->lookahead_packet)
        snprintf(packets, sizeof packets,
                 ", none past the first of the next packet of %d frames",
                 c->lookahead_packet);
    if (c->lookahead)
        cli_printf("  look-ahead: the encoder also sees the next %d frame%s%s "
                   "(%d ms more delay at 100 frames/s)\n",
                   c->lookahead, c->lookahead > 1 ? "s" : "", packets,
                   10 * frae_lookahead_delay(c));
}

/* frae info's model: its shape, sizes, pitch, prior and normalization. */
static void info_model(frae_checkpoint *ck, const frae_config *cfg,
                       const frae_model *m)
{
    const frae_config c = *cfg;
    cli_printf("model:\n");
    const int gru = c.family == FRAE_FAMILY_GRU;
    cli_printf("  family %s: %s\n", frae_enum_name("family", c.family),
               gru ? "GRU encoder and decoder, h_dec fed back to the encoder"
                   : "dense layers");
    cli_printf("  frame dim D %d, history K %d, latent L %d\n", c.frame_dim,
               c.history, c.latent_dim);
    /* the first kernel's rows: the encoder's inputs, whatever they hold
     * (frame, history, h_dec, the frames ahead and their flags) */
    frae_tensor_info first;
    cli_printf("  encoder  %d",
               frae_tensor_info_get(m, 0, &first) == 0 ? first.rows : 0);
    for (int i = 0; i < c.n_enc_hidden; i++)
        cli_printf(gru && i == 0 ? " -> GRU %d" : " -> %d", c.enc_hidden[i]);
    cli_printf(" -> %d (tanh, quantizer %s)\n", c.latent_dim,
               frae_checkpoint_meta(ck, "frae.quantizer"));
    cli_printf("  decoder  %d", c.latent_dim + c.history * c.frame_dim);
    for (int i = 0; i < c.n_dec_hidden; i++)
        cli_printf(gru && i == 0 ? " -> GRU %d" : " -> %d", c.dec_hidden[i]);
    cli_printf(" -> %d (linear)\n", c.frame_dim);
    info_lookahead(&c);
    cli_printf("  hidden activation %s, init seed %llu\n",
               frae_enum_name("activation", c.activation),
               (unsigned long long)c.seed);
    char split[96] = "";
    if (c.pitch) /* how the bits split between envelope and pitch */
        snprintf(split, sizeof split, " (envelope %d x %d, pitch %d)",
                 c.latent_dim, frae_code_bits(frae_model_net(m)),
                 FRAE_PITCH_BITS);
    cli_printf("  %zu parameters, %g bits/frame%s, %s weights\n",
               frae_param_count(m), frae_bits_per_frame(m), split,
               frae_enum_name("weights", c.weights));
    if (c.pitch)
        cli_printf("  pitch: f0 and voicing per frame (YIN), closed-loop "
                   "log2 f0 quantizer, %s\n",
                   frae_checkpoint_meta(ck, "frae.pitch"));
    if (c.prior_hidden > 0)
        cli_printf("  prior: %d tanh units on %s -> %d logits per unit%s; "
                   "the codec range-codes the codes (stream version 4; %g "
                   "bits/frame at most)\n",
                   c.prior_hidden,
                   c.family == FRAE_FAMILY_GRU ? "h_dec(t-1)"
                                               : "the fed-back frames",
                   c.quantizer == FRAE_QUANT_UNIFORM ? c.quant_levels : 1,
                   c.prior_ar ? ", + the frame's earlier codes (within-frame "
                                "autoregression)"
                              : "",
                   frae_bits_per_frame(m));
    if (c.targets)
        cli_printf(
            "  targets: trained toward paired targets (e.g. clean speech "
            "from noisy input); the loss is on the target\n");
    if (c.normalize) {
        float mean[FRAE_INFO_MAX_D], std[FRAE_INFO_MAX_D];
        if (c.frame_dim <= FRAE_INFO_MAX_D &&
            !frae_get_normalization(m, mean, std)) {
            float lo[2] = {mean[0], std[0]}, hi[2] = {mean[0], std[0]};
            for (int d = 1; d < c.frame_dim; d++) {
                lo[0] = fminf(lo[0], mean[d]), hi[0] = fmaxf(hi[0], mean[d]);
                lo[1] = fminf(lo[1], std[d]), hi[1] = fmaxf(hi[1], std[d]);
            }
            cli_printf("  normalization: per band, means %.4g..%.4g, stds "
                       "%.4g..%.4g\n",
                       (double)lo[0], (double)hi[0], (double)lo[1],
                       (double)hi[1]);
        } else {
            cli_printf("  normalization: per band\n");
        }
    }
}

/* frae info's training: settings, recipe, schedule, features and where
 * training stands. */
static void info_training(frae_checkpoint *ck, const frae_config *cfg,
                          int have_features, const frae_features *feat)
{
    const frae_config c = *cfg;
    cli_printf("training settings:\n");
    const char *recipe = frae_checkpoint_meta(ck, "train.recipe");
    if (recipe) {
        const frae_recipe *rp = frae_recipe_at(frae_recipe_find(recipe));
        cli_printf("  recipe %s%s%s\n", recipe, rp ? ": " : "",
                   rp ? rp->summary : "");
    }
    cli_printf(
        "  feedback %s, window %d, batch %d, Adam lr %g (beta1 %g, beta2 "
        "%g, eps %g), clip norm %g\n",
        frae_enum_name("feedback", c.feedback), c.window, c.batch,
        (double)c.learning_rate, (double)c.beta1, (double)c.beta2,
        (double)c.epsilon, (double)c.clip_norm);
    if (c.rate_lambda > 0)
        cli_printf("  loss: distortion + %g x rate (bits per frame under the "
                   "prior)\n",
                   (double)c.rate_lambda);
    if (c.level_loss > 0)
        cli_printf("  level term: %g x the squared log ratio of decoded to "
                   "input power over each window's active frames (scale "
                   "%g)\n",
                   (double)c.level_loss,
                   c.level_scale > 0 ? (double)c.level_scale : 5.0);
    if (c.emphasis > 0)
        cli_printf("  emphasis: values %d..%d of each frame weigh %g in the "
                   "squared error\n",
                   c.emphasis_from, c.emphasis_to - 1, (double)c.emphasis);
    if (c.erasure > 0)
        cli_printf("  erasure training: %g of the packets of %d frames lost "
                   "(bursts of two on average), concealed\n",
                   (double)c.erasure, c.erasure_frames ? c.erasure_frames : 4);
    if (c.lr_warmup || c.lr_decay_steps) {
        /* the next step's rate, from the step the checkpoint has taken */
        const char *taken = frae_checkpoint_meta(ck, "frae.adam_step");
        long next = (taken ? strtol(taken, NULL, 10) : 0) + 1;
        cli_printf(
            "  learning-rate schedule: warm-up %d steps, cosine decay over "
            "%d steps to %g x lr; next step (%ld): lr %g\n",
            c.lr_warmup, c.lr_decay_steps, (double)c.lr_floor, next,
            (double)frae_learning_rate_at(&c, next));
    }
    if (have_features) {
        char desc[160];
        cli_features_describe(feat, desc, sizeof desc);
        cli_printf("audio features: %s\n", desc);
    }
    const char *ep = frae_checkpoint_meta(ck, "train.epoch");
    if (ep) {
        cli_printf("training state:\n");
        cli_printf("  epoch %s of %s, next batch %s, Adam step %s\n", ep,
                   frae_checkpoint_meta(ck, "train.epochs"),
                   frae_checkpoint_meta(ck, "train.batch"),
                   frae_checkpoint_meta(ck, "frae.adam_step"));
        cli_printf("  best monitored loss %s at epoch %s\n",
                   frae_checkpoint_meta(ck, "train.best"),
                   frae_checkpoint_meta(ck, "train.best_epoch"));
        cli_printf("  data: %s\n", frae_checkpoint_meta(ck, "train.data"));
        const char *crop = frae_checkpoint_meta(ck, "train.crop");
        if (crop)
            cli_printf("  training on crops of %s frames, %ld this epoch, "
                       "shuffled across sequences\n",
                       crop,
                       frae_checkpoint_i32(ck, "train.crop_seq", NULL, 0));
    } else {
        cli_printf("training state: none (weights only)\n");
    }
}

int cmd_info(int argc, char **argv)
{
    cli_cmd = "frae info";
    const char *path = NULL;
    int rc = cli_parse(argc, argv, NULL, NULL, info_pos, info_help, &path);
    if (rc)
        return rc;
    if (!path)
        return cli_fail(EXIT_USAGE, "needs MODEL (see 'frae info --help')");
    char err[512];
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    frae_config c;
    if (!ck || frae_checkpoint_config(ck, &c, err, sizeof err)) {
        frae_checkpoint_close(ck);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    frae_features feat;
    int have_features = cli_model_features(path, &feat);
    if (have_features < 0) {
        frae_checkpoint_close(ck);
        return EXIT_USAGE;
    }
    frae_config small = c; /* only for the sizes: no training buffers */
    small.training = 0;
    small.batch = 1;
    frae_model *m = frae_create(&small, err, sizeof err);
    /* the statistics are checked and shown from the model they load into */
    if (!m ||
        (c.normalize && frae_checkpoint_restore(ck, m, 0, err, sizeof err))) {
        frae_checkpoint_close(ck);
        frae_destroy(m);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    struct stat sb;
    stat(path, &sb);
    cli_printf("%s: frae checkpoint, format %s, %lld bytes, checksum ok\n",
               path, frae_checkpoint_meta(ck, "frae.format_version"),
               (long long)sb.st_size);
    info_model(ck, &c, m);
    info_training(ck, &c, have_features, &feat);
    frae_destroy(m);
    frae_checkpoint_close(ck);
    return EXIT_OK;
}

/* ---- import ---------------------------------------------------------------- */

typedef struct {
    frae_run_config rc; /* its model: the hints (the library's options) */
    const char *input, *output;
    const char *normalize; /* a .npy of [2, D]: the weights expect z-scores */
} import_opts;

static void import_help(void)
{
    cli_printf(
        "usage: frae import WEIGHTS -o MODEL [--activation A] [--quantizer Q]\n"
        "                   [--latent L] [--family F] [--normalize FILE.npy]\n"
        "example: frae import torch.safetensors -o model.safetensors "
        "--quantizer binary\n"
        "\n"
        "Makes a frae checkpoint from weights trained elsewhere:\n"
        "  - a PyTorch state_dict saved as safetensors, with the names and\n"
        "    [out, in] layouts of tools/frae_torch.py;\n"
        "  - a Keras .npz from np.savez(path, *model.get_weights()):\n"
        "    kernel [in, out] then bias, layer by layer (a GRU layer,\n"
        "    reset_after=True: kernel, recurrent kernel, bias [2, 3H]).\n"
        "The family, D, K, L and the widths come from the shapes; give\n"
        "what shapes cannot tell:\n"
        "  --activation A       relu or tanh (relu)\n"
        "  --quantizer Q        none, binary or uniform:N (none)\n"
        "  --latent L           the latent width, needed only when K = 0\n"
        "  --family F           dense or gru: refuse weights of the other\n"
        "  --normalize FILE.npy the weights were trained on z-scored\n"
        "                       frames: [2, D], the means then the stds\n"
        "                       of the bands; the model then takes and\n"
        "                       gives frames in their own units\n"
        "\n"
        "Exit codes: 0 done, 1 the model could not be written, 2 bad\n"
        "options or weights.\n");
}

static const cli_opt import_list[] = {
    {"--output", 1}, {"--activation", 1}, {"--quantizer", 1}, {"--latent", 1},
    {"--family", 1}, {"--normalize", 1},  {NULL, 0}};

static int import_opt(void *ctx, const char *name, const char *v)
{
    import_opts *o = ctx;
    if (!strcmp(name, "--output"))
        return o->output = cli_output_path(v), 0;
    if (!strcmp(name, "--normalize"))
        return o->normalize = v, o->rc.model.normalize = 1, 0;
    char err[1100];
    if (frae_option_set(&o->rc, name, v, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    return 0;
}

static int import_pos(void *ctx, const char *arg)
{
    import_opts *o = ctx;
    if (o->input)
        return cli_fail(EXIT_USAGE, "unexpected argument '%s'", arg);
    o->input = arg;
    return 0;
}

int cmd_import(int argc, char **argv)
{
    cli_cmd = "frae import";
    import_opts o = {0};
    frae_run_config_default(&o.rc);
    o.rc.model.batch = 1;
    o.rc.model.training = 0;
    int rc = cli_parse(argc, argv, import_list, import_opt, import_pos,
                       import_help, &o);
    if (rc)
        return rc;
    if (!o.input || !o.output)
        return cli_fail(
            EXIT_USAGE,
            "needs WEIGHTS and -o MODEL (see 'frae import --help')");
    char err[512];
    const frae_config *hints = &o.rc.model;
    frae_model *m = frae_import(o.input, hints, err, sizeof err);
    if (!m)
        return cli_fail(EXIT_USAGE, "%s", err);
    const frae_config *c = frae_get_config(m);
    if (frae_option_given(&o.rc, frae_option_find("family")) &&
        c->family != hints->family) {
        const frae_family held = c->family; /* c is m's: read it first */
        frae_destroy(m);
        return cli_fail(EXIT_USAGE, "%s holds a %s model, not %s", o.input,
                        frae_enum_name("family", held),
                        frae_enum_name("family", hints->family));
    }
    if (o.normalize) {
        float *stats = malloc(sizeof(float) * 2 * (size_t)c->frame_dim);
        rc = !stats ? cli_fail(EXIT_FAILED, "out of memory")
                    : cli_read_norm_stats(o.normalize, c->frame_dim, stats);
        if (!rc)
            rc = cli_set_norm_stats(m, o.normalize, stats);
        free(stats);
        if (rc) {
            frae_destroy(m);
            return rc;
        }
    }
    if (frae_save(m, o.output, 0, NULL, 0, NULL, 0, err, sizeof err)) {
        frae_destroy(m);
        return cli_fail(EXIT_FAILED, "%s", err);
    }
    cli_printf("%s -> %s: %s, D %d, K %d, L %d, %d+%d hidden layers, %zu "
               "parameters\n",
               o.input, o.output, frae_enum_name("family", c->family),
               c->frame_dim, c->history, c->latent_dim, c->n_enc_hidden,
               c->n_dec_hidden, frae_param_count(m));
    frae_destroy(m);
    return EXIT_OK;
}

/* ---- features ---------------------------------------------------------------- */

typedef struct {
    const char *input, *output;
    cli_audio audio;
} features_opts;

static void features_help(void)
{
    cli_printf(
        "usage: frae features IN.(wav|flac|...) -o OUT.npy [--pitch] "
        "[--f0 STEPS]\n"
        "                     [--sample-rate HZ] [--no-resample] [--mels N]\n"
        "                     [--hop N] [--win N] [--fft N] [--fmin HZ] "
        "[--fmax HZ]\n"
        "example: frae features speech.wav --pitch -o speech.npy\n"
        "\n"
        "Computes log-mel features of an audio file, exactly as training\n"
        "and encoding do, and writes them as float32 [T, mels]:\n"
        "  feature = (ln(max(mel power, 1e-7)) + 5) / 5, frames of --win\n"
        "  samples every --hop, periodic Hann window, HTK-mel filters.\n"
        "Audio is mixed to mono and resampled to --sample-rate.\n"
        "\n" CLI_FEATURE_HELP
        "  --pitch              two more columns: f0 in Hz (0 when\n"
        "                       unvoiced) and voicing (0 or 1), by YIN\n"
        "                       (a frame read under 80 Hz is read again\n"
        "                       high-passed, so that mains hum is not\n"
        "                       taken for a voice), then moved within\n"
        "                       60 cents to where its harmonics up to\n"
        "                       3.5 kHz are strongest, for 'frae vocode'\n"
        "                       and 'frae encode': [T, mels + 2]\n"
        "  --f0 STEPS           --pitch by the tracker's steps up to\n"
        "                       STEPS: yin (YIN's reading alone), yin-hp\n"
        "                       (and the second reading high-passed) or\n"
        "                       refined (every step, --pitch's); the\n"
        "                       corpus scripts read the steps their\n"
        "                       rules were set on\n"
        "\n"
        "Train on such files with 'frae train --audio-features' (same\n"
        "options) so the model records them.\n"
        "\n"
        "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
        "options or audio (unreadable, silent, too short, wrong rate).\n");
}

static int features_opt(void *ctx, const char *name, const char *v)
{
    features_opts *o = ctx;
    if (!strcmp(name, "--output"))
        return o->output = cli_output_path(v), 0;
    if (!strcmp(name, "--pitch"))
        return o->audio.f.pitch = o->audio.f.pitch ? o->audio.f.pitch : 1, 0;
    if (!strcmp(name, "--f0")) {
        const int steps = frae_features_pitch_steps(v);
        if (steps < 0)
            return cli_fail(EXIT_USAGE,
                            "--f0 '%s': yin, yin-hp or refined (the default)",
                            v);
        return o->audio.f.pitch = steps, 0;
    }
    return cli_feature_option(&o->audio, name, v);
}

static int features_pos(void *ctx, const char *arg)
{
    features_opts *o = ctx;
    if (o->input)
        return cli_fail(EXIT_USAGE, "unexpected argument '%s'", arg);
    o->input = arg;
    return 0;
}

static int features_write(void *ctx, const float *feats, long frames,
                          int n_mels)
{
    FILE *f = ctx;
    size_t n = (size_t)frames * (size_t)n_mels;
    return fwrite(feats, sizeof(float), n, f) == n ? 0 : -1;
}

int cmd_features(int argc, char **argv)
{
    cli_cmd = "frae features";
    features_opts o = {0};
    cli_audio_default(&o.audio);
    static const cli_opt list[] = {
        {"--output", 1}, {"--sample-rate", 1}, {"--no-resample", 0},
        {"--mels", 1},   {"--hop", 1},         {"--win", 1},
        {"--fft", 1},    {"--fmin", 1},        {"--fmax", 1},
        {"--pitch", 0},  {"--f0", 1},          {NULL, 0}};
    int rc = cli_parse(argc, argv, list, features_opt, features_pos,
                       features_help, &o);
    if (rc)
        return rc;
    if (!o.input || !o.output)
        return cli_fail(EXIT_USAGE,
                        "needs IN and -o OUT.npy (see 'frae features --help')");
    char err[512];
    if (frae_features_check(&o.audio.f, err, sizeof err))
        return cli_fail(EXIT_USAGE, "bad audio features: %s", err);
    /* block by block into the output: memory does not grow with the
     * audio's length; a refused file leaves no output behind */
    if (!cli_output_seekable(o.output)) /* the header needs the count */
        return cli_fail(EXIT_USAGE,
                        "%s: the frames are counted only at the end, and "
                        "the .npy header that holds the count comes first: "
                        "give a file, not a pipe",
                        o.output);
    frae_atomic_file af;
    if (frae_npy_begin_growing(&af, o.output, 2, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    long frames;
    if (frae_audio_stream_features(o.input, &o.audio.f, o.audio.resample,
                                   features_write, af.f, &frames, err,
                                   sizeof err)) {
        int write_failed = ferror(af.f);
        frae_atomic_abort(&af);
        if (write_failed)
            return cli_fail(EXIT_FAILED, "%s: write failed", o.output);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    long shape[2] = {frames, FRAE_FEATURE_WIDTH(&o.audio.f)};
    if (frae_npy_finish(&af, 2, shape, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    char desc[160];
    cli_features_describe(&o.audio.f, desc, sizeof desc);
    cli_printf("%s -> %s: %ld frames (%s)\n", o.input, o.output, frames, desc);
    return EXIT_OK;
}

/* ---- convert ---------------------------------------------------------------- */

typedef struct {
    const char *input, *output;
    frae_weights weights;
    int weights_given;
} convert_opts;

static void convert_help(void)
{
    cli_printf(
        "usage: frae convert MODEL -o OUT --weights bf16|f32\n"
        "example: frae convert model.safetensors -o model-bf16.safetensors "
        "--weights bf16\n"
        "\n"
        "Writes MODEL's weights in another storage format, for inference:\n"
        "  bf16  each weight rounded to bfloat16 (nearest even, as\n"
        "        PyTorch's .bfloat16()); half the file, and batch-1\n"
        "        products (encode, decode, predict) stream half the bytes.\n"
        "        All arithmetic stays float32, so the model computes\n"
        "        exactly what an f32 model holding the rounded weights\n"
        "        computes; streams of the two decode alike.\n"
        "  f32   back to float32 (the rounded values), e.g. to fine-tune.\n"
        "Audio feature settings are kept; training state is not.\n"
        "\n"
        "Exit codes: 0 done, 1 the model could not be written, 2 bad\n"
        "options or model.\n");
}

static int convert_opt(void *ctx, const char *name, const char *v)
{
    convert_opts *o = ctx;
    if (!strcmp(name, "--output"))
        return o->output = cli_output_path(v), 0;
    int w = frae_enum_value("weights", v);
    if (w < 0)
        return cli_fail(EXIT_USAGE, "--weights: '%s' is not bf16 or f32", v);
    o->weights = (frae_weights)w;
    o->weights_given = 1;
    return 0;
}

static int convert_pos(void *ctx, const char *arg)
{
    convert_opts *o = ctx;
    if (o->input)
        return cli_fail(EXIT_USAGE, "unexpected argument '%s'", arg);
    o->input = arg;
    return 0;
}

int cmd_convert(int argc, char **argv)
{
    cli_cmd = "frae convert";
    convert_opts o = {0};
    static const cli_opt list[] = {
        {"--output", 1}, {"--weights", 1}, {NULL, 0}};
    int rc =
        cli_parse(argc, argv, list, convert_opt, convert_pos, convert_help, &o);
    if (rc)
        return rc;
    if (!o.input || !o.output || !o.weights_given)
        return cli_fail(EXIT_USAGE, "needs MODEL, -o OUT and --weights "
                                    "(see 'frae convert --help')");
    char err[512];
    frae_checkpoint *ck = frae_checkpoint_open(o.input, err, sizeof err);
    frae_config c;
    if (!ck || frae_checkpoint_config(ck, &c, err, sizeof err)) {
        frae_checkpoint_close(ck);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    frae_checkpoint_close(ck);
    size_t moved = 0;
    rc = frae_convert(o.input, o.output, o.weights, &moved, err, sizeof err);
    if (rc)
        return cli_fail(rc == -2 ? EXIT_FAILED : EXIT_USAGE, "%s", err);
    cli_printf("%s -> %s: %s weights, %zu of %zu parameters changed by "
               "rounding\n",
               o.input, o.output, frae_enum_name("weights", o.weights), moved,
               frae_param_count_for(&c));
    return EXIT_OK;
}
