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
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "train/run_internal.h"

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

/* The largest |x| training takes, of the values the network sees (the
 * z-scored ones when the model normalizes).  A gradient can reach about
 * 3 |x| (one band, one frame) and Adam squares it in float32, whose
 * largest square root is 1.8e19: 1e18 leaves room.  Past it, Adam's
 * second moments would overflow and no checkpoint could hold them. */
#define TRAIN_MAX_ABS 1e18

/* n frames x read from sequence seq of ds, from frame t0: 0, or
 * FRAE_RUN_BAD_INPUT after saying where a value is past TRAIN_MAX_ABS. */
static int out_of_range(member *me, const frae_dataset *ds, long seq, long t0,
                        long n, const float *x)
{
    const frae_net *net = frae_model_net(me->m);
    const int D = net->cfg.frame_dim, z = net->cfg.normalize;
    for (long i = 0; i < n * D; i++) {
        const int d = (int)(i % D);
        const float v =
            z ? (x[i] - net->norm_mean[d]) / net->norm_std[d] : x[i];
        if (fabsf(v) <= TRAIN_MAX_ABS)
            continue;
        long index = 0;
        const char *name = frae_dataset_origin(ds, seq, &index);
        char zv[64] = "";
        if (z)
            snprintf(zv, sizeof zv, " is %g z-scored", (double)v);
        return say(me, FRAE_RUN_BAD_INPUT,
                   "%s: %g at [%ld, %ld, %d]%s: training takes %svalues up to "
                   "%g in magnitude (Adam squares gradients of about their "
                   "size in float32)%s",
                   name ? name : "data", (double)x[i], index, t0 + i / D, d, zv,
                   z ? "z-scored " : "", TRAIN_MAX_ABS,
                   z ? ""
                     : "; scale it down, or normalize it (--normalize on)");
    }
    return 0;
}

/* Whether Adam's moments are all finite. */
static int adam_finite(const frae_model *m)
{
    int ok = 1;
    for (size_t i = 0; i < m->net.n_params; i++)
        ok &= isfinite(m->tr.adam_m[i]) && isfinite(m->tr.adam_v[i]);
    return ok;
}

/* A replica's failure to read a batch (FRAE_RUN_FAILED), or its refusal
 * of what it read (FRAE_RUN_BAD_INPUT), as every replica's. */
static int agree_failure(member *me, int failed)
{
    double v[2] = {failed == FRAE_RUN_FAILED, failed == FRAE_RUN_BAD_INPUT};
    if (me->t.size > 1 && frae_run_sum(me, v, 2))
        return FRAE_RUN_FAILED;
    return v[0] > 0 ? FRAE_RUN_FAILED : v[1] > 0 ? FRAE_RUN_BAD_INPUT : 0;
}

/* One batch of sequences, window by window: trains (train) or evaluates.
 * With replicas, the batch is the global one: each replica runs its slice
 * of it (one row of padding if it has none), for as many windows as the
 * longest sequence of the whole batch needs, so every replica makes the
 * same calls.  Returns 0, -1 if the loss, the gradient or Adam's state
 * went non-finite (this replica's; the caller agrees on it), or
 * FRAE_RUN_FAILED after the data could not be read, FRAE_RUN_BAD_INPUT
 * after a value past TRAIN_MAX_ABS (by this replica, which said why, or
 * by another). */
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
                     (tdst &&
                      frae_dataset_read(b->tds, seq, start + w0, have, tdst,
                                        me->err, sizeof me->err))))
                    failed = FRAE_RUN_FAILED;
                else if (have > 0 &&
                         !(failed = out_of_range(me, b->ds, seq, start + w0,
                                                 have, dst)) &&
                         tdst)
                    failed =
                        out_of_range(me, b->tds, seq, start + w0, have, tdst);
            }
            memset(dst + (size_t)have * D, 0,
                   sizeof(float) * (size_t)(nt - have) * D);
            if (tdst)
                memset(tdst + (size_t)have * D, 0,
                       sizeof(float) * (size_t)(nt - have) * D);
            b->valid[k] = (int)have;
        }
        /* a replica that could not read, or refused what it read, stops
         * them all, here */
        if ((failed = agree_failure(me, failed)))
            return failed;
        frae_stats st;
        const frae_batch batch = {b->win,
                                  b->tds ? b->twin : NULL,
                                  b->valid,
                                  rows,
                                  nt,
                                  1,
                                  train ? FRAE_STEP_TRAIN : FRAE_STEP_EVALUATE};
        if (frae_step(me->m, &batch, &st))
            return FRAE_RUN_FAILED; /* the replicas' sums failed */
        /* a diverged batch runs to its end, so replicas stay in step.
         * Gradients below 1e19 square to a finite float: Adam's moments
         * are checked only after a larger one */
        if (!isfinite(st.sse) ||
            (train && (!isfinite(st.grad_norm) ||
                       (st.grad_norm >= 1e19 && !adam_finite(me->m)))))
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
    double v[7] = {st->sse,
                   st->sae,
                   st->rate_bits,
                   (double)st->values,
                   (double)st->frames,
                   rc == -1 ? 1.0 : 0.0,
                   stop && stop_asked(me) ? 1.0 : 0.0};
    if (frae_run_sum(me, v, 7))
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
        if (rc > 0)
            return rc;
        bad |= rc == -1;
    }
    return agree_sums(b->me, out, bad ? -1 : 0, NULL);
}

