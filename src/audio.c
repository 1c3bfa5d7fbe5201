/* Speech in and out: audio files (libsndfile), resampling (libsamplerate),
 * log-mel features (FFTW) and their inversion (mel pseudo-inverse, then
 * Griffin-Lim).
 *
 * Feature of frame t, mel band b:
 *   frame t covers samples [t*hop, t*hop + win), times a periodic Hann
 *   window, zero-padded to n_fft; power spectrum |X|^2;
 *   mel = triangular HTK-mel filters (peak 1) from fmin to fmax;
 *   feature = (ln(max(mel, floor)) + offset) / scale.
 * No padding at the ends: n samples give 1 + (n - win) / hop frames. */
#include <math.h>
#include <pthread.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>

#include "frae_internal.h"

#define PI 3.14159265358979323846

struct frae_mel {
    frae_features f;
    int nbins;          /* n_fft / 2 + 1 */
    float *window;      /* [win] */
    float *filters;     /* [n_mels][nbins] */
    double *pinv;       /* [nbins][n_mels]: a pseudo-inverse of filters */
    float *frame;       /* [n_fft] */
    fftwf_complex *spec; /* [nbins] */
    fftwf_plan fwd, inv;
};

/* The FFTW planner is not thread-safe; everything else here is. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

void frae_features_default(frae_features *f)
{
    f->sample_rate = 16000;
    f->n_mels = 80;
    f->hop = 160;  /* 10 ms */
    f->win = 400;  /* 25 ms */
    f->n_fft = 512;
    f->fmin = 0.0f;
    f->fmax = 8000.0f;
    f->floor = 1e-7f;
    f->offset = 5.0f;
    f->scale = 5.0f;
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
        return frae_errorf(err, errlen, "hop %d must be between 1 and the window %d",
                     f->hop, f->win);
    if (f->n_mels < 1 || f->n_mels > f->n_fft / 2)
        return frae_errorf(err, errlen, "%d mel bands for a %d-point FFT",
                     f->n_mels, f->n_fft);
    if (!(f->fmin >= 0 && f->fmin < f->fmax &&
          f->fmax <= f->sample_rate / 2.0f))
        return frae_errorf(err, errlen,
                     "mel range %g..%g Hz must fit below Nyquist (%g Hz)",
                     (double)f->fmin, (double)f->fmax, f->sample_rate / 2.0);
    if (!(f->floor > 0) || !(f->scale > 0))
        return frae_errorf(err, errlen, "feature floor and scale must be > 0");
    return 0;
}

static double hz_to_mel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }
static double mel_to_hz(double m) { return 700.0 * (pow(10.0, m / 2595.0) - 1.0); }

double frae_mel_center_hz(const frae_features *f, int band)
{
    double lo = hz_to_mel(f->fmin), hi = hz_to_mel(f->fmax);
    return mel_to_hz(lo + (hi - lo) * (band + 1) / (f->n_mels + 1));
}

/* Inverts an n x n matrix in place (Gauss-Jordan, partial pivoting). */
static int invert(double *a, int n)
{
    double *inv = calloc((size_t)n * n, sizeof *inv);
    if (!inv)
        return -1;
    for (int i = 0; i < n; i++)
        inv[(size_t)i * n + i] = 1.0;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[(size_t)r * n + c]) > fabs(a[(size_t)p * n + c]))
                p = r;
        if (fabs(a[(size_t)p * n + c]) < 1e-300) {
            free(inv);
            return -1;
        }
        for (int k = 0; k < n; k++) {
            double t = a[(size_t)c * n + k];
            a[(size_t)c * n + k] = a[(size_t)p * n + k];
            a[(size_t)p * n + k] = t;
            t = inv[(size_t)c * n + k];
            inv[(size_t)c * n + k] = inv[(size_t)p * n + k];
            inv[(size_t)p * n + k] = t;
        }
        double d = a[(size_t)c * n + c];
        for (int k = 0; k < n; k++) {
            a[(size_t)c * n + k] /= d;
            inv[(size_t)c * n + k] /= d;
        }
        for (int r = 0; r < n; r++) {
            if (r == c)
                continue;
            double f = a[(size_t)r * n + c];
            if (f == 0)
                continue;
            for (int k = 0; k < n; k++) {
                a[(size_t)r * n + k] -= f * a[(size_t)c * n + k];
                inv[(size_t)r * n + k] -= f * inv[(size_t)c * n + k];
            }
        }
    }
    memcpy(a, inv, sizeof(double) * (size_t)n * n);
    free(inv);
    return 0;
}

