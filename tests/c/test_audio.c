/* The audio front end: features against a direct DFT, tones in the right
 * band, Griffin-Lim round trips, resampling, and bad audio. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <sndfile.h>

#include "audio/audio_internal.h" /* frae_mel_weight */
#include "frae_audio.h"
#include "test_util.h"
#include "tests.h"

#define PI 3.14159265358979323846

static double hz2mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }
static double mel2hz(double m) { return 700.0 * (pow(10.0, m / 2595.0) - 1.0); }

/* One frame's features the slow way: a direct DFT in double precision and
 * the filters written out again from the definition in frae.h. */
static void reference_frame(const frae_features *f, const float *x, double *out)
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
              "resampled tone peaks at %.0f Hz", frae_mel_center_hz(&f, peak));
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

/* ---- pitch (YIN) and the vocoder ------------------------------------------ */

/* f0 and voicing of every frame of x, as the features stream computes
 * them (a reading under 80 Hz read again from x high-passed): spans
 * centred on the feature frames' centres, silence beyond the ends.  Returns the frame count; f0 and voiced hold
 * one value each. */
static long track(const frae_features *f, const float *x, long n, float *f0,
                  float *voiced)
{
    const int span = frae_f0_span(f);
    void *mem = malloc(frae_f0_size(f));
    frae_f0 *p = frae_f0_init(mem, f);
    float *buf = malloc(sizeof(float) * (size_t)span);
    float *hbuf = malloc(sizeof(float) * (size_t)span);
    float *hp = malloc(sizeof(float) * (size_t)n);
    frae_f0_filter(p, x, hp, n);
    long frames = n < f->win ? 0 : 1 + (n - f->win) / f->hop;
    for (long t = 0; t < frames; t++) {
        long start = t * f->hop + f->win / 2 - span / 2;
        for (int i = 0; i < span; i++) {
            const int in = start + i >= 0 && start + i < n;
            buf[i] = in ? x[start + i] : 0.0f;
            hbuf[i] = in ? hp[start + i] : 0.0f;
        }
        frae_f0_frame_dehum(p, buf, hbuf, f0 + t, voiced + t);
    }
    free(buf), free(hbuf), free(hp), free(mem);
    return frames;
}

/* Harmonics 1..n_harm of f0, amplitude 1/h, times amp. */
static float *harmonic(long n, double f0, int n_harm, double amp)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) {
        double v = 0;
        for (int h = 1; h <= n_harm && h * f0 < 8000; h++)
            v += sin(2 * PI * f0 * h * i / 16000.0) / h;
        x[i] = (float)(amp * v);
    }
    return x;
}

int test_pitch_tracker(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    CHECK(frae_f0_span(&f) == 640, "span %d samples", frae_f0_span(&f));
    const long n = 8000; /* half a second: 48 frames */
    float f0[64], v[64];
    /* tones and harmonic sounds over the whole range; the frames away
     * from the ends (whose spans reach into silence) must be exact to 1%.
     * A pure tone under the high-pass (80 Hz) is hum to the tracker: it
     * comes through 20-30 dB down, and its onset rings in the filter for
     * about 100 ms, so its frames are checked from there */
    const double tones[] = {52, 80, 110, 220, 440, 590};
    double worst = 0;
    for (int k = 0; k < 12; k++) {
        double hz = tones[k % 6];
        float *x = k < 6 ? tone(n, hz, 16000, 0.5) : harmonic(n, hz, 30, 0.3);
        long frames = track(&f, x, n, f0, v);
        int bad = 0;
        for (long t = k < 6 && hz < 100 ? 10 : 3; t < frames - 3; t++) {
            double err = fabs(f0[t] / hz - 1);
            worst = fmax(worst, err);
            bad += !(v[t] == 1.0f) || !(err < 0.01);
        }
        CHECK(bad == 0, "%s at %.0f Hz: %d frames unvoiced or off by > 1%%",
              k < 6 ? "tone" : "harmonics", hz, bad);
        free(x);
    }
    printf("    tones and harmonic sounds 52-590 Hz: worst f0 error %.3f%%\n",
           100 * worst);
    /* a clipped voice: a 200 Hz harmonic sound three times too loud */
    float *x = harmonic(n, 200, 30, 0.9);
    for (long i = 0; i < n; i++)
        x[i] = x[i] > 1 ? 1 : x[i] < -1 ? -1 : x[i];
    long frames = track(&f, x, n, f0, v);
    int bad = 0;
    for (long t = 3; t < frames - 3; t++)
        bad += !(v[t] == 1.0f) || !(fabs(f0[t] / 200 - 1) < 0.01);
    CHECK(bad == 0, "clipped 200 Hz voice: %d frames wrong", bad);
    /* a voice over mains hum as loud as itself (50 or 60 Hz), or over
     * rumble: the voice's f0, not the hum's (unfiltered, YIN reads 50-60
     * Hz in most frames) */
    const double hums[] = {50, 60, 30};
    for (int k = 0; k < 3; k++) {
        float *y = harmonic(n, 220, 30, 0.3);
        for (long i = 0; i < n; i++)
            y[i] += (float)(0.4 * sin(2 * PI * hums[k] * i / 16000.0));
        frames = track(&f, y, n, f0, v);
        bad = 0;
        for (long t = 3; t < frames - 3; t++)
            bad += !(v[t] == 1.0f) || !(fabs(f0[t] / 220 - 1) < 0.01);
        CHECK(bad == 0, "220 Hz voice over a %.0f Hz hum: %d frames wrong",
              hums[k], bad);
        free(y);
    }
    /* white noise is unvoiced; silence is unvoiced with f0 0; a NaN in
     * the span counts as silence: no NaN comes out */
    uint64_t s = 11;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(0.5 * ((double)(s >> 40) / 16777216.0 - 0.5));
    }
    frames = track(&f, x, n, f0, v);
    int voiced = 0;
    for (long t = 0; t < frames; t++)
        voiced += v[t] != 0;
    CHECK(voiced <= frames / 10, "white noise: %d of %ld frames voiced", voiced,
          frames);
    memset(x, 0, sizeof(float) * n);
    x[4000] = NAN;
    x[4100] = INFINITY;
    frames = track(&f, x, n, f0, v);
    bad = 0;
    for (long t = 0; t < frames; t++)
        bad += f0[t] != 0 || v[t] != 0;
    CHECK(bad == 0, "silence (with a NaN and an Inf): %d frames voiced", bad);
    /* below and above the range: clamped, never out of [50, 600] */
    for (int k = 0; k < 2; k++) {
        float *y = tone(n, k ? 1500 : 30, 16000, 0.5);
        frames = track(&f, y, n, f0, v);
        bad = 0;
        for (long t = 0; t < frames; t++)
            bad += v[t] != 0 && !(f0[t] >= 50 && f0[t] <= 600);
        CHECK(bad == 0, "%d Hz tone: %d frames outside 50-600 Hz",
              k ? 1500 : 30, bad);
        free(y);
    }
    free(x);
    return failures;
}

/* frae_f0_refine against its numpy reference (tools/pitch_refine_ref.py,
 * tests/fixtures/pitch_refine.bin): synthetic voices' spans and readings
 * up to 50 cents off.  frae's spectrum is float32, the reference's float64,
 * so the same candidate wherever the reference's best leads its runner-up
 * by more than 1e-4 of its score, within one 5-cent step elsewhere; and
 * within 6 cents of the voice's true f0. */
