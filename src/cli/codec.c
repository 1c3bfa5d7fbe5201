/* frae encode, frae decode: the codec on files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"

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
} codec_opts;

static const char *const vocoder_names[] = {"auto", "hnm", "gl"};

static const cli_opt codec_list[] = {
    {"--output", 1},      {"--frame-rate", 1}, {"--isa", 1},
    {"--wav", 1},         {"--gl-iters", 1},   {"--sample-rate", 1},
    {"--no-resample", 0}, {"--mels", 1},       {"--hop", 1},
    {"--win", 1},         {"--fft", 1},        {"--fmin", 1},
    {"--fmax", 1},        {"--vocoder", 1},    {"--packet-frames", 1},
    {"--search", 1},      {"--search-lambda", 1}, {"--dtx", 0},
    {"--dtx-level", 1},   {NULL, 0}};

static int codec_opt(void *ctx, const char *name, const char *v)
{
    codec_opts *o = ctx;
    if (!strcmp(name, "--frame-rate"))
        return cli_double(name, v, 1e-3, 1e9, &o->frame_rate);
    if (!strcmp(name, "--wav"))
        return o->wav = v, 0;
    if (!strcmp(name, "--gl-iters"))
        return cli_int(name, v, 0, 10000, &o->gl_iters);
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

static int codec_pos(void *ctx, const char *arg)
{
    return cli_io_positional(&((codec_opts *)ctx)->io, arg);
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

/* Frames of features with pitch (n_mels + 2 values each) to audio through
 * the harmonic-plus-noise vocoder: the same length and timing as the
 * audio they came from ((frames - 1) * hop + win samples). */
static float *vocode(const frae_features *f, const float *frames, long n,
                     long *n_samples, char *err, size_t errlen)
{
    const size_t size = frae_vocoder_size(f);
    void *mem = size ? malloc(size) : NULL;
    frae_vocoder *v = mem ? frae_vocoder_init(mem, f, 1, err, errlen) : NULL;
    const long total = (n - 1) * f->hop + f->win;
    float *audio = calloc((size_t)total + (size_t)f->hop, sizeof(float));
    if (!v || !audio) {
        if (!size)
            frae_vocoder_init(NULL, f, 1, err, errlen); /* says why */
        else
            snprintf(err, errlen, "out of memory");
        free(mem), free(audio);
        return NULL;
    }
    const int width = f->n_mels + 2;
    /* call t ends at frame t's centre; before frame 0's, win/2 - hop
     * samples of silence */
    long at = f->win / 2 - f->hop;
    for (long t = 0; t < n; t++, at += f->hop)
        frae_vocoder_frame(v, frames + (size_t)t * width, audio + at);
    frae_vocoder_flush(v, audio + at);
    free(mem);
    *n_samples = total;
    return audio;
}

/* Frames of an .npy of features (log-mel, or log-mel with pitch) to one
 * WAV per sequence: the vocoder if the frames carry pitch and gl_iters < 0,
 * else Griffin-Lim. */
