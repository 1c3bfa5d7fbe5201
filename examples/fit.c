/* Trains an FRAE on frames in this program's memory with libfrae's run
 * (frae_train.h), the loop 'frae train' and Python's fit call: options by
 * their names, a validation split, crops, a checkpoint with the training
 * state, and a callback after every epoch.
 *
 * usage: frae_fit OUT.safetensors [NAME VALUE ...]   (options as
 *        'frae train' names them, without "--": latent 8 epochs 5 ...)
 * build: cc fit.c $(pkg-config --cflags --libs frae) -lm -o frae_fit */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <frae_train.h>

enum { D = 16, SEQS = 24, FRAMES = 80 };

static int on_epoch(void *ctx, const frae_epoch_log *e)
{
    (void)ctx;
    printf("epoch %d/%d  loss %.6f  val_loss %.6f\n", e->epoch, e->epochs,
           e->loss, e->val_loss);
    return 0; /* non-zero would end the run here */
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc % 2) {
        fprintf(stderr, "usage: %s OUT.safetensors [NAME VALUE ...]\n",
                argv[0]);
        return 2;
    }
    /* smooth frames: sinusoids drifting in phase, one sequence each */
    float *x = malloc(sizeof(float) * SEQS * FRAMES * D);
    for (int s = 0; s < SEQS; s++)
        for (int t = 0; t < FRAMES; t++)
            for (int d = 0; d < D; d++)
                x[((size_t)s * FRAMES + t) * D + d] =
                    0.5f * sinf(0.07f * (float)(t * (1 + d % 3)) + (float)s);
    char err[1100];
    frae_run_config rc;
    frae_run_config_default(&rc);
    rc.model.frame_dim = D;
    rc.val_split = 0.25;
    rc.crop = 30;
    rc.epochs = 3;
    rc.save = argv[1];
    for (int i = 2; i < argc; i += 2)
        if (frae_option_set(&rc, argv[i], argv[i + 1], err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", argv[0], err);
            return 2;
        }
    frae_options_finish(&rc);
    frae_dataset *ds = frae_dataset_create(D);
    frae_run *run = frae_run_create(&rc, err, sizeof err);
    int status =
        !ds || !run ||
        frae_dataset_add_array(ds, "x", x, SEQS, FRAMES, D, err, sizeof err);
    const frae_run_hooks hooks = {NULL, NULL, NULL, on_epoch, NULL, NULL};
    if (!status)
        status = frae_run_train(run, ds, NULL, NULL, NULL, &hooks);
    if (status)
        fprintf(stderr, "%s: %s\n", argv[0],
                run && frae_run_error(run, NULL) ? frae_run_error(run, NULL)
                                                 : err);
    else
        printf("%zu parameters trained, saved to %s\n",
               frae_param_count(frae_run_model(run)), argv[1]);
    frae_run_destroy(run);
    frae_dataset_destroy(ds);
    free(x);
    return status;
}