int test_pitch_refine(void)
{
    int failures = 0;
    fixtures fx;
    if (fixtures_load("tests/fixtures/pitch_refine.bin", &fx))
        return 1;
    const fix_tensor *spans = fixtures_get(&fx, "spans");
    const float *f0_in = fixtures_get(&fx, "f0_in")->data;
    const float *f0_out = fixtures_get(&fx, "f0_out")->data;
    const float *margin = fixtures_get(&fx, "margin")->data;
    const float *truth = fixtures_get(&fx, "truth")->data;
    frae_features f;
    frae_features_default(&f);
    const int span = frae_f0_span(&f);
    void *mem = malloc(frae_f0_size(&f));
    frae_f0 *p = frae_f0_init(mem, &f);
    CHECK(p && spans->ndim == 2 && (int)spans->dims[1] == span,
          "fixture spans of %u samples, tracker's %d", spans->dims[1], span);
    int same = 0, near_ties = 0;
    double worst = 0, worst_truth = 0;
    for (uint32_t i = 0; p && i < spans->dims[0]; i++) {
        const float got =
            frae_f0_refine(p, spans->data + (size_t)i * span, f0_in[i]);
        const double cents = got > 0 && f0_out[i] > 0
                                 ? fabs(1200 * log2((double)got / f0_out[i]))
                                 : 0;
        CHECK(isfinite(got) && (f0_out[i] > 0 || got == f0_out[i]),
              "span %u: %g Hz, reference %g", i, got, f0_out[i]);
        if (margin[i] > 1e-4f)
            CHECK(got == f0_out[i],
                  "span %u (margin %.2g): %.4f Hz, reference %.4f", i,
                  margin[i], got, f0_out[i]);
        else
            near_ties++;
        CHECK(cents < 5.01, "span %u: %.1f cents from the reference", i, cents);
        same += got == f0_out[i];
        worst = cents > worst ? cents : worst;
        if (truth[i] > 0 && f0_in[i] > 0) {
            const double off = fabs(1200 * log2((double)got / truth[i]));
            CHECK(off < 6, "span %u: %.1f cents from the voice's %.1f Hz", i,
                  off, truth[i]);
            worst_truth = off > worst_truth ? off : worst_truth;
        }
    }
    /* FRAE_PITCH_YIN: YIN's reading, which the refinement then moves as
     * frae_f0_refine does; a pitch field out of range is refused */
    frae_features fy = f;
    fy.pitch = FRAE_PITCH_YIN;
    void *mem_yin = malloc(frae_f0_size(&fy));
    frae_f0 *py = frae_f0_init(mem_yin, &fy);
    int moved = 0;
    for (uint32_t i = 0; p && py && i < spans->dims[0]; i++) {
        float hz, v, hz_yin, v_yin;
        frae_f0_frame(p, spans->data + (size_t)i * span, &hz, &v);
        frae_f0_frame(py, spans->data + (size_t)i * span, &hz_yin, &v_yin);
        const float want =
            frae_f0_refine(p, spans->data + (size_t)i * span, hz_yin);
        CHECK(v == v_yin && hz == want,
              "span %u: frae_f0_frame %g Hz, YIN's %g refined %g", i, hz,
              hz_yin, want);
        moved += hz != hz_yin;
    }
    CHECK(py && moved > 0, "no span's f0 moved by the refinement");
    for (int bad = -1; bad <= FRAE_PITCH_YIN_HP + 1;
         bad += FRAE_PITCH_YIN_HP + 2) {
        fy.pitch = bad;
        CHECK(frae_features_check(&fy, NULL, 0) != 0, "pitch %d accepted", bad);
    }
    /* the steps by name, as 'frae features --f0' and Python take them */
    CHECK(frae_features_pitch_steps("yin") == FRAE_PITCH_YIN &&
              frae_features_pitch_steps("yin-hp") == FRAE_PITCH_YIN_HP &&
              frae_features_pitch_steps("refined") == 1,
          "the steps' names give yin %d, yin-hp %d, refined %d",
          frae_features_pitch_steps("yin"), frae_features_pitch_steps("yin-hp"),
          frae_features_pitch_steps("refined"));
    const char *bad_names[] = {NULL, "", "YIN", "yin-h", "refined ", "aubio"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        CHECK(frae_features_pitch_steps(bad_names[i]) == -1,
              "the name '%s' taken for a step",
              bad_names[i] ? bad_names[i] : "(null)");
    free(mem_yin);
    printf("    %u spans: %d the reference's f0 (%d near ties), at most %.1f "
           "cents apart; at most %.1f cents from the voice's\n",
           spans->dims[0], same, near_ties, worst, worst_truth);
    free(mem), free(fx.buf), free(fx.floats);
    return failures;
}

/* Features with pitch of x: n_mels + 2 values per frame. */
static float *features_with_pitch(const frae_features *f, const float *x,
                                  long n, long *frames)
{
    frae_mel *m = frae_mel_create(f, NULL, 0);
    *frames = frae_mel_frames(m, n);
    const int w = f->n_mels + 2;
    float *mel = malloc(sizeof(float) * (size_t)*frames * f->n_mels);
    float *out = malloc(sizeof(float) * (size_t)*frames * w);
    float *f0 = malloc(sizeof(float) * (size_t)*frames);
    float *v = malloc(sizeof(float) * (size_t)*frames);
    frae_mel_compute(m, x, n, mel);
    track(f, x, n, f0, v);
    for (long t = 0; t < *frames; t++) {
        memcpy(out + t * w, mel + t * f->n_mels, sizeof(float) * f->n_mels);
        out[t * w + f->n_mels] = f0[t];
        out[t * w + f->n_mels + 1] = v[t];
    }
    free(mel), free(f0), free(v);
    frae_mel_destroy(m);
    return out;
}

/* Audio of frames through the vocoder, timed as frae decode does. */
static float *vocode_all(const frae_features *f, const float *feats,
                         long frames, long *n)
{
    void *mem = malloc(frae_vocoder_size(f));
    frae_vocoder *v = frae_vocoder_init(mem, f, 1, NULL, 0);
    *n = (frames - 1) * f->hop + f->win;
    float *y = calloc((size_t)*n + f->hop, sizeof(float));
    long at = f->win / 2 - f->hop;
    for (long t = 0; t < frames; t++, at += f->hop)
        frae_vocoder_frame(v, feats + t * (f->n_mels + 2), y + at);
    frae_vocoder_flush(v, y + at);
    free(mem);
    return y;
}

/* Mean over frames [t0, t1) of the RMS difference in dB of bands
 * [b0, b1), and the mean difference (b - a). */
static double band_lsd(const float *a, const float *b, int width, long t0,
                       long t1, int b0, int b1, double *mean)
{
    double lsd = 0, sum = 0;
    for (long t = t0; t < t1; t++) {
        double ss = 0;
        for (int k = b0; k < b1; k++) {
            double d =
                5.0 * (b[t * width + k] - a[t * width + k]) * 4.342944819;
            ss += d * d;
            sum += d;
        }
        lsd += sqrt(ss / (b1 - b0));
    }
    *mean = sum / ((double)(t1 - t0) * (b1 - b0));
    return lsd / (t1 - t0);
}

/* x through a 255-tap Blackman-windowed sinc at fc_hz: lowpass, or
 * highpass by spectral inversion (70 dB down in the stop band, about
 * 350 Hz of transition). */
static float *blackman_fir(const float *x, long n, double fc_hz, int sr,
                           int highpass)
{
    enum { TAPS = 255 };
    double h[TAPS], hsum = 0;
    for (int k = 0; k < TAPS; k++) {
        const double m = k - (TAPS - 1) / 2.0, fc = fc_hz / sr;
        const double win = 0.42 - 0.5 * cos(2 * PI * k / (TAPS - 1)) +
                           0.08 * cos(4 * PI * k / (TAPS - 1));
        h[k] = win * (m == 0 ? 2 * fc : sin(2 * PI * fc * m) / (PI * m));
        hsum += h[k];
    }
    for (int k = 0; k < TAPS; k++)
        h[k] = (highpass ? (k == TAPS / 2) : 0) +
               (highpass ? -1 : 1) * h[k] / hsum;
    float *y = calloc((size_t)n, sizeof(float));
    for (long i = 0; i < n; i++) {
        double acc = 0;
        for (int k = 0; k < TAPS; k++) {
            const long j = i + k - TAPS / 2;
            if (j >= 0 && j < n)
                acc += h[k] * x[j];
        }
        y[i] = (float)acc;
    }
    return y;
}

/* Noise x's features, made unvoiced, through the vocoder and back: the
 * mean difference in dB (vocoded - input) over bands [b0, b1) into *lo
 * and over [c0, c1) into *hi. */
static void noise_round_trip(const frae_features *f, const float *x, long n,
                             int b0, int b1, double *lo, int c0, int c1,
                             double *hi)
{
    long frames, frames2, ny;
    float *a = features_with_pitch(f, x, n, &frames);
    for (long t = 0; t < frames; t++)
        a[t * 82 + 80] = a[t * 82 + 81] = 0;
    float *y = vocode_all(f, a, frames, &ny);
    float *b = features_with_pitch(f, y, ny, &frames2);
    band_lsd(a, b, 82, 3, frames - 3, b0, b1, lo);
    band_lsd(a, b, 82, 3, frames - 3, c0, c1, hi);
    free(a), free(b), free(y);
}

/* The first band whose centre is at or over hz. */
static int band_at(const frae_features *f, double hz)
{
    const double mlo = hz2mel(f->fmin), mhi = hz2mel(f->fmax);
    int k = 0;
    while (k < f->n_mels &&
           mel2hz(mlo + (mhi - mlo) * (k + 1) / (f->n_mels + 1)) < hz)
        k++;
    return k;
}

int test_vocoder(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    const long n = 16000;
    /* a voice: harmonics with vibrato, through the vocoder and back: the
     * same envelope (the harmonics' amplitudes invert the analysis) and
     * the same f0 */
    float *x = malloc(sizeof(float) * n);
    double ph = 0;
    for (long i = 0; i < n; i++) {
        double f0 = 140 + 15 * sin(2 * PI * 3 * i / 16000.0), v = 0;
        ph += 2 * PI * f0 / 16000.0;
        for (int h = 1; h * f0 < 7800; h++) /* a formant near 700 Hz */
            v += sin(h * ph) / (1 + fabs(h * f0 - 700) / 300);
        x[i] = (float)(0.2 * v);
    }
    long frames, ny;
    float *a = features_with_pitch(&f, x, n, &frames);
    float *y = vocode_all(&f, a, frames, &ny);
    CHECK(ny == (frames - 1) * 160 + 400, "vocoded %ld samples", ny);
    long frames2;
    float *b = features_with_pitch(&f, y, ny, &frames2);
    CHECK(frames2 == frames, "%ld frames back, not %ld", frames2, frames);
    double mean, lsd = band_lsd(a, b, 82, 3, frames - 3, 0, 80, &mean);
    /* measured 1.1 dB, mean within 0.1 dB */
    CHECK(lsd < 1.6 && fabs(mean) < 0.5,
          "voice round trip: LSD %.2f dB, "
          "mean %.2f dB",
          lsd, mean);
    /* the tracker's f0 is an average over its 40 ms span, across which
     * this vibrato sweeps 8%, weighted by the harmonics' levels there: the
     * vocoded voice's comes back within 2.01% of the input's (worst frame;
     * 2.00% with the fit before, a log-domain step), 0.79% on average */
    int bad = 0;
    double f0_err = 0;
    for (long t = 3; t < frames - 3; t++) {
        const double e = fabs(b[t * 82 + 80] / a[t * 82 + 80] - 1);
        bad += !(b[t * 82 + 81] == 1.0f) || !(e < 0.025);
        f0_err += e / (frames - 6);
    }
    CHECK(bad == 0 && f0_err < 0.01,
          "%d frames' f0 not back within 2.5%%, %.2f%% on average", bad,
          100 * f0_err);
    printf("    voice -> features + f0 -> vocoder -> features: LSD %.2f dB "
           "(mean %+.2f dB), f0 kept\n",
           lsd, mean);
    free(b), free(y);
    /* the same voice highpassed at 300 Hz, as a telephone band is: its
     * first harmonic (125-155 Hz) is 20-40 dB down, and the harmonics'
     * fit brings it down with its bands (measured +3.1 dB at 60-200 Hz;
     * +7.4 with the fit before, half a log-domain step) */
    {
        float *hp = blackman_fir(x, n, 300, 16000, 1);
        float *ha = features_with_pitch(&f, hp, n, &frames);
        for (long t = 0; t < frames; t++) /* the voice's own pitch */
            ha[t * 82 + 80] = a[t * 82 + 80], ha[t * 82 + 81] = a[t * 82 + 81];
        float *hy = vocode_all(&f, ha, frames, &ny);
        float *hb = features_with_pitch(&f, hy, ny, &frames2);
        double low_mean, pass_mean;
        band_lsd(ha, hb, 82, 3, frames - 3, band_at(&f, 60), band_at(&f, 200),
                 &low_mean);
        band_lsd(ha, hb, 82, 3, frames - 3, band_at(&f, 500), band_at(&f, 3400),
                 &pass_mean);
        CHECK(low_mean < 5.0 && fabs(pass_mean) < 1.0,
              "highpassed voice round trip: %+.2f dB at 60-200 Hz, %+.2f dB "
              "at 500-3400 Hz",
              low_mean, pass_mean);
        printf(
            "    voice highpassed at 300 Hz -> vocoder -> features: %+.2f dB "
            "at 60-200 Hz, %+.2f dB at 500-3400 Hz\n",
            low_mean, pass_mean);
        free(hp), free(ha), free(hy), free(hb);
    }
    /* the same envelope smoothed across bands in the log domain, as a
     * codec's estimate of it is (regression to the mean): its mean log is
     * the voice's, its power lower (the harmonics' peaks averaged with
     * the valleys beside them).  The vocoder keeps the power it is given
     * (the harmonics' shape from the log-domain fit, their level from the
     * frame's power): the voice comes out as much below its level as the
     * smoothed features' power is below the voice's (a codec keeps the
     * power in training: its level term) */
    double p_voice = 0, p_smooth = 0;
    for (long t = 0; t < frames; t++) {
        float row[80], *fr = a + t * 82;
        for (int k = 0; k < 80; k++) {
            row[k] =
                (fr[k > 0 ? k - 1 : 0] + fr[k] + fr[k < 79 ? k + 1 : 79]) / 3;
            p_voice += exp(5.0 * fr[k] - 5), p_smooth += exp(5.0 * row[k] - 5);
        }
        memcpy(fr, row, sizeof row);
    }
    const double shortfall = 10 * log10(p_smooth / p_voice);
    double ex = 0;
    for (long i = 0; i < n; i++)
        ex += (double)x[i] * x[i];
    y = vocode_all(&f, a, frames, &ny);
    double ey = 0;
    for (long i = 0; i < ny; i++)
        ey += (double)y[i] * y[i];
    const double level = 10 * log10(ey / ex);
    /* measured: power -0.80 dB, level -0.96 (the vocoder before, which
     * fitted the level in the log domain: -0.07) */
    CHECK(fabs(level - shortfall) < 0.3,
          "smoothed envelope: power %+.2f dB, level %+.2f dB", shortfall,
          level);
    printf("    the envelope smoothed across bands -> vocoder: power %+.2f dB, "
           "level %+.2f dB\n",
           shortfall, level);
    free(a), free(y);
    /* noise: unvoiced frames come back as noise of the same spectrum */
    uint64_t s = 3;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(0.3 * ((double)(s >> 40) / 16777216.0 - 0.5));
    }
    a = features_with_pitch(&f, x, n, &frames);
    for (long t = 0; t < frames; t++)
        a[t * 82 + 80] = a[t * 82 + 81] = 0; /* all unvoiced */
    y = vocode_all(&f, a, frames, &ny);
    b = features_with_pitch(&f, y, ny, &frames2);
    lsd = band_lsd(a, b, 82, 3, frames - 3, 4, 80, &mean);
    /* noise against noise: each band's level is itself random, the
     * input's and ours, and its mean must hold.  Ours has each bin's
     * magnitude and a random phase, and scatters less than with a
     * Gaussian's random magnitude (measured 3.32 dB; 3.75 that way) */
    CHECK(lsd < 3.65 && fabs(mean) < 1.0,
          "noise round trip: LSD %.2f dB, mean "
          "%.2f dB",
          lsd, mean);
    printf("    noise -> vocoder (unvoiced) -> features: LSD %.2f dB (mean "
           "%+.2f dB)\n",
           lsd, mean);
    free(a), free(b), free(y);
    /* band-limited noise, as a narrowband recording resampled to 16 kHz
     * is: lowpassed at 3.8 kHz (a 255-tap Blackman sinc, 70 dB down above
     * 4.6 kHz).  The bands it leaves empty stay empty: the noise segments'
     * window keeps its sidelobes out of them (measured +0.6 dB there; the
     * sine window before filled them by 7.1 dB) */
    float *lp = blackman_fir(x, n, 3800, 16000, 0);
    int pass_hi = 0, stop_lo = 80; /* bands under 3.4 kHz; over 4.6 kHz */
    const double mlo = hz2mel(f.fmin), mhi = hz2mel(f.fmax);
    for (int k = 0; k < 80; k++) {
        if (mel2hz(mlo + (mhi - mlo) * (k + 2) / 81) <= 3400)
            pass_hi = k + 1;
        if (stop_lo == 80 && mel2hz(mlo + (mhi - mlo) * k / 81) > 4600)
            stop_lo = k;
    }
    double pass_mean, stop_mean;
    noise_round_trip(&f, lp, n, 0, pass_hi, &pass_mean, stop_lo, 80,
                     &stop_mean);
    CHECK(fabs(pass_mean) < 1.0 && stop_mean < 4.0,
          "lowpassed noise round trip: %+.2f dB in the pass band, %+.2f dB "
          "in the empty bands",
          pass_mean, stop_mean);
    printf("    noise lowpassed at 3.8 kHz -> vocoder -> features: %+.2f dB "
           "under 3.4 kHz, %+.2f dB over 4.6 kHz (empty)\n",
           pass_mean, stop_mean);
    free(lp);
    /* noise highpassed at 300 Hz, as a telephone band's low edge is: the
     * noise is made through a window and seen through the analysis
     * window, and would fill the slope twice smoothed; the bins'
     * variances are unsmeared first (measured +10.3 dB at 60-200 Hz,
     * where the filter's slope is 20-40 dB down; +13.4 without) */
    float *hp = blackman_fir(x, n, 300, 16000, 1);
    double slope_mean;
    noise_round_trip(&f, hp, n, band_at(&f, 60), band_at(&f, 200), &slope_mean,
                     band_at(&f, 500), band_at(&f, 3400), &pass_mean);
    CHECK(fabs(pass_mean) < 1.0 && slope_mean < 11.7,
          "highpassed noise round trip: %+.2f dB over 500 Hz, %+.2f dB at "
          "60-200 Hz",
          pass_mean, slope_mean);
    printf("    noise highpassed at 300 Hz -> vocoder -> features: %+.2f dB "
           "at 500-3400 Hz, %+.2f dB at 60-200 Hz (the slope)\n",
           pass_mean, slope_mean);
    free(hp), free(x);
    return failures;
}

