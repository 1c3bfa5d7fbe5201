/* _frae: the CPython extension under the frae module (frae/__init__.py is
 * the Keras-shaped API; this file is its bridge to libfrae).
 *
 * Arrays cross as buffers (the buffer protocol, so no NumPy C API):
 * __init__.py hands over C-contiguous float32 / int32 arrays, which are
 * used in place, and NumPy arrays to write into.  Every call that computes
 * releases the GIL; every libfrae error becomes a frae.FraeError carrying
 * libfrae's one-line message.  Model options are parsed by the command
 * line's own parser (cli_model_option), so a bad value reads the same here
 * as in 'frae train'.
 *
 * Threads: a model is one set of buffers (its batch state, scratch), so
 * every method runs under the object's own lock, from before it first
 * reads the model to after it last does; close() takes it too, so it waits
 * for a running call and a later call finds the model gone (FraeError).
 * The lock is taken with the GIL released when it is busy: the holder may
 * be computing with the GIL released and need it back to finish. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "frae_internal.h"
#include "util.h"

static PyObject *FraeError;

typedef struct {
    PyObject_HEAD
    frae_model *m;         /* NULL once closed; read and written under lock */
    pthread_mutex_t lock;  /* held by the one call using m */
    /* the thread holding lock (0: none), to refuse a call from inside a
     * call (a finalizer, a buffer's exporter) that would wait on itself */
    atomic_ulong holder;
} ModelObject;

static PyTypeObject ModelType;

static PyObject *fail(const char *msg)
{
    PyErr_SetString(FraeError, msg);
    return NULL;
}

/* Takes self's lock; 0, or -1 with FraeError set (a re-entrant call). */
static int model_lock(ModelObject *self)
{
    const unsigned long me = PyThread_get_thread_ident();
    if (pthread_mutex_trylock(&self->lock)) {
        if (atomic_load_explicit(&self->holder, memory_order_relaxed) == me) {
            fail("the model was called from inside a call on it (in this "
                 "thread): that call would wait for itself");
            return -1;
        }
        /* the holder may be computing without the GIL and need it back */
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->lock);
        Py_END_ALLOW_THREADS
    }
    atomic_store_explicit(&self->holder, me, memory_order_relaxed);
    return 0;
}

static void model_unlock(ModelObject *self)
{
    atomic_store_explicit(&self->holder, 0, memory_order_relaxed);
    pthread_mutex_unlock(&self->lock);
}

/* The model of a call, self's lock held (model_unlock when done with it),
 * or NULL with FraeError set: closed, or a re-entrant call. */
static frae_model *model_enter(ModelObject *self)
{
    if (model_lock(self))
        return NULL;
    frae_model *m = self->m;
    if (!m) {
        model_unlock(self);
        fail("the model is closed");
    }
    return m;
}

/* A read-only (or writable) C-contiguous buffer of n items of `fmt`
 * ("f": float32, "i": int32).  Returns 0, or -1 with an exception set. */
static int get_buffer(PyObject *o, Py_buffer *b, int writable,
                      const char *fmt, Py_ssize_t n, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, b, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: needs a C-contiguous%s buffer",
                     what, writable ? " writable" : "");
        return -1;
    }
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (strcmp(f, fmt) || b->itemsize != 4 || b->len != n * 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s: needs %zd %s values, got %zd bytes of format '%s'",
                     what, n, *fmt == 'f' ? "float32" : "int32", b->len,
                     b->format ? b->format : "B");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* ---- configs ------------------------------------------------------------- */

static const struct {
    const char *name;
    char kind; /* i int, f float */
    size_t off;
} train_fields[] = {
    {"batch", 'i', offsetof(frae_config, batch)},
    {"window", 'i', offsetof(frae_config, window)},
    {"training", 'i', offsetof(frae_config, training)},
    {"feedback", 'i', offsetof(frae_config, feedback)},
    {"learning_rate", 'f', offsetof(frae_config, learning_rate)},
    {"clip_norm", 'f', offsetof(frae_config, clip_norm)},
    {"rate_lambda", 'f', offsetof(frae_config, rate_lambda)},
    {"lr_warmup", 'i', offsetof(frae_config, lr_warmup)},
    {"lr_decay_steps", 'i', offsetof(frae_config, lr_decay_steps)},
    {"lr_floor", 'f', offsetof(frae_config, lr_floor)},
    {"normalize", 'i', offsetof(frae_config, normalize)},
    {"threads", 'i', offsetof(frae_config, threads)},
    {"isa", 'i', offsetof(frae_config, isa)},
    {"frame_dim", 'i', offsetof(frae_config, frame_dim)},
    {"latent_dim", 'i', offsetof(frae_config, latent_dim)},
    {"history", 'i', offsetof(frae_config, history)},
    {"family", 'i', offsetof(frae_config, family)},
    {"quantizer", 'i', offsetof(frae_config, quantizer)},
    {"quant_levels", 'i', offsetof(frae_config, quant_levels)},
    {"prior_hidden", 'i', offsetof(frae_config, prior_hidden)},
    {"prior_ar", 'i', offsetof(frae_config, prior_ar)},
    {"pitch", 'i', offsetof(frae_config, pitch)},
    {"pitch_ranged", 'i', offsetof(frae_config, pitch_ranged)},
    {"targets", 'i', offsetof(frae_config, targets)},
    {"activation", 'i', offsetof(frae_config, activation)},
};
#define N_FIELDS (sizeof train_fields / sizeof *train_fields)