/* ---- each replica ------------------------------------------------------------- */

static int read_norm_stats(member *me, const char *path, int dim, float *stats)
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
            if (frae_run_any(me, status != 0))
                status = FRAE_RUN_FAILED;
            acc[2 * (size_t)D] = bs.count;
            if (!status && frae_run_sum(me, acc, 2 * (size_t)D + 1))
                status = FRAE_RUN_FAILED;
            bs.count = acc[2 * (size_t)D];
        }
        if (!status && frae_band_stats_finish(&bs, stats, stats + D))
            status =
                say(me, FRAE_RUN_BAD_INPUT, "--normalize: no training frames");
    } else {
        status = read_norm_stats(me, how, D, stats);
    }
    char why[256];
    if (!status && frae_set_normalization(me->m, stats, stats + D)) {
        if (!frae_norm_stats_why(stats, stats + D, D, why, sizeof why))
            snprintf(why, sizeof why, "refused"); /* (cannot happen) */
        status = say(me, FRAE_RUN_BAD_INPUT, "--normalize: %s: %s", how, why);
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
    const frae_run_progress p = {
        me->t.rank,   s->epoch + 1,
        r->rc.epochs, s->batch,
        n_batches,    s->values ? s->sse / (double)s->values : 0.0,
        s->frames,    now_seconds() - s->started};
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
            frae_run_shuffle(s->order, s->n_order, &s->rng);
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
        if (rc > 0) /* the data could not be read, or was refused */
            return rc;
        int stop = 0;
        rc = agree_sums(me, &st, rc, &stop);
        if (rc == FRAE_RUN_FAILED)
            return rc;
        if (rc) {
            if (me->t.rank == 0)
                say(me, FRAE_RUN_FAILED,
                    "training diverged at epoch %d, batch %ld (the loss, "
                    "the gradient or Adam's moments are not finite); %s",
                    s->epoch + 1, s->batch + 1, lower_lr(r));
            return FRAE_RUN_FAILED;
        }
        s->sse += st.sse, s->sae += st.sae, s->bits += st.rate_bits;
        s->values += st.values, s->frames += st.frames;
        s->batch++;
        if (stop) {
            s->seconds = now_seconds() - s->started;
            if (frae_run_save_agreed(me, r->rc.save, r->save_on, 1))
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
        status =
            evaluate(&me->vrun, r->val_seqs, r->n_val, rc->model.batch, &vs);
    else
        status = evaluate(&me->brun, s->order,
                          s->n_order < rc->model.batch ? s->n_order
                                                       : rc->model.batch,
                          rc->model.batch, &vs);
    if (status > 0)
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
        const frae_epoch_log log = {s->epoch,
                                    rc->epochs,
                                    loss,
                                    mae,
                                    rate,
                                    r->n_val > 0,
                                    vloss,
                                    vmae,
                                    vrate,
                                    prior,
                                    s->frames,
                                    secs,
                                    s->frames / secs,
                                    improved,
                                    *stop,
                                    s->best,
                                    s->best_epoch};
        called_stop = r->hooks.on_epoch(r->hooks.ctx, &log) != 0;
    }
    status = 0;
    if (improved && rc->save_best &&
        frae_run_save_agreed(me, rc->save_best, 1, 0))
        status = FRAE_RUN_FAILED;
    if (frae_run_save_agreed(me, rc->save, r->save_on, 1))
        status = FRAE_RUN_FAILED;
    if (status)
        return status;
    double v[2] = {stop_asked(me), called_stop};
    if (frae_run_sum(me, v, 2))
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
            me->t.prepare && me->t.prepare(me->t.ctx, frae_param_count(me->m),
                                           n64 > 64 ? n64 : 64) != 0;
        if (frae_run_any(me, failed))
            status = say(me, FRAE_RUN_FAILED, "out of memory");
        me->reducer =
            (frae_reducer){timed_sum_f32, plain_sum_f64, me, me->t.rank};
        frae_set_reducer(me->m, &me->reducer);
    }
    if (!status && !r->resumed && !r->start_norm && r->rc.model.normalize)
        status = set_normalization(me, r->norm); /* agreed inside */
    if (!status && r->hooks.on_start) {
        const frae_run_info info = {
            me->t.rank,        me->m,
            r->summary,        r->n_train,
            r->n_val,          me->s.epoch,
            me->s.batch,       r->rc.epochs,
            r->size,           r->size > 1 ? me->t.kind : NULL,
            r->rc.model.batch, frae_get_config(me->m)->batch,
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
    start_gate *g = me->run->gate;
    int go = 1;
    if (g) { /* once all the threads have started */
        pthread_mutex_lock(&g->lock);
        while (!g->go)
            pthread_cond_wait(&g->moved, &g->lock);
        go = g->go;
        pthread_mutex_unlock(&g->lock);
    }
    me->status = go > 0 ? member_run(me) : FRAE_RUN_FAILED;
    return NULL;
}

/* FRAE_FAULT=thread@R (the tests'): replica R's thread cannot start. */
static int start_fault(int rank)
{
    const char *v = getenv("FRAE_FAULT");
    int at;
    char end;
    return v && sscanf(v, "thread@%d%c", &at, &end) == 1 && at == rank;
}

/* The replica threads 1..n-1 (rank 0 runs on the caller's): 0, or, when
 * one cannot start, FRAE_RUN_FAILED after those started have ended
 * without a step (they wait at the gate until all have started). */
static int start_members(frae_run *r, start_gate *g)
{
    int started = 1, rc = 0;
    r->gate = g;
    while (started < r->n_members && !rc) {
        rc = start_fault(started)
                 ? EAGAIN
                 : pthread_create(&r->members[started].thread, NULL,
                                  member_main, &r->members[started]);
        started += !rc;
    }
    pthread_mutex_lock(&g->lock);
    g->go = rc ? -1 : 1;
    pthread_cond_broadcast(&g->moved);
    pthread_mutex_unlock(&g->lock);
    if (!rc)
        return 0; /* the gate stays open until they are joined */
    for (int i = 1; i < started; i++)
        pthread_join(r->members[i].thread, NULL);
    r->gate = NULL;
    return frae_run_fail(r, FRAE_RUN_FAILED,
                         "cannot start the %d replica threads (%s)",
                         r->n_members, strerror(rc));
}

int frae_run_train(frae_run *r, frae_dataset *train, frae_dataset *targets,
                   frae_dataset *val, frae_dataset *val_targets,
                   const frae_run_hooks *hooks)
{
    if (r->members)
        return frae_run_fail(r, FRAE_RUN_BAD_INPUT, "a run trains once");
    if (!train)
        return frae_run_fail(r, FRAE_RUN_BAD_INPUT, "no training data");
    static const frae_run_hooks none = {0};
    r->hooks = hooks ? *hooks : none;
    r->data = train, r->tgt = targets, r->val = val, r->val_tgt = val_targets;
    const frae_transport *tp = r->hooks.transport;
    r->size = tp ? tp->size : r->rc.replicas < 1 ? 1 : r->rc.replicas;
    r->n_members = tp ? 1 : r->size;
    r->members = calloc((size_t)r->n_members, sizeof *r->members);
    if (!r->members)
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
    if (!tp && r->size > 1 && !(r->group = frae_thread_group_new(r->size)))
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
    for (int i = 0; i < r->n_members; i++) {
        member *me = &r->members[i];
        me->run = r;
        me->t = tp ? *tp
                : r->group
                    ? frae_thread_transport(r->group, i)
                    : (frae_transport){0, 1, NULL, NULL, NULL, NULL, NULL};
    }
    int status = frae_run_set_up(r);
    if (tp && tp->size > 1) {
        /* every rank agrees that every rank could set up; the lead says
         * what went wrong, another rank only what went wrong on it alone
         * (set-up errors are mostly the same everywhere) */
        double v[2] = {status != 0, tp->rank == 0 && status != 0};
        member *me = &r->members[0];
        if (frae_run_sum(me, v, 2) && !status)
            status = FRAE_RUN_FAILED;
        if (v[0] > 0) {
            if (!status || (tp->rank > 0 && v[1] > 0))
                r->err_said = 0; /* another rank says it */
            return status ? status : FRAE_RUN_BAD_INPUT;
        }
    }
    if (status)
        return status;
    start_gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    if (r->n_members > 1 && (status = start_members(r, &g)))
        return status;
    r->trained = 1; /* the lead's model is the run's from here on */
    member_main(&r->members[0]);
    status = r->members[0].status;
    for (int i = 1; i < r->n_members; i++) {
        pthread_join(r->members[i].thread, NULL);
        if (!status)
            status = r->members[i].status;
    }
    r->gate = NULL;
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
