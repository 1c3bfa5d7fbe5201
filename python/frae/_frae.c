/* _frae: the CPython extension under the frae module (frae/__init__.py is
 * the Keras-shaped API; this file is its bridge to libfrae).
 *
 * Arrays cross as buffers (the buffer protocol, so no NumPy C API):
 * __init__.py hands over C-contiguous float32 / int32 arrays, which are
 * used in place, and NumPy arrays to write into.  Every call that computes
 * releases the GIL; every libfrae error becomes a frae.FraeError carrying
 * libfrae's one-line message.  Model and training options are libfrae's
 * option table (frae_train.h), the one 'frae train' parses, so a bad value
 * reads the same here as there; fit is libfrae's training run (Run below),
 * the loop 'frae train' runs.
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

#include "frae_audio.h"
#include "frae.h"
#include "frae_train.h"

static PyObject *FraeError;

typedef struct {
    PyObject_HEAD
    frae_model *m;         /* NULL once closed; read and written under lock */
    PyObject *owner;       /* a Run whose model m is (m is then its, not
                              destroyed here), or NULL */
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

/* A dict of config_to_dict's (any subset of its keys) into c, on the
 * default config. */
static int config_from_dict(PyObject *fields, frae_config *c)
{
    frae_config_default(c);
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(fields, &pos, &key, &val)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k)
            return -1;
        size_t i = 0;
        while (i < N_FIELDS && strcmp(train_fields[i].name, k))
            i++;
        char *p = (char *)c + (i < N_FIELDS ? train_fields[i].off : 0);
        if (!strcmp(k, "seed")) {
            unsigned long long sd = PyLong_AsUnsignedLongLong(val);
            if (PyErr_Occurred())
                return -1;
            c->seed = sd;
        } else if (!strcmp(k, "enc") || !strcmp(k, "dec")) {
            int *n = k[0] == 'e' ? &c->n_enc_hidden : &c->n_dec_hidden;
            int *w = k[0] == 'e' ? c->enc_hidden : c->dec_hidden;
            Py_ssize_t len = PySequence_Size(val);
            if (len < 0 || len > FRAE_MAX_HIDDEN) {
                PyErr_Format(PyExc_ValueError, "%s: at most %d widths", k,
                             FRAE_MAX_HIDDEN);
                return -1;
            }
            for (Py_ssize_t j = 0; j < len; j++) {
                PyObject *item = PySequence_GetItem(val, j);
                long v = item ? PyLong_AsLong(item) : -1;
                Py_XDECREF(item);
                if (PyErr_Occurred())
                    return -1;
                w[j] = (int)v;
            }
            *n = (int)len;
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

/* Options by name ({keyword: value as text}) into rc, through libfrae's
 * option table; errors name the keyword. */
static int options_into(PyObject *options, frae_run_config *rc)
{
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    char err[1100];
    while (PyDict_Next(options, &pos, &key, &val)) {
        const char *k = PyUnicode_AsUTF8(key);
        const char *v = val == Py_None ? NULL : PyUnicode_AsUTF8(val);
        if (!k || (val != Py_None && !v))
            return -1;
        if (frae_option_find(k) < 0) {
            PyErr_Format(PyExc_TypeError, "unknown option '%s'", k);
            return -1;
        }
        if (frae_option_set(rc, k, v, err, sizeof err)) {
            PyErr_SetString(PyExc_ValueError, err);
            return -1;
        }
    }
    return 0;
}

/* make_config({keyword: text}): the model the options make (the table's
 * defaults, then the derived ones), checked, as a dict (what create()
 * takes back). */
static PyObject *py_make_config(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *options;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &options))
        return NULL;
    frae_run_config rc;
    frae_run_config_default(&rc);
    if (options_into(options, &rc))
        return NULL;
    frae_options_finish(&rc);
    /* normalize on or off: frames given in memory are no audio */
    rc.model.normalize = rc.normalize && strcmp(rc.normalize, "off") != 0;
    char err[512];
    if (frae_config_check(&rc.model, err, sizeof err)) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    return config_to_dict(&rc.model);
}

