/* Harmonic-plus-noise vocoder (frae_audio.h): log-mel envelope, f0 and
 * voicing back to audio, one hop per frame, in caller-owned memory.
 *
 * The harmonics' amplitudes invert the analysis that made the features.
 * A sinusoid of amplitude A at f puts A^2/4 |W(f - f_b)|^2 into FFT bin b
 * (W: the DTFT of the Hann window), so into mel band m it puts A^2 R_m(f),
 * R_m(f) = sum_b H_m[b] |W(f - f_b)|^2 / 4.  With harmonics at f_k = k f0,
 * band m's energy P_m is shared among the harmonics it sees, N_m =
 * sum_k R_m(f_k):
 *   A_k^2 = sum_m R_m(f_k) P_m / sum_m R_m(f_k) N_m,
 * exact when a band sees one harmonic, and when the envelope is flat, and
 * weighting each band by how much of it the harmonic makes (R N, not R):
 * a valley between two harmonics, where a harmonic's response is small,
 * hardly counts, so noise there does not inflate the harmonics.
 * That fit is in power, and keeps each band's power; but the features
 * are log powers, and a codec's estimate of them (trained on their squared
 * error) is a mean in the log domain: where the speech's harmonics make
 * a peak band and valley bands beside it, the estimate is smoother, its
 * mean log the same and its power lower (the peak averaged in dB with
 * the valleys), and so was the voice fitted to it: the shipped codecs'
 * decoded speech came out 3-4 dB quieter than their input (issue 50;
 * docs/results.md).  So the fit goes on, as a deconvolution: band powers
 * P_m = sum_k R_m(f_k) A_k^2 for the A_k^2, non-negative, by FIT_ROUNDS
 * rounds of Richardson-Lucy's multiplicative update, each harmonic's
 * power scaled by the mean of P_m / h_m over the bands it reaches,
 * weighted by its response there (h_m: the harmonics' power in band m).
 * At its fixed point each harmonic's response-weighted mean of P_m / h_m
 * is one: its bands are fitted in ratio, not in power, so a quiet band
 * beside a loud one pulls as hard as the loud one, and a harmonic whose
 * bands are quiet (under a telephone band's 300 Hz) is brought down to
 * them.  On features of a harmonic sound the power fit was already there,
 * and it moves little; on a smoothed envelope it puts back the peaks the
 * smoothing took (tested: the level kept within 0.5 dB, where the power
 * fit lost 1.6).  It replaced a geometric mean over the bands a harmonic
 * holds over half of, taken half way: through a codec on training
 * speakers' clips, LSD 0-4 kHz 5.70 against 5.75
 * (docs/2026-12-04-voices.md).
 * What the harmonics leave, r_m = P_m - sum_k R_m(f_k) A_k^2 (all of P_m in
 * an unvoiced frame), is noise: white noise of variance s^2 puts
 * s^2 sum_n w_n^2 sum_b H_m[b] into band m, which sets the noise density
 * per band, interpolated to bins through the same filters.
 * Last, the frame keeps its power: the harmonics are scaled so that they
 * and the noise make sum_m P_m.  The fit gives the harmonics their shape,
 * not their level: on real voices the bands beside a harmonic hold noise,
 * which the fit counted as the harmonic's, and the vocoder came out 1.5
 * dB loud on their unquantised features (0.1 dB quiet now); what a codec's envelope lacks in power is the codec's to
 * keep (its training's level term, docs/2026-12-04-loudness.md).
 * The noise is made per FFT bin, each bin's variance interpolated from the
 * bands, in segments of two hops under a window.  Seen through that window
 * and then the analysis window, each bin's power spreads over its
 * neighbours: the features saw the input's spectrum smoothed once, and
 * would see the noise's smoothed twice, filling slopes (below a telephone
 * band's 300 Hz, between formants).  So the variances are unsmeared
 * first: UNSMEAR_ROUNDS rounds of Gold's ratio method, each bin scaled by
 * the square of its target over what the two windows make of the current
 * guess (twice the plain method's step, which converges slowly at a steep
 * slope), the last round by the plain ratio; the guess stays
 * non-negative, and a band the input left empty stays empty.
 * Each bin then gets its variance's magnitude and a random phase (as
 * sinusoidal coders' unvoiced harmonics do), not a Gaussian's random
 * magnitude too: each analysis frame sees two or three segments, whose
 * random phases already make its bands scatter from frame to frame, and
 * random magnitudes made them scatter more than real noise does (white
 * noise's 20 lowest bands: 5.43 dB against the input's 4.64; 4.91 now).
 */
