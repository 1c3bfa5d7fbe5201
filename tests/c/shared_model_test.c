/* N threads code N streams over one shared const model, each to the bit
 * what the same stream gives coded alone.  Two small models are trained a
 * few steps (so their weights are not the init's), then only their
 * weights, const frae_net *, go to the threads: each thread codes its own
 * frames through the frame codec (an encoder and a decoder), the stream
 * coder (a .fbs stream and back; the entropy-coded model with the search
 * and DTX on), for the entropy-coded model real-time packets and the
 * packet decoder, and the forward pass on a forward state of its own
 * (frae_forward_run), which must also equal frae_forward on the model.  Run in every build, and under ThreadSanitizer by make
 * test-tsan (tests/threads_test.sh): there any access to shared memory
 * that is not read only is a race it reports, and the test fails.
 *
 * A program of its own, linked against the public library only: the unit
 * tests' binary counts allocations by interposing malloc, which
 * ThreadSanitizer cannot run under.  One "ok" or "FAIL" line per check,
 * then "N passed, N failed" (tests/run_all.sh).
 * Usage: shared_model_test */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frae_codec.h"

#define THREADS 4
#define FRAMES 120
#define D 16

static int passed, failed;

static void check(int cond, const char *what)
{
    if (cond)
        passed++, printf("    ok   %s\n", what);
    else
        failed++, printf("    FAIL %s\n", what);
}

/* Smooth synthetic frames, different per seed: sums of slow sines, and
 * with pitch an f0 gliding over 90..230 Hz, unvoiced one frame in 5. */
static void frames_for(int seed, int width, int pitch, float *x, int T)
{
    for (int t = 0; t < T; t++) {
        for (int d = 0; d < D; d++)
            x[(size_t)t * width + d] =
                0.6f * sinf(0.05f * (float)(t * (seed + 2)) + 0.4f * d) +
                0.3f * cosf(0.11f * (float)t + 0.7f * (float)(d * seed));
        if (pitch) {
            const int voiced = (t + seed) % 5 != 0;
            x[(size_t)t * width + D] =
                voiced ? 160.0f + 70.0f * sinf(0.03f * (float)(t + 9 * seed))
                       : 0.0f;
            x[(size_t)t * width + D + 1] = voiced ? 1.0f : 0.0f;
        }
    }
}

/* A model trained a few Adam steps on frames of seeds 10.. */
static frae_model *trained(const frae_config *c)
{
    char err[256];
    frae_model *m = frae_create(c, err, sizeof err);
    if (!m) {
        printf("    FAIL create: %s\n", err);
        return NULL;
    }
    const int T = 40;
    float *x = malloc(sizeof(float) * (size_t)c->batch * T * D);
    for (int b = 0; b < c->batch; b++)
        frames_for(10 + b, D, 0, x + (size_t)b * T * D, T);
    frae_stats st;
    for (int s = 0; s < 3; s++)
        frae_step(m,
                  &(frae_batch){.x = x,
                                .nseq = c->batch,
                                .nframes = T,
                                .kind = FRAE_STEP_TRAIN},
                  &st);
    free(x);
    return m;
}

/* One stream's coding, what a thread (or the serial run) makes. */
typedef struct {
    const frae_net *net;
    int seed, ranged;
    int width;
    float *x;               /* [FRAMES][width] in */
    unsigned char *codes;   /* frame codec: code bytes, and */
    float *recon, *decoded; /* the encoder's and the decoder's frames */
    unsigned char *stream;  /* the stream coder's bytes */
    size_t stream_n, stream_cap;
    float *srecon, *sdecoded;
    unsigned char *packets; /* real-time packets, back to back */
    size_t packets_n, packets_cap;
    float *pdecoded;
    long pframes;
    float *xd, *y; /* the frames' D values, and their forward */
    int rc;        /* 0, or the step that failed */
} job;

static int append(unsigned char *dst, size_t *n, size_t cap,
                  const unsigned char *src, size_t len)
{
    if (*n + len > cap)
        return -1;
    memcpy(dst + *n, src, len);
    *n += len;
    return 0;
}

