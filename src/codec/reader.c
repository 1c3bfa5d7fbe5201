/* One reader for every stream version: 'frae decode's loop and Python's
 * decoder.  Versions 2 to 4 are files, decoded from their whole bytes
 * (frae_stream_decoder); version 5 is read as it comes, packet by packet
 * (frae_packet_read).  Either way the caller gets frames in order, a
 * sequence at a time, from one call; the reader's memory is allocated
 * once, when the header is read.  With pitch, each call's frames have
 * their voicing onsets' climbs back-filled (pitch_coder.c): a file's 64
 * frames at a time, a real-time stream's packet by packet, so nothing
 * waits for frames to come. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h" /* frae_pitch_backfill */
#include "codec/container.h"
#include "core/frae_internal.h"
#include "frae_codec.h"

/* versions 2 to 4: frames a call gives at most */
#define FILE_FRAMES 64

struct frae_stream_reader {
    const frae_net *model;
    int through;
    int have_header, done;
    frae_stream s;
    frae_packet_decoder *pd; /* version 5 */
    frae_stream_decoder *sd; /* versions 2 to 4 */
    uint32_t seq, t;         /* versions 2 to 4: the next frame's place */
    int width;               /* floats a frame */
    long cap;                /* frames a call gives at most */
    float *frames;           /* cap of them */
    int voiced_before;       /* the last frame given was voiced */
};

frae_stream_reader *frae_stream_reader_create(const frae_net *m)
{
    frae_stream_reader *r = calloc(1, sizeof *r);
    if (r)
        r->model = m;
    return r;
}

void frae_stream_reader_destroy(frae_stream_reader *r)
{
    if (!r)
        return;
    frae_packet_decoder_destroy(r->pd);
    frae_stream_decoder_destroy(r->sd);
    free(r->frames);
    free(r);
}

void frae_stream_reader_through(frae_stream_reader *r, int on)
{
    r->through = on != 0;
    if (r->pd)
        frae_packet_decoder_through(r->pd, r->through);
}

const frae_stream *frae_stream_reader_stream(const frae_stream_reader *r)
{
    return r->have_header ? &r->s : NULL;
}

size_t frae_stream_reader_window(const frae_stream_reader *r)
{
    return r->pd ? frae_packet_window(r->pd) : FRAE_STREAM_HEADER_V5_MAX;
}

void frae_stream_reader_counts(const frae_stream_reader *r,
                               frae_packet_counts *c)
{
    memset(c, 0, sizeof *c);
    if (r->pd)
        frae_packet_decoder_counts(r->pd, c);
    else if (r->sd)
        c->frames = (uint64_t)r->seq * r->s.frames + r->t;
}

/* The n frames just decoded, their onsets back-filled (with pitch) */
static void backfill(frae_stream_reader *r, long n)
{
    if (n > 0 && (r->s.flags & FRAE_STREAM_PITCH))
        frae_pitch_backfill(r->frames, n, r->width, r->model->cfg.frame_dim,
                            &r->voiced_before);
}

/* The header's frames buffer: 0, or -1 and err. */
static int frames_alloc(frae_stream_reader *r, char *err, size_t errlen)
{
    const frae_config *c = &r->model->cfg;
    r->width = c->frame_dim + 2 * ((r->s.flags & FRAE_STREAM_PITCH) != 0);
    r->cap =
        r->pd ? FRAE_PACKET_DECODE_MAX((long)r->s.packet_frames) : FILE_FRAMES;
    r->frames = malloc(sizeof(float) * (size_t)r->cap * (size_t)r->width);
    if (!r->frames)
        return frae_errorf(err, errlen, "out of memory");
    r->have_header = 1;
    return 0;
}

/* The header at buf: its bytes for version 5 (0: more to come), the
 * whole stream for the others (0 until end), or -1 and err. */
static long read_header(frae_stream_reader *r, const unsigned char *buf,
                        size_t avail, int end, size_t *need, char *err,
                        size_t errlen)
{
    const int magic = !memcmp(buf, "FRAEBS", avail < 6 ? avail : 6);
    if (!(avail >= 7 && magic && buf[6] == FRAE_STREAM_VERSION_PACKETS)) {
        if (!end && avail < 7 && magic) { /* may yet be version 5 */
            *need = 7;
            return 0;
        }
        if (avail < 7 && magic) /* a pipe's bytes ended */
            return frae_errorf(err, errlen,
                               "truncated: shorter than a version-5 header");
        if (!end) /* versions 2 to 4 are read whole */
            return magic ? frae_errorf(err, errlen,
                                       "a version-%d stream is a file, read "
                                       "whole; real-time packets (encode "
                                       "--packet-ms, version 5) are what a "
                                       "pipe carries",
                                       buf[6])
                         : frae_errorf(err, errlen,
                                       "not a .fbs stream (no FRAEBS)");
        r->sd = frae_stream_decoder_create(r->model, buf, avail, err, errlen);
        if (!r->sd)
            return -1;
        r->s = *frae_stream_decoder_stream(r->sd);
        return frames_alloc(r, err, errlen) ? -1 : 0;
    }
    const long hb = frae_packet_header_parse(buf, avail, &r->s, err, errlen);
    if (hb < 0)
        return -1;
    if (!hb) {
        if (end)
            return frae_errorf(err, errlen,
                               "truncated: shorter than a version-5 header");
        *need = avail + 1; /* a byte at a time: a pipe is not read ahead */
        return 0;
    }
    r->pd = frae_packet_decoder_create(r->model, &r->s, err, errlen);
    if (!r->pd)
        return -1;
    frae_packet_decoder_through(r->pd, r->through);
    return frames_alloc(r, err, errlen) ? -1 : hb;
}

long frae_stream_read(frae_stream_reader *r, const unsigned char *buf,
                      size_t avail, int end, size_t *used, size_t *need,
                      const float **frames, uint32_t *seq, char *err,
                      size_t errlen)
{
    *used = 0, *need = 0, *frames = r->frames, *seq = 0;
    if (!r->have_header) {
        const long hb = read_header(r, buf, avail, end, need, err, errlen);
        if (hb < 0)
            return -1;
        if (!r->have_header || r->pd) {
            *used = (size_t)hb;
            *frames = r->frames;
            return 0;
        }
    }
    *frames = r->frames; /* allocated with the header */
    if (r->pd) {
        const long k = frae_packet_read(r->pd, buf, avail, end, used, need,
                                        r->frames, r->cap);
        frae_packet_counts c;
        frae_packet_decoder_counts(r->pd, &c);
        if (!k && !*used && end && r->s.frames && !c.frames)
            return frae_errorf(err, errlen,
                               "truncated: the header declares %u frames and "
                               "no packet follows",
                               r->s.frames);
        backfill(r, k);
        return k;
    }
    /* versions 2 to 4: the frames left of this sequence, cap at most */
    if (r->done || r->seq >= r->s.sequences)
        return r->done = 1, 0;
    const uint32_t left = r->s.frames - r->t;
    const long n = left < (uint32_t)r->cap ? (long)left : r->cap;
    for (long i = 0; i < n; i++)
        if (frae_stream_decode(r->sd, r->frames + (size_t)i * r->width, NULL,
                               NULL, err, errlen) <= 0) {
            r->done = 1;
            return -1;
        }
    *seq = r->seq;
    if (!r->t)
        r->voiced_before = 0; /* a sequence's first frames */
    backfill(r, n);
    r->t += (uint32_t)n;
    if (r->t == r->s.frames)
        r->seq++, r->t = 0;
    return n;
}
