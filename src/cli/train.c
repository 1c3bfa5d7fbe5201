/* frae train: the Keras-style training workflow.
 *
 * Data: .npy files or directories, or the built-in synthetic sequences.
 * Each batch of sequences is fed a BPTT window at a time, so only B x W
 * frames are ever copied out of the (memory-mapped) data.  Sequences of
 * different lengths are zero-padded to the longest in their batch and the
 * padding is masked out of the loss; the last window of a sequence is
 * simply shorter.  No frame is dropped.
 *
 * State: a checkpoint holds the model, the Adam state and where training
 * stands (epoch, batch, data order, RNG, running sums, early-stopping
 * counters), so --resume continues bit for bit. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#ifdef FRAE_MPI
#include <mpi.h>
#endif

#include "cli.h"

static volatile sig_atomic_t stop_requested; /* dist.c reads it too */
static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    frae_config cfg;
    int model_flags;   /* options that change the model or its training */
    unsigned model_given; /* CLI_GIVEN_* */
    const char *model_flag;
    int frame_dim_given;
    int epochs;
    int epochs_resumed; /* --resume without --epochs: the checkpoint's */
    const char *save, *save_best, *resume, *log_csv;
    double val_split;
    char **data, **val;
    int n_data, n_val;
    char **targets, **val_targets; /* --targets, --val-targets */
    int n_targets, n_val_targets;
    int patience;
    int progress; /* -1 auto (terminal), 0 off, 1 on */
    int sequences, frames;
    long data_seed;
    cli_audio audio;
    int audio_features; /* --audio-features: .npy data are frae features */
    const char *normalize; /* --normalize: NULL (auto), on, off, or a .npy */
    int crop;              /* --crop N: train on N-frame crops (0: whole) */
    int rate_lambda_given;
    int replicas;       /* --replicas: data-parallel threads (1: alone) */
    int threads_given;
    double dist_timeout; /* --dist-timeout: seconds a rank waits */
} train_opts;

typedef struct {
    int epoch;       /* epochs completed */
    long batch;      /* next batch of the current epoch */
    uint64_t rng;    /* shuffling state */
    double sse, sae; /* the current epoch so far */
    double bits;     /* ... and the rate's bits (with a prior) */
    long values, frames;
    double seconds;  /* time in the current epoch so far, for frames/s */
    double started;  /* when the epoch started, less seconds */
    double best;     /* best monitored loss, and when */
    int best_epoch;
    int bad_epochs;
    int32_t *order;  /* the current epoch's sequence order (with --crop: of
                        its crops) */
    long n_order;
    /* --crop: the epoch's crops, sequence and first frame; n_order of
     * them, room for crop_cap (the most an epoch can cut) */
    int32_t *crop_seq, *crop_start;
    long crop_cap;
} train_state;

static void train_help(void)
{
    cli_printf(
        "usage: frae train [options] [DATA ...]\n"
        "\n"
        "Trains an FRAE.  DATA are .npy files ([T, D] or [N, T, D], float32\n"
        "or float64), audio files (WAV, FLAC, ...: log-mel features are\n"
        "computed, and their parameters kept in the checkpoint) or\n"
        "directories of them; without DATA, the built-in synthetic\n"
        "sequences.  Sequences may differ in length: each batch is\n"
        "zero-padded to its longest sequence and the padding is masked out\n"
        "of the loss, and a sequence's last window is just shorter.\n"
        "\n"
        "model (fixed by the checkpoint when resuming):\n" CLI_MODEL_HELP
        "training:\n"
        "  --epochs N           total epochs (10)\n"
        "  --batch B            sequences per step, run in parallel (8)\n"
        "  --lr X               Adam learning rate (0.001)\n"
        "  --clip-norm X        clip gradients to this global L2 norm (off)\n"
        "  --rate-lambda X      with a prior: minimise distortion + X x rate\n"
        "                       (bits per frame under the prior); larger X,\n"
        "                       fewer bits (0: distortion alone)\n"
        "  --warmup N           raise the learning rate linearly over the\n"
        "                       first N Adam steps (0)\n"
        "  --decay-steps N      then lower it along a half cosine over N\n"
        "                       steps (0: constant)\n"
        "  --lr-floor F         ... down to F times --lr, kept after (0)\n"
        "  --feedback F         detached (no gradient through the buffer)\n"
        "                       or full (BPTT through it) (detached)\n"
        "  --window W           truncated-BPTT window in frames (100)\n"
        "  --crop N             train on crops of N frames: each epoch cuts\n"
        "                       every sequence at a random offset into\n"
        "                       N-frame crops (a shorter one whole) and\n"
        "                       shuffles them across sequences; validation\n"
        "                       runs on whole sequences (off)\n"
        "  --isa I              auto, scalar, avx2 or avx512 (auto)\n"
        "  --threads N          threads for large products (all CPUs,\n"
        "                       shared out among replicas or local MPI\n"
        "                       ranks); results are the same for any N\n"
        "data-parallel training (README \"Training on a cluster\"):\n"
        "  mpirun -np N frae train ...  N MPI ranks train one model; each\n"
        "                       takes its share of every batch of B\n"
        "                       sequences (B stays the whole step's)\n"
        "  --replicas N         the same with N threads of one process:\n"
        "                       the same bits as N MPI ranks (1)\n"
        "  --dist-timeout S     seconds a rank waits for the others before\n"
        "                       stopping them all (600)\n"
        "validation and stopping:\n"
        "  --val-split F        hold out this fraction of the sequences (0)\n"
        "  --val-data PATH      validation .npy file or directory (repeat)\n"
        "targets (a denoising or enhancing autoencoder):\n"
        "  --targets PATH       target .npy files or directories (repeat),\n"
        "                       paired with DATA in order (directories: by\n"
        "                       sorted name); each pair the same length; the\n"
        "                       loss compares the output with the target,\n"
        "                       the encoder still sees DATA, and feedback is\n"
        "                       the model's own output; kept in the\n"
        "                       checkpoint (give --targets again to resume)\n"
        "  --val-targets PATH   the targets of --val-data, paired likewise\n"
        "  --patience N         stop after N epochs without a better\n"
        "                       validation loss (train loss if no\n"
        "                       validation data); 0 = never (0)\n"
        "checkpoints and logs:\n"
        "  --save PATH          checkpoint after every epoch and on Ctrl-C\n"
        "                       (frae-checkpoint.safetensors; none = off)\n"
        "  --save-best PATH     the model with the best monitored loss\n"
        "  --resume PATH        continue a checkpoint exactly where it was\n"
        "  --log-csv PATH       append per-epoch metrics to a CSV file\n"
        "  --progress MODE      auto, on or off: a progress bar (auto: on a\n"
        "                       terminal; otherwise one line per epoch)\n"
        "audio features (D = --mels):\n" CLI_FEATURE_HELP
        "  --audio-features     the .npy DATA are such features (from\n"
        "                       'frae features'): record their parameters\n"
        "  --normalize MODE     per-band z-scoring, part of the model: on\n"
        "                       (mean and std of each band over the\n"
        "                       training set, one pass), off, or a .npy\n"
        "                       [2, D] of means then stds; auto: on for\n"
        "                       audio features, off otherwise (auto)\n"
        "  --pitch              the codec also carries f0 and voicing (YIN,\n"
        "                       4 bits per frame, its own quantizer), for\n"
        "                       the vocoder; the network is unchanged\n"
        "built-in data:\n"
        "  --sequences N        number of sequences (64)\n"
        "  --frames T           frames per sequence (100)\n"
        "  --data-seed S        data seed (7)\n"
        "\n"
        "Exit codes: 0 done; 1 failed (diverged: the last checkpoint is\n"
        "kept; or a save failed); 2 bad options, data or checkpoint;\n"
        "130 interrupted by Ctrl-C after saving a checkpoint.\n");
}

static const cli_opt train_opts_list[] = {
    {"--frame-dim", 1}, {"--history", 1},   {"--enc", 1},
    {"--latent", 1},    {"--dec", 1},       {"--activation", 1},
    {"--quantizer", 1}, {"--seed", 1},      {"--epochs", 1},
    {"--batch", 1},     {"--lr", 1},        {"--clip-norm", 1},
    {"--feedback", 1},  {"--window", 1},    {"--isa", 1},
    {"--val-split", 1}, {"--val-data", 1},  {"--patience", 1},
    {"--save", 1},      {"--save-best", 1}, {"--resume", 1},
    {"--log-csv", 1},   {"--progress", 1},  {"--sequences", 1},
    {"--frames", 1},    {"--data-seed", 1}, {"--audio-features", 0},
    {"--sample-rate", 1}, {"--no-resample", 0}, {"--mels", 1},
    {"--hop", 1},       {"--win", 1},       {"--fft", 1},
    {"--fmin", 1},      {"--fmax", 1},      {"--threads", 1},
    {"--family", 1},    {"--warmup", 1},    {"--decay-steps", 1},
    {"--lr-floor", 1},  {"--pitch", 0},     {"--normalize", 1},
    {"--crop", 1},      {"--prior", 1},     {"--prior-ar", 1},
    {"--pitch-coder", 1},
    {"--rate-lambda", 1},
    {"--replicas", 1},  {"--dist-timeout", 1}, {"--targets", 1},
    {"--val-targets", 1},
    {NULL, 0}};

static int push(char ***list, int *n, const char *v)
{
    char **nl = realloc(*list, sizeof *nl * (size_t)(*n + 1));
    if (!nl)
        return cli_fail(EXIT_FAILED, "out of memory");
    nl[(*n)++] = (char *)v;
    *list = nl;
    return 0;
}

