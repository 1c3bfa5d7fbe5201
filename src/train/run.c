/* Training runs (frae_train.h): the loop 'frae train' and Python's fit
 * share.
 *
 * Each batch of sequences is fed a BPTT window at a time (frae_step), so
 * only B x W frames are ever copied out of the data.  Sequences of
 * different lengths are zero-padded to the longest in their batch and the
 * padding is masked out of the loss; the last window of a sequence is
 * simply shorter.  No frame is dropped.
 *
 * State: a checkpoint holds the model, the Adam state and where training
 * stands (epoch, batch, data order, RNG, running sums, early-stopping
 * counters), so a resume continues bit for bit.
 *
 * Replicas: each one (a thread here, or this process as one rank of the
 * caller's transport) has its own model and copy of the training state,
 * trains on its share of every batch, and sums through the transport; all
 * make the same calls in the same order, so their states stay the same
 * bits.  The lead replica (rank 0) writes the checkpoints and the log and
 * calls the caller back.  Set-up allocates; a step does not. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/formats.h"
#include "core/frae_internal.h"
#include "frae_train.h"
#include "train/replicas.h"

enum { ERR_CAP = 2300 };

typedef struct {
    int epoch;       /* epochs completed */
    long batch;      /* next batch of the current epoch */
    uint64_t rng;    /* shuffling state */
    double sse, sae; /* the current epoch so far */
    double bits;     /* ... and the rate's bits (with a prior) */
    long values, frames;
    double seconds;  /* time in the current epoch so far, for frames/s */
    double started;  /* when the epoch started, less seconds */
    double best;     /* best monitored loss, and when */
    int best_epoch;
    int bad_epochs;
    int32_t *order;  /* the current epoch's sequence order (with crops: of
                        its crops) */
    long n_order;
    /* crops: the epoch's crops, sequence and first frame; n_order of
     * them, room for crop_cap (the most an epoch can cut) */
    int32_t *crop_seq, *crop_start;
    long crop_cap;
} train_state;

typedef struct member member;

/* One batch of sequences, window by window, on one replica. */
typedef struct {
    member *me;
    const frae_dataset *ds;
    float *win;  /* [B][W][D], B this replica's rows */
    int *valid;  /* [B] */
    const frae_dataset *tds; /* the targets, paired with ds (NULL: none) */
    float *twin; /* their window, like win */
    /* crops (training with crops): ids index these; else sequences */
    const int32_t *crop_seq, *crop_start;
    int crop;
} batch_runner;

/* One replica. */
struct member {
    frae_run *run;
    frae_transport t; /* size 1: alone */
    frae_reducer reducer; /* through t, timed */
    train_state s;
    frae_model *m;
    batch_runner brun, vrun;
    FILE *csv; /* the lead's */
    int batch_stop; /* on_batch asked to stop */
    int status;
    char err[ERR_CAP]; /* what this replica says ("" nothing) */
    double reduced_bytes, reduce_seconds;
    long reduce_calls;
    double seconds;
    pthread_t thread;
};

