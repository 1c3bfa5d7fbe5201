/* libfrae's training run and option table (frae_train.h): a fit over
 * arrays in memory is the run the command makes from .npy files, a
 * continued run is one straight run, and every option parses, formats back
 * and is recorded in checkpoints under the key its row names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/frae_internal.h"
#include "frae_train.h"
#include "io/formats.h"
#include "test_util.h"
#include "tests.h"

enum { D = 6, N_SEQ = 9 };

/* Sequences of 20..60 frames, one array each. */
static float *make_seqs(long *len)
{
    long total = 0;
    for (int i = 0; i < N_SEQ; i++)
        total += len[i] = 20 + 5 * i;
    float *x = malloc(sizeof(float) * (size_t)total * D);
    uint64_t rng = 11;
    for (long i = 0; i < total * D; i++)
        x[i] = 0.8f * frae_rng_uniform(&rng) - 0.4f +
               0.3f * sinf(0.1f * (float)(i / D) + (float)(i % D));
    return x;
}

/* The settings of a small run, set by name as the command line does. */
static int settings(frae_run_config *rc, const char *const *opts, char *err)
{
    frae_run_config_default(rc);
    rc->model.threads = 1;
    for (int i = 0; opts[i]; i += 2)
        if (frae_option_set(rc, opts[i], opts[i + 1], err, 512))
            return -1;
    frae_options_finish(rc);
    return 0;
}

static const char *const RUN[] = {
    "--frame-dim", "6",    "--history", "2",  "--enc",       "16",
    "--latent",    "3",    "--dec",     "16", "--quantizer", "binary",
    "--window",    "12",   "--batch",   "4",  "--crop",      "15",
    "--val-split", "0.25", "--epochs",  "4",  NULL};

/* Trains rc on ds (a continued run's state from prev): the model's
 * parameters into params (n of them). */
static int train(const frae_run_config *rc, frae_dataset *ds,
                 const frae_run *prev, float *params, size_t *n,
                 frae_run **keep)
{
    char err[512];
    frae_run *r = frae_run_create(rc, err, sizeof err);
    if (!r)
        return -1;
    if (prev && frae_run_continue(r, prev)) {
        frae_run_destroy(r);
        return -1;
    }
    int status = frae_run_train(r, ds, NULL, NULL, NULL, NULL);
    if (status && frae_run_error(r, NULL))
        printf("    run: %s\n", frae_run_error(r, NULL));
    frae_model *m = frae_run_model(r);
    if (m && params) {
        *n = frae_param_count(m);
        frae_get_params(m, params);
    }
    if (keep)
        *keep = r;
    else
        frae_run_destroy(r);
    return status;
}

static int same_file(const char *a, const char *b)
{
    void *ma, *mb;
    size_t sa, sb;
    if (frae_map_file(a, 1, &ma, &sa, NULL, 0) ||
        frae_map_file(b, 1, &mb, &sb, NULL, 0))
        return 0;
    int same = sa == sb && !memcmp(ma, mb, sa);
    munmap(ma, sa), munmap(mb, sb);
    return same;
}

