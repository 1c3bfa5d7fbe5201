/* frae_train.h: training runs, datasets and options by name, in libfrae.
 *
 * What it is for: a program that trains FRAEs the way 'frae train' does
 * makes one call, frae_run_train, instead of writing the loop again.  The
 * frae command (src/cli/train.c) and the Python module's FRAE.fit are two
 * such programs, thin callers of this one loop, so they train to the same
 * bits.  frae.h has the model and the step underneath (frae_step).
 *
 *  - A dataset is sequences of frames from sources: .npy files, arrays in
 *    the caller's memory, the built-in synthetic frames, or any caller's
 *    source (frae_source; the frae command adds audio files this way, their
 *    features computed by libfrae-audio).  Targets are a second dataset
 *    paired with the first sequence by sequence; validation is a held-out
 *    fraction of the sequences or another dataset.
 *  - A run trains one model on them for a number of epochs: shuffles
 *    (seeded), crops, truncated-BPTT windows, early stopping, the best
 *    model, a checkpoint after every epoch holding where training stands
 *    (so a resume continues bit for bit), per-band normalization statistics,
 *    a CSV log, data-parallel replicas (threads of this process, or ranks of
 *    the caller's transport, MPI for frae-mpi).  It calls the caller back
 *    after every epoch and before every batch, and installs no signal
 *    handler: a caller's handler sets the flag the run polls.
 *  - Options by name: one table of every model and training option (name,
 *    type, range, help, and the checkpoint metadata key it is recorded
 *    under), which the command line's parsing and --help, Python's keyword
 *    arguments and the checkpoints' records all come from.
 *
 * Errors are one line (a file named in it, what is wrong), and calls return
 * the frae command's exit statuses below. */
#ifndef FRAE_TRAIN_H
#define FRAE_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "frae.h"
#include "frae_io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the calls here return ('frae train''s exit codes). */
#define FRAE_RUN_OK 0
#define FRAE_RUN_FAILED                                                        \
    1                        /* diverged (the last checkpoint is kept), a
                                  read or a save failed, out of memory */
#define FRAE_RUN_BAD_INPUT 2 /* bad options, data or checkpoint */
#define FRAE_RUN_INTERRUPTED                                                   \
    130 /* stopped by the stop flag or a batch
                                    callback, after saving the checkpoint */

/* ---- Sources and datasets -------------------------------------------------
 * A source holds `sequences` sequences of `frames` frames of `dim` values
 * and reads a span of one of them as float32 on demand, so data larger than
 * memory trains a window at a time.  read may be called from several
 * threads at once (replicas). */
typedef struct frae_source {
    const char *name; /* for messages: a path (copied by the dataset) */
    long sequences, frames;
    int dim;
    int audio; /* 1: features computed from audio */
    /* frames t0..t0+nt-1 of sequence s into dst: 0, or -1 and one line in
     * err */
    int (*read)(void *ctx, long s, long t0, long nt, float *dst, char *err,
                size_t errlen);
    /* every value of sequences s0..s1-1 finite: 0, or -1 and one line
     * naming the first that is not (NULL: nothing to check) */
    int (*check)(void *ctx, long s0, long s1, char *err, size_t errlen);
    void (*close)(void *ctx); /* may be NULL */
    void *ctx;
} frae_source;
/* A .npy's frames (frae_io.h) as a source, named name (audio: features
 * made from audio, so that a run knows its input's kind); a's mapping or
 * descriptor moves into it (closed on failure too).  0 or a FRAE_RUN_*
 * status with one line in err. */
FRAE_API
int frae_source_from_npy(frae_npy *a, const char *name, int audio,
                         frae_source *out, char *err, size_t errlen);

typedef struct frae_dataset frae_dataset;

/* An empty dataset of frames of dim values (0: the first source's). */
FRAE_API
frae_dataset *frae_dataset_create(int dim);
FRAE_API
void frae_dataset_destroy(frae_dataset *ds);
/* Adds a source's sequences after those already there.  The dataset owns
 * the source from then on, also when this fails (it is closed).  Returns
 * 0 or a FRAE_RUN_* status with one line in err: a frame dimension other
 * than the dataset's, more than 2^31 - 1 sequences in all. */
FRAE_API
int frae_dataset_add_source(frae_dataset *ds, const frae_source *src, char *err,
                            size_t errlen);
/* A .npy of [T, D] or [N, T, D] frames, float32 or float64, mapped. */
FRAE_API
int frae_dataset_add_npy(frae_dataset *ds, const char *path, char *err,
                         size_t errlen);
