/* f0 and voicing per frame: YIN (de Cheveigné and Kawahara, "YIN, a
 * fundamental frequency estimator for speech and music", JASA 111(4),
 * 2002), steps 1-5:
 *   d(tau)  = sum_{j<W} (x_j - x_{j+tau})^2, W = tau_max (the longest period)
 *   d'(tau) = d(tau) * tau / sum_{k=1..tau} d(k)   (d'(0) = 1)
 *   tau*    = the first local minimum of d' below 0.15 in [tau_min, tau_max],
 *             else the global minimum there;
 *   parabolic interpolation of d' around tau*; f0 = rate / tau*.
 * Voiced when d'(tau*) < 0.25 and the frame's mean square is above -60
 * dBFS.  Mains hum and rumble under a voice are a steady period that YIN
 * reads as the voice's at the search's floor, or they hide the voice's: a
 * frame read under 80 Hz or unvoiced is read again from the signal
 * high-passed (frae_f0_frame_dehum).  Last, a voiced frame's f0 is refined
 * on its harmonics (frae_f0_refine, below).  A frame's span is W + tau_max
 * samples centred where its feature frame is centred (t*hop + win/2), so f0
 * and the envelope describe the same instant.  Everything here is plain C
 * in the state's memory: no allocation per frame, the same bits on every
 * machine. */
#include <math.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "frae_audio.h"

#define DIP_THRESHOLD 0.15    /* YIN's absolute threshold */
#define VOICED_THRESHOLD 0.25 /* aperiodicity of a voiced frame */
#define SILENCE_POWER 1e-6    /* -60 dBFS mean square */

/* The refinement of a voiced frame's f0 (frae_f0_refine): YIN's period is
 * read where the signal repeats, which the strong low harmonics dominate;
 * a listener hears the upper ones too, which a high voice has few of under
 * 1 kHz.  The f0 is moved within +-60 cents, in 5-cent steps, to where its
 * harmonics up to 3.5 kHz (some thirty of a man's voice, six of a child's)
 * have the largest mean square-root magnitude: the span's Hann-windowed
 * spectrum, zero-padded to bins of at most REFINE_BIN_HZ, read between
 * bins linearly.  Where the chosen harmonics above the first do not stand
 * above the valleys halfway below them, there are none to read (a pure
 * tone): YIN's f0 stays.  Chosen on training clips; on the held-out
 * voices +0.0044 of STOI through the vocoder alone, +0.0025 through the
 * variable-rate codec (docs/2026-12-07-pitch-refine.md).
 * tools/pitch_refine_ref.py is its numpy reference. */
#define REFINE_HI_HZ 3500.0
#define REFINE_BIN_HZ 4.0
#define REFINE_STEPS 25
/* 2^(c/1200) for c = -60, -55, ..., 60: literal, so that no libm pow
 * rounds them differently on another machine */
static const double refine_ratio[REFINE_STEPS] = {0.9659363289248456,
                                                  0.9687300948515758,
                                                  0.9715319411536059,
                                                  0.9743418912017071,
                                                  0.9771599684342459,
                                                  0.9799861963573794,
                                                  0.9828205985452511,
                                                  0.9856631986401876,
                                                  0.9885140203528962,
                                                  0.9913730874626621,
                                                  0.9942404238175473,
                                                  0.9971160533345892,
                                                  1.0,
                                                  1.0028922878693671,
                                                  1.0057929410678534,
                                                  1.008701983790399,
                                                  1.0116194403019225,
                                                  1.0145453349375237,
                                                  1.0174796921026863,
                                                  1.0204225362734822,
                                                  1.023373891996775,
                                                  1.026333783890424,
                                                  1.029302236643492,
                                                  1.0322792750164484,
                                                  1.0352649238413776};

/* The high-pass for a second reading: an 8th-order Butterworth at 80 Hz,
 * four biquads (bilinear transform).  50 Hz hum comes out 33 dB down, 60 Hz
 * 20 dB; a voice under 80 Hz keeps its period in its harmonics.  On the
 * many voices' training clips, 7.4% of the voiced frames read under 80 Hz
 * with one reading (up to 78% of a set recorded over mains hum), 1.4% with
 * the second (docs/2026-12-07-hum.md). */
