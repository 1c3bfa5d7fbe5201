/* Training throughput of the default FRAE model (FRAE.md) in frae.
 * Usage: frae_bench [--batch B] [--feedback detached|full] [--frames T]
 *                   [--seconds S] [--family dense|gru]
 *        frae_bench --seconds S --codec binary|uniform:N [--weights bf16]
 *                   [--family dense|gru]
 *        frae_bench --seconds S --vocoder
 * --family gru: the default GRU model (frae_config_default_gru). 
 * Prints one line: key=value pairs, read by bench/run.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/util.h" /* frae_synth_sequences */
#include "codec/codec_internal.h"
#include "frae_audio.h"
#include "frae_codec.h"

/* frames of up to this many values (the default models' 80) */
#define FRAE_MAX_FRAME_DIM_BENCH 256

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

/* One round of T frames through a codec, seconds per frame. */
typedef struct {
    frae_model *m;
    frae_encoder *e;
    frae_decoder *d;
    int ranged, D;
    size_t cb, cap;       /* fixed: code bytes a frame; ranged: a packet */
    unsigned char *codes; /* fixed: T frames; ranged: T / 100 + 1 packets */
    size_t *size;         /* ranged: each packet's bytes */
} codec_run;

static int codec_open(codec_run *r, const frae_config *c, int ranged, int T)
{
    memset(r, 0, sizeof *r);
    char err[256];
    if (!(r->m = frae_create(c, err, sizeof err))) {
        fprintf(stderr, "frae_bench: %s\n", err);
        return -1;
    }
    r->ranged = ranged;
    r->D = c->frame_dim;
    r->cb = frae_code_bytes(frae_model_net(r->m));
    r->cap = 64 * (size_t)c->latent_dim * 2 + 64; /* 100 frames */
    const size_t bytes =
        ranged ? r->cap * (size_t)(T / 100 + 1) : r->cb * (size_t)T;
    r->codes = malloc(bytes);
    r->size = calloc((size_t)(T / 100 + 1), sizeof *r->size);
    r->e = frae_encoder_create(frae_model_net(r->m));
    r->d = frae_decoder_create(frae_model_net(r->m));
    return r->codes && r->size && r->e && r->d ? 0 : -1;
}

static void codec_close(codec_run *r)
{
    frae_encoder_destroy(r->e);
    frae_decoder_destroy(r->d);
    free(r->codes), free(r->size);
    frae_destroy(r->m);
}

static double codec_round(codec_run *r, int encode, const float *x, int T)
{
    float y[FRAE_MAX_FRAME_DIM_BENCH];
    frae_range_enc re;
    frae_range_dec rd;
    const double t0 = now();
    if (encode)
        frae_encoder_reset(r->e);
    else
        frae_decoder_reset(r->d);
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * r->D;
        if (!r->ranged) {
            if (encode)
                frae_encode_frame(r->e, xt, r->codes + (size_t)t * r->cb, NULL);
            else
                frae_decode_frame(r->d, r->codes + (size_t)t * r->cb, y);
            continue;
        }
        unsigned char *pk = r->codes + r->cap * (size_t)(t / 100);
        if (t % 100 == 0 && encode)
            frae_range_enc_init(&re, pk, r->cap);
        else if (t % 100 == 0)
            frae_range_dec_init(&rd, pk, r->size[t / 100]);
        if (encode)
            frae_encode_frame_ranged(r->e, xt, &re, NULL);
        else
            frae_decode_frame_ranged(r->d, &rd, y);
        if (encode && (t % 100 == 99 || t == T - 1))
            r->size[t / 100] = frae_range_enc_finish(&re);
    }
    return (now() - t0) / T;
}

/* dst takes src's value of every tensor the two share by name (the
 * ranged model's encoder and decoder become the fixed-rate one's; only
 * its prior is its own): a different draw would change the ReLUs' zeros,
 * and with them the sparse products' time. */
static void share_weights(frae_model *dst, const frae_model *src)
{
    float *a = malloc(sizeof(float) * frae_param_count(src));
    float *b = malloc(sizeof(float) * frae_param_count(dst));
    frae_get_params(src, a);
    frae_get_params(dst, b);
    size_t ob = 0;
    for (int k = 0; k < frae_tensor_count(dst); k++) {
        frae_tensor_info tb, ta;
        frae_tensor_info_get(dst, k, &tb);
        const size_t nb = (size_t)tb.rows * tb.cols;
        size_t oa = 0;
        for (int j = 0; j < frae_tensor_count(src); j++) {
            frae_tensor_info_get(src, j, &ta);
            const size_t na = (size_t)ta.rows * ta.cols;
            if (!strcmp(ta.name, tb.name) && na == nb)
                memcpy(b + ob, a + oa, sizeof(float) * nb);
            oa += na;
        }
        ob += nb;
    }
    frae_set_params(dst, b);
    free(a), free(b);
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
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
    return quantile(r, n, 0.5);
}

