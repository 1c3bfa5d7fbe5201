/* frae vocode: features (with pitch) back to audio. */
#define _DEFAULT_SOURCE /* madvise */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "codec_cli.h"

static void vocode_help(void)
{
    cli_printf(
        "usage: frae vocode FEATURES.npy -o OUT.wav [--polish N] "
        "[--gl-iters N]\n"
        "                   [--sample-rate HZ] [--no-resample] [--mels N] "
        "[--hop N]\n"
        "                   [--win N] [--fft N] [--fmin HZ] [--fmax HZ]\n"
        "example: frae vocode speech.npy -o speech-vocoded.wav\n"
        "\n"
        "Turns features with pitch ('frae features --pitch': [T, mels + 2]\n"
        "or [N, T, mels + 2]) back into audio with the harmonic-plus-noise\n"
        "vocoder, the one 'frae decode --wav' uses, and its polish: the\n"
        "vocoder's own quality, with no coding.  Features of mels values\n"
        "only are inverted by Griffin-Lim.  OUT-<n>.wav per sequence if\n"
        "several.\n"
        "\n" CLI_FEATURE_HELP
        "  --polish N           rounds of making the vocoder's audio analyse\n"
        "                       back to the features, as decoding does (2;\n"
        "                       0: the vocoder's alone)\n"
        "  --gl-iters N         Griffin-Lim iterations, for features\n"
        "                       without pitch (32)\n"
        "\n"
        "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
        "options or features.\n");
}

/* Every value of the features checked before any audio is made:
 * features no audio gives (NaN, or louder than the loudest audio frae
 * reads) would give wrong audio.  0, or the exit code, said. */
static int check_features(const char *in, npy_reader *r, const frae_features *f,
                          float *x, long chunk)
{
    const frae_npy *a = r->a;
    const double loudest = frae_features_max(f);
    for (long s = 0; s < a->n; s++)
        for (long t0 = 0; t0 < a->t; t0 += chunk) {
            const long nt = a->t - t0 < chunk ? a->t - t0 : chunk;
            npy_reader_read(r, s, t0, nt, x);
            for (long t = 0; t < nt; t++) {
                const float *frame = x + (size_t)t * a->d;
                const int c =
                    unheard_value(frame, (int)a->d, f->n_mels, loudest);
                if (c < 0)
                    continue;
                char at[96];
                if (a->ndim == 3)
                    snprintf(at, sizeof at, "[%ld, %ld, %d]", s, t0 + t, c);
                else
                    snprintf(at, sizeof at, "[%ld, %d]", t0 + t, c);
                return !isfinite(frame[c])
                           ? cli_fail(EXIT_USAGE, "%s: %s at %s", in,
                                      isnan(frame[c]) ? "NaN" : "Inf", at)
                           : cli_fail(EXIT_USAGE,
                                      "%s: log-mel value %g at %s, above the "
                                      "%.2f of the loudest audio frae reads "
                                      "(samples within +-%g): no audio has "
                                      "these features",
                                      in, (double)frame[c], at, loudest,
                                      FRAE_AUDIO_MAX_SAMPLE);
            }
        }
    return 0;
}

int cmd_vocode(int argc, char **argv)
{
    cli_cmd = "frae vocode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    frae_codec_settings_default(&o.cs);
    o.cs.gl_iters = -1; /* not given: none without --vocoder gl */
    int rc = cli_parse(argc, argv, codec_list(), codec_opt, codec_pos,
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
    if (o.cs.vocoder == 2 && o.cs.gl_iters < 0)
        o.cs.gl_iters = 32;
    if (o.cs.vocoder == 1)
        o.cs.gl_iters = -1;
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
    npy_reader r = {&a, 0};
    if ((rc = check_features(in, &r, f, x, chunk)))
        goto done;
    if ((rc = wav_out_init(&wav, f, o.io.output, a.n > 1,
                           pitch && o.cs.gl_iters < 0, o.cs.gl_iters,
                           o.cs.polish)))
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
