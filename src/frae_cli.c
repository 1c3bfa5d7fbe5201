/* frae: the command-line tool.
 *
 * Exit codes: 0 success; 1 a run failed (training diverged, out of memory);
 * 2 bad usage or bad input (unknown option, malformed value, bad config). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frae.h"

#define EXIT_RUN_FAILED 1
#define EXIT_USAGE 2

static const char *prog_cmd = "frae";

static int usage_error(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "%s: ", prog_cmd);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see '%s --help')\n", prog_cmd);
    return EXIT_USAGE;
}

static int parse_long(const char *opt, const char *s, long lo, long hi,
                      long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < lo || v > hi) {
        char range[64];
        snprintf(range, sizeof range, "an integer in %ld..%ld", lo, hi);
        fprintf(stderr, "%s: %s expects %s, got '%s'\n", prog_cmd, opt, range,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, int *out)
{
    long v;
    if (parse_long(opt, s, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_float(const char *opt, const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v) || !(v > 0.0)) {
        fprintf(stderr, "%s: %s expects a positive number, got '%s'\n",
                prog_cmd, opt, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

/* "512,256" -> widths; "" or "none" -> no hidden layers. */
static int parse_widths(const char *opt, const char *s, int *n, int *w)
{
    *n = 0;
    if (!*s || !strcmp(s, "none"))
        return 0;
    const char *p = s;
    while (1) {
        if (*n == FRAE_MAX_HIDDEN) {
            fprintf(stderr, "%s: %s takes at most %d widths, got '%s'\n",
                    prog_cmd, opt, FRAE_MAX_HIDDEN, s);
            return -1;
        }
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || errno == ERANGE || v < 1 ||
            v > INT_MAX) {
            fprintf(stderr,
                    "%s: %s expects positive widths separated by commas, "
                    "got '%s'\n",
                    prog_cmd, opt, s);
            return -1;
        }
        w[(*n)++] = (int)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

static int parse_quantizer(const char *s, frae_config *cfg)
{
    if (!strcmp(s, "none")) {
        cfg->quantizer = FRAE_QUANT_NONE;
    } else if (!strcmp(s, "binary")) {
        cfg->quantizer = FRAE_QUANT_BINARY;
    } else if (!strncmp(s, "uniform:", 8)) {
        cfg->quantizer = FRAE_QUANT_UNIFORM;
        return parse_int("--quantizer uniform:N", s + 8, 2, 65536,
                         &cfg->quant_levels);
    } else {
        fprintf(stderr,
                "%s: --quantizer expects none, binary or uniform:N, got '%s'\n",
                prog_cmd, s);
        return -1;
    }
    return 0;
}

static int parse_choice(const char *opt, const char *s, const char *const *names,
                        int count, int *out)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    fprintf(stderr, "%s: %s got '%s'; expected one of:", prog_cmd, opt, s);
    for (int i = 0; i < count; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, "\n");
    return -1;
}

static void print_train_help(void)
{
    printf(
        "usage: frae train [options]\n"
        "\n"
        "Trains an FRAE.  With no data options it trains on the built-in\n"
        "synthetic dataset: smooth multi-dimensional sequences, the same for\n"
        "the same --data-seed.\n"
        "\n"
        "model:\n"
        "  --frame-dim D        frame dimension (default 80)\n"
        "  --history K          decoded frames fed back, 0 = plain AE (4)\n"
        "  --enc W1,W2,...      encoder hidden widths, or none (512,256)\n"
        "  --latent L           latent units (16)\n"
        "  --dec W1,W2,...      decoder hidden widths, or none (256,512)\n"
        "  --activation A       relu or tanh, hidden layers (relu)\n"
        "  --quantizer Q        none, binary or uniform:N (none)\n"
        "  --seed S             initialisation seed (1)\n"
        "training:\n"
        "  --epochs N           passes over the data (10)\n"
        "  --batch B            sequences per step, run in parallel (8)\n"
        "  --lr X               Adam learning rate (0.001)\n"
        "  --feedback F         detached (no gradient through the buffer)\n"
        "                       or full (BPTT through it) (detached)\n"
        "  --window W           truncated-BPTT window in frames (100)\n"
        "  --isa I              auto, scalar, avx2 or avx512 (auto)\n"
        "built-in data:\n"
        "  --sequences N        number of sequences (64)\n"
        "  --frames T           frames per sequence (100)\n"
        "  --data-seed S        data seed (7)\n"
        "\n"
        "Prints the loss (MSE) and MAE each epoch.  Exit codes: 0 done,\n"
        "1 training failed (diverged), 2 bad options or config.\n");
}