#include <math.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "base/util.h" /* frae_errorf */

#define PI 3.14159265358979323846
#define LOBE 4            /* bins of the window's response kept each side */
#define OVERSAMPLE 32     /* table steps per bin */
#define VOICED_NOISE 0.1f /* of what harmonics leave in their bands */
#define FIT_ROUNDS 10     /* of the harmonics' Richardson-Lucy fit */
#define SPREAD 6 /* bins each side of the noise's spread that are kept */
#define UNSMEAR_ROUNDS 32

typedef struct {
    int band[2];
    float weight[2];
} bin_bands;

struct frae_vocoder {
    frae_features f;
    int nb, nfft, hop, kmax;
    double cut_hz, bin_hz, noise_gain;
    double max_log_power; /* features clamp here: the loudest audio's */
    uint64_t seed, rng;
    /* state carried from frame to frame */
    double phase;  /* fundamental phase, [0, 2 pi) */
    float prev_f0; /* 0: previous frame unvoiced */
    int prev_k;
    /* tables */
    bin_bands *bins;  /* [nb] the (at most two) bands of each bin */
    float *band_sum;  /* [n_mels] sum_b H_m[b] */
    float *lobe;      /* [LOBE * OVERSAMPLE + 2] |W(d)|^2 / 4 */
    float *twiddle;   /* [nfft] cos, sin pairs for nfft/2 */
    float *disp;      /* [2 kmax] each harmonic's fixed phase (cos, sin) */
    float *noise_win; /* [2 hop] the noise segments' window */
    /* [SPREAD + 1] the power spectrum a bin's noise is seen through (the
     * segments' window's and the analysis window's, convolved), sum 1 */
    float *spread;
    /* [nb + 2 SPREAD] per-bin noise variances, SPREAD mirrored bins at
     * each end: the bands' target, the unsmeared guess, the guess smeared */
    float *target, *guess, *smeared;
    /* scratch and per-frame state */
    float *amp_prev, *amp_cur;    /* [kmax] */
    float *resp;                  /* [kmax][2 (2 LOBE + 1)] band responses */
    int *resp_band;               /* [kmax][2 (2 LOBE + 1)] */
    double *power, *norm, *resid; /* [n_mels] */
    float *re, *im;               /* [nfft] */
    float *tail; /* [hop] the second half of the last noise segment */
};

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The block's layout: one function sizes it and carves it. */
static size_t layout(const frae_features *f, frae_vocoder *v, char *base)
{
    const int nb = f->n_fft / 2 + 1, nm = f->n_mels, hop = f->hop;
    const int kmax = (int)(f->sample_rate / 2 / FRAE_F0_MIN_HZ) + 1;
    const int per_k = 2 * (2 * LOBE + 1);
    size_t at = align64(sizeof(frae_vocoder));
#define CARVE(field, count)                                                    \
    do {                                                                       \
        if (v)                                                                 \
            v->field = (void *)(base + at);                                    \
        at += align64(sizeof(*v->field) * (size_t)(count));                    \
    } while (0)
    CARVE(bins, nb);
    CARVE(band_sum, nm);
    CARVE(lobe, LOBE * OVERSAMPLE + 2);
    CARVE(twiddle, f->n_fft);
    CARVE(disp, 2 * kmax);
    CARVE(noise_win, 2 * hop);
    CARVE(spread, SPREAD + 1);
    CARVE(target, nb + 2 * SPREAD);
    CARVE(guess, nb + 2 * SPREAD);
    CARVE(smeared, nb + 2 * SPREAD);
    CARVE(amp_prev, kmax);
    CARVE(amp_cur, kmax);
    CARVE(resp, kmax * per_k);
    CARVE(resp_band, kmax * per_k);
    CARVE(power, nm);
    CARVE(norm, nm);
    CARVE(resid, nm);
    CARVE(re, f->n_fft);
    CARVE(im, f->n_fft);
    CARVE(tail, hop);
#undef CARVE
    if (v)
        v->kmax = kmax;
    return at;
}

