/* The frae command line: shared declarations. */
#ifndef FRAE_CLI_H
#define FRAE_CLI_H

#include <signal.h>
#include <stdint.h>

#include "formats.h"
#include "frae.h"
#include "frae_audio.h"

/* Exit codes, documented in 'frae --help' and the README. */
#define EXIT_OK 0
#define EXIT_FAILED 1      /* the run failed: diverged, could not save */
#define EXIT_USAGE 2       /* bad option, value, file or config */
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

/* ---- data-parallel training (dist.c; MPI: dist_mpi.c) ------------------ */
/* This process's (or thread's) place among the replicas of one training
 * run, and the sums across them, in rank order (the same bits whatever
 * moves them).  size 1: training alone, no reducer. */
typedef struct cli_thread_group cli_thread_group;
typedef struct cli_dist {
    int rank, size;
    const char *kind;        /* "replicas", "MPI ranks"; NULL alone */
    frae_reducer reducer;    /* for the library; ctx is this struct */
    cli_thread_group *group; /* replicas: the threads' shared buffers */
    void *mpi;               /* MPI ranks: the transport's buffers */
    double timeout;          /* MPI: seconds a sum waits for the others */
    /* set by a signal (Ctrl-C, or the launcher stopping the job): a sum
     * still waiting a second later will not be answered */
    const volatile sig_atomic_t *signalled;
    /* sizes the buffers for sums of up to n32 floats and n64 doubles
     * (every replica, once, before training) */
    int (*prepare)(struct cli_dist *d, size_t n32, size_t n64);
    /* measured: the gradients' sums */
    double reduced_bytes, reduce_seconds;
    long reduce_calls;
    /* tests: FRAE_FAULT=kind@rank:n makes replica `rank` fail at its n-th
     * data read (read), or at its n-th batch exit (exit), be killed
     * (kill) or hang (hang) */
    char fault_kind[8];
    int fault_rank;
    long fault_at, fault_reads, fault_batches;
} cli_dist;
void cli_dist_solo(cli_dist *d);
/* Threads of one process, sums of at most cap32 floats, cap64 doubles. */
cli_thread_group *cli_thread_group_new(int size, size_t cap32, size_t cap64);
void cli_thread_group_free(cli_thread_group *g);
void cli_dist_threads(cli_dist *d, cli_thread_group *g, int rank);
/* The order of every sum, in both transports: dst[i] = ((src[0][i] +
 * src[1][i]) + ...) + src[n_src-1][i], for i in lo..hi-1. */
void cli_rank_order_f32(const float *const *src, int n_src, size_t lo,
                        size_t hi, float *dst);
void cli_rank_order_f64(const double *const *src, int n_src, size_t lo,
                        size_t hi, double *dst);
/* Sums n doubles across the replicas in place (alone: nothing). */
int cli_dist_sum(cli_dist *d, double *x, size_t n);
/* Whether any replica's flag is set (agreement on errors and stops). */
int cli_dist_any(cli_dist *d, int flag);
/* This replica's share of n items: the count, and *lo its first. */
int cli_dist_slice(const cli_dist *d, long n, long *lo);
/* Reads FRAE_FAULT (tests); then whether a fault of kind fires now. */
void cli_fault_setup(cli_dist *d);
int cli_fault(cli_dist *d, const char *kind);
/* At every batch: the exit, kill and hang faults. */
void cli_fault_point(cli_dist *d);
#ifdef FRAE_MPI
/* MPI ranks (dist_mpi.c): after MPI_Init; sums of at most cap32 floats. */
int cli_dist_mpi(cli_dist *d, size_t cap32, double timeout);
void cli_dist_mpi_free(cli_dist *d);
#endif