/* recipes(): [(name, summary, [(keyword, value or None), ...]), ...], the
 * table's recipes with their options by Python keyword. */
static PyObject *py_recipes(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *list = PyList_New(0);
    for (int k = 0; list && k < frae_recipe_count(); k++) {
        const frae_recipe *r = frae_recipe_at(k);
        PyObject *opts = PyList_New(0);
        for (int i = 0; opts && r->options[i]; i += 2) {
            const frae_option *o = frae_option_at(frae_option_find(r->options[i]));
            PyObject *pair = Py_BuildValue("(sz)", o ? o->python : r->options[i],
                                           r->options[i + 1]);
            if (!pair || PyList_Append(opts, pair))
                Py_CLEAR(opts);
            Py_XDECREF(pair);
        }
        PyObject *row = opts ? Py_BuildValue("(ssO)", r->name, r->summary, opts) : NULL;
        Py_XDECREF(opts);
        if (!row || PyList_Append(list, row))
            Py_CLEAR(list);
        Py_XDECREF(row);
    }
    return list;
}

/* options(): the table's rows, (name, keyword, type, flags), type one of
 * "int", "float", "choice", "widths", "quantizer", "flag", "text". */
static PyObject *py_options(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    static const char *const types[] = {"int",    "float",     "choice",
                                        "widths", "quantizer", "flag",
                                        "text"};
    const int n = frae_option_count();
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        const frae_option *o = frae_option_at(i);
        PyObject *t = Py_BuildValue("(sssI)", o->name, o->python,
                                    types[o->type], o->flags);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
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
    o->owner = NULL;
    pthread_mutex_init(&o->lock, NULL);
    atomic_init(&o->holder, 0);
    return (PyObject *)o;
}

/* create(config): a new model, config a dict as config() gives. */
static PyObject *py_create(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fields;
    frae_config c;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &fields) ||
        config_from_dict(fields, &c))
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
    if (!self->owner)
        frae_destroy(self->m);
    Py_XDECREF(self->owner);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* waits for a running call; closing twice is no error */
static PyObject *m_close(ModelObject *self, PyObject *unused)
{
    (void)unused;
    if (model_lock(self))
        return NULL;
    if (!self->owner) /* else its Run's, freed with it */
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

/* run(x, nseq, nframes, valid, update, target): one frae_step continuing
 * the sequences, training (update) or evaluating, target None for the
 * inputs; (sse, sae, rate_bits, values, frames, grad_norm). */
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
    const frae_batch batch = {xb.buf, target, valid, nseq, nframes, 1,
                              update ? FRAE_STEP_TRAIN : FRAE_STEP_EVALUATE};
    rc = frae_step(m, &batch, &st);
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
    const int n = frae_tensor_count(m);
    PyObject *list = PyList_New(n);
    for (int k = 0; list && k < n; k++) {
        frae_tensor_info ti;
        frae_tensor_info_get(m, k, &ti);
        PyObject *t = Py_BuildValue("(siii)", ti.name, ti.rows, ti.cols, ti.gru);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, t);
    }
    return list;
}

/* exchange(buf, set): every tensor in exchange order, Keras layout, one
 * flat float32 array (frae_get_params); set writes it back. */
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
        frae_get_params(m, b.buf);
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
    frae_get_params(m, where);
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

/* features(path, sample_rate, n_mels, hop, win, n_fft, fmin, fmax,
 * resample, pitch) -> (bytes, frames, width): width n_mels, + 2 with pitch
 * (f0 in Hz and voicing, as 'frae features --pitch') */
static PyObject *py_features(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    frae_features f;
    frae_features_default(&f);
    int resample = 1, pitch = 0;
    if (!PyArg_ParseTuple(args, "s|iiiiiffpp", &path, &f.sample_rate, &f.n_mels,
                          &f.hop, &f.win, &f.n_fft, &f.fmin, &f.fmax, &resample,
                          &pitch))
        return NULL;
    f.pitch = pitch;
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
    const int width = FRAE_FEATURE_WIDTH(&f);
    PyObject *r = Py_BuildValue("(y#li)", (const char *)feats,
                                (Py_ssize_t)(sizeof(float) * (size_t)frames * width),
                                frames, width);
    free(feats);
    return r;
}

