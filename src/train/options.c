/* Options by name (frae_train.h): one table row per model and training
 * option.  'frae train' parses its command line and prints its --help from
 * it, 'frae import' its model options, Python's FRAE its keywords; each
 * row names the checkpoint metadata key the option is recorded under.  A
 * new option is one row here (and the field it sets).
 *
 * The values are parsed as the command line always did, with its messages,
 * naming the option as the caller spelt it ("--latent" from the command
 * line, "latent" from Python).
 * Kept as one file: the table is the one list of the options, over 800
 * lines as a whole; split, it would be two lists to keep apart. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "frae_train.h"

/* How a row stores its value in frae_run_config. */
typedef enum {
    STORE_INT,    /* int (enums too: their index) */
    STORE_U64,    /* uint64_t */
    STORE_FLOAT,  /* float */
    STORE_DOUBLE, /* double */
    STORE_TEXT,   /* const char *: the caller's string, kept */
    STORE_WIDTHS, /* int count, then int widths[FRAE_MAX_HIDDEN] */
    STORE_CONFIG  /* the quantizer: frae_config fields */
} store;

typedef struct {
    frae_option o;
    size_t off; /* into frae_run_config */
    store st;
    long lo, hi; /* INT: exact bounds */
    int file;    /* a checkpoint path: a file, not a stream */
} row;

#define CFG(field) offsetof(frae_run_config, model.field)
#define RUN(field) offsetof(frae_run_config, field)
#define M FRAE_SECTION_MODEL
#define T FRAE_SECTION_TRAINING
#define FIXED FRAE_OPTION_FIXED
#define FIT FRAE_OPTION_FIT
#define IMPORT FRAE_OPTION_IMPORT

/* o: name, python, type, lo, hi, choices, value, help, meta, section,
 * flags, default; then where and how it is stored, exact integer bounds,
 * file */