frae_mel *frae_mel_create(const frae_features *f, char *err, size_t errlen)
{
    if (frae_features_check(f, err, errlen))
        return NULL;
    frae_mel *m = calloc(1, sizeof *m);
    if (!m) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    m->f = *f;
    const int nb = f->n_fft / 2 + 1, nm = f->n_mels;
    m->nbins = nb;
    m->window = malloc(sizeof(float) * f->win);
    m->filters = calloc((size_t)nm * nb, sizeof(float));
    m->pinv = calloc((size_t)nb * nm, sizeof(double));
    m->frame = fftwf_malloc(sizeof(float) * f->n_fft);
    m->spec = fftwf_malloc(sizeof(fftwf_complex) * nb);
    double *mmt = calloc((size_t)nm * nm, sizeof(double));
    if (!m->window || !m->filters || !m->pinv || !m->frame || !m->spec ||
        !mmt) {
        free(mmt);
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < f->win; i++) /* periodic Hann */
        m->window[i] = (float)(0.5 - 0.5 * cos(2 * PI * i / f->win));
    double lo = hz_to_mel(f->fmin), hi = hz_to_mel(f->fmax);
    for (int b = 0; b < nm; b++) {
        double fl = mel_to_hz(lo + (hi - lo) * b / (nm + 1));
        double fc = mel_to_hz(lo + (hi - lo) * (b + 1) / (nm + 1));
        double fh = mel_to_hz(lo + (hi - lo) * (b + 2) / (nm + 1));
        for (int k = 0; k < nb; k++) {
            double hz = (double)k * f->sample_rate / f->n_fft;
            double w = fmin((hz - fl) / (fc - fl), (fh - hz) / (fh - fc));
            m->filters[(size_t)b * nb + k] = (float)(w > 0 ? w : 0);
        }
    }
    /* pinv = M^T (M M^T + lambda I)^-1, lambda small against the diagonal */
    double trace = 0;
    for (int a = 0; a < nm; a++)
        for (int b = 0; b < nm; b++) {
            double s = 0;
            for (int k = 0; k < nb; k++)
                s += (double)m->filters[(size_t)a * nb + k] *
                     m->filters[(size_t)b * nb + k];
            mmt[(size_t)a * nm + b] = s;
            if (a == b)
                trace += s;
        }
    for (int a = 0; a < nm; a++)
        mmt[(size_t)a * nm + a] += 1e-6 * trace / nm;
    if (invert(mmt, nm)) {
        free(mmt);
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "mel filterbank is singular");
        return NULL;
    }
    for (int k = 0; k < nb; k++)
        for (int b = 0; b < nm; b++) {
            double s = 0;
            for (int a = 0; a < nm; a++)
                s += (double)m->filters[(size_t)a * nb + k] *
                     mmt[(size_t)a * nm + b];
            m->pinv[(size_t)k * nm + b] = s;
        }
    free(mmt);
    pthread_mutex_lock(&planner_lock);
    m->fwd = fftwf_plan_dft_r2c_1d(f->n_fft, m->frame, m->spec, FFTW_ESTIMATE);
    m->inv = fftwf_plan_dft_c2r_1d(f->n_fft, m->spec, m->frame, FFTW_ESTIMATE);
    pthread_mutex_unlock(&planner_lock);
    if (!m->fwd || !m->inv) {
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "cannot plan a %d-point FFT", f->n_fft);
        return NULL;
    }
    return m;
}

void frae_mel_destroy(frae_mel *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&planner_lock);
    if (m->fwd)
        fftwf_destroy_plan(m->fwd);
    if (m->inv)
        fftwf_destroy_plan(m->inv);
    pthread_mutex_unlock(&planner_lock);
    fftwf_free(m->frame);
    fftwf_free(m->spec);
    free(m->window);
    free(m->filters);
    free(m->pinv);
    free(m);
}

long frae_mel_frames(const frae_mel *m, long n_samples)
{
    return n_samples < m->f.win ? 0 : 1 + (n_samples - m->f.win) / m->f.hop;
}

/* The windowed frame starting at samples[start] into m->frame, then FFT. */
static void analyse(frae_mel *m, const float *samples, long start)
{
    const frae_features *f = &m->f;
    for (int i = 0; i < f->win; i++)
        m->frame[i] = samples[start + i] * m->window[i];
    memset(m->frame + f->win, 0, sizeof(float) * (size_t)(f->n_fft - f->win));
    fftwf_execute(m->fwd);
}