/* The streaming codec, batch 1.  Fixed-rate encode (which runs the
 * decoder too, closed loop) and decode, and what entropy coding adds: the
 * same model with a learned prior of 16 units and its within-frame
 * autoregression (frae train's defaults), each frame's codes range-coded
 * with the prior's frequencies in packets of 100 frames.  The two run in
 * paired rounds of T frames, interleaved (the order alternating), so a
 * burst from another tenant of this machine meets both: the figures are
 * medians over rounds, and what the prior and range coder add is the
 * median of the pairs' differences with its quartiles. */
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
    frae_config cr = c;
    cr.prior_hidden = 16;
    cr.prior_ar = 1;
    enum { T = 2000, MAX_ROUNDS = 1024 };
    codec_run fixed, ranged;
    if (codec_open(&fixed, &c, 0, T) || codec_open(&ranged, &cr, 1, T))
        return 1;
    share_weights(ranged.m, fixed.m);
    const int D = c.frame_dim;
    float *x = malloc(sizeof(float) * T * D);
    frae_synth_sequences(x, 1, T, D, 3);
    /* the encoder's search, two passes (frae encode --search 2) */
    frae_encoder_set_search(fixed.e, 2, 0.0f);
    const double t_search =
        median_encode(fixed.e, x, T, D, fixed.codes, fixed.cb, seconds / 3);
    frae_encoder_set_search(fixed.e, 0, 0.0f);
    static double enc[2][MAX_ROUNDS], dec[2][MAX_ROUNDS];
    static double d_enc[MAX_ROUNDS], d_dec[MAX_ROUNDS];
    int n = 0;
    const double start = now();
    do {
        codec_run *first = n % 2 ? &ranged : &fixed;
        codec_run *second = n % 2 ? &fixed : &ranged;
        /* encode before decode: the decoders read this round's codes */
        double a = codec_round(first, 1, x, T),
               b = codec_round(second, 1, x, T);
        enc[first->ranged][n] = a, enc[second->ranged][n] = b;
        a = codec_round(first, 0, x, T), b = codec_round(second, 0, x, T);
        dec[first->ranged][n] = a, dec[second->ranged][n] = b;
        d_enc[n] = enc[1][n] - enc[0][n];
        d_dec[n] = dec[1][n] - dec[0][n];
        n++;
    } while ((now() - start < seconds * 2 / 3 || n < 5) && n < MAX_ROUNDS);
    const double us_enc = quantile(enc[0], n, 0.5) * 1e6;
    const double us_dec = quantile(dec[0], n, 0.5) * 1e6;
    const double rc_enc[3] = {quantile(d_enc, n, 0.25) * 1e6,
                              quantile(d_enc, n, 0.5) * 1e6,
                              quantile(d_enc, n, 0.75) * 1e6};
    const double rc_dec[3] = {quantile(d_dec, n, 0.25) * 1e6,
                              quantile(d_dec, n, 0.5) * 1e6,
                              quantile(d_dec, n, 0.75) * 1e6};
    printf("system=frae family=%s codec=%s weights=%s bits_per_frame=%d "
           "encode_us=%.2f "
           "decode_us=%.2f rt_decode=%.0f rt_encode_decode=%.0f "
           "model_mb=%.2f isa=%s range_encode_us=%.3f range_decode_us=%.3f "
           "range_encode_q1=%.3f range_encode_q3=%.3f range_decode_q1=%.3f "
           "range_decode_q3=%.3f paired_rounds=%d search2_encode_us=%.2f\n",
           gru_family ? "gru" : "dense", quant, bf16 ? "bf16" : "f32",
           c.latent_dim * frae_code_bits(frae_model_net(fixed.m)), us_enc,
           us_dec, 10000.0 / us_dec, 10000.0 / (us_enc + us_dec),
           frae_bytes_allocated(fixed.m) / 1048576.0, frae_isa_name(fixed.m),
           rc_enc[1], rc_dec[1], rc_enc[0], rc_enc[2], rc_dec[0], rc_dec[2], n,
           t_search * 1e6);
    codec_close(&fixed);
    codec_close(&ranged);
    free(x);
    return 0;
}