static const row rows[] = {
    {{"recipe", "recipe", FRAE_OPTION_CHOICE, 0, 0,
      "none|speech|speech-vbr|denoise|speech-3k2", "R",
      "a named set of the options below, as the demo trains them (any "
      "option given still wins): speech (the 1.6 kbit/s codec: GRU, 12 "
      "binary latents, pitch), speech-vbr (its variable-rate one: range-"
      "coded under a prior, rate lambda 0.0002), denoise (speech's, toward "
      "--targets), speech-3k2 (the 3.2 kbit/s codec: as speech, 28 "
      "latents); none (the default; audio DATA with no model option get "
      "speech)",
      "train.recipe", M, FIXED, "none"},
     RUN(recipe),
     STORE_INT,
     0,
     0,
     0},
    {{"family", "family", FRAE_OPTION_CHOICE, 0, 0, "dense|gru", "F",
      "dense (fed-back frames) or gru (the paper's FRAE: GRU cells, h_dec "
      "fed back) (dense)",
      "frae.family", M, FIXED | IMPORT, "dense"},
     CFG(family),
     STORE_INT,
     0,
     0,
     0},
    {{"frame-dim", "frame_dim", FRAE_OPTION_INT, 1, INT_MAX, NULL, "D",
      "frame dimension (80)", "frae.frame_dim", M, FIXED, "80"},
     CFG(frame_dim),
     STORE_INT,
     1,
     INT_MAX,
     0},
    {{"history", "history", FRAE_OPTION_INT, 0, INT_MAX, NULL, "K",
      "decoded frames fed back, 0 = plain AE (dense 4, gru 0)", "frae.history",
      M, FIXED, NULL},
     CFG(history),
     STORE_INT,
     0,
     INT_MAX,
     0},
    {{"enc", "enc", FRAE_OPTION_WIDTHS, 0, 0, NULL, "W1,W2,...",
      "encoder hidden widths, or none; for gru the first is the GRU (dense "
      "512,256; gru 240)",
      "frae.enc_hidden", M, FIXED, NULL},
     CFG(n_enc_hidden),
     STORE_WIDTHS,
     0,
     0,
     0},
    {{"latent", "latent", FRAE_OPTION_INT, 1, INT_MAX, NULL, "L",
      "latent units (16)", "frae.latent_dim", M, FIXED | IMPORT, "16"},
     CFG(latent_dim),
     STORE_INT,
     1,
     INT_MAX,
     0},
    {{"dec", "dec", FRAE_OPTION_WIDTHS, 0, 0, NULL, "W1,W2,...",
      "decoder hidden widths, or none; for gru the first is the GRU (dense "
      "256,512; gru 240)",
      "frae.dec_hidden", M, FIXED, NULL},
     CFG(n_dec_hidden),
     STORE_WIDTHS,
     0,
     0,
     0},
    {{"activation", "activation", FRAE_OPTION_CHOICE, 0, 0, "relu|tanh", "A",
      "relu or tanh, hidden layers (relu)", "frae.activation", M,
      FIXED | IMPORT, "relu"},
     CFG(activation),
     STORE_INT,
     0,
     0,
     0},
    {{"quantizer", "quantizer", FRAE_OPTION_QUANTIZER, 0, 0, NULL, "Q",
      "none, binary or uniform:N (none)", "frae.quantizer", M, FIXED | IMPORT,
      "none"},
     0,
     STORE_CONFIG,
     0,
     0,
     0},
    {{"prior", "prior", FRAE_OPTION_INT, 0, 1 << 20, NULL, "P",
      "a learned prior over the codes, P tanh units on the decoder's state: "
      "the codec then entropy-codes them (variable rate); 0 = off (0; 16 "
      "when --rate-lambda is given)",
      "frae.prior_hidden", M, FIXED, "0"},
     CFG(prior_hidden),
     STORE_INT,
     0,
     1 << 20,
     0},
    {{"prior-ar", "prior_ar", FRAE_OPTION_CHOICE, 0, 0, "off|on", "on|off",
      "with a prior: each code's probability also sees the frame's earlier "
      "codes (on)",
      "frae.prior_ar", M, FIXED, NULL},
     CFG(prior_ar),
     STORE_INT,
     0,
     0,
     0},
    {{"pitch-coder", "pitch_coder", FRAE_OPTION_CHOICE, 0, 0,
      "4bit|ranged|envelope", "C",
      "with pitch and a prior, how its codes are range-coded: envelope (the "
      "default: as ranged, the voicing also in the context of the decoded "
      "envelope), ranged (two frames' context, counts fitted on speech) or "
      "4bit (as before them)",
      "frae.pitch", M, FIXED, NULL},
     CFG(pitch_ranged),
     STORE_INT,
     0,
     0,
     0},
    {{"seed", "seed", FRAE_OPTION_INT, 0, (double)LONG_MAX, NULL, "S",
      "initialisation and shuffling seed (1)", "frae.seed", M, FIXED, "1"},
     CFG(seed),
     STORE_U64,
     0,
     LONG_MAX,
     0},

    {{"epochs", "epochs", FRAE_OPTION_INT, 1, 1000000000, NULL, "N",
      "total epochs (10)", "train.epochs", T, FIT, "10"},
     RUN(epochs),
     STORE_INT,
     1,
     1000000000,
     0},
    {{"batch", "batch_size", FRAE_OPTION_INT, 1, 1 << 20, NULL, "B",
      "sequences per step, run in parallel (8)", "train.global_batch", T,
      FIXED | FIT, "8"},
     CFG(batch),
     STORE_INT,
     1,
     1 << 20,
     0},
    {{"lr", "learning_rate", FRAE_OPTION_FLOAT, 1e-30, 1e30, NULL, "X",
      "Adam learning rate (0.001)", "frae.learning_rate", T, FIXED,
      "0.00100000005"},
     CFG(learning_rate),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"clip-norm", "clip_norm", FRAE_OPTION_FLOAT, 0, 1e30, NULL, "X",
      "clip gradients to this global L2 norm (off)", "frae.clip_norm", T, FIXED,
      "0"},
     CFG(clip_norm),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"rate-lambda", "rate_lambda", FRAE_OPTION_FLOAT, 0, 1e30, NULL, "X",
      "with a prior: minimise distortion + X x rate (bits per frame under "
      "the prior); larger X, fewer bits (0: distortion alone)",
      "frae.rate_lambda", T, FIXED, "0"},
     CFG(rate_lambda),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"level-loss", "level_loss", FRAE_OPTION_FLOAT, 0, 1e6, NULL, "W",
      "audio features: add W x the squared log ratio of the decoded to the "
      "input power over each window's active frames (the decoded envelope "
      "keeps the speech's power; 0: off)",
      "frae.level_loss", T, FIXED, "0"},
     CFG(level_loss),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"emphasis", "emphasis", FRAE_OPTION_FLOAT, 0, 1000, NULL, "W",
      "the squared error of values --emphasis-from to --emphasis-to of each "
      "frame weighs W, the others 1 (0: all alike)",
      "frae.emphasis", T, FIXED, "0"},
     CFG(emphasis),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"emphasis-from", "emphasis_from", FRAE_OPTION_INT, 0, 1 << 20, NULL, "D",
      "... the first value it weighs (0)", "frae.emphasis_from", T, FIXED, "0"},
     CFG(emphasis_from),
     STORE_INT,
     0,
     1 << 20,
     0},
    {{"emphasis-to", "emphasis_to", FRAE_OPTION_INT, 0, 1 << 20, NULL, "E",
      "... and the one after its last (0)", "frae.emphasis_to", T, FIXED, "0"},
     CFG(emphasis_to),
     STORE_INT,
     0,
     1 << 20,
     0},
    {{"warmup", "warmup", FRAE_OPTION_INT, 0, INT_MAX, NULL, "N",
      "raise the learning rate linearly over the first N Adam steps (0)",
      "frae.lr_warmup", T, FIXED, "0"},
     CFG(lr_warmup),
     STORE_INT,
     0,
     INT_MAX,
     0},
    {{"decay-steps", "decay_steps", FRAE_OPTION_INT, 0, INT_MAX, NULL, "N",
      "then lower it along a half cosine over N steps (0: constant)",
      "frae.lr_decay_steps", T, FIXED, "0"},
     CFG(lr_decay_steps),
     STORE_INT,
     0,
     INT_MAX,
     0},
    {{"lr-floor", "lr_floor", FRAE_OPTION_FLOAT, 0, 1, NULL, "F",
      "... down to F times --lr, kept after (0)", "frae.lr_floor", T, FIXED,
      "0"},
     CFG(lr_floor),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"erasure", "erasure", FRAE_OPTION_FLOAT, 0, 0.5, NULL, "P",
      "GRU, fixed rate: lose this share of the training windows' packets "
      "(bursts of two on average), concealed as a receiver conceals them, "
      "so the decoder learns to conceal and recover (0: off)",
      "frae.erasure", T, FIXED, "0"},
     CFG(erasure),
     STORE_FLOAT,
     0,
     0,
     0},
    {{"erasure-frames", "erasure_frames", FRAE_OPTION_INT, 0, 1000, NULL, "N",
      "... frames a lost packet takes (0: 4, 40 ms)", "frae.erasure_frames", T,
      FIXED, "0"},
     CFG(erasure_frames),
     STORE_INT,
     0,
     1000,
     0},
    {{"lookahead", "lookahead", FRAE_OPTION_INT, 0, 8, NULL, "A",
      "GRU: the encoder also sees the next A input frames (0)",
      "frae.lookahead", T, FIXED, "0"},
     CFG(lookahead),
     STORE_INT,
     0,
     8,
     0},
    {{"lookahead-packet", "lookahead_packet", FRAE_OPTION_INT, 0, 8, NULL, "P",
      "... none past the next packet of P frames (counted from the "
      "sequence's start): its first frames see further at no more delay "
      "(0: off)",
      "frae.lookahead_packet", T, FIXED, "0"},
     CFG(lookahead_packet),
     STORE_INT,
     0,
     8,
     0},
    {{"feedback", "feedback", FRAE_OPTION_CHOICE, 0, 0, "detached|full", "F",
      "detached (no gradient through the buffer) or full (BPTT through it) "
      "(detached)",
      "frae.feedback", T, FIXED, "detached"},
     CFG(feedback),
     STORE_INT,
     0,
     0,
     0},
    {{"window", "window", FRAE_OPTION_INT, 1, 1 << 24, NULL, "W",
      "truncated-BPTT window in frames (100)", "frae.window", T, FIXED, "100"},
     CFG(window),
     STORE_INT,
     1,
     1 << 24,
     0},
    {{"crop", "crop", FRAE_OPTION_INT, 1, 1 << 24, NULL, "N",
      "train on crops of N frames: each epoch cuts every sequence at a "
      "random offset into N-frame crops (a shorter one whole) and shuffles "
      "them across sequences; validation runs on whole sequences (off)",
      "train.crop", T, FIXED | FIT, NULL},
     RUN(crop),
     STORE_INT,
     1,
     1 << 24,
     0},
    {{"isa", "isa", FRAE_OPTION_CHOICE, 0, 0, "auto|scalar|avx2|avx512|neon",
      "I", "auto, scalar, avx2, avx512 or neon (auto)", NULL, T, 0, "auto"},
     CFG(isa),
     STORE_INT,
     0,
     0,
     0},
    {{"threads", "threads", FRAE_OPTION_INT, 1, 1024, NULL, "N",
      "threads for large products (all CPUs, shared out among replicas or "
      "local MPI ranks); results are the same for any N",
      NULL, T, 0, NULL},
     CFG(threads),
     STORE_INT,
     1,
     1024,
     0},

    {{"replicas", "replicas", FRAE_OPTION_INT, 1, 256, NULL, "N",
      "the same with N threads of one process: the same bits as N MPI ranks "
      "(1)",
      NULL, FRAE_SECTION_PARALLEL, FIT, "1"},
     RUN(replicas),
     STORE_INT,
     1,
     256,
     0},

    {{"val-split", "validation_split", FRAE_OPTION_FLOAT, 0, 0.99, NULL, "F",
      "hold out this fraction of the sequences (0)", "train.val_split",
      FRAE_SECTION_VALIDATION, FIT, "0"},
     RUN(val_split),
     STORE_DOUBLE,
     0,
     0,
     0},
    {{"patience", "patience", FRAE_OPTION_INT, 0, 1000000000, NULL, "N",
      "stop after N epochs without a better validation loss (train loss if "
      "no validation data); 0 = never (0)",
      "train.patience", FRAE_SECTION_VALIDATION, FIT, "0"},
     RUN(patience),
     STORE_INT,
     0,
     1000000000,
     0},

    {{"save", "checkpoint", FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
      "checkpoint after every epoch and on Ctrl-C "
      "(frae-checkpoint.safetensors; none = off)",
      NULL, FRAE_SECTION_CHECKPOINTS, FIT, NULL},
     RUN(save),
     STORE_TEXT,
     0,
     0,
     1},
    {{"save-best", "save_best", FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
      "the model with the best monitored loss", NULL, FRAE_SECTION_CHECKPOINTS,
      FIT, NULL},
     RUN(save_best),
     STORE_TEXT,
     0,
     0,
     1},
    {{"resume", "resume", FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
      "continue a checkpoint exactly where it was", NULL,
      FRAE_SECTION_CHECKPOINTS, FIT, NULL},
     RUN(resume),
     STORE_TEXT,
     0,
     0,
     0},
    {{"log-csv", "csv_log", FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
      "append per-epoch metrics to a CSV file", NULL, FRAE_SECTION_CHECKPOINTS,
      FIT, NULL},
     RUN(log_csv),
     STORE_TEXT,
     0,
     0,
     0},

    {{"normalize", "normalize", FRAE_OPTION_TEXT, 0, 0, NULL, "MODE",
      "per-band z-scoring, part of the model: on (mean and std of each band "
      "over the training set, one pass), off, or a .npy [2, D] of means "
      "then stds; auto: on for audio features, off otherwise (auto)",
      "frae.normalize", FRAE_SECTION_FEATURES, FIXED, NULL},
     RUN(normalize),
     STORE_TEXT,
     0,
     0,
     0},
    {{"pitch", "pitch", FRAE_OPTION_FLAG, 0, 0, NULL, NULL,
      "the codec also carries f0 and voicing (YIN, 4 bits per frame, its "
      "own quantizer), for the vocoder; the network is unchanged",
      "frae.pitch", FRAE_SECTION_FEATURES, FIXED, "off"},
     CFG(pitch),
     STORE_INT,
     0,
     0,
     0},
};
#define N_ROWS ((int)(sizeof rows / sizeof *rows))
_Static_assert(sizeof rows / sizeof *rows <= 64, "given is a 64-bit mask");

