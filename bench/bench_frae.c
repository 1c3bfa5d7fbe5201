/* Training throughput of the default FRAE model (FRAE.md) in frae.
 * Usage: frae_bench [--batch B] [--feedback detached|full] [--frames T]
 *                   [--seconds S] [--family dense|gru]
 *        frae_bench --seconds S --codec binary|uniform:N [--weights bf16]
 *                   [--family dense|gru]
 * --family gru: the default GRU model (frae_config_default_gru). 
 * Prints one line: key=value pairs, read by bench/run.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "frae.h"
#include "util.h" /* frae_synth_sequences */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Streaming codec, batch 1: microseconds per frame for encode (which runs
 * the decoder too, closed loop) and for decode, default model. */
static int gru_family;

static void default_config(frae_config *c)
{
    if (gru_family)
        frae_config_default_gru(c);
    else
        frae_config_default(c);
}

/* Entropy coding as the codec does it: the same model (same weights) with
 * a learned prior of 16 units and its within-frame autoregression (the
 * defaults of frae train), each frame's codes range-coded with the
 * prior's frequencies in packets of 100 frames (frae_encode_frame_ranged,
 * frae_decode_frame_ranged).  Median of rounds of T frames, microseconds
 * per frame, encode and decode. */
static void bench_ranged(const frae_config *base, const float *x, int T,
                         double seconds, double *us_enc, double *us_dec)
{
    frae_config c = *base;
    c.prior_hidden = 16;
    c.prior_ar = 1;
    frae_model *m = frae_create(&c, NULL, 0);
    const int D = c.frame_dim;
    const size_t cap = 64 * (size_t)c.latent_dim * 2 + 64; /* 100 frames */
    unsigned char *out = malloc(cap * (size_t)(T / 100 + 1));
    size_t *size = malloc(sizeof(size_t) * (size_t)(T / 100 + 1));
    frae_encoder *e = frae_encoder_create(m);
    frae_decoder *d = frae_decoder_create(m);
    float y[80];
    enum { MAX_ROUNDS = 4096 };
    static double r[2][MAX_ROUNDS];
    int n[2] = {0, 0};
    for (int dir = 0; dir < 2; dir++) {
        double start = now();
        do {
            double t0 = now();
            frae_range_enc re;
            frae_range_dec rd;
            if (dir == 0)
                frae_encoder_reset(e);
            else
                frae_decoder_reset(d);
            for (int t = 0; t < T; t++) {
                unsigned char *pk = out + cap * (size_t)(t / 100);
                if (t % 100 == 0 && dir == 0)
                    frae_range_enc_init(&re, pk, cap);
                else if (t % 100 == 0)
                    frae_range_dec_init(&rd, pk, size[t / 100]);
                if (dir == 0)
                    frae_encode_frame_ranged(e, x + (size_t)t * D, &re, NULL);
                else
                    frae_decode_frame_ranged(d, &rd, y);
                if (dir == 0 && (t % 100 == 99 || t == T - 1))
                    size[t / 100] = frae_range_enc_finish(&re);
            }
            r[dir][n[dir]++] = (now() - t0) / T;
        } while (now() - start < seconds / 2 && n[dir] < MAX_ROUNDS);
        qsort(r[dir], (size_t)n[dir], sizeof(double), cmp_double);
    }
    *us_enc = r[0][n[0] / 2] * 1e6;
    *us_dec = r[1][n[1] / 2] * 1e6;
    frae_encoder_destroy(e), frae_decoder_destroy(d);
    free(out), free(size);
    frae_destroy(m);
}

/* Seconds per frame of fixed-rate encoding: the median of rounds of T
 * frames run for about `seconds`; the last round's codes left in codes. */
static double median_encode(frae_encoder *e, const float *x, int T, int D,
                            unsigned char *codes, size_t cb, double seconds)
{
    enum { MAX_ROUNDS = 4096 };
    static double r[MAX_ROUNDS];
    int n = 0;
    double start = now();
    do {
        double t0 = now();
        frae_encoder_reset(e);
        for (int t = 0; t < T; t++)
            frae_encode_frame(e, x + (size_t)t * D, codes + (size_t)t * cb,
                              NULL);
        r[n++] = (now() - t0) / T;
    } while (now() - start < seconds && n < MAX_ROUNDS);
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    return r[n / 2];
}