/* The harmonic-plus-noise vocoder (frae_audio.h), batch 1: microseconds
 * per 10 ms frame of features with pitch, the median of rounds over 20 s
 * of a synthetic voice: 300 ms of harmonics with vibrato (f0 from 80 to
 * 240 Hz, the lower the more harmonics to make) then 100 ms of noise. */
static int bench_vocoder(double seconds)
{
    frae_features f;
    frae_features_default(&f);
    char err[256];
    frae_mel *mel = frae_mel_create(&f, err, sizeof err);
    if (!mel) {
        fprintf(stderr, "frae_bench: %s\n", err);
        return 1;
    }
    const long n = 20L * f.sample_rate, seg = f.sample_rate * 4 / 10;
    const long voiced_len = f.sample_rate * 3 / 10;
    float *x = malloc(sizeof(float) * (size_t)n);
    float *f0_at = malloc(sizeof(float) * (size_t)n);
    uint64_t rng = 7;
    double ph = 0;
    for (long i = 0; i < n; i++) {
        const long k = i / seg, in = i % seg;
        if (in < voiced_len) {
            const double f0 = 80 + 160 * ((k * 37) % 11) / 10.0 +
                              8 * sin(2 * 3.14159265 * 5 * i / f.sample_rate);
            ph += 2 * 3.14159265 * f0 / f.sample_rate;
            double v = 0;
            for (int h = 1; h * f0 < 0.45 * f.sample_rate; h++)
                v += sin(h * ph) / (1 + fabs(h * f0 - 600) / 400) / h;
            x[i] = (float)(0.3 * v);
            f0_at[i] = (float)f0;
        } else {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)(0.1 * ((double)(rng >> 40) / 16777216.0 - 0.5));
            f0_at[i] = 0;
        }
    }
    const long T = frae_mel_frames(mel, n);
    const int w = f.n_mels + 2;
    float *m = malloc(sizeof(float) * (size_t)T * f.n_mels);
    float *feats = malloc(sizeof(float) * (size_t)T * w);
    frae_mel_compute(mel, x, n, m);
    for (long t = 0; t < T; t++) {
        const long centre = t * f.hop + f.win / 2;
        memcpy(feats + t * w, m + t * f.n_mels, sizeof(float) * f.n_mels);
        feats[t * w + f.n_mels] = centre < n ? f0_at[centre] : 0;
        feats[t * w + f.n_mels + 1] = centre < n && f0_at[centre] > 0;
    }
    void *mem = malloc(frae_vocoder_size(&f));
    frae_vocoder *v = frae_vocoder_init(mem, &f, 1, err, sizeof err);
    float *out = malloc(sizeof(float) * (size_t)f.hop);
    if (!v || !out) {
        fprintf(stderr, "frae_bench: vocoder: %s\n", err);
        return 1;
    }
    enum { MAX_ROUNDS = 1024 };
    static double r[MAX_ROUNDS];
    int rounds = 0;
    double sink = 0;
    const double start = now();
    do {
        const double t0 = now();
        frae_vocoder_reset(v);
        for (long t = 0; t < T; t++) {
            frae_vocoder_frame(v, feats + t * w, out);
            sink += out[0];
        }
        r[rounds++] = (now() - t0) / T;
    } while ((now() - start < seconds || rounds < 3) && rounds < MAX_ROUNDS);
    const double us = quantile(r, rounds, 0.5) * 1e6;
    /* and as decoding gives the audio: the vocoder, then its polish
     * (FRAE_POLISH_ROUNDS), through frae_audio_out */
    frae_audio_out *ao =
        frae_audio_out_create(&f, 1, 0, FRAE_POLISH_ROUNDS, err, sizeof err);
    float *ao_out = ao ? malloc(sizeof(float) * frae_audio_out_max(ao)) : NULL;
    if (!ao_out) {
        fprintf(stderr, "frae_bench: polish: %s\n", err);
        return 1;
    }
    int prounds = 0;
    const double pstart = now();
    do {
        const double t0 = now();
        frae_audio_out_begin(ao, ao_out);
        for (long t = 0; t < T; t++)
            if (frae_audio_out_frame(ao, feats + t * w, ao_out))
                sink += ao_out[0];
        frae_audio_out_end(ao, ao_out);
        r[prounds++] = (now() - t0) / T;
    } while ((now() - pstart < seconds || prounds < 3) && prounds < MAX_ROUNDS);
    const double pus = quantile(r, prounds, 0.5) * 1e6;
    /* the pitch tracker on the same voice, as the features run it (the
     * signal high-passed, then frame by frame), with every step and
     * without the refinement (FRAE_PITCH_YIN_HP) */
    double tus[2];
    const int span = frae_f0_span(&f);
    const long first = span / 2, last = n - span / 2; /* spans inside x */
    float *hp = malloc(sizeof(float) * (size_t)n);
    for (int k = 0; k < 2; k++) {
        frae_features fp = f;
        fp.pitch = k ? FRAE_PITCH_YIN_HP : 1;
        void *tmem = malloc(frae_f0_size(&fp));
        frae_f0 *tr = frae_f0_init(tmem, &fp);
        int trounds = 0;
        long tframes = 0;
        const double tstart = now();
        do {
            const double t0 = now();
            tframes = 0;
            frae_f0_filter(tr, x, hp, n);
            for (long c = first; c + span / 2 <= last; c += f.hop, tframes++) {
                float hz, voiced;
                frae_f0_frame_dehum(tr, x + c - span / 2, hp + c - span / 2,
                                    &hz, &voiced);
                sink += hz;
            }
            r[trounds++] = (now() - t0) / tframes;
        } while ((now() - tstart < seconds || trounds < 3) &&
                 trounds < MAX_ROUNDS);
        tus[k] = quantile(r, trounds, 0.5) * 1e6;
        free(tmem);
    }
    free(hp);
    printf("system=frae vocoder_us=%.2f rt_vocoder=%.0f polished_us=%.2f "
           "rt_polished=%.0f polish_rounds=%d pitch_us=%.2f rt_pitch=%.0f "
           "pitch_unrefined_us=%.2f rt_pitch_unrefined=%.0f frames=%ld "
           "rounds=%d sink=%g\n",
           us, 1e6 * f.hop / f.sample_rate / us, pus,
           1e6 * f.hop / f.sample_rate / pus, FRAE_POLISH_ROUNDS, tus[0],
           1e6 * f.hop / f.sample_rate / tus[0], tus[1],
           1e6 * f.hop / f.sample_rate / tus[1], T, rounds, sink);
    frae_audio_out_destroy(ao);
    free(ao_out);
    free(out), free(mem), free(feats), free(m), free(f0_at), free(x);
    frae_mel_destroy(mel);
    return 0;
}

