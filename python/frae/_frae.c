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
 * for a running call and a later call finds the model gone (frae_py_error).
 * The lock is taken with the GIL released when it is busy: the holder may
 * be computing with the GIL released and need it back to finish. */
#include "_frae.h"

PyObject *frae_py_error;

PyObject *frae_py_fail(const char *msg)
{
    PyErr_SetString(frae_py_error, msg);
    return NULL;
}

/* Takes self's lock; 0, or -1 with frae_py_error set (a re-entrant call). */
int frae_py_model_lock(ModelObject *self)
{
    const unsigned long me = PyThread_get_thread_ident();
    if (pthread_mutex_trylock(&self->lock)) {
        if (atomic_load_explicit(&self->holder, memory_order_relaxed) == me) {
            frae_py_fail(
                "the model was called from inside a call on it (in this "
                "thread): that call would wait for itself");
            return -1;
        }
        /* the holder may be computing without the GIL and need it back */
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&self->lock);
        Py_END_ALLOW_THREADS
    }
    atomic_store_explicit(&self->holder, me, memory_order_relaxed);
    return 0;
}

void frae_py_model_unlock(ModelObject *self)
{
    atomic_store_explicit(&self->holder, 0, memory_order_relaxed);
    pthread_mutex_unlock(&self->lock);
}

/* The model of a call, self's lock held (frae_py_model_unlock when done with it),
 * or NULL with frae_py_error set: closed, or a re-entrant call. */
frae_model *frae_py_model_enter(ModelObject *self)
{
    if (frae_py_model_lock(self))
        return NULL;
    frae_model *m = self->m;
    if (!m) {
        frae_py_model_unlock(self);
        frae_py_fail("the model is closed");
    }
    return m;
}

/* A read-only (or writable) C-contiguous buffer of n items of `fmt`
 * ("f": float32, "i": int32).  Returns 0, or -1 with an exception set. */
int frae_py_buffer(PyObject *o, Py_buffer *b, int writable, const char *fmt,
                   Py_ssize_t n, const char *what)
{
    int flags =
        PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, b, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: needs a C-contiguous%s buffer", what,
                     writable ? " writable" : "");
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
    {"level_loss", 'f', offsetof(frae_config, level_loss)},
    {"level_scale", 'f', offsetof(frae_config, level_scale)},
    {"lr_warmup", 'i', offsetof(frae_config, lr_warmup)},
    {"lr_decay_steps", 'i', offsetof(frae_config, lr_decay_steps)},
    {"lr_floor", 'f', offsetof(frae_config, lr_floor)},
    {"erasure", 'f', offsetof(frae_config, erasure)},
    {"erasure_frames", 'i', offsetof(frae_config, erasure_frames)},
    {"lookahead", 'i', offsetof(frae_config, lookahead)},
    {"lookahead_packet", 'i', offsetof(frae_config, lookahead_packet)},
    {"emphasis", 'f', offsetof(frae_config, emphasis)},
    {"emphasis_from", 'i', offsetof(frae_config, emphasis_from)},
    {"emphasis_to", 'i', offsetof(frae_config, emphasis_to)},
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

PyObject *frae_py_config_to_dict(const frae_config *c)
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
    PyObject *enc = PyTuple_New(c->n_enc_hidden),
             *dec = PyTuple_New(c->n_dec_hidden);
    for (int i = 0; enc && i < c->n_enc_hidden; i++)
        PyTuple_SET_ITEM(enc, i, PyLong_FromLong(c->enc_hidden[i]));
    for (int i = 0; dec && i < c->n_dec_hidden; i++)
        PyTuple_SET_ITEM(dec, i, PyLong_FromLong(c->dec_hidden[i]));
    PyObject *seed = PyLong_FromUnsignedLongLong(c->seed);
    if (!d || !enc || !dec || !seed || PyDict_SetItemString(d, "enc", enc) ||
        PyDict_SetItemString(d, "dec", dec) ||
        PyDict_SetItemString(d, "seed", seed)) {
        Py_XDECREF(d), d = NULL;
    }
    Py_XDECREF(enc), Py_XDECREF(dec), Py_XDECREF(seed);
    return d;
}

/* A dict of frae_py_config_to_dict's (any subset of its keys) into c, on the
 * default config. */
int frae_py_config_from_dict(PyObject *fields, frae_config *c)
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
                PyErr_Format(PyExc_ValueError, "%s = %ld is out of range", k,
                             v);
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
int frae_py_options_into(PyObject *options, frae_run_config *rc)
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
    if (frae_py_options_into(options, &rc))
        return NULL;
    frae_options_finish(&rc);
    /* normalize on or off: frames given in memory are no audio */
    rc.model.normalize = rc.normalize && strcmp(rc.normalize, "off") != 0;
    char err[512];
    if (frae_config_check(&rc.model, err, sizeof err)) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    return frae_py_config_to_dict(&rc.model);
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
            const frae_option *o =
                frae_option_at(frae_option_find(r->options[i]));
            PyObject *pair = Py_BuildValue(
                "(sz)", o ? o->python : r->options[i], r->options[i + 1]);
            if (!pair || PyList_Append(opts, pair))
                Py_CLEAR(opts);
            Py_XDECREF(pair);
        }
        PyObject *row =
            opts ? Py_BuildValue("(ssO)", r->name, r->summary, opts) : NULL;
        Py_XDECREF(opts);
        if (!row || PyList_Append(list, row))
            Py_CLEAR(list);
        Py_XDECREF(row);
    }
    return list;
}

/* codec_options(): libfrae's codec option table, (name, metavar or None,
 * sides, help, default or None) a row; sides 1 encode, 2 decode. */
