/* Audio files in (libsndfile), resampled (libsamplerate) and cut into
 * log-mel frames (mel.c) and pitch (pitch.c) as the samples arrive: from a
 * path, from memory, or pushed live (frae_feature_stream). */
#include <errno.h>
#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/audio_internal.h"
#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf, atomic files */

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
    int rate; /* the rate wanted: f->sample_rate */
    int resample;
    /* takes n mono samples at `rate`: frames them, or keeps them */
    int (*on_samples)(audio_stream *a, const float *x, long n);
    float *kept; /* frae_audio_read: every sample */
    long kept_cap;
    frae_feature_sink sink;
    void *ctx;
    frae_mel *mel;
    SRC_STATE *src;
    double ratio;
    float *inter, *mono, *res; /* a read, its mix, the resampled mix */
    long res_cap;
    float *win; /* samples not yet framed */
    float *hp;  /* with pitch: the same samples high-passed for the tracker */
    long win_len, win_cap;
    float *feats; /* FEAT_BATCH frames for the sink */
    int n_feats;
    int width;     /* values per frame: n_mels (+ 2: pitch) */
    frae_f0 *f0;   /* with pitch: YIN's scratch */
    int pre, post; /* samples of context the f0 span needs
                                  before and after a frame's window */
    int span_at;   /* the f0 span's start in the frame's */
    long samples;  /* at the feature rate, so far */
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
        if (a->f0)
            frae_f0_filter(a->f0, x, a->hp + a->win_len, take);
        a->win_len += take, x += take, n -= take;
        long at = 0;
        const long need = a->pre + f->win + a->post;
        for (; a->win_len - at >= need; at += f->hop) {
            float *out = a->feats + (size_t)a->n_feats * a->width;
            frae_mel_compute(a->mel, a->win + at + a->pre, f->win, out);
            if (a->f0)
                frae_f0_frame_dehum(a->f0, a->win + at + a->pre + a->span_at,
                                    a->hp + at + a->pre + a->span_at,
                                    out + f->n_mels, out + f->n_mels + 1);
            a->frames++;
            if (++a->n_feats == FEAT_BATCH && flush_feats(a))
                return -1;
        }
        if (at > a->win_len)
            at = a->win_len; /* hop > what is left: skip the rest later */
        memmove(a->win, a->win + at, sizeof(float) * (size_t)(a->win_len - at));
        if (a->f0)
            memmove(a->hp, a->hp + at,
                    sizeof(float) * (size_t)(a->win_len - at));
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
    free(s->a.mono), free(s->a.res), free(s->a.win), free(s->a.hp);
    free(s->a.feats);
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
            frae_errorf(
                err, errlen, "-: sample rate %d Hz, the features need %d Hz%s",
                input_rate, f->sample_rate,
                resample ? " (cannot resample)" : " (resampling is off)");
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
    if (f->pitch)
        a->hp = calloc((size_t)a->win_cap, sizeof(float));
    a->win_len = a->pre;
    a->feats = malloc(sizeof(float) * FEAT_BATCH * (size_t)a->width);
    if (!ok || !a->mono || !a->res || !a->win || (f->pitch && !a->hp) ||
        !a->feats) {
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
    if (a.f0)
        a.hp = calloc((size_t)a.win_cap, sizeof(float));
    a.win_len = a.pre; /* leading silence for the first spans */
    a.feats = malloc(sizeof(float) * FEAT_BATCH * (size_t)a.width);
    int rc = -1;
    if (!a.win || !a.feats || (f->pitch && (!a.f0 || !a.hp)))
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
    free(a.inter), free(a.mono), free(a.res), free(a.win), free(a.hp);
    free(a.feats);
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
    sf_count_t base = whence == SEEK_CUR   ? m->pos
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

int frae_audio_features(const char *path, const frae_features *f, int resample,
                        float **feats, long *frames, char *err, size_t errlen)
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
            return frae_errorf(a->err, a->errlen, "%s: out of memory", a->name);
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