/* ---- options ------------------------------------------------------------ */
typedef struct {
    const char *name;  /* "--epochs" */
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

/* Model-shape and training options shared by train and import.  Returns
 * 0 if handled, 1 if not a model option, or an exit code. */
enum {
    CLI_GIVEN_HISTORY = 1,
    CLI_GIVEN_ENC = 2,
    CLI_GIVEN_DEC = 4,
    CLI_GIVEN_FAMILY = 8,
    CLI_GIVEN_PRIOR = 16,
    CLI_GIVEN_PRIOR_AR = 32,
    CLI_GIVEN_PITCH_CODER = 64
};
/* *given collects the CLI_GIVEN_* options seen. */
int cli_model_option(frae_config *cfg, unsigned *given, const char *name,
                     const char *value);
/* After parsing: the GRU family's defaults for what was not given. */
void cli_model_defaults(frae_config *cfg, unsigned given);
extern const cli_opt cli_model_opts[];
#define CLI_MODEL_HELP                                                         \
    "  --family F           dense (fed-back frames) or gru (the paper's\n"    \
    "                       FRAE: GRU cells, h_dec fed back) (dense)\n"       \
    "  --frame-dim D        frame dimension (80)\n"                           \
    "  --history K          decoded frames fed back, 0 = plain AE\n"          \
    "                       (dense 4, gru 0)\n"                               \
    "  --enc W1,W2,...      encoder hidden widths, or none; for gru the\n"    \
    "                       first is the GRU (dense 512,256; gru 240)\n"      \
    "  --latent L           latent units (16)\n"                              \
    "  --dec W1,W2,...      decoder hidden widths, or none; for gru the\n"    \
    "                       first is the GRU (dense 256,512; gru 240)\n"      \
    "  --activation A       relu or tanh, hidden layers (relu)\n"             \
    "  --quantizer Q        none, binary or uniform:N (none)\n"               \
    "  --prior P            a learned prior over the codes, P tanh units\n"    \
    "                       on the decoder's state: the codec then\n"         \
    "                       entropy-codes them (variable rate); 0 = off\n"    \
    "                       (0; 16 when --rate-lambda is given)\n"            \
    "  --prior-ar on|off    with a prior: each code's probability also\n"    \
    "                       sees the frame's earlier codes (on)\n"           \
    "  --pitch-coder C      with pitch and a prior, how its codes are\n"     \
    "                       range-coded: envelope (the default: as\n"      \
    "                       ranged, the voicing also in the context of\n" \
    "                       the decoded envelope), ranged (two frames'\n" \
    "                       context, counts fitted on speech) or 4bit\n"  \
    "                       (as before them)\n"                          \
    "  --seed S             initialisation and shuffling seed (1)\n"

/* ---- audio features -------------------------------------------------------- */
typedef struct {
    frae_features f;
    int resample;  /* resample audio at another rate (default), else refuse */
    int given;     /* a feature option was given */
} cli_audio;

void cli_audio_default(cli_audio *a);
/* 0 if handled, 1 if not a feature option, or an exit code. */
int cli_feature_option(cli_audio *a, const char *name, const char *value);
extern const cli_opt cli_feature_opts[];
#define CLI_FEATURE_HELP                                                       \
    "  --sample-rate HZ     audio rate (16000); other rates are resampled\n"   \
    "  --no-resample        refuse audio at another rate instead\n"           \
    "  --mels N             mel bands (80)\n"                                 \
    "  --hop N, --win N     hop and window in samples (160, 400)\n"          \
    "  --fft N              FFT size (512)\n"                                 \
    "  --fmin HZ, --fmax HZ mel range (0, 8000)\n"
/* Audio, by extension: anything but .npy (and .fbs, .safetensors). */
int cli_is_audio(const char *path);
/* The feature parameters a checkpoint was trained with: 1 if it has them,
 * 0 if not, or -1 after printing an error.  f->pitch: whether its codec
 * carries pitch. */
int cli_model_features(const char *model, frae_features *f);
/* Adds the features.* metadata for f to meta (needs 10 slots of vals). */
int cli_features_meta(const frae_features *f, char (*vals)[64],
                      frae_meta *meta);
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

/* ---- datasets ------------------------------------------------------------- */
typedef struct {
    int file;    /* index into files, or -1 for built-in data */
    long index;  /* sequence within the file */
    long frames;
} cli_seq;

typedef struct {
    frae_npy *files;
    char **names;
    int n_files;
    float *builtin; /* built-in synthetic data, [n][frames][dim] */
    cli_seq *seqs;
    long n_seqs;
    int dim;
    long total_frames;
    int has_audio; /* some files were audio, turned into features */
} cli_dataset;

/* Loads .npy files and directories of them (sorted), checking every file
 * has frame dimension dim (0: the first file's) and every value is finite:
 * with replicas (share non-NULL), those of this replica's share of the
 * sequences only (the replicas agree on the result).  Returns 0 or
 * EXIT_USAGE after printing the error. */
int cli_dataset_load(cli_dataset *ds, char **paths, int n_paths, int dim,
                     const cli_audio *audio, const cli_dist *share);
int cli_dataset_builtin(cli_dataset *ds, int n_seqs, int frames, int dim,
                        uint64_t seed);
void cli_dataset_free(cli_dataset *ds);
/* Frames t0..t0+nt-1 of sequence s (all inside it) as float32.  Returns
 * 0, or EXIT_FAILED after printing the error (an audio file's features
 * could not be read back). */
int cli_dataset_read(const cli_dataset *ds, long s, long t0, long nt,
                     float *dst);

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

/* Outputs are checked before they are written: finite weights can still
 * overflow.  The index of y's first non-finite value, or -1; and the
 * one-line refusal (exit 2) naming where it is. */
long cli_first_nonfinite(const float *y, size_t n);
int cli_fail_nonfinite(const char *model, long seq, long frame);

/* Whether an output path can be written out of order: a file, or none
 * yet; not "-", a FIFO or a device, which take their bytes in order. */
int cli_output_seekable(const char *path);

#endif
