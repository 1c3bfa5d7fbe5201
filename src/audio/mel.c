/* Log-mel features (FFTW) and their inversion (mel pseudo-inverse, then
 * Griffin-Lim, in blocks).  Audio files are audio_files.c's, WAV output
 * wav.c's.
 *
 * Feature of frame t, mel band b:
 *   frame t covers samples [t*hop, t*hop + win), times a periodic Hann
 *   window, zero-padded to n_fft; power spectrum |X|^2;
 *   mel = triangular HTK-mel filters (peak 1) from fmin to fmax;
 *   feature = (ln(max(mel, floor)) + offset) / scale.
 * No padding at the ends: n samples give 1 + (n - win) / hop frames. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>

#include "audio/audio_internal.h"
#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf, atomic files */

#define PI 3.14159265358979323846

struct frae_mel {
    frae_features f;
    int nbins;              /* n_fft / 2 + 1 */
    float *window;          /* [win] */
    float *filters;         /* [n_mels][nbins] */
    int *band_lo, *band_hi; /* each filter's nonzero bins: [lo, hi) */
    double *pinv;           /* [nbins][n_mels]: a pseudo-inverse of filters,
                           made by the first frae_mel_invert */
    float *frame;           /* [n_fft] */
    fftwf_complex *spec;    /* [nbins] */
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
    frae_mel *mel; /* plans, filters, window and pseudo-inverse */
    int own_mel;   /* made by frae_gl_create (else the caller's) */
    int iters, block, lookahead, context, cap; /* frames */
    float *mag, *phase;   /* [cap][nbins] the window's frames */
    float *signal, *norm; /* [(cap - 1) hop + win] the window's samples */
    double *mel_power, *fit, *lin; /* a frame's NNLS: [n_mels], [nbins] */
    /* the filters by bin, their nonzero weights only (a bin is in one or
     * two bands): bin k's are pairs bin_at[k] .. bin_at[k + 1] - 1 */
    int *bin_at, *pair_band;
    float *pair_weight;
    double *bin_sum; /* [nbins] sum over bands of bin k's weight */
    double max_log_power;
    long first; /* the window's first frame, over the signal */
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
        !g->fit || !g->lin || !g->bin_at || !g->pair_band || !g->pair_weight ||
        !g->bin_sum) {
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
    frae_gl *g =
        gl_new(m, 1, iters < 0 ? 0 : iters, FRAE_GL_BLOCK, FRAE_GL_LOOKAHEAD);
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
    frae_gl *g =
        gl_new(m, 0, iters < 0 ? 0 : iters, FRAE_GL_BLOCK, FRAE_GL_LOOKAHEAD);
    if (!g)
        return -1;
    long n = 0;
    for (long t = 0; t < frames; t++)
        n += frae_gl_frame(g, feats + (size_t)t * m->f.n_mels, samples + n);
    n += frae_gl_flush(g, samples + n);
    frae_gl_destroy(g);
    return n;
}