#define HIGHPASS_HZ 80.0
#define HIGHPASS_SECTIONS 4
/* 1 / (2 cos(pi (2k + 1) / 16)): the Q of each pole pair */
static const double butterworth_q[HIGHPASS_SECTIONS] = {
    0.5097955791041592, 0.6013448869350453, 0.8999762231364156,
    2.5629154477415055};

struct frae_f0 {
    int rate, tau_min, tau_max;
    int yin_alone; /* FRAE_PITCH_YIN: one reading, not refined */
    int refine;    /* every step (not FRAE_PITCH_YIN, FRAE_PITCH_YIN_HP) */
    double hp[HIGHPASS_SECTIONS][5];    /* b0 b1 b2 a1 a2 (a0 = 1) */
    double state[HIGHPASS_SECTIONS][2]; /* transposed direct form II */
    double *diff;                       /* [tau_max + 2]: d, then d' in place */
    double *x; /* [2 tau_max]: the span, non-finite samples as 0 */
    /* the refinement's spectrum: n_fft points, bins [0, n_bins) read */
    int n_fft, n_bins;
    float *window;       /* [2 tau_max]: symmetric Hann */
    float *frame;        /* [n_fft]: the windowed span, zero-padded */
    float *re, *im;      /* [n_fft / 2 + 1] */
    float *twiddle;      /* [n_fft]: frae_fft_twiddles(n_fft) */
    float *twiddle_half; /* [n_fft / 2] */
    float *root_mag;     /* [n_bins]: |X|^(1/2) */
};

static int tau_max_of(const frae_features *f)
{
    return (int)ceil(f->sample_rate / FRAE_F0_MIN_HZ);
}

int frae_f0_span(const frae_features *f) { return 2 * tau_max_of(f); }

/* The refinement's FFT: a power of two with bins of REFINE_BIN_HZ or
 * finer, at least the span */
static int refine_fft_of(const frae_features *f)
{
    int n = 2;
    while (n < 2 * tau_max_of(f) || f->sample_rate / (double)n > REFINE_BIN_HZ)
        n *= 2;
    return n;
}

/* Bins up to the highest harmonic read, and the one after it */
static int refine_bins_of(const frae_features *f)
{
    const int n = refine_fft_of(f);
    int bins = (int)(REFINE_HI_HZ * n / f->sample_rate) + 2;
    return bins < n / 2 + 1 ? bins : n / 2 + 1;
}

long frae_speech_latency(const frae_features *f, int lookahead)
{
    const int ahead = tau_max_of(f) > f->win / 2 ? tau_max_of(f) : f->win / 2;
    return ahead + (long)f->hop * (1 + (lookahead > 0 ? lookahead : 0)) +
           (FRAE_POLISH_ROUNDS > 0 ? FRAE_POLISH_DELAY(f) : 0);
}

size_t frae_f0_size(const frae_features *f)
{
    const size_t n = (size_t)refine_fft_of(f);
    return sizeof(struct frae_f0) +
           sizeof(double) * (3 * (size_t)tau_max_of(f) + 2) +
           sizeof(float) * (2 * (size_t)tau_max_of(f) + n + 2 * (n / 2 + 1) +
                            n + n / 2 + (size_t)refine_bins_of(f));
}

