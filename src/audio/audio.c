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
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fftw3.h>

#include "frae_audio.h"
#include "audio/audio_internal.h"
#include "io/formats.h" /* frae_errorf, atomic files */

#define PI 3.14159265358979323846

struct frae_mel {
    frae_features f;
    int nbins;          /* n_fft / 2 + 1 */
    float *window;      /* [win] */
    float *filters;     /* [n_mels][nbins] */
    int *band_lo, *band_hi; /* each filter's nonzero bins: [lo, hi) */
    double *pinv;       /* [nbins][n_mels]: a pseudo-inverse of filters,
                           made by the first frae_mel_invert */
    float *frame;       /* [n_fft] */
    fftwf_complex *spec; /* [nbins] */
    fftwf_plan fwd, inv;
};

/* The FFTW planner is not thread-safe; everything else here is. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* pinv = M^T (M M^T + lambda I)^-1, lambda small against the diagonal:
 * only inversion needs it, so features never pay for it. */
static int make_pinv(frae_mel *m)
{
    const int nb = m->nbins, nm = m->f.n_mels;
    m->pinv = calloc((size_t)nb * nm, sizeof(double));
    double *mmt = calloc((size_t)nm * nm, sizeof(double));
    if (!m->pinv || !mmt) {
        free(mmt), free(m->pinv);
        m->pinv = NULL;
        return -1;
    }
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
        free(mmt), free(m->pinv);
        m->pinv = NULL;
        return -1;
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
    m->band_lo = calloc((size_t)nm, sizeof(int));
    m->band_hi = calloc((size_t)nm, sizeof(int));
    m->frame = fftwf_malloc(sizeof(float) * f->n_fft);
    m->spec = fftwf_malloc(sizeof(fftwf_complex) * nb);
    if (!m->window || !m->filters || !m->frame || !m->spec || !m->band_lo ||
        !m->band_hi) {
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < f->win; i++) /* periodic Hann */
        m->window[i] = (float)(0.5 - 0.5 * cos(2 * PI * i / f->win));
    for (int b = 0; b < nm; b++) {
        for (int k = 0; k < nb; k++) {
            double w = frae_mel_weight(f, b, k);
            m->filters[(size_t)b * nb + k] = (float)w;
            if (w > 0 && (float)w != 0.0f) {
                if (m->band_hi[b] == 0)
                    m->band_lo[b] = k;
                m->band_hi[b] = k + 1;
            }
        }
    }
    int empty = 1;
    for (int b = 0; b < nm; b++)
        empty &= m->band_hi[b] == 0;
    if (empty) {
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "mel filterbank is singular");
        return NULL;
    }
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
    free(m->band_lo);
    free(m->band_hi);
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

/* The features of the frame of win samples at samples[0]. */
static void mel_frame(frae_mel *m, const float *samples, float *feats)
{
    const frae_features *f = &m->f;
    const int nb = m->nbins;
    analyse(m, samples, 0);
    for (int b = 0; b < f->n_mels; b++) {
        double e = 0;
        const float *w = m->filters + (size_t)b * nb;
        /* the filter's nonzero span, in order: the same sum as every bin */
        for (int k = m->band_lo[b]; k < m->band_hi[b]; k++)
            if (w[k] != 0.0f)
                e += w[k] * ((double)m->spec[k][0] * m->spec[k][0] +
                             (double)m->spec[k][1] * m->spec[k][1]);
        double v = e > f->floor ? e : f->floor;
        feats[b] = (float)((log(v) + f->offset) / f->scale);
    }
}

void frae_mel_compute(frae_mel *m, const float *samples, long n, float *feats)
{
    const long frames = frae_mel_frames(m, n);
    for (long t = 0; t < frames; t++)
        mel_frame(m, samples + t * m->f.hop, feats + t * m->f.n_mels);
}

/* ---- Griffin-Lim, in blocks ------------------------------------------------
 * The window holds frames first .. first + frames - 1 of the signal: the
 * first `committed` are final (the context: those whose windows reach
 * past the first frame not final), the rest are being refined.  Once it
 * holds a block and its look-ahead beyond the context, the block runs:
 * iters rounds of synthesis over the window (context included, fixed) and
 * analysis of the frames not final, then the block's frames are final,
 * and so is every sample no later frame's window reaches.  The window then
 * slides, keeping the context and the look-ahead (with its phases). */
struct frae_gl {
    frae_mel *mel;      /* plans, filters, window and pseudo-inverse */
    int own_mel;        /* made by frae_gl_create (else the caller's) */
    int iters, block, lookahead, context, cap; /* frames */
    float *mag, *phase; /* [cap][nbins] the window's frames */
    float *signal, *norm; /* [(cap - 1) hop + win] the window's samples */
    double *mel_power, *fit, *lin; /* a frame's NNLS: [n_mels], [nbins] */
    /* the filters by bin, their nonzero weights only (a bin is in one or
     * two bands): bin k's are pairs bin_at[k] .. bin_at[k + 1] - 1 */
    int *bin_at, *pair_band;
    float *pair_weight;
    double *bin_sum;    /* [nbins] sum over bands of bin k's weight */
    double max_log_power;
    long first;         /* the window's first frame, over the signal */
    int frames, committed;
    uint64_t rng;
};

static long gl_span(const frae_gl *g, int frames)
{
    return frames ? (long)(frames - 1) * g->mel->f.hop + g->mel->f.win : 0;
}

void frae_gl_reset(frae_gl *g)
{
    g->first = 0;
    g->frames = g->committed = 0;
    g->rng = 0x9e3779b97f4a7c15ull;
}

void frae_gl_destroy(frae_gl *g)
{
    if (!g)
        return;
    if (g->own_mel)
        frae_mel_destroy(g->mel);
    free(g->mag), free(g->phase), free(g->signal), free(g->norm);
    free(g->mel_power), free(g->fit), free(g->lin);
    free(g->bin_at), free(g->pair_band), free(g->pair_weight), free(g->bin_sum);
    free(g);
}

