/* Features back to audio as they come (frae_audio.h, frae_audio_out): the
 * one place the samples of a sequence are laid on the features' timeline,
 * for 'frae decode --wav', 'frae vocode' and Python's vocode and
 * Codec.decode alike. */
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h" /* frae_polish */
#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf */

struct frae_audio_out {
    frae_features f;
    frae_vocoder *voc;   /* frames with pitch, or */
    frae_gl *gl;         /* Griffin-Lim */
    frae_polish *polish; /* the vocoder's samples polished, or NULL */
    float *raw;          /* [win] the vocoder's samples, to polish */
    long max;            /* the most samples one call gives */
    void *voc_mem;
};

frae_audio_out *frae_audio_out_create(const frae_features *f, int vocoder,
                                      int gl_iters, int polish, char *err,
                                      size_t errlen)
{
    frae_audio_out *o = calloc(1, sizeof *o);
    if (!o) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    o->f = *f;
    o->max = f->win; /* the vocoder's lead or tail, less than a window */
    if (vocoder) {
        const size_t size = frae_vocoder_size(f);
        o->voc_mem = size ? malloc(size) : NULL;
        if (size && !o->voc_mem)
            frae_errorf(err, errlen, "out of memory");
        else /* no size: init says why */
            o->voc = frae_vocoder_init(o->voc_mem, f, 1, err, errlen);
        if (o->voc && polish > 0) {
            o->raw = malloc(sizeof(float) * (size_t)f->win);
            o->polish =
                o->raw ? frae_polish_create(f, polish, err, errlen) : NULL;
            if (!o->polish) {
                if (!o->raw)
                    frae_errorf(err, errlen, "out of memory");
                o->voc = NULL;
            } else
                o->max = frae_polish_max(o->polish);
        }
    } else if ((o->gl = frae_gl_create(f, gl_iters < 0 ? 32 : gl_iters, err,
                                       errlen))) {
        const long most = frae_gl_max_samples(o->gl);
        o->max = most > o->max ? most : o->max;
    }
    if (!o->voc && !o->gl) {
        frae_audio_out_destroy(o);
        return NULL;
    }
    return o;
}

void frae_audio_out_destroy(frae_audio_out *o)
{
    if (!o)
        return;
    frae_gl_destroy(o->gl);
    frae_polish_destroy(o->polish);
    free(o->raw);
    free(o->voc_mem);
    free(o);
}

long frae_audio_out_max(const frae_audio_out *o) { return o->max; }

long frae_audio_out_samples(const frae_features *f, long frames)
{
    return frames < 1 ? 0 : (frames - 1) * (long)f->hop + f->win;
}

long frae_audio_out_begin(frae_audio_out *o, float *out)
{
    if (o->gl) {
        frae_gl_reset(o->gl);
        return 0;
    }
    /* the vocoder's call t ends at frame t's centre: before frame 0's,
     * win/2 - hop samples of silence */
    frae_vocoder_reset(o->voc);
    const long lead = o->f.win / 2 - o->f.hop;
    memset(out, 0, sizeof(float) * (size_t)lead);
    if (o->polish) {
        frae_polish_reset(o->polish);
        return frae_polish_push(o->polish, out, lead, NULL, 0, out);
    }
    return lead;
}

long frae_audio_out_frame(frae_audio_out *o, const float *frame, float *out)
{
    if (o->gl)
        return frae_gl_frame(o->gl, frame, out);
    if (o->polish) {
        frae_vocoder_frame(o->voc, frame, o->raw);
        return frae_polish_push(o->polish, o->raw, o->f.hop, frame, 0, out);
    }
    frae_vocoder_frame(o->voc, frame, out);
    return o->f.hop;
}

long frae_audio_out_end(frae_audio_out *o, float *out)
{
    if (o->gl)
        return frae_gl_flush(o->gl, out);
    /* the hop after the last centre, then silence to the last frame's
     * window's end */
    const long tail = o->f.win - o->f.win / 2 - o->f.hop;
    float *to = o->polish ? o->raw : out;
    frae_vocoder_flush(o->voc, to);
    memset(to + o->f.hop, 0, sizeof(float) * (size_t)tail);
    if (o->polish)
        return frae_polish_push(o->polish, to, o->f.hop + tail, NULL, 1, out);
    return o->f.hop + tail;
}