struct frae_run {
    frae_run_config rc;
    frae_run_hooks hooks;
    /* where the model starts: a checkpoint (rc.resume), another model's
     * state (start), or a new model */
    frae_model *start;
    int start_norm;
    /* a continued run's state and what it trained on (have_cont) */
    int batch_asked; /* rc.model.batch as given (the run caps it) */
    int have_cont;
    train_state cont;
    char cont_data[128];
    frae_run_config cont_rc;
    /* set-up, shared by the replicas (read-only once they run) */
    frae_checkpoint *ck;
    train_state s0; /* where training starts */
    int resumed, continued;
    frae_dataset *data, *tgt, *val, *val_tgt;
    const frae_dataset *val_ds, *val_tds;
    char summary[128], resumed_data[128];
    int32_t *perm, *val_seqs;
    long n_all, n_train, n_val;
    const char *norm;
    int save_on;
    int size; /* replicas (or the transport's ranks) */
    member *members;
    int n_members; /* in this process */
    frae_thread_group *group;
    int trained;
    int early_stopped;
    double t0;
    char err[ERR_CAP]; /* set-up's */
    int err_rank, err_said;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A member says what went wrong, in one line; returns code. */
static int say(member *me, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int say(member *me, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(me->err, sizeof me->err, fmt, ap);
    va_end(ap);
    frae_one_line(me->err);
    return code;
}

/* Set-up (the lead's view: every replica would say the same). */
static int fail(frae_run *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(frae_run *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    frae_one_line(r->err);
    r->err_said = 1;
    return code;
}

static void state_free(train_state *s)
{
    free(s->order), free(s->crop_seq), free(s->crop_start);
    s->order = s->crop_seq = s->crop_start = NULL;
}

/* A deep copy of src, with room for max(crop_cap, n_order) + 1 entries. */
static int state_copy(train_state *dst, const train_state *src)
{
    *dst = *src;
    dst->order = dst->crop_seq = dst->crop_start = NULL;
    const long cap = (src->crop_cap > src->n_order ? src->crop_cap
                                                   : src->n_order) + 1;
    const int crops = src->crop_seq != NULL;
    dst->order = malloc(sizeof(int32_t) * (size_t)cap);
    if (crops) {
        dst->crop_seq = malloc(sizeof(int32_t) * (size_t)cap);
        dst->crop_start = malloc(sizeof(int32_t) * (size_t)cap);
    }
    if (!dst->order || (crops && (!dst->crop_seq || !dst->crop_start))) {
        state_free(dst);
        return -1;
    }
    if (src->order)
        memcpy(dst->order, src->order, sizeof(int32_t) * (size_t)src->n_order);
    if (crops) {
        memcpy(dst->crop_seq, src->crop_seq,
               sizeof(int32_t) * (size_t)src->n_order);
        memcpy(dst->crop_start, src->crop_start,
               sizeof(int32_t) * (size_t)src->n_order);
    }
    return 0;
}

static void shuffle(int32_t *a, long n, uint64_t *rng)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(frae_rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- the replicas' sums ------------------------------------------------ */

static int timed_sum_f32(void *ctx, float *x, size_t n)
{
    member *me = ctx;
    const double t0 = now_seconds();
    int rc = me->t.sum_f32(me->t.ctx, x, n);
    me->reduced_bytes += sizeof(float) * n;
    me->reduce_seconds += now_seconds() - t0;
    me->reduce_calls++;
    return rc;
}

static int plain_sum_f64(void *ctx, double *x, size_t n)
{
    member *me = ctx;
    return me->t.sum_f64(me->t.ctx, x, n);
}

static int sum(member *me, double *x, size_t n)
{
    return me->t.size == 1 ? 0 : me->t.sum_f64(me->t.ctx, x, n);
}

/* Whether any replica's flag is set (agreement on errors and stops); -1
 * if the sum failed. */
static int any(member *me, int flag)
{
    double v = flag ? 1.0 : 0.0;
    if (sum(me, &v, 1))
        return -1;
    return v > 0.0;
}

static int stop_asked(const member *me)
{
    const volatile sig_atomic_t *f = me->run->hooks.stop;
    return (f && *f) || me->batch_stop;
}

/* ---- batches ------------------------------------------------------------- */

/* The frames entry id of a batch stands for: a sequence, or a crop. */
static void span_of(const batch_runner *b, int32_t id, long *seq, long *start,
                    long *len)
{
    if (!b->crop_seq) {
        *seq = id, *start = 0, *len = frae_dataset_length(b->ds, id);
        return;
    }
    *seq = b->crop_seq[id], *start = b->crop_start[id];
    long left = frae_dataset_length(b->ds, *seq) - *start;
    *len = left < b->crop ? left : b->crop;
}

/* One batch of sequences, window by window: trains (train) or evaluates.
 * With replicas, the batch is the global one: each replica runs its slice
 * of it (one row of padding if it has none), for as many windows as the
 * longest sequence of the whole batch needs, so every replica makes the
 * same calls.  Returns 0, -1 if the loss went non-finite (this replica's;
 * the caller agrees on it), or FRAE_RUN_FAILED after the data could not be
 * read (by this replica, which said why, or by another). */
static int run_batch(batch_runner *b, const int32_t *seqs, int nb, int train,
                     frae_stats *total)
{
    member *me = b->me;
    const frae_config *c = frae_get_config(me->m);
    const int W = c->window, D = c->frame_dim;
    long longest = 0, seq, start, len, lo;
    for (int k = 0; k < nb; k++) {
        span_of(b, seqs[k], &seq, &start, &len);
        longest = len > longest ? len : longest;
    }
    const int mine = (int)frae_share(nb, me->t.rank, me->t.size, &lo);
    const int rows = mine > 0 ? mine : 1;
    const int32_t *own = seqs + lo;
    int bad = 0;
    frae_reset(me->m);
    for (long w0 = 0; w0 < longest; w0 += W) {
        int nt = longest - w0 < W ? (int)(longest - w0) : W;
        int failed = 0;
        for (int k = 0; k < rows && !failed; k++) {
            long have = 0;
            float *dst = b->win + (size_t)k * nt * D;
            float *tdst = b->tds ? b->twin + (size_t)k * nt * D : NULL;
            if (k < mine) {
                span_of(b, own[k], &seq, &start, &len);
                have = len - w0 < 0 ? 0 : len - w0 > nt ? nt : len - w0;
                if (have > 0 &&
                    (frae_dataset_read(b->ds, seq, start + w0, have, dst,
                                       me->err, sizeof me->err) ||
                     (tdst && frae_dataset_read(b->tds, seq, start + w0, have,
                                                tdst, me->err,
                                                sizeof me->err))))
                    failed = FRAE_RUN_FAILED;
            }
            memset(dst + (size_t)have * D, 0,
                   sizeof(float) * (size_t)(nt - have) * D);
            if (tdst)
                memset(tdst + (size_t)have * D, 0,
                       sizeof(float) * (size_t)(nt - have) * D);
            b->valid[k] = (int)have;
        }
        /* a replica that could not read stops them all, here */
        if (me->t.size > 1 ? any(me, failed) : failed)
            return FRAE_RUN_FAILED;
        frae_stats st;
        const frae_batch batch = {b->win, b->tds ? b->twin : NULL, b->valid,
                                  rows,   nt,   1,
                                  train ? FRAE_STEP_TRAIN : FRAE_STEP_EVALUATE};
        if (frae_step(me->m, &batch, &st))
            return FRAE_RUN_FAILED; /* the replicas' sums failed */
        /* a diverged batch runs to its end, so replicas stay in step */
        if (!isfinite(st.sse) || (train && !isfinite(st.grad_norm)))
            bad = 1;
        total->sse += st.sse, total->sae += st.sae;
        total->rate_bits += st.rate_bits;
        total->values += st.values, total->frames += st.frames;
    }
    return bad ? -1 : 0;
}

/* A batch's sums (this replica's in, the replicas' out), with whether any
 * replica diverged (-1) or was asked to stop (*stop). */
static int agree_sums(member *me, frae_stats *st, int rc, int *stop)
{
    double v[7] = {st->sse,           st->sae,
                   st->rate_bits,     (double)st->values,
                   (double)st->frames, rc == -1 ? 1.0 : 0.0,
                   stop && stop_asked(me) ? 1.0 : 0.0};
    if (sum(me, v, 7))
        return FRAE_RUN_FAILED;
    st->sse = v[0], st->sae = v[1], st->rate_bits = v[2];
    st->values = (long)v[3], st->frames = (long)v[4];
    if (stop)
        *stop = v[6] > 0;
    return v[5] > 0 ? -1 : 0;
}

/* Batches of B (global) sequences; with replicas, the sums of them all. */
static int evaluate(batch_runner *b, const int32_t *seqs, long n, int B,
                    frae_stats *out)
{
    memset(out, 0, sizeof *out);
    int bad = 0;
    for (long i = 0; i < n; i += B) {
        int nb = n - i < B ? (int)(n - i) : B;
        int rc = run_batch(b, seqs + i, nb, 0, out);
        if (rc == FRAE_RUN_FAILED)
            return rc;
        bad |= rc == -1;
    }
    return agree_sums(b->me, out, bad ? -1 : 0, NULL);
}

/* ---- checkpoints ------------------------------------------------------------ */

static int save_checkpoint(member *me, const char *path, int with_state)
{
    const frae_run *r = me->run;
    const train_state *s = &me->s;
    char v[19][160];
    frae_meta meta[19 + 64];
    int n = 0;
#define META(key, ...)                                                         \
    do {                                                                       \
        snprintf(v[n], sizeof v[n], __VA_ARGS__);                              \
        meta[n] = (frae_meta){key, v[n]};                                      \
        n++;                                                                   \
    } while (0)
    if (with_state) {
        META("train.epoch", "%d", s->epoch);
        META("train.batch", "%ld", s->batch);
        META("train.rng", "%016llx", (unsigned long long)s->rng);
        META("train.epoch_sse", "%.17g", s->sse);
        META("train.epoch_sae", "%.17g", s->sae);
        META("train.epoch_bits", "%.17g", s->bits);
        META("train.epoch_values", "%ld", s->values);
        META("train.epoch_frames", "%ld", s->frames);
        META("train.best", "%.17g", s->best);
        META("train.best_epoch", "%d", s->best_epoch);
        META("train.bad_epochs", "%d", s->bad_epochs);
        META("train.epochs", "%d", r->rc.epochs);
        META("train.patience", "%d", r->rc.patience);
        META("train.val_split", "%.17g", r->rc.val_split);
        META("train.data", "%s", r->summary);
        /* frae.batch is each replica's; the run's batch is their sum */
        META("train.global_batch", "%d", r->rc.model.batch);
        if (r->rc.crop)
            META("train.crop", "%d", r->rc.crop);
    }
    if (frae_recipe_at(r->rc.recipe - 1))
        META("train.recipe", "%s", frae_recipe_at(r->rc.recipe - 1)->name);
#undef META
    for (int i = 0; i < r->rc.n_meta && i < 64; i++)
        meta[n++] = r->rc.meta[i];
    frae_i32_array order[3] = {{"train.order", s->order, s->n_order},
                               {"train.crop_seq", s->crop_seq, s->n_order},
                               {"train.crop_start", s->crop_start, s->n_order}};
    if (frae_save(me->m, path, with_state, meta, n, order,
                  with_state ? (r->rc.crop ? 3 : 1) : 0, me->err,
                  sizeof me->err))
        return -1;
    return 0;
}

/* The lead replica saves, if `on`; every replica learns whether it
 * worked.  Returns -1 if it did not (the lead said why). */
static int save_agreed(member *me, const char *path, int on, int with_state)
{
    int failed = 0;
    if (on && me->t.rank == 0)
        failed = save_checkpoint(me, path, with_state) != 0;
    return any(me, failed) ? -1 : 0;
}

/* ---- the training state of a checkpoint, trusted only once checked ------- */

/* One line naming the field, and FRAE_RUN_BAD_INPUT. */
static int bad_state(char *err, size_t errlen, const char *path,
                     const char *key, const char *v, const char *why)
{
    frae_errorf(err, errlen, "%s: training state '%s' = '%s' %s", path, key,
                v ? v : "(missing)", why);
    return FRAE_RUN_BAD_INPUT;
}

static int state_long(const frae_checkpoint *ck, const char *path,
                      const char *key, long lo, long hi, long *out, char *err,
                      size_t errlen)
{
    const char *v = frae_checkpoint_meta(ck, key);
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *v == ' ' || *end || errno || x < lo || x > hi) {
        char why[96];
        snprintf(why, sizeof why, "is not an integer in %ld..%ld", lo, hi);
        return bad_state(err, errlen, path, key, v, why);
    }
    *out = x;
    return 0;
}

/* A finite number >= 0 (or +inf where inf_ok). */
static int state_double(const frae_checkpoint *ck, const char *path,
                        const char *key, double hi, int inf_ok, double *out,
                        char *err, size_t errlen)
{
    const char *v = frae_checkpoint_meta(ck, key);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(x >= 0) || (x > hi && !(inf_ok && isinf(x))))
        return bad_state(err, errlen, path, key, v,
                         "is not a number in range");
    *out = x;
    return 0;
}

/* Reads the training state of ck into s, and the run's settings the
 * checkpoint holds into rc (epochs, patience and val_split where rc left
 * them to it; the batch and the crops always). */
static int load_state(const frae_checkpoint *ck, const char *path,
                      train_state *s, frae_run_config *rc, char *summary,
                      size_t sumcap, char *err, size_t errlen)
{
    if (!frae_checkpoint_meta(ck, "train.epoch") ||
        !frae_checkpoint_has_optimizer(ck)) {
        frae_errorf(err, errlen,
                    "%s: no training state to resume (a model saved without "
                    "it, e.g. by --save-best or import)",
                    path);
        return FRAE_RUN_BAD_INPUT;
    }
    const long big = 1000000000L;
    long epoch = 0, batch = 0, values = 0, frames = 0, best_epoch = 0,
         bad = 0, epochs = 0, patience = 0;
    double sse = 0, sae = 0, best = 0, split = 0;
#define L(key, lo, hi, out) state_long(ck, path, key, lo, hi, out, err, errlen)
#define F(key, hi, inf, out)                                                   \
    state_double(ck, path, key, hi, inf, out, err, errlen)
    if (L("train.epochs", 1, big, &epochs) ||
        L("train.epoch", 0, epochs, &epoch) ||
        L("train.batch", 0, INT32_MAX, &batch) ||
        L("train.epoch_values", 0, LONG_MAX, &values) ||
        L("train.epoch_frames", 0, LONG_MAX, &frames) ||
        L("train.best_epoch", 0, epoch, &best_epoch) ||
        L("train.bad_epochs", 0, epoch, &bad) ||
        L("train.patience", 0, big, &patience) ||
        F("train.epoch_sse", DBL_MAX, 0, &sse) ||
        F("train.epoch_sae", DBL_MAX, 0, &sae) ||
        F("train.best", DBL_MAX, 1, &best) ||
        F("train.val_split", 0.99, 0, &split))
        return FRAE_RUN_BAD_INPUT;
    /* absent (before data-parallel training): the model's batch */
    if (frae_checkpoint_meta(ck, "train.global_batch")) {
        long gb;
        if (L("train.global_batch", 1, 1 << 20, &gb))
            return FRAE_RUN_BAD_INPUT;
        rc->model.batch = (int)gb;
    }
    /* absent (before priors): no bits */
    if (frae_checkpoint_meta(ck, "train.epoch_bits") &&
        F("train.epoch_bits", DBL_MAX, 0, &s->bits))
        return FRAE_RUN_BAD_INPUT;
    const char *rng = frae_checkpoint_meta(ck, "train.rng");
    char *end = NULL;
    s->rng = rng ? strtoull(rng, &end, 16) : 0;
    if (!rng || strlen(rng) != 16 || *end ||
        strspn(rng, "0123456789abcdef") != 16)
        return bad_state(err, errlen, path, "train.rng", rng,
                         "is not 16 hex digits");
    const char *data = frae_checkpoint_meta(ck, "train.data");
    if (!data || strlen(data) >= sumcap)
        return bad_state(err, errlen, path, "train.data", data,
                         "is missing or too long");
    s->epoch = (int)epoch;
    s->batch = batch;
    s->sse = sse, s->sae = sae;
    s->values = values, s->frames = frames;
    s->best = best, s->best_epoch = (int)best_epoch, s->bad_epochs = (int)bad;
    if (rc->epochs == 0) { /* the checkpoint's total */
        rc->epochs_resumed = 1;
        rc->epochs = (int)epochs;
    }
    if (rc->patience < 0)
        rc->patience = (int)patience;
    if (rc->val_split < 0)
        rc->val_split = split;
    snprintf(summary, sumcap, "%s", data);
    /* the recipe it was trained with, recorded again (a name this build
     * does not know is left out) */
    if (frae_checkpoint_meta(ck, "train.recipe"))
        rc->recipe =
            frae_recipe_find(frae_checkpoint_meta(ck, "train.recipe")) + 1;
    s->n_order = frae_checkpoint_i32(ck, "train.order", NULL, 0);
    if (s->n_order < 1 || s->n_order > INT32_MAX) {
        frae_errorf(err, errlen,
                    "%s: training state lacks its data order (train.order)",
                    path);
        return FRAE_RUN_BAD_INPUT;
    }
    s->order = malloc(sizeof(int32_t) * (size_t)(s->n_order + 1));
    if (!s->order)
        return frae_errorf(err, errlen, "out of memory"), FRAE_RUN_FAILED;
    frae_checkpoint_i32(ck, "train.order", s->order, s->n_order);
    if (frae_checkpoint_meta(ck, "train.crop")) {
        long crop;
        if (L("train.crop", 1, 1 << 24, &crop))
            return FRAE_RUN_BAD_INPUT;
        rc->crop = (int)crop;
        static const char *const keys[2] = {"train.crop_seq",
                                            "train.crop_start"};
        int32_t **dst[2] = {&s->crop_seq, &s->crop_start};
        for (int i = 0; i < 2; i++) {
            if (frae_checkpoint_i32(ck, keys[i], NULL, 0) != s->n_order) {
                frae_errorf(err, errlen,
                            "%s: training state '%s' should have %ld "
                            "entries, one per crop of train.order",
                            path, keys[i], s->n_order);
                return FRAE_RUN_BAD_INPUT;
            }
            *dst[i] = malloc(sizeof(int32_t) * (size_t)(s->n_order + 1));
            if (!*dst[i])
                return frae_errorf(err, errlen, "out of memory"),
                       FRAE_RUN_FAILED;
            frae_checkpoint_i32(ck, keys[i], *dst[i], s->n_order);
        }
    }
#undef L
#undef F
    return 0;
}

/* Opens rc->resume: its config into rc->model (isa and threads kept) and
 * its state into s.  *ck_out (if non-NULL) keeps the file open. */
static int open_resume(frae_run_config *rc, train_state *s, char *summary,
                       size_t sumcap, frae_checkpoint **ck_out, char *err,
                       size_t errlen)
{
    int status = frae_run_config_resumable(rc, err, errlen);
    if (status)
        return status;
    const frae_isa isa = rc->model.isa;
    const int threads = rc->model.threads;
    frae_checkpoint *ck = frae_checkpoint_open(rc->resume, err, errlen);
    if (!ck || frae_checkpoint_config(ck, &rc->model, err, errlen)) {
        frae_checkpoint_close(ck);
        return FRAE_RUN_BAD_INPUT;
    }
    if (rc->model.weights == FRAE_WEIGHTS_BF16) {
        frae_checkpoint_close(ck);
        frae_errorf(err, errlen,
                    "%s: bf16 weights are for inference only; 'frae convert "
                    "--weights f32' makes a model to train from",
                    rc->resume);
        return FRAE_RUN_BAD_INPUT;
    }
    status = load_state(ck, rc->resume, s, rc, summary, sumcap, err, errlen);
    rc->model.isa = isa; /* the machine's, not the checkpoint's */
    rc->model.threads = threads;
    if (status || !ck_out)
        frae_checkpoint_close(ck);
    else
        *ck_out = ck;
    return status;
}

int frae_run_config_resume(frae_run_config *rc, char *err, size_t errlen)
{
    train_state s;
    memset(&s, 0, sizeof s);
    char summary[128];
    int status =
        open_resume(rc, &s, summary, sizeof summary, NULL, err, errlen);
    state_free(&s);
    return status;
}

/* The state against the data it resumes on: the order is a permutation of
 * the training set, the batch inside the epoch, the running sums those of
 * at most the frames the epoch has. */
static int check_state(frae_run *r, const train_state *s, const char *path,
                       long n_batches)
{
    const long total_frames = frae_dataset_total_frames(r->data);
    const int dim = frae_dataset_dim(r->data);
    unsigned char *seen = calloc((size_t)r->n_all, 1);
    if (!seen)
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    for (long i = 0; i < r->n_train; i++)
        seen[r->perm[i]] = 1; /* 1: may appear in the order */
    for (long i = 0; i < s->n_order; i++) {
        int32_t v = s->order[i];
        if (v < 0 || v >= r->n_all || seen[v] != 1) {
            const char *why = v < 0 || v >= r->n_all ? "out of range"
                              : seen[v] == 2         ? "repeated"
                                                     : "a validation sequence";
            free(seen);
            return fail(r, FRAE_RUN_BAD_INPUT,
                        "%s: training state 'train.order' entry %ld = %d is "
                        "%s",
                        path, i, v, why);
        }
        seen[v] = 2;
    }
    free(seen);
    if (s->batch > n_batches) /* n_batches: stopped after the last one */
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s: training state 'train.batch' = %ld, but an epoch "
                    "has %ld batches",
                    path, s->batch, n_batches);
    if (s->frames > total_frames || s->values != s->frames * (long)dim)
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s: training state counts %ld frames and %ld values in "
                    "this epoch; the data has %ld frames of %d values",
                    path, s->frames, s->values, total_frames, dim);
    return 0;
}