/* On m (borrowed unless own): blocks of `block` frames, `lookahead` more. */
static frae_gl *gl_new(frae_mel *m, int own, int iters, int block,
                       int lookahead)
{
    frae_gl *g = calloc(1, sizeof *g);
    if (!g || (!m->pinv && make_pinv(m))) {
        free(g);
        return NULL;
    }
    const frae_features *f = &m->f;
    g->mel = m;
    g->own_mel = own;
    g->iters = iters;
    g->block = block;
    g->lookahead = lookahead;
    g->context = (f->win - 1) / f->hop; /* frames reaching the next's start */
    g->cap = g->context + block + lookahead;
    const size_t cells = (size_t)g->cap * (size_t)m->nbins;
    const size_t span = (size_t)gl_span(g, g->cap);
    g->mag = malloc(sizeof(float) * cells);
    g->phase = malloc(sizeof(float) * cells);
    g->signal = malloc(sizeof(float) * span);
    g->norm = malloc(sizeof(float) * span);
    g->mel_power = malloc(sizeof(double) * (size_t)f->n_mels);
    g->fit = malloc(sizeof(double) * (size_t)f->n_mels);
    g->lin = malloc(sizeof(double) * (size_t)m->nbins);
    g->max_log_power = frae_features_max(f) * f->scale - f->offset;
    int pairs = 0;
    for (int b = 0; b < f->n_mels; b++)
        pairs += m->band_hi[b] - m->band_lo[b];
    g->bin_at = calloc((size_t)m->nbins + 1, sizeof(int));
    g->pair_band = malloc(sizeof(int) * (size_t)(pairs ? pairs : 1));
    g->pair_weight = malloc(sizeof(float) * (size_t)(pairs ? pairs : 1));
    g->bin_sum = calloc((size_t)m->nbins, sizeof(double));
    if (!g->mag || !g->phase || !g->signal || !g->norm || !g->mel_power ||
        !g->fit || !g->lin || !g->bin_at || !g->pair_band ||
        !g->pair_weight || !g->bin_sum) {
        g->own_mel = 0; /* the caller still owns m */
        frae_gl_destroy(g);
        return NULL;
    }
    /* bands in order within each bin: the sums below add what the dense
     * sums did, less their zero terms, so to the bit */
    for (int k = 0, at = 0; k < m->nbins; k++) {
        g->bin_at[k] = at;
        for (int b = 0; b < f->n_mels; b++) {
            const float w = m->filters[(size_t)b * m->nbins + k];
            g->bin_sum[k] += w;
            if (w != 0.0f)
                g->pair_band[at] = b, g->pair_weight[at++] = w;
        }
        g->bin_at[k + 1] = at;
    }
    frae_gl_reset(g);
    return g;
}

frae_gl *frae_gl_create(const frae_features *f, int iters, char *err,
                        size_t errlen)
{
    frae_mel *m = frae_mel_create(f, err, errlen);
    if (!m)
        return NULL;
    frae_gl *g = gl_new(m, 1, iters < 0 ? 0 : iters, FRAE_GL_BLOCK,
                        FRAE_GL_LOOKAHEAD);
    if (!g) {
        frae_mel_destroy(m);
        frae_errorf(err, errlen, "out of memory");
    }
    return g;
}

long frae_gl_max_samples(const frae_gl *g)
{
    return gl_span(g, g->block + g->lookahead);
}

/* Frame slot k's magnitudes from its features: mel power to linear power
 * by the pseudo-inverse, clipped at zero, then refined as non-negative
 * least squares (multiplicative updates lin *= M^T mel / M^T M lin),
 * since clipping alone distorts bands. */
static void gl_magnitudes(frae_gl *g, const float *feats, float *mag)
{
    frae_mel *m = g->mel;
    const frae_features *f = &m->f;
    const int nb = m->nbins, nm = f->n_mels;
    double *mel = g->mel_power, *fit = g->fit, *lin = g->lin;
    for (int b = 0; b < nm; b++) {
        double lp = (double)feats[b] * f->scale - f->offset;
        if (isnan(lp)) /* junk: the floor; beyond what audio gives: that */
            lp = log(f->floor);
        mel[b] = exp(lp < g->max_log_power ? lp : g->max_log_power);
    }
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
            for (int k = m->band_lo[b]; k < m->band_hi[b]; k++)
                e += w[k] * lin[k];
            fit[b] = mel[b] / (e > 1e-30 ? e : 1e-30);
        }
        for (int k = 0; k < nb; k++) {
            double num = 0;
            for (int j = g->bin_at[k]; j < g->bin_at[k + 1]; j++)
                num += (double)g->pair_weight[j] * fit[g->pair_band[j]];
            if (g->bin_sum[k] > 0)
                lin[k] *= num / g->bin_sum[k];
        }
    }
    for (int k = 0; k < nb; k++)
        mag[k] = (float)sqrt(lin[k]);
}

/* Overlap-adds the inverse FFT of every frame in the window (magnitude,
 * phase) into g->signal, normalised by the window's squared windows. */
static void gl_synthesise(frae_gl *g)
{
    frae_mel *m = g->mel;
    const frae_features *f = &m->f;
    const int nb = m->nbins;
    const long n = gl_span(g, g->frames);
    memset(g->signal, 0, sizeof(float) * (size_t)n);
    for (int t = 0; t < g->frames; t++) {
        const float *mag = g->mag + (size_t)t * nb;
        const float *phase = g->phase + (size_t)t * nb;
        for (int k = 0; k < nb; k++) {
            m->spec[k][0] = mag[k] * cosf(phase[k]);
            m->spec[k][1] = mag[k] * sinf(phase[k]);
        }
        fftwf_execute(m->inv);
        float *out = g->signal + (size_t)t * f->hop;
        for (int i = 0; i < f->win; i++)
            out[i] += m->frame[i] / f->n_fft * m->window[i];
    }
    for (long i = 0; i < n; i++)
        g->signal[i] = g->norm[i] > 1e-6f ? g->signal[i] / g->norm[i] : 0.0f;
}

