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
} codec_opts;

static const cli_opt codec_list[] = {
    {"--output", 1},      {"--frame-rate", 1}, {"--isa", 1},
    {"--wav", 1},         {"--gl-iters", 1},   {"--sample-rate", 1},
    {"--no-resample", 0}, {"--mels", 1},       {"--hop", 1},
    {"--win", 1},         {"--fft", 1},        {"--fmin", 1},
    {"--fmax", 1},        {NULL, 0}};

static int codec_opt(void *ctx, const char *name, const char *v)
{
    codec_opts *o = ctx;
    if (!strcmp(name, "--frame-rate"))
        return cli_double(name, v, 1e-3, 1e9, &o->frame_rate);
    if (!strcmp(name, "--wav"))
        return o->wav = v, 0;
    if (!strcmp(name, "--gl-iters"))
        return cli_int(name, v, 0, 10000, &o->gl_iters);
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

/* Decoded log-mel frames (the .npy just written) back to audio. */
static int write_wavs(const char *model, const char *frames_path,
                      const char *wav, int iters)
{
    frae_features f;
    int have = cli_model_features(model, &f);
    if (have <= 0)
        return have < 0 ? EXIT_USAGE
                        : cli_fail(EXIT_USAGE,
                                   "--wav: %s was not trained on audio "
                                   "features, so its frames are not log-mel",
                                   model);
    char err[512];
    frae_npy a;
    if (frae_npy_open(frames_path, &a, err, sizeof err))
        return cli_fail(EXIT_FAILED, "%s", err);
    frae_mel *mel = frae_mel_create(&f, err, sizeof err);
    float *feats = malloc(sizeof(float) * (size_t)a.t * a.d);
    float *audio = malloc(sizeof(float) * (size_t)((a.t - 1) * f.hop + f.win));
    int rc = EXIT_OK;
    if (!mel || !feats || !audio) {
        rc = cli_fail(EXIT_FAILED, "--wav: %s", mel ? "out of memory" : err);
    }
    for (long s = 0; s < a.n && rc == EXIT_OK; s++) {
        if (frae_npy_read(&a, s, 0, a.t, feats)) /* mapped: cannot fail */
            break;
        long n = frae_mel_invert(mel, feats, a.t, iters, audio);
        char path[4096];
        if (a.n == 1) {
            snprintf(path, sizeof path, "%s", wav);
        } else {
            const char *dot = strrchr(wav, '.');
            int stem = dot ? (int)(dot - wav) : (int)strlen(wav);
            snprintf(path, sizeof path, "%.*s-%ld%s", stem, wav, s,
                     dot ? dot : ".wav");
        }
        if (n < 0 || frae_audio_write_wav(path, audio, n, f.sample_rate, err,
                                          sizeof err))
            rc = cli_fail(EXIT_FAILED, "%s", n < 0 ? "out of memory" : err);
        else
            printf("%s: %.2f s of audio (Griffin-Lim, %d iterations)\n", path,
                   (double)n / f.sample_rate, iters);
    }
    free(feats), free(audio);
    frae_mel_destroy(mel);
    frae_npy_close(&a);
    return rc;
}

static void encode_help(void)
{
    printf("usage: frae encode MODEL IN -o OUT.fbs [--frame-rate R]\n"
           "\n"
           "Compresses each sequence of IN ([T, D] or [N, T, D] .npy, or an\n"
           "audio file, whose features are computed as the model was\n"
           "trained; --no-resample refuses other rates) frame by\n"
           "frame into a .fbs bitstream: the model's quantized latent codes,\n"
           "L x bits per frame (see README, 'The .fbs bitstream').  Reports\n"
           "the bitrate, in bits per frame and in kbit/s at --frame-rate\n"
           "frames per second (100), and the distortion of the decoded\n"
           "frames: MSE and SNR in dB.\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or input.\n");
}

int cmd_encode(int argc, char **argv)
{
    cli_cmd = "frae encode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    o.frame_rate = 100;
    int rc = cli_parse(argc, argv, codec_list, codec_opt, codec_pos,
                       encode_help, &o);
    if (rc)
        return rc;
    if (!o.io.model || !o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs MODEL, IN.npy and -o OUT.fbs (see "
                                    "'frae encode --help')");
    char err[512];
    frae_npy in;
    if ((rc = cli_open_frames(&o.io, &in)))
        return rc;
    frae_model *m = load_inference(o.io.model, o.io.isa);
    if (!m) {
        frae_npy_close(&in);
        return EXIT_USAGE;
    }
    const int D = frae_get_config(m)->frame_dim;
    if (in.d != D || in.n > 0xffffffffL || in.t > 0xffffffffL) {
        rc = in.d != D
                 ? cli_fail(EXIT_USAGE,
                            "%s: frame dimension %ld does not match the "
                            "model's %d",
                            o.io.input, in.d, D)
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
    float *x = malloc(sizeof(float) * (size_t)chunk * D);
    float *recon = malloc(sizeof(float) * D);
    unsigned char *code = malloc(cb), *bytes_out = malloc(cb + 8);
    frae_encoder *e = frae_encoder_create(m);
    frae_stream h;
    frae_stream_header(m, (uint32_t)in.n, (uint32_t)in.t, in.ndim == 2, &h);
    size_t bytes = frae_stream_bytes(&h);
    frae_atomic_file af;
    af.f = NULL;
    if (!code || !x || !recon || !e || !bytes_out) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (frae_atomic_begin(&af, o.io.output, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    frae_stream_writer w;
    unsigned char head[FRAE_STREAM_HEADER];
    fwrite(head, 1, frae_stream_writer_begin(&w, &h, head), af.f);
    double sse = 0, energy = 0;
    for (long s = 0; s < in.n; s++) {
        frae_encoder_reset(e);
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
            const float *xt = x + (size_t)(t % chunk) * D;
            frae_encode_frame(e, xt, code, recon);
            fwrite(bytes_out, 1, frae_stream_writer_add(&w, code, bytes_out),
                   af.f);
            for (int d = 0; d < D; d++) {
                double diff = (double)recon[d] - xt[d];
                sse += diff * diff;
                energy += (double)xt[d] * xt[d];
            }
        }
    }
    fwrite(bytes_out, 1, frae_stream_writer_end(&w, bytes_out), af.f);
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    double bpf = (double)frae_get_config(m)->latent_dim * frae_code_bits(m);
    double mse = sse / ((double)n_frames * D);
    printf("%ld sequence%s x %ld frames -> %s (%zu bytes, %d of them header "
           "and CRC)\n",
           in.n, in.n == 1 ? "" : "s", in.t, o.io.output, bytes,
           FRAE_STREAM_HEADER + 4);
    printf("bitrate: %.0f bits/frame (%d x %d bits) = %.3f kbit/s at %g "
           "frames/s\n",
           bpf, frae_get_config(m)->latent_dim, frae_code_bits(m),
           bpf * o.frame_rate / 1000.0, o.frame_rate);
    printf("distortion: mse %.6g, snr %.2f dB\n", mse,
           sse > 0 ? 10.0 * log10(energy / sse) : INFINITY);
    rc = EXIT_OK;
done:
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
           "  --wav OUT.wav        also turn log-mel frames back into audio\n"
           "                       (mel pseudo-inverse, then Griffin-Lim;\n"
           "                       OUT-<n>.wav per sequence if several)\n"
           "  --gl-iters N         Griffin-Lim iterations (32)\n"
           "\n"
           "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
           "options, model or stream (truncated, corrupted, foreign, or\n"
           "made with another model).\n");
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
    const int D = (int)s.frame_dim;
    long shape[3] = {(long)s.sequences, (long)s.frames, D};
    int two_d = s.flags & 1 && s.sequences == 1;
    if (two_d)
        shape[0] = s.frames, shape[1] = D;
    y = malloc(sizeof(float) * D);
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
    for (uint32_t q = 0; q < s.sequences; q++) {
        frae_decoder_reset(d);
        for (uint32_t t = 0; t < s.frames; t++) {
            frae_stream_frame_code(&s, (uint64_t)q * s.frames + t, code);
            if (frae_decode_frame(d, code, y)) {
                frae_atomic_abort(&af);
                rc = cli_fail(EXIT_USAGE,
                              "%s: sequence %u, frame %u: a code no encoder "
                              "makes",
                              o.io.input, q, t);
                goto done;
            }
            fwrite(y, sizeof(float), (size_t)D, af.f);
        }
    }
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    if (o.wav && (rc = write_wavs(o.io.model, o.io.output, o.wav, o.gl_iters)))
        goto done;
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
