/* The model object of _frae (_frae.h): made, loaded, closed, and its
 * methods (run, forward, parameters, tensors, save, encode, decode), each
 * under the object's lock. */
#include "_frae.h"

/* ---- the model ------------------------------------------------------------ */

static PyObject *wrap(frae_model *m)
{
    ModelObject *o = PyObject_New(ModelObject, &frae_py_model_type);
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
PyObject *frae_py_create(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fields;
    frae_config c;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &fields) ||
        frae_py_config_from_dict(fields, &c))
        return NULL;
    char err[512];
    frae_model *m;
    Py_BEGIN_ALLOW_THREADS m = frae_create(&c, err, sizeof err);
    Py_END_ALLOW_THREADS if (!m) return frae_py_fail(err);
    return wrap(m);
}

/* load(path, training, batch, window, threads, isa): with training, the
 * Adam state too when the checkpoint has it. */
PyObject *frae_py_load(PyObject *self, PyObject *args)
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
    Py_BEGIN_ALLOW_THREADS ck = frae_checkpoint_open(path, err, sizeof err);
    if (ck && !frae_checkpoint_config(ck, &c, err, sizeof err)) {
        if (training && c.weights == FRAE_WEIGHTS_BF16)
            snprintf(err, sizeof err, "%s: bf16 weights are for inference only",
                     path);
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
    Py_END_ALLOW_THREADS if (rc)
    {
        frae_destroy(m);
        return frae_py_fail(err);
    }
    return wrap(m);
}

/* meta(path, key): a checkpoint's metadata value, or None. */
PyObject *frae_py_meta(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *key;
    if (!PyArg_ParseTuple(args, "ss", &path, &key))
        return NULL;
    char err[512];
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    if (!ck)
        return frae_py_fail(err);
    const char *v = frae_checkpoint_meta(ck, key);
    PyObject *r = v ? PyUnicode_FromString(v) : Py_NewRef(Py_None);
    frae_checkpoint_close(ck);
    return r;
}

/* models_dir_find(dir, hash): the path of the first checkpoint of dir,
 * in name order, whose model hash is hash, or None (frae_models_dir_find:
 * the files that record another hash in their metadata are not loaded) */
PyObject *frae_py_models_dir_find(PyObject *self, PyObject *args)
{
    (void)self;
    const char *dir;
    unsigned long long hash;
    if (!PyArg_ParseTuple(args, "sK", &dir, &hash))
        return NULL;
    char path[8192];
    int found;
    Py_BEGIN_ALLOW_THREADS found =
        frae_models_dir_find(dir, (uint64_t)hash, path, sizeof path);
    Py_END_ALLOW_THREADS if (found < 0) return PyErr_NoMemory();
    return found ? PyUnicode_DecodeFSDefault(path) : Py_NewRef(Py_None);
}

/* models_dirs(): libfrae's models directories, in search order
 * (frae_models_dir) */
PyObject *frae_py_models_dirs(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    PyObject *out = PyList_New(0);
    char dir[8192];
    for (int i = 0; out && frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        PyObject *d = PyUnicode_DecodeFSDefault(dir);
        if (!d || PyList_Append(out, d))
            Py_CLEAR(out);
        Py_XDECREF(d);
    }
    return out;
}

static int model_row(const char *dir, const char *name, const char *path,
                     int used, void *ctx)
{
    (void)dir;
    PyObject *row =
        Py_BuildValue("(O&O&N)", PyUnicode_DecodeFSDefault, name,
                      PyUnicode_DecodeFSDefault, path, PyBool_FromLong(used));
    const int bad = !row || PyList_Append(ctx, row);
    Py_XDECREF(row);
    return bad; /* stops the walk; the exception is set */
}

/* models(): every shipped model file, [(name, path, used)], in the order
 * 'frae models' lists them (frae_models_each) */
PyObject *frae_py_models(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    const int n = frae_models_each(model_row, out);
    if (PyErr_Occurred() || n < 0) {
        Py_DECREF(out);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    return out;
}

/* models_add_dir(dir): one more directory for libfrae's search
 * (frae_models_add_dir) */
PyObject *frae_py_models_add_dir(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes))
        return NULL;
    const int rc = frae_models_add_dir(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    if (rc)
        return frae_py_fail("models_add_dir: an empty or too long path, or "
                            "the table full");
    Py_RETURN_NONE;
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
    if (frae_py_model_lock(self))
        return NULL;
    if (!self->owner) /* else its Run's, freed with it */
        frae_destroy(self->m);
    self->m = NULL;
    frae_py_model_unlock(self);
    Py_RETURN_NONE;
}