/* Runs the block: refines the frames not final, makes the first `commit`
 * of them final, writes the samples that became final to out and slides
 * the window.  Returns their count. */
static long gl_block(frae_gl *g, int commit, int last, float *out)
{
    frae_mel *m = g->mel;
    const frae_features *f = &m->f;
    const int nb = m->nbins;
    const long n = gl_span(g, g->frames);
    memset(g->norm, 0, sizeof(float) * (size_t)n);
    for (int t = 0; t < g->frames; t++)
        for (int i = 0; i < f->win; i++)
            g->norm[(size_t)t * f->hop + i] += m->window[i] * m->window[i];
    /* keep the magnitude, take the phase of the re-analysed signal */
    for (int it = 0; it < g->iters; it++) {
        gl_synthesise(g);
        for (int t = g->committed; t < g->frames; t++) {
            analyse(m, g->signal, (long)t * f->hop);
            float *phase = g->phase + (size_t)t * nb;
            for (int k = 0; k < nb; k++)
                phase[k] = atan2f(m->spec[k][1], m->spec[k][0]);
        }
    }
    gl_synthesise(g);
    /* final: every sample before the first frame not final (at the end,
     * every sample) */
    const long from = (long)g->committed * f->hop;
    g->committed += commit;
    const long to = last ? n : (long)g->committed * f->hop;
    memcpy(out, g->signal + from, sizeof(float) * (size_t)(to - from));
    /* slide: the context and the frames not final stay */
    const int drop = g->committed > g->context ? g->committed - g->context : 0;
    if (drop) {
        const size_t keep = (size_t)(g->frames - drop) * (size_t)nb;
        memmove(g->mag, g->mag + (size_t)drop * nb, sizeof(float) * keep);
        memmove(g->phase, g->phase + (size_t)drop * nb, sizeof(float) * keep);
        g->first += drop;
        g->frames -= drop;
        g->committed -= drop;
    }
    return to - from;
}

long frae_gl_frame(frae_gl *g, const float *feats, float *out)
{
    const int nb = g->mel->nbins;
    const int t = g->frames++;
    gl_magnitudes(g, feats, g->mag + (size_t)t * nb);
    /* a seeded random phase, drawn in frame order */
    float *phase = g->phase + (size_t)t * nb;
    for (int k = 0; k < nb; k++) {
        g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
        phase[k] = (float)((g->rng >> 40) * (2 * PI / 16777216.0));
    }
    if (g->frames - g->committed < g->block + g->lookahead)
        return 0;
    return gl_block(g, g->block, 0, out);
}

long frae_gl_flush(frae_gl *g, float *out)
{
    long n = 0;
    if (g->frames > g->committed)
        n = gl_block(g, g->frames - g->committed, 1, out);
    frae_gl_reset(g);
    return n;
}

long frae_mel_invert(frae_mel *m, const float *feats, long frames, int iters,
                     float *samples)
{
    if (frames < 1)
        return -1;
    frae_gl *g = gl_new(m, 0, iters < 0 ? 0 : iters, FRAE_GL_BLOCK,
                        FRAE_GL_LOOKAHEAD);
    if (!g)
        return -1;
    long n = 0;
    for (long t = 0; t < frames; t++)
        n += frae_gl_frame(g, feats + (size_t)t * m->f.n_mels, samples + n);
    n += frae_gl_flush(g, samples + n);
    frae_gl_destroy(g);
    return n;
}

/* ---- audio files, streamed ------------------------------------------------
 * A file is read in blocks of BLOCK_SAMPLES interleaved samples, mixed to
 * mono, resampled block by block (libsamplerate keeps its state between
 * calls) and cut into frames as the samples arrive, so memory is a few
 * blocks and one window whatever the file's length. */

#define BLOCK_SAMPLES 65536 /* interleaved samples per read */
#define FEAT_BATCH 256      /* frames handed to the sink at a time */

typedef struct audio_stream audio_stream;
struct audio_stream {
    const char *name;
    const frae_features *f;
    int rate;      /* the rate wanted: f->sample_rate */
    int resample;
    /* takes n mono samples at `rate`: frames them, or keeps them */
    int (*on_samples)(audio_stream *a, const float *x, long n);
    float *kept;   /* frae_audio_read: every sample */
    long kept_cap;
    frae_feature_sink sink;
    void *ctx;
    frae_mel *mel;
    SRC_STATE *src;
    double ratio;
    float *inter, *mono, *res; /* a read, its mix, the resampled mix */
    long res_cap;
    float *win;                /* samples not yet framed */
    long win_len, win_cap;
    float *feats;              /* FEAT_BATCH frames for the sink */
    int n_feats;
    int width;                 /* values per frame: n_mels (+ 2: pitch) */
    frae_f0 *f0;               /* with pitch: YIN's scratch */
    int pre, post;             /* samples of context the f0 span needs
                                  before and after a frame's window */
    int span_at;               /* the f0 span's start in the frame's */
    long samples;              /* at the feature rate, so far */
    long frames;
    float peak;
    char *err;
    size_t errlen;
};

static int flush_feats(audio_stream *a)
{
    if (a->n_feats && a->sink(a->ctx, a->feats, a->n_feats, a->width))
        return frae_errorf(a->err, a->errlen, "%s: cannot store features",
                           a->name);
    a->n_feats = 0;
    return 0;
}