/* sequences x frames x dim floats in the caller's memory, used in place:
 * they must stay there, unchanged, while the dataset is used. */
FRAE_API
int frae_dataset_add_array(frae_dataset *ds, const char *name, const float *x,
                           long sequences, long frames, int dim, char *err,
                           size_t errlen);
/* 'frae train''s built-in data: sequences of smooth synthetic frames of
 * the dataset's dimension (made now, held by the dataset). */
FRAE_API
int frae_dataset_add_synthetic(frae_dataset *ds, int sequences, int frames,
                               uint64_t seed, char *err, size_t errlen);
FRAE_API
long frae_dataset_sequences(const frae_dataset *ds);
FRAE_API
long frae_dataset_length(const frae_dataset *ds, long s); /* frames of s */
FRAE_API
long frae_dataset_total_frames(const frae_dataset *ds);
FRAE_API
int frae_dataset_dim(const frae_dataset *ds);
/* Whether some source is audio. */
FRAE_API
int frae_dataset_has_audio(const frae_dataset *ds);
/* Sequence s: its source's name, and (index) its place in that source. */
FRAE_API
const char *frae_dataset_origin(const frae_dataset *ds, long s, long *index);
FRAE_API
int frae_dataset_read(const frae_dataset *ds, long s, long t0, long nt,
                      float *dst, char *err, size_t errlen);
/* Checks every value of sequences s0..s1-1 is finite (the sources that
 * can check): 0 or FRAE_RUN_BAD_INPUT with one line.  A run checks
 * nothing itself: the caller checks (each replica its share, frae_share). */
FRAE_API
int frae_dataset_check(const frae_dataset *ds, long s0, long s1, char *err,
                       size_t errlen);
/* Replica `rank` of `size`'s share of n items: the count, and *first. */
FRAE_API
long frae_share(long n, int rank, int size, long *first);
/* Paths as 'frae train' takes them: each file as it is, each directory as
 * its .npy, .wav and .flac files, sorted by name.  *files (free with
 * frae_free_paths) holds *count paths.  0 or a FRAE_RUN_* status. */
FRAE_API
int frae_expand_paths(const char *const *paths, int n, char ***files,
                      int *count, char *err, size_t errlen);
FRAE_API
void frae_free_paths(char **files, int count);

/* ---- Replicas and transports ----------------------------------------------
 * Data-parallel training: each replica of the model trains on its share
 * of every batch (frae_share of its sequences), and the replicas sum their
 * windows' counts and gradients (frae_set_reducer), every batch's figures,
 * and agree on errors and stops.  A run makes its replicas itself as
 * threads (frae_run_config.replicas), or is one rank of the caller's
 * transport (MPI in frae-mpi: one process per rank).  A transport's sums
 * must leave every rank the same bits; adding in rank order (the calls
 * below) makes any transport give the bits of the threads. */
typedef struct frae_transport {
    int rank, size;
    const char *kind; /* "MPI ranks": what the ranks are, for messages */
    /* sum n values elementwise across the ranks, in place: 0, or non-zero
     * to fail the run (every rank must fail alike) */
    int (*sum_f32)(void *ctx, float *values, size_t n);
    int (*sum_f64)(void *ctx, double *values, size_t n);
    /* sizes the buffers for sums of up to n32 floats and n64 doubles; every
     * rank calls it once before training (NULL: nothing to size) */
    int (*prepare)(void *ctx, size_t n32, size_t n64);
    void *ctx;
} frae_transport;

/* The one order of every sum: dst[i] = ((src[0][i] + src[1][i]) + ...) +
 * src[n_src-1][i], for i in lo..hi-1. */
FRAE_API
void frae_sum_rank_order_f32(const float *const *src, int n_src, size_t lo,
                             size_t hi, float *dst);
FRAE_API
void frae_sum_rank_order_f64(const double *const *src, int n_src, size_t lo,
                             size_t hi, double *dst);