int test_run_arrays_equal_files(void)
{
    int failures = 0;
    char dir[] = "/tmp/frae-run-XXXXXX", err[512];
    if (!mkdtemp(dir))
        return 1;
    long len[N_SEQ];
    float *x = make_seqs(len);
    /* the same sequences as .npy files, and as arrays in memory */
    frae_dataset *arrays = frae_dataset_create(D);
    char path[N_SEQ][256];
    long at = 0;
    for (int i = 0; i < N_SEQ; i++) {
        snprintf(path[i], sizeof path[i], "%s/s%d.npy", dir, i);
        const long shape[2] = {len[i], D};
        frae_npy_write(path[i], x + at * D, 2, shape, err, sizeof err);
        CHECK(!frae_dataset_add_array(arrays, "x", x + at * D, 1, len[i], D,
                                      err, sizeof err),
              "add_array: %s", err);
        at += len[i];
    }
    char **files = NULL;
    int n_files = 0;
    const char *dirs[1] = {dir};
    CHECK(!frae_expand_paths(dirs, 1, &files, &n_files, err, sizeof err) &&
              n_files == N_SEQ,
          "expand_paths: %s", err);
    frae_dataset *npy = frae_dataset_create(0);
    for (int i = 0; i < n_files; i++)
        CHECK(!frae_dataset_add_npy(npy, files[i], err, sizeof err), "%s", err);
    frae_free_paths(files, n_files);
    CHECK(frae_dataset_sequences(npy) == N_SEQ &&
              frae_dataset_total_frames(npy) == at &&
              frae_dataset_dim(npy) == D,
          "the files' dataset has %ld sequences", frae_dataset_sequences(npy));

    frae_run_config rc;
    CHECK(!settings(&rc, RUN, err), "settings: %s", err);
    char ck_a[300], ck_b[300];
    snprintf(ck_a, sizeof ck_a, "%s/a.st", dir);
    snprintf(ck_b, sizeof ck_b, "%s/b.st", dir);
    const size_t cap = 1 << 16;
    float *pa = malloc(sizeof(float) * cap), *pb = malloc(sizeof(float) * cap);
    size_t na = 0, nb = 0;
    rc.save = ck_a;
    CHECK(train(&rc, arrays, NULL, pa, &na, NULL) == 0, "the run over arrays");
    rc.save = ck_b;
    CHECK(train(&rc, npy, NULL, pb, &nb, NULL) == 0, "the run over files");
    CHECK(na == nb && na > 0 && !memcmp(pa, pb, sizeof(float) * na),
          "arrays and .npy files train different weights");
    CHECK(same_file(ck_a, ck_b),
          "arrays and .npy files write different checkpoints");

    /* four runs of one epoch, each continuing the last, are one of four */
    frae_run *prev = NULL, *next = NULL;
    rc.save = NULL;
    rc.epochs = 0;
    rc.more_epochs = 1;
    for (int k = 0; k < 4; k++) {
        CHECK(train(&rc, arrays, prev, k == 3 ? pb : NULL, &nb, &next) == 0,
              "continued run %d", k);
        frae_run_destroy(prev);
        prev = next;
    }
    frae_run_result res;
    frae_run_get_result(prev, &res);
    CHECK(res.epoch == 4, "four continued runs trained %d epochs", res.epoch);
    frae_run_destroy(prev);
    CHECK(!memcmp(pa, pb, sizeof(float) * na),
          "four runs of one epoch differ from one of four");

    /* a resume from epoch 2 is the straight run too */
    rc.more_epochs = 0;
    rc.epochs = 2;
    rc.save = ck_b;
    CHECK(train(&rc, npy, NULL, NULL, NULL, NULL) == 0, "two epochs");
    frae_run_config back;
    frae_run_config_default(&back);
    back.model.threads = 1;
    back.resume = ck_b;
    back.save = ck_b;
    back.epochs = 4;
    CHECK(!frae_run_config_resume(&back, err, sizeof err), "resume: %s", err);
    CHECK(back.crop == 15 && back.val_split == 0.25 && back.model.batch == 4,
          "the resumed settings are the checkpoint's");
    CHECK(train(&back, npy, NULL, pb, &nb, NULL) == 0, "resumed to 4");
    CHECK(!memcmp(pa, pb, sizeof(float) * na),
          "2 epochs + resume to 4 differ from 4 straight");
    CHECK(same_file(ck_a, ck_b),
          "the resumed checkpoint is not the straight one");

    /* what a run refuses, in one line */
    frae_run_config bad = rc;
    bad.val_split = 0.99;
    bad.save = NULL;
    frae_run *r = frae_run_create(&bad, err, sizeof err);
    CHECK(frae_run_train(r, arrays, NULL, NULL, NULL, NULL) ==
                  FRAE_RUN_BAD_INPUT &&
              strstr(frae_run_error(r, NULL), "leaves an empty"),
          "a split that leaves nothing: %s", frae_run_error(r, NULL));
    frae_run_destroy(r);

    frae_dataset_destroy(arrays);
    frae_dataset_destroy(npy);
    free(pa), free(pb), free(x);
    for (int i = 0; i < N_SEQ; i++)
        unlink(path[i]);
    unlink(ck_a), unlink(ck_b);
    rmdir(dir);
    return failures;
}