/* Counts n mono samples at the wanted rate and hands them on.  What is
 * analysed is checked too: the resampler may overshoot the file's peak. */
static int push_samples(audio_stream *a, const float *x, long n)
{
    for (long i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        if (!(v <= FRAE_AUDIO_MAX_SAMPLE))
            return frae_errorf(a->err, a->errlen,
                               "%s: a sample of %.3g at %.3f s (mixed, at %d "
                               "Hz), past the +-%g frae takes (96 dB above "
                               "full scale)",
                               a->name, (double)x[i],
                               (double)(a->samples + i) / a->rate, a->rate,
                               FRAE_AUDIO_MAX_SAMPLE);
        a->peak = v > a->peak ? v : a->peak;
    }
    a->samples += n;
    return a->on_samples(a, x, n);
}

/* Frames every hop samples: a window of win samples at a time. */
static int frame_samples(audio_stream *a, const float *x, long n)
{
    const frae_features *f = a->f;
    while (n > 0) {
        long take = a->win_cap - a->win_len < n ? a->win_cap - a->win_len : n;
        memcpy(a->win + a->win_len, x, sizeof(float) * (size_t)take);
        a->win_len += take, x += take, n -= take;
        long at = 0;
        const long need = a->pre + f->win + a->post;
        for (; a->win_len - at >= need; at += f->hop) {
            float *out = a->feats + (size_t)a->n_feats * a->width;
            mel_frame(a->mel, a->win + at + a->pre, out);
            if (a->f0)
                frae_f0_frame(a->f0, a->win + at + a->pre + a->span_at,
                              out + f->n_mels, out + f->n_mels + 1);
            a->frames++;
            if (++a->n_feats == FEAT_BATCH && flush_feats(a))
                return -1;
        }
        if (at > a->win_len)
            at = a->win_len; /* hop > what is left: skip the rest later */
        memmove(a->win, a->win + at, sizeof(float) * (size_t)(a->win_len - at));
        a->win_len -= at;
    }
    return 0;
}

/* Resamples (if needed) and frames n mono samples; last: end of input. */
static int push_mono(audio_stream *a, long n, int last)
{
    if (!a->src)
        return push_samples(a, a->mono, n);
    SRC_DATA d;
    memset(&d, 0, sizeof d);
    d.data_in = a->mono;
    d.input_frames = n;
    d.src_ratio = a->ratio;
    d.end_of_input = last;
    do {
        d.data_out = a->res;
        d.output_frames = a->res_cap;
        int e = src_process(a->src, &d);
        if (e)
            return frae_errorf(a->err, a->errlen, "%s: resampling failed: %s",
                               a->name, src_strerror(e));
        if (push_samples(a, a->res, d.output_frames_gen))
            return -1;
        d.data_in += d.input_frames_used;
        d.input_frames -= d.input_frames_used;
    } while (d.input_frames > 0 || (last && d.output_frames_gen > 0));
    return 0;
}

static int stream_sndfile(SNDFILE *sf, const SF_INFO *info, audio_stream *a)
{
    const int ch = info->channels;
    if (info->frames <= 0 || ch < 1 || info->samplerate < 1)
        return frae_errorf(a->err, a->errlen, "%s: no audio samples", a->name);
    if (ch > BLOCK_SAMPLES)
        return frae_errorf(a->err, a->errlen, "%s: %d channels", a->name, ch);
    if (info->samplerate != a->rate) {
        if (!a->resample)
            return frae_errorf(a->err, a->errlen,
                               "%s: sample rate %d Hz, the features need %d Hz "
                               "(resampling is off)",
                               a->name, info->samplerate, a->rate);
        a->ratio = (double)a->rate / info->samplerate;
        if (!src_is_valid_ratio(a->ratio))
            return frae_errorf(a->err, a->errlen,
                               "%s: cannot resample %d Hz to %d Hz", a->name,
                               info->samplerate, a->rate);
        int e;
        a->src = src_new(SRC_SINC_MEDIUM_QUALITY, 1, &e);
        if (!a->src)
            return frae_errorf(a->err, a->errlen, "%s: resampling failed: %s",
                               a->name, src_strerror(e));
    }
    const long block = BLOCK_SAMPLES / ch;
    a->res_cap = (long)(block * (a->ratio > 1 ? a->ratio : 1.0)) + 64;
    a->inter = malloc(sizeof(float) * (size_t)block * ch);
    a->mono = malloc(sizeof(float) * (size_t)block);
    a->res = malloc(sizeof(float) * (size_t)a->res_cap);
    if (!a->inter || !a->mono || !a->res)
        return frae_errorf(a->err, a->errlen, "%s: out of memory", a->name);
    long long at = 0; /* samples read, per channel */
    for (;;) {
        sf_count_t got = sf_readf_float(sf, a->inter, block);
        if (got < 0)
            got = 0;
        for (sf_count_t i = 0; i < got; i++) {
            double s = 0;
            for (int c = 0; c < ch; c++) {
                float v = a->inter[i * ch + c];
                if (!isfinite(v))
                    return frae_errorf(
                        a->err, a->errlen,
                        "%s: sample %lld (%.3f s), channel %d, is %s", a->name,
                        at + (long long)i,
                        (double)(at + (long long)i) / info->samplerate, c + 1,
                        isnan(v) ? "NaN" : "infinite");
                if (fabsf(v) > FRAE_AUDIO_MAX_SAMPLE) /* the FFT's range */
                    return frae_errorf(
                        a->err, a->errlen,
                        "%s: sample %lld (%.3f s), channel %d, is %.3g, past "
                        "the +-%g frae takes (96 dB above full scale)",
                        a->name, at + (long long)i,
                        (double)(at + (long long)i) / info->samplerate, c + 1,
                        (double)v, FRAE_AUDIO_MAX_SAMPLE);
                s += v;
            }
            a->mono[i] = (float)(s / ch); /* mix down */
        }
        at += got;
        int last = got < block;
        if (push_mono(a, (long)got, last))
            return -1;
        if (last)
            break;
    }
    return 0;
}