static int train_on_opt(void *ctx, const char *name, const char *v)
{
    train_opts *o = ctx;
    static const char *const modes[] = {"off", "on", "auto"};
    int tmp = 0, rc = cli_feature_option(&o->audio, name, v);
    if (rc != 1)
        return rc;
    if (!strcmp(name, "--audio-features"))
        return o->audio_features = 1, 0;
    if (!strcmp(name, "--pitch")) {
        o->model_flags++, o->model_flag = name;
        return o->cfg.pitch = 1, 0;
    }
    if (!strcmp(name, "--normalize")) {
        o->model_flags++, o->model_flag = name;
        return o->normalize = v, 0;
    }
    if (!strcmp(name, "--crop")) {
        o->model_flags++, o->model_flag = name;
        return cli_int(name, v, 1, 1 << 24, &o->crop);
    }
    rc = cli_model_option(&o->cfg, &o->model_given, name, v);
    if (rc != 1) {
        o->model_flags++;
        o->model_flag = name;
        if (!strcmp(name, "--frame-dim"))
            o->frame_dim_given = 1;
        return rc;
    }
    double d = 0;
    if (!strcmp(name, "--epochs"))
        return cli_int(name, v, 1, 1000000000, &o->epochs);
    if (!strcmp(name, "--batch")) {
        o->model_flags++, o->model_flag = name;
        return cli_int(name, v, 1, 1 << 20, &o->cfg.batch);
    }
    if (!strcmp(name, "--window")) {
        o->model_flags++, o->model_flag = name;
        return cli_int(name, v, 1, 1 << 24, &o->cfg.window);
    }
    if (!strcmp(name, "--lr") || !strcmp(name, "--clip-norm")) {
        o->model_flags++, o->model_flag = name;
        int lr = !strcmp(name, "--lr");
        rc = cli_double(name, v, lr ? 1e-30 : 0.0, 1e30, &d);
        if (lr && !rc && !(d > 0))
            rc = cli_fail(EXIT_USAGE, "--lr must be > 0, got '%s'", v);
        if (lr)
            o->cfg.learning_rate = (float)d;
        else
            o->cfg.clip_norm = (float)d;
        return rc;
    }
    if (!strcmp(name, "--warmup") || !strcmp(name, "--decay-steps")) {
        o->model_flags++, o->model_flag = name;
        return cli_int(name, v, 0, INT_MAX,
                       name[2] == 'w' ? &o->cfg.lr_warmup
                                      : &o->cfg.lr_decay_steps);
    }
    if (!strcmp(name, "--rate-lambda")) {
        o->model_flags++, o->model_flag = name;
        o->rate_lambda_given = 1;
        rc = cli_double(name, v, 0.0, 1e30, &d);
        o->cfg.rate_lambda = (float)d;
        return rc;
    }
    if (!strcmp(name, "--lr-floor")) {
        o->model_flags++, o->model_flag = name;
        rc = cli_double(name, v, 0.0, 1.0, &d);
        o->cfg.lr_floor = (float)d;
        return rc;
    }
    if (!strcmp(name, "--feedback")) {
        o->model_flags++, o->model_flag = name;
        rc = cli_choice(name, v, frae_feedback_names,
                        FRAE_NAME_COUNT(frae_feedback_names), &tmp);
        o->cfg.feedback = (frae_feedback)tmp;
        return rc;
    }
    if (!strcmp(name, "--isa")) {
        rc = cli_choice(name, v, frae_isa_names,
                        FRAE_NAME_COUNT(frae_isa_names), &tmp);
        o->cfg.isa = (frae_isa)tmp;
        return rc;
    }
    if (!strcmp(name, "--threads")) {
        o->threads_given = 1;
        return cli_int(name, v, 1, 1024, &o->cfg.threads);
    }
    if (!strcmp(name, "--replicas"))
        return cli_int(name, v, 1, 256, &o->replicas);
    if (!strcmp(name, "--dist-timeout"))
        return cli_double(name, v, 0.1, 1e7, &o->dist_timeout);
    if (!strcmp(name, "--val-split")) {
        rc = cli_double(name, v, 0.0, 0.99, &o->val_split);
        return rc;
    }
    if (!strcmp(name, "--val-data"))
        return push(&o->val, &o->n_val, v);
    if (!strcmp(name, "--targets"))
        return push(&o->targets, &o->n_targets, v);
    if (!strcmp(name, "--val-targets"))
        return push(&o->val_targets, &o->n_val_targets, v);
    if (!strcmp(name, "--patience"))
        return cli_int(name, v, 0, 1000000000, &o->patience);
    if ((!strcmp(name, "--save") || !strcmp(name, "--save-best")) &&
        !cli_output_seekable(v))
        return cli_fail(EXIT_USAGE,
                        "%s %s: a checkpoint is saved at every epoch, each "
                        "replacing the last, so it goes to a file",
                        name, v);
    if (!strcmp(name, "--save"))
        return o->save = v, 0;
    if (!strcmp(name, "--save-best"))
        return o->save_best = v, 0;
    if (!strcmp(name, "--resume"))
        return o->resume = v, 0;
    if (!strcmp(name, "--log-csv"))
        return o->log_csv = cli_output_path(v), 0;
    if (!strcmp(name, "--progress")) {
        rc = cli_choice(name, v, modes, 3, &tmp);
        o->progress = tmp == 2 ? -1 : tmp;
        return rc;
    }
    if (!strcmp(name, "--sequences"))
        return cli_int(name, v, 1, 1 << 30, &o->sequences);
    if (!strcmp(name, "--frames"))
        return cli_int(name, v, 1, 1 << 30, &o->frames);
    if (!strcmp(name, "--data-seed"))
        return cli_long(name, v, 0, 0x7fffffffffffffffL, &o->data_seed);
    return cli_fail(EXIT_USAGE, "unknown option '%s'", name);
}

static int train_on_pos(void *ctx, const char *arg)
{
    train_opts *o = ctx;
    return push(&o->data, &o->n_data, arg);
}

