/* The training run's lowest file (run_internal.h): what the others share
 * and call down into: a set-up failure in one line, the training state's
 * copies, the seeded shuffle, the replicas' agreement, and whether a run
 * continues another's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/run_internal.h"

/* Set-up (the lead's view: every replica would say the same). */
int frae_run_fail(frae_run *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    frae_one_line(r->err);
    r->err_said = 1;
    return code;
}

void frae_train_state_free(train_state *s)
{
    free(s->order), free(s->crop_seq), free(s->crop_start);
    s->order = s->crop_seq = s->crop_start = NULL;
}

/* A deep copy of src, with room for max(crop_cap, n_order) + 1 entries. */
int frae_train_state_copy(train_state *dst, const train_state *src)
{
    *dst = *src;
    dst->order = dst->crop_seq = dst->crop_start = NULL;
    const long cap =
        (src->crop_cap > src->n_order ? src->crop_cap : src->n_order) + 1;
    const int crops = src->crop_seq != NULL;
    dst->order = malloc(sizeof(int32_t) * (size_t)cap);
    if (crops) {
        dst->crop_seq = malloc(sizeof(int32_t) * (size_t)cap);
        dst->crop_start = malloc(sizeof(int32_t) * (size_t)cap);
    }
    if (!dst->order || (crops && (!dst->crop_seq || !dst->crop_start))) {
        frae_train_state_free(dst);
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

void frae_run_shuffle(int32_t *a, long n, uint64_t *rng)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(frae_rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

int frae_run_sum(member *me, double *x, size_t n)
{
    return me->t.size == 1 ? 0 : me->t.sum_f64(me->t.ctx, x, n);
}

/* Whether any replica's flag is set (agreement on errors and stops); -1
 * if the sum failed. */
int frae_run_any(member *me, int flag)
{
    double v = flag ? 1.0 : 0.0;
    if (frae_run_sum(me, &v, 1))
        return -1;
    return v > 0.0;
}

/* Whether a continued run's state carries on here: the same data, batch,
 * split, crops and order; its state is then checked like a resumed one. */
int frae_run_continues(const frae_run *r)
{
    const frae_run_config *a = &r->rc, *b = &r->cont_rc;
    return r->have_cont && !strcmp(r->cont_data, r->summary) &&
           r->batch_asked == b->model.batch && a->crop == b->crop &&
           a->val_split == b->val_split && a->model.seed == b->model.seed &&
           a->shuffle == b->shuffle;
}