/* ---- the run's settings, before data ------------------------------------- */

int frae_run_check_sizes(const frae_run_config *rc, int dim_known,
                         int replicas, long builtin_sequences,
                         long builtin_frames, char *err, size_t errlen)
{
    if (!dim_known)
        return 0; /* the files decide D */
    /* Before the data is loaded only its frame dimension may be known, so
     * a model is checked at the least batch and window it could be given
     * (its weights, gradients and moments, which no cap changes), and the
     * built-in data, whose sizes are the options', exactly as the run will
     * make it. */
    frae_config c = rc->model;
    c.training = 1;
    c.batch = c.window = 1;
    size_t data_bytes = 0;
    if (builtin_sequences > 0) {
        /* as the run caps them; the batch is each replica's share */
        const long seqs = builtin_sequences;
        c.batch = (int)(((rc->model.batch < seqs ? rc->model.batch : seqs) +
                         replicas - 1) /
                        replicas);
        c.window = rc->model.window < builtin_frames ? rc->model.window
                                                     : (int)builtin_frames;
        data_bytes = (size_t)builtin_sequences * (size_t)builtin_frames *
                     (size_t)rc->model.frame_dim * sizeof(float);
    }
    size_t model_bytes;
    if (frae_bytes_needed(&c, &model_bytes, err, errlen))
        return FRAE_RUN_BAD_INPUT;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double machine = pages > 0 && page > 0 ? (double)pages * page : 0;
    if (data_bytes && machine > 0 &&
        (double)data_bytes + (double)model_bytes >= machine) {
        frae_errorf(err, errlen,
                    "the built-in data (%ld x %ld frames of %d values) needs "
                    "%.1f GiB and the model %.1f GiB, more than this "
                    "machine's %.1f GiB",
                    builtin_sequences, builtin_frames, rc->model.frame_dim,
                    (double)data_bytes / 1073741824.0,
                    (double)model_bytes / 1073741824.0,
                    machine / 1073741824.0);
        return FRAE_RUN_BAD_INPUT;
    }
    return 0;
}