/* The trailing silence the last frames' f0 spans reach into: it frames no
 * extra frame (a frame's window still has to fit the audio). */
static int end_silence(audio_stream *a)
{
    float zeros[256] = {0};
    for (int left = a->post; left > 0; left -= 256)
        if (a->on_samples(a, zeros, left < 256 ? left : 256))
            return -1;
    return 0;
}


/* ---- features of samples pushed as they come (a live input) ---------------- */

struct frae_feature_stream {
    audio_stream a;
    frae_features f;
    void *f0_mem;
    long block; /* mono samples a push takes at a time */
};

void frae_feature_stream_destroy(frae_feature_stream *s)
{
    if (!s)
        return;
    if (s->a.src)
        src_delete(s->a.src);
    frae_mel_destroy(s->a.mel);
    free(s->a.mono), free(s->a.res), free(s->a.win), free(s->a.feats);
    free(s->f0_mem);
    free(s);
}

frae_feature_stream *frae_feature_stream_create(const frae_features *f,
                                                int input_rate, int resample,
                                                frae_feature_sink sink,
                                                void *ctx, char *err,
                                                size_t errlen)
{
    if (frae_features_check(f, err, errlen))
        return NULL;
    frae_feature_stream *s = calloc(1, sizeof *s);
    if (!s) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    s->f = *f;
    audio_stream *a = &s->a;
    a->name = "-", a->f = &s->f, a->rate = f->sample_rate;
    a->resample = resample;
    a->on_samples = frame_samples, a->sink = sink, a->ctx = ctx;
    a->width = FRAE_FEATURE_WIDTH(f);
    s->block = 4096;
    if (f->pitch) {
        const int span = frae_f0_span(f);
        a->span_at = f->win / 2 - span / 2;
        a->pre = a->span_at < 0 ? -a->span_at : 0;
        a->post = a->span_at + span > f->win ? a->span_at + span - f->win : 0;
        s->f0_mem = malloc(frae_f0_size(f));
        a->f0 = s->f0_mem ? frae_f0_init(s->f0_mem, f) : NULL;
    }
    int ok = !f->pitch || a->f0;
    if (ok && input_rate != f->sample_rate) {
        a->ratio = (double)f->sample_rate / input_rate;
        if (!resample || !src_is_valid_ratio(a->ratio)) {
            frae_errorf(err, errlen,
                        "-: sample rate %d Hz, the features need %d Hz%s",
                        input_rate, f->sample_rate,
                        resample ? " (cannot resample)"
                                 : " (resampling is off)");
            frae_feature_stream_destroy(s);
            return NULL;
        }
        int e;
        a->src = src_new(SRC_SINC_MEDIUM_QUALITY, 1, &e);
        ok = a->src != NULL;
    }
    a->res_cap = (long)(s->block * (a->ratio > 1 ? a->ratio : 1.0)) + 64;
    a->mono = malloc(sizeof(float) * (size_t)s->block);
    a->res = malloc(sizeof(float) * (size_t)a->res_cap);
    a->win_cap = a->pre + f->win + a->post + a->res_cap;
    a->win = calloc((size_t)a->win_cap, sizeof(float));
    a->win_len = a->pre;
    a->feats = malloc(sizeof(float) * FEAT_BATCH * (size_t)a->width);
    if (!ok || !a->mono || !a->res || !a->win || !a->feats) {
        frae_errorf(err, errlen, "out of memory");
        frae_feature_stream_destroy(s);
        return NULL;
    }
    if (!(a->mel = frae_mel_create(f, err, errlen))) { /* it says why */
        frae_feature_stream_destroy(s);
        return NULL;
    }
    return s;
}

/* Each push's frames go to the sink at its end: a live input is never
 * held back for a batch. */
static int feature_stream_push(frae_feature_stream *s, const float *x, long n,
                               int last, char *err, size_t errlen)
{
    audio_stream *a = &s->a;
    a->err = err, a->errlen = errlen;
    do {
        const long k = n < s->block ? n : s->block;
        for (long i = 0; i < k; i++) {
            if (!isfinite(x[i]))
                return frae_errorf(err, errlen, "-: sample %ld is %s",
                                   a->samples + i,
                                   isnan(x[i]) ? "NaN" : "infinite");
            a->mono[i] = x[i];
        }
        if (push_mono(a, k, last && k == n))
            return -1;
        x += k, n -= k;
    } while (n > 0);
    return flush_feats(a);
}

int frae_feature_stream_push(frae_feature_stream *s, const float *samples,
                             long n, char *err, size_t errlen)
{
    return feature_stream_push(s, samples, n, 0, err, errlen);
}

int frae_feature_stream_end(frae_feature_stream *s, char *err, size_t errlen)
{
    if (feature_stream_push(s, NULL, 0, 1, err, errlen))
        return -1;
    s->a.err = err, s->a.errlen = errlen;
    return end_silence(&s->a) || flush_feats(&s->a) ? -1 : 0;
}

long frae_feature_stream_frames(const frae_feature_stream *s)
{
    return s->a.frames;
}

/* Features of an open file: every check that needs the whole file (length,
 * silence) comes at the end, after the sink has seen the frames. */
