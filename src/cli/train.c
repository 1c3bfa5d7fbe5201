/* frae train: the command line of libfrae's training run (frae_train.h).
 *
 * The run itself (epochs, crops, the validation split, early stopping,
 * checkpoints with the training state, resume, replicas, normalization,
 * the CSV log) is the library's, the loop Python's fit calls too.  This
 * file is what only a command has: parsing (the library's option table,
 * plus the command's own options), the datasets from files and audio,
 * printing and the progress bar, Ctrl-C, and under frae-mpi the MPI
 * transport (dist_mpi.c). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FRAE_MPI
#include <mpi.h>
#endif

#include "cli.h"
#include "frae_train.h"

static volatile sig_atomic_t stop_requested; /* the run and dist_mpi.c
                                                poll it */
static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    frae_run_config rc;
    /* the command's own options */
    char **data, **val, **targets, **val_targets; /* paths */
    int n_data, n_val, n_targets, n_val_targets;
    int progress; /* -1 auto (terminal), 0 off, 1 on */
    int sequences, frames;
    long data_seed;
    cli_audio audio;
    int audio_features;  /* --audio-features: .npy data are frae features */
    double dist_timeout; /* --dist-timeout: seconds a rank waits */
    int frame_dim_given;
    int auto_recipe; /* audio with no model option: the speech recipe */
    /* the audio features, recorded in the checkpoints (features.*) */
    char feature_values[FRAE_FEATURES_META][64];
    frae_meta feature_meta[FRAE_FEATURES_META];
} train_opts;

/* The command's options beside the library's (frae_option rows, so that
 * --help prints them alike); the feature options are cli_feature_opts. */
static const frae_option own_rows[] = {
    {"dist-timeout", NULL, FRAE_OPTION_FLOAT, 0.1, 1e7, NULL, "S",
     "seconds a rank waits for the others before stopping them all (600)", NULL,
     FRAE_SECTION_PARALLEL, 0, "600"},
    {"val-data", NULL, FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
     "validation .npy file or directory (repeat)", NULL,
     FRAE_SECTION_VALIDATION, 0, NULL},
    {"targets", NULL, FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
     "target .npy files or directories (repeat), paired with DATA in order "
     "(directories: by sorted name); each pair the same length; the loss "
     "compares the output with the target, the encoder still sees DATA, and "
     "feedback is the model's own output; kept in the checkpoint (give "
     "--targets again to resume)",
     NULL, FRAE_SECTION_TARGETS, 0, NULL},
    {"val-targets", NULL, FRAE_OPTION_TEXT, 0, 0, NULL, "PATH",
     "the targets of --val-data, paired likewise", NULL, FRAE_SECTION_TARGETS,
     0, NULL},
    {"progress", NULL, FRAE_OPTION_CHOICE, 0, 0, "off|on|auto", "MODE",
     "auto, on or off: a progress bar (auto: on a terminal; otherwise one "
     "line per epoch)",
     NULL, FRAE_SECTION_CHECKPOINTS, 0, "auto"},
    {"audio-features", NULL, FRAE_OPTION_FLAG, 0, 0, NULL, NULL,
     "the .npy DATA are such features (from 'frae features'): record their "
     "parameters",
     NULL, FRAE_SECTION_FEATURES, 0, NULL},
    {"sequences", NULL, FRAE_OPTION_INT, 1, 1 << 30, NULL, "N",
     "number of sequences (64)", NULL, FRAE_SECTION_BUILTIN, 0, "64"},
    {"frames", NULL, FRAE_OPTION_INT, 1, 1 << 30, NULL, "T",
     "frames per sequence (100)", NULL, FRAE_SECTION_BUILTIN, 0, "100"},
    {"data-seed", NULL, FRAE_OPTION_INT, 0, 9.2233720368547758e18, NULL, "S",
     "data seed (7)", NULL, FRAE_SECTION_BUILTIN, 0, "7"},
};
#define N_OWN ((int)(sizeof own_rows / sizeof *own_rows))

