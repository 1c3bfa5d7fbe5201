/* Live PCM in (frae_audio.h): a WAV or raw 16-bit PCM on a descriptor
 * (a pipe from arecord, a socket), read as it comes, 10 ms a read at most
 * so that nothing waits on a read for more than a frame, and given back
 * as mono float samples.  The WAV's header is read up to its data chunk,
 * whose size is not believed: a live writer does not know it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h" /* frae_errorf */
#include "frae_audio.h"

struct frae_pcm_in {
    int fd;
    int rate, channels, float32; /* float32: IEEE float, else s16 */
    int bytes_per;               /* a sample frame's bytes */
    size_t per_read;             /* 10 ms of them */
    unsigned char *raw;          /* a read, after what is held */
    size_t held;                 /* bytes of a partial sample */
    float *mono;
    int ended;
};

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Exactly n bytes of fd: 0, or -1 at its end (or an error) before them. */
static int read_exact(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got, n -= (size_t)got;
    }
    return 0;
}

/* A WAV's fmt chunk of size bytes: 0, or -1 and err. */
static int read_fmt(frae_pcm_in *p, uint32_t size, char *err, size_t errlen)
{
    unsigned char fmt[40];
    if (size < 16 || size > sizeof fmt || read_exact(p->fd, fmt, size))
        return frae_errorf(err, errlen, "a WAV fmt chunk of %u bytes", size);
    unsigned tag = fmt[0] | fmt[1] << 8, bits = fmt[14] | fmt[15] << 8;
    if (tag == 0xfffe && size >= 26) /* extensible: its subformat */
        tag = fmt[24] | fmt[25] << 8;
    p->channels = fmt[2] | fmt[3] << 8;
    p->rate = (int)le32(fmt + 4);
    p->float32 = tag == 3 && bits == 32;
    if (!(tag == 1 && bits == 16) && !p->float32)
        return frae_errorf(err, errlen,
                           "a WAV of format %u, %u bits; a live input is "
                           "16-bit PCM or 32-bit float",
                           tag, bits);
    if (p->channels < 1 || p->channels > 16 || p->rate < 1000 ||
        p->rate > 384000)
        return frae_errorf(err, errlen, "a WAV of %d channels at %d Hz",
                           p->channels, p->rate);
    return 0;
}

/* What fd holds: a WAV (its header read, up to its data chunk) or raw
 * PCM, its first 4 bytes kept in raw.  0, or -1 and err. */
static int read_head(frae_pcm_in *p, int raw_rate, unsigned char *first,
                     char *err, size_t errlen)
{
    unsigned char h[12];
    if (read_exact(p->fd, h, 4))
        return frae_errorf(err, errlen, "no audio on standard input");
    if (memcmp(h, "RIFF", 4)) { /* raw PCM */
        p->rate = raw_rate, p->channels = 1;
        memcpy(first, h, 4);
        p->held = 4;
        return 0;
    }
    if (read_exact(p->fd, h + 4, 8) || memcmp(h + 8, "WAVE", 4))
        return frae_errorf(err, errlen, "a RIFF header, but not a WAV");
    for (int have_fmt = 0;;) {
        unsigned char c[8];
        if (read_exact(p->fd, c, 8))
            return frae_errorf(err, errlen, "a WAV header without its data");
        const uint32_t size = le32(c + 4);
        if (!memcmp(c, "data", 4))
            return have_fmt ? 0
                            : frae_errorf(err, errlen,
                                          "a WAV without its fmt chunk");
        if (!memcmp(c, "fmt ", 4)) {
            if (read_fmt(p, size, err, errlen))
                return -1;
            have_fmt = 1;
            continue;
        }
        for (uint32_t left = size + (size & 1); left;) { /* skip it */
            unsigned char skip[256];
            const size_t k = left < sizeof skip ? left : sizeof skip;
            if (read_exact(p->fd, skip, k))
                return frae_errorf(err, errlen,
                                   "a WAV header without its data");
            left -= (uint32_t)k;
        }
    }
}

frae_pcm_in *frae_pcm_in_open(int fd, int raw_rate, char *err, size_t errlen)
{
    frae_pcm_in *p = calloc(1, sizeof *p);
    unsigned char first[4];
    if (!p) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    p->fd = fd;
    if (read_head(p, raw_rate, first, err, errlen)) {
        free(p);
        return NULL;
    }
    p->bytes_per = (p->float32 ? 4 : 2) * p->channels;
    p->per_read =
        (size_t)(p->rate / 100 > 0 ? p->rate / 100 : 1) * (size_t)p->bytes_per;
    /* a read lands after what is held: raw PCM's 4 look-ahead bytes or a
     * partial sample, under 8 either way; mono takes every whole sample
     * raw can hold */
    const size_t raw_cap = p->per_read + 8;
    p->raw = malloc(raw_cap);
    p->mono = malloc(sizeof(float) * (raw_cap / (size_t)p->bytes_per + 1));
    if (!p->raw || !p->mono) {
        frae_pcm_in_close(p);
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(p->raw, first, p->held);
    return p;
}

int frae_pcm_in_rate(const frae_pcm_in *p) { return p->rate; }

long frae_pcm_in_read(frae_pcm_in *p, const float **mono, char *err,
                      size_t errlen)
{
    *mono = p->mono;
    if (p->ended)
        return 0;
    ssize_t got;
    do
        got = read(p->fd, p->raw + p->held, p->per_read);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return frae_errorf(err, errlen, "cannot read: %s", strerror(errno));
    p->ended = got == 0;
    p->held += (size_t)got;
    const size_t samples = p->held / (size_t)p->bytes_per;
    for (size_t i = 0; i < samples; i++) {
        double sum = 0;
        for (int c = 0; c < p->channels; c++) {
            const unsigned char *s =
                p->raw + i * p->bytes_per + c * (p->float32 ? 4 : 2);
            if (p->float32) {
                float v;
                memcpy(&v, s, 4);
                sum += v;
            } else {
                sum += (int16_t)(s[0] | s[1] << 8) / 32768.0;
            }
        }
        p->mono[i] = (float)(sum / p->channels);
    }
    const size_t taken = samples * (size_t)p->bytes_per;
    memmove(p->raw, p->raw + taken, p->held - taken);
    p->held -= taken;
    /* a read of a partial sample alone gives none: read again */
    return samples || p->ended ? (long)samples
                               : frae_pcm_in_read(p, mono, err, errlen);
}

void frae_pcm_in_close(frae_pcm_in *p)
{
    if (!p)
        return;
    free(p->raw), free(p->mono);
    free(p);
}