int frae_run_check_pairing(const frae_run_config *rc, int data_files,
                           int targets, int val_data, int val_targets,
                           char *err, size_t errlen)
{
    const char *why = NULL;
    char buf[1200];
    if (rc->resume && rc->model.targets && !targets) {
        snprintf(buf, sizeof buf,
                 "%s was trained toward targets: give --targets again to "
                 "resume",
                 rc->resume);
        why = buf;
    } else if (rc->resume && !rc->model.targets && targets) {
        snprintf(buf, sizeof buf,
                 "%s was trained to rebuild its inputs: --targets cannot be "
                 "added when resuming",
                 rc->resume);
        why = buf;
    } else if (!rc->resume && !targets &&
               frae_recipe_at(rc->recipe - 1) &&
               frae_recipe_at(rc->recipe - 1)->needs_targets) {
        snprintf(buf, sizeof buf,
                 "--recipe %s trains toward clean targets: give --targets "
                 "(paired with DATA)",
                 frae_recipe_at(rc->recipe - 1)->name);
        why = buf;
    } else if (val_targets && !targets) {
        why = "--val-targets needs --targets";
    } else if (!targets) {
        return 0;
    } else if (!data_files) {
        why = "--targets needs training data files to pair with";
    } else if (val_data && !val_targets) {
        why = "--val-data with --targets needs --val-targets";
    } else if (val_targets && !val_data) {
        why = "--val-targets needs --val-data";
    }
    if (!why)
        return 0;
    frae_errorf(err, errlen, "%s", why);
    return FRAE_RUN_BAD_INPUT;
}

/* ---- a run ------------------------------------------------------------------ */

frae_run *frae_run_create(const frae_run_config *rc, char *err, size_t errlen)
{
    frae_run *r = calloc(1, sizeof *r);
    if (!r) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    r->rc = *rc;
    r->batch_asked = rc->model.batch;
    r->s0.best = INFINITY;
    return r;
}

static void members_free(frae_run *r)
{
    for (int i = 0; i < r->n_members; i++) {
        member *me = &r->members[i];
        if (me->csv)
            fclose(me->csv);
        free(me->brun.win), free(me->brun.valid), free(me->brun.twin);
        state_free(&me->s);
        frae_destroy(me->m);
        me->m = NULL;
    }
}

void frae_run_destroy(frae_run *r)
{
    if (!r)
        return;
    members_free(r);
    free(r->members);
    frae_thread_group_free(r->group);
    frae_destroy(r->start);
    state_free(&r->cont);
    state_free(&r->s0);
    frae_checkpoint_close(r->ck);
    free(r->perm), free(r->val_seqs);
    free(r);
}

/* dst's weights, Adam state (when both train) and, with norm, the
 * normalization statistics, from src of the same shape. */
static int copy_model_state(frae_model *dst, const frae_model *src, int norm)
{
    if (frae_param_count(dst) != frae_param_count(src))
        return -1;
    const size_t n = frae_param_count(src);
    float *p = malloc(sizeof(float) * n);
    if (!p)
        return -1;
    frae_get_params(src, p);
    frae_set_params(dst, p);
    free(p);
    if (dst->adam_m && src->adam_m) {
        memcpy(dst->adam_m, src->adam_m, sizeof(float) * n);
        memcpy(dst->adam_v, src->adam_v, sizeof(float) * n);
        dst->adam_step = src->adam_step;
    }
    if (!norm || !frae_get_config(src)->normalize ||
        !frae_get_config(dst)->normalize)
        return 0;
    const int D = frae_get_config(src)->frame_dim;
    float *stats = malloc(sizeof(float) * 2 * (size_t)D);
    int rc = !stats || frae_get_normalization(src, stats, stats + D) ||
                     frae_set_normalization(dst, stats, stats + D)
                 ? -1
                 : 0;
    free(stats);
    return rc;
}

/* A training copy of m (its shape and settings, capacity for one batch of
 * one frame), holding its state: what a run starts from. */
static frae_model *snapshot(const frae_model *m, int norm)
{
    frae_config c = *frae_get_config(m);
    c.training = 1;
    c.batch = c.window = 1;
    c.weights = FRAE_WEIGHTS_F32;
    frae_model *copy = frae_create(&c, NULL, 0);
    if (copy && copy_model_state(copy, m, norm)) {
        frae_destroy(copy);
        copy = NULL;
    }
    return copy;
}

int frae_run_start_from(frae_run *r, const frae_model *m,
                        int with_normalization)
{
    frae_destroy(r->start);
    r->start = snapshot(m, with_normalization);
    r->start_norm = with_normalization;
    return r->start ? 0 : fail(r, FRAE_RUN_FAILED, "out of memory");
}

int frae_run_continue(frae_run *r, const frae_run *prev)
{
    if (!prev->trained || prev->n_members < 1)
        return fail(r, FRAE_RUN_BAD_INPUT, "the run to continue has not "
                                           "trained");
    const member *lead = &prev->members[0];
    int status = frae_run_start_from(r, lead->m, 1);
    if (status)
        return status;
    state_free(&r->cont);
    if (state_copy(&r->cont, &lead->s))
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    r->have_cont = 1;
    r->cont_rc = prev->rc;
    r->cont_rc.model.batch = prev->batch_asked;
    snprintf(r->cont_data, sizeof r->cont_data, "%s", prev->summary);
    return 0;
}

/* ---- set-up, shared by the replicas -------------------------------------- */

/* Targets pair with inputs sequence by sequence: the same count, and each
 * pair the same length (the frame dimension is checked by the load). */
static int check_pairs(frae_run *r, const frae_dataset *in,
                       const frae_dataset *tg, const char *what)
{
    const long n = frae_dataset_sequences(in), nt = frae_dataset_sequences(tg);
    if (n != nt)
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s: %ld input sequences but %ld target sequences: each "
                    "input needs its target",
                    what, n, nt);
    for (long i = 0; i < n; i++) {
        const long fa = frae_dataset_length(in, i), fb =
                                                        frae_dataset_length(tg,
                                                                            i);
        if (fa != fb) {
            long ia, ib;
            const char *na = frae_dataset_origin(in, i, &ia);
            const char *nb = frae_dataset_origin(tg, i, &ib);
            return fail(r, FRAE_RUN_BAD_INPUT,
                        "%s: pair %ld (%s sequence %ld, %s sequence %ld) has "
                        "%ld input frames and %ld target frames",
                        what, i, na, ia, nb, ib, fa, fb);
        }
    }
    return 0;
}