/* vocode(x, frames, width, sample_rate, n_mels, hop, win, n_fft, fmin,
 * fmax, gl_iters) -> bytes of float32 samples: features back to audio as
 * 'frae vocode' and 'frae decode --wav' make it, on the features'
 * timeline ((frames - 1) * hop + win samples): with pitch (width n_mels +
 * 2) the harmonic-plus-noise vocoder (seed 1), else Griffin-Lim. */
static PyObject *py_vocode(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xo;
    long frames;
    int width, gl_iters;
    frae_features f;
    frae_features_default(&f);
    if (!PyArg_ParseTuple(args, "Oliiiiiiffi", &xo, &frames, &width,
                          &f.sample_rate, &f.n_mels, &f.hop, &f.win, &f.n_fft,
                          &f.fmin, &f.fmax, &gl_iters))
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
    if (get_buffer(xo, &xb, 0, "f", (Py_ssize_t)frames * width, "x"))
        return NULL;
    const long total = (frames - 1) * (long)f.hop + f.win;
    PyObject *r = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(float) *
                                                      total);
    if (!r) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    float *out = (float *)PyBytes_AS_STRING(r);
    const float *x = xb.buf;
    void *mem = NULL;
    frae_vocoder *v = NULL;
    frae_gl *g = NULL;
    int ok = 0;
    snprintf(err, sizeof err, "out of memory");
    Py_BEGIN_ALLOW_THREADS
    if (hnm) {
        const size_t size = frae_vocoder_size(&f);
        mem = size ? malloc(size) : NULL;
        if (mem && (v = frae_vocoder_init(mem, &f, 1, err, sizeof err))) {
            /* as 'frae vocode': silence to frame 0's centre, a hop a frame,
             * the flush, silence to the last window's end */
            long at = f.win / 2 - f.hop;
            memset(out, 0, sizeof(float) * (size_t)at);
            for (long t = 0; t < frames; t++, at += f.hop)
                frae_vocoder_frame(v, x + (size_t)t * width, out + at);
            frae_vocoder_flush(v, out + at);
            at += f.hop;
            memset(out + at, 0, sizeof(float) * (size_t)(total - at));
            ok = 1;
        }
    } else if ((g = frae_gl_create(&f, gl_iters < 0 ? 32 : gl_iters, err,
                                   sizeof err))) {
        float *buf = malloc(sizeof(float) * (size_t)frae_gl_max_samples(g));
        long at = 0;
        for (long t = 0; buf && t < frames; t++) {
            long n = frae_gl_frame(g, x + (size_t)t * width, buf);
            memcpy(out + at, buf, sizeof(float) * (size_t)n);
            at += n;
        }
        if (buf) {
            long n = frae_gl_flush(g, buf);
            memcpy(out + at, buf, sizeof(float) * (size_t)n);
            ok = at + n == total;
            if (!ok)
                snprintf(err, sizeof err, "Griffin-Lim gave %ld samples, not "
                         "%ld", at + n, total);
        }
        free(buf);
    }
    Py_END_ALLOW_THREADS
    free(mem);
    frae_gl_destroy(g);
    PyBuffer_Release(&xb);
    if (!ok) {
        Py_DECREF(r);
        return PyErr_Format(FraeError, "vocode: %s", err);
    }
    return r;
}

/* write_wav(path, bytes of float32 samples, rate): 16-bit PCM as 'frae
 * decode --wav' and 'frae vocode' write it (frae_wav_open), atomically. */