static int stream_features(SNDFILE *sf, const SF_INFO *info, const char *name,
                           const frae_features *f, int resample,
                           frae_feature_sink sink, void *ctx, long *frames,
                           char *err, size_t errlen)
{
    audio_stream a;
    memset(&a, 0, sizeof a);
    a.name = name, a.f = f, a.rate = f->sample_rate, a.resample = resample;
    a.on_samples = frame_samples, a.sink = sink, a.ctx = ctx;
    a.err = err, a.errlen = errlen;
    a.width = FRAE_FEATURE_WIDTH(f);
    void *f0_mem = NULL;
    if (f->pitch && !frae_features_check(f, NULL, 0)) {
        /* the f0 span, centred on the frame's centre, may reach past the
         * window: the stream starts and ends with that much silence */
        const int span = frae_f0_span(f);
        a.span_at = f->win / 2 - span / 2;
        a.pre = a.span_at < 0 ? -a.span_at : 0;
        a.post = a.span_at + span > f->win ? a.span_at + span - f->win : 0;
        f0_mem = malloc(frae_f0_size(f));
        a.f0 = f0_mem ? frae_f0_init(f0_mem, f) : NULL;
    }
    a.win_cap = a.pre + f->win + a.post + BLOCK_SAMPLES;
    a.win = calloc((size_t)a.win_cap, sizeof(float));
    a.win_len = a.pre; /* leading silence for the first spans */
    a.feats = malloc(sizeof(float) * FEAT_BATCH * (size_t)a.width);
    int rc = -1;
    if (!a.win || !a.feats || (f->pitch && !a.f0))
        frae_errorf(err, errlen, "%s: out of memory", name);
    else if ((a.mel = frae_mel_create(f, err, errlen)) &&
             !stream_sndfile(sf, info, &a) && !end_silence(&a) &&
             !flush_feats(&a)) {
        if (a.samples < f->win)
            frae_errorf(err, errlen,
                        "%s: %ld samples, shorter than one %d-sample frame",
                        name, a.samples, f->win);
        else if (!(a.peak > 1e-4f)) /* -80 dBFS */
            frae_errorf(err, errlen, "%s: only silence (peak %.2g)", name,
                        (double)a.peak);
        else
            rc = 0;
    }
    if (!rc && frames)
        *frames = a.frames;
    if (a.src)
        src_delete(a.src);
    frae_mel_destroy(a.mel);
    free(a.inter), free(a.mono), free(a.res), free(a.win), free(a.feats);
    free(f0_mem);
    return rc;
}

/* An audio file for libsndfile to read: "-" is standard input (a WAV
 * piped in); anything else must be a regular file, so that a FIFO is
 * refused before it could block.  NULL with err set if refused; a file
 * libsndfile cannot read is told apart from the arrays frae also reads. */
static SNDFILE *open_audio(const char *path, SF_INFO *info, char *err,
                           size_t errlen)
{
    const int std_in = !strcmp(path, "-");
    int fd = std_in ? dup(STDIN_FILENO) : frae_open_regular(path, err, errlen);
    if (fd < 0) {
        if (std_in)
            frae_errorf(err, errlen, "-: cannot read standard input: %s",
                        strerror(errno));
        return NULL;
    }
    unsigned char magic[6] = {0};
    const int peeked = std_in ? 0 : (int)pread(fd, magic, sizeof magic, 0);
    memset(info, 0, sizeof *info);
    SNDFILE *sf = sf_open_fd(fd, SFM_READ, info, 1); /* closes fd if not */
    if (sf)
        return sf;
    if (peeked >= 4 && !memcmp(magic, "PK\x03\x04", 4))
        frae_errorf(err, errlen,
                    "%s: a .npz (zip) archive, not audio: frae reads frames "
                    "from .npy arrays (np.save each one) and audio files",
                    path);
    else if (peeked == 6 && !memcmp(magic, "\x93NUMPY", 6))
        frae_errorf(err, errlen,
                    "%s: a NumPy array, read as audio because its name does "
                    "not end in .npy: rename it",
                    path);
    else
        frae_errorf(err, errlen, "%s: not a readable audio file (%s)", path,
                    sf_strerror(NULL));
    return NULL;
}

/* The features of what open_audio or sf_open_virtual gave (NULL: refused,
 * err already says why), closed after. */
static int features_of(SNDFILE *sf, const SF_INFO *info, const char *name,
                       const frae_features *f, int resample,
                       frae_feature_sink sink, void *ctx, long *frames,
                       char *err, size_t errlen)
{
    if (!sf)
        return -1;
    int rc = stream_features(sf, info, name, f, resample, sink, ctx, frames,
                             err, errlen);
    sf_close(sf);
    return rc;
}

int frae_audio_stream_features(const char *path, const frae_features *f,
                               int resample, frae_feature_sink sink, void *ctx,
                               long *frames, char *err, size_t errlen)
{
    SF_INFO info;
    SNDFILE *sf = open_audio(path, &info, err, errlen);
    return features_of(sf, &info, path, f, resample, sink, ctx, frames, err,
                       errlen);
}

/* libsndfile's virtual I/O over a buffer: audio already in memory (and the
 * fuzzer's inputs) take the same path as files. */
typedef struct {
    const unsigned char *buf;
    sf_count_t size, pos;
} mem_file;

static sf_count_t mem_length(void *u) { return ((mem_file *)u)->size; }
static sf_count_t mem_tell(void *u) { return ((mem_file *)u)->pos; }
static sf_count_t mem_seek(sf_count_t off, int whence, void *u)
{
    mem_file *m = u;
    sf_count_t base = whence == SEEK_CUR ? m->pos
                      : whence == SEEK_END ? m->size
                                           : 0;
    if (off > m->size - base || off < -base)
        return -1;
    m->pos = base + off;
    return m->pos;
}
static sf_count_t mem_read(void *ptr, sf_count_t n, void *u)
{
    mem_file *m = u;
    sf_count_t left = m->pos < m->size ? m->size - m->pos : 0;
    if (n > left)
        n = left;
    memcpy(ptr, m->buf + m->pos, (size_t)n);
    m->pos += n;
    return n;
}
static sf_count_t mem_write(const void *ptr, sf_count_t n, void *u)
{
    (void)ptr, (void)n, (void)u;
    return 0;
}