static PyObject *config_to_dict(const frae_config *c)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < N_FIELDS; i++) {
        const char *p = (const char *)c + train_fields[i].off;
        PyObject *v = train_fields[i].kind == 'i'
                          ? PyLong_FromLong(*(const int *)p)
                          : PyFloat_FromDouble(*(const float *)p);
        if (!v || PyDict_SetItemString(d, train_fields[i].name, v)) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    PyObject *enc = PyTuple_New(c->n_enc_hidden), *dec = PyTuple_New(c->n_dec_hidden);
    for (int i = 0; enc && i < c->n_enc_hidden; i++)
        PyTuple_SET_ITEM(enc, i, PyLong_FromLong(c->enc_hidden[i]));
    for (int i = 0; dec && i < c->n_dec_hidden; i++)
        PyTuple_SET_ITEM(dec, i, PyLong_FromLong(c->dec_hidden[i]));
    PyObject *seed = PyLong_FromUnsignedLongLong(c->seed);
    if (!d || !enc || !dec || !seed || PyDict_SetItemString(d, "enc", enc) ||
        PyDict_SetItemString(d, "dec", dec) || PyDict_SetItemString(d, "seed", seed)) {
        Py_XDECREF(d), d = NULL;
    }
    Py_XDECREF(enc), Py_XDECREF(dec), Py_XDECREF(seed);
    return d;
}

/* make_config(family, options, fields): the command line's model options
 * ([(flag, value), ...]: "--history", "4") on the family's defaults, then
 * the run-time and training fields of a dict; checked.  Returns the config
 * as a dict (what Model() takes back). */
static int config_from(PyObject *family_gru, PyObject *options, PyObject *fields,
                       frae_config *c)
{
    if (PyObject_IsTrue(family_gru))
        frae_config_default_gru(c);
    else
        frae_config_default(c);
    unsigned given = 0;
    char msg[2300] = "";
    Py_ssize_t n = options == Py_None ? 0 : PySequence_Size(options);
    if (n < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_GetItem(options, i);
        const char *flag, *value;
        if (!pair || !PyArg_ParseTuple(pair, "ss", &flag, &value)) {
            Py_XDECREF(pair);
            return -1;
        }
        cli_fail_capture(msg, sizeof msg);
        int rc = cli_model_option(c, &given, flag, value);
        cli_fail_capture(NULL, 0);
        Py_DECREF(pair);
        if (rc == 1) {
            PyErr_Format(PyExc_ValueError, "unknown model option '%s'", flag);
            return -1;
        }
        if (rc) {
            /* "frae: --latent expects ..." -> "--latent expects ..." */
            const char *m = strncmp(msg, "frae: ", 6) ? msg : msg + 6;
            PyErr_SetString(PyExc_ValueError, m);
            return -1;
        }
    }
    cli_model_defaults(c, given);
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (fields != Py_None && PyDict_Next(fields, &pos, &key, &val)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k)
            return -1;
        size_t i = 0;
        while (i < N_FIELDS && strcmp(train_fields[i].name, k))
            i++;
        char *p = (char *)c + (i < N_FIELDS ? train_fields[i].off : 0);
        if (!strcmp(k, "seed")) {
            unsigned long long s = PyLong_AsUnsignedLongLong(val);
            if (PyErr_Occurred())
                return -1;
            c->seed = s;
        } else if (i == N_FIELDS) {
            PyErr_Format(PyExc_ValueError, "unknown config field '%s'", k);
            return -1;
        } else if (train_fields[i].kind == 'i') {
            long v = PyLong_AsLong(val);
            if (PyErr_Occurred())
                return -1;
            if (v < INT_MIN || v > INT_MAX) {
                PyErr_Format(PyExc_ValueError, "%s = %ld is out of range", k, v);
                return -1;
            }
            *(int *)p = (int)v;
        } else {
            double v = PyFloat_AsDouble(val);
            if (PyErr_Occurred())
                return -1;
            *(float *)p = (float)v;
        }
    }
    char err[512];
    if (frae_config_check(c, err, sizeof err)) {
        PyErr_SetString(PyExc_ValueError, err);
        return -1;
    }
    return 0;
}