int test_vocoder_bad_input(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    char err[256] = "";
    frae_features odd = f;
    odd.n_fft = 500;
    char small[64];
    CHECK(frae_vocoder_size(&odd) == 0 &&
              !frae_vocoder_init(small, &odd, 1, err, sizeof err) &&
              strstr(err, "power of two"),
          "a 500-point FFT was accepted: '%s'", err);
    void *mem = malloc(frae_vocoder_size(&f));
    frae_vocoder *v = frae_vocoder_init(mem, &f, 7, err, sizeof err);
    CHECK(v != NULL, "init: %s", err);
    float frame[82], out[160];
    const float junk[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0, 3};
    int bad = 0;
    double peak = 0;
    for (int t = 0; t < 700; t++) {
        for (int k = 0; k < 80; k++) /* every kind of junk, and speech-like */
            frame[k] = t < 350 ? junk[(t + k) % 7] : 1.0f + 0.01f * k;
        frame[80] = junk[t % 7] * (t % 3 ? 100.0f : 1.0f); /* f0 anything */
        frame[81] = t % 5 == 0 ? NAN : (float)(t % 2);
        if (t >= 600) { /* very low and very high voices, clamped */
            frame[80] = t % 2 ? 20.0f : 5000.0f;
            frame[81] = 1;
        }
        frae_vocoder_frame(v, frame, out);
        for (int i = 0; i < 160; i++) {
            bad += !isfinite(out[i]);
            peak = fmax(peak, fabs(out[i]));
        }
    }
    frae_vocoder_flush(v, out);
    for (int i = 0; i < 160; i++)
        bad += !isfinite(out[i]);
    CHECK(bad == 0, "%d non-finite samples from bad frames", bad);
    printf("    700 frames of NaN, Inf, 1e30 and f0 out of range: finite "
           "(peak %.3g)\n",
           peak);
    /* silence in, silence out */
    frae_vocoder_reset(v);
    for (int k = 0; k < 82; k++)
        frame[k] = -10; /* far below the feature floor */
    peak = 0;
    for (int t = 0; t < 50; t++) {
        frae_vocoder_frame(v, frame, out);
        for (int i = 0; i < 160; i++)
            peak = fmax(peak, fabs(out[i]));
    }
    CHECK(peak < 1e-3, "silent frames give a peak of %.3g", peak);
    /* seeded: the same frames give the same samples after a reset */
    float first[160], again[160];
    for (int k = 0; k < 80; k++)
        frame[k] = 1.0f;
    frame[80] = 120, frame[81] = 1;
    frae_vocoder_reset(v);
    frae_vocoder_frame(v, frame, first);
    frae_vocoder_reset(v);
    frae_vocoder_frame(v, frame, again);
    CHECK(!memcmp(first, again, sizeof first), "reset does not repeat");
    free(mem);
    return failures;
}