/* ---- helpers ------------------------------------------------------------ */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void shuffle(int32_t *a, long n, uint64_t *rng)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(frae_rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* One batch of sequences, window by window: trains (train) or evaluates.
 * With replicas, the batch is the global one: each replica runs its slice
 * of it (one row of padding if it has none), for as many windows as the
 * longest sequence of the whole batch needs, so every replica makes the
 * same calls.  Returns 0, -1 if the loss went non-finite (this replica's;
 * the caller agrees on it), or EXIT_FAILED after the data could not be
 * read (by this replica, which said why, or by another). */
typedef struct {
    frae_model *m;
    cli_dist *dist;
    const cli_dataset *ds;
    float *win;  /* [B][W][D], B this replica's rows */
    int *valid;  /* [B] */
    const cli_dataset *tds; /* the targets, paired with ds (NULL: none) */
    float *twin; /* their window, like win */
    /* crops (training with --crop): ids index these; else sequences */
    const int32_t *crop_seq, *crop_start;
    int crop;
} batch_runner;

/* The frames entry id of a batch stands for: a sequence, or a crop. */
static void span_of(const batch_runner *r, int32_t id, long *seq, long *start,
                    long *len)
{
    if (!r->crop_seq) {
        *seq = id, *start = 0, *len = r->ds->seqs[id].frames;
        return;
    }
    *seq = r->crop_seq[id], *start = r->crop_start[id];
    long left = r->ds->seqs[*seq].frames - *start;
    *len = left < r->crop ? left : r->crop;
}

static int run_batch(batch_runner *r, const int32_t *seqs, int nb, int train,
                     frae_stats *sum)
{
    const frae_config *c = frae_get_config(r->m);
    const int W = c->window, D = c->frame_dim;
    long longest = 0, seq, start, len, lo;
    for (int b = 0; b < nb; b++) {
        span_of(r, seqs[b], &seq, &start, &len);
        longest = len > longest ? len : longest;
    }
    const int mine = cli_dist_slice(r->dist, nb, &lo);
    const int rows = mine > 0 ? mine : 1;
    const int32_t *own = seqs + lo;
    int bad = 0;
    frae_reset(r->m);
    for (long w0 = 0; w0 < longest; w0 += W) {
        int nt = longest - w0 < W ? (int)(longest - w0) : W;
        int failed = 0;
        for (int b = 0; b < rows && !failed; b++) {
            long have = 0;
            float *dst = r->win + (size_t)b * nt * D;
            float *tdst = r->tds ? r->twin + (size_t)b * nt * D : NULL;
            if (b < mine) {
                span_of(r, own[b], &seq, &start, &len);
                have = len - w0 < 0 ? 0 : len - w0 > nt ? nt : len - w0;
                if (have > 0 && cli_fault(r->dist, "read"))
                    failed = cli_fail(EXIT_FAILED, "%s: sequence %ld: cannot "
                                      "read its frames (injected fault)",
                                      r->ds->seqs[seq].file < 0
                                          ? "built-in data"
                                          : r->ds->names[r->ds->seqs[seq].file],
                                      r->ds->seqs[seq].index);
                else if (have > 0 &&
                         (cli_dataset_read(r->ds, seq, start + w0, have, dst) ||
                          (tdst && cli_dataset_read(r->tds, seq, start + w0,
                                                    have, tdst))))
                    failed = EXIT_FAILED;
            }
            memset(dst + (size_t)have * D, 0,
                   sizeof(float) * (size_t)(nt - have) * D);
            if (tdst)
                memset(tdst + (size_t)have * D, 0,
                       sizeof(float) * (size_t)(nt - have) * D);
            r->valid[b] = (int)have;
        }
        /* a replica that could not read stops them all, here */
        if (r->dist->size > 1 ? cli_dist_any(r->dist, failed) : failed)
            return EXIT_FAILED;
        frae_stats st;
        const float *tw = r->tds ? r->twin : NULL;
        int rc = train ? frae_train_frames_targets(r->m, r->win, tw, rows, nt,
                                                   r->valid, &st)
                       : frae_eval_frames_targets(r->m, r->win, tw, rows, nt,
                                                  r->valid, &st);
        if (rc)
            return EXIT_FAILED; /* the replicas' sums failed (they said) */
        /* a diverged batch runs to its end, so replicas stay in step */
        if (!isfinite(st.sse) || (train && !isfinite(st.grad_norm)))
            bad = 1;
        sum->sse += st.sse, sum->sae += st.sae;
        sum->rate_bits += st.rate_bits;
        sum->values += st.values, sum->frames += st.frames;
    }
    return bad ? -1 : 0;
}

/* A batch's sums (this replica's in, the replicas' out), with whether any
 * replica diverged (-1) or was asked to stop (*stop). */
static int agree_sums(cli_dist *d, frae_stats *sum, int rc, int *stop)
{
    double v[7] = {sum->sse,         sum->sae,
                   sum->rate_bits,   (double)sum->values,
                   (double)sum->frames, rc == -1 ? 1.0 : 0.0,
                   stop && stop_requested ? 1.0 : 0.0};
    if (cli_dist_sum(d, v, 7))
        return EXIT_FAILED;
    sum->sse = v[0], sum->sae = v[1], sum->rate_bits = v[2];
    sum->values = (long)v[3], sum->frames = (long)v[4];
    if (stop)
        *stop = v[6] > 0;
    return v[5] > 0 ? -1 : 0;
}

/* Batches of B (global) sequences; with replicas, the sums of them all. */
static int evaluate(batch_runner *r, const int32_t *seqs, long n, int B,
                    frae_stats *out)
{
    memset(out, 0, sizeof *out);
    int bad = 0;
    for (long i = 0; i < n; i += B) {
        int nb = n - i < B ? (int)(n - i) : B;
        int rc = run_batch(r, seqs + i, nb, 0, out);
        if (rc == EXIT_FAILED)
            return rc;
        bad |= rc == -1;
    }
    return agree_sums(r->dist, out, bad ? -1 : 0, NULL);
}

/* ---- checkpoints ----------------------------------------------------------- */

typedef struct {
    const train_opts *o;
    const cli_dataset *data;
    char summary[128];
    const frae_features *features; /* recorded in checkpoints, or NULL */
} run_info;

static int save_checkpoint(frae_model *m, const char *path,
                           const train_state *s, const run_info *ri,
                           int with_state)
{
    char v[18][160], fv[10][64];
    frae_meta meta[32];
    int n = 0;
#define M(key, ...)                                                            \
    do {                                                                       \
        snprintf(v[n], sizeof v[n], __VA_ARGS__);                              \
        meta[n] = (frae_meta){key, v[n]};                                      \
        n++;                                                                   \
    } while (0)
    if (with_state) {
        M("train.epoch", "%d", s->epoch);
        M("train.batch", "%ld", s->batch);
        M("train.rng", "%016llx", (unsigned long long)s->rng);
        M("train.epoch_sse", "%.17g", s->sse);
        M("train.epoch_sae", "%.17g", s->sae);
        M("train.epoch_bits", "%.17g", s->bits);
        M("train.epoch_values", "%ld", s->values);
        M("train.epoch_frames", "%ld", s->frames);
        M("train.best", "%.17g", s->best);
        M("train.best_epoch", "%d", s->best_epoch);
        M("train.bad_epochs", "%d", s->bad_epochs);
        M("train.epochs", "%d", ri->o->epochs);
        M("train.patience", "%d", ri->o->patience);
        M("train.val_split", "%.17g", ri->o->val_split);
        M("train.data", "%s", ri->summary);
        /* frae.batch is each replica's; the run's batch is their sum */
        M("train.global_batch", "%d", ri->o->cfg.batch);
        if (ri->o->crop)
            M("train.crop", "%d", ri->o->crop);
    }
#undef M
    if (ri->features)
        n += cli_features_meta(ri->features, fv, meta + n);
    frae_i32_array order[3] = {{"train.order", s->order, s->n_order},
                               {"train.crop_seq", s->crop_seq, s->n_order},
                               {"train.crop_start", s->crop_start, s->n_order}};
    char err[512];
    if (frae_save(m, path, with_state, meta, n, order,
                  with_state ? (ri->o->crop ? 3 : 1) : 0, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", cli_cmd, err);
        return -1;
    }
    return 0;
}

/* ---- the training state of a checkpoint, trusted only once checked ------- */

/* One line naming the field, and EXIT_USAGE. */
static int bad_state(const char *path, const char *key, const char *v,
                     const char *why)
{
    return cli_fail(EXIT_USAGE, "%s: training state '%s' = '%s' %s", path,
                    key, v ? v : "(missing)", why);
}

static int state_long(const frae_checkpoint *ck, const char *path,
                      const char *key, long lo, long hi, long *out)
{
    const char *v = frae_checkpoint_meta(ck, key);
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *v == ' ' || *end || errno || x < lo || x > hi) {
        char why[96];
        snprintf(why, sizeof why, "is not an integer in %ld..%ld", lo, hi);
        return bad_state(path, key, v, why);
    }
    *out = x;
    return 0;
}

/* A finite number >= 0 (or +inf where inf_ok). */
static int state_double(const frae_checkpoint *ck, const char *path,
                        const char *key, double hi, int inf_ok, double *out)
{
    const char *v = frae_checkpoint_meta(ck, key);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(x >= 0) || (x > hi && !(inf_ok && isinf(x))))
        return bad_state(path, key, v, "is not a number in range");
    *out = x;
    return 0;
}

static int load_state(const frae_checkpoint *ck, const char *path,
                      train_state *s, train_opts *o, char *summary,
                      size_t sumcap)
{
    if (!frae_checkpoint_meta(ck, "train.epoch") ||
        !frae_checkpoint_has_optimizer(ck))
        return cli_fail(EXIT_USAGE,
                        "%s: no training state to resume (a model saved "
                        "without it, e.g. by --save-best or import)",
                        path);
    const long big = 1000000000L;
    long epoch = 0, batch = 0, values = 0, frames = 0, best_epoch = 0,
         bad = 0, epochs = 0, patience = 0;
    double sse = 0, sae = 0, best = 0, split = 0;
    if (state_long(ck, path, "train.epochs", 1, big, &epochs) ||
        state_long(ck, path, "train.epoch", 0, epochs, &epoch) ||
        state_long(ck, path, "train.batch", 0, INT32_MAX, &batch) ||
        state_long(ck, path, "train.epoch_values", 0, LONG_MAX, &values) ||
        state_long(ck, path, "train.epoch_frames", 0, LONG_MAX, &frames) ||
        state_long(ck, path, "train.best_epoch", 0, epoch, &best_epoch) ||
        state_long(ck, path, "train.bad_epochs", 0, epoch, &bad) ||
        state_long(ck, path, "train.patience", 0, big, &patience) ||
        state_double(ck, path, "train.epoch_sse", DBL_MAX, 0, &sse) ||
        state_double(ck, path, "train.epoch_sae", DBL_MAX, 0, &sae) ||
        state_double(ck, path, "train.best", DBL_MAX, 1, &best) ||
        state_double(ck, path, "train.val_split", 0.99, 0, &split))
        return EXIT_USAGE;
    /* absent (before data-parallel training): the model's batch */
    if (frae_checkpoint_meta(ck, "train.global_batch")) {
        long gb;
        if (state_long(ck, path, "train.global_batch", 1, 1 << 20, &gb))
            return EXIT_USAGE;
        o->cfg.batch = (int)gb;
    }
    /* absent (before priors): no bits */
    if (frae_checkpoint_meta(ck, "train.epoch_bits") &&
        state_double(ck, path, "train.epoch_bits", DBL_MAX, 0, &s->bits))
        return EXIT_USAGE;
    const char *rng = frae_checkpoint_meta(ck, "train.rng");
    char *end = NULL;
    s->rng = rng ? strtoull(rng, &end, 16) : 0;
    if (!rng || strlen(rng) != 16 || *end || strspn(rng, "0123456789abcdef") != 16)
        return bad_state(path, "train.rng", rng, "is not 16 hex digits");
    const char *data = frae_checkpoint_meta(ck, "train.data");
    if (!data || strlen(data) >= sumcap)
        return bad_state(path, "train.data", data, "is missing or too long");
    s->epoch = (int)epoch;
    s->batch = batch;
    s->sse = sse, s->sae = sae;
    s->values = values, s->frames = frames;
    s->best = best, s->best_epoch = (int)best_epoch, s->bad_epochs = (int)bad;
    o->epochs_resumed = o->epochs == 0; /* the checkpoint's total */
    if (o->epochs == 0)
        o->epochs = (int)epochs;
    if (o->patience < 0)
        o->patience = (int)patience;
    if (o->val_split < 0)
        o->val_split = split;
    snprintf(summary, sumcap, "%s", data);
    s->n_order = frae_checkpoint_i32(ck, "train.order", NULL, 0);
    if (s->n_order < 1 || s->n_order > INT32_MAX)
        return cli_fail(EXIT_USAGE,
                        "%s: training state lacks its data order "
                        "(train.order)",
                        path);
    s->order = malloc(sizeof(int32_t) * (size_t)(s->n_order + 1));
    if (!s->order)
        return cli_fail(EXIT_FAILED, "out of memory");
    frae_checkpoint_i32(ck, "train.order", s->order, s->n_order);
    if (frae_checkpoint_meta(ck, "train.crop")) {
        long crop;
        if (state_long(ck, path, "train.crop", 1, 1 << 24, &crop))
            return EXIT_USAGE;
        o->crop = (int)crop;
        static const char *const keys[2] = {"train.crop_seq",
                                            "train.crop_start"};
        int32_t **dst[2] = {&s->crop_seq, &s->crop_start};
        for (int i = 0; i < 2; i++) {
            if (frae_checkpoint_i32(ck, keys[i], NULL, 0) != s->n_order)
                return cli_fail(EXIT_USAGE,
                                "%s: training state '%s' should have %ld "
                                "entries, one per crop of train.order",
                                path, keys[i], s->n_order);
            *dst[i] = malloc(sizeof(int32_t) * (size_t)(s->n_order + 1));
            if (!*dst[i])
                return cli_fail(EXIT_FAILED, "out of memory");
            frae_checkpoint_i32(ck, keys[i], *dst[i], s->n_order);
        }
    }
    return 0;
}

