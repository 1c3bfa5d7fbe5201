/* Option parsing and datasets shared by the frae commands. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

_Thread_local const char *cli_cmd = "frae";
FILE *cli_report;

const char *cli_output_path(const char *path)
{
    if (path && frae_output_descriptor(path) == STDOUT_FILENO)
        cli_report = stderr;
    return path;
}
static _Thread_local char *fail_buf;
static _Thread_local size_t fail_len;

void cli_fail_capture(char *buf, size_t len)
{
    fail_buf = buf;
    fail_len = len;
}

int cli_fail(int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++) /* whatever a file's bytes quoted in it hold */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    if (fail_buf)
        snprintf(fail_buf, fail_len, "%s: %s", cli_cmd, msg);
    else
        fprintf(stderr, "%s: %s\n", cli_cmd, msg);
    return code;
}

/* The table's entry named exactly as the first len bytes of arg, or -1. */
static int find_opt(const cli_opt *opts, int n, const char *arg, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, arg, len))
            return i;
    return -1;
}

static int positional(int (*on_pos)(void *, const char *), void *ctx,
                      const char *arg)
{
    if (!on_pos)
        return cli_fail(EXIT_USAGE,
                        "unexpected argument '%s' (see '%s --help')", arg,
                        cli_cmd);
    return on_pos(ctx, arg);
}

int cli_parse(int argc, char **argv, const cli_opt *opts,
              int (*on_opt)(void *ctx, const char *name, const char *value),
              int (*on_pos)(void *ctx, const char *arg), void (*help)(void),
              void *ctx)
{
    /* getopt_long over the command's table: "--name value" or
     * "--name=value", -o for --output, -h and --help, "--" before
     * arguments that start with a dash.  Names must be given whole:
     * getopt_long would take a unique prefix, which a later option could
     * make mean something else. */
    int n = 0;
    while (opts && opts[n].name)
        n++;
    struct option *longs = calloc((size_t)n + 2, sizeof *longs);
    char **args = malloc(sizeof *args * ((size_t)argc + 2));
    if (!longs || !args) {
        free(longs), free(args);
        return cli_fail(EXIT_FAILED, "out of memory");
    }
    for (int i = 0; i < n; i++)
        longs[i] = (struct option){
            opts[i].name + 2,
            opts[i].takes_value ? required_argument : no_argument, NULL, i};
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    args[0] = (char *)cli_cmd; /* getopt's argv[0] */
    memcpy(args + 1, argv, sizeof *args * (size_t)argc);
    args[argc + 1] = NULL;
    /* '+': arguments are taken in place, in order; ':': a missing value
     * is reported to us rather than printed */
    const char *shorts =
        find_opt(opts, n, "--output", 8) >= 0 ? "+:ho:" : "+:h";
    int rc = 0, at = 1, end = argc + 1;
    optind = 0; /* a fresh scan */
    opterr = 0;
    while (!rc && at < end) {
        const char *given = args[at];
        if (!strcmp(given, "--")) { /* the rest are arguments */
            for (at++; !rc && at < end; at++)
                rc = positional(on_pos, ctx, args[at]);
            break;
        }
        if (given[0] != '-' || !given[1]) {
            rc = positional(on_pos, ctx, given);
            at++;
            continue;
        }
        optind = at;
        int c = getopt_long(end, args, shorts, longs, NULL);
        at = optind;
        size_t len = strcspn(given, "=");
        if (c == 'h') {
            help();
            free(longs), free(args);
            exit(EXIT_OK);
        } else if (c == 'o') {
            rc = on_opt(ctx, "--output", optarg);
        } else if (c >= 0 && c < n && find_opt(opts, n, given, len) == c) {
            rc = on_opt(ctx, opts[c].name, opts[c].takes_value ? optarg : NULL);
        } else if (c == ':') {
            rc = cli_fail(EXIT_USAGE, "option '%.*s' needs a value", (int)len,
                          given);
        } else if (given[len] == '=' && find_opt(opts, n, given, len) >= 0) {
            rc = cli_fail(EXIT_USAGE, "option '%.*s' takes no value", (int)len,
                          given);
        } else { /* unknown, or a prefix of a name */
            rc = cli_fail(EXIT_USAGE, "unknown option '%.*s' (see '%s --help')",
                          (int)len, given, cli_cmd);
        }
    }
    free(longs), free(args);
    return rc;
}

int cli_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < lo || v > hi)
        return cli_fail(EXIT_USAGE,
                        "%s expects an integer in %ld..%ld, got '%s'", opt, lo,
                        hi, s);
    *out = v;
    return 0;
}

int cli_int(const char *opt, const char *s, long lo, long hi, int *out)
{
    long v = 0;
    int rc = cli_long(opt, s, lo, hi, &v);
    if (!rc)
        *out = (int)v;
    return rc;
}

