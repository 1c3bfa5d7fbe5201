/* What frae encode, decode and vocode share (codec_cli.h). */
#define _DEFAULT_SOURCE /* madvise */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "codec_cli.h"

/* the commands' own options; the codec's come from libfrae's table */
static const cli_opt own_list[] = {
    {"--output", 1}, {"--isa", 1},  {"--wav", 1},         {"--sample-rate", 1},
    {"--mels", 1},   {"--hop", 1},  {"--no-resample", 0}, {"--win", 1},
    {"--fft", 1},    {"--fmin", 1}, {"--fmax", 1}};
#define OWN (sizeof own_list / sizeof *own_list)

const cli_opt *codec_list(void)
{
    static cli_opt list[OWN + 32 + 1];
    static char names[32][48];
    if (!list[0].name) {
        memcpy(list, own_list, sizeof own_list);
        const int n = frae_codec_option_count();
        for (int r = 0; r < n && r < 32; r++) {
            const frae_codec_option *c = frae_codec_option_at(r);
            snprintf(names[r], sizeof names[r], "--%s", c->name);
            list[OWN + (size_t)r] = (cli_opt){names[r], c->metavar != NULL};
        }
    }
    return list;
}

int codec_opt(void *ctx, const char *name, const char *v)
{
    codec_opts *o = ctx;
    const int row = frae_codec_option_find(name);
    if (row >= 0) {
        const int sides = frae_codec_option_at(row)->sides;
        if (sides == FRAE_CODEC_ENCODES)
            o->encoder_opt = name;
        if (sides == FRAE_CODEC_DECODES)
            o->decoder_opt = name;
        char err[512];
        if (frae_codec_option_set(&o->cs, name, v, err, sizeof err))
            return cli_fail(EXIT_USAGE, "%s", err);
        return 0;
    }
    if (!strcmp(name, "--wav"))
        return o->wav = cli_output_path(v), 0;
    int rc = cli_io_option(&o->io, name, v);
    return rc == 1 ? cli_fail(EXIT_USAGE, "unknown option '%s'", name) : rc;
}

/* The --help lines of the codec's options for sides (FRAE_CODEC_ENCODES
 * or FRAE_CODEC_DECODES), from libfrae's table. */
void codec_options_help(int sides)
{
    char line[256];
    for (int r = 0; r < frae_codec_option_count(); r++) {
        const frae_codec_option *c = frae_codec_option_at(r);
        if (!(c->sides & sides))
            continue;
        frae_codec_option_help(c, line, sizeof line);
        cli_printf("%s", line);
    }
}

/* MODEL IN, and (as c2enc and opusdec take them) OUT: encode's stream;
 * decode's audio, or its frames if OUT ends in .npy */
int codec_pos(void *ctx, const char *arg)
{
    codec_opts *o = ctx;
    if (o->io.model && o->io.input && strcmp(cli_cmd, "frae vocode")) {
        size_t n = strlen(arg);
        const int npy = n >= 4 && !strcmp(arg + n - 4, ".npy");
        if (!strcmp(cli_cmd, "frae decode") && !npy && !o->wav)
            return o->wav = cli_output_path(arg), 0;
        if (!o->io.output)
            return o->io.output = cli_output_path(arg), 0;
    }
    return cli_io_positional(&o->io, arg);
}

/* ---- the model argument: a file, a shipped model's name, or none ----------
 * MODEL may be left out: encode then uses the shipped default (speech, the
 * fixed-rate 1.6 kbit/s codec), decode the shipped model whose hash the
 * stream names.  MODEL may also be a shipped model's name (speech,
 * speech-vbr, speech-3k2).  The first positional is a model when it is a
 * safetensors file (its byte 8 opens the JSON header) or the name of a
 * shipped one; anything else (a WAV, a .npy, a .fbs) is the input. */
static char resolved_model[2 * PATH_MAX];

static int looks_like_checkpoint(const char *path)
{
    unsigned char head[9];
    struct stat st;
    const size_t n = strlen(path);
    if (n > 12 && !strcmp(path + n - 12, ".safetensors"))
        return 1; /* by its name: a missing one is reported as the model */
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    const int ok = fread(head, 1, 9, f) == 9 && head[8] == '{';
    fclose(f);
    return ok;
}

/* The shipped model name's file into resolved_model: 0, or -1. */
static int shipped_path(const char *name)
{
    char dir[PATH_MAX];
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        if ((size_t)snprintf(resolved_model, sizeof resolved_model,
                             "%s/%s.safetensors", dir,
                             name) >= sizeof resolved_model)
            continue;
        if (!access(resolved_model, R_OK))
            return 0;
    }
    return -1;
}