static int frame_codec(job *j)
{
    const size_t cb = frae_code_bytes(j->net);
    frae_encoder *e = frae_encoder_create(j->net);
    frae_decoder *d = frae_decoder_create(j->net);
    int rc = e && d ? 0 : 1;
    for (int t = 0; !rc && t < FRAMES; t++) {
        const size_t at = (size_t)t * j->width;
        frae_encode_frame(e, j->x + at, j->codes + (size_t)t * cb,
                          j->recon + at);
        rc = frae_decode_frame(d, j->codes + (size_t)t * cb, j->decoded + at)
                 ? 2
                 : 0;
    }
    frae_encoder_destroy(e);
    frae_decoder_destroy(d);
    return rc;
}

static int stream_coder(job *j)
{
    char err[256];
    frae_stream_options o;
    frae_stream_options_default(&o);
    if (j->ranged)
        o.search = 2, o.dtx = 1, o.packet_frames = 25;
    frae_stream_encoder *e =
        frae_stream_encoder_create(j->net, &o, 1, FRAMES, 1, err, sizeof err);
    if (!e)
        return 10;
    size_t n;
    const unsigned char *b = frae_stream_encoder_bytes(e, &n);
    int rc = append(j->stream, &j->stream_n, j->stream_cap, b, n) ? 11 : 0;
    for (int t = 0; !rc && t < FRAMES; t++) {
        const size_t at = (size_t)t * j->width;
        frae_stream_encode(e, j->x + at, j->ranged && t % 9 == 4,
                           j->srecon + at);
        b = frae_stream_encoder_bytes(e, &n);
        rc = append(j->stream, &j->stream_n, j->stream_cap, b, n) ? 12 : 0;
    }
    if (!rc && frae_stream_encoder_end(e))
        rc = 13;
    if (!rc) {
        b = frae_stream_encoder_bytes(e, &n);
        rc = append(j->stream, &j->stream_n, j->stream_cap, b, n) ? 14 : 0;
    }
    frae_stream_encoder_destroy(e);
    if (rc)
        return rc;
    frae_stream_reader *r = frae_stream_reader_create(j->net);
    if (!r)
        return 15;
    long got = 0, k;
    size_t used, need;
    const float *f;
    uint32_t seq;
    while ((k = frae_stream_read(r, j->stream, j->stream_n, 1, &used, &need, &f,
                                 &seq, err, sizeof err)) > 0 &&
           got + k <= FRAMES) {
        memcpy(j->sdecoded + (size_t)got * j->width, f,
               sizeof(float) * (size_t)k * j->width);
        got += k;
    }
    frae_stream_reader_destroy(r);
    return k == 0 && got == FRAMES ? 0 : 16;
}

/* Real-time packets (stream version 5) through the packet decoder, one
 * lost on the way. */
static int packets(job *j)
{
    char err[256];
    frae_stream_options o;
    frae_stream_options_default(&o);
    o.datagrams = 1, o.packet_frames = 4, o.resync_packets = 5;
    frae_stream_encoder *e =
        frae_stream_encoder_create(j->net, &o, 1, FRAMES, 1, err, sizeof err);
    if (!e)
        return 20;
    frae_packet_decoder *d = frae_packet_decoder_create(
        j->net, frae_stream_encoder_stream(e), err, sizeof err);
    int rc = d ? 0 : 21;
    long got = 0, index = 0;
    const long cap = FRAE_PACKET_DECODE_MAX(4);
    for (int t = 0; !rc && t < FRAMES; t++) {
        frae_stream_encode(e, j->x + (size_t)t * j->width, 0, NULL);
        size_t n;
        const unsigned char *p = frae_stream_encoder_packet(e, &n);
        if (!n)
            continue;
        rc = append(j->packets, &j->packets_n, j->packets_cap, p, n) ? 22 : 0;
        if (index++ == 7) /* lost: the decoder finds the gap */
            continue;
        if (!rc && got <= FRAMES)
            got += frae_packet_decode(
                d, p, n, j->pdecoded + (size_t)got * j->width, cap);
    }
    if (!rc && frae_stream_encoder_end(e))
        rc = 23;
    j->pframes = got;
    frae_packet_decoder_destroy(d);
    frae_stream_encoder_destroy(e);
    return rc;
}