static PyObject *py_codec_options(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    const int n = frae_codec_option_count();
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        const frae_codec_option *o = frae_codec_option_at(i);
        PyObject *t = Py_BuildValue("(szisz)", o->name, o->metavar, o->sides,
                                    o->help, o->deflt);
        if (!t) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

/* Codec settings from [(keyword, value or None), ...], by libfrae's
 * table: 0, or -1 with FraeError set (the library's line, naming the
 * keyword). */
int frae_py_codec_settings(PyObject *options, frae_codec_settings *s)
{
    frae_codec_settings_default(s);
    if (options == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(options, "codec options: a list of pairs");
    if (!seq)
        return -1;
    char err[512];
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *name, *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "sz", &name,
                              &value)) {
            Py_DECREF(seq);
            return -1;
        }
        if (frae_codec_option_set(s, name, value, err, sizeof err)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "codec option %s", err);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* codec_settings(pairs) -> {keyword: value}: the settings the pairs give
 * (libfrae parses and checks them), every row's. */
static PyObject *py_codec_settings(PyObject *self, PyObject *pairs)
{
    (void)self;
    frae_codec_settings s;
    if (frae_py_codec_settings(pairs, &s))
        return NULL;
    return Py_BuildValue("{sdsisisdsisdsisisisisisisi}", "frame_rate",
                         s.frame_rate, "packet_frames", s.packet_frames,
                         "search", s.search, "search_lambda", s.search_lambda,
                         "dtx", s.dtx, "dtx_level", s.dtx_level, "packet_ms",
                         s.packet_ms, "resync_ms", s.resync_ms, "resync_state",
                         s.resync_state, "through", s.through, "vocoder",
                         s.vocoder, "gl_iters", s.gl_iters, "polish", s.polish);
}

/* options(): the table's rows, (name, keyword, type, flags), type one of
 * "int", "float", "choice", "widths", "quantizer", "flag", "text". */
static PyObject *py_options(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    static const char *const types[] = {
        "int", "float", "choice", "widths", "quantizer", "flag", "text"};
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

/* lookahead_delay(config dict) -> frames: frae_lookahead_delay */
static PyObject *py_lookahead_delay(PyObject *self, PyObject *fields)
{
    (void)self;
    frae_config c;
    if (!PyDict_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "lookahead_delay takes a config dict");
        return NULL;
    }
    if (frae_py_config_from_dict(fields, &c))
        return NULL;
    return PyLong_FromLong(frae_lookahead_delay(&c));
}

static PyObject *py_cpus_available(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyLong_FromLong(frae_cpus_available());
}

static PyMethodDef module_methods[] = {
    {"cpus_available", py_cpus_available, METH_NOARGS,
     "the CPUs this process may use (affinity, cgroup quota)"},
    {"make_config", py_make_config, METH_VARARGS, "a checked config"},
    {"lookahead_delay", py_lookahead_delay, METH_O,
     "the frames a model's look-ahead holds a packet back by"},
    {"create", frae_py_create, METH_VARARGS, "a new model"},
    {"load", frae_py_load, METH_VARARGS, "a model from a checkpoint"},
    {"meta", frae_py_meta, METH_VARARGS, "a checkpoint's metadata value"},
    {"models_dir_find", frae_py_models_dir_find, METH_VARARGS,
     "the checkpoint of a directory with a model hash"},
    {"models_dirs", frae_py_models_dirs, METH_NOARGS,
     "libfrae's models directories, in search order"},
    {"models", frae_py_models, METH_NOARGS,
     "every shipped model file: (name, path, used), in search order"},
    {"models_add_dir", frae_py_models_add_dir, METH_O,
     "one more directory for libfrae's models search"},
    {"options", py_options, METH_NOARGS, "the option table's rows"},
    {"codec_options", py_codec_options, METH_NOARGS,
     "the codec option table's rows"},
    {"codec_settings", py_codec_settings, METH_O,
     "codec settings from (keyword, value) pairs"},
    {"features", frae_py_features, METH_VARARGS, "log-mel features of audio"},
    {"vocode", frae_py_vocode, METH_VARARGS, "features back to audio"},
    {"recipes", py_recipes, METH_NOARGS, "the recipes and their options"},
    {"write_wav", frae_py_write_wav, METH_VARARGS, "a 16-bit WAV file"},
    {"checkpoint_features", frae_py_checkpoint_features, METH_VARARGS,
     "the audio features a checkpoint's model was trained on"},
    {"speech_latency", frae_py_speech_latency, METH_VARARGS,
     "a speech codec's latency in samples"},
    {"dtx_mask", frae_py_dtx_mask, METH_VARARGS,
     "frae encode --dtx's silent frames"},
    {"decoder", frae_py_decoder, METH_VARARGS,
     "a stream's audio, a chunk at a time"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    .m_name = "frae._frae",
                                    .m_doc = "libfrae, for the frae module",
                                    .m_size = -1, .m_methods = module_methods};

PyMODINIT_FUNC PyInit__frae(void); /* the interpreter's entry point */
PyMODINIT_FUNC PyInit__frae(void)
{
    if (PyType_Ready(&frae_py_model_type) < 0 ||
        PyType_Ready(&frae_py_run_type) < 0 ||
        PyType_Ready(&frae_py_decoder_type) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    frae_py_error =
        PyErr_NewException("frae.FraeError", PyExc_RuntimeError, NULL);
    if (!frae_py_error ||
        PyModule_AddObjectRef(mod, "FraeError", frae_py_error) < 0 ||
        PyModule_AddObjectRef(mod, "Run", (PyObject *)&frae_py_run_type) < 0 ||
        PyModule_AddStringConstant(mod, "version", FRAE_VERSION_STRING) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
