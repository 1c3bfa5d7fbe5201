/* frae encode, frae decode: the codec on files. */
#define _DEFAULT_SOURCE /* madvise */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "codec/container.h"

typedef struct {
    cli_io io; /* first: the shared handlers take a codec_opts as cli_io */
    const char *wav;
    double frame_rate;
    int gl_iters;
    int vocoder; /* 0: the default (hnm with pitch, else gl) */
    int packet_frames; /* --packet-frames: 0, the default */
    int search;        /* --search passes: 0, off */
    double search_lambda; /* --search-lambda; < 0: the model's rate_lambda */
    int dtx;              /* --dtx: silent frames (below dtx_level) */
    double dtx_level;     /* --dtx-level, dB relative to a full-scale sine */
    const char *encoder_opt; /* the last encoder-only option given */
    int packet_ms;           /* --packet-ms: real-time packets (0: files) */
    int resync_ms;           /* --resync-ms; 0 the default, -1 off */
    int resync_state;        /* --resync-state */
    int through;             /* --through: decode through bit errors */
} codec_opts;

static const char *const vocoder_names[] = {"auto", "hnm", "gl"};

static const cli_opt codec_list[] = {
    {"--output", 1},      {"--frame-rate", 1}, {"--isa", 1},
    {"--wav", 1},         {"--gl-iters", 1},   {"--sample-rate", 1},
    {"--no-resample", 0}, {"--mels", 1},       {"--hop", 1},
    {"--win", 1},         {"--fft", 1},        {"--fmin", 1},
    {"--fmax", 1},        {"--vocoder", 1},    {"--packet-frames", 1},
    {"--search", 1},      {"--search-lambda", 1}, {"--dtx", 0},
    {"--dtx-level", 1},   {"--packet-ms", 1},  {"--resync-ms", 1},
    {"--through", 0},     {"--resync-state", 0}, {NULL, 0}};

static int codec_opt(void *ctx, const char *name, const char *v)
{
    codec_opts *o = ctx;
    if (!strcmp(name, "--frame-rate"))
        return cli_double(name, v, 1e-3, 1e9, &o->frame_rate);
    if (!strcmp(name, "--wav"))
        return o->wav = cli_output_path(v), 0;
    if (!strcmp(name, "--gl-iters"))
        return cli_int(name, v, 0, 10000, &o->gl_iters);
    if (!strcmp(name, "--through"))
        return o->through = 1, 0;
    if (!strcmp(name, "--packet-ms") || !strcmp(name, "--resync-ms") ||
        !strcmp(name, "--resync-state"))
        o->encoder_opt = name;
    if (!strcmp(name, "--resync-state"))
        return o->resync_state = 1, 0;
    if (!strcmp(name, "--packet-ms"))
        return cli_int(name, v, 1, 10000, &o->packet_ms);
    if (!strcmp(name, "--resync-ms")) {
        if (!strcmp(v, "off"))
            return o->resync_ms = -1, 0;
        return cli_int(name, v, 1, 1000000, &o->resync_ms);
    }
    if (!strcmp(name, "--packet-frames") || !strcmp(name, "--search") ||
        !strcmp(name, "--search-lambda") || !strcmp(name, "--dtx") ||
        !strcmp(name, "--dtx-level"))
        o->encoder_opt = name;
    if (!strcmp(name, "--dtx"))
        return o->dtx = 1, 0;
    if (!strcmp(name, "--dtx-level"))
        return o->dtx = 1, cli_double(name, v, -200, 0, &o->dtx_level);
    if (!strcmp(name, "--packet-frames"))
        return cli_int(name, v, 1, FRAE_PACKET_MAX_FRAMES, &o->packet_frames);
    if (!strcmp(name, "--search"))
        return cli_int(name, v, 0, 16, &o->search);
    if (!strcmp(name, "--search-lambda"))
        return cli_double(name, v, 0, 1e6, &o->search_lambda);
    if (!strcmp(name, "--vocoder"))
        return cli_choice(name, v, vocoder_names, 3, &o->vocoder);
    int rc = cli_io_option(&o->io, name, v);
    return rc == 1 ? cli_fail(EXIT_USAGE, "unknown option '%s'", name) : rc;
}

/* MODEL IN, and (as c2enc and opusdec take them) OUT: encode's stream;
 * decode's audio, or its frames if OUT ends in .npy */
static int codec_pos(void *ctx, const char *arg)
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
 * speech-vbr).  The first positional is a model when it is a
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
                             "%s/%s.safetensors", dir, name) >=
            sizeof resolved_model)
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
static int shift_positionals(codec_opts *o, int decode)
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
            return cli_fail(EXIT_USAGE, "unexpected argument '%s' (see '%s "
                                        "--help')",
                            second, cli_cmd);
    }
    return 0;
}

/* encode with no MODEL: the shipped default */
static int default_encoder_model(codec_opts *o)
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
static int model_from_stream(codec_opts *o)
{
    if (o->io.model || !o->io.input)
        return 0;
    if (!strcmp(o->io.input, "-"))
        return cli_fail(EXIT_USAGE, "a stream on stdin needs MODEL (a file "
                                    "or a shipped model's name: 'frae "
                                    "models')");
    unsigned char head[16];
    FILE *f = fopen(o->io.input, "rb");
    if (!f)
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.input, strerror(errno));
    const size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got < sizeof head || memcmp(head, "FRAEBS", 6))
        return cli_fail(EXIT_USAGE, "%s: not a frae stream (no FRAEBS "
                                    "header), and no MODEL given",
                        o->io.input);
    uint64_t hash = 0;
    for (int i = 7; i >= 0; i--)
        hash = hash << 8 | head[8 + i];
    frae_config rt;
    frae_config_default(&rt);
    rt.training = 0;
    rt.batch = 1;
    char err[512];
    frae_model *m = frae_load_by_hash(hash, &rt, resolved_model,
                                      sizeof resolved_model, err, sizeof err);
    if (!m)
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
    frae_destroy(m);
    o->io.model = resolved_model;
    return 0;
}

static frae_model *load_inference(const char *path, frae_isa isa)
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

/* ---- frames of features to audio, as they come ------------------------------
 * One WAV per sequence (OUT-<n>.wav when there are several), each frame
 * vocoded as it arrives and its samples handed to the WAV writer: memory
 * is the vocoder's state (or Griffin-Lim's block) and a frame's samples,
 * whatever the length.  The harmonic-plus-noise vocoder for frames with
 * pitch, else Griffin-Lim; either gives (frames - 1) * hop + win samples
 * on the features' timeline. */
typedef struct {
    const frae_features *f;
    const char *wav;
    int several;          /* sequences: OUT-<n>.wav */
    int hnm, gl_iters;
    int live;             /* samples out as they come (frae_wav_open_live) */
    void *voc_mem;
    frae_vocoder *voc;
    frae_gl *gl;
    float *samples;       /* one frame's: a hop, or a Griffin-Lim block */
    frae_wav_writer *w;   /* the sequence's, while open */
    char path[4096];
} wav_out;

static void wav_out_free(wav_out *o)
{
    frae_wav_abort(o->w);
    o->w = NULL;
    free(o->voc_mem), free(o->samples);
    frae_gl_destroy(o->gl);
}

/* Returns 0, or an exit code after printing the error. */
static int wav_out_init(wav_out *o, const frae_features *f, const char *wav,
                        int several, int hnm, int gl_iters)
{
    memset(o, 0, sizeof *o);
    o->f = f, o->wav = wav, o->several = several, o->hnm = hnm;
    o->gl_iters = gl_iters < 0 ? 32 : gl_iters;
    char err[512] = "out of memory";
    long cap = f->hop;
    if (hnm) {
        const size_t size = frae_vocoder_size(f);
        o->voc_mem = size ? malloc(size) : NULL;
        if (!size || o->voc_mem) /* no size: init says why */
            o->voc = frae_vocoder_init(o->voc_mem, f, 1, err, sizeof err);
    } else if ((o->gl = frae_gl_create(f, o->gl_iters, err, sizeof err))) {
        cap = frae_gl_max_samples(o->gl);
    }
    o->samples = malloc(sizeof(float) * (size_t)cap);
    if ((hnm ? !o->voc : !o->gl) || !o->samples) {
        wav_out_free(o);
        return cli_fail(EXIT_FAILED, "--wav: %s", err);
    }
    return 0;
}

