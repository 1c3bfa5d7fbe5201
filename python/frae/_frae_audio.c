/* _frae's audio functions (_frae.h): features of audio, the vocoder, WAV
 * files and the DTX gate, as the command's. */
#include "_frae.h"

/* ---- module functions ---------------------------------------------------- */

/* features(path, sample_rate, n_mels, hop, win, n_fft, fmin, fmax,
 * resample, pitch, f0) -> (bytes, frames, width): width n_mels, + 2 with
 * pitch (f0 in Hz and voicing, as 'frae features --pitch'); f0, a name of
 * the tracker's last step or None, as 'frae features --f0' */
PyObject *frae_py_features(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *f0 = NULL;
    frae_features f;
    frae_features_default(&f);
    int resample = 1, pitch = 0;
    if (!PyArg_ParseTuple(args, "s|iiiiiffppz", &path, &f.sample_rate,
                          &f.n_mels, &f.hop, &f.win, &f.n_fft, &f.fmin, &f.fmax,
                          &resample, &pitch, &f0))
        return NULL;
    f.pitch = pitch;
    if (f0 && (f.pitch = frae_features_pitch_steps(f0)) < 0)
        return PyErr_Format(PyExc_ValueError,
                            "features: f0 '%s': yin, yin-hp or refined", f0);
    char err[512];
    if (frae_features_check(&f, err, sizeof err))
        return PyErr_Format(PyExc_ValueError, "features: %s", err);
    float *feats = NULL;
    long frames = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = frae_audio_features(path, &f, resample, &feats,
                                                    &frames, err, sizeof err);
    Py_END_ALLOW_THREADS if (rc) return frae_py_fail(err);
    const int width = FRAE_FEATURE_WIDTH(&f);
    PyObject *r = Py_BuildValue(
        "(y#li)", (const char *)feats,
        (Py_ssize_t)(sizeof(float) * (size_t)frames * width), frames, width);
    free(feats);
    return r;
}

/* vocode(x, frames, width, sample_rate, n_mels, hop, win, n_fft, fmin,
 * fmax, gl_iters[, polish]) -> bytes of float32 samples: features back to audio as
 * 'frae vocode' and 'frae decode --wav' make it, on the features'
 * timeline ((frames - 1) * hop + win samples): with pitch (width n_mels +
 * 2) the harmonic-plus-noise vocoder (seed 1), else Griffin-Lim. */
PyObject *frae_py_vocode(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo;
    long frames;
    int width, gl_iters, polish = 0;
    frae_features f;
    frae_features_default(&f);
    if (!PyArg_ParseTuple(args, "Oliiiiiiffi|i", &xo, &frames, &width,
                          &f.sample_rate, &f.n_mels, &f.hop, &f.win, &f.n_fft,
                          &f.fmin, &f.fmax, &gl_iters, &polish))
        return NULL;
    char err[512];
    if (frae_features_check(&f, err, sizeof err))
        return PyErr_Format(PyExc_ValueError, "vocode: %s", err);
    const int hnm = width == f.n_mels + 2;
    if (frames < 1 || (!hnm && width != f.n_mels))
        return PyErr_Format(PyExc_ValueError,
                            "vocode: frames of %d values; the features have "
                            "%d mels (%d with pitch)",
                            width, f.n_mels, f.n_mels + 2);
    Py_buffer xb;
    if (frae_py_buffer(xo, &xb, 0, "f", (Py_ssize_t)frames * width, "x"))
        return NULL;
    const long total = (frames - 1) * (long)f.hop + f.win;
    PyObject *r =
        PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(float) * total);
    if (!r) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    float *out = (float *)PyBytes_AS_STRING(r);
    const float *x = xb.buf;
    int ok = 0;
    Py_BEGIN_ALLOW_THREADS
        /* libfrae-audio's one timeline: as 'frae vocode' and 'frae decode --wav' */
        frae_audio_out *ao =
            frae_audio_out_create(&f, hnm, gl_iters, polish, err, sizeof err);
    float *buf =
        ao ? malloc(sizeof(float) * (size_t)frae_audio_out_max(ao)) : NULL;
    if (ao && !buf)
        snprintf(err, sizeof err, "out of memory");
    if (buf) {
        long at = 0;
        ok = 1;
        for (long t = -1; ok && t <= frames; t++) {
            const long n =
                t < 0 ? frae_audio_out_begin(ao, buf)
                : t == frames
                    ? frae_audio_out_end(ao, buf)
                    : frae_audio_out_frame(ao, x + (size_t)t * width, buf);
            ok = at + n <= total;
            if (ok)
                memcpy(out + at, buf, sizeof(float) * (size_t)n);
            at += n;
        }
        ok = ok && at == total;
        if (!ok)
            snprintf(err, sizeof err, "the vocoder gave %ld samples, not %ld",
                     at, total);
    }
    free(buf);
    frae_audio_out_destroy(ao);
    Py_END_ALLOW_THREADS PyBuffer_Release(&xb);
    if (!ok) {
        Py_DECREF(r);
        return PyErr_Format(frae_py_error, "vocode: %s", err);
    }
    return r;
}

