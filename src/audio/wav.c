/* WAV files out, written as the samples come (frae_wav_writer): to a file
 * through an atomic rename, or live to a pipe. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/audio_internal.h"
#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf, atomic files */

/* ---- WAV out, as the samples come ------------------------------------------
 * A 16-bit PCM WAV keeps its level where a vocoder overshoots full scale:
 * a sample past WAV_KNEE bends toward WAV_CEIL (a soft clip, as Opus's
 * 16-bit decoder does), and only a peak past WAV_HEADROOM scales the file
 * down first.  Scaling every overshoot down cost the whole file's level:
 * the vocoder's phases are not the input's, and a loud, compressed take
 * (active -12 dBFS, its peaks limited) came back with peaks 2-4 dB over
 * full scale, so 35 of 44 such clips, and 7 of 176 clean ones, were
 * scaled down, 1.4 dB on average (docs/2026-12-05-loud.md).  The peak is
 * known only at the end: the samples wait, as float32, in an unlinked
 * temporary file, then go out through a 44-byte header frae writes itself
 * (libsndfile's bytes, and no seek back, so a pipe takes it too). */
#define WAV_BLOCK 4096              /* samples converted at a time */
#define WAV_MAX_SAMPLES 2147483629L /* 4 GB of data and header: RIFF's u32 */
#define WAV_KNEE 0.85f              /* samples up to here go out as they are */
#define WAV_CEIL 0.99f              /* the soft clip's bound, never reached */
#define WAV_HEADROOM 2.0f /* the most the soft clip takes: beyond, scale */

/* The soft clip: the identity up to the knee, then x -> knee + r u / (1 +
 * u), u = (|x| - knee) / r, r = ceil - knee: slope 1 at the knee, so no
 * corner, and below the ceiling for any x.  Plain arithmetic, no libm:
 * the same 16-bit samples on every machine. */
static float soft_clip(float x)
{
    const float a = fabsf(x), r = WAV_CEIL - WAV_KNEE;
    if (a <= WAV_KNEE)
        return x;
    const float u = (a - WAV_KNEE) / r;
    const float y = WAV_KNEE + r * (u / (1.0f + u));
    return x < 0 ? -y : y;
}

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
    put_le(head + 16, 16, 4); /* the fmt chunk's size */
    put_le(head + 20, 1, 2);  /* PCM */
    put_le(head + 22, 1, 2);  /* mono */
    put_le(head + 24, rate, 4);
    put_le(head + 28, 2 * rate, 4); /* bytes a second */
    put_le(head + 32, 2, 2);        /* bytes a sample */
    put_le(head + 34, 16, 2);       /* bits a sample */
    memcpy(head + 36, "data", 4);
    put_le(head + 40, data, 4);
}

/* The live writer: the header first with the length not known (as a
 * pipe's reader expects, arecord's way), then each write's samples at
 * once, soft-clipped but never scaled (a peak to come cannot be waited
 * for: the same samples as a file's up to WAV_HEADROOM), flushed; a file
 * gets its true sizes at close. */
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
        frae_errorf(err, errlen, "%s: write failed: %s", path, strerror(errno));
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
            const float v = soft_clip(samples[i + j]);
            put_le(pcm + 2 * j,
                   (uint32_t)(uint16_t)(int16_t)lrintf(v * 32767.0f), 2);
        }
        if (fwrite(pcm, 2, (size_t)k, w->out.f) != (size_t)k)
            return frae_errorf(err, errlen, "%s: write failed: %s", w->out.path,
                               strerror(errno));
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

int frae_wav_write(frae_wav_writer *w, const float *samples, long n, char *err,
                   size_t errlen)
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
    /* past the soft clip's headroom, scaled into it first */
    const float g = w->peak > WAV_HEADROOM ? WAV_HEADROOM / w->peak : 1.0f;
    int bad = fflush(w->scratch) || fseek(w->scratch, 0, SEEK_SET) ||
              fwrite(head, 1, sizeof head, w->out.f) != sizeof head;
    float buf[WAV_BLOCK];
    unsigned char pcm[2 * WAV_BLOCK];
    for (long i = 0; i < w->n && !bad; i += WAV_BLOCK) {
        const size_t k = (size_t)(w->n - i < WAV_BLOCK ? w->n - i : WAV_BLOCK);
        bad = fread(buf, sizeof(float), k, w->scratch) != k;
        for (size_t j = 0; j < k && !bad; j++) /* as libsndfile rounds */
            put_le(pcm + 2 * j,
                   (uint32_t)(uint16_t)(int16_t)lrintf(soft_clip(buf[j] * g) *
                                                       32767.0f),
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