static int write_wavs(const frae_features *f, const char *frames_path,
                      const char *wav, int gl_iters)
{
    char err[512];
    frae_npy a;
    if (frae_npy_open(frames_path, &a, err, sizeof err) ||
        frae_npy_frames(&a, frames_path, err, sizeof err) ||
        frae_npy_check_finite(&a, frames_path, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    const int pitch = a.d == f->n_mels + 2;
    if (!pitch && a.d != f->n_mels) {
        frae_npy_close(&a);
        return cli_fail(EXIT_USAGE,
                        "%s: %ld values per frame; the features have %d mel "
                        "bands (%d with pitch)",
                        frames_path, a.d, f->n_mels, f->n_mels + 2);
    }
    const int hnm = pitch && gl_iters < 0;
    if (gl_iters < 0)
        gl_iters = 32;
    frae_mel *mel = hnm ? NULL : frae_mel_create(f, err, sizeof err);
    float *feats = malloc(sizeof(float) * (size_t)a.t * a.d);
    float *mels = malloc(sizeof(float) * (size_t)a.t * f->n_mels);
    int rc = EXIT_OK;
    if ((!hnm && !mel) || !feats || !mels)
        rc = cli_fail(EXIT_FAILED, "--wav: %s", feats && mels ? err : "out of memory");
    for (long s = 0; s < a.n && rc == EXIT_OK; s++) {
        if (frae_npy_read(&a, s, 0, a.t, feats)) /* mapped: cannot fail */
            break;
        long n = -1;
        float *audio = NULL;
        if (hnm) {
            audio = vocode(f, feats, a.t, &n, err, sizeof err);
        } else {
            for (long t = 0; t < a.t; t++) /* the envelope alone */
                memcpy(mels + (size_t)t * f->n_mels, feats + (size_t)t * a.d,
                       sizeof(float) * (size_t)f->n_mels);
            audio = malloc(sizeof(float) * (size_t)((a.t - 1) * f->hop + f->win));
            n = audio ? frae_mel_invert(mel, mels, a.t, gl_iters, audio) : -1;
            snprintf(err, sizeof err, "out of memory");
        }
        char path[4096];
        if (a.n == 1) {
            snprintf(path, sizeof path, "%s", wav);
        } else {
            const char *dot = strrchr(wav, '.');
            int stem = dot ? (int)(dot - wav) : (int)strlen(wav);
            snprintf(path, sizeof path, "%.*s-%ld%s", stem, wav, s,
                     dot ? dot : ".wav");
        }
        if (!audio || n < 0)
            rc = cli_fail(EXIT_FAILED, "--wav: %s", err);
        else if (frae_audio_write_wav(path, audio, n, f->sample_rate, err,
                                      sizeof err))
            rc = cli_fail(EXIT_FAILED, "%s", err);
        else if (hnm)
            printf("%s: %.2f s of audio (harmonic-plus-noise vocoder)\n", path,
                   (double)n / f->sample_rate);
        else
            printf("%s: %.2f s of audio (Griffin-Lim, %d iterations)\n", path,
                   (double)n / f->sample_rate, gl_iters);
        free(audio);
    }
    free(feats), free(mels);
    frae_mel_destroy(mel);
    frae_npy_close(&a);
    return rc;
}

/* --dtx: a frame is silent once it and the DTX_HANGOVER frames before it
 * are all below the level (so a word's tail is still coded, and the frame
 * the decoder repeats is a quiet one); -60 dB below a full-scale sine,
 * about where frae's pitch tracker stops calling frames voiced (a mean
 * square of -60 dBFS; the sine's is -3) */
#define DTX_HANGOVER 4
#define DTX_LEVEL -60.0

/* The level of a frame of log-mel features in dB: its mel power summed;
 * 0 dB is full_scale_db's */
static double frame_level_db(const frae_features *f, const float *x)
{
    double power = 0.0;
    for (int b = 0; b < f->n_mels; b++)
        power += exp((double)x[b] * f->scale - f->offset);
    return 10.0 * log10(power > 1e-30 ? power : 1e-30);
}

/* The level of a full-scale 1 kHz sine's frames (the middle one) through
 * the same features: the gate's 0 dB.  NAN if the features cannot be made. */
static double full_scale_db(const frae_features *f)
{
    char err[256];
    frae_mel *mel = frae_mel_create(f, err, sizeof err);
    const long n = f->win + 8L * f->hop;
    float *samples = malloc(sizeof(float) * (size_t)n);
    const long frames = mel ? frae_mel_frames(mel, n) : 0;
    float *feats = malloc(sizeof(float) * (size_t)(frames > 0 ? frames : 1) *
                          f->n_mels);
    double db = NAN;
    if (mel && samples && feats && frames > 0) {
        const double step = 6.283185307179586 * 1000.0 / f->sample_rate;
        for (long i = 0; i < n; i++)
            samples[i] = (float)sin(step * (double)i);
        frae_mel_compute(mel, samples, n, feats);
        db = frame_level_db(f, feats + (size_t)(frames / 2) * f->n_mels);
    }
    free(samples), free(feats);
    frae_mel_destroy(mel);
    return db;
}

static void encode_help(void)
{
    printf("usage: frae encode MODEL IN -o OUT.fbs [--frame-rate R]\n"
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
           "--dtx (a model with a prior and audio features) sends silence\n"
           "as silence: a frame is silent once it and the %d before it are\n"
           "all below --dtx-level dB (%g; 0 dB: a full-scale sine; giving\n"
           "it implies --dtx), and a silent frame codes a flag alone, the\n"
           "decoder repeating its last frame.  A pause then costs next to\n"
           "nothing (discontinuous transmission, as Opus's DTX).\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or input.\n",
           DTX_HANGOVER, DTX_LEVEL);
}

int cmd_encode(int argc, char **argv)
{
    cli_cmd = "frae encode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.frame_rate = 100;
    o.search_lambda = -1;
    o.dtx_level = DTX_LEVEL;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       encode_help, &o);
    if (rc)
        return rc;
    if (!o.io.model || !o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs MODEL, IN.npy and -o OUT.fbs (see "
                                    "'frae encode --help')");
    char err[512];
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
    size_t cb = frae_code_bytes(m), n_frames = (size_t)in.n * in.t;
    /* frames are read a chunk at a time and their codes written as they
     * come: memory does not grow with the input */
    const long chunk = in.t < 512 ? in.t : 512;
    float *x = malloc(sizeof(float) * (size_t)chunk * width);
    float *recon = malloc(sizeof(float) * width);
    unsigned char *code = malloc(cb), *bytes_out = malloc(cb + 8);
    frae_encoder *e = frae_encoder_create(m);
    frae_stream h;
    frae_stream_header(m, (uint32_t)in.n, (uint32_t)in.t,
                       (in.ndim == 2) | (o.dtx ? FRAE_STREAM_DTX : 0), &h);
    const int ranged = frae_stream_ranged(&h);
    frae_features feat;
    double dtx_gate = 0; /* --dtx: the level below which a frame is quiet */
    if (o.dtx) {
        const int have = ranged ? cli_model_features(o.io.model, &feat) : 0;
        if (!ranged || have <= 0) {
            rc = have < 0 ? EXIT_USAGE
                 : !ranged
                     ? cli_fail(EXIT_USAGE,
                                "--dtx: %s has no prior, so its streams are "
                                "fixed-rate: every frame costs the same",
                                o.io.model)
                     : cli_fail(EXIT_USAGE,
                                "--dtx: %s was not trained on audio "
                                "features, so its frames have no level to "
                                "gate on",
                                o.io.model);
            goto done_early;
        }
        dtx_gate = full_scale_db(&feat) + o.dtx_level;
        if (!isfinite(dtx_gate)) {
            rc = cli_fail(EXIT_FAILED, "--dtx: cannot compute the features' "
                                       "full-scale level");
            goto done_early;
        }
        if (e)
            frae_encoder_set_dtx(e, 1);
    }
    long silent = 0;
    const double search_lambda = o.search_lambda >= 0
                                     ? o.search_lambda
                                     : (double)frae_get_config(m)->rate_lambda;
    if (e && frae_encoder_set_search(e, o.search, (float)search_lambda)) {
        rc = cli_fail(EXIT_USAGE,
                      "--search: %s has raw float latents (no quantizer), "
                      "so there are no codes to search",
                      o.io.model);
        goto done_early;
    }
    if (o.packet_frames && !ranged) {
        rc = cli_fail(EXIT_USAGE,
                      "--packet-frames: %s has no prior, so its streams are "
                      "fixed-rate (version 2), without packets",
                      o.io.model);
        goto done_early;
    }
    if (o.packet_frames) {
        h.packet_frames = (uint32_t)o.packet_frames;
        if (frae_stream_packet_cap(&h) - FRAE_PACKET_OVERHEAD > 0xffff) {
            rc = cli_fail(EXIT_USAGE,
                          "--packet-frames %d: a packet could outgrow its "
                          "16-bit length with this model; use fewer frames",
                          o.packet_frames);
            goto done_early;
        }
    }
    size_t bytes = ranged ? 0 : frae_stream_bytes(&h);
    unsigned char *packet = ranged ? malloc(frae_stream_packet_cap(&h)) : NULL;
    uint32_t packets = 0;
    size_t packet_overhead = 0;
    frae_range_enc rcoder;
    frae_atomic_file af;
    af.f = NULL;
    if (!code || !x || !recon || !e || !bytes_out || (ranged && !packet)) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (frae_atomic_begin(&af, o.io.output, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    frae_stream_writer w;
    unsigned char head[FRAE_STREAM_HEADER_V3_MAX];
    fwrite(head, 1, frae_stream_writer_begin(&w, &h, head), af.f);
    if (ranged)
        bytes = frae_stream_header_bytes(&h);
    double sse = 0, energy = 0, f0_err = 0;
    long voiced = 0, voicing_kept = 0;
    for (long s = 0; s < in.n; s++) {
        frae_encoder_reset(e);
        int quiet_run = 0; /* --dtx: quiet frames in a row, this one too */
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
            if (ranged) {
                /* a packet of packet_frames frames, the coder afresh */
                if (t % h.packet_frames == 0)
                    frae_range_enc_init(&rcoder, packet + FRAE_PACKET_PAYLOAD,
                                        frae_stream_packet_cap(&h) -
                                            FRAE_PACKET_OVERHEAD);
                if (o.dtx) {
                    const int quiet = frame_level_db(&feat, xt) < dtx_gate;
                    quiet_run = quiet ? quiet_run + 1 : 0;
                }
                if (quiet_run > DTX_HANGOVER) {
                    frae_encode_silence_ranged(e, &rcoder, recon);
                    silent++;
                } else {
                    frae_encode_frame_ranged(e, xt, &rcoder, recon);
                }
                if ((t + 1) % h.packet_frames == 0 || t + 1 == in.t) {
                    size_t n = frae_range_enc_finish(&rcoder);
                    if (rcoder.overflow) { /* cannot happen: sized above */
                        frae_atomic_abort(&af);
                        rc = cli_fail(EXIT_FAILED, "packet %u overflowed",
                                      packets);
                        goto done;
                    }
                    size_t pb = frae_stream_packet_seal(&h, packet, packets++, n);
                    packet_overhead += pb - n;
                    fwrite(packet, 1, pb, af.f);
                    bytes += pb;
                }
            } else {
                frae_encode_frame(e, xt, code, recon);
            }
            if (pitch && xt[D + 1] >= 0.5f && xt[D] > 0) {
                voiced++;
                voicing_kept += recon[D + 1] >= 0.5f;
                f0_err += fabs(recon[D] / xt[D] - 1.0);
            }
            if (!ranged)
                fwrite(bytes_out, 1,
                       frae_stream_writer_add(&w, code, bytes_out), af.f);
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
    if (!ranged)
        fwrite(bytes_out, 1, frae_stream_writer_end(&w, bytes_out), af.f);
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    double bpf = frae_bits_per_frame(m);
    double mse = sse / ((double)n_frames * D);
    if (ranged) {
        /* the bitrate the file takes, every header byte counted */
        const double bits = 8.0 * (double)bytes / (double)n_frames;
        printf("%ld sequence%s x %ld frames -> %s (%zu bytes: header %zu, "
               "%u packets of up to %u frames, %zu bytes of their lengths "
               "and CRCs)\n",
               in.n, in.n == 1 ? "" : "s", in.t, o.io.output, bytes,
               frae_stream_header_bytes(&h), packets, h.packet_frames,
               packet_overhead);
        printf("bitrate: %.2f bits/frame on average (entropy-coded; at most "
               "%.0f fixed-rate) = %.3f kbit/s at %g frames/s\n",
               bits, bpf, bits * o.frame_rate / 1000.0, o.frame_rate);
        if (o.dtx)
            printf("dtx: %ld of %zu frames silent (below %g dB)\n", silent,
                   n_frames, o.dtx_level);
    } else {
    printf("%ld sequence%s x %ld frames -> %s (%zu bytes, %d of them header "
           "and CRC)\n",
           in.n, in.n == 1 ? "" : "s", in.t, o.io.output, bytes,
           FRAE_STREAM_HEADER + 4);
    }
    char split[64] = "";
    if (pitch)
        snprintf(split, sizeof split, " + %d pitch", FRAE_PITCH_BITS);
    if (!ranged)
        printf("bitrate: %.0f bits/frame (%d x %d bits%s) = %.3f kbit/s at "
               "%g frames/s\n",
               bpf, frae_get_config(m)->latent_dim, frae_code_bits(m), split,
               bpf * o.frame_rate / 1000.0, o.frame_rate);
    if (pitch)
        printf("pitch: %ld voiced frames, %.1f%% coded voiced, mean f0 "
               "error %.2f%%\n",
               voiced, voiced ? 100.0 * voicing_kept / voiced : 0.0,
               voiced ? 100.0 * f0_err / voiced : 0.0);
    printf("distortion: mse %.6g, snr %.2f dB\n", mse,
           sse > 0 ? 10.0 * log10(energy / sse) : INFINITY);
    rc = EXIT_OK;
done:
    free(packet);
done_early:
    free(code), free(x), free(recon), free(bytes_out);
    frae_encoder_destroy(e);
    frae_npy_close(&in);
    frae_destroy(m);
    return rc;
}

static void decode_help(void)
{
    printf("usage: frae decode MODEL IN.fbs -o OUT.npy [--wav OUT.wav]\n"
           "\n"
           "Rebuilds the frames of a .fbs bitstream with the model that made\n"
           "it (checked by its hash) and writes them as float32 .npy, shaped\n"
           "like the encoded input.  The decoder runs the same feedback loop\n"
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
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or stream (truncated, corrupted, foreign, or\n"
           "made with another model).\n");
}

static void vocode_help(void)
{
    printf("usage: frae vocode FEATURES.npy -o OUT.wav [options]\n"
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
    char err[512];
    if (frae_features_check(&o.io.audio.f, err, sizeof err))
        return cli_fail(EXIT_USAGE, "bad audio features: %s", err);
    if (o.vocoder == 2 && o.gl_iters < 0)
        o.gl_iters = 32;
    if (o.vocoder == 1)
        o.gl_iters = -1;
    return write_wavs(&o.io.audio.f, in, o.io.output, o.gl_iters);
}

int cmd_decode(int argc, char **argv)
{
    cli_cmd = "frae decode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.gl_iters = 32;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       decode_help, &o);
    if (rc)
        return rc;
    if (o.encoder_opt)
        return cli_fail(EXIT_USAGE, "%s is an option of 'frae encode'",
                        o.encoder_opt);
    if (!o.io.model || !o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs MODEL, IN.fbs and -o OUT.npy (see "
                                    "'frae decode --help')");
    char err[512];
    void *map;
    size_t size;
    if (frae_map_file(o.io.input, 1, &map, &size, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    frae_stream s;
    if (frae_stream_parse(map, size, &s, err, sizeof err)) {
        munmap(map, size);
        return cli_fail(EXIT_USAGE, "%s: %s", o.io.input, err);
    }
    frae_model *m = load_inference(o.io.model, o.io.isa);
    if (!m) {
        munmap(map, size);
        return EXIT_USAGE;
    }
    float *y = NULL;
    frae_decoder *d = NULL;
    unsigned char *code = NULL;
    if (frae_stream_check_model(&s, m, err, sizeof err)) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o.io.input, err);
        goto done;
    }
    const int pitch = (s.flags & FRAE_STREAM_PITCH) != 0;
    /* the model's D: check_model matched a stream that states one, and
     * version 4 leaves it to the model */
    const int D = frae_get_config(m)->frame_dim;
    long shape[3] = {(long)s.sequences, (long)s.frames, D + 2 * pitch};
    int two_d = s.flags & 1 && s.sequences == 1;
    if (two_d)
        shape[0] = s.frames, shape[1] = D + 2 * pitch;
    y = malloc(sizeof(float) * (D + 2));
    code = malloc(frae_code_bytes(m));
    d = frae_decoder_create(m);
    frae_atomic_file af;
    if (!y || !code || !d) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    /* frame by frame, straight into the output file */
    if (frae_npy_begin(&af, o.io.output, two_d ? 2 : 3, shape, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    const int ranged = frae_stream_ranged(&s);
    frae_decoder_set_dtx(d, (s.flags & FRAE_STREAM_DTX) != 0);
    const unsigned char *at = s.payload; /* versions 3, 4: the next packet */
    uint32_t packet = 0;
    frae_range_dec rd;
    for (uint32_t q = 0; q < s.sequences; q++) {
        frae_decoder_reset(d);
        for (uint32_t t = 0; t < s.frames; t++) {
            if (ranged) {
                if (t % s.packet_frames == 0) { /* checked by the parse */
                    const unsigned char *pl;
                    size_t n;
                    at += frae_stream_packet_parse(
                        &s, at, (size_t)((const unsigned char *)map + size - at),
                        packet++, &pl, &n, err, sizeof err);
                    frae_range_dec_init(&rd, pl, n);
                }
                if (frae_decode_frame_ranged(d, &rd, y)) {
                    frae_atomic_abort(&af);
                    rc = cli_fail(EXIT_USAGE,
                                  "%s: sequence %u, frame %u (packet %u): "
                                  "bytes no encoder writes",
                                  o.io.input, q, t, packet - 1);
                    goto done;
                }
                fwrite(y, sizeof(float), (size_t)(D + 2 * pitch), af.f);
                continue;
            }
            frae_stream_frame_code(&s, (uint64_t)q * s.frames + t, code);
            if (frae_decode_frame(d, code, y)) {
                frae_atomic_abort(&af);
                rc = cli_fail(EXIT_USAGE,
                              "%s: sequence %u, frame %u: a code no encoder "
                              "makes",
                              o.io.input, q, t);
                goto done;
            }
            fwrite(y, sizeof(float), (size_t)(D + 2 * pitch), af.f);
        }
    }
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    if (o.wav) {
        frae_features f;
        int have = cli_model_features(o.io.model, &f);
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
        if ((rc = write_wavs(&f, o.io.output, o.wav,
                             pitch && o.vocoder != 2 ? -1 : o.gl_iters)))
            goto done;
    }
    printf("%s -> %s: %u sequence%s x %u frames\n", o.io.input, o.io.output,
           s.sequences, s.sequences == 1 ? "" : "s", s.frames);
    rc = EXIT_OK;
done:
    free(y), free(code);
    frae_decoder_destroy(d);
    frae_destroy(m);
    munmap(map, size);
    return rc;
}