/* write_wav(path, bytes of float32 samples, rate): 16-bit PCM as 'frae
 * decode --wav' and 'frae vocode' write it (frae_wav_open), atomically. */
PyObject *frae_py_write_wav(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *x;
    Py_ssize_t len;
    int rate;
    if (!PyArg_ParseTuple(args, "sy#i", &path, &x, &len, &rate))
        return NULL;
    char err[512];
    int rc = -1;
    Py_BEGIN_ALLOW_THREADS frae_wav_writer *w =
        frae_wav_open(path, rate, err, sizeof err);
    if (w &&
        frae_wav_write(w, (const float *)(const void *)x,
                       (long)((size_t)len / sizeof(float)), err, sizeof err))
        frae_wav_abort(w);
    else if (w)
        rc = frae_wav_close(w, err, sizeof err);
    Py_END_ALLOW_THREADS if (rc) return PyErr_Format(frae_py_error, "%s", err);
    Py_RETURN_NONE;
}

/* checkpoint_features(path) -> (sample_rate, n_mels, hop, win, n_fft,
 * fmin, fmax, floor, offset, scale), or None for a model trained on
 * frames: frae_checkpoint_features, FraeError for a file that does not
 * open or bad metadata. */
PyObject *frae_py_checkpoint_features(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    char err[512], msg[1100];
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    if (!ck)
        return frae_py_fail(err);
    frae_features f;
    const int have = frae_checkpoint_features(ck, &f, err, sizeof err);
    frae_checkpoint_close(ck);
    if (have < 0) {
        snprintf(msg, sizeof msg, "%s: %s", path, err);
        return frae_py_fail(msg);
    }
    if (!have)
        Py_RETURN_NONE;
    return Py_BuildValue("(iiiiiddddd)", f.sample_rate, f.n_mels, f.hop, f.win,
                         f.n_fft, (double)f.fmin, (double)f.fmax,
                         (double)f.floor, (double)f.offset, (double)f.scale);
}

/* speech_latency(sample_rate, n_mels, hop, win, n_fft, fmin, fmax,
 * lookahead) -> samples: frae_speech_latency, the settings checked first
 * (ValueError). */
PyObject *frae_py_speech_latency(PyObject *self, PyObject *args)
{
    (void)self;
    frae_features f;
    frae_features_default(&f);
    int lookahead;
    if (!PyArg_ParseTuple(args, "iiiiiffi", &f.sample_rate, &f.n_mels, &f.hop,
                          &f.win, &f.n_fft, &f.fmin, &f.fmax, &lookahead))
        return NULL;
    char err[512];
    if (frae_features_check(&f, err, sizeof err))
        return PyErr_Format(PyExc_ValueError, "latency: %s", err);
    return PyLong_FromLong(frae_speech_latency(&f, lookahead));
}

/* dtx_mask(x, nseq, nframes, width, sample_rate, n_mels, hop, win, n_fft,
 * fmin, fmax, floor, offset, scale, level) -> bytes of int32 [nseq x
 * nframes]: 'frae encode --dtx''s silent frames (frae_dtx_gate), each
 * sequence from a fresh gate. */
PyObject *frae_py_dtx_mask(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo;
    int nseq, nframes, width;
    double level;
    frae_features f;
    frae_features_default(&f);
    if (!PyArg_ParseTuple(args, "Oiiiiiiiifffffd", &xo, &nseq, &nframes, &width,
                          &f.sample_rate, &f.n_mels, &f.hop, &f.win, &f.n_fft,
                          &f.fmin, &f.fmax, &f.floor, &f.offset, &f.scale,
                          &level))
        return NULL;
    if (nseq < 1 || nframes < 1 || width < f.n_mels)
        return PyErr_Format(PyExc_ValueError,
                            "dtx: frames of %d values; the features have %d "
                            "mels",
                            width, f.n_mels);
    Py_buffer xb;
    if (frae_py_buffer(xo, &xb, 0, "f", (Py_ssize_t)nseq * nframes * width,
                       "x"))
        return NULL;
    char err[512];
    frae_dtx_gate g;
    if (frae_dtx_gate_init(&g, &f, level, err, sizeof err)) {
        PyBuffer_Release(&xb);
        return PyErr_Format(PyExc_ValueError, "dtx: %s", err);
    }
    PyObject *r = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) *
                                                      nseq * nframes);
    if (r) {
        int32_t *mask = (int32_t *)PyBytes_AS_STRING(r);
        const float *x = xb.buf;
        for (int q = 0; q < nseq; q++) {
            frae_dtx_gate_reset(&g);
            for (int t = 0; t < nframes; t++, x += width)
                mask[(size_t)q * nframes + t] = frae_dtx_gate_silent(&g, x);
        }
    }
    PyBuffer_Release(&xb);
    return r;
}