static int usable(const frae_features *f, char *err, size_t errlen)
{
    if (frae_features_check(f, err, errlen))
        return 0;
    if (f->n_fft & (f->n_fft - 1))
        return !frae_errorf(err, errlen,
                            "vocoder: FFT size %d is not a power of two",
                            f->n_fft);
    if (2 * f->hop > f->win)
        return !frae_errorf(err, errlen,
                            "vocoder: hop %d is more than half the window %d",
                            f->hop, f->win);
    return 1;
}

size_t frae_vocoder_size(const frae_features *f)
{
    return usable(f, NULL, 0) ? layout(f, NULL, NULL) : 0;
}

static void fft(frae_vocoder *v, int inverse);

/* The power spectrum of the window in v->re (v->im zero), bins 0 ..
 * nfft/2 into p; returns its sum over all nfft bins. */
static double window_power(frae_vocoder *v, float *p)
{
    fft(v, 0);
    double sum = 0;
    for (int b = 0; b < v->nb; b++) {
        p[b] = v->re[b] * v->re[b] + v->im[b] * v->im[b];
        sum += (b == 0 || b == v->nb - 1 ? 1.0 : 2.0) * p[b];
    }
    return sum;
}

/* v->spread: the noise segments' window's power spectrum convolved with
 * the analysis window's, each summing to 1.  The windows are real, so bin
 * -d has bin d's power. */
static void noise_spread(frae_vocoder *v)
{
    const int n = v->nfft;
    float *ps = v->target, *pa = v->guess; /* unused until the first frame */
    for (int i = 0; i < n; i++) {
        v->re[i] = i < 2 * v->hop ? v->noise_win[i] : 0.0f;
        v->im[i] = 0.0f;
    }
    const double sum_s = window_power(v, ps);
    for (int i = 0; i < n; i++) { /* the features' periodic Hann */
        v->re[i] = i < v->f.win
                       ? (float)(0.5 - 0.5 * cos(2 * PI * i / v->f.win))
                       : 0.0f;
        v->im[i] = 0.0f;
    }
    const double sum_a = window_power(v, pa);
    for (int d = 0; d <= SPREAD; d++) {
        double acc = 0;
        for (int j = -n / 2 + 1; j <= n / 2; j++) {
            int k = ((d - j) % n + n) % n; /* bin d - j, folded to 0 .. n/2 */
            if (k > n / 2)
                k = n - k;
            acc += (double)ps[j < 0 ? -j : j] * pa[k];
        }
        v->spread[d] = (float)(acc / (sum_s * sum_a));
    }
}

