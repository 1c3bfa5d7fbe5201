/* The vocoder's samples polished (audio_internal.h, frae_polish): made to
 * analyse back to the mel powers they were made from.
 *
 * A parametric vocoder's noise has random phases, so the frames of its
 * audio, analysed again, scatter about their targets: the decoded audio's
 * spectrum is further from the input's than the decoded features are.
 * Each round here analyses the frame's window and the two before it (the
 * frames that reach its samples), scales every FFT bin so that each mel
 * band's power meets its target (a bin's gain is its bands' power ratios
 * averaged by the filters' weights), and overlap-adds the frames back
 * (least squares, window-weighted), pulled towards the samples as they
 * were where few windows reach; the frame's window is then given back
 * the power its features ask for, which the overlap-add of frames that
 * disagree cancels in part.  In a voiced frame the bins under
 * VOICED_DOWN_HZ are only ever turned down, and by the power ratio of
 * each band and its two neighbours together.  A frame's targets are its
 * log mel powers taken a little towards its neighbours' (NEIGHBOUR), and
 * raised by the power that smoothing takes from speech on average
 * (SMOOTHING_LOSS).
 * Samples before the frame's start are final and stay, and its first
 * half hop is eased in from the last round's.  Frames are polished one at
 * a time, once the vocoder has given their whole window, so the audio
 * comes FRAE_POLISH_DELAY samples (22.5 ms at the defaults) after the
 * vocoder's.  docs/2026-12-06-polish.md and docs/2026-12-07-polish-down.md
 * have what it buys.
 *
 * Nothing is allocated after create; a NaN feature counts as the floor,
 * one above frae_features_max as that. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "io/formats.h" /* frae_errorf */

#define PI 3.14159265358979323846

/* the pull towards the samples as they were, against a window's squared
 * sum of about 0.94 where every frame reaches (Hann 400, hop 160) */
#define PULL 0.1f
/* the most a bin's power is scaled in a round (40 dB): the vocoder's
 * silence is not blown up into noise */
#define MAX_GAIN2 1e4
/* the most a round scales a frame's power back up or down (6 dB) */
#define MAX_LEVEL 4.0
/* in a voiced frame the bins below this are the vocoder's harmonics and
 * the valleys between them, and are only turned down, by three bands'
 * power ratio at a time, so that a harmonic and the valley beside it go
 * down together: raised, the valleys filled and blurred the harmonics
 * (10 points more of the synthetic voices' voiced frames read unvoiced);
 * turned down band by band, the harmonics sank into the valleys (2.5
 * points more of the held-out voices' frames read unvoiced with the
 * fixed 1.6 kbit/s codec); held at a gain of 1, half the polish's STOI
 * was lost (docs/2026-12-07-polish-down.md) */
#define VOICED_DOWN_HZ 1000.0

/* each neighbour's share of a frame's target log mel powers: the decoded
 * features scatter from frame to frame about the input's (each frame's
 * latent quantised apart), and the next frame is at hand (the polish
 * waits for the vocoder's samples two frames on); speech-vbr's held-out
 * STOI +0.003 (docs/2026-12-07-polish-down.md, -level.md) */
#define NEIGHBOUR (0.4 / 3)
/* what smoothing logs costs in power (0.25 dB, in nepers), given back: the
 * mean of logs is under the log of the mean, and speech's log mel powers
 * move from frame to frame (its syllables, a codec's scatter), so the
 * targets came out 0.23-0.28 dB under the decoded features' power with
 * each of the four shipped models (training speakers' clips, 0.09 dB
 * from clip to clip), and the fixed codec's compressed takes past
 * tests/speech_level_test.py's bar.  A constant, so that the envelopes
 * over time, which STOI correlates, are only scaled: a ratio of running
 * averages, which moves with the scatter, cost half the smoothing's STOI
 * (docs/2026-12-07-polish-level.md) */
#define SMOOTHING_LOSS (0.25 / 10 * 2.302585092994046)