/* ---- A run's settings --------------------------------------------------- */
typedef struct {
    frae_config model;     /* the model and its training settings; batch is
                           the run's, shared out among the replicas */
    int epochs;            /* the run's total, as Keras's epochs with
                           initial_epoch: 0 means 10, or a resumed
                           checkpoint's total */
    int more_epochs;       /* > 0: train this many epochs past where the run
                           stands (Python's epochs of one fit), the one in
                           progress counting as one; overrides epochs */
    int patience;          /* epochs without a better monitored loss before
                           stopping; 0: never; -1: 0, or the checkpoint's */
    double val_split;      /* this seeded fraction of the sequences validates;
                           -1: 0, or the checkpoint's */
    int crop;              /* > 0: train on crops of this many frames, cut at
                           a random offset each epoch and shuffled across
                           sequences; validation on whole sequences */
    int shuffle;           /* 1: a fresh seeded order every epoch (default) */
    int replicas;          /* data-parallel threads, 1: alone */
    const char *normalize; /* NULL (auto: on for audio, else off), "on"
                              (statistics over the training set), "off", or
                              a .npy of [2, D]: means, then stds */
    const char *save;      /* the checkpoint after every epoch and on a stop;
                           NULL: none */
    const char *save_best; /* the model with the best monitored loss */
    const char *resume;    /* continue this checkpoint where it stands
                           (frae_run_config_resume reads it first) */
    const char *log_csv;   /* per-epoch figures appended ("-": stdout) */
    int audio;             /* 1: the data are audio features (normalization
                           defaults on; pitch needs it) */
    /* the caller's metadata, kept in every checkpoint (the frae command's
     * audio features); not "frae." or "train." keys */
    const frae_meta *meta;
    int n_meta;
    /* filled by frae_option_set: which options were given (bit per table
     * row), for the derived defaults and the resume checks */
    uint64_t given;
    int last_fixed;     /* the last given option that the checkpoint fixes
                           (frae_option index), -1: none */
    int epochs_resumed; /* set by frae_run_config_resume: epochs was the
                           checkpoint's total */
    int recipe;         /* 0: none; else frae_recipe_at(recipe - 1), whose
                           options frae_options_finish sets where not given;
                           recorded in checkpoints (train.recipe) */
} frae_run_config;

/* Every default (as 'frae train' with no option: the default dense model,
 * batch 8, one thread, no checkpoint). */
FRAE_API
void frae_run_config_default(frae_run_config *rc);
/* Fills in what was left to the run: epochs 10, patience 0, val_split 0;
 * FRAE_RUN_BAD_INPUT if both a split and validation data (has_val_data)
 * are asked for. */
FRAE_API
int frae_run_config_settle(frae_run_config *rc, int has_val_data, char *err,
                           size_t errlen);
/* rc->resume: FRAE_RUN_BAD_INPUT if an option the checkpoint fixes was
 * given (the model and its training settings come from it). */
FRAE_API
int frae_run_config_resumable(const frae_run_config *rc, char *err,
                              size_t errlen);
/* Reads rc->resume: its model, and its run's settings where rc left them
 * to it (epochs, patience, val_split; always the batch and crop); checks
 * its training state is whole.  isa and threads stay rc's. */
FRAE_API
int frae_run_config_resume(frae_run_config *rc, char *err, size_t errlen);
/* Sizes checked before any data is built: the model's memory at the least
 * capacity it could be given, and with builtin_sequences > 0 the built-in
 * data's with it.  dim_known 0: the data files decide the frame dimension,
 * nothing to check yet.  replicas: how many share the batch. */
FRAE_API
int frae_run_check_sizes(const frae_run_config *rc, int dim_known, int replicas,
                         long builtin_sequences, long builtin_frames, char *err,
                         size_t errlen);
/* Which datasets can go together, before they are loaded (a run checks
 * it again): targets need data files, validation data with targets needs
 * its targets, and a resumed run the kind of targets it had. */
FRAE_API
int frae_run_check_pairing(const frae_run_config *rc, int data_files,
                           int targets, int val_data, int val_targets,
                           char *err, size_t errlen);

/* ---- What a run reports --------------------------------------------------- */
typedef struct {
    int rank;                /* the replica calling (0: the lead) */
    const frae_model *model; /* its model */
    const char *data;        /* "64 sequences, 6400 frames, dim 80" */
    long train_sequences, val_sequences;
    int epoch;         /* epochs already trained (resumed: > 0) */
    long batch_done;   /* ... and batches of the next */
    int epochs;        /* the run's total */
    int replicas;      /* replicas or ranks (1: alone) */
    const char *kind;  /* "replicas", a transport's kind; NULL alone */
    int batch_size;    /* the run's batch (capped at the sequences) */
    int replica_batch; /* each one's share of it, at most */
    int resumed;
} frae_run_info;

typedef struct {
    int rank;            /* the replica calling (0: the lead) */
    int epoch, epochs;   /* the epoch in progress (1 for the first) */
    long batch, batches; /* batches of it done, of */
    double loss;         /* their mean loss so far */
    long frames;         /* their frames */
    double seconds;      /* since the epoch started */
} frae_run_progress;