/* A voiced sound of n samples at 16 kHz (harmonics, vibrato), whose pitch
 * glides over its length. */
static float *voice(long n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) {
        double f0 = 120 + 40.0 * i / n + 10 * sin(2 * PI * 3 * i / 16000.0);
        double v = 0;
        for (int h = 1; h <= 25; h++)
            v += sin(2 * PI * f0 * h * i / 16000.0) / h;
        x[i] = (float)(0.2 * v * (0.6 + 0.4 * sin(2 * PI * 0.7 * i / 16000.0)));
    }
    return x;
}

/* Per frame, the RMS difference in dB of two frames of features. */
static double frame_lsd(const float *a, const float *b, int n_mels)
{
    double ss = 0;
    for (int k = 0; k < n_mels; k++) {
        double d = 5.0 * (a[k] - b[k]) * 4.342944819;
        ss += d * d;
    }
    return sqrt(ss / n_mels);
}

int test_griffin_lim_streamed(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    frae_mel *m = frae_mel_create(&f, NULL, 0);
    /* 8 s, 798 frames: three blocks and a part, three block edges */
    const long n = 128000;
    float *x = voice(n);
    const long frames = frae_mel_frames(m, n);
    float *a = malloc(sizeof(float) * (size_t)frames * 80);
    float *b = malloc(sizeof(float) * (size_t)frames * 80);
    float *whole = malloc(sizeof(float) * (size_t)n);
    float *streamed = malloc(sizeof(float) * (size_t)n);
    frae_mel_compute(m, x, n, a);
    const long want = (frames - 1) * 160 + 400;
    long got = frae_mel_invert(m, a, frames, 16, whole);
    CHECK(got == want, "frae_mel_invert gave %ld samples of %ld", got, want);
    /* frame by frame, in fixed memory: the same samples, to the bit */
    frae_gl *g = frae_gl_create(&f, 16, NULL, 0);
    const long cap = g ? frae_gl_max_samples(g) : 0;
    float *out = malloc(sizeof(float) * (size_t)(cap ? cap : 1));
    long at = 0, most = 0;
    for (long t = 0; g && t < frames; t++) {
        long k = frae_gl_frame(g, a + t * 80, out);
        most = k > most ? k : most;
        if (at + k <= n)
            memcpy(streamed + at, out, sizeof(float) * (size_t)k);
        at += k;
    }
    long k = g ? frae_gl_flush(g, out) : 0;
    most = k > most ? k : most;
    if (at + k <= n)
        memcpy(streamed + at, out, sizeof(float) * (size_t)k);
    at += k;
    CHECK(g && at == want && most <= cap &&
              !memcmp(whole, streamed, sizeof(float) * (size_t)want),
          "streamed Griffin-Lim: %ld samples (calls of at most %ld, cap %ld), "
          "not frae_mel_invert's",
          at, most, cap);
    /* the same signal again after the flush: the same samples (reset) */
    at = 0;
    for (long t = 0; g && t < frames; t++) {
        k = frae_gl_frame(g, a + t * 80, out);
        if (at + k <= n && memcmp(out, whole + at, sizeof(float) * (size_t)k))
            at = -n; /* differs */
        at += k;
    }
    k = g ? frae_gl_flush(g, out) : 0;
    CHECK(at + k == want && !memcmp(out, whole + at, sizeof(float) * (size_t)k),
          "a second signal after the flush differs from the first");
    /* no seam: the frames around each block's edge invert as well as the
     * rest (their windows span two blocks' frames, overlap-added) */
    frae_mel_compute(m, whole, got, b);
    double all = 0, edge = 0;
    int n_edge = 0;
    for (long t = 0; t < frames; t++) {
        double d = frame_lsd(a + t * 80, b + t * 80, 80);
        all += d;
        const long into = t % FRAE_GL_BLOCK;
        if (t >= FRAE_GL_BLOCK && (into < 3 || into >= FRAE_GL_BLOCK - 3))
            edge += d, n_edge++;
    }
    all /= frames, edge /= n_edge;
    CHECK(all < 4.5 && edge < all + 0.75,
          "LSD %.2f dB over the signal, %.2f at the block edges", all, edge);
    printf("    %ld frames in blocks of %d (+%d ahead): the samples of "
           "frae_mel_invert to the bit; LSD %.2f dB, %.2f dB at the block "
           "edges\n",
           frames, FRAE_GL_BLOCK, FRAE_GL_LOOKAHEAD, all, edge);
    /* junk: NaN, log-mel 40 (e^195: it overflowed float and gave NaN),
     * 1e30 and -1e30 give finite samples; values above the loudest audio's
     * invert as that value */
    const float junk[] = {NAN, 40.0f, 1e30f, -1e30f, INFINITY, -INFINITY};
    const double loudest = frae_features_max(&f);
    int bad = 0;
    for (long t = 0; t < 40; t++)
        for (int j = 0; j < 80; j++)
            a[t * 80 + j] = t < 20 ? junk[(t + j) % 6] : (float)loudest;
    got = frae_mel_invert(m, a, 40, 8, whole);
    for (long i = 0; i < got; i++)
        bad += !isfinite(whole[i]);
    for (long t = 0; t < 20; t++)
        for (int j = 0; j < 80; j++)
            a[t * 80 + j] = (float)(loudest + 100.0);
    frae_mel_invert(m, a, 40, 8, streamed);
    int clamped = 1;
    for (long t = 0; t < 20; t++)
        for (int j = 0; j < 80; j++)
            a[t * 80 + j] = (float)loudest;
    frae_mel_invert(m, a, 40, 8, whole);
    clamped = !memcmp(whole, streamed, sizeof(float) * (size_t)got);
    CHECK(got == 39 * 160 + 400 && bad == 0 && clamped,
          "junk features: %d non-finite samples; above the loudest audio "
          "%s",
          bad, clamped ? "clamped" : "not clamped");
    frae_gl_destroy(g);
    free(x), free(a), free(b), free(whole), free(streamed), free(out);
    frae_mel_destroy(m);
    return failures;
}

