/* Training throughput of the default FRAE model (FRAE.md) in frae.
 * Usage: frae_bench [--batch B] [--feedback detached|full] [--frames T]
 *                   [--seconds S]
 * Prints one line: key=value pairs, read by bench/run.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "frae.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int batch = 1, frames = 100;
    double seconds = 3.0;
    frae_feedback fb = FRAE_FEEDBACK_DETACHED;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch"))
            batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--frames"))
            frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--feedback"))
            fb = strcmp(argv[i + 1], "full") ? FRAE_FEEDBACK_DETACHED
                                              : FRAE_FEEDBACK_FULL;
        else {
            fprintf(stderr, "frae_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (batch < 1 || frames < 1 || !(seconds > 0)) {
        fprintf(stderr, "frae_bench: bad sizes\n");
        return 2;
    }
    frae_config c;
    frae_config_default(&c);
    c.batch = batch;
    c.window = frames;
    c.feedback = fb;
    char err[256];
    frae_model *m = frae_create(&c, err, sizeof err);
    if (!m) {
        fprintf(stderr, "frae_bench: %s\n", err);
        return 1;
    }
    /* 8 distinct batches of data, cycled */
    const int nbatches = 8, D = c.frame_dim;
    float *x = malloc(sizeof(float) * (size_t)nbatches * batch * frames * D);
    frae_synth_sequences(x, nbatches * batch, frames, D, 7);
    frae_stats st;
    frae_train_batch(m, x, batch, frames, &st); /* warm-up */
    long done = 0;
    double t0 = now(), t;
    do {
        frae_train_batch(m,
                         x + (size_t)(done % nbatches) * batch * frames * D,
                         batch, frames, &st);
        done++;
        t = now() - t0;
    } while (t < seconds);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("system=frae batch=%d feedback=%s frames_per_s=%.1f "
           "peak_rss_mb=%.1f model_mb=%.1f isa=%s loss=%.6f\n",
           batch, fb == FRAE_FEEDBACK_FULL ? "full" : "detached",
           (double)done * batch * frames / t, ru.ru_maxrss / 1024.0,
           frae_bytes_allocated(m) / 1048576.0, frae_isa_name(m), st.mse);
    free(x);
    frae_destroy(m);
    return 0;
}
