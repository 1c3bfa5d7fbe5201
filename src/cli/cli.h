/* The frae command line: shared declarations. */
#ifndef FRAE_CLI_H
#define FRAE_CLI_H

#include <signal.h>
#include <stdint.h>

#include "frae.h"
#include "frae_audio.h"
#include "frae_codec.h"
#include "frae_io.h"
#include "frae_train.h"

/* Exit codes, documented in 'frae --help' and docs/command-line.md. */
#define EXIT_OK 0
#define EXIT_FAILED 1        /* the run failed: diverged, could not save */
#define EXIT_USAGE 2         /* bad option, value, file or config */
#define EXIT_INTERRUPTED 130 /* Ctrl-C: stopped cleanly after saving */

/* "frae train" etc., for messages. */
extern _Thread_local const char *cli_cmd;

/* Where a command's report goes (cli_printf): standard output, or
 * standard error once an output is standard output itself ("-",
 * /dev/stdout: cli_output_path), so that the report never mixes with the
 * bytes of the output. */
extern FILE *cli_report;
#define cli_printf(...) fprintf(cli_report ? cli_report : stdout, __VA_ARGS__)
/* An output path given: if it names standard output, the report moves to
 * standard error.  Returns path. */
const char *cli_output_path(const char *path);

/* Prints "<cli_cmd>: <message>" as one line on stderr; returns code. */
int cli_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* While buf is set (this thread), cli_fail keeps its last line there
 * instead of printing it; NULL prints again. */
void cli_fail_capture(char *buf, size_t len);

/* ---- data-parallel training over MPI (dist_mpi.c, frae-mpi only) -------- */
/* This process's place among the ranks of one training run, and the
 * transport the library's run sums through (frae_train.h: rank-order sums,
 * the same bits as replicas in threads).  size 1: training alone (or in
 * the library's own replica threads). */
typedef struct cli_dist {
    int rank, size;
    const char *kind;         /* "MPI ranks"; NULL alone */
    frae_transport transport; /* for the run; ctx is this struct */
    void *mpi;                /* the transport's buffers */
    double timeout;           /* seconds a sum waits for the others */
    /* set by a signal (Ctrl-C, or the launcher stopping the job): a sum
     * still waiting a second later will not be answered */
    const volatile sig_atomic_t *signalled;
} cli_dist;
void cli_dist_solo(cli_dist *d);
/* Sums n doubles across the ranks in place (alone: nothing). */
int cli_dist_sum(cli_dist *d, double *x, size_t n);
#ifdef FRAE_MPI
/* MPI ranks (dist_mpi.c): after MPI_Init; sums of at most cap32 floats. */
int cli_dist_mpi(cli_dist *d, size_t cap32, double timeout);
void cli_dist_mpi_free(cli_dist *d);
#endif

/* Tests: FRAE_FAULT=kind@rank:n makes replica `rank` fail at its n-th data
 * read (read), or at its n-th batch exit (exit), be killed (kill) or hang
 * (hang); frae train counts and calls cli_fault_fire. */
typedef struct {
    char kind[8]; /* "" none */
    int rank;
    long at;
} cli_fault;
void cli_fault_setup(cli_fault *f);
/* exit, kill or hang, as f says (read faults fail the read instead) */
void cli_fault_fire(const cli_fault *f);

/* ---- options ------------------------------------------------------------ */
typedef struct {
    const char *name; /* "--epochs" */
    int takes_value;
} cli_opt;

/* Calls on_opt for each option (value NULL for flags) and on_pos for
 * each positional argument; -h/--help calls help and exits 0.  Returns 0,
 * or an exit code after printing the error. */
int cli_parse(int argc, char **argv, const cli_opt *opts,
              int (*on_opt)(void *ctx, const char *name, const char *value),
              int (*on_pos)(void *ctx, const char *arg), void (*help)(void),
              void *ctx);

int cli_int(const char *opt, const char *s, long lo, long hi, int *out);
int cli_long(const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *opt, const char *s, double lo, double hi,
               double *out);
int cli_choice(const char *opt, const char *s, const char *const *names,
               int count, int *out);

/* ---- audio features -------------------------------------------------------- */
typedef struct {
    frae_features f;
    int resample; /* resample audio at another rate (default), else refuse */
    int given;    /* a feature option was given */
} cli_audio;

void cli_audio_default(cli_audio *a);
/* 0 if handled, 1 if not a feature option, or an exit code. */
int cli_feature_option(cli_audio *a, const char *name, const char *value);
extern const cli_opt cli_feature_opts[];
#define CLI_FEATURE_HELP                                                       \
    "  --sample-rate HZ     audio rate (16000); other rates are resampled\n"   \
    "  --no-resample        refuse audio at another rate instead\n"            \
    "  --mels N             mel bands (80)\n"                                  \
    "  --hop N, --win N     hop and window in samples (160, 400)\n"            \
    "  --fft N              FFT size (512)\n"                                  \
    "  --fmin HZ, --fmax HZ mel range (0, 8000)\n"
/* Audio, by extension: anything but .npy (and .fbs, .safetensors). */
int cli_is_audio(const char *path);
/* The feature parameters a checkpoint was trained with: 1 if it has them,
 * 0 if not, or -1 after printing an error.  f->pitch: whether its codec
 * carries pitch. */
int cli_model_features(const char *model, frae_features *f);
void cli_features_describe(const frae_features *f, char *out, size_t cap);
/* The features of an audio file as frames ([T, n_mels]), computed block by
 * block into an unlinked temporary file (TMPDIR, else /tmp), read back a
 * window at a time.
 * Returns 0 or an exit code after printing the error. */
int cli_audio_frames(const char *path, const frae_features *f, int resample,
                     frae_npy *out);
/* Audio of a model: features computed with the checkpoint's parameters.
 * Returns 0 or an exit code after printing the error. */
int cli_model_audio(const char *model, const char *path,
                    const cli_audio *requested, int with_pitch, frae_npy *out);

/* ---- normalization statistics: a .npy of [2, D], means then stds ------------ */
int cli_read_norm_stats(const char *path, int dim, float *stats);
/* Sets them on m (made with cfg.normalize); what names them in errors. */
int cli_set_norm_stats(frae_model *m, const char *what, const float *stats);

/* ---- commands that run a model on one input ------------------------------ */
typedef struct {
    const char *model, *input, *output;
    frae_isa isa;
    cli_audio audio;
    int with_pitch; /* audio IN: frames carry f0 and voicing too, if the
                       model codes pitch (encode) */
} cli_io;

void cli_io_default(cli_io *io);
/* --output/-o, --isa and the feature options: 0 if handled, 1 if not, or
 * an exit code. */
int cli_io_option(cli_io *io, const char *name, const char *value);
/* MODEL, then IN. */
int cli_io_positional(cli_io *io, const char *arg);
/* IN as frames: a .npy file, or audio through the model's features.
 * Returns 0 or an exit code after printing the error. */
int cli_open_frames(const cli_io *io, frae_npy *in);

/* ---- commands --------------------------------------------------------------- */
int cmd_train(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_vocode(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_models(int argc, char **argv);

/* Outputs are checked before they are written: finite weights can still
 * overflow.  The index of y's first non-finite value, or -1; and the
 * one-line refusal (exit 2) naming where it is. */
long cli_first_nonfinite(const float *y, size_t n);
int cli_fail_nonfinite(const char *model, long seq, long frame);

/* Whether an output path can be written out of order: a file, or none
 * yet; not "-", a FIFO or a device, which take their bytes in order. */
int cli_output_seekable(const char *path);

#endif