/* Every row of section sec: the library's, then the command's. */
static void help_section(frae_option_section sec)
{
    char line[1024];
    for (int i = 0; i < frae_option_count(); i++)
        if (frae_option_at(i)->section == sec) {
            frae_option_help(frae_option_at(i), line, sizeof line);
            cli_printf("%s", line);
        }
    for (int i = 0; i < N_OWN; i++)
        if (own_rows[i].section == sec) {
            frae_option_help(&own_rows[i], line, sizeof line);
            cli_printf("%s", line);
        }
}

static void train_help(void)
{
    cli_printf(
        "usage: frae train [--recipe R] [options below] [DATA ...]\n"
        "examples:\n"
        "  frae train wavs/ --recipe speech --epochs 50 --save "
        "codec.safetensors\n"
        "  frae train feats/ --audio-features --latent 16 --quantizer binary\n"
        "\n"
        "Trains an FRAE.  DATA are .npy files ([T, D] or [N, T, D], float32\n"
        "or float64), audio files (WAV, FLAC, ...: log-mel features are\n"
        "computed, and their parameters kept in the checkpoint) or\n"
        "directories of them; without DATA, the built-in synthetic\n"
        "sequences.  Sequences may differ in length: each batch is\n"
        "zero-padded to its longest sequence and the padding is masked out\n"
        "of the loss, and a sequence's last window is just shorter.\n"
        "\n"
        "model (fixed by the checkpoint when resuming):\n");
    help_section(FRAE_SECTION_MODEL);
    cli_printf("training:\n");
    help_section(FRAE_SECTION_TRAINING);
    cli_printf("data-parallel training (docs/cluster.md):\n"
               "  mpirun -np N frae train ...  N MPI ranks train one model; "
               "each\n"
               "                       takes its share of every batch of B\n"
               "                       sequences (B stays the whole step's)\n");
    help_section(FRAE_SECTION_PARALLEL);
    cli_printf("validation and stopping:\n");
    help_section(FRAE_SECTION_VALIDATION);
    cli_printf("targets (a denoising or enhancing autoencoder):\n");
    help_section(FRAE_SECTION_TARGETS);
    cli_printf("checkpoints and logs:\n");
    help_section(FRAE_SECTION_CHECKPOINTS);
    cli_printf("audio features (D = --mels):\n" CLI_FEATURE_HELP);
    help_section(FRAE_SECTION_FEATURES);
    cli_printf("built-in data:\n");
    help_section(FRAE_SECTION_BUILTIN);
    cli_printf(
        "\n"
        "Exit codes: 0 done; 1 failed (diverged: the last checkpoint is\n"
        "kept; or a save failed); 2 bad options, data or checkpoint;\n"
        "130 interrupted by Ctrl-C after saving a checkpoint.\n");
}

static int push(char ***list, int *n, const char *v)
{
    char **nl = realloc(*list, sizeof *nl * (size_t)(*n + 1));
    if (!nl)
        return cli_fail(EXIT_FAILED, "out of memory");
    nl[(*n)++] = (char *)v;
    *list = nl;
    return 0;
}

static int own_option(train_opts *o, const char *name, const char *v)
{
    int tmp = 0;
    if (!strcmp(name, "--audio-features"))
        return o->audio_features = 1, 0;
    if (!strcmp(name, "--val-data"))
        return push(&o->val, &o->n_val, v);
    if (!strcmp(name, "--targets"))
        return push(&o->targets, &o->n_targets, v);
    if (!strcmp(name, "--val-targets"))
        return push(&o->val_targets, &o->n_val_targets, v);
    if (!strcmp(name, "--dist-timeout"))
        return cli_double(name, v, 0.1, 1e7, &o->dist_timeout);
    if (!strcmp(name, "--progress")) {
        static const char *const modes[] = {"off", "on", "auto"};
        int rc = cli_choice(name, v, modes, 3, &tmp);
        o->progress = tmp == 2 ? -1 : tmp;
        return rc;
    }
    if (!strcmp(name, "--sequences"))
        return cli_int(name, v, 1, 1 << 30, &o->sequences);
    if (!strcmp(name, "--frames"))
        return cli_int(name, v, 1, 1 << 30, &o->frames);
    if (!strcmp(name, "--data-seed"))
        return cli_long(name, v, 0, 0x7fffffffffffffffL, &o->data_seed);
    return 1;
}