/* Issue 46: data past what training takes is refused at the input
 * (FRAE_RUN_BAD_INPUT, naming it), and no checkpoint is written that its
 * reader would refuse: non-finite Adam moments, or normalization
 * statistics past 3e38, which the model does not take either. */
int test_run_saves_only_what_reads_back(void)
{
    int failures = 0;
    char err[512], path[] = "/tmp/frae-ck46-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    float *x = malloc(sizeof(float) * 30 * D);
    for (int i = 0; i < 30 * D; i++)
        x[i] = i == 7 ? 3e38f : 0.1f;
    frae_dataset *ds = frae_dataset_create(D);
    CHECK(!frae_dataset_add_array(ds, "x", x, 1, 30, D, err, sizeof err), "%s",
          err);
    frae_run_config rc;
    CHECK(!settings(&rc, RUN, err), "settings: %s", err);
    rc.save = path;
    rc.val_split = 0, rc.crop = 0;
    frae_run *r = frae_run_create(&rc, err, sizeof err);
    const int status = frae_run_train(r, ds, NULL, NULL, NULL, NULL);
    const char *why = frae_run_error(r, NULL);
    CHECK(status == FRAE_RUN_BAD_INPUT && why &&
              strstr(why, "x: 3e+38 at [0, 1, 1]: training takes values up "
                          "to 1e+18"),
          "data of 3e38: status %d, %s", status, why ? why : "(no error)");
    CHECK(access(path, F_OK) != 0, "data of 3e38: a checkpoint was saved");
    frae_run_destroy(r);
    frae_dataset_destroy(ds);
    free(x);

    frae_config c;
    const int enc[1] = {8}, dec[1] = {8};
    tiny_config(&c, D, 2, 1, enc, 3, 1, dec);
    c.normalize = 1;
    frae_model *m = create_or_die(&c);
    float mean[D], std[D], m2[D], s2[D];
    for (int d = 0; d < D; d++)
        mean[d] = 0.0f, std[d] = 1.0f;
    mean[2] = 3e38f; /* 3.00000005e38 as a float: past the reader's 3e38 */
    CHECK(frae_set_normalization(m, mean, std) == -1, "a mean of 3e38f taken");
    mean[2] = nextafterf(3e38f, 0.0f), std[4] = mean[2]; /* the largest */
    CHECK(!frae_set_normalization(m, mean, std), "statistics at 3e38 refused");
    CHECK(!frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    frae_model *back = frae_load(path, NULL, err, sizeof err);
    CHECK(back && !frae_get_normalization(back, m2, s2) &&
              !memcmp(m2, mean, sizeof m2) && !memcmp(s2, std, sizeof s2),
          "statistics at the bound do not read back: %s", back ? "" : err);
    frae_destroy(back);
    unlink(path);
    m->tr.adam_v[1] = INFINITY;
    CHECK(frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err) &&
              strstr(err, "Adam's second moments hold Inf") &&
              access(path, F_OK) != 0,
          "an Inf Adam moment was saved (%s)", err);
    m->tr.adam_v[1] = 0.0f;
    frae_destroy(m);
    unlink(path);
    return failures;
}

/* Issue 46: a replica thread that cannot start (FRAE_FAULT=thread@R, the
 * tests' fault) fails the run with one line; the process goes on, and the
 * next run trains. */