/* The file's bytes into *buf (malloc'ed); their count, or -1. */
static long slurp(const char *path, unsigned char **buf)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    *buf = malloc((size_t)(n > 0 ? n : 1));
    if (fread(*buf, 1, (size_t)n, fp) != (size_t)n)
        n = -1;
    fclose(fp);
    return n;
}

/* The WAV writer's soft clip, written out again: the identity up to 0.85,
 * then toward 0.99 with slope 1 at the knee */
static float soft_clip_ref(float x)
{
    const float r = 0.99f - 0.85f, a = fabsf(x);
    if (a <= 0.85f)
        return x;
    const float u = (a - 0.85f) / r, y = 0.85f + r * (u / (1.0f + u));
    return x < 0 ? -y : y;
}

int test_wav_writer(void)
{
    int failures = 0;
    char dir[] = "/tmp/frae-wav-XXXXXX", p[256], q[256], err[512] = "";
    if (!mkdtemp(dir))
        return 1;
    const long n = 30000;
    float *x = voice(n);
    /* as it is; past full scale within the soft clip's headroom (peak
     * 1.68); past it (peak 3.2), scaled to a peak of 2 first */
    const float gains[] = {1.0f, 4.7f, 9.0f};
    for (int loud = 0; loud < 3; loud++) {
        const float gain = gains[loud];
        float *y = malloc(sizeof(float) * n), peak = 0;
        for (long i = 0; i < n; i++)
            y[i] = x[i] * gain, peak = fmaxf(peak, fabsf(y[i]));
        snprintf(p, sizeof p, "%s/whole%d.wav", dir, loud);
        CHECK(!frae_audio_write_wav(p, y, n, 16000, err, sizeof err), "%s",
              err);
        /* in pieces of every size, to a file and live */
        unsigned char *bl = NULL;
        long nl = 0;
        for (int live = 0; live < 2; live++) {
            snprintf(q, sizeof q, "%s/pieces%d%s.wav", dir, loud,
                     live ? "-live" : "");
            frae_wav_writer *w = (live ? frae_wav_open_live : frae_wav_open)(
                q, 16000, err, sizeof err);
            CHECK(w != NULL, "%s", err);
            for (long at = 0, piece = 0; w && at < n; at += piece) {
                piece = (at * 7 + 1) % 3001;
                piece = piece < n - at ? piece : n - at;
                CHECK(!frae_wav_write(w, y + at, piece, err, sizeof err), "%s",
                      err);
            }
            CHECK(w && frae_wav_samples(w) == n, "%ld samples counted",
                  w ? frae_wav_samples(w) : -1);
            CHECK(w && !frae_wav_close(w, err, sizeof err), "%s", err);
            if (live)
                nl = slurp(q, &bl);
        }
        snprintf(q, sizeof q, "%s/pieces%d.wav", dir, loud);
        /* libsndfile's own 16-bit WAV of the same samples, scaled and
         * soft-clipped */
        char r[256];
        snprintf(r, sizeof r, "%s/ref%d.wav", dir, loud);
        const float g = peak > 2.0f ? 2.0f / peak : 1.0f;
        double in_power = 0, out_power = 0;
        int bent = 0;
        for (long i = 0; i < n; i++) {
            in_power += (double)y[i] * y[i];
            const float v = soft_clip_ref(y[i] * g);
            bent += v != y[i] * g;
            y[i] = v;
        }
        SF_INFO info = {0, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 0, 0};
        SNDFILE *sf = sf_open(r, SFM_WRITE, &info);
        CHECK(sf && sf_writef_float(sf, y, n) == n, "libsndfile");
        if (sf)
            sf_close(sf);
        unsigned char *bw = NULL, *bp = NULL, *br = NULL;
        long nw = slurp(p, &bw), np = slurp(q, &bp), nr = slurp(r, &br);
        CHECK(nw == 44 + 2 * n && nw == np && nw == nr && !memcmp(bw, bp, nw) &&
                  !memcmp(bw, br, nw),
              "peak %.2f: WAV whole %ld, in pieces %ld, libsndfile's %ld "
              "bytes, not the same",
              (double)peak, nw, np, nr);
        /* live, the same samples up to the headroom; past it, its own */
        CHECK(nl == nw && (peak > 2.0f) == !!memcmp(bw + 44, bl + 44, nw - 44),
              "peak %.2f: the live writer's samples %s the file's",
              (double)peak, peak > 2.0f ? "the same as" : "not");
        for (long i = 0; nw == 44 + 2 * n && i < n; i++) { /* the file's */
            const double v =
                (int16_t)(bw[44 + 2 * i] | bw[45 + 2 * i] << 8) / 32767.0;
            out_power += v * v;
        }
        /* the level kept within the headroom: scaling to a peak of 0.99
         * cost 20 log10(0.99 / peak), -4.6 dB at 1.68 */
        const double kept = 10 * log10(out_power / in_power);
        CHECK(loud != 1 || (bent > 0 && kept > -1.0),
              "peak %.2f: %d samples bent, level %+.2f dB (within 1)",
              (double)peak, bent, kept);
        CHECK(loud != 0 || !bent, "peak %.2f: %d samples changed", (double)peak,
              bent);
        free(bw), free(bp), free(br), free(bl), free(y);
    }
    /* a NaN sample is refused and leaves the old file as it was */
    snprintf(p, sizeof p, "%s/whole0.wav", dir);
    unsigned char *before = NULL, *after = NULL;
    long nb = slurp(p, &before);
    frae_wav_writer *w = frae_wav_open(p, 16000, err, sizeof err);
    x[12345] = NAN;
    int rc = w ? frae_wav_write(w, x, n, err, sizeof err) : 0;
    CHECK(rc && strstr(err, "sample 12345 (0.772 s) is NaN"),
          "a NaN sample: '%s'", err);
    frae_wav_abort(w);
    long na = slurp(p, &after);
    CHECK(na == nb && !memcmp(before, after, (size_t)nb),
          "a refused write changed the old file");
    free(before), free(after);
    CHECK(frae_audio_write_wav(p, x, n, 16000, err, sizeof err) &&
              strstr(err, "is NaN"),
          "frae_audio_write_wav took a NaN: '%s'", err);
    snprintf(p, sizeof p, "%s/nodir/x.wav", dir);
    CHECK(!frae_wav_open(p, 16000, err, sizeof err) && strstr(err, "nodir"),
          "a WAV in a missing directory: '%s'", err);
    free(x);
    snprintf(p, sizeof p, "ls %s | grep -q tmp- || rm -rf %s", dir, dir);
    CHECK(!system(p), "temporary files left in %s", dir);
    return failures;
}

int test_loud_audio(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    /* n_fft x sum of the periodic Hann's squares (3/8 of 400) x 2^32 */
    const double loudest = frae_features_max(&f);
    const double want = (log(512.0 * 150.0 * 65536.0 * 65536.0) + 5) / 5;
    CHECK(fabs(loudest - want) < 1e-9, "frae_features_max %.6f, not %.6f",
          loudest, want);
    char dir[] = "/tmp/frae-loud-XXXXXX", p[256], err[512] = "";
    if (!mkdtemp(dir))
        return 1;
    /* float WAVs: at the bound, a tone and a click are taken and their
     * features stay below the bound; past it (3.4e38 overflowed the FFT
     * and gave silence) they are refused */
    const long n = 8000;
    float *x = malloc(sizeof(float) * n);
    const float levels[] = {65536.0f, 65537.0f, 3.4e38f, -1e6f};
    for (int i = 0; i < 4; i++) {
        for (long j = 0; j < n; j++) /* a tone, then a click */
            x[j] = j == 4000 ? levels[i]
                             : (float)(0.999 * levels[i] * sin(0.3 * j));
        snprintf(p, sizeof p, "%s/loud%d.wav", dir, i);
        SF_INFO info = {0, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 0, 0};
        SNDFILE *sf = sf_open(p, SFM_WRITE, &info);
        sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_FALSE);
        sf_writef_float(sf, x, n);
        sf_close(sf);
        float *feats = NULL;
        long frames = 0;
        int rc =
            frae_audio_features(p, &f, 1, &feats, &frames, err, sizeof err);
        if (i == 0) {
            double top = -1e9;
            for (long t = 0; !rc && t < frames * 80; t++)
                top = fmax(top, feats[t]);
            CHECK(!rc && top <= loudest && top > loudest - 2,
                  "a tone at +-65536: %s, loudest feature %.3f of %.3f",
                  rc ? err : "taken", top, loudest);
            free(feats);
        } else {
            CHECK(rc && strstr(err, "past the +-65536 frae takes"),
                  "a sample of %g: '%s'", (double)levels[i], err);
        }
    }
    /* the vocoder clamps at the bound too */
    void *mem = malloc(frae_vocoder_size(&f));
    frae_vocoder *v = frae_vocoder_init(mem, &f, 3, NULL, 0);
    float frame[82], at[160], above[160];
    for (int k = 0; k < 80; k++)
        frame[k] = (float)loudest;
    frame[80] = 150, frame[81] = 1;
    frae_vocoder_frame(v, frame, at);
    frae_vocoder_reset(v);
    for (int k = 0; k < 80; k++)
        frame[k] = (float)loudest + 50;
    frae_vocoder_frame(v, frame, above);
    CHECK(!memcmp(at, above, sizeof at), "the vocoder does not clamp at the "
                                         "loudest audio's features");
    free(mem), free(x);
    snprintf(p, sizeof p, "rm -rf %s", dir);
    if (system(p)) {
    }
    return failures;
}