int cli_double(const char *opt, const char *s, double lo, double hi,
               double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v) || v < lo || v > hi)
        return cli_fail(EXIT_USAGE, "%s expects a number in [%g, %g], got '%s'",
                        opt, lo, hi, s);
    *out = v;
    return 0;
}

int cli_choice(const char *opt, const char *s, const char *const *names,
               int count, int *out)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 0;
        }
    char list[256] = "";
    for (int i = 0; i < count; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    return cli_fail(EXIT_USAGE, "%s got '%s'; expected one of: %s", opt, s,
                    list);
}

/* ---- audio features -------------------------------------------------------- */

void cli_audio_default(cli_audio *a)
{
    frae_features_default(&a->f);
    a->resample = 1;
    a->given = 0;
}

const cli_opt cli_feature_opts[] = {
    {"--sample-rate", 1}, {"--no-resample", 0}, {"--mels", 1},
    {"--hop", 1},         {"--win", 1},         {"--fft", 1},
    {"--fmin", 1},        {"--fmax", 1},        {NULL, 0}};

int cli_feature_option(cli_audio *a, const char *name, const char *v)
{
    double d = 0;
    int rc;
    if (!strcmp(name, "--no-resample"))
        return a->resample = 0, 0;
    if (!strcmp(name, "--sample-rate"))
        rc = cli_int(name, v, 1000, 384000, &a->f.sample_rate);
    else if (!strcmp(name, "--mels"))
        rc = cli_int(name, v, 1, 4096, &a->f.n_mels);
    else if (!strcmp(name, "--hop"))
        rc = cli_int(name, v, 1, 1 << 20, &a->f.hop);
    else if (!strcmp(name, "--win"))
        rc = cli_int(name, v, 2, 1 << 20, &a->f.win);
    else if (!strcmp(name, "--fft"))
        rc = cli_int(name, v, 16, 65536, &a->f.n_fft);
    else if (!strcmp(name, "--fmin") || !strcmp(name, "--fmax")) {
        rc = cli_double(name, v, 0, 192000, &d);
        if (name[3] == 'm' && name[4] == 'i')
            a->f.fmin = (float)d;
        else
            a->f.fmax = (float)d;
    } else
        return 1;
    a->given = 1;
    return rc;
}

int cli_is_audio(const char *path)
{
    struct stat sb;
    if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
        return 0; /* decided file by file when loaded */
    size_t n = strlen(path);
    return !(n >= 4 && !strcmp(path + n - 4, ".npy"));
}

void cli_features_describe(const frae_features *f, char *out, size_t cap)
{
    snprintf(out, cap, "%d mels, %d Hz, hop %d, window %d, FFT %d, %g-%g Hz",
             f->n_mels, f->sample_rate, f->hop, f->win, f->n_fft,
             (double)f->fmin, (double)f->fmax);
}

int cli_model_features(const char *model, frae_features *f)
{
    char err[512];
    frae_checkpoint *ck = frae_checkpoint_open(model, err, sizeof err);
    if (!ck) {
        cli_fail(EXIT_USAGE, "%s", err);
        return -1;
    }
    int rc = frae_checkpoint_features(ck, f, err, sizeof err);
    if (rc < 0)
        cli_fail(EXIT_USAGE, "%s: %s", model, err);
    frae_checkpoint_close(ck);
    return rc;
}

int cli_model_audio(const char *model, const char *path,
                    const cli_audio *requested, int with_pitch, frae_npy *out)
{
    frae_features f;
    int have = cli_model_features(model, &f);
    if (have < 0)
        return EXIT_USAGE;
    if (!have)
        return cli_fail(EXIT_USAGE,
                        "%s: %s was trained on frames, not audio features; "
                        "give .npy frames (or retrain with audio or "
                        "--audio-features)",
                        path, model);
    char want[160], got[160];
    cli_features_describe(&f, want, sizeof want);
    cli_features_describe(&requested->f, got, sizeof got);
    if (requested->given && strcmp(want, got))
        return cli_fail(EXIT_USAGE,
                        "%s was trained on features of %s; requested %s", model,
                        want, got);
    f.pitch = f.pitch && with_pitch;
    return cli_audio_frames(path, &f, requested->resample, out);
}

/* Features go to an unlinked temporary file as they are computed, and are
 * read back from it a window at a time (pread, not a mapping, so they never
 * become resident as a whole): audio of any length takes a few blocks of
 * memory to read and a window to use; its features are on disk. */
typedef struct {
    int fd;
    int errnum; /* a failed write's errno */
} file_sink;

static int file_sink_push(void *ctx, const float *feats, long frames,
                          int n_mels)
{
    file_sink *fs = ctx;
    const char *p = (const char *)feats;
    size_t left = sizeof(float) * (size_t)frames * (size_t)n_mels;
    while (left) {
        ssize_t w = write(fs->fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fs->errnum = w < 0 ? errno : ENOSPC;
            return -1;
        }
        p += w, left -= (size_t)w;
    }
    return 0;
}