/* The state against the data it resumes on: the order is a permutation of
 * the training set, the batch inside the epoch, the running sums those of
 * at most the frames the epoch has. */
static int check_state(const train_state *s, const char *path,
                       const int32_t *train_set, long n_train, long n_all,
                       long n_batches, long total_frames, int dim)
{
    unsigned char *seen = calloc((size_t)n_all, 1);
    if (!seen)
        return cli_fail(EXIT_FAILED, "out of memory");
    for (long i = 0; i < n_train; i++)
        seen[train_set[i]] = 1; /* 1: may appear in the order */
    for (long i = 0; i < s->n_order; i++) {
        int32_t v = s->order[i];
        if (v < 0 || v >= n_all || seen[v] != 1) {
            const char *why = v < 0 || v >= n_all ? "out of range"
                              : seen[v] == 2      ? "repeated"
                                                  : "a validation sequence";
            free(seen);
            return cli_fail(EXIT_USAGE,
                            "%s: training state 'train.order' entry %ld = %d "
                            "is %s",
                            path, i, v, why);
        }
        seen[v] = 2;
    }
    free(seen);
    if (s->batch > n_batches) /* n_batches: stopped after the last one */
        return cli_fail(EXIT_USAGE,
                        "%s: training state 'train.batch' = %ld, but an "
                        "epoch has %ld batches",
                        path, s->batch, n_batches);
    if (s->frames > total_frames || s->values != s->frames * (long)dim)
        return cli_fail(EXIT_USAGE,
                        "%s: training state counts %ld frames and %ld values "
                        "in this epoch; the data has %ld frames of %d values",
                        path, s->frames, s->values, total_frames, dim);
    return 0;
}

/* ---- progress and logs ------------------------------------------------------ */

static void show_progress(int epoch, int epochs, long done, long total,
                          const train_state *s, double elapsed)
{
    const int width = 24;
    int filled = total ? (int)(width * done / total) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '=' : i == filled ? '>' : '.';
    bar[width] = 0;
    double fps = elapsed > 0 ? s->frames / elapsed : 0;
    double eta = done ? elapsed / done * (total - done) : 0;
    cli_printf("\repoch %d/%d [%s] %ld/%ld  loss %.6f  %.0f frames/s  ETA %.0fs"
           "\033[K",
           epoch, epochs, bar, done, total,
           s->values ? s->sse / s->values : 0.0, fps, eta);
    fflush(cli_report ? cli_report : stdout);
}

/* The log, appended to: a file, or a FIFO that a process reads (refused,
 * not waited on, without one: O_NONBLOCK), "-" standard output. */
static FILE *open_csv(const char *path, int prior)
{
    struct stat sb;
    int fresh = stat(path, &sb) || sb.st_size == 0;
    int fd = !strcmp(path, "-")
                 ? dup(STDOUT_FILENO)
                 : open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK |
                                  O_CLOEXEC, 0666);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!f && fd >= 0)
        close(fd);
    if (f && fresh)
        fprintf(f, "epoch,loss,mae,val_loss,val_mae,frames_per_s,seconds%s\n",
                prior ? ",rate,val_rate" : "");
    return f;
}

/* ---- the run, step by step ------------------------------------------------ */

/* Everything one run owns; train_run_free releases it. */
typedef struct {
    train_opts o;
    train_state s;
    cli_dataset data, val;
    cli_dataset tgt, val_tgt;  /* --targets, --val-targets */
    const cli_dataset *val_ds; /* val, or data for a split */
    const cli_dataset *val_tds; /* their targets, or NULL */
    frae_checkpoint *ck;       /* the checkpoint resumed, until restored */
    char resumed_data[128];    /* the data summary it was trained on */
    int uses_audio;
    int32_t *perm;    /* sequence indices: the training set, then a split's
                         validation sequences */
    int32_t *val_seqs;
    long n_all, n_train, n_val;
    const char *norm; /* a new model's normalization: on, off or a .npy */
    frae_model *m;
    batch_runner run, vrun;
    FILE *csv;
    int save_on, bar;
    run_info ri;
    cli_dist *dist; /* this replica among those training together */
} train_run;

static void train_run_init(train_run *r)
{
    memset(r, 0, sizeof *r);
    train_opts *o = &r->o;
    frae_config_default(&o->cfg);
    o->cfg.batch = 8;
    o->epochs = 0;     /* 0: 10, or the checkpoint's */
    o->patience = -1;  /* -1: 0, or the checkpoint's */
    o->val_split = -1; /* -1: 0, or the checkpoint's */
    o->progress = -1;
    o->sequences = 64;
    o->frames = 100;
    o->data_seed = 7;
    o->save = "frae-checkpoint.safetensors";
    o->replicas = 1;
    o->dist_timeout = 600;
    cli_audio_default(&o->audio);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->cfg.threads = cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
    r->s.best = INFINITY;
}

static void train_run_free(train_run *r)
{
    if (r->csv)
        fclose(r->csv);
    free(r->run.win);
    free(r->run.valid);
    free(r->s.order);
    free(r->s.crop_seq);
    free(r->s.crop_start);
    free(r->perm);
    free(r->val_seqs);
    cli_dataset_free(&r->data);
    cli_dataset_free(&r->val);
    cli_dataset_free(&r->tgt);
    cli_dataset_free(&r->val_tgt);
    free(r->run.twin);
    frae_checkpoint_close(r->ck);
    frae_destroy(r->m);
}

/* --resume: the model, its settings, the features and where training
 * stood come from the checkpoint. */