/* frae_speech_latency: the f0 span's half ahead of a frame's centre (or
 * the mel window's, if longer), the vocoder's hop behind it, a hop more a
 * frame of look-ahead, and the polish's delay (decode's default): 52.5 ms
 * at the defaults (30 without the polish), as docs/speech.md states, and
 * the frame a vocoder call ends at is its centre (the timeline test) */
int test_speech_latency(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    const long span = frae_f0_span(&f), polish = FRAE_POLISH_DELAY(&f);
    for (int A = 0; A <= 3; A++)
        CHECK(frae_speech_latency(&f, A) ==
                      span / 2 + f.hop * (1 + A) + polish &&
                  frae_speech_latency(&f, A) == 840 + 160 * A,
              "defaults, look-ahead %d: %ld samples", A,
              frae_speech_latency(&f, A));
    CHECK(frae_speech_latency(&f, -1) == 840, "a negative look-ahead is none");
    f.win = 1024, f.n_fft = 1024; /* the window's half (512) > the span's */
    CHECK(FRAE_POLISH_DELAY(&f) == 512 + 3 * 160 &&
              frae_speech_latency(&f, 1) == 512 + 2 * 160 + 992,
          "a 1024-sample window: %ld samples (the polish %ld)",
          frae_speech_latency(&f, 1), FRAE_POLISH_DELAY(&f));
    frae_features_default(&f);
    f.sample_rate = 8000, f.hop = 80, f.win = 200, f.n_fft = 256;
    f.fmax = 4000.0f; /* 8 kHz: the span halves with the rate, 20 ms */
    CHECK(frae_speech_latency(&f, 0) == 160 + 80 + 180, "8 kHz: %ld samples",
          frae_speech_latency(&f, 0));
    return failures;
}

/* frae_audio_out, the one timeline of frames to samples (decode --wav,
 * vocode, Python): the vocoder's samples to the bit as the plain calls lay
 * them (vocode_all), a second sequence the same after begin, Griffin-Lim's
 * as many as frae_audio_out_samples says; also with a window whose lead
 * (win/2 - hop) is longer than a hop. */
int test_audio_out_timeline(void)
{
    int failures = 0;
    for (int big = 0; big < 2; big++) {
        frae_features f;
        frae_features_default(&f);
        if (big)
            f.win = 1024, f.n_fft = 1024;
        const long frames = 57, total = frae_audio_out_samples(&f, frames);
        float *a = malloc(sizeof(float) * frames * (f.n_mels + 2));
        for (long t = 0; t < frames; t++) {
            for (int b = 0; b < f.n_mels; b++)
                a[t * (f.n_mels + 2) + b] =
                    (float)(0.3 * sin(0.1 * t + 0.2 * b) - 0.2);
            a[t * (f.n_mels + 2) + f.n_mels] = t % 5 ? 120.0f + t : 0.0f;
            a[t * (f.n_mels + 2) + f.n_mels + 1] = t % 5 != 0;
        }
        long n_ref;
        float *ref = vocode_all(&f, a, frames, &n_ref);
        char err[256] = "";
        for (int hnm = 1; hnm >= 0; hnm--) {
            frae_audio_out *o =
                frae_audio_out_create(&f, hnm, 4, 0, err, sizeof err);
            float *buf =
                o ? malloc(sizeof(float) * frae_audio_out_max(o)) : NULL;
            float *y = calloc((size_t)total * 2, sizeof(float));
            long at = 0, within = 1;
            for (int seq = 0; o && buf && seq < 2; seq++) {
                long n = frae_audio_out_begin(o, buf);
                for (long t = -1; t <= frames; t++) {
                    if (t >= 0)
                        n = t < frames ? frae_audio_out_frame(
                                             o, a + t * (f.n_mels + 2), buf)
                                       : frae_audio_out_end(o, buf);
                    within &= n <= frae_audio_out_max(o);
                    if (at + n <= 2 * total)
                        memcpy(y + at, buf, sizeof(float) * (size_t)n);
                    at += n;
                }
            }
            CHECK(
                o && buf && within && at == 2 * total &&
                    (!hnm || (n_ref == total &&
                              !memcmp(y, ref, sizeof(float) * total) &&
                              !memcmp(y + total, ref, sizeof(float) * total))),
                "win %d, %s: %ld samples for 2 x %ld frames (%ld each), %s",
                f.win, hnm ? "vocoder" : "Griffin-Lim", at, frames, total,
                hnm ? "the plain calls' to the bit, twice" : "");
            free(buf), free(y);
            frae_audio_out_destroy(o);
        }
        free(ref), free(a);
    }
    return failures;
}

/* frae_fft_real and its inverse (the polish's) against the complex FFT they
 * stand for, on noise: the same spectrum to float rounding, and back. */
int test_fft_real(void)
{
    int failures = 0;
    enum { N = 512 };
    float tw[N], half[N / 2], x[N], re[N], im[N], hr[N / 2 + 1], hi[N / 2 + 1],
        y[N];
    frae_fft_twiddles(N, tw);
    frae_fft_twiddles(N / 2, half);
    uint64_t r = 7;
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = re[i] = (float)((r >> 40) / 16777216.0 - 0.5);
        im[i] = 0;
    }
    frae_fft(re, im, N, tw, 0);
    frae_fft_real(x, hr, hi, N, half, tw);
    double most = 0, back = 0;
    for (int k = 0; k <= N / 2; k++)
        most = fmax(most, fmax(fabs(hr[k] - re[k]), fabs(hi[k] - im[k])));
    frae_fft_real_inverse(hr, hi, y, N, half, tw);
    for (int i = 0; i < N; i++)
        back = fmax(back, fabs(y[i] / N - x[i]));
    CHECK(most < 1e-4 && back < 1e-6,
          "%d real samples: the spectrum %.2g from "
          "the complex FFT's, back %.2g from the samples",
          N, most, back);
    printf("    %d real samples: the spectrum %.2g from the complex FFT's, "
           "back %.2g\n",
           N, most, back);
    return failures;
}

/* The polish (frae_audio_out_create's polish > 0), against a plain one on
 * the whole signal: the same rounds in double precision with a direct DFT,
 * frame by frame over the frames that reach a frame's samples, the
 * targets' log powers taken 0.4 / 3 of the way to each neighbour's and
 * raised 0.25 dB, the samples before it held, a voiced frame's bins under
 * 1 kHz only turned down and by the power ratio of each band and its
 * neighbours, the
 * frame's power given back as its features ask, and its first half hop
 * eased in.  The stream gives the same samples (to float
 * rounding), the same count as without it, the same twice over; its audio
 * analyses back closer to the features; junk frames give finite samples. */