static int wav_out_put(wav_out *o, const float *x, long n)
{
    char err[512];
    if (frae_wav_write(o->w, x, n, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    return 0;
}

/* Starts sequence s's WAV. */
static int wav_out_begin(wav_out *o, long s)
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
    if (!o->hnm) {
        frae_gl_reset(o->gl);
        return 0;
    }
    frae_vocoder_reset(o->voc);
    /* the vocoder's call t ends at frame t's centre: before frame 0's,
     * win/2 - hop samples of silence */
    memset(o->samples, 0, sizeof(float) * (size_t)o->f->hop);
    return wav_out_put(o, o->samples, o->f->win / 2 - o->f->hop);
}

/* One frame: n_mels log-mel values, then (the vocoder) f0 and voicing. */
static int wav_out_frame(wav_out *o, const float *frame)
{
    if (o->hnm) {
        frae_vocoder_frame(o->voc, frame, o->samples);
        return wav_out_put(o, o->samples, o->f->hop);
    }
    const long n = frae_gl_frame(o->gl, frame, o->samples);
    return n ? wav_out_put(o, o->samples, n) : 0;
}

/* Ends the sequence's WAV: the last samples, then the file committed. */
static int wav_out_end(wav_out *o)
{
    int rc;
    if (o->hnm) {
        /* the hop after the last centre, then silence to the last frame's
         * window's end */
        frae_vocoder_flush(o->voc, o->samples);
        const long tail = o->f->win - o->f->win / 2 - o->f->hop;
        rc = wav_out_put(o, o->samples, o->f->hop);
        memset(o->samples, 0, sizeof(float) * (size_t)o->f->hop);
        rc = rc ? rc : wav_out_put(o, o->samples, tail);
    } else {
        const long n = frae_gl_flush(o->gl, o->samples);
        rc = wav_out_put(o, o->samples, n);
    }
    const double seconds =
        (double)frae_wav_samples(o->w) / o->f->sample_rate;
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
        cli_printf("%s: %.2f s of audio (harmonic-plus-noise vocoder)\n", o->path,
               seconds);
    else
        cli_printf("%s: %.2f s of audio (Griffin-Lim, %d iterations)\n", o->path,
               seconds, o->gl_iters);
    return 0;
}

/* The first of a frame's n values that is not finite, or of its n_mels
 * log-mel values one above what any audio gives (frae_features_max: the
 * vocoders would clamp it, so its audio would be wrong); -1 if none.  A
 * value below the floor's is silence, and fine. */
static int unheard_value(const float *frame, int n, int n_mels, double max)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(frame[i]) || (i < n_mels && frame[i] > max))
            return i;
    return -1;
}

static void encode_help(void)
{
    cli_printf("usage: frae encode [MODEL] IN -o OUT.fbs [--frame-rate R] [--isa I]\n"
           "                   [--no-resample] [--packet-frames N] [--search N]\n"
           "                   [--search-lambda X] [--dtx] [--dtx-level DB]\n"
           "                   [--packet-ms N] [--resync-ms M|off] [--resync-state]\n"
           "example: frae encode speech.wav -o speech.fbs\n"
           "\n"
           "MODEL: a checkpoint, or a shipped model's name ('frae models':\n"
           "speech, the 1.6 kbit/s codec, when MODEL is left out; speech-vbr,\n"
           "the variable-rate one).\n"
           "\n"
           "Compresses each sequence of IN ([T, D] or [N, T, D] .npy, or an\n"
           "audio file, whose features are computed as the model was\n"
           "trained; --no-resample refuses other rates) frame by\n"
           "frame into a .fbs bitstream: the model's quantized latent codes,\n"
           "L x bits per frame (see README, 'The .fbs bitstream'); with a\n"
           "model that has a prior (train --prior, --rate-lambda), range-\n"
           "coded into packets of --packet-frames frames (100), a variable\n"
           "rate (stream version 4).  Reports the bitrate the file takes,\n"
           "headers included, in bits per frame and in kbit/s at\n"
           "--frame-rate frames per second (100), and the distortion of the\n"
           "decoded frames: MSE and SNR in dB.\n"
           "\n"
           "--search N (0: off) searches each frame's codes by analysis by\n"
           "synthesis: starting from the network's, N passes each try every\n"
           "code moved by one level through the decoder and keep the move\n"
           "that lowers distortion + lambda x bits the most (lambda: the\n"
           "model's --rate-lambda, or --search-lambda X).  Same format, any\n"
           "decoder; better frames or fewer bits for up to N x L decoder\n"
           "runs a frame.  Not for a denoising model (it steers toward the\n"
           "input).\n"
           "\n"
           "--packet-ms N (20, 40, 60, ...) writes real-time packets for a\n"
           "voice link (stream version 5): each a datagram's payload (a\n"
           "byte of index and flags, then the codes), decodable whatever\n"
           "was lost before it, and reports the rate as datagrams, every\n"
           "byte counted; --resync-ms M (200 fixed-rate, 1000 with a prior;\n"
           "off: only the first) sets the resynchronisation points a\n"
           "decoder recovers from a loss at; --resync-state (fixed-rate)\n"
           "starts the network afresh there too, so that the decode is\n"
           "exact again from the first one after a loss (for a model\n"
           "trained on crops that short).  frae encode MODEL - - reads\n"
           "a WAV or raw 16-bit PCM (the model's rate, mono) from stdin and\n"
           "writes each packet the moment it is made:\n"
           "  arecord -r 16000 -f S16_LE | frae encode M - - --packet-ms 40 |\n"
           "      frae decode M - - | aplay\n"
           "\n"
           "--dtx (a model with a prior and audio features) sends silence\n"
           "as silence: a frame is silent once it and the %d before it are\n"
           "all below --dtx-level dB (%g; 0 dB: a full-scale sine; giving\n"
           "it implies --dtx), and a silent frame codes a flag alone, the\n"
           "decoder repeating its last frame.  A pause then costs next to\n"
           "nothing (discontinuous transmission, as Opus's DTX).\n"
           "\n"
           "options:\n"
           "  -o, --output OUT.fbs the stream (- for stdout)\n"
           "  --frame-rate R       frames per second, for the kbit/s (100)\n"
           "  --isa I              auto, scalar, avx2 or avx512 (auto)\n"
           "  --no-resample        refuse audio at another sample rate\n"
           "  --packet-frames N    with a prior: frames per packet (100)\n"
           "  --search N           passes of the encoder's search (0: off)\n"
           "  --search-lambda X    the search's weight on bits (the model's\n"
           "                       --rate-lambda)\n"
           "  --dtx                silent frames sent as silence\n"
           "  --dtx-level DB       what is silent (%g)\n"
           "  --packet-ms N        real-time packets of N ms (stream version 5)\n"
           "  --resync-ms M|off    resynchronisation points every M ms\n"
           "  --resync-state       ... that start the network afresh too\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or input.\n",
           FRAE_DTX_HANGOVER, FRAE_DTX_LEVEL, FRAE_DTX_LEVEL);
}

/* encode's stream options from its own: the packets (--packet-ms or
 * --packet-frames), the resynchronisation points, the search, DTX; 0, or
 * an exit code after saying why. */