/* frames from `at` on whose targets are held: the vocoder's samples reach
 * a frame's window's end (win/2 past its centre) two frames later */
#define SLOTS_AHEAD 4
/* frames of samples the buffer has room for past what a frame needs, so
 * that its samples slide back (a copy) once in so many frames, not every
 * frame */
#define SLIDE_FRAMES 32

struct frae_polish {
    frae_features f;
    int nb;                  /* n_fft / 2 + 1 */
    int rounds, context;     /* frames before a frame whose windows reach it */
    long cap, most;          /* samples the buffer holds; a call gives */
    float *sig, *acc, *wsum; /* [cap]: sig[0] is sample `start` */
    int slots;               /* context + SLOTS_AHEAD */
    double *target;    /* [slots][n_mels] mel powers, frame t's at t % slots */
    double *log_power; /* [slots][n_mels] the features', likewise */
    unsigned char *voiced;         /* [slots] likewise */
    int voiced_bins;               /* bins below VOICED_DOWN_HZ */
    double *ratio, *num, *bin_sum; /* [n_mels], [nb], [nb] */
    double *power, *wide;   /* [n_mels] a frame's band powers; the ratios of
                           * each band and its neighbours together */
    float *window;          /* [win] periodic Hann, as the features' */
    float *filters;         /* [n_mels][nb] frae_mel_weight's */
    int *band_lo, *band_hi; /* each filter's nonzero bins: [lo, hi) */
    float *twiddle, *half, *frame; /* [n_fft]; [n_fft / 2]; [n_fft] */
    float *re, *im;                /* [nb] a frame's spectrum */
    float *ramp;                   /* [hop / 2] raised cosine, 0 to 1 */
    double max_log_power;
    long start, have; /* the buffer's first sample, and how many it holds */
    long at, frames;  /* the next frame to polish; frames given so far */
    long targeted;    /* frames whose targets are final */
};

void frae_polish_destroy(frae_polish *p)
{
    if (!p)
        return;
    free(p->sig), free(p->acc), free(p->wsum);
    free(p->window), free(p->filters), free(p->band_lo), free(p->band_hi);
    free(p->twiddle), free(p->half), free(p->frame);
    free(p->re), free(p->im), free(p->ramp);
    free(p->power), free(p->wide);
    free(p->target), free(p->log_power), free(p->voiced), free(p->ratio),
        free(p->num), free(p->bin_sum);
    free(p);
}

void frae_polish_reset(frae_polish *p)
{
    p->start = p->have = 0;
    p->at = p->frames = p->targeted = 0;
}