int frae_option_count(void) { return N_ROWS; }

/* ---- recipes: the demo's options by name -------------------------------
 * tools/demo.py trains each model with these options (its MODELS row, then
 * its RECIPE); rc->recipe is the index here + 1 (0: none), the order of the
 * recipe row's choices.  normalize on is what auto gives audio, written
 * out so that frames from Python (no audio) are z-scored alike. */
#define SPEECH_RUN                                                             \
    "pitch", NULL, "crop", "100", "batch", "16", "feedback", "full", "lr",     \
        "0.001", "clip-norm", "1", "normalize", "on"
static const frae_recipe recipes[] = {
    {"speech",
     "the fixed-rate 1.6 kbit/s speech codec: GRU, 12 binary latents + "
     "4-bit pitch",
     {"family", "gru", "quantizer", "binary", "latent", "12", SPEECH_RUN, NULL},
     0},
    {"speech-vbr",
     "the variable-rate speech codec: as speech, its codes range-coded under "
     "a learned prior, rate lambda 0.0002 (about 1.2 kbit/s)",
     {"family", "gru", "quantizer", "binary", "latent", "12", "rate-lambda",
      "0.0002", SPEECH_RUN, NULL},
     0},
    {"denoise",
     "the speech codec trained from noisy DATA toward clean --targets",
     {"family", "gru", "quantizer", "binary", "latent", "12", SPEECH_RUN, NULL},
     1},
    {"speech-3k2",
     "the fixed-rate 3.2 kbit/s speech codec: as speech, 28 binary latents",
     {"family", "gru", "quantizer", "binary", "latent", "28", SPEECH_RUN, NULL},
     0},
};
#define N_RECIPES ((int)(sizeof recipes / sizeof *recipes))