static int is_shipped_name(const char *arg)
{
    if (!*arg || strlen(arg) > 64 || strchr(arg, '/') || strchr(arg, '.'))
        return 0;
    struct stat st;
    return stat(arg, &st) != 0 && shipped_path(arg) == 0;
}

/* Shifts the positionals when the first is not a model: 0, or exit 2. */
int shift_positionals(codec_opts *o, int decode)
{
    if (!o->io.model)
        return 0;
    if (is_shipped_name(o->io.model)) {
        o->io.model = resolved_model;
        return 0;
    }
    if (looks_like_checkpoint(o->io.model))
        return 0;
    const char *second = o->io.input;
    o->io.input = o->io.model;
    o->io.model = NULL;
    if (second) {
        size_t n = strlen(second);
        const int npy = n >= 4 && !strcmp(second + n - 4, ".npy");
        if (decode && !npy && !o->wav)
            o->wav = cli_output_path(second);
        else if (!o->io.output)
            o->io.output = cli_output_path(second);
        else
            return cli_fail(EXIT_USAGE,
                            "unexpected argument '%s' (see '%s "
                            "--help')",
                            second, cli_cmd);
    }
    return 0;
}

/* encode with no MODEL: the shipped default */
int default_encoder_model(codec_opts *o)
{
    if (o->io.model)
        return 0;
    if (shipped_path(FRAE_DEFAULT_MODEL))
        return cli_fail(EXIT_USAGE,
                        "no MODEL given and no shipped model '%s' found "
                        "(FRAE_MODELS, PREFIX/share/frae/models or the source "
                        "tree's models/; 'make models' builds them)",
                        FRAE_DEFAULT_MODEL);
    o->io.model = resolved_model;
    return 0;
}

/* decode with no MODEL: the shipped model the stream's hash names */
int model_from_stream(codec_opts *o)
{
    if (o->io.model || !o->io.input)
        return 0;
    if (!strcmp(o->io.input, "-"))
        return cli_fail(EXIT_USAGE, "a stream on stdin needs MODEL (a file "
                                    "or a shipped model's name: 'frae "
                                    "models')");
    /* a regular file, as decode reads: a FIFO is refused at once, not
     * opened to wait for a writer (and then read a second time) */
    unsigned char head[16];
    char err[512];
    const int fd = frae_open_regular(o->io.input, err, sizeof err);
    if (fd < 0)
        return cli_fail(EXIT_USAGE, "%s", err);
    const ssize_t got = read(fd, head, sizeof head);
    close(fd);
    if (got < (ssize_t)sizeof head || memcmp(head, "FRAEBS", 6))
        return cli_fail(EXIT_USAGE,
                        "%s: not a frae stream (no FRAEBS "
                        "header), and no MODEL given",
                        o->io.input);
    uint64_t hash = 0;
    for (int i = 7; i >= 0; i--)
        hash = hash << 8 | head[8 + i];
    frae_config rt;
    frae_config_default(&rt);
    rt.training = 0;
    rt.batch = 1;
    frae_model *m = frae_load_by_hash(hash, &rt, resolved_model,
                                      sizeof resolved_model, err, sizeof err);
    if (!m)
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
    frae_destroy(m);
    o->io.model = resolved_model;
    return 0;
}

frae_model *load_inference(const char *path, frae_isa isa)
{
    frae_config rt;
    frae_config_default(&rt);
    rt.training = 0;
    rt.batch = 1;
    rt.isa = isa;
    char err[512];
    frae_model *m = frae_load(path, &rt, err, sizeof err);
    if (!m)
        cli_fail(EXIT_USAGE, "%s", err);
    return m;
}

void wav_out_free(wav_out *o)
{
    frae_wav_abort(o->w);
    o->w = NULL;
    free(o->samples);
    o->samples = NULL;
    frae_audio_out_destroy(o->ao);
    o->ao = NULL;
}