static void print_help(void)
{
    printf("frae %s: Feedback Recurrent AutoEncoders\n"
           "\n"
           "usage: frae <command> [options]\n"
           "\n"
           "commands:\n"
           "  train     train an FRAE (on the built-in data by default)\n"
           "  help      show this help; 'frae <command> --help' for one\n"
           "\n"
           "Exit codes: 0 success, 1 a run failed, 2 bad usage or input.\n",
           FRAE_VERSION_STRING);
}

typedef struct {
    frae_config cfg;
    int epochs;
    int sequences;
    int frames;
    long data_seed;
} train_opts;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_train_args(int argc, char **argv, train_opts *o)
{
    static const char *const acts[] = {"relu", "tanh"};
    static const char *const feedbacks[] = {"detached", "full"};
    static const char *const isas[] = {"auto", "scalar", "avx2", "avx512"};
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            print_train_help();
            exit(0);
        }
        if (strncmp(arg, "--", 2))
            return usage_error("unexpected argument '%s'%s", arg, "");
        char name[64];
        char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            return usage_error("unknown option '%s'%s", arg, "");
        memcpy(name, arg, len);
        name[len] = 0;
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return usage_error("option '%s' needs a value%s", name, "");

        frae_config *c = &o->cfg;
        int rc, tmp;
        if (!strcmp(name, "--frame-dim"))
            rc = parse_int(name, val, 1, INT_MAX, &c->frame_dim);
        else if (!strcmp(name, "--history"))
            rc = parse_int(name, val, 0, INT_MAX, &c->history);
        else if (!strcmp(name, "--enc"))
            rc = parse_widths(name, val, &c->n_enc_hidden, c->enc_hidden);
        else if (!strcmp(name, "--dec"))
            rc = parse_widths(name, val, &c->n_dec_hidden, c->dec_hidden);
        else if (!strcmp(name, "--latent"))
            rc = parse_int(name, val, 1, INT_MAX, &c->latent_dim);
        else if (!strcmp(name, "--activation")) {
            rc = parse_choice(name, val, acts, 2, &tmp);
            c->activation = (frae_activation)tmp;
        } else if (!strcmp(name, "--quantizer"))
            rc = parse_quantizer(val, c);
        else if (!strcmp(name, "--seed")) {
            long s;
            rc = parse_long(name, val, 0, LONG_MAX, &s);
            c->seed = (uint64_t)s;
        } else if (!strcmp(name, "--epochs"))
            rc = parse_int(name, val, 1, INT_MAX, &o->epochs);
        else if (!strcmp(name, "--batch"))
            rc = parse_int(name, val, 1, INT_MAX, &c->batch);
        else if (!strcmp(name, "--lr"))
            rc = parse_float(name, val, &c->learning_rate);
        else if (!strcmp(name, "--feedback")) {
            rc = parse_choice(name, val, feedbacks, 2, &tmp);
            c->feedback = (frae_feedback)tmp;
        } else if (!strcmp(name, "--window"))
            rc = parse_int(name, val, 1, INT_MAX, &c->window);
        else if (!strcmp(name, "--isa")) {
            rc = parse_choice(name, val, isas, 4, &tmp);
            c->isa = (frae_isa)tmp;
        } else if (!strcmp(name, "--sequences"))
            rc = parse_int(name, val, 1, INT_MAX, &o->sequences);
        else if (!strcmp(name, "--frames"))
            rc = parse_int(name, val, 1, INT_MAX, &o->frames);
        else if (!strcmp(name, "--data-seed"))
            rc = parse_long(name, val, 0, LONG_MAX, &o->data_seed);
        else
            return usage_error("unknown option '%s'%s", name, "");
        if (rc)
            return EXIT_USAGE;
    }
    return 0;
}