int frae_recipe_count(void) { return N_RECIPES; }

const frae_recipe *frae_recipe_at(int index)
{
    return index >= 0 && index < N_RECIPES ? &recipes[index] : NULL;
}

int frae_recipe_find(const char *name)
{
    for (int i = 0; name && i < N_RECIPES; i++)
        if (!strcmp(recipes[i].name, name))
            return i;
    return -1;
}

const frae_option *frae_option_at(int index)
{
    return index >= 0 && index < N_ROWS ? &rows[index].o : NULL;
}

int frae_option_find(const char *name)
{
    if (!name)
        return -1;
    const char *bare = strncmp(name, "--", 2) ? name : name + 2;
    for (int i = 0; i < N_ROWS; i++)
        if (!strcmp(rows[i].o.name, bare) ||
            (bare == name && !strcmp(rows[i].o.python, name)))
            return i;
    return -1;
}

int frae_option_given(const frae_run_config *rc, int index)
{
    return index >= 0 && index < N_ROWS && (rc->given >> index & 1);
}

/* ---- parsing: the command line's messages ---------------------------- */

static int bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    frae_errorf(err, errlen, "%s", msg);
    return FRAE_RUN_BAD_INPUT;
}

static int parse_long(const char *name, const char *s, long lo, long hi,
                      long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < lo || v > hi)
        return bad(err, errlen, "%s expects an integer in %ld..%ld, got '%s'",
                   name, lo, hi, s);
    *out = v;
    return 0;
}