frae_f0 *frae_f0_init(void *mem, const frae_features *f)
{
    if (!mem || frae_features_check(f, NULL, 0))
        return NULL;
    frae_f0 *p = mem;
    p->rate = f->sample_rate;
    p->yin_alone = f->pitch == FRAE_PITCH_YIN;
    p->refine = f->pitch != FRAE_PITCH_YIN && f->pitch != FRAE_PITCH_YIN_HP;
    p->tau_max = tau_max_of(f);
    p->tau_min = (int)floor(f->sample_rate / FRAE_F0_MAX_HZ);
    if (p->tau_min < 2)
        p->tau_min = 2;
    p->diff = (double *)(p + 1);
    p->x = p->diff + p->tau_max + 2;
    p->n_fft = refine_fft_of(f);
    p->n_bins = refine_bins_of(f);
    p->window = (float *)(p->x + 2 * p->tau_max);
    p->frame = p->window + 2 * p->tau_max;
    p->re = p->frame + p->n_fft;
    p->im = p->re + p->n_fft / 2 + 1;
    p->twiddle = p->im + p->n_fft / 2 + 1;
    p->twiddle_half = p->twiddle + p->n_fft;
    p->root_mag = p->twiddle_half + p->n_fft / 2;
    const int span = 2 * p->tau_max;
    for (int j = 0; j < span; j++) /* numpy's hanning(span) */
        p->window[j] = (float)(0.5 - 0.5 * cos(2 * 3.14159265358979323846 * j /
                                               (span - 1)));
    frae_fft_twiddles(p->n_fft, p->twiddle);
    frae_fft_twiddles(p->n_fft / 2, p->twiddle_half);
    const double k = tan(3.14159265358979323846 * HIGHPASS_HZ / p->rate);
    for (int i = 0; i < HIGHPASS_SECTIONS; i++) {
        const double kq = k / butterworth_q[i];
        const double norm = 1.0 / (1.0 + kq + k * k);
        p->hp[i][0] = norm, p->hp[i][1] = -2.0 * norm, p->hp[i][2] = norm;
        p->hp[i][3] = 2.0 * (k * k - 1.0) * norm;
        p->hp[i][4] = (1.0 - kq + k * k) * norm;
        p->state[i][0] = p->state[i][1] = 0.0;
    }
    return p;
}

void frae_f0_filter(frae_f0 *p, const float *in, float *out, long n)
{
    for (long j = 0; j < n; j++) {
        double v = isfinite(in[j]) ? in[j] : 0.0;
        for (int i = 0; i < HIGHPASS_SECTIONS; i++) {
            const double *c = p->hp[i];
            double *z = p->state[i];
            const double y = c[0] * v + z[0];
            z[0] = c[1] * v - c[3] * y + z[1];
            z[1] = c[2] * v - c[4] * y;
            /* a long silence decays the state into denormals, which are
             * slow; below any sample's resolution they are zero */
            if (fabs(z[0]) < 1e-30)
                z[0] = 0.0;
            if (fabs(z[1]) < 1e-30)
                z[1] = 0.0;
            v = y;
        }
        out[j] = (float)v;
    }
}

static void yin(frae_f0 *p, const float *span, float *f0, float *voiced)
{
    const int W = p->tau_max, tmax = p->tau_max, tmin = p->tau_min;
    double *d = p->diff, *x = p->x, power = 0;
    for (int j = 0; j < 2 * W; j++) /* a bad sample is silence, not NaN */
        x[j] = isfinite(span[j]) ? span[j] : 0.0;
    for (int j = 0; j < W; j++)
        power += x[j] * x[j];
    power /= W;
    d[0] = 1.0;
    double running = 0;
    for (int tau = 1; tau <= tmax; tau++) {
        /* four chains, summed in a fixed order: the same bits everywhere,
         * and four times the throughput of one */
        const double *y = x + tau;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int j = 0;
        for (; j + 4 <= W; j += 4) {
            double a0 = x[j] - y[j], a1 = x[j + 1] - y[j + 1];
            double a2 = x[j + 2] - y[j + 2], a3 = x[j + 3] - y[j + 3];
            s0 += a0 * a0, s1 += a1 * a1, s2 += a2 * a2, s3 += a3 * a3;
        }
        for (; j < W; j++)
            s0 += (x[j] - y[j]) * (x[j] - y[j]);
        const double s = (s0 + s1) + (s2 + s3);
        running += s;
        /* cumulative mean normalisation; a silent prefix has no period */
        d[tau] = running > 1e-300 ? s * tau / running : 1.0;
    }
    int best = -1;
    for (int tau = tmin; tau <= tmax; tau++) {
        if (d[tau] < DIP_THRESHOLD) {
            while (tau + 1 <= tmax && d[tau + 1] < d[tau])
                tau++;
            best = tau;
            break;
        }
    }
    if (best < 0) {
        best = tmin;
        for (int tau = tmin + 1; tau <= tmax; tau++)
            if (d[tau] < d[best])
                best = tau;
    }
    double period = best, dip = d[best];
    if (best > tmin && best < tmax) {
        double a = d[best - 1], b = d[best], c = d[best + 1];
        double den = a - 2 * b + c;
        if (den > 0) {
            double shift = 0.5 * (a - c) / den;
            if (shift > -1 && shift < 1) {
                period += shift;
                dip = b - 0.25 * (a - c) * shift;
            }
        }
    }
    int is_voiced = dip < VOICED_THRESHOLD && power > SILENCE_POWER;
    double hz = p->rate / period;
    if (hz < FRAE_F0_MIN_HZ)
        hz = FRAE_F0_MIN_HZ;
    if (hz > FRAE_F0_MAX_HZ)
        hz = FRAE_F0_MAX_HZ;
    *f0 = is_voiced ? (float)hz : 0.0f;
    *voiced = is_voiced ? 1.0f : 0.0f;
}