/* The data against the settings: targets paired, pitch from audio, and
 * when resuming the same data as before. */
static int settle_data(frae_run *r)
{
    frae_run_config *rc = &r->rc;
    int status = frae_run_check_pairing(rc, 1, r->tgt != NULL, r->val != NULL,
                                        r->val_tgt != NULL, r->err,
                                        sizeof r->err);
    if (status)
        return r->err_said = 1, status;
    rc->model.frame_dim = frae_dataset_dim(r->data);
    if (r->tgt) {
        rc->model.targets = 1;
        if ((status = check_pairs(r, r->data, r->tgt, "--targets")))
            return status;
        if (r->val_tgt &&
            (status = check_pairs(r, r->val, r->val_tgt, "--val-targets")))
            return status;
    }
    if (rc->model.pitch && !rc->audio && !rc->resume)
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "--pitch: pitch comes from audio; train on audio files or "
                    "give --audio-features");
    snprintf(r->summary, sizeof r->summary,
             "%ld sequences, %ld frames, dim %d%s",
             frae_dataset_sequences(r->data),
             frae_dataset_total_frames(r->data), frae_dataset_dim(r->data),
             r->tgt ? ", with targets" : "");
    if (r->resumed && strcmp(r->resumed_data, r->summary))
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s was trained on %s; this data has %s: give the same "
                    "data to resume",
                    rc->resume, r->resumed_data, r->summary);
    return 0;
}

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Crops: room for the most crops an epoch can cut, and a resumed (or
 * continued) state's crops checked against the data: every crop inside a
 * training sequence, the order a permutation of them. */
static int settle_crops(frae_run *r, int from_state)
{
    train_state *s = &r->s0;
    const frae_run_config *rc = &r->rc;
    const char *path = rc->resume ? rc->resume : "the run continued";
    long cap = 0;
    for (long i = 0; i < r->n_train; i++) {
        long len = frae_dataset_length(r->data, r->perm[i]);
        cap += len <= rc->crop ? 1 : len / rc->crop;
    }
    if (cap > INT32_MAX)
        return fail(r, FRAE_RUN_BAD_INPUT, "--crop %d cuts more than 2^31 crops",
                    rc->crop);
    if (from_state && s->n_order > cap)
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s: training state has %ld crops; this data cuts at "
                    "most %ld",
                    path, s->n_order, cap);
    int32_t **arr[3] = {&s->order, &s->crop_seq, &s->crop_start};
    for (int i = 0; i < 3; i++) {
        int32_t *p = realloc(*arr[i], sizeof(int32_t) * (size_t)(cap + 1));
        if (!p)
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        *arr[i] = p;
    }
    s->crop_cap = cap;
    if (!from_state) {
        s->n_order = 0; /* cut when the first epoch starts */
        return 0;
    }
    const long total_frames = frae_dataset_total_frames(r->data);
    const int dim = frae_dataset_dim(r->data);
    unsigned char *in_train = calloc((size_t)r->n_all, 1);
    unsigned char *seen = calloc((size_t)s->n_order, 1);
    if (!in_train || !seen) {
        free(in_train), free(seen);
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    }
    for (long i = 0; i < r->n_train; i++)
        in_train[r->perm[i]] = 1;
    int status = 0;
    for (long i = 0; i < s->n_order && !status; i++) {
        int32_t q = s->crop_seq[i], at = s->crop_start[i], v = s->order[i];
        if (q < 0 || q >= r->n_all || !in_train[q])
            status = fail(r, FRAE_RUN_BAD_INPUT,
                          "%s: training state 'train.crop_seq' entry %ld = %d "
                          "is not a training sequence",
                          path, i, q);
        else if (at < 0 || at >= frae_dataset_length(r->data, q))
            status = fail(r, FRAE_RUN_BAD_INPUT,
                          "%s: training state 'train.crop_start' entry %ld = "
                          "%d is outside its sequence (%ld frames)",
                          path, i, at, frae_dataset_length(r->data, q));
        else if (v < 0 || v >= s->n_order || seen[v])
            status = fail(r, FRAE_RUN_BAD_INPUT,
                          "%s: training state 'train.order' entry %ld = %d is "
                          "%s",
                          path, i, v,
                          v < 0 || v >= s->n_order ? "out of range"
                                                   : "repeated");
        else
            seen[v] = 1;
    }
    free(in_train), free(seen);
    const long n_batches = (s->n_order + rc->model.batch - 1) / rc->model.batch;
    if (!status && s->batch > n_batches)
        status = fail(r, FRAE_RUN_BAD_INPUT,
                      "%s: training state 'train.batch' = %ld, but the epoch "
                      "has %ld batches",
                      path, s->batch, n_batches);
    if (!status && (s->frames > total_frames || s->values != s->frames * dim))
        status = fail(r, FRAE_RUN_BAD_INPUT,
                      "%s: training state counts %ld frames and %ld values in "
                      "this epoch; the data has %ld frames of %d values",
                      path, s->frames, s->values, total_frames, dim);
    return status;
}

/* The training set and the validation sequences: a seeded split of the
 * data (the same every run), or other data.  A new run's epoch order
 * starts as the training set; a resumed one's must be a permutation of it. */
static int split_validation(frae_run *r, int from_state)
{
    frae_run_config *rc = &r->rc;
    train_state *s = &r->s0;
    const char *path = rc->resume ? rc->resume : "the run continued";
    r->n_all = frae_dataset_sequences(r->data);
    long n_split = (long)(rc->val_split * r->n_all + 0.5);
    if (rc->val_split > 0 && (n_split < 1 || n_split >= r->n_all))
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "--val-split %g of %ld sequences leaves an empty training "
                    "or validation set",
                    rc->val_split, r->n_all);
    free(r->perm);
    r->perm = malloc(sizeof(int32_t) * (size_t)(r->n_all + 1));
    if (!r->perm)
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    for (long i = 0; i < r->n_all; i++)
        r->perm[i] = (int32_t)i;
    r->n_train = r->n_all;
    if (n_split) {
        uint64_t split_rng = rc->model.seed ^ 0x5a17c0deull;
        shuffle(r->perm, r->n_all, &split_rng);
        r->n_train = r->n_all - n_split;
        /* the training set in file order before epoch shuffles */
        qsort(r->perm, (size_t)r->n_train, sizeof *r->perm, cmp_int32);
    }
    if (rc->crop) {
        int status = settle_crops(r, from_state);
        if (status)
            return status;
    } else if (!from_state) {
        s->n_order = r->n_train;
        free(s->order);
        s->order = malloc(sizeof(int32_t) * (size_t)(r->n_train + 1));
        if (!s->order)
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        memcpy(s->order, r->perm, sizeof(int32_t) * (size_t)r->n_train);
    } else if (s->n_order != r->n_train) {
        return fail(r, FRAE_RUN_BAD_INPUT,
                    "%s: its data order has %ld sequences, the training set "
                    "has %ld",
                    path, s->n_order, r->n_train);
    } else {
        int status = check_state(
            r, s, path, (r->n_train + rc->model.batch - 1) / rc->model.batch);
        if (status)
            return status;
    }
    const int32_t *val_from = r->perm + r->n_train;
    r->val_ds = r->data;
    r->val_tds = r->tgt;
    r->n_val = n_split;
    if (r->val) {
        r->val_ds = r->val;
        r->val_tds = r->val_tgt;
        r->n_val = frae_dataset_sequences(r->val);
        val_from = NULL; /* all of them, in order */
    }
    free(r->val_seqs);
    r->val_seqs = NULL;
    if (r->n_val) {
        r->val_seqs = malloc(sizeof(int32_t) * (size_t)r->n_val);
        if (!r->val_seqs)
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        for (long i = 0; i < r->n_val; i++)
            r->val_seqs[i] = val_from ? val_from[i] : (int32_t)i;
    }
    return 0;
}

/* Whether a continued run's state carries on here: the same data, batch,
 * split, crops and order; its state is then checked like a resumed one. */