static uint64_t next_u64(uint64_t *s)
{
    /* xorshift64*: the noise needs no more */
    uint64_t x = *s;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static double uniform01(uint64_t *s)
{
    return ((next_u64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

frae_vocoder *frae_vocoder_init(void *mem, const frae_features *f,
                                uint64_t seed, char *err, size_t errlen)
{
    if (!usable(f, err, errlen))
        return NULL;
    if (!mem) {
        frae_errorf(err, errlen, "vocoder: no memory given");
        return NULL;
    }
    frae_vocoder *v = mem;
    memset(v, 0, sizeof *v);
    layout(f, v, mem);
    v->f = *f;
    v->nb = f->n_fft / 2 + 1;
    v->nfft = f->n_fft;
    v->hop = f->hop;
    v->bin_hz = (double)f->sample_rate / f->n_fft;
    v->cut_hz = fmin(f->fmax, 0.5 * f->sample_rate);
    v->seed = seed;
    v->max_log_power = frae_features_max(f) * f->scale - f->offset;
    const int nm = f->n_mels;
    for (int m = 0; m < nm; m++)
        v->band_sum[m] = 0;
    for (int b = 0; b < v->nb; b++) {
        bin_bands *bb = &v->bins[b];
        bb->band[0] = bb->band[1] = -1;
        bb->weight[0] = bb->weight[1] = 0;
        int n = 0;
        for (int m = 0; m < nm; m++) {
            double w = frae_mel_weight(f, m, b);
            if (w <= 0)
                continue;
            v->band_sum[m] += (float)w;
            if (n < 2) { /* triangles overlap pairwise: two at most */
                bb->band[n] = m;
                bb->weight[n] = (float)w;
                n++;
            }
        }
    }
    /* |W(d)|^2 / 4 for d = 0 .. LOBE bins, W the periodic Hann's DTFT */
    double wsq = 0;
    for (int i = 0; i < f->win; i++) {
        double w = 0.5 - 0.5 * cos(2 * PI * i / f->win);
        wsq += w * w;
    }
    for (int j = 0; j <= LOBE * OVERSAMPLE + 1; j++) {
        double d = (double)j / OVERSAMPLE, re = 0, im = 0;
        for (int i = 0; i < f->win; i++) {
            double w = 0.5 - 0.5 * cos(2 * PI * i / f->win);
            re += w * cos(2 * PI * d * i / f->n_fft);
            im -= w * sin(2 * PI * d * i / f->n_fft);
        }
        v->lobe[j] = (float)((re * re + im * im) / 4);
    }
    /* noise of variance s^2 per sample: s^2 * wsq in each bin */
    v->noise_gain = 1.0 / wsq;
    frae_fft_twiddles(f->n_fft, v->twiddle);
    /* the noise segments overlap by half, so their window is power-
     * complementary (w[i]^2 + w[i + hop]^2 = 1): Vorbis's, sin(pi/2 sin^2),
     * rather than a sine, whose spectrum's slow sidelobes filled the bands
     * a band-limited source leaves empty (noise lowpassed at 3.8 kHz, 70
     * dB down above 4.6 kHz, came back 7 dB filled there; 0.6 with this:
     * tests/c/test_audio.c) */
    for (int i = 0; i < 2 * f->hop; i++) {
        const double s = sin(PI * (i + 0.5) / (2 * f->hop));
        v->noise_win[i] = (float)sin(0.5 * PI * s * s);
    }
    noise_spread(v);
    /* fixed per-harmonic phases: a pulse train (all zero) has a needle-
     * like waveform; dispersed phases keep the same spectrum, smoother */
    uint64_t s = seed ^ 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < v->kmax; k++) {
        double th = 2 * PI * uniform01(&s);
        v->disp[2 * k] = (float)cos(th);
        v->disp[2 * k + 1] = (float)sin(th);
    }
    frae_vocoder_reset(v);
    return v;
}

void frae_vocoder_reset(frae_vocoder *v)
{
    v->phase = 0;
    v->prev_f0 = 0;
    v->prev_k = 0;
    v->rng = v->seed * 2 + 1;
    memset(v->amp_prev, 0, sizeof(float) * (size_t)v->kmax);
    memset(v->tail, 0, sizeof(float) * (size_t)v->hop);
}

static void fft(frae_vocoder *v, int inverse)
{
    frae_fft(v->re, v->im, v->nfft, v->twiddle, inverse);
}

/* |W(d)|^2 / 4 at d bins from the centre, 0 beyond the lobe kept. */
static float lobe_at(const frae_vocoder *v, double d)
{
    d = fabs(d) * OVERSAMPLE;
    if (d >= LOBE * OVERSAMPLE)
        return 0.0f;
    int j = (int)d;
    float t = (float)(d - j);
    return v->lobe[j] + t * (v->lobe[j + 1] - v->lobe[j]);
}

/* One round of the harmonics' fit (the file's comment): their powers a
 * (A_k^2, k < K) each scaled by sum_m R_m(f_k) P_m / h_m over sum_m
 * R_m(f_k), h_m the harmonics' power in band m.  All harmonics move
 * together (from the same h), so the result does not depend on their
 * order.  v->resid holds h. */
static void fit_round(frae_vocoder *v, int K, float *a)
{
    const int nm = v->f.n_mels, per_k = 2 * (2 * LOBE + 1);
    double *h = v->resid;
    for (int m = 0; m < nm; m++)
        h[m] = 0;
    for (int k = 0; k < K; k++) {
        const float *r = v->resp + (size_t)k * per_k;
        const int *rb = v->resp_band + (size_t)k * per_k;
        for (int j = 0; j < per_k && rb[j] >= 0; j++)
            h[rb[j]] += (double)r[j] * a[k];
    }
    for (int k = 0; k < K; k++) {
        const float *r = v->resp + (size_t)k * per_k;
        const int *rb = v->resp_band + (size_t)k * per_k;
        double num = 0, den = 0;
        for (int j = 0; j < per_k && rb[j] >= 0; j++) {
            const double hm = h[rb[j]];
            if (hm > 0) {
                num += r[j] * (v->power[rb[j]] / hm);
                den += r[j];
            }
        }
        if (den > 0)
            a[k] = (float)(a[k] * (num / den));
    }
}

/* Harmonic amplitudes of a voiced frame into amp (k < K), and what they
 * leave of each band into v->resid.  Returns K. */
static int harmonics(frae_vocoder *v, double f0, float *amp)
{
    const int nm = v->f.n_mels, per_k = 2 * (2 * LOBE + 1);
    int K = (int)(v->cut_hz / f0);
    if (K > v->kmax)
        K = v->kmax;
    for (int m = 0; m < nm; m++)
        v->norm[m] = 0;
    for (int k = 0; k < K; k++) {
        double pos = (k + 1) * f0 / v->bin_hz;
        float *r = v->resp + (size_t)k * per_k;
        int *rb = v->resp_band + (size_t)k * per_k, n = 0;
        for (int b = (int)ceil(pos - LOBE); b <= (int)floor(pos + LOBE); b++) {
            if (b < 0 || b >= v->nb)
                continue;
            float w = lobe_at(v, pos - b);
            for (int i = 0; i < 2; i++) {
                int m = v->bins[b].band[i];
                if (m < 0 || w == 0.0f)
                    continue;
                int j = 0; /* one entry per band */
                while (j < n && rb[j] != m)
                    j++;
                if (j == n) {
                    rb[n] = m, r[n] = 0, n++;
                }
                r[j] += v->bins[b].weight[i] * w;
            }
        }
        for (int j = n; j < per_k; j++)
            rb[j] = -1, r[j] = 0;
        for (int j = 0; j < n; j++)
            v->norm[rb[j]] += r[j];
    }
    /* amp holds A_k^2 until the end */
    for (int k = 0; k < K; k++) {
        const float *r = v->resp + (size_t)k * per_k;
        const int *rb = v->resp_band + (size_t)k * per_k;
        double num = 0, den = 0;
        for (int j = 0; j < per_k && rb[j] >= 0; j++) {
            num += r[j] * v->power[rb[j]];
            den += r[j] * v->norm[rb[j]];
        }
        amp[k] = (float)(den > 0 ? num / den : 0);
    }
    for (int round = 0; round < FIT_ROUNDS; round++)
        fit_round(v, K, amp);
    for (int m = 0; m < nm; m++)
        v->resid[m] = v->power[m];
    for (int k = 0; k < K; k++) {
        const float *r = v->resp + (size_t)k * per_k;
        const int *rb = v->resp_band + (size_t)k * per_k;
        const double a2 = amp[k];
        amp[k] = (float)sqrt(a2);
        for (int j = 0; j < per_k && rb[j] >= 0; j++)
            v->resid[rb[j]] -= r[j] * a2;
    }
    /* the rest of a band the harmonics reach is mostly their own spread
     * (vibrato, the analysis window's time span), not noise: noise there
     * roughens the voice and raises its valleys, so little of it is kept */
    for (int m = 0; m < nm; m++)
        v->resid[m] = v->resid[m] < 0  ? 0
                      : v->norm[m] > 0 ? VOICED_NOISE * v->resid[m]
                                       : v->resid[m];
    /* the frame's power: what the noise leaves of it, the harmonics' */
    double total = 0, noise_power = 0, harm_power = 0;
    for (int m = 0; m < nm; m++)
        total += v->power[m], noise_power += v->resid[m];
    for (int k = 0; k < K; k++) {
        const float *r = v->resp + (size_t)k * per_k;
        const int *rb = v->resp_band + (size_t)k * per_k;
        double in_bands = 0;
        for (int j = 0; j < per_k && rb[j] >= 0; j++)
            in_bands += r[j];
        harm_power += in_bands * amp[k] * amp[k];
    }
    if (harm_power > 0 && total > noise_power) {
        const float g = (float)sqrt((total - noise_power) / harm_power);
        for (int k = 0; k < K; k++)
            amp[k] *= g;
    }
    return K;
}

/* The bins' variances v->guess unsmeared (the file's comment): Gold's
 * ratio method, guess *= r, r = target / (spread * guess), which keeps the
 * guess non-negative and a bin of zero target at zero.  Squaring r doubles
 * each step; a guess off by one factor everywhere would then swing
 * between it and its inverse, so the last round takes r itself, which
 * removes such a factor.  (Measured on training speakers' clips, 32
 * squared rounds are 64 plain ones to the second decimal.) */
static void unsmear(frae_vocoder *v)
{
    const int nb = v->nb;
    const float *k = v->spread, *target = v->target + SPREAD;
    float *guess = v->guess + SPREAD, *smeared = v->smeared + SPREAD;
    for (int round = 0; round < UNSMEAR_ROUNDS; round++) {
        for (int d = 1; d <= SPREAD; d++) { /* a real spectrum's mirrors */
            guess[-d] = guess[d];
            guess[nb - 1 + d] = guess[nb - 1 - d];
        }
        for (int b = 0; b < nb; b++) {
            float acc = k[0] * guess[b];
            for (int d = 1; d <= SPREAD; d++)
                acc += k[d] * (guess[b - d] + guess[b + d]);
            smeared[b] = acc;
        }
        const int last = round == UNSMEAR_ROUNDS - 1;
        for (int b = 0; b < nb; b++)
            if (smeared[b] > 0) {
                const float r = target[b] / smeared[b];
                guess[b] *= last ? r : r * r;
            }
    }
}

/* One noise segment of two hops shaped by v->resid, overlap-added: writes
 * the hop it completes into out (adding). */
static void noise(frae_vocoder *v, float *out)
{
    const int n = v->nfft, nb = v->nb, hop = v->hop;
    float *target = v->target + SPREAD, *guess = v->guess + SPREAD;
    for (int b = 0; b < nb; b++) {
        const bin_bands *bb = &v->bins[b];
        double num = 0, den = 0;
        for (int i = 0; i < 2; i++) {
            int m = bb->band[i];
            if (m < 0)
                continue;
            num += bb->weight[i] * (v->resid[m] / v->band_sum[m]);
            den += bb->weight[i];
        }
        target[b] = guess[b] = (float)(den > 0 ? num / den * v->noise_gain : 0);
    }
    unsmear(v);
    for (int b = 0; b < nb; b++) {
        /* magnitude sqrt(N var), random phase: the inverse FFT / N then has
         * variance var per sample */
        const double mag = sqrt((double)n * guess[b]);
        const double th = 2 * PI * uniform01(&v->rng);
        if (b == 0 || b == nb - 1) { /* real bins */
            v->re[b] = (float)(mag * cos(th) * sqrt(2.0));
            v->im[b] = 0;
        } else {
            v->re[b] = (float)(mag * cos(th));
            v->im[b] = (float)(mag * sin(th));
            v->re[n - b] = v->re[b];
            v->im[n - b] = -v->im[b];
        }
    }
    fft(v, 1);
    const float inv_n = 1.0f / (float)n;
    for (int i = 0; i < hop; i++) {
        out[i] += v->tail[i] + v->re[i] * inv_n * v->noise_win[i];
        v->tail[i] = v->re[hop + i] * inv_n * v->noise_win[hop + i];
    }
}

/* One hop from the previous frame's centre to this one's. */
static void synthesize(frae_vocoder *v, double f0, float *out)
{
    const int hop = v->hop;
    int K = f0 > 0 ? harmonics(v, f0, v->amp_cur) : 0;
    if (!K)
        for (int m = 0; m < v->f.n_mels; m++)
            v->resid[m] = v->power[m];
    for (int i = 0; i < hop; i++)
        out[i] = 0;
    noise(v, out);

    /* harmonics: f0 glides between the centres when both frames are
     * voiced, else holds the voiced one's; amplitudes go linearly, from 0
     * at an onset and to 0 at an offset */
    const double fp = v->prev_f0 > 0 ? v->prev_f0 : f0;
    const double fc = f0 > 0 ? f0 : v->prev_f0;
    if (fc > 0) {
        for (int k = K; k < v->kmax; k++)
            v->amp_cur[k] = 0;
        int Kuse = K > v->prev_k ? K : v->prev_k;
        /* no harmonic may pass the cut-off while it glides */
        int Kglide = (int)(v->cut_hz / (fp > fc ? fp : fc));
        if (Kuse > Kglide)
            Kuse = Kglide;
        const double w0 = 2 * PI * fp / v->f.sample_rate;
        const double dw = 2 * PI * (fc - fp) / v->f.sample_rate / hop;
        for (int i = 0; i < hop; i++) {
            const float a = (float)i / hop;
            v->phase += w0 + dw * i;
            if (v->phase >= 2 * PI)
                v->phase -= 2 * PI * floor(v->phase / (2 * PI));
            const float c1 = (float)cos(v->phase), s1 = (float)sin(v->phase);
            float cr = 1.0f, ci = 0.0f, acc = 0.0f;
            for (int k = 0; k < Kuse; k++) {
                float t = cr * c1 - ci * s1; /* e^{j (k+1) Phi} */
                ci = cr * s1 + ci * c1;
                cr = t;
                float amp =
                    v->amp_prev[k] + a * (v->amp_cur[k] - v->amp_prev[k]);
                /* sin((k+1) Phi + theta_k) */
                acc += amp * (ci * v->disp[2 * k] + cr * v->disp[2 * k + 1]);
            }
            out[i] += acc;
        }
    }
    memcpy(v->amp_prev, v->amp_cur, sizeof(float) * (size_t)v->kmax);
    if (!K)
        memset(v->amp_prev, 0, sizeof(float) * (size_t)v->kmax);
    v->prev_k = K;
    v->prev_f0 = (float)(f0 > 0 ? f0 : 0);
}

void frae_vocoder_frame(frae_vocoder *v, const float *frame, float *out)
{
    const frae_features *f = &v->f;
    const double lo = log(f->floor);
    for (int m = 0; m < f->n_mels; m++) {
        double lp = (double)frame[m] * f->scale - f->offset;
        if (!(lp >= lo)) /* NaN, or below the floor the features keep */
            lp = lo;
        if (lp > v->max_log_power)
            lp = v->max_log_power;
        v->power[m] = exp(lp);
    }
    double f0 = frame[f->n_mels];
    int voiced = frame[f->n_mels + 1] >= 0.5f && isfinite(f0) && f0 > 0;
    if (voiced)
        f0 = f0 < FRAE_F0_MIN_HZ   ? FRAE_F0_MIN_HZ
             : f0 > FRAE_F0_MAX_HZ ? FRAE_F0_MAX_HZ
                                   : f0;
    synthesize(v, voiced ? f0 : 0.0, out);
}

void frae_vocoder_flush(frae_vocoder *v, float *out)
{
    for (int m = 0; m < v->f.n_mels; m++)
        v->power[m] = 0;
    synthesize(v, 0.0, out);
}