static int resume_from_checkpoint(train_run *r)
{
    train_opts *o = &r->o;
    if (o->model_flags)
        return cli_fail(EXIT_USAGE,
                        "%s cannot be combined with --resume: the model and "
                        "its training settings come from the checkpoint",
                        o->model_flag);
    if (o->audio.given)
        return cli_fail(EXIT_USAGE,
                        "feature options cannot be combined with --resume: "
                        "the features come from the checkpoint");
    const frae_isa isa = o->cfg.isa;
    const int threads = o->cfg.threads;
    char err[512];
    r->ck = frae_checkpoint_open(o->resume, err, sizeof err);
    if (!r->ck || frae_checkpoint_config(r->ck, &o->cfg, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    if (o->cfg.weights == FRAE_WEIGHTS_BF16)
        return cli_fail(EXIT_USAGE,
                        "%s: bf16 weights are for inference only; 'frae "
                        "convert --weights f32' makes a model to train from",
                        o->resume);
    int status = load_state(r->ck, o->resume, &r->s, o, r->resumed_data,
                            sizeof r->resumed_data);
    if (status)
        return status;
    o->cfg.isa = isa; /* the machine's, not the checkpoint's */
    o->cfg.threads = threads;
    int have = cli_model_features(o->resume, &o->audio.f);
    if (have < 0)
        return EXIT_USAGE;
    o->audio_features = have;
    o->audio.f.pitch = 0; /* the network trains on the envelope alone */
    return 0;
}

/* Audio anywhere (files, feature options, a checkpoint's features): the
 * frame dimension is the number of mel bands. */
static int settle_features(train_run *r)
{
    train_opts *o = &r->o;
    r->uses_audio = o->audio_features || o->audio.given;
    for (int i = 0; i < o->n_data; i++)
        r->uses_audio |= cli_is_audio(o->data[i]);
    for (int i = 0; i < o->n_val; i++)
        r->uses_audio |= cli_is_audio(o->val[i]);
    if (r->uses_audio) {
        char err[256];
        if (frae_features_check(&o->audio.f, err, sizeof err))
            return cli_fail(EXIT_USAGE, "bad audio features: %s", err);
        if (o->frame_dim_given && o->cfg.frame_dim != o->audio.f.n_mels)
            return cli_fail(EXIT_USAGE,
                            "--frame-dim %d but --mels %d: audio features "
                            "have one value per mel band",
                            o->cfg.frame_dim, o->audio.f.n_mels);
        o->cfg.frame_dim = o->audio.f.n_mels;
        o->frame_dim_given = 1;
    }
    if (o->epochs == 0)
        o->epochs = 10;
    if (o->patience < 0)
        o->patience = 0;
    if (o->val_split < 0)
        o->val_split = 0;
    if (o->val_split > 0 && o->n_val)
        return cli_fail(EXIT_USAGE, "use --val-split or --val-data, not both");
    return 0;
}

/* Sizes checked before any data is built or read: the model's memory,
 * and the built-in data's with it.  Before the data is loaded only its
 * frame dimension may be known (files: not even that), so a model is
 * checked at the least batch and window it could be given (its weights,
 * gradients and moments, which no cap changes), and the built-in data,
 * whose sizes are the options', exactly as make_model will make it. */
static int check_sizes_early(const train_run *r)
{
    const train_opts *o = &r->o;
    if (!o->frame_dim_given && o->n_data)
        return 0; /* the files decide D */
    frae_config c = o->cfg;
    c.training = 1;
    c.batch = c.window = 1;
    size_t data_bytes = 0;
    if (!o->n_data) {
        /* as make_model caps them; the batch is each replica's share */
        const long seqs = o->sequences;
        c.batch = (int)((o->cfg.batch < seqs ? o->cfg.batch : seqs) +
                        r->dist->size - 1) / r->dist->size;
        c.window = o->cfg.window < o->frames ? o->cfg.window : o->frames;
        data_bytes = (size_t)o->sequences * (size_t)o->frames *
                     (size_t)o->cfg.frame_dim * sizeof(float);
    }
    char err[512];
    size_t model_bytes;
    if (frae_bytes_needed(&c, &model_bytes, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double machine = pages > 0 && page > 0 ? (double)pages * page : 0;
    if (data_bytes && machine > 0 &&
        (double)data_bytes + (double)model_bytes >= machine)
        return cli_fail(EXIT_USAGE,
                        "the built-in data (%d x %d frames of %d values) "
                        "needs %.1f GiB and the model %.1f GiB, more than "
                        "this machine's %.1f GiB",
                        o->sequences, o->frames, o->cfg.frame_dim,
                        (double)data_bytes / 1073741824.0,
                        (double)model_bytes / 1073741824.0,
                        machine / 1073741824.0);
    return 0;
}

/* Targets pair with inputs sequence by sequence: the same count, and
 * each pair the same length (the frame dimension is checked by the load). */
static int check_pairs(const cli_dataset *in, const cli_dataset *tg,
                       const char *what)
{
    if (in->n_seqs != tg->n_seqs)
        return cli_fail(EXIT_USAGE,
                        "%s: %ld input sequences but %ld target sequences: "
                        "each input needs its target",
                        what, in->n_seqs, tg->n_seqs);
    for (long i = 0; i < in->n_seqs; i++) {
        const cli_seq *a = &in->seqs[i], *b = &tg->seqs[i];
        const char *na = a->file < 0 ? "built-in" : in->names[a->file];
        const char *nb = b->file < 0 ? "built-in" : tg->names[b->file];
        if (a->frames != b->frames)
            return cli_fail(EXIT_USAGE,
                            "%s: pair %ld (%s sequence %ld, %s sequence %ld) "
                            "has %ld input frames and %ld target frames",
                            what, i, na, a->index, nb, b->index, a->frames,
                            b->frames);
    }
    return 0;
}

/* --targets and --val-targets: loaded like the data (same frame
 * dimension), paired with it, and what the model was made for. */
static int load_targets(train_run *r)
{
    train_opts *o = &r->o;
    if (o->resume && o->cfg.targets && !o->n_targets)
        return cli_fail(EXIT_USAGE,
                        "%s was trained toward targets: give --targets "
                        "again to resume",
                        o->resume);
    if (o->resume && !o->cfg.targets && o->n_targets)
        return cli_fail(EXIT_USAGE,
                        "%s was trained to rebuild its inputs: --targets "
                        "cannot be added when resuming",
                        o->resume);
    if (o->n_val_targets && !o->n_targets)
        return cli_fail(EXIT_USAGE, "--val-targets needs --targets");
    if (!o->n_targets)
        return 0;
    if (!o->n_data)
        return cli_fail(EXIT_USAGE,
                        "--targets needs training data files to pair with");
    if (o->n_val && !o->n_val_targets)
        return cli_fail(EXIT_USAGE,
                        "--val-data with --targets needs --val-targets");
    if (o->n_val_targets && !o->n_val)
        return cli_fail(EXIT_USAGE, "--val-targets needs --val-data");
    o->cfg.targets = 1;
    int status = cli_dataset_load(&r->tgt, o->targets, o->n_targets,
                                  r->data.dim, &o->audio, r->dist);
    if (!status)
        status = check_pairs(&r->data, &r->tgt, "--targets");
    if (!status && o->n_val_targets)
        status = cli_dataset_load(&r->val_tgt, o->val_targets,
                                  o->n_val_targets, r->data.dim, &o->audio,
                                  r->dist);
    if (!status && o->n_val_targets)
        status = check_pairs(&r->val, &r->val_tgt, "--val-targets");
    return status;
}

/* The training data (files or built-in) and any validation files; when
 * resuming, the same data as before. */
static int load_data(train_run *r)
{
    train_opts *o = &r->o;
    int status;
    if (o->n_data) {
        status = cli_dataset_load(&r->data, o->data, o->n_data,
                                  o->frame_dim_given || o->resume
                                      ? o->cfg.frame_dim
                                      : 0,
                                  &o->audio, r->dist);
        if (!status)
            o->cfg.frame_dim = r->data.dim;
    } else {
        status = cli_dataset_builtin(&r->data, o->sequences, o->frames,
                                     o->cfg.frame_dim, (uint64_t)o->data_seed);
    }
    if (!status && o->n_val)
        status = cli_dataset_load(&r->val, o->val, o->n_val, o->cfg.frame_dim,
                                  &o->audio, r->dist);
    if (!status)
        status = load_targets(r);
    if (status)
        return status;
    if ((r->data.has_audio || r->val.has_audio) && !r->uses_audio) {
        /* audio found inside a directory */
        r->uses_audio = 1;
        if (r->data.dim != o->audio.f.n_mels)
            return cli_fail(EXIT_USAGE,
                            "audio features have %d mels, the other data %d "
                            "values per frame",
                            o->audio.f.n_mels, r->data.dim);
    }
    if (o->cfg.pitch && !r->uses_audio && !o->resume)
        return cli_fail(EXIT_USAGE,
                        "--pitch: pitch comes from audio; train on audio "
                        "files or give --audio-features");
    r->ri = (run_info){o, &r->data, "", r->uses_audio ? &o->audio.f : NULL};
    snprintf(r->ri.summary, sizeof r->ri.summary,
             "%ld sequences, %ld frames, dim %d%s", r->data.n_seqs,
             r->data.total_frames, r->data.dim,
             o->n_targets ? ", with targets" : "");
    if (o->resume && strcmp(r->resumed_data, r->ri.summary))
        return cli_fail(EXIT_USAGE,
                        "%s was trained on %s; this data has %s: give the "
                        "same data to resume",
                        o->resume, r->resumed_data, r->ri.summary);
    return 0;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The training set and the validation sequences: a seeded split of the
 * data (the same every run), or other files.  A new run's epoch order
 * starts as the training set; a resumed one's must be a permutation of it. */
/* --crop: room for the most crops an epoch can cut, and on resume the
 * checkpoint's crops checked against the data: every crop inside a
 * training sequence, the order a permutation of them. */
static int settle_crops(train_run *r)
{
    train_state *s = &r->s;
    const train_opts *o = &r->o;
    long cap = 0;
    for (long i = 0; i < r->n_train; i++) {
        long len = r->data.seqs[r->perm[i]].frames;
        cap += len <= o->crop ? 1 : len / o->crop;
    }
    if (cap > INT32_MAX)
        return cli_fail(EXIT_USAGE, "--crop %d cuts more than 2^31 crops",
                        o->crop);
    if (o->resume && s->n_order > cap)
        return cli_fail(EXIT_USAGE,
                        "%s: training state has %ld crops; this data cuts "
                        "at most %ld",
                        o->resume, s->n_order, cap);
    int32_t **arr[3] = {&s->order, &s->crop_seq, &s->crop_start};
    for (int i = 0; i < 3; i++) {
        int32_t *p = realloc(*arr[i], sizeof(int32_t) * (size_t)(cap + 1));
        if (!p)
            return cli_fail(EXIT_FAILED, "out of memory");
        *arr[i] = p;
    }
    s->crop_cap = cap;
    if (!o->resume) {
        s->n_order = 0; /* cut when the first epoch starts */
        return 0;
    }
    unsigned char *in_train = calloc((size_t)r->n_all, 1);
    unsigned char *seen = calloc((size_t)s->n_order, 1);
    if (!in_train || !seen) {
        free(in_train), free(seen);
        return cli_fail(EXIT_FAILED, "out of memory");
    }
    for (long i = 0; i < r->n_train; i++)
        in_train[r->perm[i]] = 1;
    int status = 0;
    for (long i = 0; i < s->n_order && !status; i++) {
        int32_t q = s->crop_seq[i], at = s->crop_start[i], v = s->order[i];
        if (q < 0 || q >= r->n_all || !in_train[q])
            status = cli_fail(EXIT_USAGE,
                              "%s: training state 'train.crop_seq' entry %ld "
                              "= %d is not a training sequence",
                              o->resume, i, q);
        else if (at < 0 || at >= r->data.seqs[q].frames)
            status = cli_fail(EXIT_USAGE,
                              "%s: training state 'train.crop_start' entry "
                              "%ld = %d is outside its sequence (%ld frames)",
                              o->resume, i, at, r->data.seqs[q].frames);
        else if (v < 0 || v >= s->n_order || seen[v])
            status = cli_fail(EXIT_USAGE,
                              "%s: training state 'train.order' entry %ld = "
                              "%d is %s",
                              o->resume, i, v,
                              v < 0 || v >= s->n_order ? "out of range"
                                                       : "repeated");
        else
            seen[v] = 1;
    }
    free(in_train), free(seen);
    const long n_batches = (s->n_order + o->cfg.batch - 1) / o->cfg.batch;
    if (!status && s->batch > n_batches)
        status = cli_fail(EXIT_USAGE,
                          "%s: training state 'train.batch' = %ld, but the "
                          "epoch has %ld batches",
                          o->resume, s->batch, n_batches);
    if (!status && (s->frames > r->data.total_frames ||
                    s->values != s->frames * (long)r->data.dim))
        status = cli_fail(EXIT_USAGE,
                          "%s: training state counts %ld frames and %ld "
                          "values in this epoch; the data has %ld frames of "
                          "%d values",
                          o->resume, s->frames, s->values,
                          r->data.total_frames, r->data.dim);
    return status;
}

/* An epoch's crops: each training sequence (in file order) longer than N
 * is cut at a random offset (at most N - 1, and leaving one whole crop)
 * into N-frame crops; a shorter one is one crop.  The offsets come from the
 * shuffling RNG, so a resume repeats them. */
static void cut_crops(train_run *r)
{
    train_state *s = &r->s;
    const long N = r->o.crop;
    long n = 0;
    for (long i = 0; i < r->n_train; i++) {
        const int32_t q = r->perm[i];
        const long len = r->data.seqs[q].frames;
        long at = 0;
        if (len > N) {
            long span = len - N + 1 < N ? len - N + 1 : N;
            at = (long)(frae_rng_next(&s->rng) % (uint64_t)span);
        }
        do {
            s->crop_seq[n] = q, s->crop_start[n] = (int32_t)at;
            s->order[n] = (int32_t)n;
            n++;
            at += N;
        } while (at + N <= len);
    }
    s->n_order = n;
}

static int split_validation(train_run *r)
{
    train_opts *o = &r->o;
    r->n_all = r->data.n_seqs;
    long n_split = (long)(o->val_split * r->n_all + 0.5);
    if (o->val_split > 0 && (n_split < 1 || n_split >= r->n_all))
        return cli_fail(EXIT_USAGE,
                        "--val-split %g of %ld sequences leaves an empty "
                        "training or validation set",
                        o->val_split, r->n_all);
    r->perm = malloc(sizeof(int32_t) * (size_t)r->n_all);
    if (!r->perm)
        return cli_fail(EXIT_FAILED, "out of memory");
    for (long i = 0; i < r->n_all; i++)
        r->perm[i] = (int32_t)i;
    r->n_train = r->n_all;
    if (n_split) {
        uint64_t split_rng = o->cfg.seed ^ 0x5a17c0deull;
        shuffle(r->perm, r->n_all, &split_rng);
        r->n_train = r->n_all - n_split;
        /* the training set in file order before epoch shuffles */
        qsort(r->perm, (size_t)r->n_train, sizeof *r->perm, cmp_int32);
    }
    if (o->crop) {
        int status = settle_crops(r);
        if (status)
            return status;
    } else if (!o->resume) {
        r->s.n_order = r->n_train;
        r->s.order = malloc(sizeof(int32_t) * (size_t)(r->n_train + 1));
        if (!r->s.order)
            return cli_fail(EXIT_FAILED, "out of memory");
        memcpy(r->s.order, r->perm, sizeof(int32_t) * (size_t)r->n_train);
    } else if (r->s.n_order != r->n_train) {
        return cli_fail(EXIT_USAGE,
                        "%s: its data order has %ld sequences, the training "
                        "set has %ld",
                        o->resume, r->s.n_order, r->n_train);
    } else {
        int status = check_state(&r->s, o->resume, r->perm, r->n_train,
                                 r->n_all,
                                 (r->n_train + o->cfg.batch - 1) / o->cfg.batch,
                                 r->data.total_frames, r->data.dim);
        if (status)
            return status;
    }
    const int32_t *val_from = r->perm + r->n_train;
    r->val_ds = &r->data;
    r->val_tds = o->n_targets ? &r->tgt : NULL;
    r->n_val = n_split;
    if (o->n_val) {
        r->val_ds = &r->val;
        r->val_tds = o->n_val_targets ? &r->val_tgt : NULL;
        r->n_val = r->val.n_seqs;
        val_from = NULL; /* all of them, in order */
    }
    if (r->n_val) {
        r->val_seqs = malloc(sizeof(int32_t) * (size_t)r->n_val);
        if (!r->val_seqs)
            return cli_fail(EXIT_FAILED, "out of memory");
        for (long i = 0; i < r->n_val; i++)
            r->val_seqs[i] = val_from ? val_from[i] : (int32_t)i;
    }
    return 0;
}

/* The model's per-band statistics: over the training set in one pass
 * ("on"), or from a .npy of [2, D] (means, then stds). */
static int set_normalization(train_run *r, const char *how)
{
    const int D = r->o.cfg.frame_dim;
    float *stats = malloc(sizeof(float) * 2 * (size_t)D);
    double *acc = malloc(sizeof(double) * (2 * (size_t)D + 1));
    float *buf = malloc(sizeof(float) * 1024 * (size_t)D);
    int status = EXIT_OK;
    if (!stats || !acc || !buf) {
        status = cli_fail(EXIT_FAILED, "out of memory");
    } else if (!strcmp(how, "on")) {
        /* each replica sums its share of the sequences, then the sums
         * are added up across replicas (alone: all of them, in order) */
        frae_band_stats bs;
        frae_band_stats_begin(&bs, D, acc, acc + D);
        long lo, mine = cli_dist_slice(r->dist, r->n_train, &lo);
        for (long i = lo; i < lo + mine && !status; i++) {
            const cli_seq *q = &r->data.seqs[r->perm[i]];
            for (long t = 0; t < q->frames && !status; t += 1024) {
                long n = q->frames - t < 1024 ? q->frames - t : 1024;
                if (cli_dataset_read(&r->data, r->perm[i], t, n, buf))
                    status = EXIT_FAILED;
                else
                    frae_band_stats_add(&bs, buf, n, D);
            }
        }
        if (r->dist->size > 1) {
            if (cli_dist_any(r->dist, status != 0))
                status = EXIT_FAILED;
            acc[2 * (size_t)D] = bs.count;
            if (!status && cli_dist_sum(r->dist, acc, 2 * (size_t)D + 1))
                status = EXIT_FAILED;
            bs.count = acc[2 * (size_t)D];
        }
        if (!status && frae_band_stats_finish(&bs, stats, stats + D))
            status = cli_fail(EXIT_USAGE, "--normalize: no training frames");
    } else {
        status = cli_read_norm_stats(how, D, stats);
    }
    if (!status)
        status = cli_set_norm_stats(r->m, how, stats);
    free(stats), free(acc), free(buf);
    return status;
}

/* The longest sequence of a dataset (1 if empty). */
static long longest_sequence(const cli_dataset *ds)
{
    long longest = 1;
    for (long i = 0; i < ds->n_seqs; i++)
        longest = ds->seqs[i].frames > longest ? ds->seqs[i].frames : longest;
    return longest;
}

/* The model (from the checkpoint when resuming) and its window buffers.
 * No call ever gets more sequences than a set has, or more frames than its
 * longest sequence: capacity past that would change nothing but memory,
 * so a batch or window (from the command line or a checkpoint) is capped
 * there, and the results are the same. */
static int make_model(train_run *r)
{
    train_opts *o = &r->o;
    long most_seqs = r->n_train > r->n_val ? r->n_train : r->n_val;
    if (o->crop && r->s.crop_cap > most_seqs)
        most_seqs = r->s.crop_cap;
    long longest = longest_sequence(&r->data);
    if (longest_sequence(&r->val) > longest)
        longest = longest_sequence(&r->val);
    if (o->cfg.batch > most_seqs)
        o->cfg.batch = (int)most_seqs;
    if (o->cfg.window > longest)
        o->cfg.window = (int)longest;
    o->cfg.training = 1;
    if (!o->resume) {
        r->norm = o->normalize;
        if (!r->norm)
            r->norm = r->uses_audio ? "on" : "off";
        o->cfg.normalize = strcmp(r->norm, "off") != 0;
    }
    /* o->cfg.batch is the run's (global) batch; each replica's model has
     * room for its share of it */
    frae_config mine = o->cfg;
    mine.batch = (o->cfg.batch + r->dist->size - 1) / r->dist->size;
    char err[512];
    r->m = frae_create(&mine, err, sizeof err);
    if (!r->m || (r->ck && frae_checkpoint_restore(r->ck, r->m, 1, err,
                                                   sizeof err)))
        return cli_fail(EXIT_USAGE, "%s", err);
    frae_checkpoint_close(r->ck);
    r->ck = NULL;
    const int B = mine.batch, W = o->cfg.window, D = o->cfg.frame_dim;
    r->run = (batch_runner){r->m, r->dist, &r->data,
                            malloc(sizeof(float) * (size_t)B * W * D),
                            malloc(sizeof(int) * (size_t)B),
                            o->n_targets ? &r->tgt : NULL,
                            o->n_targets ? malloc(sizeof(float) * (size_t)B *
                                                  W * D)
                                         : NULL,
                            NULL, NULL, 0};
    if (o->n_targets && !r->run.twin)
        return cli_fail(EXIT_FAILED, "out of memory");
    r->vrun = r->run;
    r->vrun.ds = r->val_ds;
    r->vrun.tds = r->val_tds;
    if (o->crop) { /* training batches are crops; validation, sequences */
        r->run.crop_seq = r->s.crop_seq;
        r->run.crop_start = r->s.crop_start;
        r->run.crop = o->crop;
    }
    if (!r->run.win || !r->run.valid)
        return cli_fail(EXIT_FAILED, "out of memory");
    const int lead = r->dist->rank == 0;
    if (lead && o->log_csv &&
        !(r->csv = open_csv(o->log_csv, o->cfg.prior_hidden > 0)))
        return cli_fail(EXIT_USAGE, "%s: cannot open for appending: %s",
                        o->log_csv, errno == ENXIO ? "a FIFO that no process "
                                                     "reads"
                                                   : strerror(errno));
    r->save_on = o->save && strcmp(o->save, "none");
    r->bar = !lead ? 0 : o->progress < 0 ? isatty(STDOUT_FILENO) : o->progress;
    return 0;
}

static void print_header(const train_run *r)
{
    const frae_config *c = &r->o.cfg;
    cli_printf("frae: %zu parameters, %.0f bits/frame, %.1f MiB, kernels %s, %d "
           "thread%s\n",
           frae_param_count(r->m), frae_bits_per_frame(r->m),
           frae_bytes_allocated(r->m) / 1048576.0, frae_isa_name(r->m),
           c->threads, c->threads == 1 ? "" : "s");
    cli_printf("data: %ld training sequences (%s)%s; %ld validation; batch %d, "
           "window %d, feedback %s\n",
           r->n_train, r->ri.summary, r->o.n_data ? "" : ", built-in", r->n_val,
           c->batch, c->window, frae_feedback_names[c->feedback]);
    if (c->prior_hidden > 0)
        cli_printf("prior: %d units%s; codes entropy-coded (at most %.0f "
               "bits/frame); rate lambda %g\n",
               c->prior_hidden, c->prior_ar ? ", within-frame autoregression" : "",
               frae_bits_per_frame(r->m), (double)c->rate_lambda);
    if (r->dist->size > 1)
        cli_printf("data-parallel: %d %s, at most %d of the batch's %d "
               "sequences each, %d thread%s each\n",
               r->dist->size, r->dist->kind, frae_get_config(r->m)->batch,
               c->batch, c->threads, c->threads == 1 ? "" : "s");
    if (r->o.resume)
        cli_printf("resuming %s at epoch %d, batch %ld\n", r->o.resume,
               r->s.epoch + 1, r->s.batch);
    fflush(cli_report ? cli_report : stdout);
}

/* Ctrl-C and SIGTERM stop training at the next batch, with a checkpoint. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The lead replica (rank 0) saves, if `on`; every replica learns whether
 * it worked.  Returns -1 if it did not (the lead said why). */
static int save_agreed(train_run *r, const char *path, int on, int with_state)
{
    int failed = 0;
    if (on && r->dist->rank == 0)
        failed = save_checkpoint(r->m, path, &r->s, &r->ri, with_state) != 0;
    return cli_dist_any(r->dist, failed) ? -1 : 0;
}

/* The epoch's batches, from where it stands: 0 when it is done (or was
 * already), or the exit status (diverged, interrupted). */
static int train_epoch(train_run *r)
{
    train_state *s = &r->s;
    const int B = r->o.cfg.batch;
    if (s->batch == 0) { /* a new epoch: fresh order and sums */
        if (r->o.crop)
            cut_crops(r);
        shuffle(s->order, s->n_order, &s->rng);
        s->sse = s->sae = s->bits = 0, s->values = s->frames = 0;
        s->seconds = 0;
    }
    const long n_batches = (s->n_order + B - 1) / B;
    s->started = now_seconds() - s->seconds;
    double last_draw = 0;
    while (s->batch < n_batches) {
        long first = s->batch * B;
        int nb = s->n_order - first < B ? (int)(s->n_order - first) : B;
        frae_stats sum = {0};
        cli_fault_point(r->dist);
        int rc = run_batch(&r->run, s->order + first, nb, 1, &sum);
        if (rc == EXIT_FAILED) /* the data could not be read */
            return rc;
        int stop = 0;
        rc = agree_sums(r->dist, &sum, rc, &stop);
        if (rc == EXIT_FAILED)
            return rc;
        if (rc) {
            if (r->dist->rank == 0)
                fprintf(stderr,
                        "%s%s: training diverged at epoch %d, batch %ld "
                        "(loss or gradient is not finite); %s\n",
                        r->bar ? "\n" : "", cli_cmd, s->epoch + 1,
                        s->batch + 1,
                        r->save_on ? "the last checkpoint is kept; try a "
                                     "lower --lr or --clip-norm"
                                   : "try a lower --lr or --clip-norm");
            return EXIT_FAILED;
        }
        s->sse += sum.sse, s->sae += sum.sae, s->bits += sum.rate_bits;
        s->values += sum.values, s->frames += sum.frames;
        s->batch++;
        double el = now_seconds() - s->started;
        if (r->bar && (el - last_draw > 0.1 || s->batch == n_batches)) {
            show_progress(s->epoch + 1, r->o.epochs, s->batch, n_batches, s,
                          el);
            last_draw = el;
        }
        if (stop) {
            s->seconds = el;
            if (r->bar)
                cli_printf("\n");
            if (save_agreed(r, r->o.save, r->save_on, 1))
                return EXIT_FAILED;
            if (r->dist->rank == 0)
                fprintf(stderr,
                        "%s: interrupted at epoch %d, batch %ld/%ld%s%s\n",
                        cli_cmd, s->epoch + 1, s->batch, n_batches,
                        r->save_on ? "; checkpoint saved to " : "",
                        r->save_on ? r->o.save : "");
            return EXIT_INTERRUPTED;
        }
    }
    return 0;
}

/* The end of an epoch: validation, the log line and CSV row, the best
 * model and early stopping, the checkpoint.  *stop is set to stop early. */
static int finish_epoch(train_run *r, int *stop)
{
    train_state *s = &r->s;
    const train_opts *o = &r->o;
    double secs = now_seconds() - s->started;
    /* the loss is the objective: distortion, + lambda x rate */
    const int prior = o->cfg.prior_hidden > 0;
    const double lambda = o->cfg.rate_lambda;
    double rate = s->frames ? s->bits / (double)s->frames : 0.0;
    double loss = s->sse / (double)s->values + lambda * rate;
    double mae = s->sae / (double)s->values;
    double vloss = NAN, vmae = NAN, vrate = NAN;
    /* The epoch's last step has met no forward pass yet: weights it sent
     * past what a forward pass survives would be saved as trained.  The
     * validation loss shows it; without validation data, one training
     * batch evaluated (no step) does. */
    int rc = 0;
    frae_stats vs;
    if (r->n_val)
        rc = evaluate(&r->vrun, r->val_seqs, r->n_val, o->cfg.batch, &vs);
    else
        rc = evaluate(&r->run, s->order,
                      s->n_order < o->cfg.batch ? s->n_order : o->cfg.batch,
                      o->cfg.batch, &vs);
    if (rc == EXIT_FAILED)
        return rc;
    if (rc) {
        if (r->dist->rank == 0)
            fprintf(stderr,
                    "%s%s: training diverged in the last step of epoch %d "
                    "(the %s loss after it is not finite); %s\n",
                    r->bar ? "\n" : "", cli_cmd, s->epoch + 1,
                    r->n_val ? "validation" : "training",
                    r->save_on ? "the last checkpoint is kept; try a lower "
                                 "--lr or --clip-norm"
                               : "try a lower --lr or --clip-norm");
        return EXIT_FAILED;
    }
    if (r->n_val) {
        vrate = vs.frames ? vs.rate_bits / (double)vs.frames : 0.0;
        vloss = vs.sse / (double)vs.values + lambda * vrate;
        vmae = vs.sae / (double)vs.values;
    }
    s->epoch++;
    s->batch = 0;
    const int lead = r->dist->rank == 0; /* it prints, logs and saves */
    if (lead && r->bar)
        cli_printf("\r\033[K");
    if (lead) {
        cli_printf("epoch %d/%d  loss %.6f  mae %.6f", s->epoch, o->epochs, loss,
               mae);
        if (prior)
            cli_printf("  rate %.3f", rate);
        if (r->n_val)
            cli_printf("  val_loss %.6f  val_mae %.6f", vloss, vmae);
        if (r->n_val && prior)
            cli_printf("  val_rate %.3f", vrate);
        cli_printf("  %.0f frames/s  %.2f s\n", s->frames / secs, secs);
        fflush(cli_report ? cli_report : stdout);
    }
    if (r->csv) {
        fprintf(r->csv, "%d,%.9g,%.9g,%.9g,%.9g,%.1f,%.3f", s->epoch, loss,
                mae, vloss, vmae, s->frames / secs, secs);
        if (prior)
            fprintf(r->csv, ",%.9g,%.9g", rate, vrate);
        fprintf(r->csv, "\n");
        fflush(r->csv);
    }
    /* early stopping and the best model, on the monitored loss */
    int status = EXIT_OK;
    double monitored = r->n_val ? vloss : loss;
    if (monitored < s->best) {
        s->best = monitored;
        s->best_epoch = s->epoch;
        s->bad_epochs = 0;
        if (o->save_best && save_agreed(r, o->save_best, 1, 0))
            status = EXIT_FAILED;
    } else if (o->patience && ++s->bad_epochs >= o->patience) {
        *stop = 1;
    }
    if (save_agreed(r, o->save, r->save_on, 1))
        status = EXIT_FAILED;
    if (status)
        return status;
    const int interrupted = cli_dist_any(r->dist, stop_requested) > 0;
    if (!lead)
        return *stop ? EXIT_OK : interrupted ? EXIT_INTERRUPTED : EXIT_OK;
    if (*stop) {
        cli_printf("early stop: no better %s for %d epochs (best %.6f at epoch "
               "%d)\n",
               r->n_val ? "val_loss" : "loss", o->patience, s->best,
               s->best_epoch);
        return EXIT_OK;
    }
    if (interrupted) {
        fprintf(stderr, "%s: interrupted after epoch %d%s%s\n", cli_cmd,
                s->epoch, r->save_on ? "; checkpoint saved to " : "",
                r->save_on ? o->save : "");
        return EXIT_INTERRUPTED;
    }
    return EXIT_OK;
}

/* ---- the command ---------------------------------------------------------- */

/* One replica's run: set up, agree that every replica could, train.  The
 * lead replica (rank 0) prints; another prints only what went wrong on it
 * alone (set-up errors are mostly the same everywhere). */
static int train_replica(train_run *r)
{
    cli_dist *d = r->dist;
    char own_error[2300] = "", cmd[64];
    if (d->rank > 0) {
        snprintf(cmd, sizeof cmd, "frae train (rank %d of %d)", d->rank,
                 d->size);
        cli_cmd = cmd;
        cli_fail_capture(own_error, sizeof own_error);
    } else {
        cli_cmd = "frae train";
    }
    int status = 0;
    if (r->o.resume)
        status = resume_from_checkpoint(r);
    if (!status)
        status = settle_features(r);
    if (!status)
        status = check_sizes_early(r);
    if (!status)
        status = load_data(r);
    if (!status)
        status = split_validation(r);
    if (!status)
        status = make_model(r);
    if (d->size > 1) {
        double v[2] = {status != 0, d->rank == 0 && status != 0};
        cli_dist_sum(d, v, 2);
        cli_fail_capture(NULL, 0);
        if (v[0] > 0) {
            if (status && d->rank > 0 && v[1] == 0)
                fprintf(stderr, "%s\n", own_error);
            return status ? status : EXIT_USAGE;
        }
    }
    if (d->size > 1) {
        /* the sums' buffers: the gradients, and the band statistics (2 D
         * + 1 doubles) or a batch's figures (7), whichever is more */
        const size_t n64 = 2 * (size_t)r->o.cfg.frame_dim + 1;
        if (cli_dist_any(d, d->prepare(d, frae_param_count(r->m),
                                       n64 > 64 ? n64 : 64) != 0))
            status = cli_fail(EXIT_FAILED, "out of memory");
        frae_set_reducer(r->m, &d->reducer);
    }
    if (!status && !r->o.resume && r->o.cfg.normalize)
        status = set_normalization(r, r->norm); /* agreed inside */
    /* --epochs is the run's total, as Keras's epochs with initial_epoch:
     * resumed at or past it, there is nothing to train, and saying so
     * beats exiting 0 having trained nothing */
    if (!status && r->s.epoch >= r->o.epochs)
        status = !r->o.epochs_resumed
                     ? cli_fail(EXIT_USAGE,
                                "%s has trained %d epochs already; --epochs "
                                "%d is the run's total, so nothing is left "
                                "to train (give more than %d)",
                                r->o.resume, r->s.epoch, r->o.epochs,
                                r->s.epoch)
                     : cli_fail(EXIT_USAGE,
                                "%s: its run is complete (%d of %d epochs); "
                                "give --epochs more than %d to train on",
                                r->o.resume, r->s.epoch, r->o.epochs,
                                r->s.epoch);
    if (!status && d->rank == 0)
        print_header(r);
    /* Ctrl-C and SIGTERM stop the run at the next batch, saving, from
     * here on; before, nothing is worth saving and they stop it at once,
     * however long the data takes to build or read */
    if (!status)
        catch_stop_signals();
    int stop = 0;
    const double t0 = now_seconds();
    while (!status && !stop && r->s.epoch < r->o.epochs) {
        status = train_epoch(r);
        if (!status)
            status = finish_epoch(r, &stop);
    }
    if (d->size > 1 && d->rank == 0 && d->reduce_calls) {
        const double secs = now_seconds() - t0;
        cli_printf("%d %s: %.1f KiB of gradients summed per step, %.3f ms per "
               "step (%.1f%% of the time)\n",
               d->size, d->kind, d->reduced_bytes / d->reduce_calls / 1024.0,
               1e3 * d->reduce_seconds / d->reduce_calls,
               secs > 0 ? 100.0 * d->reduce_seconds / secs : 0.0);
        fflush(cli_report ? cli_report : stdout);
    }
    return status;
}

typedef struct {
    train_run run;
    cli_dist dist;
    pthread_t thread;
    int status;
} replica;

static void *replica_main(void *arg)
{
    replica *p = arg;
    p->status = train_replica(&p->run);
    return NULL;
}

/* Threads of this process as replicas: rank r is r's thread. */
static int train_replicas(const train_run *proto, int n)
{
    cli_thread_group *g = cli_thread_group_new(n, 0, 64);
    replica *rep = calloc((size_t)n, sizeof *rep);
    if (!g || !rep) {
        cli_thread_group_free(g);
        free(rep);
        return cli_fail(EXIT_FAILED, "out of memory");
    }
    int started = 0;
    for (int i = 0; i < n; i++) {
        rep[i].run = *proto;
        cli_dist_threads(&rep[i].dist, g, i);
        rep[i].run.dist = &rep[i].dist;
    }
    for (int i = 1; i < n; i++) /* rank 0 runs on this thread */
        if (pthread_create(&rep[i].thread, NULL, replica_main, &rep[i]))
            break;
        else
            started++;
    int status;
    if (started < n - 1) {
        /* the started ones wait at the first sum: nothing to do but go */
        status = cli_fail(EXIT_FAILED, "cannot start %d threads", n);
        _exit(status);
    }
    replica_main(&rep[0]);
    status = rep[0].status;
    for (int i = 1; i < n; i++) {
        pthread_join(rep[i].thread, NULL);
        if (!status)
            status = rep[i].status;
    }
    for (int i = 0; i < n; i++)
        train_run_free(&rep[i].run);
    cli_thread_group_free(g);
    free(rep);
    return status;
}

/* Threads per replica when --threads is not given: the CPUs shared out. */
static int share_cpus(int local_replicas)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long t = (cpus < 1 ? 1 : cpus) / (local_replicas < 1 ? 1 : local_replicas);
    return t < 1 ? 1 : t > 64 ? 64 : (int)t;
}

int cmd_train(int argc, char **argv)
{
    cli_cmd = "frae train";
    train_run r;
    train_run_init(&r);
    int status = cli_parse(argc, argv, train_opts_list, train_on_opt,
                           train_on_pos, train_help, &r.o);
    cli_model_defaults(&r.o.cfg, r.o.model_given);
    if (r.o.cfg.rate_lambda > 0 && !(r.o.model_given & CLI_GIVEN_PRIOR))
        r.o.cfg.prior_hidden = 16; /* a rate needs a prior to measure it */
    if (r.o.cfg.prior_hidden > 0 && !(r.o.model_given & CLI_GIVEN_PRIOR_AR))
        r.o.cfg.prior_ar = 1; /* the codes of a frame, coded in order */
    if (r.o.cfg.pitch && r.o.cfg.prior_hidden > 0 &&
        !(r.o.model_given & CLI_GIVEN_PITCH_CODER))
        /* range-coded: the coder made for it, voicing seen from the
         * envelope */
        r.o.cfg.pitch_ranged = FRAE_PITCH_CODER_ENVELOPE;
    r.s.rng = r.o.cfg.seed ^ 0x0123456789abcdefull; /* the epochs' shuffles */
    /* the lists are shared by the replicas */
    char **data = r.o.data, **val = r.o.val, **tg = r.o.targets,
         **vtg = r.o.val_targets;
    cli_dist dist;
    cli_dist_solo(&dist);
    r.dist = &dist;
#ifdef FRAE_MPI
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (cli_dist_mpi(&dist, 0, r.o.dist_timeout))
        status = cli_fail(EXIT_FAILED, "out of memory");
    if (!status && dist.size > 1 && r.o.replicas > 1) /* rank 0 says it */
        status = dist.rank ? EXIT_USAGE
                           : cli_fail(EXIT_USAGE, "--replicas runs replicas "
                                      "in one process; under mpirun each "
                                      "rank is one");
    dist.signalled = &stop_requested;
    if (!status && !r.o.threads_given) {
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        r.o.cfg.threads = share_cpus(local ? atoi(local) : 1);
    }
#endif
    if (!status && r.o.replicas > 1 && !r.o.threads_given)
        r.o.cfg.threads = share_cpus(r.o.replicas);
    if (!status && r.o.replicas > 1)
        status = train_replicas(&r, r.o.replicas);
    else if (!status)
        status = train_replica(&r);
    if (r.o.replicas <= 1)
        train_run_free(&r);
    free(data), free(val), free(tg), free(vtg);
#ifdef FRAE_MPI
    cli_dist_mpi_free(&dist);
    if (status && dist.size > 1) {
        /* every rank agreed to stop; leave together, exit status kept */
        MPI_Finalize();
        return status;
    }
    MPI_Finalize();
#endif
    return status;
}