int test_run_thread_cannot_start(void)
{
    int failures = 0;
    char err[512];
    long len[N_SEQ];
    float *x = make_seqs(len);
    frae_dataset *ds = frae_dataset_create(D);
    long at = 0;
    for (int i = 0; i < N_SEQ; at += len[i], i++)
        frae_dataset_add_array(ds, "x", x + at * D, 1, len[i], D, err,
                               sizeof err);
    frae_run_config rc;
    CHECK(!settings(&rc, RUN, err), "settings: %s", err);
    rc.replicas = 3;
    rc.epochs = 1;
    for (int fault = 2; fault >= 0; fault--) {
        char v[32];
        snprintf(v, sizeof v, "thread@%d", fault);
        setenv("FRAE_FAULT", v, 1); /* rank 0 runs on this thread: none */
        frae_run *r = frae_run_create(&rc, err, sizeof err);
        const int status = frae_run_train(r, ds, NULL, NULL, NULL, NULL);
        const char *why = frae_run_error(r, NULL);
        if (fault)
            CHECK(status == FRAE_RUN_FAILED && why &&
                      strstr(why, "cannot start the 3 replica threads") &&
                      !frae_run_model(r),
                  "thread %d: status %d, %s", fault, status,
                  why ? why : "(no error)");
        else
            CHECK(status == 0, "a run with no fault: %s",
                  why ? why : "(no error)");
        frae_run_destroy(r);
    }
    unsetenv("FRAE_FAULT");
    frae_dataset_destroy(ds);
    free(x);
    return failures;
}

/* A value in range that is not the default, for every type. */
static const char *sample(const frae_option *o, char *buf, size_t cap)
{
    switch (o->type) {
    case FRAE_OPTION_INT:
        snprintf(buf, cap, "%.0f", o->lo + 1 > o->hi ? o->lo : o->lo + 1);
        if (!strcmp(o->name, "frame-dim") || !strcmp(o->name, "latent"))
            snprintf(buf, cap, "%d", 5);
        return buf;
    case FRAE_OPTION_FLOAT:
        snprintf(buf, cap, "%.9g", o->hi <= 1 ? 0.25 : 0.5);
        return buf;
    case FRAE_OPTION_CHOICE: /* the last choice */
        snprintf(buf, cap, "%s", strrchr(o->choices, '|') + 1);
        return buf;
    case FRAE_OPTION_WIDTHS: return "12,7";
    case FRAE_OPTION_QUANTIZER: return "uniform:5";
    case FRAE_OPTION_FLAG: return NULL;
    case FRAE_OPTION_TEXT: return "x.st";
    }
    return NULL;
}

int test_option_table(void)
{
    int failures = 0;
    char err[1100], out[256], buf[64];
    const int n = frae_option_count();
    CHECK(n > 20 && n <= 64, "%d options", n);
    for (int i = 0; i < n; i++) {
        const frae_option *o = frae_option_at(i);
        char dashed[64];
        snprintf(dashed, sizeof dashed, "--%s", o->name);
        CHECK(frae_option_find(o->name) == i && frae_option_find(dashed) == i &&
                  frae_option_find(o->python) == i,
              "option %s is not found by its names", o->name);
        CHECK(o->help && *o->help && frae_option_help(o, out, sizeof out) > 0 &&
                  strstr(out, dashed),
              "option %s has no --help line", o->name);
        /* parsed, then formatted back as it was given */
        frae_run_config rc;
        frae_run_config_default(&rc);
        const char *v = sample(o, buf, sizeof buf);
        CHECK(!frae_option_set(&rc, dashed, v, err, sizeof err) &&
                  frae_option_given(&rc, i),
              "%s %s: %s", dashed, v ? v : "", err);
        frae_option_format(&rc, i, out, sizeof out);
        CHECK(!strcmp(out, v ? v : "on"), "%s %s formats back as '%s'", o->name,
              v ? v : "", out);
        if (o->flags & FRAE_OPTION_FIXED)
            CHECK(rc.last_fixed == i, "%s: fixed options are remembered",
                  o->name);
        /* its default is what a run settles on when it is not given */
        if (o->def) {
            frae_run_config settled;
            frae_run_config_default(&settled);
            frae_run_config_settle(&settled, 0, err, sizeof err);
            frae_option_format(&settled, i, out, sizeof out);
            CHECK(!strcmp(out, o->def), "%s: default '%s', settled on '%s'",
                  o->name, o->def, out);
            if (o->type != FRAE_OPTION_FLAG)
                CHECK(!frae_option_set(&settled, o->name, o->def, err,
                                       sizeof err),
                      "%s: its default '%s' does not parse: %s", o->name,
                      o->def, err);
        }
        /* a bad value: one line naming the option as given */
        if (o->type != FRAE_OPTION_FLAG && o->type != FRAE_OPTION_TEXT) {
            err[0] = 0;
            CHECK(frae_option_set(&rc, o->python, "2x", err, sizeof err) ==
                          FRAE_RUN_BAD_INPUT &&
                      !strncmp(err, o->python, strlen(o->python)) &&
                      !strchr(err, '\n'),
                  "%s=2x: '%s'", o->python, err);
        }
    }
    frae_run_config rc;
    frae_run_config_default(&rc);
    CHECK(frae_option_set(&rc, "--bogus", "1", err, sizeof err) &&
              strstr(err, "unknown option"),
          "an unknown option: '%s'", err);
    /* the derived defaults */
    frae_run_config_default(&rc);
    frae_option_set(&rc, "family", "gru", err, sizeof err);
    frae_option_set(&rc, "rate_lambda", "0.01", err, sizeof err);
    frae_option_set(&rc, "quantizer", "binary", err, sizeof err);
    frae_options_finish(&rc);
    frae_config gru;
    frae_config_default_gru(&gru);
    CHECK(rc.model.history == gru.history && rc.model.enc_hidden[0] == 240 &&
              rc.model.prior_hidden == 16 && rc.model.prior_ar == 1,
          "derived defaults: history %d, enc %d, prior %d, prior_ar %d",
          rc.model.history, rc.model.enc_hidden[0], rc.model.prior_hidden,
          rc.model.prior_ar);
    return failures;
}

