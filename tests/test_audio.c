/* The audio front end: features against a direct DFT, tones in the right
 * band, Griffin-Lim round trips, resampling, and bad audio. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "frae_audio.h"
#include "test_util.h"
#include "tests.h"

#define PI 3.14159265358979323846

static double hz2mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }
static double mel2hz(double m) { return 700.0 * (pow(10.0, m / 2595.0) - 1.0); }

/* One frame's features the slow way: a direct DFT in double precision and
 * the filters written out again from the definition in frae.h. */
static void reference_frame(const frae_features *f, const float *x,
                            double *out)
{
    int nb = f->n_fft / 2 + 1;
    double *power = calloc((size_t)nb, sizeof(double));
    for (int k = 0; k < nb; k++) {
        double re = 0, im = 0;
        for (int i = 0; i < f->win; i++) {
            double w = 0.5 - 0.5 * cos(2 * PI * i / f->win);
            re += x[i] * w * cos(2 * PI * k * i / f->n_fft);
            im -= x[i] * w * sin(2 * PI * k * i / f->n_fft);
        }
        power[k] = re * re + im * im;
    }
    double lo = hz2mel(f->fmin), hi = hz2mel(f->fmax);
    for (int b = 0; b < f->n_mels; b++) {
        double fl = mel2hz(lo + (hi - lo) * b / (f->n_mels + 1));
        double fc = mel2hz(lo + (hi - lo) * (b + 1) / (f->n_mels + 1));
        double fh = mel2hz(lo + (hi - lo) * (b + 2) / (f->n_mels + 1));
        double e = 0;
        for (int k = 0; k < nb; k++) {
            double hz = (double)k * f->sample_rate / f->n_fft;
            double w = fmin((hz - fl) / (fc - fl), (fh - hz) / (fh - fc));
            if (w > 0)
                e += w * power[k];
        }
        out[b] = (log(e > f->floor ? e : f->floor) + f->offset) / f->scale;
    }
    free(power);
}

static float *tone(long n, double hz, int rate, double amp)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++)
        x[i] = (float)(amp * sin(2 * PI * hz * i / rate));
    return x;
}

int test_features_reference(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    frae_mel *m = frae_mel_create(&f, NULL, 0);
    const long n = 16000;
    float *x = malloc(sizeof(float) * n);
    uint64_t s = 5;
    for (long i = 0; i < n; i++) { /* a chirp plus a little noise */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(0.5 * sin(2 * PI * (200 + 0.2 * i) * i / 16000.0) +
                       0.01 * ((double)(s >> 40) / 16777216.0 - 0.5));
    }
    long frames = frae_mel_frames(m, n);
    CHECK(frames == 1 + (n - 400) / 160, "%ld frames", frames);
    float *feats = malloc(sizeof(float) * (size_t)frames * 80);
    frae_mel_compute(m, x, n, feats);
    double ref[80], worst = 0;
    const long check_frames[] = {0, 17, frames / 2, frames - 1};
    for (int i = 0; i < 4; i++) {
        long t = check_frames[i];
        reference_frame(&f, x + t * 160, ref);
        for (int b = 0; b < 80; b++)
            worst = fmax(worst, fabs(feats[t * 80 + b] - ref[b]));
    }
    CHECK(worst < 2e-4, "features differ from the direct DFT by %.3g", worst);
    printf("    4 frames against a direct DFT: max difference %.2e\n", worst);
    /* a 1 kHz tone peaks in the band centred nearest 1 kHz */
    float *t1 = tone(8000, 1000.0, 16000, 0.5);
    frae_mel_compute(m, t1, 8000, feats);
    int peak = 0;
    for (int b = 1; b < 80; b++)
        if (feats[10 * 80 + b] > feats[10 * 80 + peak])
            peak = b;
    double c = frae_mel_center_hz(&f, peak);
    CHECK(fabs(c - 1000) < 60, "1 kHz peaks in the band at %.0f Hz", c);
    free(x), free(feats), free(t1);
    frae_mel_destroy(m);
    return failures;
}