static int continues(const frae_run *r)
{
    const frae_run_config *a = &r->rc, *b = &r->cont_rc;
    return r->have_cont && !strcmp(r->cont_data, r->summary) &&
           r->batch_asked == b->model.batch && a->crop == b->crop &&
           a->val_split == b->val_split && a->model.seed == b->model.seed &&
           a->shuffle == b->shuffle;
}

/* The longest sequence of a dataset (1 if empty). */
static long longest_sequence(const frae_dataset *ds)
{
    long longest = 1;
    for (long i = 0; ds && i < frae_dataset_sequences(ds); i++)
        if (frae_dataset_length(ds, i) > longest)
            longest = frae_dataset_length(ds, i);
    return longest;
}

/* The log, appended to: a file, or a FIFO that a process reads (refused,
 * not waited on, without one: O_NONBLOCK), "-" standard output. */
static FILE *open_csv(const char *path, int prior)
{
    struct stat sb;
    int fresh = stat(path, &sb) || sb.st_size == 0;
    int fd = !strcmp(path, "-")
                 ? dup(STDOUT_FILENO)
                 : open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK |
                                  O_CLOEXEC, 0666);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!f && fd >= 0)
        close(fd);
    if (f && fresh)
        fprintf(f, "epoch,loss,mae,val_loss,val_mae,frames_per_s,seconds%s\n",
                prior ? ",rate,val_rate" : "");
    return f;
}

/* The models (from the checkpoint when resuming) and their window
 * buffers.  No call ever gets more sequences than a set has, or more frames
 * than its longest sequence: capacity past that would change nothing but
 * memory, so a batch or window (from the options or a checkpoint) is
 * capped there, and the results are the same. */
static int make_models(frae_run *r)
{
    frae_run_config *rc = &r->rc;
    long most_seqs = r->n_train > r->n_val ? r->n_train : r->n_val;
    if (rc->crop && r->s0.crop_cap > most_seqs)
        most_seqs = r->s0.crop_cap;
    long longest = longest_sequence(r->data);
    if (longest_sequence(r->val) > longest)
        longest = longest_sequence(r->val);
    if (rc->model.batch > most_seqs)
        rc->model.batch = (int)most_seqs;
    if (rc->model.window > longest)
        rc->model.window = (int)longest;
    rc->model.training = 1;
    if (!r->resumed) {
        r->norm = rc->normalize;
        if (!r->norm)
            r->norm = rc->audio ? "on" : "off";
        rc->model.normalize = strcmp(r->norm, "off") != 0;
    }
    /* rc->model.batch is the run's (global) batch; each replica's model
     * has room for its share of it */
    frae_config mine = rc->model;
    mine.batch = (rc->model.batch + r->size - 1) / r->size;
    const int B = mine.batch, W = rc->model.window, D = rc->model.frame_dim;
    for (int i = 0; i < r->n_members; i++) {
        member *me = &r->members[i];
        me->m = frae_create(&mine, r->err, sizeof r->err);
        if (!me->m ||
            (r->ck && frae_checkpoint_restore(r->ck, me->m, 1, r->err,
                                              sizeof r->err)))
            return r->err_said = 1, FRAE_RUN_BAD_INPUT;
        if (r->start && copy_model_state(me->m, r->start, r->start_norm))
            return fail(r, FRAE_RUN_BAD_INPUT,
                        "the model to start from has another shape");
        me->brun = (batch_runner){me,
                                  r->data,
                                  malloc(sizeof(float) * (size_t)B * W * D),
                                  malloc(sizeof(int) * (size_t)B),
                                  r->tgt,
                                  r->tgt ? malloc(sizeof(float) * (size_t)B *
                                                  W * D)
                                         : NULL,
                                  NULL,
                                  NULL,
                                  0};
        if (!me->brun.win || !me->brun.valid || (r->tgt && !me->brun.twin))
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        if (state_copy(&me->s, &r->s0))
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        me->vrun = me->brun;
        me->vrun.ds = r->val_ds;
        me->vrun.tds = r->val_tds;
        if (rc->crop) { /* training batches are crops; validation, sequences */
            me->brun.crop_seq = me->s.crop_seq;
            me->brun.crop_start = me->s.crop_start;
            me->brun.crop = rc->crop;
        }
        if (me->t.rank == 0 && rc->log_csv &&
            !(me->csv = open_csv(rc->log_csv, rc->model.prior_hidden > 0)))
            return fail(r, FRAE_RUN_BAD_INPUT,
                        "%s: cannot open for appending: %s", rc->log_csv,
                        errno == ENXIO ? "a FIFO that no process reads"
                                       : strerror(errno));
    }
    frae_checkpoint_close(r->ck);
    r->ck = NULL;
    r->save_on = rc->save != NULL;
    return 0;
}

/* Where training starts: a checkpoint's state, a continued run's, or the
 * first epoch; then the data, the split and the models. */
static int set_up(frae_run *r)
{
    frae_run_config *rc = &r->rc;
    int status = 0;
    if (rc->resume) {
        status = open_resume(rc, &r->s0, r->resumed_data,
                             sizeof r->resumed_data, &r->ck, r->err,
                             sizeof r->err);
        if (status)
            return r->err_said = 1, status;
        r->resumed = 1;
    } else {
        /* the epochs' shuffles */
        r->s0.rng = rc->model.seed ^ 0x0123456789abcdefull;
    }
    if ((status = frae_run_config_settle(rc, r->val != NULL, r->err,
                                         sizeof r->err)))
        return r->err_said = 1, status;
    if ((status = settle_data(r)))
        return status;
    int from_state = r->resumed;
    if (!r->resumed && continues(r)) {
        /* a continued fit: its state, checked as a resume's; one that does
         * not fit this data starts its epochs afresh */
        train_state fresh = r->s0;
        if (state_copy(&r->s0, &r->cont))
            return fail(r, FRAE_RUN_FAILED, "out of memory");
        r->s0.best = INFINITY, r->s0.best_epoch = 0, r->s0.bad_epochs = 0;
        status = split_validation(r, 1);
        if (status == FRAE_RUN_BAD_INPUT) {
            state_free(&r->s0);
            r->s0 = fresh;
            r->err[0] = 0, r->err_said = 0;
        } else if (status) {
            return status;
        } else {
            state_free(&fresh);
            from_state = 1;
            r->continued = 1;
        }
    }
    if (!r->continued && (status = split_validation(r, from_state)))
        return status;
    if (rc->more_epochs > 0)
        rc->epochs = r->s0.epoch + rc->more_epochs;
    if ((status = make_models(r)))
        return status;
    /* the run's total, as Keras's epochs with initial_epoch: resumed at or
     * past it, there is nothing to train, and saying so beats ending well
     * having trained nothing */
    if (r->s0.epoch >= rc->epochs)
        return rc->epochs_resumed
                   ? fail(r, FRAE_RUN_BAD_INPUT,
                          "%s: its run is complete (%d of %d epochs); give "
                          "--epochs more than %d to train on",
                          rc->resume, r->s0.epoch, rc->epochs, r->s0.epoch)
                   : fail(r, FRAE_RUN_BAD_INPUT,
                          "%s has trained %d epochs already; --epochs %d is "
                          "the run's total, so nothing is left to train (give "
                          "more than %d)",
                          rc->resume ? rc->resume : "the run", r->s0.epoch,
                          rc->epochs, r->s0.epoch);
    return 0;
}

/* ---- each replica ------------------------------------------------------------- */

static int read_norm_stats(member *me, const char *path, int dim,
                           float *stats)
{
    char err[512];
    frae_npy a;
    int status = 0;
    if (frae_npy_open(path, &a, err, sizeof err) ||
        frae_npy_check_finite(&a, path, err, sizeof err))
        return say(me, FRAE_RUN_BAD_INPUT, "--normalize: %s", err);
    if (a.ndim != 2 || a.dims[0] != 2 || a.dims[1] != dim)
        status = say(me, FRAE_RUN_BAD_INPUT,
                     "--normalize: %s should be [2, %d] (the means, then the "
                     "stds of the %d bands)",
                     path, dim, dim);
    else if (frae_npy_read(&a, 0, 0, 2, stats))
        status = say(me, FRAE_RUN_BAD_INPUT, "--normalize: %s: cannot read it",
                     path);
    frae_npy_close(&a);
    return status;
}

/* The model's per-band statistics: over the training set in one pass
 * ("on"), or from a .npy of [2, D] (means, then stds). */
