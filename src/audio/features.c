/* The feature settings (frae_audio.h): their defaults and checks, the
 * loudest feature audio can give, and the mel scale's filters.  Plain
 * arithmetic, no FFT: the pitch tracker and the vocoder use it as the
 * front end does, and it uses none of them. */
#include <math.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf */

#define PI 3.14159265358979323846

void frae_features_default(frae_features *f)
{
    memset(f, 0, sizeof *f);
    f->sample_rate = 16000;
    f->n_mels = 80;
    f->hop = 160; /* 10 ms */
    f->win = 400; /* 25 ms */
    f->n_fft = 512;
    f->fmin = 0.0f;
    f->fmax = 8000.0f;
    f->floor = 1e-7f;
    f->offset = 5.0f;
    f->scale = 5.0f;
}

int frae_features_pitch_steps(const char *name)
{
    static const struct {
        const char *name;
        int pitch;
    } steps[] = {
        {"yin", FRAE_PITCH_YIN}, {"yin-hp", FRAE_PITCH_YIN_HP}, {"refined", 1}};
    for (size_t i = 0; name && i < sizeof steps / sizeof steps[0]; i++)
        if (!strcmp(name, steps[i].name))
            return steps[i].pitch;
    return -1;
}

int frae_features_check(const frae_features *f, char *err, size_t errlen)
{
    if (f->sample_rate < 1000 || f->sample_rate > 384000)
        return frae_errorf(err, errlen, "sample rate %d Hz is out of range",
                           f->sample_rate);
    if (f->n_fft < 16 || f->n_fft > 65536 || f->win < 2 || f->win > f->n_fft)
        return frae_errorf(err, errlen,
                           "window %d must be between 2 and the FFT size %d",
                           f->win, f->n_fft);
    if (f->hop < 1 || f->hop > f->win)
        return frae_errorf(err, errlen,
                           "hop %d must be between 1 and the window %d", f->hop,
                           f->win);
    if (f->n_mels < 1 || f->n_mels > f->n_fft / 2)
        return frae_errorf(err, errlen, "%d mel bands for a %d-point FFT",
                           f->n_mels, f->n_fft);
    if (!(f->fmin >= 0 && f->fmin < f->fmax &&
          f->fmax <= f->sample_rate / 2.0f))
        return frae_errorf(
            err, errlen, "mel range %g..%g Hz must fit below Nyquist (%g Hz)",
            (double)f->fmin, (double)f->fmax, f->sample_rate / 2.0);
    if (f->pitch < 0 || f->pitch > FRAE_PITCH_YIN_HP)
        return frae_errorf(err, errlen, "pitch %d must be 0 to %d", f->pitch,
                           FRAE_PITCH_YIN_HP);
    if (!(f->floor > 0) || !(f->scale > 0) || !isfinite(f->floor) ||
        !isfinite(f->scale) || !isfinite(f->offset))
        return frae_errorf(err, errlen,
                           "feature floor and scale must be finite and > 0, "
                           "the offset finite");
    return 0;
}

/* By Parseval, a band's mel power (filter weights <= 1) is at most the
 * frame's whole power, n_fft x sum of (window x sample)^2. */
double frae_features_max(const frae_features *f)
{
    if (frae_features_check(f, NULL, 0))
        return NAN;
    double wsq = 0; /* the periodic Hann's sum of squares */
    for (int i = 0; i < f->win; i++) {
        double w = 0.5 - 0.5 * cos(2 * PI * i / f->win);
        wsq += w * w;
    }
    const double power =
        f->n_fft * wsq * FRAE_AUDIO_MAX_SAMPLE * FRAE_AUDIO_MAX_SAMPLE;
    return (log(power) + f->offset) / f->scale;
}

static double hz_to_mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }
static double mel_to_hz(double m)
{
    return 700.0 * (pow(10.0, m / 2595.0) - 1.0);
}

double frae_mel_center_hz(const frae_features *f, int band)
{
    double lo = hz_to_mel(f->fmin), hi = hz_to_mel(f->fmax);
    return mel_to_hz(lo + (hi - lo) * (band + 1) / (f->n_mels + 1));
}

double frae_mel_weight(const frae_features *f, int band, int bin)
{
    double lo = hz_to_mel(f->fmin), hi = hz_to_mel(f->fmax);
    double fl = mel_to_hz(lo + (hi - lo) * band / (f->n_mels + 1));
    double fc = mel_to_hz(lo + (hi - lo) * (band + 1) / (f->n_mels + 1));
    double fh = mel_to_hz(lo + (hi - lo) * (band + 2) / (f->n_mels + 1));
    double hz = (double)bin * f->sample_rate / f->n_fft;
    double w = fmin((hz - fl) / (fc - fl), (fh - hz) / (fh - fc));
    return w > 0 ? w : 0;
}