typedef struct {
    int epoch, epochs;      /* epochs done (this one included), of */
    double loss, mae, rate; /* the epoch's: loss is the objective
                                 (distortion, + rate_lambda x rate); rate
                                 in bits per frame, with a prior */
    int has_val;
    double val_loss, val_mae, val_rate; /* NaN without validation */
    int prior;                          /* the model has a prior (rates mean
                                 something) */
    long frames;
    double seconds, frames_per_s;
    int improved;   /* the best monitored loss so far */
    int early_stop; /* patience ran out: the last epoch */
    double best;    /* the best monitored loss, and its epoch */
    int best_epoch;
} frae_epoch_log;

typedef struct {
    void *ctx;
    /* once set-up is done, before the first batch, on every replica (its
     * own thread) */
    void (*on_start)(void *ctx, const frae_run_info *info);
    /* before every training batch, on every replica (its own thread):
     * non-zero stops the run as the stop flag does */
    int (*on_batch)(void *ctx, const frae_run_progress *p);
    /* after every epoch's figures, before its checkpoints are written
     * (the lead): non-zero stops the run after this epoch, as early
     * stopping does */
    int (*on_epoch)(void *ctx, const frae_epoch_log *log);
    /* polled at every batch: once set, the run stops at the end of the
     * batch and saves (a signal handler sets it: the run installs none) */
    const volatile sig_atomic_t *stop;
    /* NULL: alone or rc.replicas threads; else this process is
     * transport->rank of transport->size */
    const frae_transport *transport;
} frae_run_hooks;

/* After frae_run_train. */
typedef struct {
    int epoch, epochs; /* epochs done, of the run's total */
    int early_stopped; /* by patience */
    int patience;
    int monitored_val; /* the monitored loss was validation's */
    double best;
    int best_epoch;
    double seconds;                       /* training (set-up excluded) */
    double reduced_bytes, reduce_seconds; /* the gradients' sums */
    long reduce_calls;
} frae_run_result;

/* ---- A run ------------------------------------------------------------------
 * frae_run_create (settings copied), optionally start from another run or
 * model, then frae_run_train with the datasets (borrowed until it
 * returns), then the trained model.  One frae_run_train per run. */
typedef struct frae_run frae_run;

FRAE_API
frae_run *frae_run_create(const frae_run_config *rc, char *err, size_t errlen);
FRAE_API
void frae_run_destroy(frae_run *r);
/* Starts from m's weights (and its Adam state, if it trains; its
 * normalization statistics if with_normalization) instead of a new
 * model's: a model of the same shape. */
FRAE_API
int frae_run_start_from(frae_run *r, const frae_model *m,
                        int with_normalization);
/* Continues prev (trained): its model, Adam state and statistics, and
 * where its epochs stand (order, shuffling, crops), if r trains on data
 * and settings that continue them (the same sequences, batch, split and
 * crops); else its epochs start afresh from prev's model.  The early-
 * stopping counters start afresh: each continuation is a new fit. */
FRAE_API
int frae_run_continue(frae_run *r, const frae_run *prev);
/* Sets up (the checkpoint resumed, the split, the model, statistics) and
 * trains until the run's total, early stopping, a callback or the stop
 * flag.  train: the data (required); targets, val, val_targets may be
 * NULL.  Returns a FRAE_RUN_* status; frae_run_error says why. */
FRAE_API
int frae_run_train(frae_run *r, frae_dataset *train, frae_dataset *targets,
                   frae_dataset *val, frae_dataset *val_targets,
                   const frae_run_hooks *hooks);
/* The line to show after a status other than FRAE_RUN_OK (also for
 * FRAE_RUN_INTERRUPTED: where it stopped), and the replica it came from
 * (0: the lead or alone); NULL when another rank says it (a transport's
 * rank whose lead reports the same failure). */
FRAE_API
const char *frae_run_error(const frae_run *r, int *rank);
/* The trained model (the lead replica's), owned by the run; NULL before
 * set-up. */
FRAE_API
frae_model *frae_run_model(frae_run *r);
FRAE_API
void frae_run_get_result(const frae_run *r, frae_run_result *out);

/* ---- Options by name ---------------------------------------------------------
 * One row per option of the model and its training.  The frae command
 * parses 'frae train' (and the model options of 'frae import') with it and
 * prints their --help from it; Python's FRAE takes its keywords from it;
 * a row with a "frae." meta key is recorded in checkpoints under it. */