static int set_normalization(member *me, const char *how)
{
    frae_run *r = me->run;
    const int D = r->rc.model.frame_dim;
    float *stats = malloc(sizeof(float) * 2 * (size_t)D);
    double *acc = malloc(sizeof(double) * (2 * (size_t)D + 1));
    float *buf = malloc(sizeof(float) * 1024 * (size_t)D);
    int status = 0;
    if (!stats || !acc || !buf) {
        status = say(me, FRAE_RUN_FAILED, "out of memory");
    } else if (!strcmp(how, "on")) {
        /* each replica sums its share of the sequences, then the sums
         * are added up across replicas (alone: all of them, in order) */
        frae_band_stats bs;
        frae_band_stats_begin(&bs, D, acc, acc + D);
        long lo, mine = frae_share(r->n_train, me->t.rank, me->t.size, &lo);
        for (long i = lo; i < lo + mine && !status; i++) {
            const long len = frae_dataset_length(r->data, r->perm[i]);
            for (long t = 0; t < len && !status; t += 1024) {
                long n = len - t < 1024 ? len - t : 1024;
                if (frae_dataset_read(r->data, r->perm[i], t, n, buf, me->err,
                                      sizeof me->err))
                    status = FRAE_RUN_FAILED;
                else
                    frae_band_stats_add(&bs, buf, n, D);
            }
        }
        if (me->t.size > 1) {
            if (any(me, status != 0))
                status = FRAE_RUN_FAILED;
            acc[2 * (size_t)D] = bs.count;
            if (!status && sum(me, acc, 2 * (size_t)D + 1))
                status = FRAE_RUN_FAILED;
            bs.count = acc[2 * (size_t)D];
        }
        if (!status && frae_band_stats_finish(&bs, stats, stats + D))
            status = say(me, FRAE_RUN_BAD_INPUT,
                         "--normalize: no training frames");
    } else {
        status = read_norm_stats(me, how, D, stats);
    }
    if (!status && frae_set_normalization(me->m, stats, stats + D)) {
        int bad = 0;
        while (bad < D - 1 && stats[D + bad] > 0)
            bad++;
        status = say(me, FRAE_RUN_BAD_INPUT,
                     "--normalize: %s: band %d has std %g; every std must be "
                     "finite and > 0 (and every mean finite)",
                     how, bad, (double)stats[D + bad]);
    }
    free(stats), free(acc), free(buf);
    return status;
}

/* An epoch's crops: each training sequence (in file order) longer than N
 * is cut at a random offset (at most N - 1, and leaving one whole crop)
 * into N-frame crops; a shorter one is one crop.  The offsets come from the
 * shuffling RNG, so a resume repeats them. */
static void cut_crops(member *me)
{
    const frae_run *r = me->run;
    train_state *s = &me->s;
    const long N = r->rc.crop;
    long n = 0;
    for (long i = 0; i < r->n_train; i++) {
        const int32_t q = r->perm[i];
        const long len = frae_dataset_length(r->data, q);
        long at = 0;
        if (len > N) {
            long span = len - N + 1 < N ? len - N + 1 : N;
            at = (long)(frae_rng_next(&s->rng) % (uint64_t)span);
        }
        do {
            s->crop_seq[n] = q, s->crop_start[n] = (int32_t)at;
            s->order[n] = (int32_t)n;
            n++;
            at += N;
        } while (at + N <= len);
    }
    s->n_order = n;
}

static void progress(member *me, long n_batches)
{
    const frae_run *r = me->run;
    const train_state *s = &me->s;
    if (!r->hooks.on_batch)
        return;
    const frae_run_progress p = {me->t.rank,
                                 s->epoch + 1,
                                 r->rc.epochs,
                                 s->batch,
                                 n_batches,
                                 s->values ? s->sse / (double)s->values : 0.0,
                                 s->frames,
                                 now_seconds() - s->started};
    if (r->hooks.on_batch(r->hooks.ctx, &p))
        me->batch_stop = 1;
}

static const char *lower_lr(const frae_run *r)
{
    return r->save_on ? "the last checkpoint is kept; try a lower --lr or "
                        "--clip-norm"
                      : "try a lower --lr or --clip-norm";
}

/* The epoch's batches, from where it stands: 0 when it is done (or was
 * already), or the status (diverged, interrupted). */
static int train_epoch(member *me)
{
    frae_run *r = me->run;
    train_state *s = &me->s;
    const int B = r->rc.model.batch;
    if (s->batch == 0) { /* a new epoch: fresh order and sums */
        if (r->rc.crop)
            cut_crops(me);
        if (r->rc.shuffle)
            shuffle(s->order, s->n_order, &s->rng);
        s->sse = s->sae = s->bits = 0, s->values = s->frames = 0;
        s->seconds = 0;
    }
    const long n_batches = (s->n_order + B - 1) / B;
    s->started = now_seconds() - s->seconds;
    while (s->batch < n_batches) {
        long first = s->batch * B;
        int nb = s->n_order - first < B ? (int)(s->n_order - first) : B;
        frae_stats st = {0};
        progress(me, n_batches);
        int rc = run_batch(&me->brun, s->order + first, nb, 1, &st);
        if (rc == FRAE_RUN_FAILED) /* the data could not be read */
            return rc;
        int stop = 0;
        rc = agree_sums(me, &st, rc, &stop);
        if (rc == FRAE_RUN_FAILED)
            return rc;
        if (rc) {
            if (me->t.rank == 0)
                say(me, FRAE_RUN_FAILED,
                    "training diverged at epoch %d, batch %ld (loss or "
                    "gradient is not finite); %s",
                    s->epoch + 1, s->batch + 1, lower_lr(r));
            return FRAE_RUN_FAILED;
        }
        s->sse += st.sse, s->sae += st.sae, s->bits += st.rate_bits;
        s->values += st.values, s->frames += st.frames;
        s->batch++;
        if (stop) {
            s->seconds = now_seconds() - s->started;
            if (save_agreed(me, r->rc.save, r->save_on, 1))
                return FRAE_RUN_FAILED;
            if (me->t.rank == 0)
                say(me, FRAE_RUN_INTERRUPTED,
                    "interrupted at epoch %d, batch %ld/%ld%s%s", s->epoch + 1,
                    s->batch, n_batches,
                    r->save_on ? "; checkpoint saved to " : "",
                    r->save_on ? r->rc.save : "");
            return FRAE_RUN_INTERRUPTED;
        }
    }
    progress(me, n_batches); /* the whole epoch done */
    return 0;
}

/* The end of an epoch: validation, the log row and the callback, the best
 * model and early stopping, the checkpoint.  *stop is set to end the run
 * well. */
