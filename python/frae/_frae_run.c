/* _frae's training runs (_frae.h): frae.Run, fit's loop as libfrae's
 * run, its batches and epochs reported back to Python. */
#include "_frae.h"

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
    PyObject_HEAD frae_run *run;
    PyObject *settings; /* a copy of the settings: the strings rc points to */
    PyObject *model;    /* the trained model's Model until take_model() */
    pthread_mutex_t lock;
    atomic_ulong holder;
} RunObject;

PyTypeObject frae_py_run_type;

/* The Run's lock, as frae_py_model_lock; 0 or -1 with frae_py_error set. */
static int run_lock(RunObject *self)
{
    const unsigned long me = PyThread_get_thread_ident();
    if (pthread_mutex_trylock(&self->lock)) {
        if (atomic_load_explicit(&self->holder, memory_order_relaxed) == me) {
            frae_py_fail("the run was called from inside a call on it");
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&self->lock);
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
    if (frae_py_config_from_dict(config, &rc.model))
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
    if (PyErr_Occurred() || frae_py_options_into(copy, &rc)) {
        Py_DECREF(copy);
        return NULL;
    }
    char err[512];
    frae_run *run = frae_run_create(&rc, err, sizeof err);
    if (!run) {
        Py_DECREF(copy);
        return frae_py_fail(err);
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
    if (!PyArg_ParseTuple(args, "O!p", &frae_py_model_type, &mo, &norm))
        return NULL;
    frae_model *m = frae_py_model_enter((ModelObject *)mo);
    if (!m)
        return NULL;
    int rc = frae_run_start_from(self->run, m, norm);
    frae_py_model_unlock((ModelObject *)mo);
    if (rc)
        return frae_py_fail(frae_run_error(self->run, NULL));
    Py_RETURN_NONE;
}

/* continue_from(run) */
static PyObject *r_continue_from(RunObject *self, PyObject *args)
{
    PyObject *po;
    if (!PyArg_ParseTuple(args, "O!", &frae_py_run_type, &po))
        return NULL;
    RunObject *prev = (RunObject *)po;
    if (prev == self || run_lock(prev))
        return prev == self ? frae_py_fail("a run continues another") : NULL;
    int rc = frae_run_continue(self->run, prev->run);
    run_unlock(prev);
    if (rc)
        return frae_py_fail(frae_run_error(self->run, NULL));
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
    ModelObject *o = PyObject_New(ModelObject, &frae_py_model_type);
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
            e->best_epoch, "model", t->self->model ? t->self->model : Py_None);
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
        if (!a ||
            PyObject_GetBuffer(a, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
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
            return (frae_dataset *)frae_py_fail(err);
        }
    }
    return ds;
}

/* train(x, y, val_x, val_y, dim, on_epoch, on_batch): lists of sequences
 * (y, val_x, val_y may be None); on_epoch(log) -> stop, on_batch(epoch,
 * epochs, done, batches, loss, frames, seconds), either None.  Returns
 * the run's result as a dict; raises a callback's exception (Ctrl-C:
 * KeyboardInterrupt, after the checkpoint is saved) or frae_py_error. */
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
        const frae_run_hooks hooks = {&t,         NULL, hook_batch,
                                      hook_epoch, NULL, NULL};
        int status;
        Py_BEGIN_ALLOW_THREADS status =
            frae_run_train(self->run, ds[0], ds[1], ds[2], ds[3], &hooks);
        Py_END_ALLOW_THREADS if (own_model(self)) keep_exception(&t);
        frae_run_result res;
        frae_run_get_result(self->run, &res);
        if (t.type) {
            PyErr_Restore(t.type, t.value, t.tb);
        } else if (status) {
            const char *why = frae_run_error(self->run, NULL);
            frae_py_fail(why ? why : "training failed");
        } else {
            result =
                Py_BuildValue("{s:i,s:i,s:O,s:d,s:i}", "epoch", res.epoch,
                              "epochs", res.epochs, "early_stopped",
                              res.early_stopped ? Py_True : Py_False, "best",
                              res.best, "best_epoch", res.best_epoch);
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
    {"take_model", (PyCFunction)r_take_model, METH_NOARGS, "the trained model"},
    {NULL, NULL, 0, NULL}};

PyTypeObject frae_py_run_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frae._frae.Run",
    .tp_basicsize = sizeof(RunObject),
    .tp_dealloc = (destructor)run_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a libfrae training run",
    .tp_methods = run_methods,
    .tp_new = run_new,
};