/* Every row's value, "|"-joined, but the recipe's: two settings alike. */
static void all_values(const frae_run_config *rc, char *out, size_t cap)
{
    size_t at = 0;
    const int skip = frae_option_find("recipe");
    for (int i = 0; i < frae_option_count() && at < cap; i++)
        if (i != skip) {
            at += frae_option_format(rc, i, out + at, cap - at);
            if (at + 1 < cap)
                out[at++] = '|', out[at] = 0;
        }
}

/* The recipes: the row's choices are the table's names, each recipe's
 * options parse, and a recipe settles to what its options given one by one
 * settle to, the options given beside it winning. */
int test_recipes(void)
{
    int failures = 0;
    char err[1100], want[4096], got[4096], choices[256] = "none";
    const int row = frae_option_find("recipe");
    CHECK(row >= 0 && frae_recipe_count() >= 3 &&
              frae_recipe_find("speech") >= 0 &&
              frae_recipe_find("speech-vbr") >= 0 &&
              frae_recipe_find("denoise") >= 0 &&
              frae_recipe_find("speech-3k2") >= 0 && frae_recipe_find("x") < 0,
          "the recipes speech, speech-vbr, denoise and speech-3k2");
    for (int k = 0; k < frae_recipe_count(); k++) {
        const frae_recipe *r = frae_recipe_at(k);
        strcat(choices, "|"), strcat(choices, r->name);
        frae_run_config a, b;
        frae_run_config_default(&a), frae_run_config_default(&b);
        CHECK(!frae_option_set(&a, "--recipe", r->name, err, sizeof err) &&
                  a.recipe == k + 1,
              "--recipe %s: %s", r->name, err);
        frae_options_finish(&a);
        for (int i = 0; r->options[i]; i += 2)
            CHECK(!frae_option_set(&b, r->options[i], r->options[i + 1], err,
                                   sizeof err),
                  "recipe %s: %s", r->name, err);
        frae_options_finish(&b);
        all_values(&a, want, sizeof want), all_values(&b, got, sizeof got);
        CHECK(!strcmp(want, got),
              "--recipe %s settles as its options: %s, "
              "not %s",
              r->name, want, got);
        CHECK(a.given == (b.given | (uint64_t)1 << row) && a.crop == b.crop &&
                  a.model.batch == b.model.batch,
              "--recipe %s: its options count as given", r->name);
        /* given before or after it, an option wins */
        for (int order = 0; order < 2; order++) {
            frae_run_config c;
            frae_run_config_default(&c);
            if (order == 0)
                frae_option_set(&c, "latent", "7", err, sizeof err);
            frae_option_set(&c, "recipe", r->name, err, sizeof err);
            if (order == 1)
                frae_option_set(&c, "lr", "0.25", err, sizeof err);
            frae_options_finish(&c);
            CHECK(order ? c.model.learning_rate == 0.25f
                        : c.model.latent_dim == 7,
                  "--recipe %s: an option given %s it wins", r->name,
                  order ? "after" : "before");
            CHECK(c.last_fixed == (order ? frae_option_find("lr") : row),
                  "--recipe %s: a resume names the recipe or the option "
                  "given last (%d)",
                  r->name, c.last_fixed);
        }
    }
    CHECK(!strcmp(frae_option_at(row)->choices, choices),
          "the recipe row's choices '%s' are the recipes '%s'",
          frae_option_at(row)->choices, choices);
    /* denoise needs targets */
    frae_run_config rc;
    frae_run_config_default(&rc);
    frae_option_set(&rc, "recipe", "denoise", err, sizeof err);
    CHECK(frae_run_check_pairing(&rc, 1, 0, 0, 0, err, sizeof err) ==
                  FRAE_RUN_BAD_INPUT &&
              strstr(err, "--targets") &&
              !frae_run_check_pairing(&rc, 1, 1, 0, 0, err, sizeof err),
          "--recipe denoise without --targets: '%s'", err);
    return failures;
}