static int finish_epoch(member *me, int *stop)
{
    frae_run *r = me->run;
    train_state *s = &me->s;
    const frae_run_config *rc = &r->rc;
    const int lead = me->t.rank == 0; /* it logs, saves and calls back */
    double secs = now_seconds() - s->started;
    /* the loss is the objective: distortion, + lambda x rate */
    const int prior = rc->model.prior_hidden > 0;
    const double lambda = rc->model.rate_lambda;
    double rate = s->frames ? s->bits / (double)s->frames : 0.0;
    double loss = s->sse / (double)s->values + lambda * rate;
    double mae = s->sae / (double)s->values;
    double vloss = NAN, vmae = NAN, vrate = NAN;
    /* The epoch's last step has met no forward pass yet: weights it sent
     * past what a forward pass survives would be saved as trained.  The
     * validation loss shows it; without validation data, one training
     * batch evaluated (no step) does. */
    int status = 0;
    frae_stats vs;
    if (r->n_val)
        status = evaluate(&me->vrun, r->val_seqs, r->n_val, rc->model.batch,
                          &vs);
    else
        status = evaluate(&me->brun, s->order,
                          s->n_order < rc->model.batch ? s->n_order
                                                       : rc->model.batch,
                          rc->model.batch, &vs);
    if (status == FRAE_RUN_FAILED)
        return status;
    if (status) {
        if (lead)
            say(me, FRAE_RUN_FAILED,
                "training diverged in the last step of epoch %d (the %s loss "
                "after it is not finite); %s",
                s->epoch + 1, r->n_val ? "validation" : "training",
                lower_lr(r));
        return FRAE_RUN_FAILED;
    }
    if (r->n_val) {
        vrate = vs.frames ? vs.rate_bits / (double)vs.frames : 0.0;
        vloss = vs.sse / (double)vs.values + lambda * vrate;
        vmae = vs.sae / (double)vs.values;
    }
    s->epoch++;
    s->batch = 0;
    if (me->csv) {
        fprintf(me->csv, "%d,%.9g,%.9g,%.9g,%.9g,%.1f,%.3f", s->epoch, loss,
                mae, vloss, vmae, s->frames / secs, secs);
        if (prior)
            fprintf(me->csv, ",%.9g,%.9g", rate, vrate);
        fprintf(me->csv, "\n");
        fflush(me->csv);
    }
    /* early stopping and the best model, on the monitored loss */
    double monitored = r->n_val ? vloss : loss;
    const int improved = monitored < s->best;
    if (improved) {
        s->best = monitored;
        s->best_epoch = s->epoch;
        s->bad_epochs = 0;
    } else if (rc->patience && ++s->bad_epochs >= rc->patience) {
        *stop = 1;
    }
    int called_stop = 0;
    if (lead && r->hooks.on_epoch) {
        const frae_epoch_log log = {s->epoch,    rc->epochs,     loss,
                                    mae,         rate,           r->n_val > 0,
                                    vloss,       vmae,           vrate,
                                    prior,       s->frames,      secs,
                                    s->frames / secs, improved,  *stop,
                                    s->best,     s->best_epoch};
        called_stop = r->hooks.on_epoch(r->hooks.ctx, &log) != 0;
    }
    status = 0;
    if (improved && rc->save_best && save_agreed(me, rc->save_best, 1, 0))
        status = FRAE_RUN_FAILED;
    if (save_agreed(me, rc->save, r->save_on, 1))
        status = FRAE_RUN_FAILED;
    if (status)
        return status;
    double v[2] = {stop_asked(me), called_stop};
    if (sum(me, v, 2))
        return FRAE_RUN_FAILED;
    if (*stop) {
        r->early_stopped = 1;
        return 0;
    }
    if (v[1] > 0) {
        *stop = 1;
        return 0;
    }
    if (v[0] > 0) {
        if (lead)
            say(me, FRAE_RUN_INTERRUPTED, "interrupted after epoch %d%s%s",
                s->epoch, r->save_on ? "; checkpoint saved to " : "",
                r->save_on ? rc->save : "");
        return FRAE_RUN_INTERRUPTED;
    }
    return 0;
}

/* One replica's run: the sums' buffers, the statistics, the epochs. */
static int member_run(member *me)
{
    frae_run *r = me->run;
    int status = 0;
    if (me->t.size > 1) {
        /* the sums' buffers: the gradients, and the band statistics (2 D
         * + 1 doubles) or a batch's figures (7), whichever is more */
        const size_t n64 = 2 * (size_t)r->rc.model.frame_dim + 1;
        const int failed =
            me->t.prepare &&
            me->t.prepare(me->t.ctx, frae_param_count(me->m),
                          n64 > 64 ? n64 : 64) != 0;
        if (any(me, failed))
            status = say(me, FRAE_RUN_FAILED, "out of memory");
        me->reducer = (frae_reducer){timed_sum_f32, plain_sum_f64, me};
        frae_set_reducer(me->m, &me->reducer);
    }
    if (!status && !r->resumed && !r->start_norm && r->rc.model.normalize)
        status = set_normalization(me, r->norm); /* agreed inside */
    if (!status && r->hooks.on_start) {
        const frae_run_info info = {me->t.rank,
                                    me->m,
                                    r->summary,
                                    r->n_train,
                                    r->n_val,
                                    me->s.epoch,
                                    me->s.batch,
                                    r->rc.epochs,
                                    r->size,
                                    r->size > 1 ? me->t.kind : NULL,
                                    r->rc.model.batch,
                                    frae_get_config(me->m)->batch,
                                    r->resumed};
        r->hooks.on_start(r->hooks.ctx, &info);
    }
    int stop = 0;
    const double t0 = now_seconds();
    while (!status && !stop && me->s.epoch < r->rc.epochs) {
        status = train_epoch(me);
        if (!status)
            status = finish_epoch(me, &stop);
    }
    me->seconds = now_seconds() - t0;
    return status;
}

static void *member_main(void *arg)
{
    member *me = arg;
    me->status = member_run(me);
    return NULL;
}

int frae_run_train(frae_run *r, frae_dataset *train, frae_dataset *targets,
                   frae_dataset *val, frae_dataset *val_targets,
                   const frae_run_hooks *hooks)
{
    if (r->members)
        return fail(r, FRAE_RUN_BAD_INPUT, "a run trains once");
    if (!train)
        return fail(r, FRAE_RUN_BAD_INPUT, "no training data");
    static const frae_run_hooks none = {0};
    r->hooks = hooks ? *hooks : none;
    r->data = train, r->tgt = targets, r->val = val, r->val_tgt = val_targets;
    const frae_transport *tp = r->hooks.transport;
    r->size = tp ? tp->size : r->rc.replicas < 1 ? 1 : r->rc.replicas;
    r->n_members = tp ? 1 : r->size;
    r->members = calloc((size_t)r->n_members, sizeof *r->members);
    if (!r->members)
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    if (!tp && r->size > 1 && !(r->group = frae_thread_group_new(r->size)))
        return fail(r, FRAE_RUN_FAILED, "out of memory");
    for (int i = 0; i < r->n_members; i++) {
        member *me = &r->members[i];
        me->run = r;
        me->t = tp ? *tp
                   : r->group ? frae_thread_transport(r->group, i)
                              : (frae_transport){0, 1, NULL, NULL,
                                                 NULL, NULL, NULL};
    }
    int status = set_up(r);
    if (tp && tp->size > 1) {
        /* every rank agrees that every rank could set up; the lead says
         * what went wrong, another rank only what went wrong on it alone
         * (set-up errors are mostly the same everywhere) */
        double v[2] = {status != 0, tp->rank == 0 && status != 0};
        member *me = &r->members[0];
        if (sum(me, v, 2) && !status)
            status = FRAE_RUN_FAILED;
        if (v[0] > 0) {
            if (!status || (tp->rank > 0 && v[1] > 0))
                r->err_said = 0; /* another rank says it */
            return status ? status : FRAE_RUN_BAD_INPUT;
        }
    }
    if (status)
        return status;
    r->trained = 1; /* the lead's model is the run's from here on */
    for (int i = 1; i < r->n_members; i++) /* rank 0 runs on this thread */
        if (pthread_create(&r->members[i].thread, NULL, member_main,
                           &r->members[i])) {
            /* the started ones wait at the first sum: nothing to do but go */
            fprintf(stderr, "frae: cannot start %d threads\n", r->n_members);
            _exit(FRAE_RUN_FAILED);
        }
    member_main(&r->members[0]);
    status = r->members[0].status;
    for (int i = 1; i < r->n_members; i++) {
        pthread_join(r->members[i].thread, NULL);
        if (!status)
            status = r->members[i].status;
    }
    /* the first replica (lead first) that said something */
    r->err_said = 0;
    for (int i = 0; i < r->n_members && !r->err_said; i++)
        if (r->members[i].err[0]) {
            snprintf(r->err, sizeof r->err, "%s", r->members[i].err);
            r->err_rank = r->members[i].t.rank;
            r->err_said = 1;
        }
    return status;
}

const char *frae_run_error(const frae_run *r, int *rank)
{
    if (rank)
        *rank = r->err_rank;
    return r->err_said && r->err[0] ? r->err : NULL;
}

frae_model *frae_run_model(frae_run *r)
{
    return r->trained && r->n_members ? r->members[0].m : NULL;
}

void frae_run_get_result(const frae_run *r, frae_run_result *out)
{
    memset(out, 0, sizeof *out);
    out->epochs = r->rc.epochs;
    out->patience = r->rc.patience;
    out->monitored_val = r->n_val > 0;
    out->early_stopped = r->early_stopped;
    if (!r->trained || !r->n_members)
        return;
    const member *me = &r->members[0];
    out->epoch = me->s.epoch;
    out->best = me->s.best;
    out->best_epoch = me->s.best_epoch;
    out->seconds = me->seconds;
    out->reduced_bytes = me->reduced_bytes;
    out->reduce_seconds = me->reduce_seconds;
    out->reduce_calls = me->reduce_calls;
}