/* Returns 0, or an exit code after printing the error. */
int wav_out_init(wav_out *o, const frae_features *f, const char *wav,
                 int several, int hnm, int gl_iters, int polish)
{
    memset(o, 0, sizeof *o);
    o->f = f, o->wav = wav, o->several = several, o->hnm = hnm;
    o->gl_iters = gl_iters < 0 ? 32 : gl_iters;
    char err[512] = "out of memory";
    if ((o->ao = frae_audio_out_create(f, hnm, o->gl_iters, polish, err,
                                       sizeof err)))
        o->samples = malloc(sizeof(float) * (size_t)frae_audio_out_max(o->ao));
    if (!o->ao || !o->samples) {
        wav_out_free(o);
        return cli_fail(EXIT_FAILED, "--wav: %s", err);
    }
    return 0;
}

static int wav_out_put(wav_out *o, const float *x, long n)
{
    char err[512];
    if (n && frae_wav_write(o->w, x, n, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    return 0;
}

/* Starts sequence s's WAV. */
int wav_out_begin(wav_out *o, long s)
{
    if (!o->several) {
        snprintf(o->path, sizeof o->path, "%s", o->wav);
    } else {
        const char *dot = strrchr(o->wav, '.');
        int stem = dot ? (int)(dot - o->wav) : (int)strlen(o->wav);
        snprintf(o->path, sizeof o->path, "%.*s-%ld%s", stem, o->wav, s,
                 dot ? dot : ".wav");
    }
    char err[512];
    if (!(o->w = (o->live ? frae_wav_open_live : frae_wav_open)(
              o->path, o->f->sample_rate, err, sizeof err)))
        return cli_fail(EXIT_FAILED, "%s", err);
    return wav_out_put(o, o->samples, frae_audio_out_begin(o->ao, o->samples));
}

/* One frame: n_mels log-mel values, then (the vocoder) f0 and voicing. */
int wav_out_frame(wav_out *o, const float *frame)
{
    return wav_out_put(o, o->samples,
                       frae_audio_out_frame(o->ao, frame, o->samples));
}

/* Ends the sequence's WAV: the last samples, then the file committed. */
int wav_out_end(wav_out *o)
{
    int rc = wav_out_put(o, o->samples, frae_audio_out_end(o->ao, o->samples));
    const double seconds = (double)frae_wav_samples(o->w) / o->f->sample_rate;
    char err[512];
    frae_wav_writer *w = o->w;
    o->w = NULL;
    if (rc) {
        frae_wav_abort(w);
        return rc;
    }
    if (frae_wav_close(w, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    if (o->hnm)
        cli_printf("%s: %.2f s of audio (harmonic-plus-noise vocoder)\n",
                   o->path, seconds);
    else
        cli_printf("%s: %.2f s of audio (Griffin-Lim, %d iterations)\n",
                   o->path, seconds, o->gl_iters);
    return 0;
}

/* The first of a frame's n values that is not finite, or of its n_mels
 * log-mel values one above what any audio gives (frae_features_max: the
 * vocoders would clamp it, so its audio would be wrong); -1 if none.  A
 * value below the floor's is silence, and fine. */
int unheard_value(const float *frame, int n, int n_mels, double max)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(frame[i]) || (i < n_mels && frame[i] > max))
            return i;
    return -1;
}

/* encode's stream options from its own (libfrae's
 * frae_codec_stream_options); 0, or an exit code after saying why. */
int stream_options(const codec_opts *o, const frae_model *m, long sequences,
                   frae_stream_options *so)
{
    char err[512];
    if (frae_codec_stream_options(&o->cs, frae_model_net(m), sequences, so, err,
                                  sizeof err))
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.model, err);
    return 0;
}

/* An .npy of frames read in order a chunk at a time, the pages of its
 * mapping behind the chunk dropped as it goes: a long file passes through
 * memory once and is never resident whole. */
void npy_reader_read(npy_reader *r, long s, long t0, long nt, float *dst)
{
    const frae_npy *a = r->a;
    frae_npy_read(a, s, t0, nt, dst); /* mapped: cannot fail */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t read_to =
        (size_t)(a->data - (const unsigned char *)a->map) +
        (((size_t)s * a->t + (size_t)(t0 + nt)) * a->d) * a->itemsize;
    const size_t upto = read_to / page * page;
    if (a->map && upto > r->dropped) {
        madvise((char *)a->map + r->dropped, upto - r->dropped, MADV_DONTNEED);
        r->dropped = upto;
    }
}

int audio_features(const char *model, const char *opt, const char *lack,
                   frae_features *f)
{
    const int have = cli_model_features(model, f);
    if (have > 0)
        return 0;
    return have < 0 ? EXIT_USAGE
                    : cli_fail(EXIT_USAGE,
                               "%s: %s was not trained on audio features, so "
                               "%s",
                               opt, model, lack);
}