int test_griffin_lim(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    frae_mel *m = frae_mel_create(&f, NULL, 0);
    const long n = 12000;
    float *x = malloc(sizeof(float) * n);
    for (long i = 0; i < n; i++) { /* a voiced sound: harmonics, vibrato */
        double f0 = 140 + 10 * sin(2 * PI * 3 * i / 16000.0), v = 0;
        for (int h = 1; h <= 25; h++)
            v += sin(2 * PI * f0 * h * i / 16000.0) / h;
        x[i] = (float)(0.2 * v);
    }
    long frames = frae_mel_frames(m, n);
    float *a = malloc(sizeof(float) * (size_t)frames * 80);
    float *b = malloc(sizeof(float) * (size_t)frames * 80);
    float *y = malloc(sizeof(float) * (size_t)n);
    frae_mel_compute(m, x, n, a);
    long ny = frae_mel_invert(m, a, frames, 32, y);
    CHECK(ny == (frames - 1) * 160 + 400, "inverted length %ld", ny);
    frae_mel_compute(m, y, ny, b);
    double lsd = 0;
    for (long t = 0; t < frames; t++) {
        double ss = 0;
        for (int k = 0; k < 80; k++) {
            double d = 5.0 * (a[t * 80 + k] - b[t * 80 + k]) * 4.342944819;
            ss += d * d;
        }
        lsd += sqrt(ss / 80);
    }
    lsd /= frames;
    /* a strongly harmonic sound is Griffin-Lim's hard case: its smooth
     * mel magnitudes cannot hold the harmonics; ~3.6 dB here */
    CHECK(lsd < 4.5, "Griffin-Lim round trip LSD %.2f dB", lsd);
    printf("    features -> Griffin-Lim (32 iterations) -> features: LSD "
           "%.2f dB\n",
           lsd);
    free(x), free(a), free(b), free(y);
    frae_mel_destroy(m);
    return failures;
}

int test_audio_files(void)
{
    int failures = 0;
    char dir[] = "/tmp/frae-audio-XXXXXX", p[256], err[512];
    if (!mkdtemp(dir))
        return 1;
    frae_features f;
    frae_features_default(&f);
    /* 22.05 kHz tone: resampled to 16 kHz, or refused */
    float *t = tone(22050, 1000.0, 22050, 0.5);
    snprintf(p, sizeof p, "%s/tone22k.wav", dir);
    CHECK(!frae_audio_write_wav(p, t, 22050, 22050, err, sizeof err), "%s",
          err);
    float *feats;
    long frames;
    CHECK(!frae_audio_features(p, &f, 1, &feats, &frames, err, sizeof err),
          "%s", err);
    if (!failures) {
        CHECK(labs(frames - 98) <= 1, "1 s at 16 kHz gives %ld frames", frames);
        int peak = 0;
        for (int b = 1; b < 80; b++)
            if (feats[40 * 80 + b] > feats[40 * 80 + peak])
                peak = b;
        CHECK(fabs(frae_mel_center_hz(&f, peak) - 1000) < 60,
              "resampled tone peaks at %.0f Hz",
              frae_mel_center_hz(&f, peak));
        free(feats);
    }
    CHECK(frae_audio_features(p, &f, 0, &feats, &frames, err, sizeof err) &&
              strstr(err, "sample rate 22050 Hz") &&
              strstr(err, "resampling is off"),
          "no-resample: '%s'", err);
    free(t);
    /* silence, too short, not audio */
    float zeros[3000] = {0};
    snprintf(p, sizeof p, "%s/silence.wav", dir);
    frae_audio_write_wav(p, zeros, 3000, 16000, err, sizeof err);
    CHECK(frae_audio_features(p, &f, 1, &feats, &frames, err, sizeof err) &&
              strstr(err, "only silence"),
          "silence: '%s'", err);
    float *s = tone(300, 440.0, 16000, 0.5);
    snprintf(p, sizeof p, "%s/short.wav", dir);
    frae_audio_write_wav(p, s, 300, 16000, err, sizeof err);
    CHECK(frae_audio_features(p, &f, 1, &feats, &frames, err, sizeof err) &&
              strstr(err, "shorter than one"),
          "short: '%s'", err);
    free(s);
    snprintf(p, sizeof p, "%s/text.wav", dir);
    FILE *fp = fopen(p, "w");
    fputs("this is not audio\n", fp);
    fclose(fp);
    CHECK(frae_audio_features(p, &f, 1, &feats, &frames, err, sizeof err) &&
              strstr(err, "not a readable audio file"),
          "text: '%s'", err);
    snprintf(p, sizeof p, "rm -rf %s", dir);
    if (system(p)) {
    }
    return failures;
}
