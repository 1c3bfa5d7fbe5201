/* _frae's stream decoder (_frae.h): a .fbs stream to audio a chunk at a
 * time, in memory that does not grow with the stream: frames decoded one
 * by one (frae_stream_decoder) and vocoded as they come (the vocoder,
 * seed 1, or Griffin-Lim), as 'frae decode --wav' does, the samples into
 * the caller's buffer and, given a path, into a WAV (frae_wav_open).  The
 * samples are frae.vocode's of the decoded frames, to the bit: silence to
 * frame 0's centre, a hop a frame, the flush, silence to the last window's
 * end ((frames - 1) * hop + win samples).
 *
 * The decoder holds the model object and the stream's buffer; each read
 * takes the model's lock for its duration (a closed model raises), so a
 * chunk's caller may keep the decoder between reads while other calls use
 * the model. */
#include "_frae.h"

typedef struct {
    PyObject_HEAD ModelObject *model; /* a reference: its net decodes */
    Py_buffer stream;                 /* held while sd reads it */
    int have_stream;
    atomic_int busy; /* a read or close running (one at a time) */
    /* libfrae's reader over the bytes (every version), a call's frames
     * held in rf and given one at a time */
    frae_stream_reader *rd;
    const float *rf;
    long rn, rat;
    size_t pos; /* the bytes read */
    frae_features f;
    int width, hnm, failed;
    uint32_t frames, t; /* the stream's frames, and those decoded */
    frae_audio_out *ao; /* libfrae-audio's: frames to samples */
    float *frame;       /* one decoded frame */
    float *pend;        /* the samples of the last step (a frame, the end) */
    long pend_len, pend_at;
    int step;        /* 0: the lead, 1: frames, 2: the end, 4: done */
    long total, out; /* samples the stream makes, and made so far */
    frae_wav_writer *w;
} DecoderObject;

static void decoder_free(DecoderObject *d)
{
    frae_wav_abort(d->w); /* an unfinished WAV leaves the old file */
    d->w = NULL;
    frae_stream_reader_destroy(d->rd);
    d->rd = NULL;
    free(d->frame), free(d->pend);
    d->frame = d->pend = NULL;
    frae_audio_out_destroy(d->ao);
    d->ao = NULL;
    if (d->have_stream)
        PyBuffer_Release(&d->stream);
    d->have_stream = 0;
}