static int forward(job *j)
{
    frae_forward_state *s = frae_forward_state_create(j->net, 1);
    int rc = !s                                                ? 30
             : frae_forward_run(s, j->xd, j->y, 1, FRAMES / 2) ? 31
             : frae_forward_run(s, j->xd + (size_t)FRAMES / 2 * D,
                                j->y + (size_t)FRAMES / 2 * D, 1,
                                FRAMES - FRAMES / 2)
                 ? 32
                 : 0;
    frae_forward_state_destroy(s);
    return rc;
}

static void *run_job(void *arg)
{
    job *j = arg;
    j->rc = forward(j);
    if (!j->rc)
        j->rc = frame_codec(j);
    if (!j->rc)
        j->rc = stream_coder(j);
    if (!j->rc && j->ranged)
        j->rc = packets(j);
    return NULL;
}

static void job_init(job *j, const frae_net *net, int seed)
{
    const frae_config *c = frae_net_config(net);
    memset(j, 0, sizeof *j);
    j->net = net;
    j->seed = seed;
    j->ranged = c->prior_hidden > 0;
    j->width = D + (c->pitch ? 2 : 0);
    const size_t nf = (size_t)FRAMES * j->width;
    j->x = malloc(sizeof(float) * nf);
    frames_for(seed, j->width, c->pitch, j->x, FRAMES);
    j->xd = malloc(sizeof(float) * FRAMES * D);
    j->y = calloc((size_t)FRAMES * D, sizeof(float));
    for (int t = 0; t < FRAMES; t++)
        memcpy(j->xd + (size_t)t * D, j->x + (size_t)t * j->width,
               sizeof(float) * D);
    j->codes = calloc((size_t)FRAMES, frae_code_bytes(net));
    j->recon = calloc(nf, sizeof(float));
    j->decoded = calloc(nf, sizeof(float));
    j->srecon = calloc(nf, sizeof(float));
    j->sdecoded = calloc(nf, sizeof(float));
    /* one packet's worth per frame is far more than any stream takes */
    j->stream_cap = j->packets_cap =
        4096 + (size_t)FRAMES * (frae_code_bytes(net) + 64);
    j->stream = malloc(j->stream_cap);
    j->packets = malloc(j->packets_cap);
    j->pdecoded = calloc(nf + (size_t)FRAE_PACKET_DECODE_MAX(4) * j->width,
                         sizeof(float));
}

static void job_free(job *j)
{
    free(j->x), free(j->codes), free(j->recon), free(j->decoded);
    free(j->stream), free(j->srecon), free(j->sdecoded);
    free(j->packets), free(j->pdecoded), free(j->xd), free(j->y);
}