int frae_audio_stream_memory(const void *buf, size_t size, const char *name,
                             const frae_features *f, int resample,
                             frae_feature_sink sink, void *ctx, long *frames,
                             char *err, size_t errlen)
{
    SF_VIRTUAL_IO io = {mem_length, mem_seek, mem_read, mem_write, mem_tell};
    mem_file mf = {buf, (sf_count_t)size, 0};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&io, SFM_READ, &info, &mf);
    if (!sf)
        frae_errorf(err, errlen, "%s: not a readable audio file (%s)", name,
                    sf_strerror(NULL));
    return features_of(sf, &info, name, f, resample, sink, ctx, frames, err,
                       errlen);
}

/* frae_audio_features' sink: a growing array. */
typedef struct {
    float *data;
    size_t len, cap; /* floats */
} grow_sink;

static int grow_push(void *ctx, const float *feats, long frames, int n_mels)
{
    grow_sink *g = ctx;
    size_t n = (size_t)frames * (size_t)n_mels;
    if (g->len + n > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < g->len + n)
            cap *= 2;
        float *p = realloc(g->data, sizeof(float) * cap);
        if (!p)
            return -1;
        g->data = p, g->cap = cap;
    }
    memcpy(g->data + g->len, feats, sizeof(float) * n);
    g->len += n;
    return 0;
}

int frae_audio_features(const char *path, const frae_features *f,
                        int resample, float **feats, long *frames, char *err,
                        size_t errlen)
{
    grow_sink g = {NULL, 0, 0};
    if (frae_audio_stream_features(path, f, resample, grow_push, &g, frames,
                                   err, errlen)) {
        free(g.data);
        return -1;
    }
    *feats = g.data;
    return 0;
}

/* frae_audio_read's: every sample, in a growing array. */
static int keep_samples(audio_stream *a, const float *x, long n)
{
    if (a->samples > a->kept_cap) {
        long cap = a->kept_cap ? a->kept_cap : 65536;
        while (cap < a->samples)
            cap *= 2;
        float *p = realloc(a->kept, sizeof(float) * (size_t)cap);
        if (!p)
            return frae_errorf(a->err, a->errlen, "%s: out of memory",
                               a->name);
        a->kept = p, a->kept_cap = cap;
    }
    memcpy(a->kept + a->samples - n, x, sizeof(float) * (size_t)n);
    return 0;
}

int frae_audio_read(const char *path, int rate, int resample, float **out,
                    long *n_out, char *err, size_t errlen)
{
    SF_INFO info;
    SNDFILE *sf = open_audio(path, &info, err, errlen);
    if (!sf)
        return -1;
    audio_stream a;
    memset(&a, 0, sizeof a);
    a.name = path, a.rate = rate, a.resample = resample;
    a.on_samples = keep_samples, a.err = err, a.errlen = errlen;
    int rc = stream_sndfile(sf, &info, &a);
    sf_close(sf);
    if (a.src)
        src_delete(a.src);
    free(a.inter), free(a.mono), free(a.res);
    if (rc) {
        free(a.kept);
        return -1;
    }
    *out = a.kept ? a.kept : malloc(sizeof(float));
    *n_out = a.samples;
    return 0;
}

/* ---- WAV out, as the samples come ------------------------------------------
 * A 16-bit PCM WAV is scaled down if its peak would clip, and the peak is
 * known only at the end: the samples wait, as float32, in an unlinked
 * temporary file, then go out scaled through a 44-byte header frae writes
 * itself (libsndfile's bytes, and no seek back, so a pipe takes it too). */
#define WAV_BLOCK 4096                  /* samples converted at a time */
#define WAV_MAX_SAMPLES 2147483629L     /* 4 GB of data and header: RIFF's u32 */

struct frae_wav_writer {
    frae_atomic_file out;
    FILE *scratch; /* NULL for a live writer */
    long n;
    float peak;
    int rate;
};

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* The 44-byte header of data_bytes of 16-bit mono PCM. */
static void wav_header(unsigned char *head, uint32_t rate, uint32_t data)
{
    memcpy(head, "RIFF", 4);
    put_le(head + 4, data > 0xffffffffu - 36 ? 0xffffffffu : 36 + data, 4);
    memcpy(head + 8, "WAVEfmt ", 8);
    put_le(head + 16, 16, 4);        /* the fmt chunk's size */
    put_le(head + 20, 1, 2);         /* PCM */
    put_le(head + 22, 1, 2);         /* mono */
    put_le(head + 24, rate, 4);
    put_le(head + 28, 2 * rate, 4);  /* bytes a second */
    put_le(head + 32, 2, 2);         /* bytes a sample */
    put_le(head + 34, 16, 2);        /* bits a sample */
    memcpy(head + 36, "data", 4);
    put_le(head + 40, data, 4);
}

/* The live writer: the header first with the length not known (as a
 * pipe's reader expects, arecord's way), then each write's samples at
 * once, clipped at full scale rather than scaled (a peak to come cannot
 * be waited for), flushed; a file gets its true sizes at close. */