static int stream_options(const codec_opts *o, const frae_model *m,
                          long sequences, frae_stream_options *so)
{
    frae_stream_options_default(so);
    so->packet_frames = o->packet_frames;
    so->search = o->search;
    so->search_lambda = (float)o->search_lambda;
    so->dtx = o->dtx;
    if (o->packet_ms || o->resync_ms || o->resync_state) {
        /* real-time packets: --packet-ms of frames each (a whole number
         * of them at --frame-rate), a resynchronisation point every
         * --resync-ms */
        const double frames_per_packet = o->packet_ms * o->frame_rate / 1000.0;
        const int P = (int)lrint(frames_per_packet);
        if (o->packet_frames)
            return cli_fail(EXIT_USAGE, "--packet-ms and --packet-frames: give "
                                        "one");
        if (!o->packet_ms)
            return cli_fail(EXIT_USAGE, "%s needs --packet-ms (real-time "
                                        "packets)",
                            o->resync_ms ? "--resync-ms" : "--resync-state");
        if (P < 1 || fabs(frames_per_packet - P) > 1e-9 ||
            P > FRAE_PACKET_MAX_FRAMES)
            return cli_fail(EXIT_USAGE,
                            "--packet-ms %d: not a whole number of %g ms "
                            "frames (1 to %d of them)",
                            o->packet_ms, 1000.0 / o->frame_rate,
                            FRAE_PACKET_MAX_FRAMES);
        if (sequences != 1)
            return cli_fail(EXIT_USAGE,
                            "--packet-ms: %s holds %ld sequences; real-time "
                            "packets carry one",
                            o->io.input, sequences);
        so->datagrams = 1;
        so->packet_frames = P;
        so->resync_state = o->resync_state;
        if (o->resync_ms < 0)
            so->resync_packets = -1;
        else if (o->resync_ms)
            so->resync_packets =
                (int)((o->resync_ms * o->frame_rate / 1000.0 + P - 1) / P);
    }
    const char *why = frae_stream_options_check(m, so);
    if (why)
        return cli_fail(EXIT_USAGE, "%s: %s: %s",
                        o->dtx             ? "--dtx"
                        : o->resync_state  ? "--resync-state"
                        : o->packet_ms     ? "--packet-ms"
                        : o->packet_frames ? "--packet-frames"
                                           : "--search",
                        o->io.model, why);
    return 0;
}

/* ---- a live input: samples from stdin, packets out as they are made -------- */

typedef struct {
    frae_stream_encoder *se;
    frae_dtx_gate *gate;
    FILE *out;
    const char *out_name;
    int failed;
} live_sink;

/* The feature stream's frames, each coded at once; a packet written and
 * flushed as soon as it is complete. */
static int live_frames(void *ctx, const float *feats, long frames, int width)
{
    live_sink *l = ctx;
    for (long t = 0; t < frames; t++) {
        const float *x = feats + (size_t)t * width;
        const int silent = l->gate && frae_dtx_gate_silent(l->gate, x);
        if (frae_stream_encode(l->se, x, silent, NULL)) {
            size_t n;
            const unsigned char *b = frae_stream_encoder_bytes(l->se, &n);
            if (fwrite(b, 1, n, l->out) != n || fflush(l->out))
                return l->failed = 1, -1;
        }
    }
    return 0;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Reads exactly n bytes of fd; 0, or -1 at its end before them. */
static int read_exact(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got, n -= (size_t)got;
    }
    return 0;
}

/* What stdin holds: a WAV (its header read, up to its data chunk) or raw
 * 16-bit PCM (little-endian, mono, at the model's rate; its first 4 bytes
 * already taken into pending).  0, or an exit code after saying why. */
typedef struct {
    int rate, channels, float32; /* float32: IEEE float samples, else s16 */
    unsigned char pending[4];
    int n_pending;
} live_format;

static int live_format_read(int fd, int rate, live_format *lf)
{
    memset(lf, 0, sizeof *lf);
    unsigned char h[12];
    if (read_exact(fd, h, 4))
        return cli_fail(EXIT_USAGE, "-: no audio on standard input");
    if (memcmp(h, "RIFF", 4)) { /* raw PCM */
        lf->rate = rate, lf->channels = 1;
        memcpy(lf->pending, h, 4);
        lf->n_pending = 4;
        return 0;
    }
    if (read_exact(fd, h + 4, 8) || memcmp(h + 8, "WAVE", 4))
        return cli_fail(EXIT_USAGE, "-: a RIFF header, but not a WAV");
    int have_fmt = 0;
    for (;;) { /* chunks up to the data, whose size is not believed (a
                  live writer does not know it) */
        unsigned char c[8];
        if (read_exact(fd, c, 8))
            return cli_fail(EXIT_USAGE, "-: a WAV header without its data");
        const uint32_t size = le32(c + 4);
        if (!memcmp(c, "data", 4))
            break;
        if (!memcmp(c, "fmt ", 4)) {
            unsigned char fmt[40];
            if (size < 16 || size > sizeof fmt || read_exact(fd, fmt, size))
                return cli_fail(EXIT_USAGE, "-: a WAV fmt chunk of %u bytes",
                                size);
            unsigned tag = fmt[0] | fmt[1] << 8, bits = fmt[14] | fmt[15] << 8;
            if (tag == 0xfffe && size >= 26) /* extensible: its subformat */
                tag = fmt[24] | fmt[25] << 8;
            lf->channels = fmt[2] | fmt[3] << 8;
            lf->rate = (int)le32(fmt + 4);
            lf->float32 = tag == 3 && bits == 32;
            if (!(tag == 1 && bits == 16) && !lf->float32)
                return cli_fail(EXIT_USAGE,
                                "-: a WAV of format %u, %u bits; a live input "
                                "is 16-bit PCM or 32-bit float",
                                tag, bits);
            if (lf->channels < 1 || lf->channels > 16 || lf->rate < 1000 ||
                lf->rate > 384000)
                return cli_fail(EXIT_USAGE, "-: a WAV of %d channels at %d Hz",
                                lf->channels, lf->rate);
            have_fmt = 1;
            continue;
        }
        for (uint32_t left = size + (size & 1); left;) { /* skip it */
            unsigned char skip[256];
            const size_t k = left < sizeof skip ? left : sizeof skip;
            if (read_exact(fd, skip, k))
                return cli_fail(EXIT_USAGE, "-: a WAV header without its data");
            left -= (uint32_t)k;
        }
    }
    if (!have_fmt)
        return cli_fail(EXIT_USAGE, "-: a WAV without its fmt chunk");
    return 0;
}

/* frae encode MODEL - with --packet-ms: audio from stdin as it comes, each
 * packet out (and flushed) the moment its last frame is coded. */