typedef enum {
    FRAE_OPTION_INT,       /* an integer in lo..hi */
    FRAE_OPTION_FLOAT,     /* a finite number in [lo, hi] */
    FRAE_OPTION_CHOICE,    /* one of choices, "a|b|c" */
    FRAE_OPTION_WIDTHS,    /* hidden widths "512,256", or none */
    FRAE_OPTION_QUANTIZER, /* none, binary or uniform:N */
    FRAE_OPTION_FLAG,      /* no value: sets it */
    FRAE_OPTION_TEXT       /* a path or a word */
} frae_option_type;

/* Where an option is listed in --help. */
typedef enum {
    FRAE_SECTION_MODEL, /* model (fixed by the checkpoint) */
    FRAE_SECTION_TRAINING,
    FRAE_SECTION_PARALLEL,   /* data-parallel training */
    FRAE_SECTION_VALIDATION, /* validation and stopping */
    FRAE_SECTION_TARGETS,
    FRAE_SECTION_CHECKPOINTS, /* checkpoints and logs */
    FRAE_SECTION_FEATURES,    /* audio features */
    FRAE_SECTION_BUILTIN,     /* built-in data */
    FRAE_SECTIONS
} frae_option_section;

#define FRAE_OPTION_FIXED                                                      \
    1 /* the model or its training: a resume takes it
                                from the checkpoint */
#define FRAE_OPTION_FIT                                                        \
    2                        /* a setting of a run rather than of the
                                model (Python: an argument of fit) */
#define FRAE_OPTION_IMPORT 4 /* 'frae import' takes it too */

typedef struct {
    const char *name;   /* the command line's, without "--": "latent" */
    const char *python; /* Python's keyword: "latent" */
    frae_option_type type;
    double lo, hi;       /* INT and FLOAT */
    const char *choices; /* CHOICE: "dense|gru" */
    const char *value;   /* --help: the value's name ("L") */
    const char *help;    /* --help: what it does (its default last) */
    const char *meta;    /* the checkpoint metadata key it is recorded
                              under, or NULL */
    frae_option_section section;
    unsigned flags; /* FRAE_OPTION_* */
    /* the value when it is not given, as frae_option_format writes it once
     * frae_run_config_settle has run; NULL where it depends (on the family,
     * on other options, on the machine) or where not given means off */
    const char *def;
} frae_option;

FRAE_API
int frae_option_count(void);
FRAE_API
const frae_option *frae_option_at(int index);
/* The row named "latent", "--latent" or by its Python keyword: its index,
 * or -1. */
FRAE_API
int frae_option_find(const char *name);
/* Parses value (NULL for a flag) into rc and marks the option given:
 * 0, or FRAE_RUN_BAD_INPUT with one line naming the option as name gives
 * it ("--latent expects an integer in 1..2147483647, got '0'"). */
FRAE_API
int frae_option_set(frae_run_config *rc, const char *name, const char *value,
                    char *err, size_t errlen);
/* The value of row `index` in rc, as frae_option_set takes it: the bytes
 * written (an empty string for a path not set; "on"/"off" for a flag). */
FRAE_API
size_t frae_option_format(const frae_run_config *rc, int index, char *out,
                          size_t cap);
FRAE_API
int frae_option_given(const frae_run_config *rc, int index);
/* The defaults that follow from what was given (after the last
 * frae_option_set): the GRU family's history and widths unless given, a
 * prior of 16 units for a rate_lambda, the prior's autoregression on, the
 * range coder's pitch coder (envelope) for pitch with a prior. */
FRAE_API
void frae_options_finish(frae_run_config *rc);
/* ---- Recipes -------------------------------------------------------------
 * The demo's models by name ('frae train --recipe speech', Python's
 * FRAE(recipe="speech")): the option "recipe" selects one, and
 * frae_options_finish sets each of its options that was not given. */
typedef struct {
    const char *name;    /* "speech" */
    const char *summary; /* one line: what it trains */
    /* option name, value pairs (value NULL: a flag), ended by a NULL name */
    const char *options[32];
    int needs_targets; /* trains toward --targets (denoise) */
} frae_recipe;

FRAE_API
int frae_recipe_count(void);
FRAE_API
const frae_recipe *frae_recipe_at(int index);
/* The recipe named name: its index, or -1. */
FRAE_API
int frae_recipe_find(const char *name);

/* An option's --help lines ("  --latent L           latent units (16)\n",
 * wrapped): the bytes written (cap permitting). */
FRAE_API
size_t frae_option_help(const frae_option *o, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