static void decoder_dealloc(DecoderObject *self)
{
    decoder_free(self);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The next frame, from the reader's last call or its next: 1, 0 at the
 * end, or -1 and why. */
static int next_frame(DecoderObject *d, char *why, size_t whylen)
{
    while (d->rat == d->rn) {
        size_t used, need;
        uint32_t seq;
        const long k = frae_stream_read(
            d->rd, (const unsigned char *)d->stream.buf + d->pos,
            (size_t)d->stream.len - d->pos, 1, &used, &need, &d->rf, &seq, why,
            whylen);
        if (k < 0)
            return -1;
        d->pos += used;
        if (!k && !used)
            return 0;
        d->rn = k, d->rat = 0;
    }
    memcpy(d->frame, d->rf + (size_t)d->rat++ * d->width,
           sizeof(float) * (size_t)d->width);
    return 1;
}

/* The next step's samples into pend (libfrae-audio's timeline: the lead,
 * a frame's, the end's): 1, 0 at the end, or -1 and one line in err. */
static int decoder_step(DecoderObject *d, char *err, size_t errlen)
{
    d->pend_at = 0;
    if (d->step == 0) {
        d->step = 1;
        d->pend_len = frae_audio_out_begin(d->ao, d->pend);
        return 1;
    }
    if (d->step == 1 && d->t < d->frames) {
        char why[480] = "";
        const int rc = next_frame(d, why, sizeof why);
        if (rc <= 0) {
            if (!rc) /* as FRAE.decode words its errors */
                snprintf(err, errlen, "stream: ended at frame %u of %u", d->t,
                         d->frames);
            else
                snprintf(err, errlen, "stream: %s", why);
            return -1;
        }
        for (int c = 0; c < d->width; c++)
            if (!isfinite(d->frame[c])) {
                snprintf(err, errlen,
                         "decode: frame %u decodes a non-finite value (%g, "
                         "column %d)",
                         d->t, (double)d->frame[c], c);
                return -1;
            }
        d->t++;
        d->pend_len = frae_audio_out_frame(d->ao, d->frame, d->pend);
        return 1;
    }
    if (d->step == 1) {
        d->step = 2;
        d->pend_len = frae_audio_out_end(d->ao, d->pend);
        return 1;
    }
    d->pend_len = 0;
    return 0;
}

/* Up to n samples into out (NULL: made and written to the WAV only; n is
 * then unbounded), the GIL released by the caller: how many, or -1 and
 * one line in err.  The end commits the WAV. */
static long decoder_fill(DecoderObject *d, float *out, long n, char *err,
                         size_t errlen)
{
    long got = 0;
    while (!out || got < n) {
        if (d->pend_at == d->pend_len) {
            const int rc = d->step > 3 ? 0 : decoder_step(d, err, errlen);
            if (rc < 0)
                return -1;
            if (!rc) {
                d->step = 4;
                break;
            }
            if (d->w && d->pend_len &&
                frae_wav_write(d->w, d->pend, d->pend_len, err, errlen))
                return -1;
            continue;
        }
        long k = d->pend_len - d->pend_at;
        if (out) {
            k = k < n - got ? k : n - got;
            memcpy(out + got, d->pend + d->pend_at, sizeof(float) * (size_t)k);
        }
        d->pend_at += k, got += k, d->out += k;
    }
    /* every sample made: the steps left make none, and end the stream
     * (its WAV committed) */
    while (d->out == d->total && d->pend_at == d->pend_len && d->step < 4) {
        const int rc = decoder_step(d, err, errlen);
        if (rc < 0)
            return -1;
        if (!rc)
            d->step = 4;
        else if (d->pend_len) /* more: the count below says it */
            d->out += d->pend_len, d->step = 4;
    }
    if (d->step == 4 && d->out != d->total) {
        snprintf(err, errlen, "the vocoder gave %ld samples, not %ld", d->out,
                 d->total);
        return -1;
    }
    if (d->step == 4 && d->w) {
        frae_wav_writer *w = d->w;
        d->w = NULL;
        if (frae_wav_close(w, err, errlen))
            return -1;
    }
    return got;
}

/* read(buf, n): the next samples into buf (a writable buffer of n
 * float32), as many as it holds or as are left; None: every sample left,
 * into the WAV alone.  Returns how many (0 at the end). */
static PyObject *decoder_read(DecoderObject *self, PyObject *args)
{
    PyObject *bo;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &bo, &n))
        return NULL;
    Py_buffer b;
    if (bo != Py_None && frae_py_buffer(bo, &b, 1, "f", n, "buf"))
        return NULL;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&self->busy, &idle, 1)) {
        if (bo != Py_None)
            PyBuffer_Release(&b);
        return frae_py_fail("the decoder is in use by another call");
    }
    char err[512] = "";
    long got = 0;
    if (self->failed || !self->rd) {
        got = -1;
        snprintf(err, sizeof err, "the decoder %s",
                 self->failed ? "failed before" : "is closed");
    } else if (!frae_py_model_enter(self->model)) {
        atomic_store(&self->busy, 0);
        if (bo != Py_None)
            PyBuffer_Release(&b);
        return NULL; /* closed: its net is gone */
    } else {
        Py_BEGIN_ALLOW_THREADS got =
            decoder_fill(self, bo == Py_None ? NULL : b.buf,
                         bo == Py_None ? 0 : (long)n, err, sizeof err);
        Py_END_ALLOW_THREADS frae_py_model_unlock(self->model);
        if (got < 0) {
            self->failed = 1;
            decoder_free(self); /* the WAV aborted, the old file kept */
        }
    }
    atomic_store(&self->busy, 0);
    if (bo != Py_None)
        PyBuffer_Release(&b);
    if (got < 0) {
        const int value = !strncmp(err, "decode: frame", 13);
        PyErr_SetString(value ? PyExc_ValueError : frae_py_error, err);
        return NULL;
    }
    return PyLong_FromLong(got);
}