static int parse_double(const char *name, const char *s, double lo, double hi,
                        double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v) || v < lo || v > hi)
        return bad(err, errlen, "%s expects a number in [%g, %g], got '%s'",
                   name, lo, hi, s);
    *out = v;
    return 0;
}

/* The index of s among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *s)
{
    const size_t n = strlen(s);
    int i = 0;
    for (const char *c = choices; *c; i++) {
        size_t len = strcspn(c, "|");
        if (len == n && !strncmp(c, s, n))
            return i;
        c += len + (c[len] == '|');
    }
    return -1;
}

static int parse_choice(const char *name, const char *s, const char *choices,
                        int *out, char *err, size_t errlen)
{
    int i = choice_index(choices, s);
    if (i >= 0) {
        *out = i;
        return 0;
    }
    char list[256] = "";
    size_t at = 0;
    for (const char *c = choices; *c && at < sizeof list - 1;) {
        size_t len = strcspn(c, "|");
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%.*s",
                               at ? ", " : "", (int)len, c);
        c += len + (c[len] == '|');
    }
    return bad(err, errlen, "%s got '%s'; expected one of: %s", name, s, list);
}

/* A checkpoint is written at every epoch, each replacing the last: a file
 * (or none yet), not "-", a FIFO or a device. */
static int seekable_path(const char *path)
{
    struct stat sb;
    return strcmp(path, "-") && (stat(path, &sb) || S_ISREG(sb.st_mode));
}