static int same(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

static void shared_model(const char *name, const frae_config *c)
{
    char what[256];
    frae_model *m = trained(c);
    if (!m) {
        failed++;
        return;
    }
    const frae_net *net = frae_model_net(m); /* all the threads get */
    job alone[THREADS], shared[THREADS];
    for (int i = 0; i < THREADS; i++) { /* each stream on its own, serially */
        job_init(&alone[i], net, i + 1);
        run_job(&alone[i]);
    }
    pthread_t th[THREADS];
    int started = 1;
    for (int i = 0; i < THREADS; i++) {
        job_init(&shared[i], net, i + 1);
        started &= pthread_create(&th[i], NULL, run_job, &shared[i]) == 0;
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    snprintf(what, sizeof what, "%s: %d threads started over one model", name,
             THREADS);
    check(started, what);
    int ok_rc = 1, frames_same = 1, stream_same = 1, packets_same = 1;
    int closed_loop = 1, differ = 0, forward_same = 1, model_same = 1;
    float *ym = malloc(sizeof(float) * FRAMES * D);
    for (int i = 0; i < THREADS; i++) {
        job *a = &alone[i], *s = &shared[i];
        const size_t nb = sizeof(float) * FRAMES * a->width;
        ok_rc &= a->rc == 0 && s->rc == 0;
        if (a->rc || s->rc) {
            printf("    (%s stream %d: alone step %d, threaded step %d)\n",
                   name, i, a->rc, s->rc);
            continue;
        }
        forward_same &= same(a->y, s->y, sizeof(float) * FRAMES * D);
        frae_reset(m); /* the model's own forward, on its own buffers */
        model_same &= frae_forward(m, a->xd, ym, 1, FRAMES) == 0 &&
                      same(ym, a->y, sizeof(float) * FRAMES * D);
        frames_same &=
            same(a->codes, s->codes, FRAMES * frae_code_bytes(net)) &&
            same(a->recon, s->recon, nb) && same(a->decoded, s->decoded, nb);
        stream_same &= a->stream_n == s->stream_n &&
                       same(a->stream, s->stream, a->stream_n) &&
                       same(a->srecon, s->srecon, nb) &&
                       same(a->sdecoded, s->sdecoded, nb);
        packets_same &= a->packets_n == s->packets_n &&
                        same(a->packets, s->packets, a->packets_n) &&
                        a->pframes == s->pframes &&
                        same(a->pdecoded, s->pdecoded,
                             sizeof(float) * (size_t)a->pframes * a->width);
        /* what the decoders gave is what the encoders said they would,
         * and the frame codec's frames are the forward pass's */
        for (int t = 0; t < FRAMES; t++)
            closed_loop &= same(a->decoded + (size_t)t * a->width,
                                a->y + (size_t)t * D, sizeof(float) * D);
        closed_loop &= same(a->decoded, a->recon, nb) &&
                       same(a->sdecoded, a->srecon, nb) &&
                       (!a->ranged || a->pframes == FRAMES);
        if (i > 0)
            differ |=
                !same(alone[0].codes, a->codes, FRAMES * frae_code_bytes(net));
    }
    snprintf(what, sizeof what, "%s: every stream coded, alone and threaded",
             name);
    check(ok_rc, what);
    snprintf(what, sizeof what,
             "%s: the forward pass on forward states, threaded = alone = "
             "frae_forward on the model, to the bit",
             name);
    check(ok_rc && forward_same && model_same, what);
    snprintf(what, sizeof what,
             "%s: the frame codec's codes and frames, threaded = alone, to "
             "the bit",
             name);
    check(ok_rc && frames_same, what);
    snprintf(what, sizeof what,
             "%s: the stream coder's bytes and frames%s, threaded = alone",
             name, c->prior_hidden > 0 ? " (search, DTX)" : "");
    check(ok_rc && stream_same, what);
    if (c->prior_hidden > 0) {
        snprintf(what, sizeof what,
                 "%s: real-time packets and the packet decoder's frames "
                 "(a loss), threaded = alone",
                 name);
        check(ok_rc && packets_same, what);
    }
    snprintf(what, sizeof what,
             "%s: each decoder gives its encoder's frames, the frame "
             "codec's = the forward pass's; the streams differ",
             name);
    check(ok_rc && closed_loop && differ, what);
    free(ym);
    for (int i = 0; i < THREADS; i++)
        job_free(&alone[i]), job_free(&shared[i]);
    frae_destroy(m);
}

int main(void)
{
    frae_config c;
    frae_config_default(&c);
    c.frame_dim = D;
    c.history = 2;
    c.n_enc_hidden = 1, c.enc_hidden[0] = 32;
    c.latent_dim = 8;
    c.n_dec_hidden = 1, c.dec_hidden[0] = 32;
    c.quantizer = FRAE_QUANT_BINARY;
    c.batch = 4, c.window = 10;
    c.threads = 2; /* the model's workers, which the codec never uses */
    shared_model("dense, binary", &c);

    frae_config g;
    frae_config_default_gru(&g);
    g.frame_dim = D;
    g.enc_hidden[0] = 24, g.dec_hidden[0] = 24;
    g.latent_dim = 8;
    g.quantizer = FRAE_QUANT_UNIFORM, g.quant_levels = 5;
    g.prior_hidden = 16, g.prior_ar = 1, g.rate_lambda = 0.01f;
    g.pitch = 1, g.pitch_ranged = FRAE_PITCH_CODER_RANGED;
    g.normalize = 1;
    g.batch = 4, g.window = 10;
    g.threads = 2;
    shared_model("gru, prior, pitch", &g);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