void frae_mel_compute(frae_mel *m, const float *samples, long n, float *feats)
{
    const frae_features *f = &m->f;
    const long frames = frae_mel_frames(m, n);
    const int nb = m->nbins;
    for (long t = 0; t < frames; t++) {
        analyse(m, samples, t * f->hop);
        for (int b = 0; b < f->n_mels; b++) {
            double e = 0;
            const float *w = m->filters + (size_t)b * nb;
            for (int k = 0; k < nb; k++)
                if (w[k] != 0.0f)
                    e += w[k] * ((double)m->spec[k][0] * m->spec[k][0] +
                                 (double)m->spec[k][1] * m->spec[k][1]);
            double v = e > f->floor ? e : f->floor;
            feats[t * f->n_mels + b] = (float)((log(v) + f->offset) / f->scale);
        }
    }
}

/* Overlap-adds the inverse FFT of each frame's spectrum (mag, phase). */
static void synthesise(frae_mel *m, const float *mag, const float *phase,
                       long frames, float *out, long n, const float *norm)
{
    const frae_features *f = &m->f;
    const int nb = m->nbins;
    memset(out, 0, sizeof(float) * (size_t)n);
    for (long t = 0; t < frames; t++) {
        for (int k = 0; k < nb; k++) {
            m->spec[k][0] = mag[t * nb + k] * cosf(phase[t * nb + k]);
            m->spec[k][1] = mag[t * nb + k] * sinf(phase[t * nb + k]);
        }
        fftwf_execute(m->inv);
        for (int i = 0; i < f->win; i++)
            out[t * f->hop + i] += m->frame[i] / f->n_fft * m->window[i];
    }
    for (long i = 0; i < n; i++)
        out[i] = norm[i] > 1e-6f ? out[i] / norm[i] : 0.0f;
}

long frae_mel_invert(frae_mel *m, const float *feats, long frames, int iters,
                     float *samples)
{
    const frae_features *f = &m->f;
    const int nb = m->nbins, nm = f->n_mels;
    const long n = (frames - 1) * f->hop + f->win;
    float *mag = malloc(sizeof(float) * (size_t)frames * nb);
    float *phase = malloc(sizeof(float) * (size_t)frames * nb);
    float *norm = calloc((size_t)n, sizeof(float));
    if (!mag || !phase || !norm) {
        free(mag), free(phase), free(norm);
        return -1;
    }
    /* mel power -> linear power: the pseudo-inverse, clipped at zero, then
     * refined as non-negative least squares (multiplicative updates
     * lin *= M^T mel / M^T M lin), since clipping alone distorts bands */
    double *mel = malloc(sizeof(double) * nm), *fit = malloc(sizeof(double) * nm);
    double *lin = malloc(sizeof(double) * nb);
    for (long t = 0; t < frames; t++) {
        for (int b = 0; b < nm; b++)
            mel[b] = exp((double)feats[t * nm + b] * f->scale - f->offset);
        for (int k = 0; k < nb; k++) {
            double p = 0;
            for (int b = 0; b < nm; b++)
                p += m->pinv[(size_t)k * nm + b] * mel[b];
            lin[k] = p > 1e-12 ? p : 1e-12;
        }
        for (int it = 0; it < 30; it++) {
            for (int b = 0; b < nm; b++) {
                double e = 0;
                const float *w = m->filters + (size_t)b * nb;
                for (int k = 0; k < nb; k++)
                    e += w[k] * lin[k];
                fit[b] = mel[b] / (e > 1e-30 ? e : 1e-30);
            }
            for (int k = 0; k < nb; k++) {
                double num = 0, den = 0;
                for (int b = 0; b < nm; b++) {
                    double w = m->filters[(size_t)b * nb + k];
                    num += w * fit[b];
                    den += w;
                }
                if (den > 0)
                    lin[k] *= num / den;
            }
        }
        for (int k = 0; k < nb; k++)
            mag[t * nb + k] = (float)sqrt(lin[k]);
    }
    free(mel), free(fit), free(lin);
    for (long t = 0; t < frames; t++)
        for (int i = 0; i < f->win; i++)
            norm[t * f->hop + i] += m->window[i] * m->window[i];
    /* Griffin-Lim from a seeded random phase: keep the magnitude, take
     * the phase of the re-analysed signal, repeat */
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (long i = 0; i < frames * nb; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        phase[i] = (float)((rng >> 40) * (2 * PI / 16777216.0));
    }
    for (int it = 0; it < iters; it++) {
        synthesise(m, mag, phase, frames, samples, n, norm);
        for (long t = 0; t < frames; t++) {
            analyse(m, samples, t * f->hop);
            for (int k = 0; k < nb; k++)
                phase[t * nb + k] = atan2f(m->spec[k][1], m->spec[k][0]);
        }
    }
    synthesise(m, mag, phase, frames, samples, n, norm);
    free(mag), free(phase), free(norm);
    return n;
}