int frae_option_set(frae_run_config *rc, const char *name, const char *v,
                    char *err, size_t errlen)
{
    const int i = frae_option_find(name);
    if (i < 0)
        return bad(err, errlen, "unknown option '%s'", name ? name : "");
    const row *r = &rows[i];
    char *p = (char *)rc + r->off;
    if (r->o.type != FRAE_OPTION_FLAG && !v)
        return bad(err, errlen, "option '%s' needs a value", name);
    long l = 0;
    double d = 0;
    int k = 0, rc2 = 0;
    switch (r->o.type) {
    case FRAE_OPTION_INT:
        rc2 = parse_long(name, v, r->lo, r->hi, &l, err, errlen);
        if (!rc2 && r->st == STORE_U64)
            *(uint64_t *)p = (uint64_t)l;
        else if (!rc2)
            *(int *)p = (int)l;
        break;
    case FRAE_OPTION_FLOAT:
        rc2 = parse_double(name, v, r->o.lo, r->o.hi, &d, err, errlen);
        if (!rc2 && r->st == STORE_DOUBLE)
            *(double *)p = d;
        else if (!rc2)
            *(float *)p = (float)d;
        break;
    case FRAE_OPTION_CHOICE:
        rc2 = parse_choice(name, v, r->o.choices, &k, err, errlen);
        if (!rc2)
            *(int *)p = k;
        break;
    case FRAE_OPTION_WIDTHS: {
        int *n = (int *)p, *w = n + 1; /* count, then the widths */
        int got = frae_parse_widths(v, n, w);
        if (got == -2)
            rc2 = bad(err, errlen, "%s takes at most %d widths, got '%s'", name,
                      FRAE_MAX_HIDDEN, v);
        else if (got)
            rc2 = bad(err, errlen,
                      "%s expects positive widths separated by commas, got "
                      "'%s'",
                      name, v);
        break;
    }
    case FRAE_OPTION_QUANTIZER: {
        int got = frae_quantizer_parse(v, &rc->model);
        if (got == -2)
            rc2 = bad(err, errlen,
                      "%s uniform:N expects an integer in 2..65536, got '%s'",
                      name, v + 8);
        else if (got)
            rc2 =
                bad(err, errlen,
                    "%s expects none, binary or uniform:N, got '%s'", name, v);
        break;
    }
    case FRAE_OPTION_FLAG: *(int *)p = 1; break;
    case FRAE_OPTION_TEXT:
        if (r->file && !seekable_path(v))
            return bad(err, errlen,
                       "%s %s: a checkpoint is saved at every epoch, each "
                       "replacing the last, so it goes to a file",
                       name, v);
        /* "none" saves nothing; "auto" leaves the choice to the run */
        if ((r->off == RUN(save) && !strcmp(v, "none")) ||
            (r->off == RUN(normalize) && !strcmp(v, "auto")))
            v = NULL;
        *(const char **)p = v;
        break;
    }
    if (rc2)
        return rc2;
    rc->given |= (uint64_t)1 << i;
    if (r->o.flags & FRAE_OPTION_FIXED)
        rc->last_fixed = i;
    return 0;
}