int cli_audio_frames(const char *path, const frae_features *f, int resample,
                     frae_npy *out)
{
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/frae-features-XXXXXX",
             dir && *dir ? dir : "/tmp");
    file_sink fs = {mkstemp(tmp), 0};
    if (fs.fd < 0)
        return cli_fail(EXIT_FAILED,
                        "%s: cannot create a temporary file for its "
                        "features (%s): %s",
                        path, tmp, strerror(errno));
    unlink(tmp); /* gone when closed and unmapped, whatever happens */
    char err[512];
    long frames;
    if (frae_audio_stream_features(path, f, resample, file_sink_push, &fs,
                                   &frames, err, sizeof err)) {
        close(fs.fd);
        if (fs.errnum)
            return cli_fail(EXIT_FAILED,
                            "%s: cannot store its features in %s: %s", path,
                            dir && *dir ? dir : "/tmp", strerror(fs.errnum));
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    memset(out, 0, sizeof *out);
    out->ndim = 2;
    out->n = 1, out->t = frames, out->d = FRAE_FEATURE_WIDTH(f);
    out->dims[0] = frames, out->dims[1] = out->d;
    out->itemsize = 4;
    out->from_fd = 1; /* read as needed: never resident as a whole */
    out->fd = fs.fd;
    return 0;
}

/* ---- normalization statistics ---------------------------------------------- */

int cli_read_norm_stats(const char *path, int dim, float *stats)
{
    char err[512];
    frae_npy a;
    int status = EXIT_OK;
    if (frae_npy_open(path, &a, err, sizeof err) ||
        frae_npy_check_finite(&a, path, err, sizeof err))
        return cli_fail(EXIT_USAGE, "--normalize: %s", err);
    if (a.ndim != 2 || a.dims[0] != 2 || a.dims[1] != dim)
        status = cli_fail(EXIT_USAGE,
                          "--normalize: %s should be [2, %d] (the means, "
                          "then the stds of the %d bands)",
                          path, dim, dim);
    else if (frae_npy_read(&a, 0, 0, 2, stats))
        status = cli_fail(EXIT_USAGE, "--normalize: %s: cannot read it", path);
    frae_npy_close(&a);
    return status;
}

int cli_set_norm_stats(frae_model *m, const char *what, const float *stats)
{
    const int D = frae_get_config(m)->frame_dim;
    if (!frae_set_normalization(m, stats, stats + D))
        return EXIT_OK;
    char why[256] = "refused";
    frae_norm_stats_why(stats, stats + D, D, why, sizeof why);
    return cli_fail(EXIT_USAGE, "--normalize: %s: %s", what, why);
}

/* ---- commands that run a model on one input ------------------------------ */

void cli_io_default(cli_io *io)
{
    memset(io, 0, sizeof *io);
    cli_audio_default(&io->audio);
}

int cli_io_option(cli_io *io, const char *name, const char *v)
{
    if (!strcmp(name, "--output"))
        return io->output = cli_output_path(v), 0;
    if (!strcmp(name, "--isa")) {
        const char *names[8];
        int n = 0;
        while (n < 8 && (names[n] = frae_enum_name("isa", n)))
            n++;
        int tmp = 0, rc = cli_choice(name, v, names, n, &tmp);
        io->isa = (frae_isa)tmp;
        return rc;
    }
    return cli_feature_option(&io->audio, name, v);
}

int cli_io_positional(cli_io *io, const char *arg)
{
    if (!io->model)
        return io->model = arg, 0;
    if (!io->input)
        return io->input = arg, 0;
    return cli_fail(EXIT_USAGE, "unexpected argument '%s' (see '%s --help')",
                    arg, cli_cmd);
}

int cli_open_frames(const cli_io *io, frae_npy *in)
{
    char err[512];
    if (cli_is_audio(io->input))
        return cli_model_audio(io->model, io->input, &io->audio, io->with_pitch,
                               in);
    if (frae_npy_open(io->input, in, err, sizeof err) ||
        frae_npy_frames(in, io->input, err, sizeof err) ||
        frae_npy_check_finite(in, io->input, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    return 0;
}

long cli_first_nonfinite(const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return (long)i;
    return -1;
}

int cli_fail_nonfinite(const char *model, long seq, long frame)
{
    return cli_fail(EXIT_USAGE,
                    "%s: the model's output is not finite (sequence %ld, "
                    "frame %ld): its weights are too large for this input; "
                    "nothing was written",
                    model, seq, frame);
}

int cli_output_seekable(const char *path)
{
    struct stat sb;
    return strcmp(path, "-") && (stat(path, &sb) || S_ISREG(sb.st_mode));
}