static int train_on_opt(void *ctx, const char *name, const char *v)
{
    train_opts *o = ctx;
    int rc = cli_feature_option(&o->audio, name, v);
    if (rc != 1)
        return rc;
    if ((rc = own_option(o, name, v)) != 1)
        return rc;
    char err[1100];
    if (frae_option_set(&o->rc, name, v, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    return 0;
}

static int train_on_pos(void *ctx, const char *arg)
{
    train_opts *o = ctx;
    return push(&o->data, &o->n_data, arg);
}

/* The parse table: the library's options, the command's, the features'. */
static cli_opt *train_opts_list(void)
{
    int n = frae_option_count(), k = 0;
    int n_feat = 0;
    while (cli_feature_opts[n_feat].name)
        n_feat++;
    cli_opt *list = calloc((size_t)(n + N_OWN + n_feat + 1), sizeof *list);
    static char names[64 + 16][32];
    if (!list || n + N_OWN > 64 + 16)
        return list;
    for (int i = 0; i < n + N_OWN; i++) {
        const frae_option *row = i < n ? frae_option_at(i) : &own_rows[i - n];
        snprintf(names[i], sizeof names[i], "--%s", row->name);
        list[k++] = (cli_opt){names[i], row->type != FRAE_OPTION_FLAG};
    }
    for (int i = 0; i < n_feat; i++)
        list[k++] = cli_feature_opts[i];
    return list;
}

/* ---- data sets ------------------------------------------------------------- */

/* The fault injection of the tests (FRAE_FAULT=kind@rank:n, dist.c): a
 * replica's n-th data read fails (read), or at its n-th batch it exits,
 * is killed or hangs.  The run calls on_batch on each replica's own
 * thread, which names the replica reading. */
static cli_fault fault;
static _Thread_local int fault_rank_here = -1;
static _Thread_local long fault_reads, fault_batches;

typedef struct {
    frae_source in;
} fault_source;

static int fault_read(void *ctx, long s, long t0, long nt, float *dst,
                      char *err, size_t errlen)
{
    fault_source *f = ctx;
    if (fault_rank_here >= 0 && fault_rank_here == fault.rank &&
        !strcmp(fault.kind, "read") && ++fault_reads == fault.at) {
        snprintf(err, errlen,
                 "%s: sequence %ld: cannot read its frames (injected fault)",
                 f->in.name, s);
        return -1;
    }
    return f->in.read(f->in.ctx, s, t0, nt, dst, err, errlen);
}

static int fault_check(void *ctx, long s0, long s1, char *err, size_t errlen)
{
    fault_source *f = ctx;
    return f->in.check ? f->in.check(f->in.ctx, s0, s1, err, errlen) : 0;
}

static void fault_close(void *ctx)
{
    fault_source *f = ctx;
    if (f->in.close)
        f->in.close(f->in.ctx);
    free(f);
}

/* One file into ds: a .npy, or audio through the features of o->audio. */
static int add_file(frae_dataset *ds, const char *path, const train_opts *o)
{
    char err[1100];
    frae_npy a;
    const int audio = cli_is_audio(path);
    if (audio) {
        int rc = cli_audio_frames(path, &o->audio.f, o->audio.resample, &a);
        if (rc)
            return rc;
    } else if (frae_npy_open(path, &a, err, sizeof err) ||
               frae_npy_frames(&a, path, err, sizeof err)) {
        frae_npy_close(&a);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    frae_source src;
    int rc = frae_source_from_npy(&a, path, audio, &src, err, sizeof err);
    if (!rc && fault.kind[0] && !strcmp(fault.kind, "read")) {
        fault_source *f = malloc(sizeof *f);
        if (!f) {
            src.close(src.ctx);
            return cli_fail(EXIT_FAILED, "out of memory");
        }
        f->in = src;
        src.read = fault_read, src.check = fault_check;
        src.close = fault_close, src.ctx = f;
    }
    if (!rc)
        rc = frae_dataset_add_source(ds, &src, err, sizeof err);
    return rc ? cli_fail(rc, "%s", err) : 0;
}

/* Files and directories of them (sorted) into a dataset of frames of dim
 * values (0: the first file's), every value checked finite: with
 * replicas, each replica's share of the sequences, as that replica (the
 * replicas agree on the result).  Returns 0 or an exit code after saying
 * why. */
static int load_files(frae_dataset **out, char **paths, int n_paths, int dim,
                      const train_opts *o, const cli_dist *d)
{
    char err[1100];
    char **files = NULL;
    int n = 0;
    frae_dataset *ds = *out = frae_dataset_create(dim);
    if (!ds)
        return cli_fail(EXIT_FAILED, "out of memory");
    int rc = frae_expand_paths((const char *const *)paths, n_paths, &files, &n,
                               err, sizeof err);
    if (rc)
        return cli_fail(rc, "%s", err);
    for (int i = 0; i < n && !rc; i++)
        rc = add_file(ds, files[i], o);
    frae_free_paths(files, n);
    if (rc)
        return rc;
    /* a replica reads only its share; audio features were checked when
     * made.  Threads of this process: every share, each as its replica. */
    const int threads = d->size == 1 && o->rc.replicas > 1;
    const int size = threads ? o->rc.replicas : d->size;
    for (int r = threads ? 0 : d->rank; r < (threads ? size : d->rank + 1);
         r++) {
        long first,
            count = frae_share(frae_dataset_sequences(ds), r, size, &first);
        if (frae_dataset_check(ds, first, first + count, err, sizeof err)) {
            if (threads && r > 0)
                fprintf(stderr, "frae train (rank %d of %d): %s\n", r, size,
                        err);
            else
                cli_fail(EXIT_USAGE, "%s", err);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* Audio anywhere (files, feature options, a checkpoint's features): the
 * frame dimension is the number of mel bands. */
static int settle_features(train_opts *o)
{
    frae_config *c = &o->rc.model;
    o->rc.audio = o->audio_features || o->audio.given;
    for (int i = 0; i < o->n_data; i++)
        o->rc.audio |= cli_is_audio(o->data[i]);
    for (int i = 0; i < o->n_val; i++)
        o->rc.audio |= cli_is_audio(o->val[i]);
    if (!o->rc.audio)
        return 0;
    char err[256];
    if (frae_features_check(&o->audio.f, err, sizeof err))
        return cli_fail(EXIT_USAGE, "bad audio features: %s", err);
    if (o->frame_dim_given && c->frame_dim != o->audio.f.n_mels)
        return cli_fail(EXIT_USAGE,
                        "--frame-dim %d but --mels %d: audio features have "
                        "one value per mel band",
                        c->frame_dim, o->audio.f.n_mels);
    c->frame_dim = o->audio.f.n_mels;
    c->level_scale = o->audio.f.scale; /* --level-loss: the frames' power */
    o->frame_dim_given = 1;
    return 0;
}

/* --resume: the model, its settings, the features and where training
 * stood come from the checkpoint. */
static int resume_settings(train_opts *o)
{
    char err[1200];
    if (frae_run_config_resumable(&o->rc, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    if (o->audio.given)
        return cli_fail(EXIT_USAGE,
                        "feature options cannot be combined with --resume: "
                        "the features come from the checkpoint");
    int rc = frae_run_config_resume(&o->rc, err, sizeof err);
    if (rc)
        return cli_fail(rc, "%s", err);
    int have = cli_model_features(o->rc.resume, &o->audio.f);
    if (have < 0)
        return EXIT_USAGE;
    o->audio_features = have;
    o->audio.f.pitch = 0; /* the network trains on the envelope alone */
    return 0;
}

typedef struct {
    frae_dataset *data, *val, *tgt, *val_tgt;
} datasets;

static void datasets_free(datasets *ds)
{
    frae_dataset_destroy(ds->data), frae_dataset_destroy(ds->val);
    frae_dataset_destroy(ds->tgt), frae_dataset_destroy(ds->val_tgt);
}

/* The training data (files or built-in), validation files, targets; when
 * resuming, the same kind of data as before. */
static int load_data(train_opts *o, const cli_dist *d, datasets *ds)
{
    frae_config *c = &o->rc.model;
    char err[1100];
    int status;
    if (o->n_data) {
        status = load_files(
            &ds->data, o->data, o->n_data,
            o->frame_dim_given || o->rc.resume ? c->frame_dim : 0, o, d);
        if (!status)
            c->frame_dim = frae_dataset_dim(ds->data);
    } else {
        ds->data = frae_dataset_create(c->frame_dim);
        status = !ds->data ? cli_fail(EXIT_FAILED, "out of memory")
                           : frae_dataset_add_synthetic(
                                 ds->data, o->sequences, o->frames,
                                 (uint64_t)o->data_seed, err, sizeof err);
        if (status && ds->data)
            status = cli_fail(status, "%s", err);
    }
    if (!status && o->n_val)
        status = load_files(&ds->val, o->val, o->n_val, c->frame_dim, o, d);
    if (!status && (status = frae_run_check_pairing(
                        &o->rc, o->n_data > 0, o->n_targets > 0, o->n_val > 0,
                        o->n_val_targets > 0, err, sizeof err)))
        status = cli_fail(status, "%s", err);
    if (!status && o->n_targets)
        status = load_files(&ds->tgt, o->targets, o->n_targets,
                            frae_dataset_dim(ds->data), o, d);
    if (!status && o->n_val_targets)
        status = load_files(&ds->val_tgt, o->val_targets, o->n_val_targets,
                            frae_dataset_dim(ds->data), o, d);
    if (status)
        return status;
    if ((frae_dataset_has_audio(ds->data) ||
         (ds->val && frae_dataset_has_audio(ds->val))) &&
        !o->rc.audio) {
        /* audio found inside a directory */
        o->rc.audio = 1;
        if (frae_dataset_dim(ds->data) != o->audio.f.n_mels)
            return cli_fail(EXIT_USAGE,
                            "audio features have %d mels, the other data %d "
                            "values per frame",
                            o->audio.f.n_mels, frae_dataset_dim(ds->data));
    }
    return 0;
}

/* ---- printing ----------------------------------------------------------------- */

typedef struct {
    const train_opts *o;
    const cli_dist *d;
    int bar;      /* a progress bar is drawn */
    int bar_open; /* ... and left unfinished on its line */
    double last_draw;
} printer;

static void flush_report(void) { fflush(cli_report ? cli_report : stdout); }

/* Ctrl-C and SIGTERM stop training at the next batch, with a checkpoint. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void on_start(void *ctx, const frae_run_info *in)
{
    printer *p = ctx;
    const frae_config *c = frae_get_config(in->model);
    const frae_run_config *rc = &p->o->rc;
    /* Ctrl-C and SIGTERM stop the run at the next batch, saving, from
     * here on; before, nothing is worth saving and they stop it at once,
     * however long the data takes to build or read */
    catch_stop_signals();
    if (in->rank != 0 || p->d->rank != 0)
        return;
    if (p->o->auto_recipe) {
        flush_report();
        fprintf(stderr,
                "frae train: audio and no model option: the speech recipe "
                "(--recipe speech: %s; --recipe none for the plain "
                "defaults)\n",
                frae_recipe_at(rc->recipe - 1)->summary);
    }
    cli_printf("frae: %zu parameters, %.0f bits/frame, %.1f MiB, kernels %s, "
               "%d thread%s\n",
               frae_param_count(in->model), frae_bits_per_frame(in->model),
               frae_bytes_allocated(in->model) / 1048576.0,
               frae_isa_name(in->model), c->threads,
               c->threads == 1 ? "" : "s");
    cli_printf("data: %ld training sequences (%s)%s; %ld validation; batch "
               "%d, window %d, feedback %s\n",
               in->train_sequences, in->data, p->o->n_data ? "" : ", built-in",
               in->val_sequences, in->batch_size, c->window,
               frae_enum_name("feedback", c->feedback));
    if (c->prior_hidden > 0)
        cli_printf("prior: %d units%s; codes entropy-coded (at most %.0f "
                   "bits/frame); rate lambda %g\n",
                   c->prior_hidden,
                   c->prior_ar ? ", within-frame autoregression" : "",
                   frae_bits_per_frame(in->model), (double)c->rate_lambda);
    if (in->replicas > 1)
        cli_printf("data-parallel: %d %s, at most %d of the batch's %d "
                   "sequences each, %d thread%s each\n",
                   in->replicas, in->kind, in->replica_batch, in->batch_size,
                   c->threads, c->threads == 1 ? "" : "s");
    if (in->resumed)
        cli_printf("resuming %s at epoch %d, batch %ld\n", rc->resume,
                   in->epoch + 1, in->batch_done);
    flush_report();
}

/* At every batch: the faults, and the lead's progress bar. */
static int on_batch(void *ctx, const frae_run_progress *pr)
{
    printer *p = ctx;
    fault_rank_here = p->d->size > 1 ? p->d->rank : pr->rank;
    if (fault.kind[0] && fault_rank_here == fault.rank &&
        pr->batch < pr->batches && ++fault_batches == fault.at)
        cli_fault_fire(&fault);
    if (!p->bar || pr->rank != 0)
        return 0;
    const double el = pr->seconds;
    if (!(el - p->last_draw > 0.1 || pr->batch == pr->batches))
        return 0;
    p->last_draw = el;
    const int width = 24;
    int filled = pr->batches ? (int)(width * pr->batch / pr->batches) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '=' : i == filled ? '>' : '.';
    bar[width] = 0;
    double fps = el > 0 ? pr->frames / el : 0;
    double eta = pr->batch ? el / pr->batch * (pr->batches - pr->batch) : 0;
    cli_printf("\repoch %d/%d [%s] %ld/%ld  loss %.6f  %.0f frames/s  ETA "
               "%.0fs\033[K",
               pr->epoch, pr->epochs, bar, pr->batch, pr->batches, pr->loss,
               fps, eta);
    p->bar_open = 1;
    flush_report();
    return 0;
}

static int on_epoch(void *ctx, const frae_epoch_log *e)
{
    printer *p = ctx;
    if (p->d->rank != 0)
        return 0;
    if (p->bar)
        cli_printf("\r\033[K");
    p->bar_open = 0, p->last_draw = 0;
    cli_printf("epoch %d/%d  loss %.6f  mae %.6f", e->epoch, e->epochs, e->loss,
               e->mae);
    if (e->prior)
        cli_printf("  rate %.3f", e->rate);
    if (e->has_val)
        cli_printf("  val_loss %.6f  val_mae %.6f", e->val_loss, e->val_mae);
    if (e->has_val && e->prior)
        cli_printf("  val_rate %.3f", e->val_rate);
    cli_printf("  %.0f frames/s  %.2f s\n", e->frames_per_s, e->seconds);
    flush_report();
    return 0;
}

/* ---- the command ---------------------------------------------------------- */

static void train_opts_init(train_opts *o)
{
    memset(o, 0, sizeof *o);
    frae_run_config_default(&o->rc);
    o->rc.save = "frae-checkpoint.safetensors";
    o->progress = -1;
    o->sequences = 64;
    o->frames = 100;
    o->data_seed = 7;
    o->dist_timeout = 600;
    cli_audio_default(&o->audio);
    o->rc.model.threads = frae_cpus_available();
}

/* Set-up before the run: the checkpoint's settings, the features, the
 * sizes, the data.  Returns 0 or an exit code after saying why. */
static int prepare(train_opts *o, const cli_dist *d, datasets *ds)
{
    char err[1100];
    int status = 0;
    if (o->rc.resume)
        status = resume_settings(o);
    if (!status)
        status = settle_features(o);
    if (!status && (status = frae_run_config_settle(&o->rc, o->n_val > 0, err,
                                                    sizeof err)))
        cli_fail(status, "%s", err);
    /* sizes before any data is built or read: before the files are
     * loaded only their frame dimension may be known (not even that) */
    const int size = d->size > 1 ? d->size : o->rc.replicas;
    if (!status &&
        (status = frae_run_check_sizes(&o->rc, o->frame_dim_given || !o->n_data,
                                       size, o->n_data ? 0 : o->sequences,
                                       o->frames, err, sizeof err)))
        cli_fail(status, "%s", err);
    if (!status)
        status = load_data(o, d, ds);
    if (!status && o->rc.audio) {
        o->rc.meta = o->feature_meta;
        o->rc.n_meta =
            frae_features_meta(&o->audio.f, o->feature_values, o->feature_meta);
    }
    return status;
}

static int train_main(train_opts *o, cli_dist *d)
{
    char own_error[2300] = "", cmd[64];
    if (d->rank > 0) {
        snprintf(cmd, sizeof cmd, "frae train (rank %d of %d)", d->rank,
                 d->size);
        cli_cmd = cmd;
        cli_fail_capture(own_error, sizeof own_error);
    }
    datasets ds = {0};
    int status = prepare(o, d, &ds);
    if (d->size > 1) {
        /* every rank agrees that every rank could set up; rank 0 says what
         * went wrong, another rank only what went wrong on it alone */
        double v[2] = {status != 0, d->rank == 0 && status != 0};
        cli_dist_sum(d, v, 2);
        cli_fail_capture(NULL, 0);
        if (v[0] > 0) {
            if (status && d->rank > 0 && v[1] == 0)
                fprintf(stderr, "%s\n", own_error);
            datasets_free(&ds);
            return status ? status : EXIT_USAGE;
        }
    }
    char err[1100];
    frae_run *run = status ? NULL : frae_run_create(&o->rc, err, sizeof err);
    if (!status && !run)
        status = cli_fail(EXIT_FAILED, "%s", err);
    printer p = {o, d, 0, 0, 0};
    p.bar = d->rank != 0      ? 0
            : o->progress < 0 ? isatty(STDOUT_FILENO)
                              : o->progress;
    const frae_run_hooks hooks = {
        &p,       on_start,        on_batch,
        on_epoch, &stop_requested, d->size > 1 ? &d->transport : NULL};
    if (!status)
        status =
            frae_run_train(run, ds.data, ds.tgt, ds.val, ds.val_tgt, &hooks);
    int at = 0;
    const char *why = run ? frae_run_error(run, &at) : NULL;
    if (why) {
        if (p.bar_open)
            cli_printf("\n");
        flush_report();
        if (at > 0 && d->size == 1)
            fprintf(stderr, "frae train (rank %d of %d): %s\n", at,
                    o->rc.replicas, why);
        else
            fprintf(stderr, "%s: %s\n", cli_cmd, why);
    }
    frae_run_result res;
    if (run)
        frae_run_get_result(run, &res);
    if (run && !status && res.early_stopped && d->rank == 0)
        cli_printf("early stop: no better %s for %d epochs (best %.6f at "
                   "epoch %d)\n",
                   res.monitored_val ? "val_loss" : "loss", res.patience,
                   res.best, res.best_epoch);
    const int size = d->size > 1 ? d->size : o->rc.replicas;
    if (run && size > 1 && d->rank == 0 && res.reduce_calls)
        cli_printf("%d %s: %.1f KiB of gradients summed per step, %.3f ms per "
                   "step (%.1f%% of the time)\n",
                   size, d->size > 1 ? d->kind : "replicas",
                   res.reduced_bytes / res.reduce_calls / 1024.0,
                   1e3 * res.reduce_seconds / res.reduce_calls,
                   res.seconds > 0 ? 100.0 * res.reduce_seconds / res.seconds
                                   : 0.0);
    flush_report();
    frae_run_destroy(run);
    datasets_free(&ds);
    return status;
}

/* Whether an option that shapes the model was given: one of the model
 * section's (but the seed), --pitch or --rate-lambda. */
static int model_option_given(const frae_run_config *rc)
{
    for (int i = 0; i < frae_option_count(); i++) {
        const frae_option *row = frae_option_at(i);
        if (frae_option_given(rc, i) &&
            ((row->section == FRAE_SECTION_MODEL &&
              strcmp(row->name, "seed")) ||
             !strcmp(row->name, "pitch") || !strcmp(row->name, "rate-lambda")))
            return 1;
    }
    return 0;
}

/* Whether DATA are audio: audio files, directories holding some, or
 * .npy features (--audio-features, feature options). */
static int audio_data(const train_opts *o)
{
    if (o->audio_features || o->audio.given)
        return o->n_data > 0;
    char **files = NULL, err[1100];
    int n = 0, audio = 0;
    if (frae_expand_paths((const char *const *)o->data, o->n_data, &files, &n,
                          err, sizeof err))
        return 0; /* said when the data are loaded */
    for (int i = 0; i < n && !audio; i++)
        audio = cli_is_audio(files[i]);
    frae_free_paths(files, n);
    return audio;
}

/* Audio with no option shaping the model trains the speech recipe. */
static void default_recipe(train_opts *o)
{
    const int row = frae_option_find("recipe");
    if (o->rc.resume || frae_option_given(&o->rc, row) ||
        model_option_given(&o->rc) || !audio_data(o))
        return;
    char err[256];
    if (!frae_option_set(&o->rc, "recipe", "speech", err, sizeof err))
        o->auto_recipe = 1;
}

/* Threads per replica when --threads is not given: the CPUs shared out. */
static int share_cpus(int local_replicas)
{
    long t = frae_cpus_available() / (local_replicas < 1 ? 1 : local_replicas);
    return t < 1 ? 1 : t > 64 ? 64 : (int)t;
}

int cmd_train(int argc, char **argv)
{
    cli_cmd = "frae train";
    train_opts o;
    train_opts_init(&o);
    cli_fault_setup(&fault);
    cli_opt *list = train_opts_list();
    int status = !list ? cli_fail(EXIT_FAILED, "out of memory")
                       : cli_parse(argc, argv, list, train_on_opt, train_on_pos,
                                   train_help, &o);
    free(list);
    if (!status)
        default_recipe(&o);
    frae_options_finish(&o.rc);
    o.frame_dim_given = frae_option_given(&o.rc, frae_option_find("frame-dim"));
    const int threads_given =
        frae_option_given(&o.rc, frae_option_find("threads"));
    if (o.rc.log_csv)
        cli_output_path(o.rc.log_csv);
    cli_dist dist;
    cli_dist_solo(&dist);
#ifdef FRAE_MPI
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (cli_dist_mpi(&dist, 0, o.dist_timeout))
        status = cli_fail(EXIT_FAILED, "out of memory");
    if (!status && dist.size > 1 && o.rc.replicas > 1) /* rank 0 says it */
        status = dist.rank
                     ? EXIT_USAGE
                     : cli_fail(EXIT_USAGE, "--replicas runs replicas "
                                            "in one process; under mpirun each "
                                            "rank is one");
    dist.signalled = &stop_requested;
    if (!status && !threads_given) {
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        o.rc.model.threads = share_cpus(local ? atoi(local) : 1);
    }
#endif
    if (!status && o.rc.replicas > 1 && !threads_given)
        o.rc.model.threads = share_cpus(o.rc.replicas);
    if (!status)
        status = train_main(&o, &dist);
    free(o.data), free(o.val), free(o.targets), free(o.val_targets);
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
