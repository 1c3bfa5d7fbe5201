/* A training run's checkpoints (run_internal.h): saving the model with
 * where training stands, and reading that state back, trusted only once
 * every field is checked, for a resume that continues bit for bit. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "train/run_internal.h"

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
int frae_run_save_agreed(member *me, const char *path, int on, int with_state)
{
    int failed = 0;
    if (on && me->t.rank == 0)
        failed = save_checkpoint(me, path, with_state) != 0;
    return frae_run_any(me, failed) ? -1 : 0;
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
        return bad_state(err, errlen, path, key, v, "is not a number in range");
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
    long epoch = 0, batch = 0, values = 0, frames = 0, best_epoch = 0, bad = 0,
         epochs = 0, patience = 0;
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
int frae_run_open_resume(frae_run_config *rc, train_state *s, char *summary,
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
    int status = frae_run_open_resume(rc, &s, summary, sizeof summary, NULL,
                                      err, errlen);
    frae_train_state_free(&s);
    return status;
}

/* The state against the data it resumes on: the order is a permutation of
 * the training set, the batch inside the epoch, the running sums those of
 * at most the frames the epoch has. */
int frae_run_check_state(frae_run *r, const train_state *s, const char *path,
                         long n_batches)
{
    const long total_frames = frae_dataset_total_frames(r->data);
    const int dim = frae_dataset_dim(r->data);
    unsigned char *seen = calloc((size_t)r->n_all, 1);
    if (!seen)
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
    for (long i = 0; i < r->n_train; i++)
        seen[r->perm[i]] = 1; /* 1: may appear in the order */
    for (long i = 0; i < s->n_order; i++) {
        int32_t v = s->order[i];
        if (v < 0 || v >= r->n_all || seen[v] != 1) {
            const char *why = v < 0 || v >= r->n_all ? "out of range"
                              : seen[v] == 2         ? "repeated"
                                                     : "a validation sequence";
            free(seen);
            return frae_run_fail(
                r, FRAE_RUN_BAD_INPUT,
                "%s: training state 'train.order' entry %ld = %d is "
                "%s",
                path, i, v, why);
        }
        seen[v] = 2;
    }
    free(seen);
    if (s->batch > n_batches) /* n_batches: stopped after the last one */
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: training state 'train.batch' = %ld, but an epoch "
            "has %ld batches",
            path, s->batch, n_batches);
    if (s->frames > total_frames || s->values != s->frames * (long)dim)
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: training state counts %ld frames and %ld values in "
            "this epoch; the data has %ld frames of %d values",
            path, s->frames, s->values, total_frames, dim);
    return 0;
}