static PyObject *m_config(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = frae_py_model_enter(self);
    if (!m)
        return NULL;
    const frae_config c = *frae_get_config(m);
    frae_py_model_unlock(self);
    return frae_py_config_to_dict(&c);
}

static PyObject *m_info(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = frae_py_model_enter(self);
    if (!m)
        return NULL;
    const Py_ssize_t params = (Py_ssize_t)frae_param_count(m);
    const double bits = frae_bits_per_frame(m);
    const char *isa = frae_isa_name(m); /* a static string */
    const long steps = frae_adam_step_count(m);
    const Py_ssize_t bytes = (Py_ssize_t)frae_bytes_allocated(m);
    const unsigned long long hash = frae_model_hash(frae_model_net(m));
    frae_py_model_unlock(self);
    return Py_BuildValue("{s:n,s:d,s:s,s:l,s:n,s:K}", "params", params,
                         "bits_per_frame", bits, "isa", isa, "adam_steps",
                         steps, "bytes", bytes, "hash", hash);
}

static PyObject *m_reset(ModelObject *self, PyObject *unused)
{
    (void)unused;
    frae_model *m = frae_py_model_enter(self);
    if (!m)
        return NULL;
    frae_reset(m);
    frae_py_model_unlock(self);
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
        return frae_py_fail("sequences must be 1..batch and frames at least 1");
    if (update && !c->training)
        return frae_py_fail("an inference-only model cannot train");
    if (to != Py_None && !c->targets)
        return frae_py_fail("the model was not made for targets");
    const Py_ssize_t n = (Py_ssize_t)nseq * nframes * c->frame_dim;
    Py_buffer xb, vb, tb;
    if (frae_py_buffer(xo, &xb, 0, "f", n, "x"))
        return NULL;
    if (vo != Py_None && frae_py_buffer(vo, &vb, 0, "i", nseq, "valid")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    if (to != Py_None && frae_py_buffer(to, &tb, 0, "f", n, "target")) {
        PyBuffer_Release(&xb);
        if (vo != Py_None)
            PyBuffer_Release(&vb);
        return NULL;
    }
    const int *valid = vo == Py_None ? NULL : vb.buf;
    const float *target = to == Py_None ? NULL : tb.buf;
    frae_stats st;
    int rc;
    Py_BEGIN_ALLOW_THREADS const frae_batch batch = {
        xb.buf,
        target,
        valid,
        nseq,
        nframes,
        1,
        update ? FRAE_STEP_TRAIN : FRAE_STEP_EVALUATE};
    rc = frae_step(m, &batch, &st);
    Py_END_ALLOW_THREADS PyBuffer_Release(&xb);
    if (vo != Py_None)
        PyBuffer_Release(&vb);
    if (to != Py_None)
        PyBuffer_Release(&tb);
    if (rc)
        return frae_py_fail(
            "training call refused: another number of sequences "
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
        return frae_py_fail("sequences must be 1..batch and frames at least 1");
    Py_ssize_t n = (Py_ssize_t)nseq * nframes * c->frame_dim;
    Py_buffer xb, yb;
    if (frae_py_buffer(xo, &xb, 0, "f", n, "x"))
        return NULL;
    if (frae_py_buffer(yo, &yb, 1, "f", n, "y")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS frae_reset(m);
    rc = frae_forward(m, xb.buf, yb.buf, nseq, nframes);
    Py_END_ALLOW_THREADS PyBuffer_Release(&xb);
    PyBuffer_Release(&yb);
    if (rc)
        return frae_py_fail("forward refused its sizes");
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
    if (frae_py_buffer(o, &b, !set, "f", (Py_ssize_t)frae_param_count(m),
                       "params"))
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
        PyObject *t =
            Py_BuildValue("(siii)", ti.name, ti.rows, ti.cols, ti.gru);
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
    if (frae_py_buffer(o, &b, !set, "f", (Py_ssize_t)n, "weights"))
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
        return frae_py_fail(n >= (1u << 24)
                                ? "set_weights: model too large"
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
    float *index = malloc(sizeof(float) * n),
          *where = malloc(sizeof(float) * n);
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
    if (frae_py_buffer(mo, &mb, !set, "f", D, "mean"))
        return NULL;
    if (frae_py_buffer(so, &sb, !set, "f", D, "std")) {
        PyBuffer_Release(&mb);
        return NULL;
    }
    int rc = set ? frae_set_normalization(m, mb.buf, sb.buf)
                 : frae_get_normalization(m, mb.buf, sb.buf);
    PyBuffer_Release(&mb);
    PyBuffer_Release(&sb);
    if (rc)
        return frae_py_fail(
            set ? "normalization: the model does not normalize, or a "
                  "value is not finite or above 3e38 in magnitude, or a "
                  "std is not > 0"
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
    Py_BEGIN_ALLOW_THREADS rc =
        frae_save(m, path, with_opt, kv, n, NULL, 0, err, sizeof err);
    Py_END_ALLOW_THREADS if (rc) return frae_py_fail(err);
    Py_RETURN_NONE;
}

/* encode's frames and silence flags in memory, its bytes into out (sized
 * by frae_stream_encoder_bound), for libfrae's encode loop */
typedef struct {
    const float *x;
    const int *silent;
    unsigned char *out;
    size_t len;
    int width;
    size_t frames; /* a sequence's */
} py_encode_io;

static int py_encode_read(void *ctx, long seq, long t, long n, float *dst)
{
    const py_encode_io *e = ctx;
    memcpy(dst, e->x + ((size_t)seq * e->frames + (size_t)t) * e->width,
           sizeof(float) * (size_t)n * e->width);
    return 0;
}

static int py_encode_write(void *ctx, const unsigned char *bytes, size_t n)
{
    py_encode_io *e = ctx;
    memcpy(e->out + e->len, bytes, n);
    e->len += n;
    return 0;
}

static int py_encode_silent(void *ctx, long seq, long t, const float *frame)
{
    const py_encode_io *e = ctx;
    (void)frame;
    return e->silent[(size_t)seq * e->frames + (size_t)t] != 0;
}

/* encode(x, nseq, nframes, two_d, options, silent) -> bytes: the .fbs
 * stream 'frae encode' writes with the options (libfrae's codec table:
 * [(keyword, value or None)], e.g. packet_ms for real-time packets,
 * search); silent (None, or an int per frame) the frames sent as silence
 * (DTX). */
static PyObject *encode_locked(frae_model *m, PyObject *args)
{
    PyObject *xo, *opts = Py_None, *silent_o = Py_None;
    int nseq, nframes, two_d;
    if (!PyArg_ParseTuple(args, "Oiip|OO", &xo, &nseq, &nframes, &two_d, &opts,
                          &silent_o))
        return NULL;
    const frae_config *c = frae_get_config(m);
    const int width = c->frame_dim + 2 * c->pitch;
    if (nseq < 1 || nframes < 1)
        return frae_py_fail("encode: no frames");
    frae_codec_settings cs;
    if (frae_py_codec_settings(opts, &cs))
        return NULL;
    cs.dtx = silent_o != Py_None;
    frae_stream_options so;
    char err[512];
    if (frae_codec_stream_options(&cs, frae_model_net(m), nseq, &so, err,
                                  sizeof err)) {
        PyErr_Format(frae_py_error, "encode: %s", err);
        return NULL;
    }
    Py_buffer xb, sb;
    if (frae_py_buffer(xo, &xb, 0, "f", (Py_ssize_t)nseq * nframes * width,
                       "x"))
        return NULL;
    if (so.dtx && frae_py_buffer(silent_o, &sb, 0, "i",
                                 (Py_ssize_t)nseq * nframes, "silent")) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    frae_stream_encoder *se =
        frae_stream_encoder_create(frae_model_net(m), &so, (uint32_t)nseq,
                                   (uint32_t)nframes, two_d, err, sizeof err);
    if (!se) {
        PyBuffer_Release(&xb);
        if (so.dtx)
            PyBuffer_Release(&sb);
        return frae_py_fail(err);
    }
    const size_t cap = (size_t)frae_stream_encoder_bound(se);
    unsigned char *out = malloc(cap);
    py_encode_io eio = {xb.buf, so.dtx ? sb.buf : NULL, out, 0,
                        width,  (size_t)nframes};
    const frae_frames_io io = {py_encode_read, py_encode_write,
                               so.dtx ? py_encode_silent : NULL, &eio};
    frae_encode_tally tally;
    frae_encode_status st = FRAE_ENCODE_MEMORY;
    if (out) {
        Py_BEGIN_ALLOW_THREADS st = frae_stream_encode_all(se, &io, &tally);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&xb);
    if (so.dtx)
        PyBuffer_Release(&sb);
    frae_stream_encoder_destroy(se);
    PyObject *r =
        st == FRAE_ENCODE_OK
            ? PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)eio.len)
        : st == FRAE_ENCODE_NONFINITE
            ? PyErr_Format(frae_py_error,
                           "encode: the model's output is not finite "
                           "(sequence %ld, frame %ld): its weights are too "
                           "large for this input",
                           tally.seq, tally.frame)
            : PyErr_NoMemory();
    free(out);
    return r;
}

/* Whether b holds a version-5 stream (real-time packets): read by
 * libfrae's packet reader, as frae decode reads one. */
static int is_packets(const Py_buffer *b)
{
    const unsigned char *p = b->buf;
    return b->len >= 7 && !memcmp(p, "FRAEBS", 6) &&
           p[6] == FRAE_STREAM_VERSION_PACKETS;
}

/* A version-2 to -4 stream's header, once a decoder for m accepts it:
 * 0, or -1 and one line in err. */
int frae_py_stream_header(const frae_model *m, const void *buf, size_t size,
                          frae_stream *s, char *err, size_t errlen)
{
    /* the reader checks a file's stream whole, then gives its first
     * frames: the header is known from the first call */
    frae_stream_reader *r = frae_stream_reader_create(frae_model_net(m));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t used, need;
    const float *f;
    uint32_t seq;
    const long k =
        frae_stream_read(r, buf, size, 1, &used, &need, &f, &seq, err, errlen);
    const frae_stream *h = frae_stream_reader_stream(r);
    if (k >= 0 && h)
        *s = *h;
    frae_stream_reader_destroy(r);
    return k >= 0 && h ? 0 : -1;
}

/* stream_info(bytes) -> (sequences, frames, width, two_d), checked
 * against the model (version 5: its frames as the reader gives them). */
static PyObject *stream_info_locked(frae_model *m, PyObject *args)
{
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b))
        return NULL;
    char err[512];
    frae_stream s;
    long bad;
    Py_BEGIN_ALLOW_THREADS bad =
        is_packets(&b) ? frae_py_stream_frames(m, b.buf, (size_t)b.len, 0, NULL,
                                               0, &s, err, sizeof err) < 0
                       : frae_py_stream_header(m, b.buf, (size_t)b.len, &s, err,
                                               sizeof err);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    if (bad)
        return frae_py_fail(err);
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
    Py_buffer yb; /* sized by stream_info: version 5 by its frames' count */
    if (PyObject_GetBuffer(yo, &yb, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&b);
        return NULL;
    }
    const frae_config *c = frae_get_config(m);
    const uint64_t room = (uint64_t)yb.len / sizeof(float) /
                          (uint64_t)(c->frame_dim + 2 * c->pitch);
    frae_stream s;
    long got;
    Py_BEGIN_ALLOW_THREADS got = frae_py_stream_frames(
        m, b.buf, (size_t)b.len, 0, yb.buf, room, &s, err, sizeof err);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    PyBuffer_Release(&yb);
    if (got < 0) {
        PyErr_Format(frae_py_error, "stream: %s", err);
        return NULL;
    }
    if ((uint64_t)got > room)
        return frae_py_fail("decode: y holds fewer frames than the stream");
    Py_RETURN_NONE;
}

/* ---- the methods, each under the model's lock ----------------------------- */

/* f(m, args) with self's lock held throughout: f may release the GIL, and
 * close() or another call waits until it is done. */
static PyObject *call_locked(ModelObject *self, PyObject *args,
                             PyObject *(*f)(frae_model *, PyObject *))
{
    frae_model *m = frae_py_model_enter(self);
    if (!m)
        return NULL;
    PyObject *r = f(m, args);
    frae_py_model_unlock(self);
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
    {"stream_info", (PyCFunction)m_stream_info, METH_VARARGS,
     "a stream's shape"},
    {"decode", (PyCFunction)m_decode, METH_VARARGS, ".fbs bytes -> frames"},
    {NULL, NULL, 0, NULL}};

PyTypeObject frae_py_model_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frae._frae.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a libfrae model",
    .tp_methods = model_methods,
};