frae_wav_writer *frae_wav_open_live(const char *path, int rate, char *err,
                                    size_t errlen)
{
    frae_wav_writer *w = calloc(1, sizeof *w);
    if (!w) {
        frae_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->rate = rate;
    if (frae_atomic_begin(&w->out, path, err, errlen)) {
        free(w);
        return NULL;
    }
    unsigned char head[44];
    wav_header(head, (uint32_t)rate, 0xffffffffu);
    if (fwrite(head, 1, sizeof head, w->out.f) != sizeof head ||
        fflush(w->out.f)) {
        frae_errorf(err, errlen, "%s: write failed: %s", path,
                    strerror(errno));
        frae_atomic_abort(&w->out);
        free(w);
        return NULL;
    }
    return w;
}

static int wav_write_live(frae_wav_writer *w, const float *samples, long n,
                          char *err, size_t errlen)
{
    unsigned char pcm[2 * 1024];
    for (long i = 0; i < n; i += 1024) {
        const long k = n - i < 1024 ? n - i : 1024;
        for (long j = 0; j < k; j++) {
            float v = samples[i + j];
            v = v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
            put_le(pcm + 2 * j,
                   (uint32_t)(uint16_t)(int16_t)lrintf(v * 32767.0f), 2);
        }
        if (fwrite(pcm, 2, (size_t)k, w->out.f) != (size_t)k)
            return frae_errorf(err, errlen, "%s: write failed: %s",
                               w->out.path, strerror(errno));
    }
    w->n += n;
    if (fflush(w->out.f))
        return frae_errorf(err, errlen, "%s: write failed: %s", w->out.path,
                           strerror(errno));
    return 0;
}

frae_wav_writer *frae_wav_open(const char *path, int rate, char *err,
                               size_t errlen)
{
    frae_wav_writer *w = calloc(1, sizeof *w);
    if (!w) {
        frae_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->rate = rate;
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/frae-wav-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0 || !(w->scratch = fdopen(fd, "w+b"))) {
        frae_errorf(err, errlen, "%s: cannot make a temporary file in %s: %s",
                    path, dir && *dir ? dir : "/tmp", strerror(errno));
        if (fd >= 0)
            close(fd), unlink(tmp);
        free(w);
        return NULL;
    }
    unlink(tmp); /* gone once closed, whatever happens */
    if (frae_atomic_begin(&w->out, path, err, errlen)) {
        fclose(w->scratch);
        free(w);
        return NULL;
    }
    return w;
}

int frae_wav_write(frae_wav_writer *w, const float *samples, long n,
                   char *err, size_t errlen)
{
    for (long i = 0; i < n; i++) {
        if (!isfinite(samples[i]))
            return frae_errorf(err, errlen,
                               "%s: sample %ld (%.3f s) is %s: nothing "
                               "written",
                               w->out.path, w->n + i,
                               (double)(w->n + i) / w->rate,
                               isnan(samples[i]) ? "NaN" : "infinite");
        const float v = fabsf(samples[i]);
        w->peak = v > w->peak ? v : w->peak;
    }
    if (!w->scratch)
        return wav_write_live(w, samples, n, err, errlen);
    if (n > WAV_MAX_SAMPLES - w->n)
        return frae_errorf(err, errlen,
                           "%s: more than %ld samples, past a WAV file's "
                           "4 GB",
                           w->out.path, WAV_MAX_SAMPLES);
    if (fwrite(samples, sizeof(float), (size_t)n, w->scratch) != (size_t)n)
        return frae_errorf(err, errlen,
                           "%s: cannot keep the samples in a temporary "
                           "file: %s",
                           w->out.path, strerror(errno));
    w->n += n;
    return 0;
}

long frae_wav_samples(const frae_wav_writer *w) { return w->n; }

void frae_wav_abort(frae_wav_writer *w)
{
    if (!w)
        return;
    frae_atomic_abort(&w->out);
    if (w->scratch)
        fclose(w->scratch);
    free(w);
}

int frae_wav_close(frae_wav_writer *w, char *err, size_t errlen)
{
    const uint32_t data = 2 * (uint32_t)w->n;
    unsigned char head[44];
    wav_header(head, (uint32_t)w->rate, data);
    if (!w->scratch) { /* live: a file learns its sizes now */
        int bad = 0;
        if (w->out.seekable)
            bad = fseek(w->out.f, 0, SEEK_SET) ||
                  fwrite(head, 1, sizeof head, w->out.f) != sizeof head;
        int rc = bad ? frae_errorf(err, errlen, "%s: write failed: %s",
                                   w->out.path, strerror(errno))
                     : frae_atomic_commit(&w->out, err, errlen);
        if (bad)
            frae_atomic_abort(&w->out);
        free(w);
        return rc;
    }
    /* scale into range if the synthesis overshoots, rather than clip */
    const float g = w->peak > 0.99f ? 0.99f / w->peak : 1.0f;
    int bad = fflush(w->scratch) || fseek(w->scratch, 0, SEEK_SET) ||
              fwrite(head, 1, sizeof head, w->out.f) != sizeof head;
    float buf[WAV_BLOCK];
    unsigned char pcm[2 * WAV_BLOCK];
    for (long i = 0; i < w->n && !bad; i += WAV_BLOCK) {
        const size_t k = (size_t)(w->n - i < WAV_BLOCK ? w->n - i : WAV_BLOCK);
        bad = fread(buf, sizeof(float), k, w->scratch) != k;
        for (size_t j = 0; j < k && !bad; j++) /* as libsndfile rounds */
            put_le(pcm + 2 * j, (uint32_t)(uint16_t)(int16_t)lrintf(
                                    buf[j] * g * 32767.0f),
                   2);
        bad = bad || fwrite(pcm, 2, k, w->out.f) != k;
    }
    int rc;
    if (bad) {
        frae_errorf(err, errlen, "%s: write failed: %s", w->out.path,
                    strerror(errno));
        frae_atomic_abort(&w->out);
        rc = -1;
    } else {
        rc = frae_atomic_commit(&w->out, err, errlen);
    }
    fclose(w->scratch);
    free(w);
    return rc;
}

int frae_audio_write_wav(const char *path, const float *samples, long n,
                         int rate, char *err, size_t errlen)
{
    frae_wav_writer *w = frae_wav_open(path, rate, err, errlen);
    if (!w)
        return -1;
    if (frae_wav_write(w, samples, n, err, errlen)) {
        frae_wav_abort(w);
        return -1;
    }
    return frae_wav_close(w, err, errlen);
}
