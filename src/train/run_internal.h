/* Shared by the training run's files (run.c: batches, replicas and the
 * epoch loop; run_state.c: checkpoints and the training state they hold;
 * run_setup.c: the run's settings, its models and its data set up): the
 * run, its replicas and their state.  run_support.c is the lowest: the
 * others call down into it, run.c into run_setup.c and run_state.c, and
 * run_setup.c into run_state.c. */
#ifndef FRAE_TRAIN_RUN_INTERNAL_H
#define FRAE_TRAIN_RUN_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "core/frae_internal.h"
#include "frae_train.h"
#include "io/formats.h"
#include "train/replicas.h"

enum { ERR_CAP = 2300 };

typedef struct {
    int epoch;       /* epochs completed */
    long batch;      /* next batch of the current epoch */
    uint64_t rng;    /* shuffling state */
    double sse, sae; /* the current epoch so far */
    double bits;     /* ... and the rate's bits (with a prior) */
    long values, frames;
    double seconds; /* time in the current epoch so far, for frames/s */
    double started; /* when the epoch started, less seconds */
    double best;    /* best monitored loss, and when */
    int best_epoch;
    int bad_epochs;
    int32_t *order; /* the current epoch's sequence order (with crops: of
                        its crops) */
    long n_order;
    /* crops: the epoch's crops, sequence and first frame; n_order of
     * them, room for crop_cap (the most an epoch can cut) */
    int32_t *crop_seq, *crop_start;
    long crop_cap;
} train_state;

typedef struct member member;

/* The replica threads wait here until all of them have started (go 1),
 * or one could not start and they are to end at once (go -1). */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    int go;
} start_gate;

/* One batch of sequences, window by window, on one replica. */
typedef struct {
    member *me;
    const frae_dataset *ds;
    float *win;              /* [B][W][D], B this replica's rows */
    int *valid;              /* [B] */
    const frae_dataset *tds; /* the targets, paired with ds (NULL: none) */
    float *twin;             /* their window, like win */
    /* crops (training with crops): ids index these; else sequences */
    const int32_t *crop_seq, *crop_start;
    int crop;
} batch_runner;

/* One replica. */
struct member {
    frae_run *run;
    frae_transport t;     /* size 1: alone */
    frae_reducer reducer; /* through t, timed */
    train_state s;
    frae_model *m;
    batch_runner brun, vrun;
    FILE *csv;      /* the lead's */
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
    start_gate *gate; /* while the replica threads start */
    int trained;
    int early_stopped;
    double t0;
    char err[ERR_CAP]; /* set-up's */
    int err_rank, err_said;
};

/* run_support.c: the replicas' agreement (any flag set, sums in rank
 * order), a set-up failure in one line (returns code), the training
 * state's copies and a seeded shuffle */
int frae_run_any(member *me, int flag);
int frae_run_sum(member *me, double *x, size_t n);
int frae_run_fail(frae_run *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void frae_train_state_free(train_state *s);
int frae_train_state_copy(train_state *dst, const train_state *src);
void frae_run_shuffle(int32_t *a, long n, uint64_t *rng);
/* whether the run continues the one it was made from (frae_run_continue) */
int frae_run_continues(const frae_run *r);

/* run_state.c: a resume's checkpoint opened and its state read; that
 * state checked against the run; a checkpoint saved once the replicas
 * agree to */
int frae_run_open_resume(frae_run_config *rc, train_state *s, char *summary,
                         size_t sumcap, frae_checkpoint **ck_out, char *err,
                         size_t errlen);
int frae_run_check_state(frae_run *r, const train_state *s, const char *path,
                         long n_batches);
int frae_run_save_agreed(member *me, const char *path, int on, int with_state);

/* run_setup.c: the set-up the replicas share */
int frae_run_set_up(frae_run *r);

#endif