/* Metadata keys a checkpoint writes that no option stands for. */
static int known_key(const char *k)
{
    static const char *const keys[] = {
        "frae.format",         "frae.format_version", "frae.weights",
        "frae.norm_mean",      "frae.norm_std",       "frae.beta1",
        "frae.beta2",          "frae.epsilon",        "frae.param_count",
        "frae.bits_per_frame", "frae.adam_step",      "frae.checksum",
        "frae.targets",        "frae.batch",          "frae.model_hash"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(k, keys[i]))
            return 1;
    for (int i = 0; i < frae_option_count(); i++)
        if (frae_option_at(i)->meta && !strcmp(frae_option_at(i)->meta, k))
            return 1;
    return 0;
}

int test_checkpoint_records_options(void)
{
    int failures = 0;
    char err[1100], buf[64], out[256], want[256];
    char path[] = "/tmp/frae-options-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    for (int i = 0; i < frae_option_count(); i++) {
        const frae_option *o = frae_option_at(i);
        if (!o->meta || strncmp(o->meta, "frae.", 5))
            continue;
        /* a model with this option given (and what it needs: a prior for
         * the prior's options, pitch for its coder, a warm-up for the
         * schedule) */
        frae_run_config rc;
        frae_run_config_default(&rc);
        rc.model.frame_dim = 6, rc.model.latent_dim = 3;
        rc.model.n_enc_hidden = rc.model.n_dec_hidden = 1;
        rc.model.enc_hidden[0] = rc.model.dec_hidden[0] = 8;
        rc.model.batch = 1;
        frae_option_set(&rc, "quantizer", "binary", err, sizeof err);
        if (strstr(o->name, "prior") || strstr(o->name, "pitch") ||
            !strcmp(o->name, "rate-lambda"))
            frae_option_set(&rc, "prior", "4", err, sizeof err);
        if (strstr(o->name, "pitch"))
            frae_option_set(&rc, "pitch", NULL, err, sizeof err);
        if (!strcmp(o->name, "lr-floor") || !strcmp(o->name, "decay-steps"))
            frae_option_set(&rc, "warmup", "3", err, sizeof err);
        if (!strncmp(o->name, "lookahead", 9)) /* a GRU's */
            frae_option_set(&rc, "family", "gru", err, sizeof err);
        if (!strcmp(o->name, "lookahead-packet")) /* a look-ahead's */
            frae_option_set(&rc, "lookahead", "1", err, sizeof err);
        if (!strncmp(o->name, "erasure", 7)) /* a GRU's, recorded when on */
            frae_option_set(&rc, "family", "gru", err, sizeof err),
                frae_option_set(&rc, "erasure", "0.1", err, sizeof err);
        if (!strncmp(o->name, "emphasis", 8)) /* recorded when on */
            frae_option_set(&rc, "emphasis", "2", err, sizeof err),
                frae_option_set(&rc, "emphasis-from", "0", err, sizeof err),
                frae_option_set(&rc, "emphasis-to", "5", err, sizeof err);
        const char *v = sample(o, buf, sizeof buf);
        if (!strcmp(o->name, "normalize"))
            v = "on";
        CHECK(!frae_option_set(&rc, o->name, v, err, sizeof err), "%s: %s",
              o->name, err);
        if (!strcmp(o->name, "normalize"))
            rc.model.normalize = 1; /* the run decides it from "on" */
        frae_option_format(&rc, i, want, sizeof want);
        frae_model *m = frae_create(&rc.model, err, sizeof err);
        CHECK(m && !frae_save(m, path, 0, NULL, 0, NULL, 0, err, sizeof err),
              "%s: %s", o->name, err);
        frae_destroy(m);
        frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
        frae_run_config back;
        frae_run_config_default(&back);
        CHECK(ck && frae_checkpoint_meta(ck, o->meta) &&
                  !frae_checkpoint_config(ck, &back.model, err, sizeof err),
              "%s is not recorded as %s: %s", o->name, o->meta, err);
        if (!strcmp(o->name, "normalize")) /* a model that z-scores */
            snprintf(out, sizeof out, "%s",
                     back.model.normalize ? "on" : "off");
        else
            frae_option_format(&back, i, out, sizeof out);
        CHECK(!strcmp(out, want), "%s %s comes back from %s as '%s'", o->name,
              want, o->meta, out);
        frae_checkpoint_close(ck);
    }
    /* every key a checkpoint holds is an option's or one of the model's
     * own (its format, statistics, sizes) */
    frae_run_config rc;
    frae_run_config_default(&rc);
    rc.model.frame_dim = 6, rc.model.batch = 1, rc.model.normalize = 1;
    rc.model.quantizer = FRAE_QUANT_BINARY, rc.model.prior_hidden = 4;
    rc.model.prior_ar = 1, rc.model.rate_lambda = 0.1f, rc.model.lr_warmup = 2;
    frae_model *m = frae_create(&rc.model, err, sizeof err);
    frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err);
    frae_destroy(m);
    frae_safetensors st;
    CHECK(!frae_st_open(path, &st, err, sizeof err), "%s", err);
    for (int k = 0; k < st.n_meta; k++)
        CHECK(known_key(st.meta[k].key),
              "the checkpoint records '%s', which no option stands for",
              st.meta[k].key);
    frae_st_close(&st);
    frae_checkpoint *ck;

    /* the run's settings, under the keys of their rows */
    long len[N_SEQ];
    float *x = make_seqs(len);
    frae_dataset *ds = frae_dataset_create(D);
    long at = 0;
    for (int i = 0; i < N_SEQ; i++, at += len[i - 1])
        frae_dataset_add_array(ds, "x", x + at * D, 1, len[i], D, err,
                               sizeof err);
    const char *const opts[] = {"--frame-dim", "6",    "--enc",      "8",
                                "--dec",       "8",    "--latent",   "3",
                                "--epochs",    "2",    "--batch",    "3",
                                "--crop",      "11",   "--patience", "5",
                                "--val-split", "0.25", NULL};
    CHECK(!settings(&rc, opts, err), "%s", err);
    rc.save = path;
    CHECK(train(&rc, ds, NULL, NULL, NULL, NULL) == 0, "a run");
    ck = frae_checkpoint_open(path, err, sizeof err);
    for (int i = 0; ck && i < frae_option_count(); i++) {
        const frae_option *o = frae_option_at(i);
        if (!o->meta || strncmp(o->meta, "train.", 6) ||
            !frae_option_given(&rc, i)) /* the recipe: recorded if given */
            continue;
        frae_option_format(&rc, i, want, sizeof want);
        const char *got = frae_checkpoint_meta(ck, o->meta);
        CHECK(got && !strcmp(got, want), "%s: %s = '%s', the option '%s'",
              o->name, o->meta, got ? got : "(missing)", want);
    }
    frae_checkpoint_close(ck);
    frae_dataset_destroy(ds);
    free(x);
    unlink(path);
    return failures;
}