/* (family_gru, options, fields) -> *c, as both calls below take them */
static int config_args(PyObject *args, frae_config *c)
{
    PyObject *gru, *options, *fields;
    if (!PyArg_ParseTuple(args, "OOO", &gru, &options, &fields))
        return -1;
    return config_from(gru, options, fields, c);
}

static PyObject *py_make_config(PyObject *self, PyObject *args)
{
    (void)self;
    frae_config c;
    if (config_args(args, &c))
        return NULL;
    return config_to_dict(&c);
}

/* ---- the model ------------------------------------------------------------ */

static PyObject *wrap(frae_model *m)
{
    ModelObject *o = PyObject_New(ModelObject, &ModelType);
    if (!o) {
        frae_destroy(m);
        return NULL;
    }
    o->m = m;
    pthread_mutex_init(&o->lock, NULL);
    atomic_init(&o->holder, 0);
    return (PyObject *)o;
}

/* create(family_gru, options, fields) */
static PyObject *py_create(PyObject *self, PyObject *args)
{
    (void)self;
    frae_config c;
    if (config_args(args, &c))
        return NULL;
    char err[512];
    frae_model *m;
    Py_BEGIN_ALLOW_THREADS
    m = frae_create(&c, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (!m)
        return fail(err);
    return wrap(m);
}

/* load(path, training, batch, window, threads, isa): with training, the
 * Adam state too when the checkpoint has it. */
static PyObject *py_load(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    int training, batch, window, threads, isa;
    if (!PyArg_ParseTuple(args, "siiiii", &path, &training, &batch, &window,
                          &threads, &isa))
        return NULL;
    char err[512];
    frae_config c;
    frae_model *m = NULL;
    frae_checkpoint *ck;
    int rc = -1;
    Py_BEGIN_ALLOW_THREADS
    ck = frae_checkpoint_open(path, err, sizeof err);
    if (ck && !frae_checkpoint_config(ck, &c, err, sizeof err)) {
        if (training && c.weights == FRAE_WEIGHTS_BF16)
            snprintf(err, sizeof err,
                     "%s: bf16 weights are for inference only", path);
        else {
            c.training = training;
            c.batch = batch > 0 ? batch : c.batch;
            c.window = window > 0 ? window : c.window;
            c.threads = threads;
            c.isa = (frae_isa)isa;
            m = frae_create(&c, err, sizeof err);
            if (m)
                rc = frae_checkpoint_restore(
                    ck, m, training && frae_checkpoint_has_optimizer(ck), err,
                    sizeof err);
        }
    }
    frae_checkpoint_close(ck);
    Py_END_ALLOW_THREADS
    if (rc) {
        frae_destroy(m);
        return fail(err);
    }
    return wrap(m);
}

/* meta(path, key): a checkpoint's metadata value, or None. */
static PyObject *py_meta(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *key;
    if (!PyArg_ParseTuple(args, "ss", &path, &key))
        return NULL;
    char err[512];
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    if (!ck)
        return fail(err);
    const char *v = frae_checkpoint_meta(ck, key);
    PyObject *r = v ? PyUnicode_FromString(v) : Py_NewRef(Py_None);
    frae_checkpoint_close(ck);
    return r;
}

/* no lock: the last reference is gone, so no call is running */
static void model_dealloc(ModelObject *self)
{
    frae_destroy(self->m);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* waits for a running call; closing twice is no error */
static PyObject *m_close(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (model_lock(self))
        return NULL;
    frae_destroy(self->m);
    self->m = NULL;
    model_unlock(self);
    Py_RETURN_NONE;
}

static PyObject *m_config(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = model_enter(self);
    if (!m)
        return NULL;
    const frae_config c = *frae_get_config(m);
    model_unlock(self);
    return config_to_dict(&c);
}

static PyObject *m_info(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = model_enter(self);
    if (!m)
        return NULL;
    const Py_ssize_t params = (Py_ssize_t)frae_param_count(m);
    const double bits = frae_bits_per_frame(m);
    const char *isa = frae_isa_name(m); /* a static string */
    const long steps = frae_adam_step_count(m);
    const Py_ssize_t bytes = (Py_ssize_t)frae_bytes_allocated(m);
    const unsigned long long hash = frae_model_hash(m);
    model_unlock(self);
    return Py_BuildValue("{s:n,s:d,s:s,s:l,s:n,s:K}", "params", params,
                         "bits_per_frame", bits, "isa", isa, "adam_steps",
                         steps, "bytes", bytes, "hash", hash);
}

static PyObject *m_reset(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = model_enter(self);
    if (!m)
        return NULL;
    frae_reset(m);
    model_unlock(self);
    Py_RETURN_NONE;
}

/* run(x, nseq, nframes, valid, update, target): frae_train_frames_targets
 * (update) or frae_eval_frames_targets, target None for the inputs;
 * (sse, sae, rate_bits, values, frames, grad_norm). */
static PyObject *run_locked(frae_model *m, PyObject *args)
{
    PyObject *xo, *vo, *to = Py_None;
    int nseq, nframes, update;
    if (!PyArg_ParseTuple(args, "OiiOp|O", &xo, &nseq, &nframes, &vo, &update,
                          &to))
        return NULL;
    const frae_config *c = frae_get_config(m);
    if (nseq < 1 || nseq > c->batch || nframes < 1)
        return fail("sequences must be 1..batch and frames at least 1");
    if (update && !c->training)
        return fail("an inference-only model cannot train");
    if (to != Py_None && !c->targets)
        return fail("the model was not made for targets");
    const Py_ssize_t n = (Py_ssize_t)nseq * nframes * c->frame_dim;
    Py_buffer xb, vb, tb;
    if (get_buffer(xo, &xb, 0, "f", n, "x"))
        return NULL;
    if (vo != Py_None && get_buffer(vo, &vb, 0, "i", nseq, "valid")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    if (to != Py_None && get_buffer(to, &tb, 0, "f", n, "target")) {
        PyBuffer_Release(&xb);
        if (vo != Py_None)
            PyBuffer_Release(&vb);
        return NULL;
    }
    const int *valid = vo == Py_None ? NULL : vb.buf;
    const float *target = to == Py_None ? NULL : tb.buf;
    frae_stats st;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = update ? frae_train_frames_targets(m, xb.buf, target, nseq, nframes,
                                            valid, &st)
                : frae_eval_frames_targets(m, xb.buf, target, nseq, nframes,
                                           valid, &st);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    if (vo != Py_None)
        PyBuffer_Release(&vb);
    if (to != Py_None)
        PyBuffer_Release(&tb);
    if (rc)
        return fail("training call refused: another number of sequences "
                    "than since the last reset");
    return Py_BuildValue("(dddlld)", st.sse, st.sae, st.rate_bits, st.values,
                         st.frames, update ? st.grad_norm : 0.0);
}

/* forward(x, y, nseq, nframes): y = the model's reconstruction. */
static PyObject *forward_locked(frae_model *m, PyObject *args)
{
    PyObject *xo, *yo;
    int nseq, nframes;
    if (!PyArg_ParseTuple(args, "OOii", &xo, &yo, &nseq, &nframes))
        return NULL;
    const frae_config *c = frae_get_config(m);
    if (nseq < 1 || nseq > c->batch || nframes < 1)
        return fail("sequences must be 1..batch and frames at least 1");
    Py_ssize_t n = (Py_ssize_t)nseq * nframes * c->frame_dim;
    Py_buffer xb, yb;
    if (get_buffer(xo, &xb, 0, "f", n, "x"))
        return NULL;
    if (get_buffer(yo, &yb, 1, "f", n, "y")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    frae_reset(m);
    rc = frae_forward(m, xb.buf, yb.buf, nseq, nframes);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    PyBuffer_Release(&yb);
    if (rc)
        return fail("forward refused its sizes");
    Py_RETURN_NONE;
}

/* params(buf, set): frae_get_params / frae_set_params. */
static PyObject *params_locked(frae_model *m, PyObject *args)
{
    PyObject *o;
    int set;
    if (!PyArg_ParseTuple(args, "Op", &o, &set))
        return NULL;
    Py_buffer b;
    if (get_buffer(o, &b, !set, "f", (Py_ssize_t)frae_param_count(m), "params"))
        return NULL;
    if (set) {
        const float *p = b.buf;
        for (size_t i = 0; i < frae_param_count(m); i++)
            if (!isfinite(p[i])) {
                PyBuffer_Release(&b);
                return PyErr_Format(PyExc_ValueError,
                                    "weights: value %zu is not finite", i);
            }
        frae_set_params(m, b.buf);
    } else {
        frae_get_params(m, b.buf);
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* tensors(): [(name, rows, cols, gru)] in exchange order (Keras
 * get_weights' and PyTorch state_dict's), kernels [in][out]. */
static PyObject *tensors_locked(frae_model *m, PyObject *unused)
{
    (void)unused;
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(frae_get_config(m), e);
    PyObject *list = PyList_New(n);
    for (int k = 0; list && k < n; k++) {
        const frae_layer *ly = &m->layer[e[k].mat];
        PyObject *t = e[k].bias ? Py_BuildValue("(siii)", e[k].name, ly->out, 0, e[k].gru)
                                : Py_BuildValue("(siii)", e[k].name, ly->in,
                                                ly->out, e[k].gru);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, t);
    }
    return list;
}

/* exchange(buf, set): every tensor in exchange order, Keras layout, one
 * flat float32 array (frae_export_params); set writes it back. */
static PyObject *exchange_locked(frae_model *m, PyObject *args)
{
    PyObject *o;
    int set;
    if (!PyArg_ParseTuple(args, "Op", &o, &set))
        return NULL;
    const size_t n = frae_param_count(m);
    Py_buffer b;
    if (get_buffer(o, &b, !set, "f", (Py_ssize_t)n, "weights"))
        return NULL;
    if (!set) {
        frae_export_params(m, NULL, b.buf, 0);
        PyBuffer_Release(&b);
        Py_RETURN_NONE;
    }
    /* the inverse: give each parameter (frae_set_params' layout) its own
     * index as value, export, and each exported position names the
     * parameter it came from; indices below 2^24 are exact in float32 */
    if (frae_get_config(m)->weights == FRAE_WEIGHTS_BF16 || n >= (1u << 24)) {
        PyBuffer_Release(&b);
        return fail(n >= (1u << 24) ? "set_weights: model too large"
                                    : "set_weights: a bf16 model's weights "
                                      "are read-only ('frae convert "
                                      "--weights f32' makes an f32 one)");
    }
    const float *src = b.buf;
    for (size_t j = 0; j < n; j++)
        if (!isfinite(src[j])) {
            PyBuffer_Release(&b);
            return PyErr_Format(PyExc_ValueError,
                                "set_weights: value %zu is not finite", j);
        }
    float *index = malloc(sizeof(float) * n), *where = malloc(sizeof(float) * n);
    float *params = malloc(sizeof(float) * n);
    if (!index || !where || !params) {
        free(index), free(where), free(params);
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    for (size_t i = 0; i < n; i++)
        index[i] = (float)i;
    frae_set_params(m, index);
    frae_export_params(m, NULL, where, 0);
    for (size_t j = 0; j < n; j++)
        params[(size_t)where[j]] = src[j];
    frae_set_params(m, params);
    free(index), free(where), free(params);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* normalization(mean, std, set) */
static PyObject *normalization_locked(frae_model *m, PyObject *args)
{
    PyObject *mo, *so;
    int set;
    if (!PyArg_ParseTuple(args, "OOp", &mo, &so, &set))
        return NULL;
    const int D = frae_get_config(m)->frame_dim;
    Py_buffer mb, sb;
    if (get_buffer(mo, &mb, !set, "f", D, "mean"))
        return NULL;
    if (get_buffer(so, &sb, !set, "f", D, "std")) {
        PyBuffer_Release(&mb);
        return NULL;
    }
    int rc = set ? frae_set_normalization(m, mb.buf, sb.buf)
                 : frae_get_normalization(m, mb.buf, sb.buf);
    PyBuffer_Release(&mb);
    PyBuffer_Release(&sb);
    if (rc)
        return fail(set ? "normalization: the model does not normalize, or a "
                          "std is not finite and > 0"
                        : "the model does not normalize");
    Py_RETURN_NONE;
}

/* save(path, with_optimizer, {key: value}) */
static PyObject *save_locked(frae_model *m, PyObject *args)
{
    const char *path;
    int with_opt;
    PyObject *meta;
    if (!PyArg_ParseTuple(args, "spO!", &path, &with_opt, &PyDict_Type, &meta))
        return NULL;
    frae_meta kv[32];
    int n = 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(meta, &pos, &k, &v) && n < 32) {
        kv[n].key = PyUnicode_AsUTF8(k);
        kv[n].value = PyUnicode_AsUTF8(v);
        if (!kv[n].key || !kv[n].value)
            return NULL;
        n++;
    }
    char err[512];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = frae_save(m, path, with_opt, kv, n, NULL, 0, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc)
        return fail(err);
    Py_RETURN_NONE;
}

/* encode(x, nseq, nframes, two_d[, search, search_lambda]) -> bytes: the
 * .fbs stream 'frae encode' writes (version 2 fixed-rate, or version 4
 * range-coded packets of 100 frames with a prior); search passes of the
 * encoder's search (frae_encoder_set_search), weighing the rate by
 * search_lambda (< 0: the model's rate_lambda). */
static PyObject *encode_locked(frae_model *m, PyObject *args)
{
    PyObject *xo, *silent_o = Py_None;
    int nseq, nframes, two_d, search = 0;
    double search_lambda = -1.0;
    if (!PyArg_ParseTuple(args, "Oiip|idO", &xo, &nseq, &nframes, &two_d,
                          &search, &search_lambda, &silent_o))
        return NULL;
    const frae_config *c = frae_get_config(m);
    const int width = c->frame_dim + 2 * c->pitch;
    if (nseq < 1 || nframes < 1)
        return fail("encode: no frames");
    frae_stream_options so;
    frae_stream_options_default(&so);
    so.search = search;
    so.search_lambda = (float)search_lambda;
    so.dtx = silent_o != Py_None;
    const char *why = frae_stream_options_check(m, &so);
    if (why) {
        PyErr_Format(FraeError, "encode: %s", why);
        return NULL;
    }
    Py_buffer xb, sb;
    if (get_buffer(xo, &xb, 0, "f", (Py_ssize_t)nseq * nframes * width, "x"))
        return NULL;
    if (so.dtx && get_buffer(silent_o, &sb, 0, "i",
                             (Py_ssize_t)nseq * nframes, "silent")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    char err[512];
    frae_stream_encoder *se = frae_stream_encoder_create(
        m, &so, (uint32_t)nseq, (uint32_t)nframes, two_d, err, sizeof err);
    if (!se) {
        PyBuffer_Release(&xb);
        if (so.dtx)
            PyBuffer_Release(&sb);
        return fail(err);
    }
    /* the most the stream can take: the header, and per frame its codes
     * or per packet its bound */
    const frae_stream *h = frae_stream_encoder_stream(se);
    const size_t cap = frae_stream_ranged(h)
                           ? frae_stream_header_bytes(h) +
                                 (size_t)frae_stream_packets(h) *
                                     frae_stream_packet_cap(h)
                           : frae_stream_bytes(h);
    unsigned char *out = malloc(cap);
    size_t len = 0;
    if (out) {
        Py_BEGIN_ALLOW_THREADS
        const float *x = xb.buf;
        const int *silent = so.dtx ? sb.buf : NULL;
        size_t n;
        const unsigned char *bytes = frae_stream_encoder_bytes(se, &n);
        memcpy(out, bytes, n), len = n; /* the header */
        for (size_t f = 0; f < (size_t)nseq * nframes; f++)
            if (frae_stream_encode(se, x + f * width, silent && silent[f],
                                   NULL)) {
                bytes = frae_stream_encoder_bytes(se, &n);
                memcpy(out + len, bytes, n), len += n;
            }
        frae_stream_encoder_end(se);
        bytes = frae_stream_encoder_bytes(se, &n);
        memcpy(out + len, bytes, n), len += n;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&xb);
    if (so.dtx)
        PyBuffer_Release(&sb);
    frae_stream_encoder_destroy(se);
    PyObject *r = !out ? PyErr_NoMemory()
                       : PyBytes_FromStringAndSize((const char *)out,
                                                   (Py_ssize_t)len);
    free(out);
    return r;
}

/* stream_info(bytes) -> (sequences, frames, width, two_d), checked
 * against the model. */
static PyObject *stream_info_locked(frae_model *m, PyObject *args)
{
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b))
        return NULL;
    char err[512];
    frae_stream s;
    if (frae_stream_parse(b.buf, (size_t)b.len, &s, err, sizeof err) ||
        frae_stream_check_model(&s, m, err, sizeof err)) {
        PyBuffer_Release(&b);
        return fail(err);
    }
    PyBuffer_Release(&b);
    const int pitch = (s.flags & FRAE_STREAM_PITCH) != 0;
    return Py_BuildValue("(IIii)", s.sequences, s.frames,
                         frae_get_config(m)->frame_dim + 2 * pitch,
                         (s.flags & 1) && s.sequences == 1);
}

/* decode(bytes, y): y [sequences][frames][width] float32. */
static PyObject *decode_locked(frae_model *m, PyObject *args)
{
    Py_buffer b;
    PyObject *yo;
    if (!PyArg_ParseTuple(args, "y*O", &b, &yo))
        return NULL;
    char err[512] = "";
    frae_stream_decoder *sd = frae_stream_decoder_create(m, b.buf,
                                                         (size_t)b.len, err,
                                                         sizeof err);
    if (!sd) {
        PyBuffer_Release(&b);
        return fail(err);
    }
    const frae_stream *s = frae_stream_decoder_stream(sd);
    const int width = frae_get_config(m)->frame_dim +
                      2 * ((s->flags & FRAE_STREAM_PITCH) != 0);
    Py_buffer yb;
    if (get_buffer(yo, &yb, 1, "f",
                   (Py_ssize_t)s->sequences * s->frames * width, "y")) {
        frae_stream_decoder_destroy(sd);
        PyBuffer_Release(&b);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    float *y = yb.buf;
    while ((rc = frae_stream_decode(sd, y, NULL, NULL, err, sizeof err)) > 0)
        y += width;
    Py_END_ALLOW_THREADS
    frae_stream_decoder_destroy(sd);
    PyBuffer_Release(&b);
    PyBuffer_Release(&yb);
    if (rc < 0) {
        PyErr_Format(FraeError, "stream: %s", err);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- module functions ---------------------------------------------------- */

/* shuffle(int32 buffer, state) -> state: frae train's Fisher-Yates on the
 * same RNG, so a fit orders its data as the command does. */
static PyObject *py_shuffle(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o;
    unsigned long long state;
    if (!PyArg_ParseTuple(args, "OK", &o, &state))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    if (b.itemsize != 4) {
        PyBuffer_Release(&b);
        return fail("shuffle: needs int32");
    }
    uint64_t st = state;
    int32_t *a = b.buf;
    for (long i = (long)(b.len / 4) - 1; i > 0; i--) {
        long j = (long)(frae_rng_next(&st) % (uint64_t)(i + 1));
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLongLong(st);
}

/* band_stats([arrays [T, D] float32]) -> (mean bytes, std bytes): frae
 * train's per-band statistics, frame after frame in order. */
static PyObject *py_band_stats(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *list;
    int D;
    if (!PyArg_ParseTuple(args, "Oi", &list, &D))
        return NULL;
    Py_ssize_t n = PySequence_Size(list);
    if (n < 0 || D < 1)
        return NULL;
    double *acc = calloc(2 * (size_t)D, sizeof(double));
    float *ms = malloc(sizeof(float) * 2 * (size_t)D);
    if (!acc || !ms) {
        free(acc), free(ms);
        return PyErr_NoMemory();
    }
    frae_band_stats bs;
    frae_band_stats_begin(&bs, D, acc, acc + D);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_GetItem(list, i);
        Py_buffer b;
        if (!a || PyObject_GetBuffer(a, &b, PyBUF_C_CONTIGUOUS) < 0) {
            Py_XDECREF(a);
            free(acc), free(ms);
            return NULL;
        }
        frae_band_stats_add(&bs, b.buf, (long)(b.len / 4 / D), D);
        PyBuffer_Release(&b);
        Py_DECREF(a);
    }
    PyObject *r = NULL;
    if (frae_band_stats_finish(&bs, ms, ms + D))
        fail("normalization: no frames");
    else
        r = Py_BuildValue("(y#y#)", (const char *)ms, (Py_ssize_t)(4 * D),
                          (const char *)(ms + D), (Py_ssize_t)(4 * D));
    free(acc), free(ms);
    return r;
}

/* features(path, sample_rate, n_mels, hop, win, n_fft, fmin, fmax,
 * resample) -> (bytes, frames, n_mels) */
static PyObject *py_features(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    frae_features f;
    frae_features_default(&f);
    int resample = 1;
    if (!PyArg_ParseTuple(args, "s|iiiiiffp", &path, &f.sample_rate, &f.n_mels,
                          &f.hop, &f.win, &f.n_fft, &f.fmin, &f.fmax, &resample))
        return NULL;
    char err[512];
    if (frae_features_check(&f, err, sizeof err))
        return PyErr_Format(PyExc_ValueError, "features: %s", err);
    float *feats = NULL;
    long frames = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = frae_audio_features(path, &f, resample, &feats, &frames, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc)
        return fail(err);
    PyObject *r = Py_BuildValue("(y#li)", (const char *)feats,
                                (Py_ssize_t)(sizeof(float) * (size_t)frames * f.n_mels),
                                frames, f.n_mels);
    free(feats);
    return r;
}

/* dtx_mask(x, nseq, nframes, width, sample_rate, n_mels, hop, win, n_fft,
 * fmin, fmax, floor, offset, scale, level) -> bytes of int32 [nseq x
 * nframes]: 'frae encode --dtx''s silent frames (frae_dtx_gate), each
 * sequence from a fresh gate. */
static PyObject *py_dtx_mask(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo;
    int nseq, nframes, width;
    double level;
    frae_features f;
    frae_features_default(&f);
    if (!PyArg_ParseTuple(args, "Oiiiiiiiifffffd", &xo, &nseq, &nframes,
                          &width, &f.sample_rate, &f.n_mels, &f.hop, &f.win,
                          &f.n_fft, &f.fmin, &f.fmax, &f.floor, &f.offset,
                          &f.scale, &level))
        return NULL;
    if (nseq < 1 || nframes < 1 || width < f.n_mels)
        return PyErr_Format(PyExc_ValueError,
                            "dtx: frames of %d values; the features have %d "
                            "mels", width, f.n_mels);
    Py_buffer xb;
    if (get_buffer(xo, &xb, 0, "f", (Py_ssize_t)nseq * nframes * width, "x"))
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

/* ---- the methods, each under the model's lock ----------------------------- */

/* f(m, args) with self's lock held throughout: f may release the GIL, and
 * close() or another call waits until it is done. */
static PyObject *call_locked(ModelObject *self, PyObject *args,
                             PyObject *(*f)(frae_model *, PyObject *))
{
    frae_model *m = model_enter(self);
    if (!m)
        return NULL;
    PyObject *r = f(m, args);
    model_unlock(self);
    return r;
}

#define LOCKED_METHOD(name)                                                    \
    static PyObject *m_##name(ModelObject *self, PyObject *args)               \
    {                                                                          \
        return call_locked(self, args, name##_locked);                         \
    }
LOCKED_METHOD(run)
LOCKED_METHOD(forward)
LOCKED_METHOD(params)
LOCKED_METHOD(tensors)
LOCKED_METHOD(exchange)
LOCKED_METHOD(normalization)
LOCKED_METHOD(save)
LOCKED_METHOD(encode)
LOCKED_METHOD(stream_info)
LOCKED_METHOD(decode)

static PyMethodDef model_methods[] = {
    {"close", (PyCFunction)m_close, METH_NOARGS, "frees the model"},
    {"config", (PyCFunction)m_config, METH_NOARGS, "the config, a dict"},
    {"info", (PyCFunction)m_info, METH_NOARGS, "sizes, kernels, hash"},
    {"reset", (PyCFunction)m_reset, METH_NOARGS, "new sequences"},
    {"run", (PyCFunction)m_run, METH_VARARGS, "train or evaluate frames"},
    {"forward", (PyCFunction)m_forward, METH_VARARGS, "reconstruct"},
    {"params", (PyCFunction)m_params, METH_VARARGS, "get/set parameters"},
    {"tensors", (PyCFunction)m_tensors, METH_NOARGS, "tensor names and shapes"},
    {"exchange", (PyCFunction)m_exchange, METH_VARARGS, "Keras-layout weights"},
    {"normalization", (PyCFunction)m_normalization, METH_VARARGS, "band stats"},
    {"save", (PyCFunction)m_save, METH_VARARGS, "write a checkpoint"},
    {"encode", (PyCFunction)m_encode, METH_VARARGS, "frames -> .fbs bytes"},
    {"stream_info", (PyCFunction)m_stream_info, METH_VARARGS, "a stream's shape"},
    {"decode", (PyCFunction)m_decode, METH_VARARGS, ".fbs bytes -> frames"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frae._frae.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a libfrae model",
    .tp_methods = model_methods,
};

static PyMethodDef module_methods[] = {
    {"make_config", py_make_config, METH_VARARGS, "a checked config"},
    {"create", py_create, METH_VARARGS, "a new model"},
    {"load", py_load, METH_VARARGS, "a model from a checkpoint"},
    {"meta", py_meta, METH_VARARGS, "a checkpoint's metadata value"},
    {"shuffle", py_shuffle, METH_VARARGS, "frae train's shuffle"},
    {"band_stats", py_band_stats, METH_VARARGS, "per-band mean and std"},
    {"features", py_features, METH_VARARGS, "log-mel features of audio"},
    {"dtx_mask", py_dtx_mask, METH_VARARGS, "frae encode --dtx's silent frames"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "frae._frae",
    .m_doc = "libfrae, for the frae module", .m_size = -1,
    .m_methods = module_methods};

PyMODINIT_FUNC PyInit__frae(void)
{
    if (PyType_Ready(&ModelType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    FraeError = PyErr_NewException("frae.FraeError", PyExc_RuntimeError, NULL);
    if (!FraeError || PyModule_AddObjectRef(mod, "FraeError", FraeError) < 0 ||
        PyModule_AddStringConstant(mod, "version", FRAE_VERSION_STRING) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