static int encode_live(codec_opts *o, frae_model *m,
                       const frae_stream_options *so)
{
    frae_features f;
    const int have = cli_model_features(o->io.model, &f);
    if (have <= 0)
        return have < 0 ? EXIT_USAGE
                        : cli_fail(EXIT_USAGE,
                                   "-: %s was trained on frames, not audio "
                                   "features: a live input is audio",
                                   o->io.model);
    f.pitch = frae_get_config(m)->pitch;
    live_format lf;
    int rc = live_format_read(STDIN_FILENO, f.sample_rate, &lf);
    if (rc)
        return rc;
    char err[512];
    frae_dtx_gate gate;
    if (o->dtx && frae_dtx_gate_init(&gate, &f, o->dtx_level, err, sizeof err))
        return cli_fail(EXIT_FAILED, "--dtx: %s", err);
    live_sink l = {NULL, o->dtx ? &gate : NULL, NULL, o->io.output, 0};
    frae_atomic_file af;
    af.f = NULL;
    frae_feature_stream *fs = NULL;
    float *mono = NULL;
    unsigned char *raw = NULL;
    l.se = frae_stream_encoder_create(m, so, 1, 0, 1, err, sizeof err);
    if (!l.se) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.model, err);
        goto done;
    }
    fs = frae_feature_stream_create(&f, lf.rate, o->io.audio.resample,
                                    live_frames, &l, err, sizeof err);
    if (!fs) {
        rc = cli_fail(EXIT_USAGE, "%s", err);
        goto done;
    }
    if (frae_atomic_begin(&af, o->io.output, err, sizeof err)) {
        af.f = NULL;
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    l.out = af.f;
    size_t n;
    const unsigned char *head = frae_stream_encoder_bytes(l.se, &n);
    if (fwrite(head, 1, n, af.f) != n || fflush(af.f)) {
        rc = cli_fail(EXIT_FAILED, "%s: write failed", o->io.output);
        goto done;
    }
    /* 10 ms of samples a read at most, so that nothing waits on a read
     * for more than a frame */
    const int bytes_per = (lf.float32 ? 4 : 2) * lf.channels;
    const size_t per_read = (size_t)(lf.rate / 100 > 0 ? lf.rate / 100 : 1) *
                            (size_t)bytes_per;
    /* a read lands after what is held: the header's 4 look-ahead bytes
     * or a partial sample, under 8 either way; mono takes every whole
     * sample raw can hold (the 4 look-ahead bytes of raw PCM are two
     * 16-bit samples: sized for the read alone, one too few) */
    const size_t raw_cap = per_read + 8;
    raw = malloc(raw_cap);
    mono = malloc(sizeof(float) * (raw_cap / (size_t)bytes_per + 1));
    if (!raw || !mono) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    size_t held = (size_t)lf.n_pending; /* bytes of a partial sample */
    memcpy(raw, lf.pending, held);
    for (;;) {
        ssize_t got = read(STDIN_FILENO, raw + held, per_read);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = cli_fail(EXIT_FAILED, "-: cannot read: %s", strerror(errno));
            goto done;
        }
        held += (size_t)got;
        const size_t samples = held / (size_t)bytes_per;
        for (size_t i = 0; i < samples; i++) {
            double sum = 0;
            for (int c = 0; c < lf.channels; c++) {
                const unsigned char *p = raw + i * bytes_per + c * (lf.float32 ? 4 : 2);
                if (lf.float32) {
                    float v;
                    memcpy(&v, p, 4);
                    sum += v;
                } else {
                    sum += (int16_t)(p[0] | p[1] << 8) / 32768.0;
                }
            }
            mono[i] = (float)(sum / lf.channels);
        }
        if (samples && frae_feature_stream_push(fs, mono, (long)samples, err,
                                                sizeof err)) {
            rc = l.failed ? cli_fail(EXIT_FAILED, "%s: write failed",
                                     o->io.output)
                          : cli_fail(EXIT_USAGE, "%s", err);
            goto done;
        }
        memmove(raw, raw + samples * bytes_per, held - samples * bytes_per);
        held -= samples * (size_t)bytes_per;
        if (got == 0)
            break;
    }
    if (frae_feature_stream_end(fs, err, sizeof err)) {
        rc = l.failed ? cli_fail(EXIT_FAILED, "%s: write failed", o->io.output)
                      : cli_fail(EXIT_USAGE, "%s", err);
        goto done;
    }
    frae_stream_encoder_end(l.se);
    const unsigned char *tail = frae_stream_encoder_bytes(l.se, &n);
    if (fwrite(tail, 1, n, af.f) != n) {
        rc = cli_fail(EXIT_FAILED, "%s: write failed", o->io.output);
        goto done;
    }
    rc = frae_atomic_commit(&af, err, sizeof err)
             ? cli_fail(EXIT_FAILED, "%s", err)
             : EXIT_OK;
    af.f = NULL;
    if (!rc) {
        frae_stream_counts sc;
        frae_stream_encoder_counts(l.se, &sc);
        cli_printf("-: %llu frames -> %s: %llu packets, %.3f kbit/s as "
                   "datagrams\n",
                   (unsigned long long)sc.frames, o->io.output,
                   (unsigned long long)sc.packets,
                   sc.frames ? 8.0 * (double)sc.datagram_bytes /
                                   (double)sc.frames * o->frame_rate / 1000.0
                             : 0.0);
    }
done:
    if (af.f)
        frae_atomic_abort(&af);
    free(raw), free(mono);
    frae_feature_stream_destroy(fs);
    frae_stream_encoder_destroy(l.se);
    return rc;
}