frae_polish *frae_polish_create(const frae_features *f, int rounds, char *err,
                                size_t errlen)
{
    if (f->n_fft & (f->n_fft - 1)) {
        frae_errorf(err, errlen, "polish: FFT size %d is not a power of two",
                    f->n_fft);
        return NULL;
    }
    frae_polish *p = calloc(1, sizeof *p);
    if (!p) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    p->f = *f;
    const int nb = p->nb = f->n_fft / 2 + 1, nm = f->n_mels;
    p->rounds = rounds < 0 ? 0 : rounds;
    p->context = (f->win - 1) / f->hop;
    /* the context's samples, a window, and what one push brings (the
     * vocoder's end: under a window, and a hop a frame) */
    p->most = (long)(p->context + 2) * f->hop + 2L * f->win;
    p->cap = p->most + (long)SLIDE_FRAMES * f->hop;
    p->slots = p->context + SLOTS_AHEAD;
    p->sig = malloc(sizeof(float) * (size_t)p->cap);
    p->acc = malloc(sizeof(float) * (size_t)p->cap);
    p->wsum = malloc(sizeof(float) * (size_t)p->cap);
    p->target = malloc(sizeof(double) * (size_t)p->slots * (size_t)nm);
    p->log_power = malloc(sizeof(double) * (size_t)p->slots * (size_t)nm);
    p->voiced = calloc((size_t)p->slots, 1);
    p->ratio = malloc(sizeof(double) * (size_t)nm);
    p->power = malloc(sizeof(double) * (size_t)nm);
    p->wide = malloc(sizeof(double) * (size_t)nm);
    p->num = malloc(sizeof(double) * (size_t)nb);
    p->bin_sum = calloc((size_t)nb, sizeof(double));
    p->window = malloc(sizeof(float) * (size_t)f->win);
    p->filters = malloc(sizeof(float) * (size_t)nm * (size_t)nb);
    p->band_lo = malloc(sizeof(int) * (size_t)nm);
    p->band_hi = malloc(sizeof(int) * (size_t)nm);
    p->twiddle = malloc(sizeof(float) * (size_t)f->n_fft);
    p->half = malloc(sizeof(float) * (size_t)(f->n_fft / 2));
    p->frame = malloc(sizeof(float) * (size_t)f->n_fft);
    p->re = malloc(sizeof(float) * (size_t)nb);
    p->im = malloc(sizeof(float) * (size_t)nb);
    p->ramp = malloc(sizeof(float) * (size_t)(f->hop / 2 + 1));
    if (!p->sig || !p->acc || !p->wsum || !p->target || !p->log_power ||
        !p->voiced || !p->ratio || !p->power || !p->wide || !p->num ||
        !p->bin_sum || !p->window || !p->filters || !p->band_lo ||
        !p->band_hi || !p->twiddle || !p->half || !p->frame || !p->re ||
        !p->im || !p->ramp) {
        frae_polish_destroy(p);
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < f->win; i++)
        p->window[i] = (float)(0.5 - 0.5 * cos(2 * PI * i / f->win));
    for (int b = 0; b < nm; b++) {
        p->band_lo[b] = nb, p->band_hi[b] = 0;
        for (int k = 0; k < nb; k++) {
            const float w = (float)frae_mel_weight(f, b, k);
            p->filters[(size_t)b * nb + k] = w;
            p->bin_sum[k] += w;
            if (w != 0.0f) {
                p->band_lo[b] = k < p->band_lo[b] ? k : p->band_lo[b];
                p->band_hi[b] = k + 1;
            }
        }
        if (p->band_hi[b] == 0)
            p->band_lo[b] = 0;
    }
    frae_fft_twiddles(f->n_fft, p->twiddle);
    p->voiced_bins = (int)ceil(VOICED_DOWN_HZ * f->n_fft / f->sample_rate);
    frae_fft_twiddles(f->n_fft / 2, p->half);
    for (int j = 0; j < f->hop / 2; j++)
        p->ramp[j] = (float)(0.5 - 0.5 * cos(PI * (j + 0.5) / (f->hop / 2)));
    p->max_log_power = frae_features_max(f) * f->scale - f->offset;
    frae_polish_reset(p);
    return p;
}

long frae_polish_max(const frae_polish *p) { return p->most; }

/* Frame t's target mel powers (t from `at - context` to `frames - 1`). */
static double *target_of(frae_polish *p, long t)
{
    return p->target + (size_t)(t % p->slots) * (size_t)p->f.n_mels;
}

/* Frame u's targets made final: its log mel powers taken NEIGHBOUR of the
 * way to each neighbour's (its own where the sequence has none), raised by
 * SMOOTHING_LOSS. */
static void target_frame(frae_polish *p, long u)
{
    const int nm = p->f.n_mels;
    const size_t slots = (size_t)p->slots;
    const double *at = p->log_power + (size_t)u % slots * nm;
    const double *before =
        u > 0 ? p->log_power + (size_t)(u - 1) % slots * nm : at;
    const double *after =
        u + 1 < p->frames ? p->log_power + (size_t)(u + 1) % slots * nm : at;
    double *want = target_of(p, u);
    for (int b = 0; b < nm; b++)
        want[b] = exp(at[b] + NEIGHBOUR * (before[b] - at[b]) +
                      NEIGHBOUR * (after[b] - at[b]) + SMOOTHING_LOSS);
    p->targeted = u + 1;
}

