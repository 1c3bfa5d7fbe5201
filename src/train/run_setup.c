/* A training run's set-up (run_internal.h): its settings checked before
 * any data, the run made and destroyed, where its model starts, and what
 * the replicas share: the data settled, crops, the validation split, the
 * models and the log. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/run_internal.h"

/* ---- the run's settings, before data ------------------------------------- */

int frae_run_check_sizes(const frae_run_config *rc, int dim_known, int replicas,
                         long builtin_sequences, long builtin_frames, char *err,
                         size_t errlen)
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
                    (double)model_bytes / 1073741824.0, machine / 1073741824.0);
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
    } else if (!rc->resume && !targets && frae_recipe_at(rc->recipe - 1) &&
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
        frae_train_state_free(&me->s);
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
    frae_train_state_free(&r->cont);
    frae_train_state_free(&r->s0);
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
    if (dst->tr.adam_m && src->tr.adam_m) {
        memcpy(dst->tr.adam_m, src->tr.adam_m, sizeof(float) * n);
        memcpy(dst->tr.adam_v, src->tr.adam_v, sizeof(float) * n);
        dst->tr.adam_step = src->tr.adam_step;
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
    return r->start ? 0 : frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
}

int frae_run_continue(frae_run *r, const frae_run *prev)
{
    if (!prev->trained || prev->n_members < 1)
        return frae_run_fail(r, FRAE_RUN_BAD_INPUT,
                             "the run to continue has not "
                             "trained");
    const member *lead = &prev->members[0];
    int status = frae_run_start_from(r, lead->m, 1);
    if (status)
        return status;
    frae_train_state_free(&r->cont);
    if (frae_train_state_copy(&r->cont, &lead->s))
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
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
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: %ld input sequences but %ld target sequences: each "
            "input needs its target",
            what, n, nt);
    for (long i = 0; i < n; i++) {
        const long fa = frae_dataset_length(in, i),
                   fb = frae_dataset_length(tg, i);
        if (fa != fb) {
            long ia, ib;
            const char *na = frae_dataset_origin(in, i, &ia);
            const char *nb = frae_dataset_origin(tg, i, &ib);
            return frae_run_fail(
                r, FRAE_RUN_BAD_INPUT,
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
    int status =
        frae_run_check_pairing(rc, 1, r->tgt != NULL, r->val != NULL,
                               r->val_tgt != NULL, r->err, sizeof r->err);
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
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "--pitch: pitch comes from audio; train on audio files or "
            "give --audio-features");
    snprintf(
        r->summary, sizeof r->summary, "%ld sequences, %ld frames, dim %d%s",
        frae_dataset_sequences(r->data), frae_dataset_total_frames(r->data),
        frae_dataset_dim(r->data), r->tgt ? ", with targets" : "");
    if (r->resumed && strcmp(r->resumed_data, r->summary))
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
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
        return frae_run_fail(r, FRAE_RUN_BAD_INPUT,
                             "--crop %d cuts more than 2^31 crops", rc->crop);
    if (from_state && s->n_order > cap)
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: training state has %ld crops; this data cuts at "
            "most %ld",
            path, s->n_order, cap);
    int32_t **arr[3] = {&s->order, &s->crop_seq, &s->crop_start};
    for (int i = 0; i < 3; i++) {
        int32_t *p = realloc(*arr[i], sizeof(int32_t) * (size_t)(cap + 1));
        if (!p)
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
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
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
    }
    for (long i = 0; i < r->n_train; i++)
        in_train[r->perm[i]] = 1;
    int status = 0;
    for (long i = 0; i < s->n_order && !status; i++) {
        int32_t q = s->crop_seq[i], at = s->crop_start[i], v = s->order[i];
        if (q < 0 || q >= r->n_all || !in_train[q])
            status = frae_run_fail(
                r, FRAE_RUN_BAD_INPUT,
                "%s: training state 'train.crop_seq' entry %ld = %d "
                "is not a training sequence",
                path, i, q);
        else if (at < 0 || at >= frae_dataset_length(r->data, q))
            status = frae_run_fail(
                r, FRAE_RUN_BAD_INPUT,
                "%s: training state 'train.crop_start' entry %ld = "
                "%d is outside its sequence (%ld frames)",
                path, i, at, frae_dataset_length(r->data, q));
        else if (v < 0 || v >= s->n_order || seen[v])
            status = frae_run_fail(
                r, FRAE_RUN_BAD_INPUT,
                "%s: training state 'train.order' entry %ld = %d is "
                "%s",
                path, i, v,
                v < 0 || v >= s->n_order ? "out of range" : "repeated");
        else
            seen[v] = 1;
    }
    free(in_train), free(seen);
    const long n_batches = (s->n_order + rc->model.batch - 1) / rc->model.batch;
    if (!status && s->batch > n_batches)
        status = frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: training state 'train.batch' = %ld, but the epoch "
            "has %ld batches",
            path, s->batch, n_batches);
    if (!status && (s->frames > total_frames || s->values != s->frames * dim))
        status = frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
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
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "--val-split %g of %ld sequences leaves an empty training "
            "or validation set",
            rc->val_split, r->n_all);
    free(r->perm);
    r->perm = malloc(sizeof(int32_t) * (size_t)(r->n_all + 1));
    if (!r->perm)
        return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
    for (long i = 0; i < r->n_all; i++)
        r->perm[i] = (int32_t)i;
    r->n_train = r->n_all;
    if (n_split) {
        uint64_t split_rng = rc->model.seed ^ 0x5a17c0deull;
        frae_run_shuffle(r->perm, r->n_all, &split_rng);
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
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
        memcpy(s->order, r->perm, sizeof(int32_t) * (size_t)r->n_train);
    } else if (s->n_order != r->n_train) {
        return frae_run_fail(
            r, FRAE_RUN_BAD_INPUT,
            "%s: its data order has %ld sequences, the training set "
            "has %ld",
            path, s->n_order, r->n_train);
    } else {
        int status = frae_run_check_state(
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
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
        for (long i = 0; i < r->n_val; i++)
            r->val_seqs[i] = val_from ? val_from[i] : (int32_t)i;
    }
    return 0;
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
    int fd =
        !strcmp(path, "-")
            ? dup(STDOUT_FILENO)
            : open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC,
                   0666);
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
        if (!me->m || (r->ck && frae_checkpoint_restore(r->ck, me->m, 1, r->err,
                                                        sizeof r->err)))
            return r->err_said = 1, FRAE_RUN_BAD_INPUT;
        if (r->start && copy_model_state(me->m, r->start, r->start_norm))
            return frae_run_fail(r, FRAE_RUN_BAD_INPUT,
                                 "the model to start from has another shape");
        me->brun = (batch_runner){
            me,
            r->data,
            malloc(sizeof(float) * (size_t)B * W * D),
            malloc(sizeof(int) * (size_t)B),
            r->tgt,
            r->tgt ? malloc(sizeof(float) * (size_t)B * W * D) : NULL,
            NULL,
            NULL,
            0};
        if (!me->brun.win || !me->brun.valid || (r->tgt && !me->brun.twin))
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
        if (frae_train_state_copy(&me->s, &r->s0))
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
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
            return frae_run_fail(r, FRAE_RUN_BAD_INPUT,
                                 "%s: cannot open for appending: %s",
                                 rc->log_csv,
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
int frae_run_set_up(frae_run *r)
{
    frae_run_config *rc = &r->rc;
    int status = 0;
    if (rc->resume) {
        status = frae_run_open_resume(rc, &r->s0, r->resumed_data,
                                      sizeof r->resumed_data, &r->ck, r->err,
                                      sizeof r->err);
        if (status)
            return r->err_said = 1, status;
        r->resumed = 1;
    } else {
        /* the epochs' shuffles */
        r->s0.rng = rc->model.seed ^ 0x0123456789abcdefull;
    }
    if ((status =
             frae_run_config_settle(rc, r->val != NULL, r->err, sizeof r->err)))
        return r->err_said = 1, status;
    if ((status = settle_data(r)))
        return status;
    int from_state = r->resumed;
    if (!r->resumed && frae_run_continues(r)) {
        /* a continued fit: its state, checked as a resume's; one that does
         * not fit this data starts its epochs afresh */
        train_state fresh = r->s0;
        if (frae_train_state_copy(&r->s0, &r->cont))
            return frae_run_fail(r, FRAE_RUN_FAILED, "out of memory");
        r->s0.best = INFINITY, r->s0.best_epoch = 0, r->s0.bad_epochs = 0;
        status = split_validation(r, 1);
        if (status == FRAE_RUN_BAD_INPUT) {
            frae_train_state_free(&r->s0);
            r->s0 = fresh;
            r->err[0] = 0, r->err_said = 0;
        } else if (status) {
            return status;
        } else {
            frae_train_state_free(&fresh);
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
                   ? frae_run_fail(
                         r, FRAE_RUN_BAD_INPUT,
                         "%s: its run is complete (%d of %d epochs); give "
                         "--epochs more than %d to train on",
                         rc->resume, r->s0.epoch, rc->epochs, r->s0.epoch)
                   : frae_run_fail(
                         r, FRAE_RUN_BAD_INPUT,
                         "%s has trained %d epochs already; --epochs %d is "
                         "the run's total, so nothing is left to train (give "
                         "more than %d)",
                         rc->resume ? rc->resume : "the run", r->s0.epoch,
                         rc->epochs, r->s0.epoch);
    return 0;
}