size_t frae_option_format(const frae_run_config *rc, int index, char *out,
                          size_t cap)
{
    if (index < 0 || index >= N_ROWS || !cap)
        return 0;
    const row *r = &rows[index];
    const char *p = (const char *)rc + r->off;
    int n = 0;
    switch (r->o.type) {
    case FRAE_OPTION_INT:
        n = r->st == STORE_U64
                ? snprintf(out, cap, "%llu",
                           (unsigned long long)*(const uint64_t *)p)
                : snprintf(out, cap, "%d", *(const int *)p);
        break;
    case FRAE_OPTION_FLOAT:
        n = r->st == STORE_DOUBLE
                ? snprintf(out, cap, "%.17g", *(const double *)p)
                : snprintf(out, cap, "%.9g", (double)*(const float *)p);
        break;
    case FRAE_OPTION_CHOICE: {
        int k = *(const int *)p;
        const char *c = r->o.choices;
        for (; k > 0 && *c; k--)
            c += strcspn(c, "|") + (c[strcspn(c, "|")] == '|');
        n = snprintf(out, cap, "%.*s", (int)strcspn(c, "|"), c);
        break;
    }
    case FRAE_OPTION_WIDTHS: {
        const int *w = (const int *)p;
        if (w[0] == 0)
            n = snprintf(out, cap, "none");
        else
            frae_widths_name(w + 1, w[0], out, cap), n = (int)strlen(out);
        break;
    }
    case FRAE_OPTION_QUANTIZER:
        frae_quantizer_name(&rc->model, out, cap);
        n = (int)strlen(out);
        break;
    case FRAE_OPTION_FLAG:
        n = snprintf(out, cap, "%s", *(const int *)p ? "on" : "off");
        break;
    case FRAE_OPTION_TEXT: {
        const char *s = *(const char *const *)p;
        n = snprintf(out, cap, "%s", s ? s : "");
        break;
    }
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static int given(const frae_run_config *rc, const char *name)
{
    return frae_option_given(rc, frae_option_find(name));
}

/* The recipe's options that were not given, as if given (the derived
 * defaults below follow from them as from the command line's). */
static void apply_recipe(frae_run_config *rc)
{
    const frae_recipe *r = frae_recipe_at(rc->recipe - 1);
    if (!r)
        return;
    const int last = rc->last_fixed;
    char err[256];
    for (int i = 0; r->options[i]; i += 2)
        if (!given(rc, r->options[i]))
            frae_option_set(rc, r->options[i], r->options[i + 1], err,
                            sizeof err);
    rc->last_fixed = last; /* a resume names the recipe, not its parts */
}

void frae_options_finish(frae_run_config *rc)
{
    frae_config *c = &rc->model;
    apply_recipe(rc);
    if (c->family == FRAE_FAMILY_GRU) { /* the GRU family's own defaults */
        frae_config g;
        frae_config_default_gru(&g);
        if (!given(rc, "history"))
            c->history = g.history;
        if (!given(rc, "enc")) {
            c->n_enc_hidden = g.n_enc_hidden;
            memcpy(c->enc_hidden, g.enc_hidden, sizeof c->enc_hidden);
        }
        if (!given(rc, "dec")) {
            c->n_dec_hidden = g.n_dec_hidden;
            memcpy(c->dec_hidden, g.dec_hidden, sizeof c->dec_hidden);
        }
    }
    if (c->rate_lambda > 0 && !given(rc, "prior"))
        c->prior_hidden = 16; /* a rate needs a prior to measure it */
    if (c->prior_hidden > 0 && !given(rc, "prior-ar"))
        c->prior_ar = 1; /* the codes of a frame, coded in order */
    if (c->pitch && c->prior_hidden > 0 && !given(rc, "pitch-coder"))
        /* range-coded: the coder made for it, voicing seen from the
         * envelope */
        c->pitch_ranged = FRAE_PITCH_CODER_ENVELOPE;
}

/* "  --name VALUE" to column 23, then the help wrapped at 76 columns. */
size_t frae_option_help(const frae_option *o, char *out, size_t cap)
{
    enum { COLUMN = 23, WIDTH = 76 };
    size_t at = 0;
#define PUT(...)                                                               \
    do {                                                                       \
        int n_ = snprintf(out + at, at < cap ? cap - at : 0, __VA_ARGS__);     \
        at += n_ > 0 ? (size_t)n_ : 0;                                         \
    } while (0)
    if (!cap)
        out = NULL;
    char head[64];
    snprintf(head, sizeof head, "  --%s%s%s", o->name, o->value ? " " : "",
             o->value ? o->value : "");
    size_t col = strlen(head);
    PUT("%s", head);
    if (col >= COLUMN - 1) { /* no room: the help starts a line below */
        PUT("\n");
        col = 0;
    }
    const char *s = o->help ? o->help : "";
    while (*s) {
        size_t word = strcspn(s, " ");
        if (col > COLUMN && col + 1 + word > WIDTH) {
            PUT("\n");
            col = 0;
        }
        if (col < COLUMN) {
            PUT("%*s", (int)(COLUMN - col), "");
            col = COLUMN;
        } else {
            PUT(" ");
            col++;
        }
        PUT("%.*s", (int)word, s);
        col += word;
        s += word;
        while (*s == ' ')
            s++;
    }
    PUT("\n");
#undef PUT
    return at;
}

/* ---- a run's settings -------------------------------------------------- */

void frae_run_config_default(frae_run_config *rc)
{
    memset(rc, 0, sizeof *rc);
    frae_config_default(&rc->model);
    rc->model.batch = 8;
    rc->patience = -1;
    rc->val_split = -1;
    rc->shuffle = 1;
    rc->replicas = 1;
    rc->last_fixed = -1;
}

int frae_run_config_settle(frae_run_config *rc, int has_val_data, char *err,
                           size_t errlen)
{
    if (rc->epochs == 0)
        rc->epochs = 10;
    if (rc->patience < 0)
        rc->patience = 0;
    if (rc->val_split < 0)
        rc->val_split = 0;
    if (rc->val_split > 0 && has_val_data)
        return bad(err, errlen, "use --val-split or --val-data, not both");
    return 0;
}

int frae_run_config_resumable(const frae_run_config *rc, char *err,
                              size_t errlen)
{
    if (!rc->resume || rc->last_fixed < 0)
        return 0;
    const frae_option *o = &rows[rc->last_fixed].o;
    return bad(err, errlen,
               "--%s cannot be combined with --resume: the model and its "
               "training settings come from the checkpoint",
               o->name);
}