/* x[0..win) windowed into p->frame, its spectrum into p->re, p->im. */
static void analyse(frae_polish *p, const float *x)
{
    const frae_features *f = &p->f;
    for (int i = 0; i < f->win; i++)
        p->frame[i] = x[i] * p->window[i];
    memset(p->frame + f->win, 0, sizeof(float) * (size_t)(f->n_fft - f->win));
    frae_fft_real(p->frame, p->re, p->im, f->n_fft, p->half, p->twiddle);
}

/* Band b's power in the spectrum analyse left. */
static double band_power(const frae_polish *p, int b)
{
    const float *w = p->filters + (size_t)b * p->nb;
    const float *re = p->re, *im = p->im;
    double e = 0;
    for (int k = p->band_lo[b]; k < p->band_hi[b]; k++)
        e += w[k] * ((double)re[k] * re[k] + (double)im[k] * im[k]);
    return e;
}

/* One round over frame `at`'s window and the frames before it that reach
 * its samples: the samples from `at`'s start on are replaced. */
static void polish_round(frae_polish *p)
{
    const frae_features *f = &p->f;
    const int nb = p->nb, nm = f->n_mels, n = f->n_fft;
    const long from = p->at * f->hop - p->start; /* the first not final */
    const long to = from + f->win;
    float *re = p->re, *im = p->im, *x = p->frame;
    memset(p->acc + from, 0, sizeof(float) * (size_t)f->win);
    memset(p->wsum + from, 0, sizeof(float) * (size_t)f->win);
    const long first = p->at - p->context > 0 ? p->at - p->context : 0;
    for (long t = first; t <= p->at; t++) {
        const long s = t * f->hop - p->start;
        analyse(p, p->sig + s);
        const double *want = target_of(p, t);
        for (int b = 0; b < nm; b++) {
            const double e = p->power[b] = band_power(p, b);
            p->ratio[b] = want[b] / (e > 1e-30 ? e : 1e-30);
        }
        const int voiced = p->voiced[t % p->slots];
        if (voiced) /* each band's ratio over it and its neighbours, for
                     * the bands that reach the bins under VOICED_DOWN_HZ */
            for (int b = 0; b < nm; b++) {
                if (p->band_lo[b] >= p->voiced_bins)
                    continue;
                double w = 0, e = 0;
                for (int j = b > 0 ? b - 1 : 0; j <= b + 1 && j < nm; j++)
                    w += want[j], e += p->power[j];
                p->wide[b] = w / (e > 1e-30 ? e : 1e-30);
            }
        /* each bin's gain: its bands' ratios by the filters' weights */
        const int down_to = voiced ? p->voiced_bins : 0;
        memset(p->num, 0, sizeof(double) * (size_t)nb);
        for (int b = 0; b < nm; b++) {
            const float *w = p->filters + (size_t)b * nb;
            for (int k = p->band_lo[b]; k < p->band_hi[b]; k++)
                p->num[k] += w[k] * (k < down_to ? p->wide[b] : p->ratio[b]);
        }
        for (int k = 0; k < nb; k++) {
            double g2 = p->bin_sum[k] > 0 ? p->num[k] / p->bin_sum[k] : 1.0;
            g2 = g2 < MAX_GAIN2 ? g2 : MAX_GAIN2;
            if (k < down_to && g2 > 1.0)
                g2 = 1.0;
            const float g = (float)sqrt(g2);
            re[k] *= g;
            im[k] *= g;
        }
        frae_fft_real_inverse(re, im, x, n, p->half, p->twiddle);
        for (int i = 0; i < f->win; i++) {
            if (s + i < from)
                continue;
            const float w = p->window[i];
            p->acc[s + i] += x[i] / n * w;
            p->wsum[s + i] += w * w;
        }
    }
    for (long i = from; i < to; i++)
        p->acc[i] = (p->acc[i] + PULL * p->sig[i]) / (p->wsum[i] + PULL);
    /* where the frames disagree their overlap-add cancels some power: the
     * frame's window (all of it not final) is given back the power its
     * features ask for, within MAX_LEVEL */
    const double *target = target_of(p, p->at);
    double want = 0, got = 0;
    analyse(p, p->acc + from);
    for (int b = 0; b < nm; b++)
        want += target[b], got += band_power(p, b);
    double g2 = got > 1e-30 ? want / got : 1.0;
    g2 = g2 < MAX_LEVEL ? (g2 > 1 / MAX_LEVEL ? g2 : 1 / MAX_LEVEL) : MAX_LEVEL;
    const float g = (float)sqrt(g2);
    /* the first samples eased from the last round's to this one's, which
     * need not meet the final ones before them: a step there would splash
     * over every band (35 dB below the speech, up to 8 kHz) */
    const int ease = f->hop / 2;
    for (long i = from; i < to; i++) {
        const float v = g * p->acc[i];
        const long j = i - from;
        p->sig[i] = j < ease ? p->sig[i] + p->ramp[j] * (v - p->sig[i]) : v;
    }
}