/* The mean |X|^(1/2) at (k - shift) hz over the harmonics k = first,
 * first + 1, ... up to hi: shift 0 reads the harmonics, 0.5 the valleys
 * below them; -1 if there are none. */
static double harmonic_mean(const frae_f0 *p, double hz, int first, double hi,
                            double shift)
{
    const int harmonics = (int)(hi / hz);
    double sum = 0;
    for (int k = first; k <= harmonics; k++) {
        const double at = (k - shift) * hz * p->n_fft / p->rate;
        const int bin = (int)at;
        const double frac = at - bin;
        sum +=
            p->root_mag[bin] + frac * (p->root_mag[bin + 1] - p->root_mag[bin]);
    }
    return harmonics >= first ? sum / (harmonics - first + 1) : -1.0;
}

float frae_f0_refine(frae_f0 *p, const float *span, float f0)
{
    if (!(f0 >= FRAE_F0_MIN_HZ && f0 <= FRAE_F0_MAX_HZ))
        return f0; /* unvoiced (0), or not a reading */
    const int n_span = 2 * p->tau_max;
    for (int j = 0; j < n_span; j++)
        p->frame[j] = (isfinite(span[j]) ? span[j] : 0.0f) * p->window[j];
    for (int j = n_span; j < p->n_fft; j++)
        p->frame[j] = 0.0f;
    frae_fft_real(p->frame, p->re, p->im, p->n_fft, p->twiddle_half,
                  p->twiddle);
    for (int k = 0; k < p->n_bins; k++)
        p->root_mag[k] =
            sqrtf(sqrtf(p->re[k] * p->re[k] + p->im[k] * p->im[k]));
    const double hi =
        REFINE_HI_HZ < 0.45 * p->rate ? REFINE_HI_HZ : 0.45 * p->rate;
    double best_score = -1.0, best = f0;
    for (int i = 0; i < REFINE_STEPS; i++) {
        const double hz = f0 * refine_ratio[i];
        if (hz < FRAE_F0_MIN_HZ || hz > FRAE_F0_MAX_HZ)
            continue;
        const double score = harmonic_mean(p, hz, 1, hi, 0.0);
        if (score > best_score)
            best_score = score, best = hz;
    }
    /* harmonics above the first that do not stand above the valleys below
     * them (a pure tone, or no voice in the band) say nothing of the
     * period: YIN's reading stands */
    if (!(harmonic_mean(p, best, 2, hi, 0.0) >
          harmonic_mean(p, best, 2, hi, 0.5)))
        return f0;
    return (float)best;
}

void frae_f0_frame(frae_f0 *p, const float *span, float *f0, float *voiced)
{
    yin(p, span, f0, voiced);
    if (p->refine)
        *f0 = frae_f0_refine(p, span, *f0);
}

void frae_f0_frame_dehum(frae_f0 *p, const float *span, const float *highpassed,
                         float *f0, float *voiced)
{
    yin(p, span, f0, voiced);
    if (p->yin_alone)
        return;
    if (*voiced != 0.0f && *f0 >= HIGHPASS_HZ) {
        /* a voice over the hum's range: the whole band is the better
           evidence, and clean speech reads as it always did */
        if (p->refine)
            *f0 = frae_f0_refine(p, span, *f0);
        return;
    }
    float hz, v;
    yin(p, highpassed, &hz, &v);
    /* read under 80 Hz: the high-passed reading stands, voiced or not (a
     * voice under 80 Hz keeps its period in its harmonics).  Unvoiced:
     * rumble may hide a voice, but residual hum in a pause is not one */
    if (*voiced != 0.0f || (v != 0.0f && hz >= HIGHPASS_HZ))
        *f0 = hz, *voiced = v;
    if (p->refine)
        *f0 = frae_f0_refine(p, span, *f0);
}
