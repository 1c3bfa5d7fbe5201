/* Inside the _frae extension: what its files share.  _frae.c: the
 * module, its error, the model object's lock, buffers and configs;
 * _frae_model.c: the model object and its methods; _frae_audio.c: the
 * audio functions; _frae_run.c: training runs (fit); _frae_decode.c: a
 * stream decoded to audio a chunk at a time. */
#ifndef FRAE_PY_FRAE_H
#define FRAE_PY_FRAE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as Python asks */

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "frae.h"
#include "frae_audio.h"
#include "frae_codec.h"
#include "frae_train.h"

extern PyObject *frae_py_error; /* frae.FraeError */
extern PyTypeObject frae_py_model_type, frae_py_run_type, frae_py_decoder_type;

typedef struct {
    PyObject_HEAD frae_model
        *m;               /* NULL once closed; read and written under lock */
    PyObject *owner;      /* a Run whose model m is (m is then its, not
                              destroyed here), or NULL */
    pthread_mutex_t lock; /* held by the one call using m */
    /* the thread holding lock (0: none), to refuse a call from inside a
     * call (a finalizer, a buffer's exporter) that would wait on itself */
    atomic_ulong holder;
} ModelObject;

PyObject *frae_py_fail(const char *msg);
/* A stream's frames (any version) through libfrae's reader, into y (all
 * of them if they fit in y_frames; NULL: counted): its header into s (a
 * version-5 stream's s->frames: the frames it gives); how many, or -1
 * and err (_frae_decode.c).  The header of a version-2 to -4 stream, once
 * a decoder for m accepts it: 0, or -1 and err (_frae_model.c). */
long frae_py_stream_frames(const frae_model *m, const void *buf, size_t size,
                           int through, float *y, uint64_t y_frames,
                           frae_stream *s, char *err, size_t errlen);
int frae_py_stream_header(const frae_model *m, const void *buf, size_t size,
                          frae_stream *s, char *err, size_t errlen);
/* codec settings from [(keyword, value or None), ...] (_frae.c) */
int frae_py_codec_settings(PyObject *options, frae_codec_settings *s);
int frae_py_model_lock(ModelObject *self);
void frae_py_model_unlock(ModelObject *self);
frae_model *frae_py_model_enter(ModelObject *self);
int frae_py_buffer(PyObject *o, Py_buffer *b, int writable, const char *fmt,
                   Py_ssize_t n, const char *what);
PyObject *frae_py_config_to_dict(const frae_config *c);
int frae_py_config_from_dict(PyObject *fields, frae_config *c);
int frae_py_options_into(PyObject *options, frae_run_config *rc);
PyObject *frae_py_create(PyObject *self, PyObject *args);
PyObject *frae_py_load(PyObject *self, PyObject *args);
PyObject *frae_py_meta(PyObject *self, PyObject *args);
PyObject *frae_py_models_dir_find(PyObject *self, PyObject *args);
PyObject *frae_py_models_dirs(PyObject *self, PyObject *noargs);
PyObject *frae_py_models(PyObject *self, PyObject *noargs);
PyObject *frae_py_models_add_dir(PyObject *self, PyObject *arg);
PyObject *frae_py_features(PyObject *self, PyObject *args);
PyObject *frae_py_vocode(PyObject *self, PyObject *args);
PyObject *frae_py_write_wav(PyObject *self, PyObject *args);
PyObject *frae_py_dtx_mask(PyObject *self, PyObject *args);
PyObject *frae_py_speech_latency(PyObject *self, PyObject *args);
PyObject *frae_py_checkpoint_features(PyObject *self, PyObject *args);
PyObject *frae_py_decoder(PyObject *self, PyObject *args);

#endif