/* Polishes frame `at`, writes its first hop (now final) to out, and
 * moves on to the next. */
static long polish_frame(frae_polish *p, float *out)
{
    const frae_features *f = &p->f;
    for (int r = 0; r < p->rounds; r++)
        polish_round(p);
    const long from = p->at * f->hop - p->start;
    memcpy(out, p->sig + from, sizeof(float) * (size_t)f->hop);
    p->at++;
    return f->hop;
}

/* Room for n more samples: those no frame to polish reaches are dropped,
 * the rest slide to the buffer's start (once in SLIDE_FRAMES frames). */
static void make_room(frae_polish *p, long n)
{
    const long start = (p->at - p->context) * p->f.hop;
    if (p->have + n <= p->cap || start <= p->start)
        return;
    const long drop = start - p->start;
    memmove(p->sig, p->sig + drop, sizeof(float) * (size_t)(p->have - drop));
    p->start = start;
    p->have -= drop;
}

long frae_polish_push(frae_polish *p, const float *samples, long n,
                      const float *feats, int last, float *out)
{
    const frae_features *f = &p->f;
    make_room(p, n);
    if (n > p->cap - p->have) /* never at frae_audio_out's pace */
        n = p->cap - p->have;
    memcpy(p->sig + p->have, samples, sizeof(float) * (size_t)n);
    p->have += n;
    if (feats && p->frames - p->at < SLOTS_AHEAD) {
        const long t = p->frames++;
        p->voiced[t % p->slots] = feats[f->n_mels + 1] >= 0.5f;
        double *log_power = p->log_power + (size_t)(t % p->slots) * f->n_mels;
        for (int b = 0; b < f->n_mels; b++) {
            double lp = (double)feats[b] * f->scale - f->offset;
            if (isnan(lp)) /* junk: the floor; beyond what audio gives: that */
                lp = log(f->floor);
            log_power[b] = lp < p->max_log_power ? lp : p->max_log_power;
        }
        if (t > 0)
            target_frame(p, t - 1);
    }
    if (last && p->targeted < p->frames) /* the last frame has no next */
        target_frame(p, p->frames - 1);
    long got = 0;
    while (p->at < p->targeted && p->at * f->hop + f->win <= p->start + p->have)
        got += polish_frame(p, out + got);
    if (last) { /* the rest is final as it stands */
        const long from = p->at * f->hop - p->start;
        if (p->have > from) {
            memcpy(out + got, p->sig + from,
                   sizeof(float) * (size_t)(p->have - from));
            got += p->have - from;
        }
        frae_polish_reset(p);
    }
    return got;
}