static int bench_codec(double seconds, const char *quant, int bf16)
{
    frae_config c;
    default_config(&c);
    c.training = 0;
    c.weights = bf16 ? FRAE_WEIGHTS_BF16 : FRAE_WEIGHTS_F32;
    if (!strcmp(quant, "binary")) {
        c.quantizer = FRAE_QUANT_BINARY;
    } else {
        c.quantizer = FRAE_QUANT_UNIFORM;
        c.quant_levels = atoi(quant + 8);
    }
    char err[256];
    frae_model *m = frae_create(&c, err, sizeof err);
    if (!m) {
        fprintf(stderr, "frae_bench: %s\n", err);
        return 1;
    }
    enum { T = 2000 };
    const int D = c.frame_dim;
    float *x = malloc(sizeof(float) * T * D), y[80];
    frae_synth_sequences(x, 1, T, D, 3);
    size_t cb = frae_code_bytes(m);
    unsigned char *codes = malloc(cb * T);
    frae_encoder *e = frae_encoder_create(m);
    frae_decoder *d = frae_decoder_create(m);
    /* rounds of T frames for about seconds/2 each way; the median round,
     * so that another tenant's burst on this shared machine does not move
     * the figure */
    enum { MAX_ROUNDS = 4096 };
    static double r_dec[MAX_ROUNDS];
    int n_dec = 0;
    /* the encoder's search, two passes (frae encode --search 2), then the
     * plain encoder, whose codes the decoder times */
    frae_encoder_set_search(e, 2, 0.0f);
    const double t_search = median_encode(e, x, T, D, codes, cb, seconds / 2);
    frae_encoder_set_search(e, 0, 0.0f);
    const double t_enc = median_encode(e, x, T, D, codes, cb, seconds / 2);
    double start = now();
    do {
        double t0 = now();
        frae_decoder_reset(d);
        for (int t = 0; t < T; t++)
            frae_decode_frame(d, codes + (size_t)t * cb, y);
        r_dec[n_dec++] = (now() - t0) / T;
    } while (now() - start < seconds / 2 && n_dec < MAX_ROUNDS);
    qsort(r_dec, (size_t)n_dec, sizeof *r_dec, cmp_double);
    const double t_dec = r_dec[n_dec / 2];
    double us_enc = t_enc * 1e6, us_dec = t_dec * 1e6;
    double us_rg_enc, us_rg_dec;
    bench_ranged(&c, x, T, seconds, &us_rg_enc, &us_rg_dec);
    /* what the prior and the range coder add */
    double us_rc_enc = us_rg_enc - us_enc, us_rc_dec = us_rg_dec - us_dec;
    printf("system=frae family=%s codec=%s weights=%s bits_per_frame=%d "
           "encode_us=%.2f "
           "decode_us=%.2f rt_decode=%.0f rt_encode_decode=%.0f "
           "model_mb=%.2f isa=%s range_encode_us=%.3f range_decode_us=%.3f "
           "search2_encode_us=%.2f\n",
           gru_family ? "gru" : "dense", quant, bf16 ? "bf16" : "f32",
           c.latent_dim * frae_code_bits(m), us_enc, us_dec,
           10000.0 / us_dec, 10000.0 / (us_enc + us_dec),
           frae_bytes_allocated(m) / 1048576.0, frae_isa_name(m), us_rc_enc,
           us_rc_dec, t_search * 1e6);
    frae_encoder_destroy(e);
    frae_decoder_destroy(d);
    free(x), free(codes);
    frae_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    int batch = 1, frames = 100, threads = 1, bf16 = 0;
    const char *codec = NULL;
    double seconds = 3.0;
    frae_feedback fb = FRAE_FEEDBACK_DETACHED;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch"))
            batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--frames"))
            frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--codec"))
            codec = argv[i + 1];
        else if (!strcmp(argv[i], "--family"))
            gru_family = !strcmp(argv[i + 1], "gru");
        else if (!strcmp(argv[i], "--weights"))
            bf16 = !strcmp(argv[i + 1], "bf16");
        else if (!strcmp(argv[i], "--feedback"))
            fb = strcmp(argv[i + 1], "full") ? FRAE_FEEDBACK_DETACHED
                                              : FRAE_FEEDBACK_FULL;
        else {
            fprintf(stderr, "frae_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (codec)
        return bench_codec(seconds, codec, bf16);
    if (batch < 1 || frames < 1 || !(seconds > 0)) {
        fprintf(stderr, "frae_bench: bad sizes\n");
        return 2;
    }
    frae_config c;
    default_config(&c);
    c.batch = batch;
    c.window = frames;
    c.feedback = fb;
    c.threads = threads;
    char err[256];
    frae_model *m = frae_create(&c, err, sizeof err);
    if (!m) {
        fprintf(stderr, "frae_bench: %s\n", err);
        return 1;
    }
    /* 2 distinct batches of data, alternated (the PyTorch side does the
     * same), so the data adds little to peak RSS */
    const int nbatches = 2, D = c.frame_dim;
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
    printf("system=frae family=%s batch=%d threads=%d feedback=%s "
           "frames_per_s=%.1f peak_rss_mb=%.1f model_mb=%.1f isa=%s "
           "params=%zu loss=%.6f\n",
           gru_family ? "gru" : "dense", batch, threads, fb == FRAE_FEEDBACK_FULL ? "full" : "detached",
           (double)done * batch * frames / t, ru.ru_maxrss / 1024.0,
           frae_bytes_allocated(m) / 1048576.0, frae_isa_name(m),
           frae_param_count(m), st.mse);
    free(x);
    frae_destroy(m);
    return 0;
}