static PyObject *py_write_wav(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *x;
    Py_ssize_t len;
    int rate;
    if (!PyArg_ParseTuple(args, "sy#i", &path, &x, &len, &rate))
        return NULL;
    char err[512];
    int rc = -1;
    Py_BEGIN_ALLOW_THREADS
    frae_wav_writer *w = frae_wav_open(path, rate, err, sizeof err);
    if (w && frae_wav_write(w, (const float *)(const void *)x,
                            (long)((size_t)len / sizeof(float)), err,
                            sizeof err))
        frae_wav_abort(w);
    else if (w)
        rc = frae_wav_close(w, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc)
        return PyErr_Format(FraeError, "%s", err);
    Py_RETURN_NONE;
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

/* ---- training runs: fit is libfrae's run ------------------------------------
 * Run(config, settings) holds one frae_run: config a dict as config()
 * gives (the model and its training settings), settings fit's, by the
 * option table's keywords ({"batch_size": "4", ...}), with more_epochs (the
 * epochs of this fit) and shuffle.  train() runs it with the GIL released;
 * its callbacks take the GIL back on the lead replica's thread: Ctrl-C
 * (PyErr_CheckSignals) stops the run as the command's signal flag does,
 * saving the checkpoint.  The trained model is a Model owned by the Run
 * (take_model), so fit's weights need no copy. */
typedef struct {
    PyObject_HEAD
    frae_run *run;
    PyObject *settings; /* a copy of the settings: the strings rc points to */
    PyObject *model;    /* the trained model's Model until take_model() */
    pthread_mutex_t lock;
    atomic_ulong holder;
} RunObject;

static PyTypeObject RunType;

/* The Run's lock, as model_lock; 0 or -1 with FraeError set. */
static int run_lock(RunObject *self)
{
    const unsigned long me = PyThread_get_thread_ident();
    if (pthread_mutex_trylock(&self->lock)) {
        if (atomic_load_explicit(&self->holder, memory_order_relaxed) == me) {
            fail("the run was called from inside a call on it");
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&self->lock);
        Py_END_ALLOW_THREADS
    }
    atomic_store_explicit(&self->holder, me, memory_order_relaxed);
    return 0;
}

static void run_unlock(RunObject *self)
{
    atomic_store_explicit(&self->holder, 0, memory_order_relaxed);
    pthread_mutex_unlock(&self->lock);
}

static PyObject *run_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)kw;
    PyObject *config, *settings;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &config, &PyDict_Type,
                          &settings))
        return NULL;
    frae_run_config rc;
    frae_run_config_default(&rc);
    if (config_from_dict(config, &rc.model))
        return NULL;
    /* the run decides normalization from rc.normalize */
    rc.normalize = rc.model.normalize ? "on" : "off";
    /* a model that codes pitch trains on the envelope of audio features
     * (features(pitch=True)[:, :n_mels]), as 'frae train --pitch' */
    rc.audio = rc.model.pitch != 0;
    PyObject *copy = PyDict_Copy(settings);
    if (!copy)
        return NULL;
    PyObject *more = PyDict_GetItemString(copy, "more_epochs");
    PyObject *shuf = PyDict_GetItemString(copy, "shuffle");
    if (more) {
        rc.more_epochs = (int)PyLong_AsLong(more);
        PyDict_DelItemString(copy, "more_epochs");
    }
    if (shuf) {
        rc.shuffle = PyObject_IsTrue(shuf);
        PyDict_DelItemString(copy, "shuffle");
    }
    if (PyErr_Occurred() || options_into(copy, &rc)) {
        Py_DECREF(copy);
        return NULL;
    }
    char err[512];
    frae_run *run = frae_run_create(&rc, err, sizeof err);
    if (!run) {
        Py_DECREF(copy);
        return fail(err);
    }
    RunObject *o = (RunObject *)type->tp_alloc(type, 0);
    if (!o) {
        frae_run_destroy(run);
        Py_DECREF(copy);
        return NULL;
    }
    o->run = run;
    o->settings = copy;
    o->model = NULL;
    pthread_mutex_init(&o->lock, NULL);
    atomic_init(&o->holder, 0);
    return (PyObject *)o;
}