static int cmd_train(int argc, char **argv)
{
    prog_cmd = "frae train";
    train_opts o;
    frae_config_default(&o.cfg);
    o.cfg.batch = 8;
    o.epochs = 10;
    o.sequences = 64;
    o.frames = 100;
    o.data_seed = 7;
    int rc = parse_train_args(argc, argv, &o);
    if (rc)
        return rc;

    char err[256];
    if (frae_config_check(&o.cfg, err, sizeof err)) {
        fprintf(stderr, "%s: bad model config: %s\n", prog_cmd, err);
        return EXIT_USAGE;
    }
    const int D = o.cfg.frame_dim, T = o.frames, N = o.sequences;
    size_t n_data = (size_t)N * T, bytes;
    if (__builtin_mul_overflow(n_data, (size_t)D * sizeof(float), &bytes) ||
        bytes > ((size_t)1 << 36)) {
        fprintf(stderr,
                "%s: built-in dataset of %d x %d x %d floats is too large\n",
                prog_cmd, N, T, D);
        return EXIT_USAGE;
    }
    frae_model *m = frae_create(&o.cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", prog_cmd, err);
        return EXIT_USAGE;
    }
    const int B = o.cfg.batch;
    float *data = malloc(bytes);
    float *batch = malloc((size_t)B * T * D * sizeof(float));
    int *order = malloc((size_t)N * sizeof(int));
    if (!data || !batch || !order) {
        fprintf(stderr, "%s: out of memory for the dataset\n", prog_cmd);
        free(data), free(batch), free(order), frae_destroy(m);
        return EXIT_RUN_FAILED;
    }
    frae_synth_sequences(data, N, T, D, (uint64_t)o.data_seed);
    for (int i = 0; i < N; i++)
        order[i] = i;

    printf("frae: %zu parameters, %.0f bits/frame, %.1f MiB allocated, "
           "kernels %s\n",
           frae_param_count(m), frae_bits_per_frame(m),
           frae_bytes_allocated(m) / 1048576.0, frae_isa_name(m));
    printf("data: %d built-in sequences of %d frames x %d; batch %d, "
           "window %d, feedback %s\n",
           N, T, D, B, o.cfg.window,
           o.cfg.feedback == FRAE_FEEDBACK_FULL ? "full" : "detached");
    fflush(stdout);

    uint64_t shuffle_rng = o.cfg.seed ^ 0x0123456789abcdefull;
    int status = 0;
    for (int ep = 1; ep <= o.epochs && !status; ep++) {
        /* seeded Fisher-Yates shuffle of the sequence order */
        for (int i = N - 1; i > 0; i--) {
            shuffle_rng += 0x9e3779b97f4a7c15ull;
            uint64_t z = shuffle_rng;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            z ^= z >> 31;
            int j = (int)(z % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        double t0 = now_seconds(), sse = 0, sae = 0;
        long frames = 0;
        for (int s0 = 0; s0 < N; s0 += B) {
            int nb = N - s0 < B ? N - s0 : B; /* last batch may be short */
            for (int b = 0; b < nb; b++)
                memcpy(batch + (size_t)b * T * D,
                       data + (size_t)order[s0 + b] * T * D,
                       sizeof(float) * T * D);
            frae_stats st;
            frae_train_batch(m, batch, nb, T, &st);
            if (!isfinite(st.mse)) {
                fprintf(stderr,
                        "%s: training diverged at epoch %d (loss is %g); "
                        "try a lower --lr\n",
                        prog_cmd, ep, st.mse);
                status = EXIT_RUN_FAILED;
                break;
            }
            sse += st.mse * st.frames;
            sae += st.mae * st.frames;
            frames += st.frames;
        }
        if (status)
            break;
        double dt = now_seconds() - t0;
        printf("epoch %d/%d  loss %.6f  mae %.6f  %.0f frames/s  %.2f s\n", ep,
               o.epochs, sse / frames, sae / frames, frames / dt, dt);
        fflush(stdout);
    }
    free(data);
    free(batch);
    free(order);
    frae_destroy(m);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h")) {
        print_help();
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("frae %s\n", FRAE_VERSION_STRING);
        return 0;
    }
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc - 2, argv + 2);
    return usage_error("unknown command '%s'%s", argv[1], "");
}