/* close(): frees the decoder now (an unfinished WAV is abandoned, the old
 * file kept); a later read raises. */
static PyObject *decoder_close(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&self->busy, &idle, 1))
        return frae_py_fail("the decoder is in use by another call");
    decoder_free(self);
    atomic_store(&self->busy, 0);
    Py_RETURN_NONE;
}

static PyMethodDef decoder_methods[] = {
    {"read", (PyCFunction)decoder_read, METH_VARARGS, "the next samples"},
    {"close", (PyCFunction)decoder_close, METH_NOARGS, "frees it now"},
    {NULL, NULL, 0, NULL}};

static PyObject *decoder_samples(DecoderObject *self, void *unused)
{
    (void)unused;
    return PyLong_FromLong(self->total);
}

static PyGetSetDef decoder_getset[] = {{"samples", (getter)decoder_samples,
                                        NULL, "samples the stream makes", NULL},
                                       {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject frae_py_decoder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frae._frae.Decoder",
    .tp_basicsize = sizeof(DecoderObject),
    .tp_dealloc = (destructor)decoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a .fbs stream decoded to audio a chunk at a time",
    .tp_methods = decoder_methods,
    .tp_getset = decoder_getset,
};

/* The vocoder (or Griffin-Lim) and the buffers; 0, or -1 and err. */
static int decoder_audio(DecoderObject *d, int gl_iters, int polish, char *err,
                         size_t errlen)
{
    if (!(d->ao = frae_audio_out_create(&d->f, d->hnm, gl_iters, polish, err,
                                        errlen)))
        return -1;
    snprintf(err, errlen, "out of memory");
    d->frame = malloc(sizeof(float) * (size_t)d->width);
    d->pend = malloc(sizeof(float) * (size_t)frae_audio_out_max(d->ao));
    return d->frame && d->pend ? 0 : -1;
}

long frae_py_stream_frames(const frae_model *m, const void *buf, size_t size,
                           int through, float *y, uint64_t y_frames,
                           frae_stream *s, char *err, size_t errlen)
{
    frae_stream_reader *r = frae_stream_reader_create(frae_model_net(m));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    frae_stream_reader_through(r, through);
    const frae_config *c = frae_get_config(m);
    uint64_t frames = 0;
    size_t at = 0;
    long k = 0;
    for (;;) {
        size_t used, need;
        const float *f;
        uint32_t seq;
        k = frae_stream_read(r, (const unsigned char *)buf + at, size - at, 1,
                             &used, &need, &f, &seq, err, errlen);
        if (k < 0 || (!k && !used))
            break;
        const int width =
            c->frame_dim + 2 * ((frae_stream_reader_stream(r)->flags &
                                 FRAE_STREAM_PITCH) != 0);
        if (y && frames + (uint64_t)k <= y_frames)
            memcpy(y + frames * (uint64_t)width, f,
                   sizeof(float) * (size_t)k * (size_t)width);
        frames += (uint64_t)k, at += used;
    }
    if (k >= 0)
        *s = *frae_stream_reader_stream(r);
    frae_stream_reader_destroy(r);
    if (k < 0)
        return -1;
    if (frames > UINT32_MAX) {
        snprintf(err, errlen, "a stream of over 2^32 frames");
        return -1;
    }
    if (s->version == FRAE_STREAM_VERSION_PACKETS)
        s->frames = (uint32_t)frames; /* what came, the losses concealed */
    return (long)frames;
}

/* decoder(model, stream, sample_rate, n_mels, hop, win, n_fft, fmin, fmax,
 * gl_iters[, wav, vocoder, through, polish]): a Decoder of a one-sequence stream's audio,
 * with pitch through the vocoder, else Griffin-Lim (vocoder, as the codec
 * table's: 0 so, 1 the vocoder, 2 Griffin-Lim); wav (a path, or None)
 * written as the samples are read, committed at the end. */
PyObject *frae_py_decoder(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *mo, *so, *wav = Py_None;
    int gl_iters, vocoder = 0, through = 0, polish = 0;
    frae_features f;
    frae_features_default(&f);
    if (!PyArg_ParseTuple(args, "O!Oiiiiiffi|Oiii", &frae_py_model_type, &mo,
                          &so, &f.sample_rate, &f.n_mels, &f.hop, &f.win,
                          &f.n_fft, &f.fmin, &f.fmax, &gl_iters, &wav, &vocoder,
                          &through, &polish))
        return NULL;
    char err[512];
    if (frae_features_check(&f, err, sizeof err))
        return PyErr_Format(PyExc_ValueError, "decode: %s", err);
    const char *path = NULL;
    if (wav != Py_None && !(path = PyUnicode_AsUTF8(wav)))
        return NULL;
    DecoderObject *d = PyObject_New(DecoderObject, &frae_py_decoder_type);
    if (!d)
        return NULL;
    memset((char *)d + sizeof(PyObject), 0, sizeof *d - sizeof(PyObject));
    atomic_init(&d->busy, 0);
    d->model = (ModelObject *)Py_NewRef(mo);
    d->f = f;
    if (PyObject_GetBuffer(so, &d->stream, PyBUF_SIMPLE) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    d->have_stream = 1;
    frae_model *m = frae_py_model_enter(d->model);
    if (!m) {
        Py_DECREF(d);
        return NULL;
    }
    int rc = -1;
    const unsigned char *head = d->stream.buf;
    frae_stream counted;
    const int packets = d->stream.len >= 7 && !memcmp(head, "FRAEBS", 6) &&
                        head[6] == FRAE_STREAM_VERSION_PACKETS;
    const frae_stream *s = NULL;
    if (through && !packets)
        snprintf(err, sizeof err,
                 "decode: through: for real-time packets (encode "
                 "--packet-ms)");
    else if (!(d->rd = frae_stream_reader_create(frae_model_net(m))))
        snprintf(err, sizeof err, "out of memory");
    /* version 5's frames are those that come: counted by a first pass */
    else if (packets ? frae_py_stream_frames(
                           m, d->stream.buf, (size_t)d->stream.len, through,
                           NULL, 0, &counted, err, sizeof err) >= 0
                     : !frae_py_stream_header(m, d->stream.buf,
                                              (size_t)d->stream.len, &counted,
                                              err, sizeof err))
        s = &counted;
    if (s) {
        frae_stream_reader_through(d->rd, through);
        const int pitch = (s->flags & FRAE_STREAM_PITCH) != 0;
        d->width = frae_get_config(m)->frame_dim + 2 * pitch;
        d->hnm = vocoder ? vocoder == 1 : d->width == f.n_mels + 2;
        d->frames = s->frames;
        if (d->hnm && d->width != f.n_mels + 2)
            snprintf(err, sizeof err,
                     "decode: vocoder='hnm': the stream carries no pitch "
                     "(the model codes the envelope alone); use 'gl'");
        else if (!((s->flags & 1) && s->sequences == 1))
            snprintf(err, sizeof err,
                     "decode: the stream holds %u sequences; "
                     "decode(frames=True) and vocode each",
                     s->sequences);
        else if (!s->frames ||
                 (!d->hnm && d->width != f.n_mels && d->width != f.n_mels + 2))
            snprintf(err, sizeof err,
                     "vocode: %u frames of %d values; the features have %d "
                     "mels (%d with pitch)",
                     s->frames, d->width, f.n_mels, f.n_mels + 2);
        else
            rc = 0;
    }
    frae_py_model_unlock(d->model);
    if (!rc) {
        d->total = frae_audio_out_samples(&f, (long)d->frames);
        Py_BEGIN_ALLOW_THREADS rc =
            decoder_audio(d, gl_iters, polish, err, sizeof err);
        if (!rc && path &&
            !(d->w = frae_wav_open(path, f.sample_rate, err, sizeof err)))
            rc = -1;
        Py_END_ALLOW_THREADS
    }
    if (rc) {
        Py_DECREF(d);
        return frae_py_fail(err);
    }
    return (PyObject *)d;
}