static void polish_plain(const frae_features *f, const float *feats, int width,
                         long frames, int rounds, double *y)
{
    const int nb = f->n_fft / 2 + 1, nm = f->n_mels;
    const long n = frae_audio_out_samples(f, frames);
    double *acc = malloc(sizeof(double) * n),
           *wsum = malloc(sizeof(double) * n);
    double *re = malloc(sizeof(double) * nb), *im = malloc(sizeof(double) * nb);
    double *ratio = malloc(sizeof(double) * nm),
           *power = malloc(sizeof(double) * nm),
           *wide = malloc(sizeof(double) * nm),
           *x = malloc(sizeof(double) * f->n_fft);
    double *w = malloc(sizeof(double) * f->win);
    for (int i = 0; i < f->win; i++)
        w[i] = 0.5 - 0.5 * cos(2 * PI * i / f->win);
    const double top = frae_features_max(f) * f->scale - f->offset;
    double *lp = malloc(sizeof(double) * frames * nm),
           *target = malloc(sizeof(double) * frames * nm);
    for (long t = 0; t < frames; t++)
        for (int b = 0; b < nm; b++) {
            const double v = feats[t * width + b] * f->scale - f->offset;
            lp[t * nm + b] = v < top ? v : top;
        }
    for (long t = 0; t < frames; t++) /* 0.25 dB up: what smoothing costs */
        for (int b = 0; b < nm; b++) {
            const double at = lp[t * nm + b];
            const double before = t > 0 ? lp[(t - 1) * nm + b] : at;
            const double after = t + 1 < frames ? lp[(t + 1) * nm + b] : at;
            target[t * nm + b] =
                pow(10.0, 0.025) *
                exp(at + 0.4 / 3 * (before - at) + 0.4 / 3 * (after - at));
        }
    for (long t = 0; t < frames; t++)
        for (int r = 0; r < rounds; r++) {
            const long from = t * f->hop;
            for (long i = from; i < from + f->win; i++)
                acc[i] = wsum[i] = 0;
            for (long u = t - 2 < 0 ? 0 : t - 2; u <= t; u++) {
                const long s = u * f->hop;
                for (int k = 0; k < nb; k++) {
                    re[k] = im[k] = 0;
                    for (int i = 0; i < f->win; i++) {
                        const double a = 2 * PI * k * i / f->n_fft;
                        re[k] += w[i] * y[s + i] * cos(a);
                        im[k] -= w[i] * y[s + i] * sin(a);
                    }
                }
                for (int b = 0; b < nm; b++) {
                    double e = 0;
                    for (int k = 0; k < nb; k++)
                        e += frae_mel_weight(f, b, k) *
                             (re[k] * re[k] + im[k] * im[k]);
                    ratio[b] = target[u * nm + b] / (e > 1e-30 ? e : 1e-30);
                    power[b] = e;
                }
                for (int b = 0; b < nm; b++) {
                    double want = 0, e = 0;
                    for (int j = b - 1; j <= b + 1; j++)
                        if (j >= 0 && j < nm)
                            want += target[u * nm + j], e += power[j];
                    wide[b] = want / (e > 1e-30 ? e : 1e-30);
                }
                /* a voiced frame's bins under 1 kHz only turned down */
                const int down_to =
                    feats[u * width + nm + 1] >= 0.5f
                        ? (int)ceil(1000.0 * f->n_fft / f->sample_rate)
                        : 0;
                for (int k = 0; k < nb; k++) {
                    double num = 0, sum = 0;
                    for (int b = 0; b < nm; b++)
                        num += frae_mel_weight(f, b, k) *
                               (k < down_to ? wide[b] : ratio[b]),
                            sum += frae_mel_weight(f, b, k);
                    double g2 = sum > 0 ? num / sum : 1.0;
                    if (k < down_to && g2 > 1.0)
                        g2 = 1.0;
                    const double g = sqrt(g2 < 1e4 ? g2 : 1e4);
                    re[k] *= g, im[k] *= g;
                }
                for (int i = 0; i < f->win; i++) { /* inverse real DFT */
                    double v = 0;
                    for (int k = 0; k < nb; k++) {
                        const double a = 2 * PI * k * i / f->n_fft;
                        const double c = k == 0 || 2 * k == f->n_fft ? 1 : 2;
                        v += c * (re[k] * cos(a) - im[k] * sin(a));
                    }
                    x[i] = v / f->n_fft;
                }
                for (int i = 0; i < f->win; i++)
                    if (s + i >= from)
                        acc[s + i] += x[i] * w[i], wsum[s + i] += w[i] * w[i];
            }
            double want = 0, got = 0;
            for (long i = from; i < from + f->win; i++)
                acc[i] = (acc[i] + 0.1 * y[i]) / (wsum[i] + 0.1);
            for (int k = 0; k < nb; k++) { /* the window's power, as asked */
                double pr = 0, pi = 0;
                for (int i = 0; i < f->win; i++) {
                    const double a = 2 * PI * k * i / f->n_fft;
                    pr += w[i] * acc[from + i] * cos(a);
                    pi -= w[i] * acc[from + i] * sin(a);
                }
                for (int b = 0; b < nm; b++)
                    got += frae_mel_weight(f, b, k) * (pr * pr + pi * pi);
            }
            for (int b = 0; b < nm; b++)
                want += target[t * nm + b];
            const double g2 = fmin(fmax(want / got, 0.25), 4.0);
            for (long i = from; i < from + f->win; i++) {
                const double v = sqrt(g2) * acc[i];
                const long j = i - from, ease = f->hop / 2;
                const double up = 0.5 - 0.5 * cos(PI * (j + 0.5) / ease);
                y[i] = j < ease ? y[i] + up * (v - y[i]) : v;
            }
        }
    free(acc), free(wsum), free(re), free(im), free(ratio), free(x), free(w);
    free(lp), free(target), free(power), free(wide);
}

/* The samples of `frames` frames through frae_audio_out, twice over (two
 * sequences); NULL if the second differs or a call overflows. */
static float *audio_out_all(const frae_features *f, const float *a, long frames,
                            int polish, long *given)
{
    const int width = f->n_mels + 2;
    const long total = frae_audio_out_samples(f, frames);
    frae_audio_out *o = frae_audio_out_create(f, 1, 0, polish, NULL, 0);
    float *buf = o ? malloc(sizeof(float) * frae_audio_out_max(o)) : NULL;
    float *y = calloc((size_t)total * 2, sizeof(float));
    long at = 0, ok = o && buf;
    for (int seq = 0; ok && seq < 2; seq++)
        for (long t = -2; ok && t <= frames; t++) {
            const long n = t == -2 ? frae_audio_out_begin(o, buf)
                           : t < 0 ? 0
                           : t < frames
                               ? frae_audio_out_frame(o, a + t * width, buf)
                               : frae_audio_out_end(o, buf);
            ok = n <= frae_audio_out_max(o) && at + n <= 2 * total;
            if (ok)
                memcpy(y + at, buf, sizeof(float) * (size_t)n), at += n;
            if (given && seq == 0 && t >= 0 && t < frames)
                given[t] = at; /* the samples out once frame t is in */
        }
    ok = ok && at == 2 * total && !memcmp(y, y + total, sizeof(float) * total);
    free(buf);
    frae_audio_out_destroy(o);
    if (!ok)
        free(y);
    return ok ? y : NULL;
}

/* mean |dB| between y's features and the targets a raised lift_db, over
 * a's voiced frames (voiced 1) or its unvoiced ones (0) */
static double polish_error_db(const frae_features *f, const float *a,
                              long frames, const float *y, int voiced,
                              double lift_db)
{
    const double lift = lift_db * log(10) / 10 / f->scale; /* in features */
    frae_mel *m = frae_mel_create(f, NULL, 0);
    float *g = malloc(sizeof(float) * frames * f->n_mels);
    frae_mel_compute(m, y, frae_audio_out_samples(f, frames), g);
    double e = 0;
    long n = 0;
    for (long t = 0; t < frames; t++) {
        if ((a[t * (f->n_mels + 2) + f->n_mels + 1] >= 0.5f) != voiced)
            continue;
        for (int b = 0; b < f->n_mels; b++)
            e += fabs(g[t * f->n_mels + b] - a[t * (f->n_mels + 2) + b] - lift);
        n += f->n_mels;
    }
    frae_mel_destroy(m);
    free(g);
    return e / (n ? n : 1) * f->scale * 10 / log(10);
}