int main(int argc, char **argv)
{
    int batch = 1, frames = 100, threads = 0, bf16 = 0;
    const char *codec = NULL;
    double seconds = 3.0;
    frae_feedback fb = FRAE_FEEDBACK_DETACHED;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--vocoder")) {
            for (int j = 1; j < argc; j++)
                if (!strcmp(argv[j], "--seconds") && j + 1 < argc)
                    seconds = atof(argv[j + 1]);
            return bench_vocoder(seconds > 0 ? seconds : 3.0);
        }
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
    /* not given: the library's default, the CPUs this process may use */
    c.threads = threads > 0 ? threads : frae_cpus_available();
    threads = c.threads;
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
    frae_step(
        m,
        &(frae_batch){
            .x = x, .nseq = batch, .nframes = frames, .kind = FRAE_STEP_TRAIN},
        &st); /* warm-up */
    long done = 0;
    double t0 = now(), t;
    do {
        const float *xb = x + (size_t)(done % nbatches) * batch * frames * D;
        frae_step(m,
                  &(frae_batch){.x = xb,
                                .nseq = batch,
                                .nframes = frames,
                                .kind = FRAE_STEP_TRAIN},
                  &st);
        done++;
        t = now() - t0;
    } while (t < seconds);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("system=frae family=%s batch=%d threads=%d feedback=%s "
           "frames_per_s=%.1f peak_rss_mb=%.1f model_mb=%.1f isa=%s "
           "params=%zu loss=%.6f\n",
           gru_family ? "gru" : "dense", batch, threads,
           fb == FRAE_FEEDBACK_FULL ? "full" : "detached",
           (double)done * batch * frames / t, ru.ru_maxrss / 1024.0,
           frae_bytes_allocated(m) / 1048576.0, frae_isa_name(m),
           frae_param_count(m), st.mse);
    free(x);
    frae_destroy(m);
    return 0;
}