int cmd_encode(int argc, char **argv)
{
    cli_cmd = "frae encode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.frame_rate = 100;
    o.search_lambda = -1;
    o.dtx_level = FRAE_DTX_LEVEL;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       encode_help, &o);
    if (rc || (rc = shift_positionals(&o, 0)))
        return rc;
    if (!o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs [MODEL] IN (audio or .npy) and -o "
                                    "OUT.fbs (see 'frae encode --help')");
    if ((rc = default_encoder_model(&o)))
        return rc;
    char err[512];
    if (!strcmp(o.io.input, "-") && o.packet_ms) { /* a live input */
        frae_model *lm = load_inference(o.io.model, o.io.isa);
        if (!lm)
            return EXIT_USAGE;
        frae_stream_options lso;
        rc = stream_options(&o, lm, 1, &lso);
        if (!rc)
            rc = encode_live(&o, lm, &lso);
        frae_destroy(lm);
        return rc;
    }
    frae_npy in;
    o.io.with_pitch = 1;
    if ((rc = cli_open_frames(&o.io, &in)))
        return rc;
    frae_model *m = load_inference(o.io.model, o.io.isa);
    if (!m) {
        frae_npy_close(&in);
        return EXIT_USAGE;
    }
    const int D = frae_get_config(m)->frame_dim;
    const int pitch = frae_get_config(m)->pitch;
    const int width = D + 2 * pitch; /* values per frame in and out */
    if (in.d != width || in.n > 0xffffffffL || in.t > 0xffffffffL) {
        rc = in.d != width
                 ? cli_fail(EXIT_USAGE,
                            pitch ? "%s: frame dimension %ld; the model codes "
                                    "pitch and needs %d (%d features, f0, "
                                    "voicing: audio, or 'frae features "
                                    "--pitch')"
                                  : "%s: frame dimension %ld does not match "
                                    "the model's %d",
                            o.io.input, in.d, width, D)
                 : cli_fail(EXIT_USAGE,
                            "%s: %ld x %ld frames, more than a stream holds "
                            "(2^32 - 1 each)",
                            o.io.input, in.n, in.t);
        frae_npy_close(&in);
        frae_destroy(m);
        return rc;
    }
    const size_t n_frames = (size_t)in.n * in.t;
    /* frames are read a chunk at a time and their bytes written as they
     * come: memory does not grow with the input */
    const long chunk = in.t < 512 ? in.t : 512;
    float *x = malloc(sizeof(float) * (size_t)chunk * width);
    float *recon = malloc(sizeof(float) * width);
    frae_stream_encoder *se = NULL;
    frae_stream_options so;
    frae_dtx_gate gate;
    if ((rc = stream_options(&o, m, in.n, &so)))
        goto done;
    if (o.dtx) {
        frae_features feat;
        const int have = cli_model_features(o.io.model, &feat);
        if (have <= 0) {
            rc = have < 0 ? EXIT_USAGE
                          : cli_fail(EXIT_USAGE,
                                     "--dtx: %s was not trained on audio "
                                     "features, so its frames have no level "
                                     "to gate on",
                                     o.io.model);
            goto done;
        }
        if (frae_dtx_gate_init(&gate, &feat, o.dtx_level, err, sizeof err)) {
            rc = cli_fail(EXIT_FAILED, "--dtx: %s", err);
            goto done;
        }
    }
    se = frae_stream_encoder_create(m, &so, (uint32_t)in.n, (uint32_t)in.t,
                                    in.ndim == 2, err, sizeof err);
    if (!se) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o.io.model, err);
        goto done;
    }
    frae_atomic_file af;
    af.f = NULL;
    if (!x || !recon) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (frae_atomic_begin(&af, o.io.output, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    const frae_stream *h = frae_stream_encoder_stream(se);
    const int ranged = frae_stream_ranged(h);
    size_t n;
    const unsigned char *bytes = frae_stream_encoder_bytes(se, &n);
    fwrite(bytes, 1, n, af.f); /* the header */
    double sse = 0, energy = 0, f0_err = 0;
    long voiced = 0, voicing_kept = 0;
    for (long s = 0; s < in.n; s++) {
        if (o.dtx)
            frae_dtx_gate_reset(&gate);
        for (long t = 0; t < in.t; t++) {
            if (t % chunk == 0 &&
                frae_npy_read(&in, s, t, in.t - t < chunk ? in.t - t : chunk,
                              x)) {
                frae_atomic_abort(&af);
                rc = cli_fail(EXIT_FAILED,
                              "%s: cannot read its features back: %s",
                              o.io.input, strerror(errno));
                goto done;
            }
            const float *xt = x + (size_t)(t % chunk) * width;
            const int silent = o.dtx && frae_dtx_gate_silent(&gate, xt);
            if (frae_stream_encode(se, xt, silent, recon)) {
                bytes = frae_stream_encoder_bytes(se, &n);
                fwrite(bytes, 1, n, af.f);
            }
            if (pitch && xt[D + 1] >= 0.5f && xt[D] > 0) {
                voiced++;
                voicing_kept += recon[D + 1] >= 0.5f;
                f0_err += fabs(recon[D] / xt[D] - 1.0);
            }
            for (int d = 0; d < D; d++) {
                double diff = (double)recon[d] - xt[d];
                sse += diff * diff;
                energy += (double)xt[d] * xt[d];
            }
            if (!isfinite(sse)) { /* the stream would decode to it */
                frae_atomic_abort(&af);
                rc = cli_fail_nonfinite(o.io.model, s, t);
                goto done;
            }
        }
    }
    frae_stream_encoder_end(se); /* every frame came */
    bytes = frae_stream_encoder_bytes(se, &n);
    fwrite(bytes, 1, n, af.f);
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    frae_stream_counts sc;
    frae_stream_encoder_counts(se, &sc);
    double bpf = frae_bits_per_frame(m);
    double mse = sse / ((double)n_frames * D);
    if (so.datagrams) {
        /* what a datagram transport carries (the header once, then the
         * packets), and what the file adds (each packet's length, CRC) */
        const double bits = 8.0 * (double)sc.datagram_bytes / (double)n_frames;
        const double ms = 1000.0 * h->packet_frames / o.frame_rate;
        cli_printf("%ld frames -> %s: %llu real-time packets of %g ms (%u "
                   "frames), %s, a resynchronisation point every %u%s "
                   "(%llu bytes in the file with each packet's length and "
                   "CRC)\n",
                   in.t, o.io.output, (unsigned long long)sc.packets, ms,
                   h->packet_frames, ranged ? "entropy-coded" : "fixed-rate",
                   h->resync_packets,
                   h->flags & FRAE_STREAM_STATE_RESYNC ? ", the state afresh there"
                                                       : "",
                   (unsigned long long)sc.bytes);
        cli_printf("bitrate: %.2f bits/frame = %.3f kbit/s at %g frames/s as "
                   "datagrams (%llu bytes: header %llu, packets %llu of which "
                   "%.2f bytes a packet of framing); the packets alone %.3f "
                   "kbit/s\n",
                   bits, bits * o.frame_rate / 1000.0, o.frame_rate,
                   (unsigned long long)sc.datagram_bytes,
                   (unsigned long long)sc.header_bytes,
                   (unsigned long long)(sc.datagram_bytes - sc.header_bytes),
                   sc.packets ? (double)sc.packet_overhead /
                                    (double)sc.packets
                              : 0.0,
                   8.0 * (double)(sc.datagram_bytes - sc.header_bytes) /
                       (double)n_frames * o.frame_rate / 1000.0);
        if (o.dtx)
            cli_printf("dtx: %llu of %zu frames silent (below %g dB)\n",
                       (unsigned long long)sc.silent_frames, n_frames,
                       o.dtx_level);
    } else if (ranged) {
        /* the bitrate the file takes, every header byte counted */
        const double bits = 8.0 * (double)sc.bytes / (double)n_frames;
        cli_printf("%ld sequence%s x %ld frames -> %s (%llu bytes: header "
                   "%llu, %llu packets of up to %u frames, %llu bytes of "
                   "their lengths and CRCs)\n",
                   in.n, in.n == 1 ? "" : "s", in.t, o.io.output,
                   (unsigned long long)sc.bytes,
                   (unsigned long long)sc.header_bytes,
                   (unsigned long long)sc.packets, h->packet_frames,
                   (unsigned long long)sc.packet_overhead);
        cli_printf("bitrate: %.2f bits/frame on average (entropy-coded; at most "
               "%.0f fixed-rate) = %.3f kbit/s at %g frames/s\n",
               bits, bpf, bits * o.frame_rate / 1000.0, o.frame_rate);
        if (o.dtx)
            cli_printf("dtx: %llu of %zu frames silent (below %g dB)\n",
                       (unsigned long long)sc.silent_frames, n_frames,
                       o.dtx_level);
    } else {
        cli_printf("%ld sequence%s x %ld frames -> %s (%llu bytes, %d of them "
                   "header and CRC)\n",
                   in.n, in.n == 1 ? "" : "s", in.t, o.io.output,
                   (unsigned long long)sc.bytes, FRAE_STREAM_HEADER + 4);
    }
    char split[64] = "";
    if (pitch)
        snprintf(split, sizeof split, " + %d pitch", FRAE_PITCH_BITS);
    if (!ranged && !so.datagrams)
        cli_printf("bitrate: %.0f bits/frame (%d x %d bits%s) = %.3f kbit/s at "
               "%g frames/s\n",
               bpf, frae_get_config(m)->latent_dim, frae_code_bits(m), split,
               bpf * o.frame_rate / 1000.0, o.frame_rate);
    if (pitch)
        cli_printf("pitch: %ld voiced frames, %.1f%% coded voiced, mean f0 "
               "error %.2f%%\n",
               voiced, voiced ? 100.0 * voicing_kept / voiced : 0.0,
               voiced ? 100.0 * f0_err / voiced : 0.0);
    cli_printf("distortion: mse %.6g, snr %.2f dB\n", mse,
           sse > 0 ? 10.0 * log10(energy / sse) : INFINITY);
    rc = EXIT_OK;
done:
    free(x), free(recon);
    frae_stream_encoder_destroy(se);
    frae_npy_close(&in);
    frae_destroy(m);
    return rc;
}

static void decode_help(void)
{
    cli_printf("usage: frae decode [MODEL] IN.fbs [-o OUT.npy] [--wav OUT.wav | OUT.wav]\n"
           "                   [--vocoder hnm|gl] [--gl-iters N] [--through] [--isa I]\n"
           "example: frae decode speech.fbs --wav speech-out.wav\n"
           "\n"
           "Rebuilds the frames of a .fbs bitstream with the model that made\n"
           "it (checked by its hash; with no MODEL, the shipped model whose\n"
           "hash the stream names, 'frae models') and writes them as float32 .npy (-o),\n"
           "shaped like the encoded input, or as audio (--wav), or both.  The decoder runs the same feedback loop\n"
           "as training: decode(encode(x)) equals 'frae predict' on x.\n"
           "With a model that codes pitch (train --pitch), each frame is D\n"
           "values, then f0 (Hz, 0 when unvoiced) and voicing (0 or 1).\n"
           "  --wav OUT.wav        also turn log-mel frames back into audio\n"
           "                       (OUT-<n>.wav per sequence if several)\n"
           "  --vocoder V          hnm: the harmonic-plus-noise vocoder\n"
           "                       (the default when the stream carries\n"
           "                       pitch); gl: mel pseudo-inverse, then\n"
           "                       Griffin-Lim (the default without pitch)\n"
           "  --gl-iters N         Griffin-Lim iterations (32)\n"
           "Real-time packets (encode --packet-ms; IN may be -, stdin, and\n"
           "OUT.wav - stdout, the audio out as it is decoded) are decoded\n"
           "as they come: a lost, damaged (its CRC fails), late or\n"
           "duplicated packet is concealed or dropped, decoding goes on,\n"
           "and one line on stderr says what was concealed.\n"
           "  --through            decode through bit errors (a fixed-rate\n"
           "                       stream on a channel without checks)\n"
           "  -o, --output OUT.npy the decoded frames\n"
           "  --isa I              auto, scalar, avx2 or avx512 (auto)\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or stream (truncated, corrupted, foreign, or\n"
           "made with another model).\n");
}

static void vocode_help(void)
{
    cli_printf("usage: frae vocode FEATURES.npy -o OUT.wav [--gl-iters N] [--sample-rate HZ]\n"
           "                   [--no-resample] [--mels N] [--hop N] [--win N] [--fft N]\n"
           "                   [--fmin HZ] [--fmax HZ]\n"
           "example: frae vocode speech.npy -o speech-vocoded.wav\n"
           "\n"
           "Turns features with pitch ('frae features --pitch': [T, mels + 2]\n"
           "or [N, T, mels + 2]) back into audio with the harmonic-plus-noise\n"
           "vocoder, the one 'frae decode --wav' uses: the vocoder's own\n"
           "quality, with no coding.  Features of mels values only are\n"
           "inverted by Griffin-Lim.  OUT-<n>.wav per sequence if several.\n"
           "\n" CLI_FEATURE_HELP
           "  --gl-iters N         Griffin-Lim iterations, for features\n"
           "                       without pitch (32)\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options or features.\n");
}

/* An .npy of frames read in order a chunk at a time, the pages of its
 * mapping behind the chunk dropped as it goes: a long file passes through
 * memory once and is never resident whole. */
#define READ_CHUNK 512 /* frames */
typedef struct {
    const frae_npy *a;
    size_t dropped; /* bytes of the mapping dropped so far */
} npy_reader;

static void npy_reader_read(npy_reader *r, long s, long t0, long nt,
                            float *dst)
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

int cmd_vocode(int argc, char **argv)
{
    cli_cmd = "frae vocode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.gl_iters = -1;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       vocode_help, &o);
    if (rc)
        return rc;
    if (o.encoder_opt)
        return cli_fail(EXIT_USAGE, "%s is an option of 'frae encode'",
                        o.encoder_opt);
    /* one positional: the features (cli_io takes it as the "model") */
    const char *in = o.io.model;
    if (!in || o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs FEATURES.npy and -o OUT.wav (see "
                                    "'frae vocode --help')");
    const frae_features *f = &o.io.audio.f;
    char err[512];
    if (frae_features_check(f, err, sizeof err))
        return cli_fail(EXIT_USAGE, "bad audio features: %s", err);
    if (o.vocoder == 2 && o.gl_iters < 0)
        o.gl_iters = 32;
    if (o.vocoder == 1)
        o.gl_iters = -1;
    frae_npy a;
    if (frae_npy_open(in, &a, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    const int pitch = a.d == f->n_mels + 2;
    if (frae_npy_frames(&a, in, err, sizeof err) ||
        (!pitch && a.d != f->n_mels)) {
        if (!frae_npy_frames(&a, in, err, sizeof err))
            snprintf(err, sizeof err,
                     "%s: %ld values per frame; the features have %d mel "
                     "bands (%d with pitch)",
                     in, a.d, f->n_mels, f->n_mels + 2);
        frae_npy_close(&a);
        return cli_fail(EXIT_USAGE, "%s", err);
    }
    const long chunk = a.t < READ_CHUNK ? a.t : READ_CHUNK;
    float *x = malloc(sizeof(float) * (size_t)chunk * (size_t)a.d);
    wav_out wav = {0};
    if (!x) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    /* every value checked before any audio is made: features no audio
     * gives (NaN, or louder than the loudest audio frae reads) would give
     * wrong audio */
    const double loudest = frae_features_max(f);
    npy_reader r = {&a, 0};
    for (long s = 0; s < a.n; s++)
        for (long t0 = 0; t0 < a.t; t0 += chunk) {
            const long nt = a.t - t0 < chunk ? a.t - t0 : chunk;
            npy_reader_read(&r, s, t0, nt, x);
            for (long t = 0; t < nt; t++) {
                const float *frame = x + (size_t)t * a.d;
                const int c = unheard_value(frame, (int)a.d, f->n_mels,
                                            loudest);
                if (c < 0)
                    continue;
                char at[96];
                if (a.ndim == 3)
                    snprintf(at, sizeof at, "[%ld, %ld, %d]", s, t0 + t, c);
                else
                    snprintf(at, sizeof at, "[%ld, %d]", t0 + t, c);
                rc = !isfinite(frame[c])
                         ? cli_fail(EXIT_USAGE, "%s: %s at %s", in,
                                    isnan(frame[c]) ? "NaN" : "Inf", at)
                         : cli_fail(EXIT_USAGE,
                                    "%s: log-mel value %g at %s, above the "
                                    "%.2f of the loudest audio frae reads "
                                    "(samples within +-%g): no audio has "
                                    "these features",
                                    in, (double)frame[c], at, loudest,
                                    FRAE_AUDIO_MAX_SAMPLE);
                goto done;
            }
        }
    if ((rc = wav_out_init(&wav, f, o.io.output, a.n > 1,
                           pitch && o.gl_iters < 0, o.gl_iters)))
        goto done;
    r.dropped = 0;
    for (long s = 0; s < a.n; s++) {
        if ((rc = wav_out_begin(&wav, s)))
            goto done;
        for (long t0 = 0; t0 < a.t; t0 += chunk) {
            const long nt = a.t - t0 < chunk ? a.t - t0 : chunk;
            npy_reader_read(&r, s, t0, nt, x);
            for (long t = 0; t < nt; t++)
                if ((rc = wav_out_frame(&wav, x + (size_t)t * a.d)))
                    goto done;
        }
        if ((rc = wav_out_end(&wav)))
            goto done;
    }
done:
    wav_out_free(&wav);
    free(x);
    frae_npy_close(&a);
    return rc;
}

/* ---- version 5: real-time packets, read as they come ------------------------ */

/* The next packet of a file or pipe into buf (cap bytes): its bytes and
 * whether its CRC held; 0 at the end; -1 (told) if the framing is broken
 * or the stream ends inside a packet. */
static long read_packet(FILE *in, const char *name, unsigned char *buf,
                        size_t cap, const unsigned char **packet, size_t *n,
                        int *intact)
{
    size_t got = 0;
    int c;
    /* the length's varint, a byte at a time, so that nothing is read past
     * the packet (a pipe gives what the encoder flushed) */
    while (got < 3 && (c = fgetc(in)) != EOF) {
        buf[got++] = (unsigned char)c;
        if (!(c & 0x80))
            break;
    }
    if (got == 0)
        return 0;
    uint32_t len;
    if (frae_varint_get(buf, got, &len) <= 0 || len == 0 ||
        len + got + 2 > cap)
        return cli_fail(EXIT_USAGE, "%s: a packet length no encoder writes",
                        name), -1;
    if (fread(buf + got, 1, len + 2, in) != len + 2) {
        /* a stream cut inside a packet: that packet is lost, and the
         * stream ends there */
        fprintf(stderr, "%s: %s: cut inside a packet: the stream ends there\n",
                cli_cmd, name);
        return 0;
    }
    char err[256];
    return frae_packet_unframe(buf, got + len + 2, packet, n, intact, err,
                               sizeof err);
}

/* frae decode of a version-5 stream (a file or "-"): packets decoded as
 * they are read, lost and damaged ones concealed, frames out as they are
 * made (the .npy, the WAV), each packet's audio flushed. */
static int decode_packets(codec_opts *o, FILE *in)
{
    char err[512];
    unsigned char head[FRAE_STREAM_HEADER_V5_MAX];
    size_t have = 0;
    frae_stream s;
    long hb = 0;
    while (have < sizeof head) {
        int c = fgetc(in);
        if (c == EOF)
            break;
        head[have++] = (unsigned char)c;
        if ((hb = frae_packet_header_parse(head, have, &s, err, sizeof err)))
            break;
    }
    if (hb <= 0)
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.input,
                        hb < 0 ? err : "truncated: shorter than a version-5 "
                                       "header");
    frae_model *m = load_inference(o->io.model, o->io.isa);
    if (!m)
        return EXIT_USAGE;
    frae_packet_decoder *pd = frae_packet_decoder_create(m, &s, err, sizeof err);
    const frae_config *c = frae_get_config(m);
    const int D = c->frame_dim, width = D + 2 * c->pitch;
    const long P = (long)s.packet_frames, cap = FRAE_PACKET_DECODE_MAX(P);
    float *frames = malloc(sizeof(float) * (size_t)(cap + P) * width);
    unsigned char *buf = malloc(0x10000 + 8);
    frae_atomic_file af;
    af.f = NULL;
    wav_out wav = {0};
    frae_features feat;
    double loudest = INFINITY;
    int rc = 0;
    if (!pd) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
        goto done;
    }
    if (!frames || !buf) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    frae_packet_decoder_through(pd, o->through);
    if (o->wav) {
        const int features = cli_model_features(o->io.model, &feat);
        if (features <= 0) {
            rc = features < 0 ? EXIT_USAGE
                              : cli_fail(EXIT_USAGE,
                                         "--wav: %s was not trained on audio "
                                         "features, so its frames are not "
                                         "log-mel",
                                         o->io.model);
            goto done;
        }
        const int live = !strcmp(o->io.input, "-") ||
                         !cli_output_seekable(o->wav);
        if ((rc = wav_out_init(&wav, &feat, o->wav, 0,
                               c->pitch && o->vocoder != 2, o->gl_iters)))
            goto done;
        wav.live = live;
        loudest = frae_features_max(&feat);
        if ((rc = wav_out_begin(&wav, 0)))
            goto done;
    }
    if (o->io.output) {
        /* frames known: the .npy's shape is; a live stream's is counted */
        long shape[2] = {(long)s.frames, width};
        if (!s.frames && !cli_output_seekable(o->io.output)) {
            rc = cli_fail(EXIT_USAGE,
                          "-o %s: a live stream's frames are counted only at "
                          "its end, and the .npy header that holds the count "
                          "comes first: give a file (or only --wav)",
                          o->io.output);
            goto done;
        }
        if (s.frames ? frae_npy_begin(&af, o->io.output, 2, shape, err,
                                      sizeof err)
                     : frae_npy_begin_growing(&af, o->io.output, 2, err,
                                              sizeof err)) {
            af.f = NULL;
            rc = cli_fail(EXIT_FAILED, "%s", err);
            goto done;
        }
    }
    uint64_t out = 0, damaged = 0;
    for (int end = 0; !end;) {
        const unsigned char *packet;
        size_t n;
        int intact;
        long got = read_packet(in, o->io.input, buf, 0x10000 + 8, &packet, &n,
                               &intact);
        if (got < 0) {
            rc = EXIT_USAGE;
            goto done;
        }
        long k;
        if (got == 0) { /* the end: a stream that declared its frames and
                           lost its last packets has them concealed */
            end = !s.frames || out >= s.frames;
            k = end ? 0 : frae_packet_conceal(pd, frames, cap);
        } else if (intact || o->through) {
            k = frae_packet_decode(pd, packet, n, frames, cap);
        } else {
            damaged++;
            k = frae_packet_conceal(pd, frames, cap);
        }
        if (s.frames && out + (uint64_t)k > s.frames)
            k = (long)(s.frames - out);
        for (long f = 0; f < k; f++) {
            float *y = frames + (size_t)f * width;
            const int bad = unheard_value(y, width, D, loudest);
            if (bad >= 0) {
                rc = cli_fail(EXIT_USAGE,
                              "%s: frame %llu: %s decodes %s (%g, column %d)",
                              o->io.input, (unsigned long long)(out + f),
                              o->io.model,
                              isfinite(y[bad]) ? "a log-mel value louder than "
                                                 "any audio"
                                               : "a non-finite value",
                              (double)y[bad], bad);
                goto done;
            }
            if (af.f && fwrite(y, sizeof(float), (size_t)width, af.f) !=
                            (size_t)width) {
                rc = cli_fail(EXIT_FAILED, "%s: write failed", o->io.output);
                goto done;
            }
            if (o->wav && (rc = wav_out_frame(&wav, y)))
                goto done;
        }
        out += (uint64_t)k;
        if (af.f && !af.seekable)
            fflush(af.f);
    }
    if (o->wav && (rc = wav_out_end(&wav)))
        goto done;
    if (af.f) {
        long shape[2] = {(long)out, width};
        rc = (s.frames ? frae_atomic_commit(&af, err, sizeof err)
                       : frae_npy_finish(&af, 2, shape, err, sizeof err))
                 ? cli_fail(EXIT_FAILED, "%s", err)
                 : EXIT_OK;
        af.f = NULL;
        if (rc)
            goto done;
    }
    frae_packet_counts pc;
    frae_packet_decoder_counts(pd, &pc);
    cli_printf("%s -> %s: %llu frames from %llu packets of %ld frames\n",
               o->io.input, o->io.output ? o->io.output : o->wav,
               (unsigned long long)out, (unsigned long long)pc.packets, P);
    if (pc.concealed || pc.late || damaged)
        fprintf(stderr,
                "%s: concealed %llu of %llu frames: %llu packets lost (%llu of "
                "them damaged), %llu late or duplicated%s\n",
                cli_cmd, (unsigned long long)pc.concealed,
                (unsigned long long)out, (unsigned long long)pc.lost,
                (unsigned long long)damaged, (unsigned long long)pc.late,
                s.flags & FRAE_STREAM_RANGED_PACKETS
                    ? " (entropy-coded: after a loss, until the next "
                      "resynchronisation point)"
                    : "");
    rc = EXIT_OK;
done:
    if (af.f)
        frae_atomic_abort(&af);
    wav_out_free(&wav);
    free(frames), free(buf);
    frae_packet_decoder_destroy(pd);
    frae_destroy(m);
    return rc;
}

/* Whether IN is a version-5 stream ("-" is taken as one: a live pipe). */
static int is_packets(const char *path)
{
    if (!strcmp(path, "-"))
        return 1;
    unsigned char head[7];
    int fd = frae_open_regular(path, NULL, 0); /* a FIFO never blocks here */
    if (fd < 0)
        return 0; /* the usual path says why */
    const int v5 = read(fd, head, 7) == 7 && !memcmp(head, "FRAEBS", 6) &&
                   head[6] == FRAE_STREAM_VERSION_PACKETS;
    close(fd);
    return v5;
}

int cmd_decode(int argc, char **argv)
{
    cli_cmd = "frae decode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.gl_iters = 32;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       decode_help, &o);
    if (rc || (rc = shift_positionals(&o, 1)))
        return rc;
    if (o.encoder_opt)
        return cli_fail(EXIT_USAGE, "%s is an option of 'frae encode'",
                        o.encoder_opt);
    if (!o.io.input || (!o.io.output && !o.wav))
        return cli_fail(EXIT_USAGE, "needs [MODEL] IN.fbs and --wav OUT.wav "
                                    "or -o OUT.npy (see 'frae decode "
                                    "--help')");
    if ((rc = model_from_stream(&o)))
        return rc;
    if (o.wav && o.io.output && frae_output_descriptor(o.wav) >= 0 &&
        frae_output_descriptor(o.wav) == frae_output_descriptor(o.io.output))
        return cli_fail(EXIT_USAGE, "-o %s and --wav %s: two outputs cannot "
                                    "share one descriptor",
                        o.io.output, o.wav);
    char err[512];
    if (is_packets(o.io.input)) {
        if (!strcmp(o.io.input, "-"))
            return decode_packets(&o, stdin);
        int fd = frae_open_regular(o.io.input, err, sizeof err);
        FILE *in = fd >= 0 ? fdopen(fd, "rb") : NULL;
        if (!in) {
            if (fd >= 0)
                close(fd);
            return cli_fail(EXIT_USAGE, "%s", err);
        }
        rc = decode_packets(&o, in);
        fclose(in);
        return rc;
    }
    if (o.through)
        return cli_fail(EXIT_USAGE, "--through: for real-time packets "
                                    "(encode --packet-ms)");
    void *map;
    size_t size;
    if (frae_map_file(o.io.input, 1, &map, &size, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    frae_model *m = load_inference(o.io.model, o.io.isa);
    if (!m) {
        munmap(map, size);
        return EXIT_USAGE;
    }
    float *y = NULL;
    frae_atomic_file af;
    af.f = NULL;
    wav_out wav = {0};
    frae_features feat;
    frae_stream_decoder *sd = frae_stream_decoder_create(m, map, size, err,
                                                         sizeof err);
    if (!sd) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o.io.input, err);
        goto done;
    }
    const frae_stream s = *frae_stream_decoder_stream(sd);
    const int pitch = (s.flags & FRAE_STREAM_PITCH) != 0;
    /* the model's D: check_model matched a stream that states one, and
     * version 4 leaves it to the model */
    const int D = frae_get_config(m)->frame_dim, width = D + 2 * pitch;
    double loudest = INFINITY; /* --wav: the largest log-mel value audio has */
    if (o.wav) {
        const int have = cli_model_features(o.io.model, &feat);
        if (have <= 0) {
            rc = have < 0 ? EXIT_USAGE
                          : cli_fail(EXIT_USAGE,
                                     "--wav: %s was not trained on audio "
                                     "features, so its frames are not log-mel",
                                     o.io.model);
            goto done;
        }
        if (o.vocoder == 1 && !pitch) {
            rc = cli_fail(EXIT_USAGE,
                          "--vocoder hnm: %s carries no pitch (the model "
                          "codes the envelope alone); use --vocoder gl",
                          o.io.input);
            goto done;
        }
        if ((rc = wav_out_init(&wav, &feat, o.wav, s.sequences > 1,
                               pitch && o.vocoder != 2, o.gl_iters)))
            goto done;
        loudest = frae_features_max(&feat);
    }
    long shape[3] = {(long)s.sequences, (long)s.frames, width};
    int two_d = s.flags & 1 && s.sequences == 1;
    if (two_d)
        shape[0] = s.frames, shape[1] = width;
    y = malloc(sizeof(float) * (D + 2));
    if (!y) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    /* frame by frame, straight into the output files: memory is the
     * model's and the vocoder's, whatever the stream's length (--wav
     * alone: no .npy) */
    if (o.io.output &&
        frae_npy_begin(&af, o.io.output, two_d ? 2 : 3, shape, err, sizeof err)) {
        af.f = NULL;
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    for (uint32_t q = 0; q < s.sequences; q++) {
        if (o.wav && (rc = wav_out_begin(&wav, q)))
            goto done;
        for (uint32_t t = 0; t < s.frames; t++) {
            if (frae_stream_decode(sd, y, NULL, NULL, err, sizeof err) < 0) {
                rc = cli_fail(EXIT_USAGE, "%s: %s", o.io.input, err);
                goto done;
            }
            const int bad = unheard_value(y, width, D, loudest);
            if (bad >= 0) {
                rc = cli_fail(EXIT_USAGE,
                              !isfinite(y[bad])
                                  ? "%s: sequence %u, frame %u: %s decodes "
                                    "a non-finite value (%g, column %d)"
                                  : "%s: sequence %u, frame %u: %s decodes "
                                    "a log-mel value of %g (band %d), louder "
                                    "than any audio: no WAV from it",
                              o.io.input, q, t, o.io.model, (double)y[bad],
                              bad);
                goto done;
            }
            if (af.f)
                fwrite(y, sizeof(float), (size_t)width, af.f);
            if (o.wav && (rc = wav_out_frame(&wav, y)))
                goto done;
        }
        if (o.wav && (rc = wav_out_end(&wav)))
            goto done;
    }
    rc = af.f && frae_atomic_commit(&af, err, sizeof err)
             ? cli_fail(EXIT_FAILED, "%s", err)
             : EXIT_OK;
    af.f = NULL;
    if (!rc)
        cli_printf("%s -> %s: %u sequence%s x %u frames\n", o.io.input,
               o.io.output ? o.io.output : o.wav, s.sequences,
               s.sequences == 1 ? "" : "s", s.frames);
done:
    if (af.f)
        frae_atomic_abort(&af);
    wav_out_free(&wav);
    free(y);
    frae_stream_decoder_destroy(sd);
    frae_destroy(m);
    munmap(map, size);
    return rc;
}

/* ---- frae models: what is installed ---------------------------------------
 * Each models directory in search order, each checkpoint in it: its name,
 * rate, latency and hash from the file, and what it was trained on from
 * the directory's MANIFEST (tab-separated: file, bytes, sha256, rate,
 * training data; '#' lines are comments). */
static void models_help(void)
{
    cli_printf("usage: frae models\n"
               "example: frae models\n"
               "\n"
               "Lists the shipped models frae finds, in the order it looks:\n"
               "$FRAE_MODELS (colon-separated directories; alone when set),\n"
               "else PREFIX/share/frae/models beside the program and the\n"
               "library ('make install' puts them there) and the source\n"
               "tree's models/ (for build/frae).  For each: its name (what\n"
               "'frae encode NAME IN -o OUT.fbs' takes), its rate, its\n"
               "latency, its hash (what a stream names: 'frae decode IN.fbs\n"
               "--wav OUT.wav' with no MODEL finds the model by it) and the\n"
               "data it was trained on.  'frae encode IN -o OUT.fbs' with no\n"
               "MODEL uses '%s'.\n"
               "\n"
               "Exit codes: 0 done (also when none is found), 2 bad "
               "options.\n",
               FRAE_DEFAULT_MODEL);
}

/* the MANIFEST line of file in dir: its rate and data fields */
static int manifest_entry(const char *dir, const char *file, char *rate,
                          size_t rn, char *data, size_t dn)
{
    char path[2 * PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/MANIFEST", dir) >= sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[2048];
    int found = -1, cut = 0; /* cut: inside a line too long to read */
    while (found && fgets(line, sizeof line, f)) {
        const int whole = strchr(line, '\n') != NULL;
        const int skip = cut || line[0] == '#' || !whole;
        cut = !whole;
        if (skip)
            continue; /* a comment, or (any part of) a line too long */
        line[strcspn(line, "\r\n")] = 0;
        char *field[5];
        int n = 0;
        for (char *p = line; n < 5; n++) {
            field[n] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                n++;
                break;
            }
            *tab = 0;
            p = tab + 1;
        }
        if (n == 5 && !strcmp(field[0], file)) {
            snprintf(rate, rn, "%s", field[3]);
            snprintf(data, dn, "%s", field[4]);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

int cmd_models(int argc, char **argv)
{
    cli_cmd = "frae models";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            models_help();
            return EXIT_OK;
        }
        return cli_fail(EXIT_USAGE, "unexpected argument '%s' (see 'frae "
                                    "models --help')",
                        argv[i]);
    }
    char dir[PATH_MAX];
    int listed = 0;
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        DIR *d = opendir(dir);
        if (!d)
            continue;
        char names[64][256];
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < 64) {
            size_t len = strlen(e->d_name);
            if (len > 12 && len < sizeof names[0] &&
                !strcmp(e->d_name + len - 12, ".safetensors"))
                strcpy(names[n++], e->d_name);
        }
        closedir(d);
        qsort(names, (size_t)n, sizeof names[0], by_name);
        if (n)
            cli_printf("%s:\n", dir);
        for (int j = 0; j < n; j++) {
            char path[2 * PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[j]) >=
                sizeof path)
                continue;
            frae_model *m = load_inference(path, FRAE_ISA_AUTO);
            if (!m)
                continue; /* load_inference said why */
            const frae_config *c = frae_get_config(m);
            char rate[256] = "", data[1024] = "";
            manifest_entry(dir, names[j], rate, sizeof rate, data, sizeof data);
            names[j][strlen(names[j]) - 12] = 0;
            const double bits = frae_bits_per_frame(m);
            if (c->prior_hidden > 0)
                cli_printf("  %-12s variable rate%s%s: %d codes of %d bit%s "
                           "range-coded under a learned prior%s\n",
                           names[j], rate[0] ? ", " : "", rate, c->latent_dim,
                           frae_code_bits(m), frae_code_bits(m) == 1 ? "" : "s",
                           c->pitch ? ", pitch" : "");
            else
                cli_printf("  %-12s %.2f kbit/s fixed: %g bits a frame "
                           "(%d codes of %d bit%s%s)\n",
                           names[j], bits * 100 / 1000, bits, c->latent_dim,
                           frae_code_bits(m), frae_code_bits(m) == 1 ? "" : "s",
                           c->pitch ? " + 4 pitch bits" : "");
            cli_printf("               latency 30 ms (10 ms frames; the f0 "
                       "window's 20 ms ahead, the vocoder's 10)%s\n",
                       c->prior_hidden > 0 ? " + the packet (--packet-ms)" : "");
            cli_printf("               hash %016llx, %s weights%s\n",
                       (unsigned long long)frae_model_hash(m),
                       c->weights == FRAE_WEIGHTS_BF16 ? "bf16" : "f32",
                       !strcmp(names[j], FRAE_DEFAULT_MODEL)
                           ? "; the default for 'frae encode IN -o OUT'"
                           : "");
            cli_printf("               trained on: %s\n",
                       data[0] ? data : "(not in the directory's MANIFEST)");
            frae_destroy(m);
            listed++;
        }
    }
    if (!listed)
        cli_printf("no shipped models found (FRAE_MODELS, "
                   "PREFIX/share/frae/models, or the source tree's models/: "
                   "'make models' builds them)\n");
    return EXIT_OK;
}