/* ---- audio files ---------------------------------------------------------- */

int frae_audio_read(const char *path, int rate, int resample, float **out,
                    long *n_out, char *err, size_t errlen)
{
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf)
        return frae_errorf(err, errlen, "%s: not a readable audio file (%s)", path,
                     sf_strerror(NULL));
    if (info.frames <= 0 || info.channels < 1 || info.frames > (1L << 32)) {
        sf_close(sf);
        return frae_errorf(err, errlen, "%s: no audio samples", path);
    }
    float *inter = malloc(sizeof(float) * (size_t)info.frames * info.channels);
    if (!inter) {
        sf_close(sf);
        return frae_errorf(err, errlen, "%s: out of memory", path);
    }
    sf_count_t got = sf_readf_float(sf, inter, info.frames);
    sf_close(sf);
    long n = (long)got;
    float *mono = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (long i = 0; i < n; i++) { /* mix down */
        double s = 0;
        for (int c = 0; c < info.channels; c++)
            s += inter[i * info.channels + c];
        mono[i] = (float)(s / info.channels);
    }
    free(inter);
    if (info.samplerate != rate) {
        if (!resample) {
            free(mono);
            return frae_errorf(err, errlen,
                         "%s: sample rate %d Hz, the features need %d Hz "
                         "(resampling is off)",
                         path, info.samplerate, rate);
        }
        double ratio = (double)rate / info.samplerate;
        long n2 = (long)(n * ratio) + 16;
        float *res = malloc(sizeof(float) * (size_t)n2);
        SRC_DATA d = {mono, res, n, n2, 0, 0, 0, ratio};
        int e = src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1);
        free(mono);
        if (e) {
            free(res);
            return frae_errorf(err, errlen, "%s: resampling failed: %s", path,
                         src_strerror(e));
        }
        mono = res;
        n = d.output_frames_gen;
    }
    *out = mono;
    *n_out = n;
    return 0;
}

int frae_audio_features(const char *path, const frae_features *f,
                        int resample, float **feats, long *frames, char *err,
                        size_t errlen)
{
    float *x;
    long n;
    if (frae_audio_read(path, f->sample_rate, resample, &x, &n, err, errlen))
        return -1;
    if (n < f->win) {
        free(x);
        return frae_errorf(err, errlen,
                     "%s: %ld samples, shorter than one %d-sample frame", path,
                     n, f->win);
    }
    float peak = 0;
    for (long i = 0; i < n; i++)
        peak = fabsf(x[i]) > peak ? fabsf(x[i]) : peak;
    if (!(peak > 1e-4f)) { /* -80 dBFS */
        free(x);
        return frae_errorf(err, errlen, "%s: only silence (peak %.2g)", path,
                     (double)peak);
    }
    frae_mel *m = frae_mel_create(f, err, errlen);
    if (!m) {
        free(x);
        return -1;
    }
    long t = frae_mel_frames(m, n);
    float *out = malloc(sizeof(float) * (size_t)t * f->n_mels);
    if (!out) {
        free(x);
        frae_mel_destroy(m);
        return frae_errorf(err, errlen, "%s: out of memory", path);
    }
    frae_mel_compute(m, x, n, out);
    free(x);
    frae_mel_destroy(m);
    *feats = out;
    *frames = t;
    return 0;
}

int frae_audio_write_wav(const char *path, const float *samples, long n,
                         int rate, char *err, size_t errlen)
{
    SF_INFO info = {0, rate, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 0, 0};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf)
        return frae_errorf(err, errlen, "%s: cannot write: %s", path,
                     sf_strerror(NULL));
    /* scale into range if Griffin-Lim overshoots, rather than clip */
    float peak = 0;
    for (long i = 0; i < n; i++)
        peak = fabsf(samples[i]) > peak ? fabsf(samples[i]) : peak;
    float g = peak > 0.99f ? 0.99f / peak : 1.0f;
    int bad = 0;
    float buf[1024];
    for (long i = 0; i < n && !bad; i += 1024) {
        long k = n - i < 1024 ? n - i : 1024;
        for (long j = 0; j < k; j++)
            buf[j] = samples[i + j] * g;
        bad = sf_writef_float(sf, buf, k) != k;
    }
    sf_close(sf);
    return bad ? frae_errorf(err, errlen, "%s: write failed", path) : 0;
}