/* no lock: the last reference is gone (a Model of this run's holds one) */
static void run_dealloc(RunObject *self)
{
    Py_XDECREF(self->model);
    frae_run_destroy(self->run);
    Py_XDECREF(self->settings);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* start_from(model, with_normalization) */
static PyObject *r_start_from(RunObject *self, PyObject *args)
{
    PyObject *mo;
    int norm;
    if (!PyArg_ParseTuple(args, "O!p", &ModelType, &mo, &norm))
        return NULL;
    frae_model *m = model_enter((ModelObject *)mo);
    if (!m)
        return NULL;
    int rc = frae_run_start_from(self->run, m, norm);
    model_unlock((ModelObject *)mo);
    if (rc)
        return fail(frae_run_error(self->run, NULL));
    Py_RETURN_NONE;
}

/* continue_from(run) */
static PyObject *r_continue_from(RunObject *self, PyObject *args)
{
    PyObject *po;
    if (!PyArg_ParseTuple(args, "O!", &RunType, &po))
        return NULL;
    RunObject *prev = (RunObject *)po;
    if (prev == self || run_lock(prev))
        return prev == self ? fail("a run continues another") : NULL;
    int rc = frae_run_continue(self->run, prev->run);
    run_unlock(prev);
    if (rc)
        return fail(frae_run_error(self->run, NULL));
    Py_RETURN_NONE;
}

/* The trained model as a Model of this run's (made once). */
static int own_model(RunObject *self)
{
    if (self->model)
        return 0;
    frae_model *m = frae_run_model(self->run);
    if (!m)
        return 0;
    ModelObject *o = PyObject_New(ModelObject, &ModelType);
    if (!o)
        return -1;
    o->m = m;
    o->owner = Py_NewRef((PyObject *)self);
    pthread_mutex_init(&o->lock, NULL);
    atomic_init(&o->holder, 0);
    self->model = (PyObject *)o;
    return 0;
}

/* take_model(): the trained Model, or None; the Run keeps no reference
 * to it after (the Model keeps the Run). */
static PyObject *r_take_model(RunObject *self, PyObject *unused)
{
    (void)unused;
    if (own_model(self))
        return NULL;
    PyObject *m = self->model ? self->model : Py_NewRef(Py_None);
    self->model = NULL;
    return m;
}

typedef struct {
    RunObject *self;
    PyObject *on_epoch, *on_batch; /* callables or None */
    PyObject *type, *value, *tb;   /* an exception raised in a callback */
} train_ctx;

static void keep_exception(train_ctx *t)
{
    if (!t->type)
        PyErr_Fetch(&t->type, &t->value, &t->tb);
    else
        PyErr_Clear();
}

/* Before every batch: Ctrl-C, and the progress bar (the lead). */
static int hook_batch(void *ctx, const frae_run_progress *p)
{
    train_ctx *t = ctx;
    if (p->rank != 0)
        return 0;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = t->type != NULL;
    if (!stop && PyErr_CheckSignals() < 0) {
        keep_exception(t);
        stop = 1;
    }
    if (!stop && t->on_batch != Py_None) {
        PyObject *r = PyObject_CallFunction(t->on_batch, "iilldld", p->epoch,
                                            p->epochs, p->batch, p->batches,
                                            p->loss, p->frames, p->seconds);
        if (!r) {
            keep_exception(t);
            stop = 1;
        }
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    return stop;
}

/* After every epoch (the lead): fit's history, lines and callbacks. */
static int hook_epoch(void *ctx, const frae_epoch_log *e)
{
    train_ctx *t = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = t->type != NULL;
    if (!stop && own_model(t->self))
        keep_exception(t), stop = 1;
    if (!stop && t->on_epoch != Py_None) {
        PyObject *log = Py_BuildValue(
            "{s:i,s:i,s:d,s:d,s:d,s:O,s:d,s:d,s:d,s:O,s:l,s:d,s:d,s:O,s:O,"
            "s:d,s:i,s:O}",
            "epoch", e->epoch, "epochs", e->epochs, "loss", e->loss, "mae",
            e->mae, "rate", e->rate, "has_val", e->has_val ? Py_True : Py_False,
            "val_loss", e->val_loss, "val_mae", e->val_mae, "val_rate",
            e->val_rate, "prior", e->prior ? Py_True : Py_False, "frames",
            e->frames, "seconds", e->seconds, "frames_per_s", e->frames_per_s,
            "improved", e->improved ? Py_True : Py_False, "early_stop",
            e->early_stop ? Py_True : Py_False, "best", e->best, "best_epoch",
            e->best_epoch, "model",
            t->self->model ? t->self->model : Py_None);
        PyObject *r = log ? PyObject_CallOneArg(t->on_epoch, log) : NULL;
        if (!r)
            keep_exception(t), stop = 1;
        else
            stop = PyObject_IsTrue(r) == 1;
        Py_XDECREF(r);
        Py_XDECREF(log);
    }
    PyGILState_Release(g);
    return stop;
}

/* Sequences (a list of [T, D] float32 arrays, used in place) into a new
 * dataset of frames of dim values; bufs receives their views.  NULL with
 * an exception set. */
static frae_dataset *dataset_of(PyObject *list, int dim, const char *name,
                                Py_buffer *bufs, Py_ssize_t *n_bufs)
{
    Py_ssize_t n = PySequence_Size(list);
    frae_dataset *ds = n < 0 ? NULL : frae_dataset_create(dim);
    if (!ds)
        return n < 0 ? NULL : (frae_dataset *)PyErr_NoMemory();
    char err[512];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_GetItem(list, i);
        Py_buffer *b = &bufs[(*n_bufs)];
        if (!a || PyObject_GetBuffer(a, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            Py_XDECREF(a);
            frae_dataset_destroy(ds);
            return NULL;
        }
        Py_DECREF(a);
        (*n_bufs)++;
        const char *f = b->format ? b->format : "B";
        if (*f == '<' || *f == '=' || *f == '@')
            f++;
        if (strcmp(f, "f") || b->ndim != 2 || b->shape[1] != dim ||
            b->shape[0] < 1) {
            PyErr_Format(PyExc_ValueError,
                         "%s[%zd]: needs [T, %d] float32 frames", name, i, dim);
            frae_dataset_destroy(ds);
            return NULL;
        }
        if (frae_dataset_add_array(ds, name, b->buf, 1, (long)b->shape[0], dim,
                                   err, sizeof err)) {
            frae_dataset_destroy(ds);
            return (frae_dataset *)fail(err);
        }
    }
    return ds;
}

/* train(x, y, val_x, val_y, dim, on_epoch, on_batch): lists of sequences
 * (y, val_x, val_y may be None); on_epoch(log) -> stop, on_batch(epoch,
 * epochs, done, batches, loss, frames, seconds), either None.  Returns
 * the run's result as a dict; raises a callback's exception (Ctrl-C:
 * KeyboardInterrupt, after the checkpoint is saved) or FraeError. */
static PyObject *r_train(RunObject *self, PyObject *args)
{
    PyObject *lists[4], *on_epoch, *on_batch;
    int dim;
    if (!PyArg_ParseTuple(args, "OOOOiOO", &lists[0], &lists[1], &lists[2],
                          &lists[3], &dim, &on_epoch, &on_batch))
        return NULL;
    if (run_lock(self))
        return NULL;
    static const char *const names[4] = {"x", "y", "validation_data",
                                         "validation_data y"};
    Py_ssize_t total = 0, n_bufs = 0;
    for (int k = 0; k < 4; k++)
        total += lists[k] == Py_None ? 0 : PySequence_Size(lists[k]);
    Py_buffer *bufs = PyMem_Calloc((size_t)total + 1, sizeof *bufs);
    frae_dataset *ds[4] = {NULL, NULL, NULL, NULL};
    int bad = !bufs || PyErr_Occurred();
    for (int k = 0; k < 4 && !bad; k++)
        if (lists[k] != Py_None &&
            !(ds[k] = dataset_of(lists[k], dim, names[k], bufs, &n_bufs)))
            bad = 1;
    PyObject *result = NULL;
    if (!bad) {
        train_ctx t = {self, on_epoch, on_batch, NULL, NULL, NULL};
        const frae_run_hooks hooks = {&t, NULL, hook_batch, hook_epoch, NULL,
                                      NULL};
        int status;
        Py_BEGIN_ALLOW_THREADS
        status = frae_run_train(self->run, ds[0], ds[1], ds[2], ds[3], &hooks);
        Py_END_ALLOW_THREADS
        if (own_model(self))
            keep_exception(&t);
        frae_run_result res;
        frae_run_get_result(self->run, &res);
        if (t.type) {
            PyErr_Restore(t.type, t.value, t.tb);
        } else if (status) {
            const char *why = frae_run_error(self->run, NULL);
            fail(why ? why : "training failed");
        } else {
            result = Py_BuildValue("{s:i,s:i,s:O,s:d,s:i}", "epoch", res.epoch,
                                   "epochs", res.epochs, "early_stopped",
                                   res.early_stopped ? Py_True : Py_False,
                                   "best", res.best, "best_epoch",
                                   res.best_epoch);
        }
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    for (int k = 0; k < 4; k++)
        frae_dataset_destroy(ds[k]);
    for (Py_ssize_t i = 0; i < n_bufs; i++)
        PyBuffer_Release(&bufs[i]);
    PyMem_Free(bufs);
    run_unlock(self);
    return result;
}

static PyMethodDef run_methods[] = {
    {"start_from", (PyCFunction)r_start_from, METH_VARARGS,
     "start from a model's weights"},
    {"continue_from", (PyCFunction)r_continue_from, METH_VARARGS,
     "continue another run"},
    {"train", (PyCFunction)r_train, METH_VARARGS, "set up and train"},
    {"take_model", (PyCFunction)r_take_model, METH_NOARGS,
     "the trained model"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject RunType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frae._frae.Run",
    .tp_basicsize = sizeof(RunObject),
    .tp_dealloc = (destructor)run_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a libfrae training run",
    .tp_methods = run_methods,
    .tp_new = run_new,
};

static PyObject *py_cpus_available(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyLong_FromLong(frae_cpus_available());
}

static PyMethodDef module_methods[] = {
    {"cpus_available", py_cpus_available, METH_NOARGS,
     "the CPUs this process may use (affinity, cgroup quota)"},
    {"make_config", py_make_config, METH_VARARGS, "a checked config"},
    {"create", py_create, METH_VARARGS, "a new model"},
    {"load", py_load, METH_VARARGS, "a model from a checkpoint"},
    {"meta", py_meta, METH_VARARGS, "a checkpoint's metadata value"},
    {"options", py_options, METH_NOARGS, "the option table's rows"},
    {"features", py_features, METH_VARARGS, "log-mel features of audio"},
    {"vocode", py_vocode, METH_VARARGS, "features back to audio"},
    {"recipes", py_recipes, METH_NOARGS, "the recipes and their options"},
    {"write_wav", py_write_wav, METH_VARARGS, "a 16-bit WAV file"},
    {"dtx_mask", py_dtx_mask, METH_VARARGS, "frae encode --dtx's silent frames"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "frae._frae",
    .m_doc = "libfrae, for the frae module", .m_size = -1,
    .m_methods = module_methods};

PyMODINIT_FUNC PyInit__frae(void); /* the interpreter's entry point */
PyMODINIT_FUNC PyInit__frae(void)
{
    if (PyType_Ready(&ModelType) < 0 || PyType_Ready(&RunType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    FraeError = PyErr_NewException("frae.FraeError", PyExc_RuntimeError, NULL);
    if (!FraeError || PyModule_AddObjectRef(mod, "FraeError", FraeError) < 0 ||
        PyModule_AddObjectRef(mod, "Run", (PyObject *)&RunType) < 0 ||
        PyModule_AddStringConstant(mod, "version", FRAE_VERSION_STRING) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