int test_audio_out_polish(void)
{
    int failures = 0;
    frae_features f;
    frae_features_default(&f);
    const long frames = 30, total = frae_audio_out_samples(&f, frames);
    const int width = f.n_mels + 2;
    float *a = malloc(sizeof(float) * frames * width);
    for (long t = 0; t < frames; t++) {
        for (int b = 0; b < f.n_mels; b++)
            a[t * width + b] =
                (float)(0.3 * sin(0.1 * t + 0.2 * b) - 0.2 - 0.004 * b);
        a[t * width + f.n_mels] = t % 7 < 4 ? 120.0f + t : 0.0f;
        a[t * width + f.n_mels + 1] = t % 7 < 4;
    }
    long given0[30], given2[30], late = 1;
    float *y0 = audio_out_all(&f, a, frames, 0, given0);
    float *y2 = audio_out_all(&f, a, frames, 2, given2);
    CHECK(y0 && y2,
          "%ld samples for %ld frames, with the polish and without, "
          "the same twice over",
          total, frames);
    for (long t = 0; y0 && y2 && t < frames; t++) {
        const long want = given0[t] - FRAE_POLISH_DELAY(&f);
        late &= given2[t] == (want > 0 ? want : 0);
    }
    CHECK(late && FRAE_POLISH_DELAY(&f) == 360,
          "every frame's samples out FRAE_POLISH_DELAY (%ld) samples later "
          "than the vocoder's",
          FRAE_POLISH_DELAY(&f));
    { /* a window longer than two hops' lead: the delay and counts hold */
        frae_features big = f;
        big.win = 1024, big.n_fft = 1024;
        long g0[30], g2[30], ok = 1;
        float *b0 = audio_out_all(&big, a, frames, 0, g0);
        float *b2 = audio_out_all(&big, a, frames, 2, g2);
        for (long t = 0; b0 && b2 && t < frames; t++) {
            const long want = g0[t] - FRAE_POLISH_DELAY(&big);
            ok &= g2[t] == (want > 0 ? want : 0);
        }
        CHECK(b0 && b2 && ok,
              "a 1024-sample window: as many samples, "
              "FRAE_POLISH_DELAY (%ld) later",
              FRAE_POLISH_DELAY(&big));
        free(b0), free(b2);
    }
    if (y0 && y2) {
        double *ref = malloc(sizeof(double) * total);
        for (long i = 0; i < total; i++)
            ref[i] = y0[i];
        polish_plain(&f, a, width, frames, 2, ref);
        double most = 0, power = 0;
        for (long i = 0; i < total; i++) {
            const double d = fabs(y2[i] - ref[i]);
            most = d > most ? d : most;
            power += ref[i] * ref[i];
        }
        const double rms = sqrt(power / total);
        CHECK(most < 1e-4 * rms,
              "the stream against the plain polish: %.2g "
              "at most (rms %.3g)",
              most, rms);
        /* unvoiced frames (noise) come to within a third of their error;
         * voiced ones less near, as the harmonics under 1 kHz are only
         * turned down and these targets are smooth where they are peaked.
         * Each against what it aims at: the polish gives back 0.25 dB
         * (what smoothing speech's logs costs, more than these smooth
         * features lose), the vocoder the features' own power */
        const double e0 = polish_error_db(&f, a, frames, y0, 0, 0);
        const double e2 = polish_error_db(&f, a, frames, y2, 0, 0.25);
        const double v0 = polish_error_db(&f, a, frames, y0, 1, 0);
        const double v2 = polish_error_db(&f, a, frames, y2, 1, 0.25);
        CHECK(e2 < 0.4 * e0 && v2 < 0.95 * v0,
              "analysed back, dB from the features (polished: 0.25 dB "
              "over them): unvoiced frames %.2f polished, %.2f not; "
              "voiced %.2f, %.2f",
              e2, e0, v2, v0);
        printf("    polish: %.2g from the plain one (rms %.3g); analysed "
               "back %.2f dB from the unvoiced frames' features 0.25 dB "
               "up (%.2f unpolished, from them), %.2f from the voiced "
               "ones' (%.2f)\n",
               most, rms, e2, e0, v2, v0);
        free(ref);
    }
    free(y0), free(y2);
    { /* 60 frames: past 41 the stream's buffer slides back, which the
       * plain version, with no buffer, does not */
        const long longer = 60, n = frae_audio_out_samples(&f, longer);
        float *a2 = malloc(sizeof(float) * longer * width);
        for (long t = 0; t < longer; t++)
            memcpy(a2 + t * width, a + (t % frames) * width,
                   sizeof(float) * width);
        float *z0 = audio_out_all(&f, a2, longer, 0, NULL);
        float *z2 = audio_out_all(&f, a2, longer, 2, NULL);
        double most = z0 && z2 ? 0 : INFINITY, power = 0;
        if (z0 && z2) {
            double *ref = malloc(sizeof(double) * n);
            for (long i = 0; i < n; i++)
                ref[i] = z0[i];
            polish_plain(&f, a2, width, longer, 2, ref);
            for (long i = 0; i < n; i++) {
                most = fmax(most, fabs(z2[i] - ref[i]));
                power += ref[i] * ref[i];
            }
            free(ref);
        }
        CHECK(most < 1e-4 * sqrt(power / n) && power > 0,
              "%ld frames, the buffer slid: %.2g from the plain polish", longer,
              most);
        free(z0), free(z2), free(a2);
    }
    /* a narrowband source: nothing over 4 kHz (the bands at the floor's
     * level) stays nothing; a step where the final samples meet the new
     * ones would splash 15 dB over it */
    for (long t = 0; t < frames; t++)
        for (int b = 0; b < f.n_mels; b++)
            a[t * width + b] = b < 60
                                   ? (float)(0.3 * sin(0.1 * t + 0.2 * b) + 0.6)
                                   : -1.0f - 0.01f * b; /* 45 dB down */
    y2 = audio_out_all(&f, a, frames, 2, NULL);
    if (y2) {
        frae_mel *m = frae_mel_create(&f, NULL, 0);
        float *g = malloc(sizeof(float) * frames * f.n_mels);
        frae_mel_compute(m, y2, total, g);
        double over = 0;
        for (long t = 2; t < frames - 2; t++)
            for (int b = 70; b < f.n_mels; b++)
                over += g[t * f.n_mels + b] - a[t * width + b];
        over *= f.scale * 10 / log(10) / ((frames - 4) * (f.n_mels - 70));
        CHECK(over < 1.5,
              "nothing over 4 kHz: the top bands %.1f dB from their "
              "target",
              over);
        printf("    polish, a narrowband source: the top bands %.1f dB from "
               "their target\n",
               over);
        frae_mel_destroy(m);
        free(g);
    }
    CHECK(y2 != NULL, "a narrowband source polished");
    free(y2);
    /* junk: NaN and huge features, absurd f0 */
    for (long t = 0; t < frames; t++)
        for (int b = 0; b < width; b++)
            a[t * width + b] = t % 3 == 0 ? NAN : t % 3 == 1 ? 1e30f : -1e30f;
    float *yj = audio_out_all(&f, a, frames, 2, NULL);
    int finite = yj != NULL;
    for (long i = 0; yj && i < total; i++)
        finite &= isfinite(yj[i]);
    CHECK(finite, "junk frames: finite samples, as many");
    free(yj), free(a);
    return failures;
}

/* frae_checkpoint_features, the one reader of a model's features.*
 * metadata (frae's commands and Python), and frae_features_meta, its
 * writer (frae train's), read back whole: all ten as written, pitch from
 * frae.pitch; none is 0; some, a non-number, a fraction where an integer
 * goes, an absurd size or settings frae_features_check refuses are -1
 * with the key or the reason named, and *f left alone. */
int test_checkpoint_features(void)
{
    int failures = 0;
    char dir[] = "/tmp/frae-ckfeat-XXXXXX", path[256], err[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    const int enc[1] = {6}, dec[1] = {7};
    frae_config c;
    tiny_config(&c, 4, 2, 1, enc, 3, 1, dec);
    frae_model *m = create_or_die(&c);
    static const char *const keys[] = {
        "features.sample_rate", "features.n_mels", "features.hop",
        "features.win",         "features.n_fft",  "features.fmin",
        "features.fmax",        "features.floor",  "features.offset",
        "features.scale"};
    const char *good[10] = {"8000", "40",     "80",   "200", "256",
                            "50",   "3800.5", "1e-6", "4",   "6"};
    struct {
        int n, at; /* the first n keys, value `bad` at key `at` (-1: none) */
        const char *bad, *said;
        int want;
    } cs[] = {
        {10, -1, NULL, NULL, 1},
        {0, -1, NULL, NULL, 0},
        {9, -1, NULL, "'features.*' incomplete", -1},
        {10, 1, "1e300", "'features.n_mels' invalid", -1},
        {10, 2, "80.5", "'features.hop' invalid", -1},
        {10, 7, "nan", "'features.floor' invalid", -1},
        {10, 0, "12x", "'features.sample_rate' invalid", -1},
        {10, 3, "400", "window 400 must be between 2 and the FFT size 256", -1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
        frae_meta meta[10];
        for (int k = 0; k < cs[i].n; k++)
            meta[k] = (frae_meta){keys[k], k == cs[i].at ? cs[i].bad : good[k]};
        CHECK(!frae_save(m, path, 0, meta, cs[i].n, NULL, 0, err, sizeof err),
              "%s", err);
        frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
        CHECK(ck != NULL, "%s", err);
        if (!ck)
            continue;
        frae_features f;
        memset(&f, 0x5a, sizeof f);
        err[0] = 0;
        const int got = frae_checkpoint_features(ck, &f, err, sizeof err);
        frae_checkpoint_close(ck);
        CHECK(got == cs[i].want, "case %zu: %d, want %d (%s)", i, got,
              cs[i].want, err);
        if (cs[i].said)
            CHECK(strstr(err, cs[i].said) != NULL && f.n_mels == 0x5a5a5a5a,
                  "case %zu: '%s' does not say %s, or *f was written", i, err,
                  cs[i].said);
        if (got == 1)
            CHECK(f.sample_rate == 8000 && f.n_mels == 40 && f.hop == 80 &&
                      f.win == 200 && f.n_fft == 256 && f.fmin == 50.0f &&
                      f.fmax == 3800.5f && f.floor == 1e-6f &&
                      f.offset == 4.0f && f.scale == 6.0f && f.pitch == 0,
                  "the ten values read back");
    }
    /* what frae_features_meta writes (frae train's), read back whole */
    frae_features w, back;
    frae_features_default(&w);
    w.fmin = 62.5f, w.floor = 3e-7f, w.offset = -1.25f;
    char vals[FRAE_FEATURES_META][64];
    frae_meta meta[FRAE_FEATURES_META];
    const int n = frae_features_meta(&w, vals, meta);
    CHECK(!frae_save(m, path, 0, meta, n, NULL, 0, err, sizeof err), "%s", err);
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    CHECK(ck && frae_checkpoint_features(ck, &back, err, sizeof err) == 1 &&
              !memcmp(&w, &back, sizeof w),
          "frae_features_meta's %d pairs do not read back as written (%s)", n,
          err);
    frae_checkpoint_close(ck);
    frae_destroy(m);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path)) {
    }
    return failures;
}
