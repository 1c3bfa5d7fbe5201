/* The streaming codec: closed-loop exactness, caller-owned states, threads,
 * determinism across instruction sets, and the bitstream's defences. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/kernels.h"
#include "io/formats.h"

#include "codec/codec_internal.h"
#include "codec/container.h"
#include "test_util.h"
#include "tests.h"

static void codec_config(frae_config *c, frae_quantizer q, int levels)
{
    const int enc[2] = {40, 24}, dec[2] = {24, 40};
    tiny_config(c, 7, 3, 2, enc, 5, 2, dec);
    c->quantizer = q;
    c->quant_levels = levels;
    c->training = 0;
    c->batch = 3;
}

/* decode(encode(x)) == the encoder's closed-loop output == frae_forward. */
int test_codec_roundtrip(void)
{
    int failures = 0;
    static const struct {
        frae_quantizer q;
        int levels;
        const char *name;
        int bits;
    } qs[] = {{FRAE_QUANT_BINARY, 0, "binary", 1},
              {FRAE_QUANT_UNIFORM, 5, "uniform 5", 3},
              {FRAE_QUANT_UNIFORM, 256, "uniform 256", 8},
              {FRAE_QUANT_NONE, 0, "none", 32}};
    const int nseq = 3, T = 40, D = 7;
    for (size_t kk = 0; kk < 2 * sizeof qs / sizeof *qs; kk++) {
        const size_t k = kk % (sizeof qs / sizeof *qs);
        const int gru = kk >= sizeof qs / sizeof *qs;
        frae_config c;
        codec_config(&c, qs[k].q, qs[k].levels);
        c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        CHECK(frae_code_bits(frae_model_net(m)) == qs[k].bits, "%s: %d bits",
              qs[k].name, frae_code_bits(frae_model_net(m)));
        float *x = synth(nseq, T, D, 30 + k);
        float *y = malloc(sizeof(float) * nseq * T * D);
        frae_forward(m, x, y, nseq, T);
        /* states in caller memory */
        void *emem = malloc(frae_encoder_size(frae_model_net(m)));
        void *dmem = malloc(frae_decoder_size(frae_model_net(m)));
        frae_encoder *e = frae_encoder_init(emem, frae_model_net(m));
        frae_decoder *d = frae_decoder_init(dmem, frae_model_net(m));
        size_t cb = frae_code_bytes(frae_model_net(m));
        unsigned char *code = malloc(cb);
        float recon[7], out[7];
        int same_recon = 1, same_out = 1;
        for (int s = 0; s < nseq; s++) {
            frae_encoder_reset(e);
            frae_decoder_reset(d);
            for (int t = 0; t < T; t++) {
                const float *xt = x + ((size_t)s * T + t) * D;
                const float *yt = y + ((size_t)s * T + t) * D;
                frae_encode_frame(e, xt, code, recon);
                CHECK(frae_decode_frame(d, code, out) == 0, "decode failed");
                same_recon &= !memcmp(recon, yt, sizeof recon);
                same_out &= !memcmp(out, yt, sizeof out);
            }
        }
        CHECK(same_recon, "%s: encoder's closed loop differs from forward",
              qs[k].name);
        CHECK(same_out, "%s: decode(encode(x)) differs from forward",
              qs[k].name);
        printf("    %s %-11s %2d bits/value, %zu bytes/frame: "
               "decode(encode(x)) == forward to the bit\n",
               gru ? "gru  " : "dense", qs[k].name, qs[k].bits, cb);
        free(emem), free(dmem), free(code), free(x), free(y);
        frae_destroy(m);
    }
    /* a uniform index no encoder makes is refused */
    frae_config c;
    codec_config(&c, FRAE_QUANT_UNIFORM, 5);
    frae_model *m = create_or_die(&c);
    frae_decoder *d = frae_decoder_create(frae_model_net(m));
    unsigned char bad[2] = {0xff, 0xff}; /* index 7 >= 5 */
    float out[7];
    CHECK(frae_decode_frame(d, bad, out) == -1, "out-of-range code accepted");
    frae_decoder_destroy(d);
    frae_destroy(m);
    return failures;
}

typedef struct {
    const frae_model *m;
    const float *x;
    int T;
    unsigned char *codes;
} enc_job;

static void *encode_job(void *arg)
{
    enc_job *j = arg;
    frae_encoder *e = frae_encoder_create(frae_model_net(j->m));
    size_t cb = frae_code_bytes(frae_model_net(j->m));
    for (int t = 0; t < j->T; t++)
        frae_encode_frame(e,
                          j->x + (size_t)t * frae_get_config(j->m)->frame_dim,
                          j->codes + (size_t)t * cb, NULL);
    frae_encoder_destroy(e);
    return NULL;
}

/* Two encoders of one model in two threads give what one gives alone;
 * the same input gives the same codes on every instruction set. */
int test_codec_threads_and_isas(void)
{
    int failures = 0;
    const int T = 200, D = 7;
    for (int gru = 0; gru <= 1; gru++) {
        frae_config c;
        codec_config(&c, FRAE_QUANT_UNIFORM, 9);
        c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        frae_model *m = create_or_die(&c);
        float *x = synth(2, T, D, 77);
        size_t cb = frae_code_bytes(frae_model_net(m));
        unsigned char *alone = malloc(cb * T), *a = malloc(cb * T),
                      *b = malloc(cb * T);
        enc_job j0 = {m, x, T, alone};
        encode_job(&j0);
        enc_job ja = {m, x, T, a}, jb = {m, x + (size_t)T * D, T, b};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, encode_job, &ja);
        pthread_create(&tb, NULL, encode_job, &jb);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK(!memcmp(a, alone, cb * T), "a second thread changed the codes");
        frae_isa isas[3];
        int nisa = available_isas(isas);
        for (int i = 0; i < nisa; i++) {
            frae_model *mi = model_on_isa(m, &c, isas[i]);
            enc_job ji = {mi, x, T, b};
            encode_job(&ji);
            CHECK(!memcmp(b, alone, cb * T), "%s codes differ",
                  frae_isa_name(mi));
            CHECK(frae_model_hash(frae_model_net(mi)) ==
                      frae_model_hash(frae_model_net(m)),
                  "hash depends on ISA");
            frae_destroy(mi);
        }
        printf("    %s: same codes from 2 threads and on %d ISA(s)\n",
               gru ? "gru" : "dense", nisa);
        free(alone), free(a), free(b), free(x);
        frae_destroy(m);
    }
    return failures;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

int test_bitstream(void)
{
    int failures = 0;
    const int T = 25, D = 7, nseq = 2;
    frae_config c;
    codec_config(&c, FRAE_QUANT_UNIFORM, 5);
    frae_model *m = create_or_die(&c);
    float *x = synth(nseq, T, D, 5);
    size_t cb = frae_code_bytes(frae_model_net(m));
    unsigned char *codes = calloc((size_t)nseq * T, cb);
    frae_encoder *e = frae_encoder_create(frae_model_net(m));
    for (int s = 0; s < nseq; s++) {
        frae_encoder_reset(e);
        for (int t = 0; t < T; t++)
            frae_encode_frame(e, x + ((size_t)s * T + t) * D,
                              codes + ((size_t)s * T + t) * cb, NULL);
    }
    frae_stream h;
    frae_stream_header(frae_model_net(m), nseq, T, 0, &h);
    size_t n = frae_stream_bytes(&h);
    CHECK(n == FRAE_STREAM_HEADER + (nseq * T * 5 * 3 + 7) / 8 + 4,
          "stream size %zu is not header + %d bits per frame + CRC", n, 15);
    unsigned char *buf = malloc(n), *mut = malloc(n);
    frae_stream_write(buf, &h, codes);
    frae_stream s;
    char err[256];
    CHECK(!frae_stream_parse(buf, n, &s, err, sizeof err) &&
              !frae_stream_check_model(&s, frae_model_net(m), err, sizeof err),
          "good stream: %s", err);
    unsigned char code[16];
    int same = 1;
    for (int f = 0; f < nseq * T; f++) {
        frae_stream_frame_code(&s, (uint64_t)f, code);
        same &= !memcmp(code, codes + (size_t)f * cb, cb);
    }
    CHECK(same, "frame codes do not survive the stream");

    /* each defence, with its message */
    CHECK(frae_stream_parse(buf, n - 3, &s, err, sizeof err) &&
              strstr(err, "truncated"),
          "truncated: %s", err);
    memcpy(mut, buf, n);
    mut[FRAE_STREAM_HEADER + 3] ^= 4;
    CHECK(frae_stream_parse(mut, n, &s, err, sizeof err) &&
              strstr(err, "corrupted"),
          "flipped bit: %s", err);
    CHECK(frae_stream_parse("RIFF....WAVEfmt ", 16, &s, err, sizeof err) &&
              strstr(err, "not a frae bitstream"),
          "foreign: %s", err);
    memcpy(mut, buf, n);
    mut[6] = 5;
    CHECK(frae_stream_parse(mut, n, &s, err, sizeof err) &&
              strstr(err, "version 5; this frae reads versions 2, 3 and 4"),
          "version: %s", err);
    mut[6] = 3; /* a version-2 stream relabelled: its header CRC is wrong */
    CHECK(frae_stream_parse(mut, n, &s, err, sizeof err) &&
              strstr(err, "header's CRC"),
          "version 3: %s", err);
    mut[6] = 1;
    CHECK(frae_stream_parse(mut, n, &s, err, sizeof err) &&
              strstr(err, "version 1, from frae 0.1"),
          "version 1: %s", err);
    frae_config c2 = c;
    c2.seed = 99; /* same shape, other weights */
    frae_model *other = create_or_die(&c2);
    CHECK(!frae_stream_parse(buf, n, &s, err, sizeof err) &&
              frae_stream_check_model(&s, frae_model_net(other), err,
                                      sizeof err) &&
              strstr(err, "another model"),
          "other model: %s", err);
    frae_destroy(other);
    /* mutations: never a crash, never an unnoticed change */
    uint64_t r = 1;
    int caught = 0;
    for (int i = 0; i < 5000; i++) {
        size_t len = n;
        memcpy(mut, buf, n);
        int kind = (int)(lcg(&r) % 3);
        if (kind == 0)
            mut[lcg(&r) % n] ^= (unsigned char)(1 + lcg(&r) % 255);
        else if (kind == 1)
            len = lcg(&r) % n;
        else
            mut[lcg(&r) % FRAE_STREAM_HEADER] = (unsigned char)lcg(&r);
        if (frae_stream_parse(mut, len, &s, err, sizeof err) ||
            frae_stream_check_model(&s, frae_model_net(m), err, sizeof err))
            caught++;
        else if (len != n || memcmp(mut, buf, n))
            failures++, printf("    FAIL mutation %d went unnoticed\n", i);
    }
    printf("    5000 stream mutations: %d refused, the rest unchanged bytes\n",
           caught);
    frae_encoder_destroy(e);
    free(buf), free(mut), free(codes), free(x);
    frae_destroy(m);
    return failures;
}

/* A bf16 model computes exactly what an f32 model holding the rounded
 * weights computes, on every ISA, batched or one frame at a time, so their
 * streams are interchangeable; it refuses to train; its checkpoint holds
 * BF16 tensors and loads back as the same model. */
int test_bf16_weights(void)
{
    int failures = 0;
    const int enc[2] = {150, 40}, dec[2] = {40, 150};
    const int nseq = 3, T = 30, D = 12;
    frae_config c;
    tiny_config(&c, D, 3, 2, enc, 5, 2, dec);
    c.quantizer = FRAE_QUANT_UNIFORM;
    c.quant_levels = 4;
    c.training = 0;
    c.batch = nseq;
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    size_t np = frae_param_count(m);
    float *p = malloc(sizeof(float) * np), *p16 = malloc(sizeof(float) * np);
    frae_get_params(m, p);
    frae_destroy(m);

    frae_config cb = c;
    cb.weights = FRAE_WEIGHTS_BF16;
    cb.training = 1;
    char err[256] = "";
    CHECK(!frae_create(&cb, err, sizeof err) && strstr(err, "inference only"),
          "a training bf16 model was not refused (%s)", err);
    cb.training = 0;

    float *x = synth(nseq, T, D, 77);
    float *y16 = malloc(sizeof(float) * nseq * T * D);
    float *y32 = malloc(sizeof(float) * nseq * T * D);
    frae_isa isas[3];
    int nisa = available_isas(isas);
    for (int ii = 0; ii < nisa; ii++) {
        cb.isa = c.isa = isas[ii];
        frae_model *m16 = create_or_die(&cb), *m32 = create_or_die(&c);
        frae_set_params(m16, p);
        frae_get_params(m16, p16);
        int rounded = 1, changed = 0;
        for (size_t i = 0; i < np; i++) {
            rounded &= frae_f32_to_bf16(p16[i]) == frae_f32_to_bf16(p[i]) ||
                       p16[i] == p[i];
            changed |= p16[i] != p[i];
        }
        CHECK(rounded && changed, "%s: weights not rounded to bf16",
              frae_isa_name(m16));
        frae_set_params(m32, p16);
        CHECK(frae_model_hash(frae_model_net(m16)) ==
                  frae_model_hash(frae_model_net(m32)),
              "bf16 and rounded f32 models hash differently");
        frae_forward(m16, x, y16, nseq, T);
        frae_forward(m32, x, y32, nseq, T);
        CHECK(!memcmp(y16, y32, sizeof(float) * nseq * T * D),
              "%s: batched bf16 forward differs", frae_isa_name(m16));

        /* one frame at a time: encode with bf16, decode with f32 */
        frae_encoder *e = frae_encoder_create(frae_model_net(m16));
        frae_decoder *d = frae_decoder_create(frae_model_net(m32));
        unsigned char code[8];
        float recon[12], out[12];
        int same = 1;
        for (int s = 0; s < nseq; s++) {
            frae_encoder_reset(e);
            frae_decoder_reset(d);
            for (int t = 0; t < T; t++) {
                const size_t at = ((size_t)s * T + t) * D;
                frae_encode_frame(e, x + at, code, recon);
                frae_decode_frame(d, code, out);
                same &= !memcmp(recon, y32 + at, sizeof recon) &&
                        !memcmp(out, y32 + at, sizeof out);
            }
        }
        CHECK(same, "%s: bf16 encoder and f32 decoder disagree",
              frae_isa_name(m16));
        frae_encoder_destroy(e);
        frae_decoder_destroy(d);
        frae_destroy(m16);
        frae_destroy(m32);
    }

    /* checkpoint: BF16 tensors, about half the bytes, same model back */
    char path16[] = "/tmp/frae-bf16-XXXXXX";
    int fd = mkstemp(path16);
    close(fd);
    char path32[sizeof path16 + 4];
    snprintf(path32, sizeof path32, "%s.f32", path16);
    frae_model *m16 = create_or_die(&cb), *m32 = create_or_die(&c);
    frae_set_params(m16, p);
    frae_set_params(m32, p);
    CHECK(!frae_save(m16, path16, 0, NULL, 0, NULL, 0, err, sizeof err),
          "save: %s", err);
    CHECK(!frae_save(m32, path32, 0, NULL, 0, NULL, 0, err, sizeof err),
          "save: %s", err);
    struct stat s16, s32;
    stat(path16, &s16), stat(path32, &s32);
    CHECK(s16.st_size < s32.st_size * 6 / 10,
          "bf16 checkpoint %lld bytes vs f32 %lld", (long long)s16.st_size,
          (long long)s32.st_size);
    frae_model *back = frae_load(path16, &cb, err, sizeof err);
    CHECK(back != NULL, "load: %s", err);
    if (back) {
        float *pb = malloc(sizeof(float) * np);
        frae_get_params(back, pb);
        CHECK(frae_get_config(back)->weights == FRAE_WEIGHTS_BF16,
              "loaded model is not bf16");
        CHECK(!memcmp(pb, p16, sizeof(float) * np),
              "bf16 checkpoint did not load back the same weights");
        free(pb);
        frae_destroy(back);
    }
    unlink(path16), unlink(path32);
    frae_destroy(m16);
    frae_destroy(m32);
    free(x), free(y16), free(y32), free(p), free(p16);
    printf("    bf16 model == f32 model on rounded weights on %d ISA(s); "
           "checkpoint %lld vs %lld bytes\n",
           nisa, (long long)s16.st_size, (long long)s32.st_size);
    return failures;
}

/* Pitch (cfg.pitch): frames of D + 2; the envelope still decodes to the
 * bit of frae_forward, f0 is quantized within a step of its track, the
 * decoder repeats the encoder's f0 exactly, and codes no encoder makes are
 * refused. */
int test_codec_pitch(void)
{
    int failures = 0;
    const int T = 300, D = 7, W = D + 2;
    for (int gru = 0; gru <= 1; gru++) {
        frae_config c;
        codec_config(&c, FRAE_QUANT_BINARY, 0);
        c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        c.batch = 1;
        c.pitch = 1;
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        CHECK(frae_bits_per_frame(m) == 5 + FRAE_PITCH_BITS,
              "%g bits per frame", frae_bits_per_frame(m));
        CHECK(frae_code_bytes(frae_model_net(m)) == 2, "%zu code bytes",
              frae_code_bytes(frae_model_net(m)));
        float *x = synth(1, T, D, 77), *y = malloc(sizeof(float) * T * D);
        frae_forward(m, x, y, 1, T);
        float *frames = malloc(sizeof(float) * T * W);
        for (int t = 0; t < T; t++) {
            memcpy(frames + t * W, x + t * D, sizeof(float) * D);
            /* a voice gliding 90 -> 300 Hz with a jump, gaps unvoiced,
             * and frames no tracker makes (NaN, negative) unvoiced */
            int voiced = (t / 40) % 3 != 2;
            float f0 = (float)(90 * pow(300.0 / 90, t / (double)T));
            if (t >= 150 && t < 200)
                f0 *= 1.6f;
            frames[t * W + D] = t == 17 ? NAN : t == 18 ? -5.0f : f0;
            frames[t * W + D + 1] = voiced ? 1.0f : 0.0f;
        }
        frae_encoder *e = frae_encoder_create(frae_model_net(m));
        frae_decoder *d = frae_decoder_create(frae_model_net(m));
        unsigned char code[2];
        float recon[9], out[9];
        int same_env = 1, same_pitch = 1, voicing_ok = 1, late = 0;
        double worst = 0;
        for (int t = 0; t < T; t++) {
            const float *ft = frames + t * W;
            frae_encode_frame(e, ft, code, recon);
            CHECK(frae_decode_frame(d, code, out) == 0, "frame %d refused", t);
            same_env &= !memcmp(out, y + t * D, sizeof(float) * D) &&
                        !memcmp(recon, out, sizeof(float) * D);
            same_pitch &= !memcmp(recon + D, out + D, 2 * sizeof(float));
            int voiced = ft[D + 1] >= 0.5f && ft[D] > 0;
            voicing_ok &= out[D + 1] == (voiced ? 1.0f : 0.0f) &&
                          (voiced || out[D] == 0.0f);
            /* within the finest step once the loop has caught up (the
             * largest step is half an octave: a jump takes a few frames) */
            if (voiced && t % 40 > 4 && !(t >= 150 && t < 155)) {
                double err = fabs(log2(out[D] / ft[D]));
                worst = fmax(worst, err);
                late += err > 0.0151;
            }
        }
        CHECK(same_env, "%s: the envelope differs from frae_forward",
              gru ? "gru" : "dense");
        CHECK(same_pitch, "decoder's f0 differs from the encoder's");
        CHECK(voicing_ok, "voicing not kept");
        CHECK(late == 0,
              "%d tracked frames off by more than 0.015 octave "
              "(worst %.4f)",
              late, worst);
        /* pitch bits on an unvoiced frame: no encoder makes that code */
        frae_decoder_reset(d);
        /* bits 0-4 the latent, 5 voicing (0), 6-8 the step (001) */
        unsigned char bad[2] = {0x40, 0x00};
        CHECK(frae_decode_frame(d, bad, out) == -1,
              "step bits on an unvoiced frame were accepted");
        /* a stream: flag bit 1, 9 bits a frame, checked against the model */
        frae_stream s;
        frae_stream_header(frae_model_net(m), 1, 3, 1, &s);
        CHECK(s.flags == (1 | FRAE_STREAM_PITCH), "flags %d", s.flags);
        CHECK(frae_stream_bytes(&s) == FRAE_STREAM_HEADER + 4 + 4,
              "%zu stream bytes for 27 bits", frae_stream_bytes(&s));
        c.pitch = 0;
        frae_model *plain = create_or_die(&c);
        char err[256] = "";
        CHECK(frae_stream_check_model(&s, frae_model_net(plain), err,
                                      sizeof err) &&
                  strstr(err, "carries pitch"),
              "a pitch stream passed a model without pitch: '%s'", err);
        frae_destroy(plain);
        printf("    %s: 5 + %d bits/frame, envelope == forward to the bit, "
               "f0 tracked within %.4f octave\n",
               gru ? "gru  " : "dense", FRAE_PITCH_BITS, worst);
        frae_encoder_destroy(e), frae_decoder_destroy(d);
        free(x), free(y), free(frames);
        frae_destroy(m);
    }
    return failures;
}

/* ---- entropy-coded streams (a model with a prior) ------------------------ */

/* frames of width D (+ f0 and voicing with pitch): synthetic envelopes and
 * a voice gliding up with unvoiced gaps */
static float *ranged_frames(int nseq, int T, int D, int pitch, uint64_t seed)
{
    const int W = D + 2 * pitch;
    float *x = synth(nseq, T, D, seed),
          *f = malloc(sizeof(float) * nseq * T * W);
    for (int i = 0; i < nseq * T; i++) {
        memcpy(f + (size_t)i * W, x + (size_t)i * D, sizeof(float) * D);
        if (pitch) {
            f[(size_t)i * W + D] = (float)(110 + (i % T));
            f[(size_t)i * W + D + 1] = (i % T) / 30 % 3 == 2 ? 0.0f : 1.0f;
        }
    }
    free(x);
    return f;
}

/* The whole .fbs (version 4, or write_version) of nseq sequences into
 * out: header, then
 * packets of packet_frames frames; with passes > 0 the encoder's search
 * (frae_encoder_set_search), recon (non-NULL) the encoder's frames, and
 * with silent (non-NULL, a flag per frame) DTX on, those frames coded as
 * silent. */
static size_t encode_ranged_search(const frae_model *m, const float *f,
                                   int nseq, int T, uint32_t packet_frames,
                                   unsigned char *out, int passes, float weight,
                                   float *recon, const unsigned char *silent,
                                   int write_version)
{
    const frae_config *c = frae_get_config(m);
    const int W = c->frame_dim + 2 * c->pitch;
    frae_stream h;
    frae_stream_writer w;
    frae_stream_header(frae_model_net(m), (uint32_t)nseq, (uint32_t)T,
                       silent ? FRAE_STREAM_DTX : 0, &h);
    h.packet_frames = packet_frames;
    if (write_version) /* frae 0.4's version 3, which frae still reads */
        h.version = (uint8_t)write_version;
    size_t at = frae_stream_writer_begin(&w, &h, out);
    frae_encoder *e = frae_encoder_create(frae_model_net(m));
    frae_encoder_set_search(e, passes, weight);
    frae_encoder_set_dtx(e, silent != NULL);
    frae_range_enc rc;
    uint32_t k = 0;
    for (int s = 0; s < nseq; s++) {
        frae_encoder_reset(e);
        for (int t = 0; t < T; t++) {
            if (t % (int)packet_frames == 0)
                frae_range_enc_init(&rc, out + at + FRAE_PACKET_PAYLOAD,
                                    frae_stream_packet_cap(&h) -
                                        FRAE_PACKET_OVERHEAD);
            float *r = recon ? recon + ((size_t)s * T + t) * W : NULL;
            if (silent && silent[(size_t)s * T + t])
                frae_encode_silence_ranged(e, &rc, r);
            else
                frae_encode_frame_ranged(e, f + ((size_t)s * T + t) * W, &rc,
                                         r);
            if ((t + 1) % (int)packet_frames == 0 || t + 1 == T)
                at += frae_stream_packet_seal(&h, out + at, k++,
                                              frae_range_enc_finish(&rc));
        }
    }
    frae_encoder_destroy(e);
    return at;
}

static size_t encode_ranged(const frae_model *m, const float *f, int nseq,
                            int T, uint32_t packet_frames, unsigned char *out)
{
    return encode_ranged_search(m, f, nseq, T, packet_frames, out, 0, 0.0f,
                                NULL, NULL, 0);
}

/* Decodes a parsed version-4 (or 3) stream into y (width W); -1 if a
 * frame is refused. */
static int decode_ranged(const frae_model *m, const frae_stream *s, float *y)
{
    const frae_config *c = frae_get_config(m);
    const int W = c->frame_dim + 2 * c->pitch;
    frae_decoder *d = frae_decoder_create(frae_model_net(m));
    frae_range_dec rd;
    const unsigned char *at = s->payload,
                        *end =
                            s->payload - frae_stream_header_bytes(s) + s->size;
    uint32_t k = 0;
    int rc = 0;
    char err[200];
    for (uint32_t q = 0; q < s->sequences && !rc; q++) {
        frae_decoder_reset(d);
        for (uint32_t t = 0; t < s->frames && !rc; t++) {
            if (t % s->packet_frames == 0) {
                const unsigned char *pl;
                size_t n;
                long used = frae_stream_packet_parse(
                    s, at, (size_t)(end - at), k++, &pl, &n, err, sizeof err);
                if (used < 0)
                    return -1;
                at += used;
                frae_range_dec_init(&rd, pl, n);
            }
            rc = frae_decode_frame_ranged(d, &rd,
                                          y + ((size_t)q * s->frames + t) * W);
        }
    }
    frae_decoder_destroy(d);
    return rc;
}

/* decode(encode(x)) == frae_forward, encoded on one ISA and decoded on
 * every other; the bytes spent are the prior's ideal code length plus the
 * coder's small overhead; lost, damaged and truncated packets are
 * refused with a line naming them. */
/* frae_pitch_backfill on frames made by hand: an onset's climb at the
 * half-octave limit, up and down, gets the pitch it reaches, with up to
 * two steps after it that settle it; a climb that turns, one that
 * does not start at an onset (the frame before voiced, here or in the
 * last call), and a plain step are left alone. */
static int backfill_cases(void)
{
    int failures = 0;
    const float r2 = 1.41421356f;
    /* f0 then voicing, dim 0, width 2 */
    float up[] = {0, 0,        100, 1,   100 * r2, 1,   200,
                  1, 200 * r2, 1,   290, 1,        295, 1};
    int before = 0;
    frae_pitch_backfill(up, 7, 2, 0, &before);
    CHECK(up[0] == 0 && up[2] == 200 * r2 && up[4] == 200 * r2 &&
              up[6] == 200 * r2 && up[8] == 200 * r2 && up[10] == 290 &&
              up[12] == 295 && before == 1,
          "a climb up: %g %g %g %g, then %g %g", (double)up[2], (double)up[4],
          (double)up[6], (double)up[8], (double)up[10], (double)up[12]);
    float down[] = {400, 1, 400 / r2, 1, 200, 1, 198, 1};
    before = 0;
    frae_pitch_backfill(down, 4, 2, 0, &before);
    CHECK(down[0] == 200 && down[2] == 200 && down[4] == 200 && down[6] == 198,
          "a climb down: %g %g %g %g", (double)down[0], (double)down[2],
          (double)down[4], (double)down[6]);
    float turn[] = {100, 1, 100 * r2, 1, 100, 1};
    before = 0;
    frae_pitch_backfill(turn, 3, 2, 0, &before);
    CHECK(turn[0] == 100 * r2 && turn[2] == 100 * r2 && turn[4] == 100,
          "a climb that turns: %g %g %g", (double)turn[0], (double)turn[2],
          (double)turn[4]);
    float mid[] = {100, 1, 100 * r2, 1, 200, 1};
    before = 1; /* the last call's last frame was voiced: no onset */
    frae_pitch_backfill(mid, 3, 2, 0, &before);
    CHECK(mid[0] == 100 && mid[2] == 100 * r2 && mid[4] == 200,
          "a climb after a voiced frame was moved");
    /* from the 50 Hz floor: 71, 100, 141, 200, 283 Hz, then the steps
     * that settle it, 0.17 and 0.06 octave up (taken: two at most), 0.06
     * more (left), a 0.015 one (left) */
    const float s17 = 1.12500f, s06 = 1.04247f; /* 2^0.17, 2^0.06 */
    float settle[] = {0,
                      0,
                      50 * r2,
                      1,
                      100,
                      1,
                      100 * r2,
                      1,
                      200,
                      1,
                      200 * r2,
                      1,
                      200 * r2 * s17,
                      1,
                      200 * r2 * s17 * s06,
                      1,
                      200 * r2 * s17 * s06 * s06,
                      1};
    before = 0;
    frae_pitch_backfill(settle, 9, 2, 0, &before);
    int settled = 1;
    for (int i = 1; i <= 7; i++)
        settled &= settle[2 * i] == 200 * r2 * s17 * s06;
    CHECK(settled && settle[16] == 200 * r2 * s17 * s06 * s06,
          "a climb and the steps that settle it: %g ... %g, then %g",
          (double)settle[2], (double)settle[14], (double)settle[16]);
    /* a step back (the half octave overshot) is taken, and then only a
     * step the same way */
    float back[] = {
        100, 1, 100 * r2, 1, 100 * r2 / s06, 1, 100 * r2 / s06 * s17, 1};
    before = 0;
    frae_pitch_backfill(back, 4, 2, 0, &before);
    CHECK(back[0] == 100 * r2 / s06 && back[2] == 100 * r2 / s06 &&
              back[4] == 100 * r2 / s06 && back[6] == 100 * r2 / s06 * s17,
          "a climb's step back: %g %g %g, then %g", (double)back[0],
          (double)back[2], (double)back[4], (double)back[6]);
    /* an unvoiced frame, a 0.015 step: not taken */
    float pause[] = {100, 1, 100 * r2, 1, 0, 0, 160, 1};
    before = 0;
    frae_pitch_backfill(pause, 4, 2, 0, &before);
    float small[] = {100, 1, 100 * r2, 1, 100 * r2 * 1.0105f, 1};
    before = 0;
    frae_pitch_backfill(small, 3, 2, 0, &before);
    CHECK(pause[0] == 100 * r2 && pause[4] == 0 && pause[6] == 160 &&
              small[0] == 100 * r2 && small[4] == 100 * r2 * 1.0105f,
          "a climb took a pause or the voice's own step: %g %g",
          (double)pause[0], (double)small[0]);
    float plain[] = {0, 0, 100, 1, 112, 1, 0, 0};
    before = 0;
    frae_pitch_backfill(plain, 4, 2, 0, &before);
    CHECK(plain[2] == 100 && plain[4] == 112 && plain[6] == 0 && before == 0,
          "a plain onset was moved");
    return failures;
}

/* Through a stream reader: a voice at 100 Hz, a pause, then one at 400 Hz,
 * two octaves up.  The codec (frae_stream_encode's recon, the frame API)
 * climbs 141, 200, 283 Hz before it reaches 400 (near them: the held
 * pitch is 100 Hz as coded); a file's reader gives
 * the climb's three frames the pitch it reaches, a real-time stream's
 * within each packet of 4 frames, and nothing else moves. */
int test_pitch_backfill(void)
{
    int failures = backfill_cases();
    const int T = 60, D = 7, W = D + 2, onset = 30;
    frae_config c;
    codec_config(&c, FRAE_QUANT_BINARY, 0);
    c.family = FRAE_FAMILY_GRU;
    c.batch = 1;
    c.pitch = 1;
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    float *x = synth(1, T, D, 5), *frames = malloc(sizeof(float) * T * W);
    for (int t = 0; t < T; t++) {
        memcpy(frames + t * W, x + t * D, sizeof(float) * D);
        const int voiced = t < 20 || t >= onset;
        frames[t * W + D] = voiced ? (t < 20 ? 100.0f : 400.0f) : 0.0f;
        frames[t * W + D + 1] = voiced ? 1.0f : 0.0f;
    }
    for (int rt = 0; rt <= 1; rt++) {
        char err[256] = "";
        frae_stream_options o;
        frae_stream_options_default(&o);
        if (rt)
            o.datagrams = 1, o.packet_frames = 4;
        frae_stream_encoder *e = frae_stream_encoder_create(
            frae_model_net(m), &o, 1, T, 1, err, sizeof err);
        unsigned char *stream = malloc(1 << 16);
        size_t len = 0, n;
        float *recon = malloc(sizeof(float) * T * W);
        const unsigned char *b = e ? frae_stream_encoder_bytes(e, &n) : NULL;
        for (int t = 0; e && t <= T; t++) {
            memcpy(stream + len, b, n), len += n;
            if (t < T)
                frae_stream_encode(e, frames + t * W, 0, recon + t * W);
            else
                CHECK(!frae_stream_encoder_end(e), "end");
            b = frae_stream_encoder_bytes(e, &n);
        }
        if (e)
            memcpy(stream + len, b, n), len += n;
        frae_stream_encoder_destroy(e);
        frae_stream_reader *r = frae_stream_reader_create(frae_model_net(m));
        float *got = malloc(sizeof(float) * T * W);
        long at = 0, k;
        size_t used = 0, need, pos = 0;
        const float *f;
        uint32_t seq;
        while ((k = frae_stream_read(r, stream + pos, len - pos, 1, &used,
                                     &need, &f, &seq, err, sizeof err)) > 0 ||
               used) {
            pos += used;
            for (long i = 0; i < k && at < T; i++, at++)
                memcpy(got + at * W, f + i * W, sizeof(float) * W);
        }
        frae_stream_reader_destroy(r);
        /* the codec's climb, then what the reader gives */
        const float *climb = recon + onset * W + D;
        const float r2 = 1.41421356f;
        CHECK(at == T && fabsf(climb[0] / 141.4f - 1) < 0.01f &&
                  fabsf(climb[W] / climb[0] - r2) < 1e-3f &&
                  fabsf(climb[2 * W] / climb[W] - r2) < 1e-3f &&
                  fabsf(climb[3 * W] / climb[2 * W] - r2) < 1e-3f &&
                  fabsf(climb[4 * W] / climb[3 * W] - r2) > 0.1f,
              "%s: %ld frames, the codec's climb %g %g %g %g (%s)",
              rt ? "packets" : "file", at, (double)climb[0], (double)climb[W],
              (double)climb[2 * W], (double)climb[3 * W], err);
        int moved = 0, right = 1;
        for (int t = 0; at == T && t < T; t++) {
            right &= !memcmp(got + t * W, recon + t * W, sizeof(float) * D) &&
                     got[t * W + D + 1] == recon[t * W + D + 1];
            /* a packet holds frames 28-31: its climb ends at 31 */
            const float want = t < onset || t > onset + 2 ? recon[t * W + D]
                               : rt ? recon[(t < 31 ? 31 : t) * W + D]
                                    : recon[(onset + 3) * W + D];
            moved += got[t * W + D] != recon[t * W + D];
            right &= got[t * W + D] == want;
        }
        CHECK(right && moved == (rt ? 1 : 3),
              "%s: %d frames' f0 moved (%d wanted), envelopes and voicing "
              "as coded: %s; onset %g %g %g",
              rt ? "packets" : "file", moved, rt ? 1 : 3, right ? "yes" : "no",
              (double)got[onset * W + D], (double)got[(onset + 1) * W + D],
              (double)got[(onset + 2) * W + D]);
        free(stream), free(recon), free(got);
    }
    free(x), free(frames);
    frae_destroy(m);
    return failures;
}

int test_codec_ranged(void)
{
    int failures = 0;
    static const struct {
        frae_family family;
        frae_quantizer q;
        int levels, pitch;
        const char *name;
        int ar;           /* the prior's within-frame autoregression */
        int pitch_ranged; /* FRAE_PITCH_CODER_*: how the pitch is coded */
    } cs[] = {
        {FRAE_FAMILY_DENSE, FRAE_QUANT_BINARY, 0, 0, "dense binary", 0, 0},
        {FRAE_FAMILY_DENSE, FRAE_QUANT_UNIFORM, 5, 1, "dense uniform 5, pitch",
         0, 0},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 1, "gru binary, pitch", 0, 0},
        {FRAE_FAMILY_GRU, FRAE_QUANT_UNIFORM, 9, 0, "gru uniform 9", 0, 0},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 0, "gru binary, ar", 1, 0},
        {FRAE_FAMILY_DENSE, FRAE_QUANT_UNIFORM, 5, 1, "dense uniform 5, ar", 1,
         0},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 1, "gru binary, ranged pitch",
         1, 1},
        {FRAE_FAMILY_DENSE, FRAE_QUANT_UNIFORM, 5, 1, "dense u5, ranged pitch",
         0, 1},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 1, "gru binary, envelope pitch",
         1, FRAE_PITCH_CODER_ENVELOPE},
        {FRAE_FAMILY_DENSE, FRAE_QUANT_UNIFORM, 5, 1,
         "dense u5, envelope pitch", 0, FRAE_PITCH_CODER_ENVELOPE}};
    const int nseq = 2, T = 70, D = 7;
    frae_isa isas[3];
    const int nisa = available_isas(isas);
    CHECK(frae_crc16((const unsigned char *)"123456789", 9) == 0x29b1,
          "CRC-16/IBM-3740 of \"123456789\": %04x, not 29b1",
          frae_crc16((const unsigned char *)"123456789", 9));
    for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
        frae_config c;
        codec_config(&c, cs[k].q, cs[k].levels);
        c.family = cs[k].family;
        c.pitch = cs[k].pitch;
        c.prior_hidden = 6;
        c.prior_ar = cs[k].ar;
        c.pitch_ranged = cs[k].pitch_ranged;
        c.batch = nseq;
        c.isa = isas[0]; /* the encoder: scalar */
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        const int W = D + 2 * c.pitch;
        float *f = ranged_frames(nseq, T, D, c.pitch, 40 + k);
        float *x = malloc(sizeof(float) * nseq * T * D);
        for (int i = 0; i < nseq * T; i++)
            memcpy(x + (size_t)i * D, f + (size_t)i * W, sizeof(float) * D);
        float *want = malloc(sizeof(float) * nseq * T * D);
        float *y = malloc(sizeof(float) * nseq * T * W);
        frae_forward(m, x, want, nseq, T);
        frae_stats st;
        frae_step(
            m,
            &(frae_batch){
                .x = x, .nseq = nseq, .nframes = T, .kind = FRAE_STEP_EVALUATE},
            &st);
        unsigned char *buf = malloc(1 << 16);
        size_t size = encode_ranged(m, f, nseq, T, 16, buf);
        frae_stream s;
        char err[256] = "";
        CHECK(frae_stream_parse(buf, size, &s, err, sizeof err) == 0, "%s: %s",
              cs[k].name, err);
        CHECK(s.version == FRAE_STREAM_VERSION_RANGED && s.packet_frames == 16,
              "version %d, %u frames a packet", s.version, s.packet_frames);
        CHECK(frae_stream_packets(&s) == 10, "%llu packets",
              (unsigned long long)frae_stream_packets(&s));
        frae_config c1 = c;
        c1.batch = 1;
        for (int i = 0; i < nisa; i++) {
            frae_model *mi = model_on_isa(m, &c1, isas[i]);
            CHECK(frae_stream_check_model(&s, frae_model_net(mi), err,
                                          sizeof err) == 0,
                  "%s", err);
            memset(y, 0, sizeof(float) * nseq * T * W);
            CHECK(decode_ranged(mi, &s, y) == 0, "%s on %s: a frame refused",
                  cs[k].name, frae_isa_name(mi));
            int same = 1, pitch_ok = 1;
            for (int t = 0; t < nseq * T; t++) {
                same &= !memcmp(y + (size_t)t * W, want + (size_t)t * D,
                                sizeof(float) * D);
                if (c.pitch) /* voicing kept, f0 within the loop's steps */
                    pitch_ok &=
                        y[(size_t)t * W + D + 1] == f[(size_t)t * W + D + 1] &&
                        (f[(size_t)t * W + D + 1] == 0.0f || t % T < 8 ||
                         fabs(log2(y[(size_t)t * W + D] /
                                   f[(size_t)t * W + D])) < 0.02);
            }
            CHECK(same, "%s: decoded on %s != frae_forward encoded on %s",
                  cs[k].name, frae_isa_name(mi), frae_isa_name(m));
            CHECK(pitch_ok, "%s: pitch not kept", cs[k].name);
            frae_destroy(mi);
        }
        /* the packets: where each starts, and their payloads' bytes */
        frae_stream_parse(buf, size, &s, err, sizeof err);
        size_t starts[16], payload_bytes = 0, at = frae_stream_header_bytes(&s);
        /* 16 bytes, then sequences, frames and packet frames, a byte each */
        CHECK(at == (size_t)(s.payload - buf) && at == 19,
              "%s: a %zu-byte header", cs[k].name, at);
        for (uint32_t i = 0; i < 10; i++) {
            const unsigned char *pl;
            size_t n;
            starts[i] = at;
            at += (size_t)frae_stream_packet_parse(&s, buf + at, size - at, i,
                                                   &pl, &n, err, sizeof err);
            payload_bytes += n;
            CHECK(pl == buf + starts[i] + (n < 128 ? 1 : 2) &&
                      frae_packet_crc(&s, buf + starts[i],
                                      (size_t)(pl - buf) - starts[i] + n, i) ==
                          (buf[pl - buf + n] | buf[pl - buf + n + 1] << 8),
                  "%s: packet %u: a %d-byte length, the payload, a CRC-16 "
                  "over the header, them and the index",
                  cs[k].name, i, n < 128 ? 1 : 2);
        }
        starts[10] = at;
        CHECK(at == size, "%s: 10 packets end at %zu of %zu", cs[k].name, at,
              size);
        /* the payload against the prior's -log2 p: frequencies of 2^-15
         * resolution and each packet's flush cost a little, never much,
         * and the recalibration wins back what an untrained prior (these
         * models' are random) misjudges: without pitch, at least 10% */
        const double payload = 8.0 * (double)payload_bytes;
        const double pitch_bits = c.pitch ? 4.0 * nseq * T : 0.0;
        printf("    %-26s %zu bytes: payload %.0f bits, the prior's -log2 p "
               "%.0f bits (+ pitch, at most %.0f)\n",
               cs[k].name, size, payload, st.rate_bits, pitch_bits);
        CHECK(payload <=
                  st.rate_bits + pitch_bits + 10 * 16 + 0.01 * st.rate_bits,
              "%s: %.0f payload bits for %.0f ideal", cs[k].name, payload,
              st.rate_bits);
        CHECK(c.pitch || payload < 0.9 * st.rate_bits,
              "%s: %.0f payload bits, the prior's -log2 p %.0f: the "
              "recalibration did not adapt",
              cs[k].name, payload, st.rate_bits);
        /* a reset forgets the recalibration: the second sequence's
         * packets, coded after the first, equal it coded alone */
        {
            unsigned char *alone = malloc(1 << 16);
            const size_t n1 =
                encode_ranged(m, f + (size_t)T * W, 1, T, 16, alone);
            frae_stream s1;
            int same = !frae_stream_parse(alone, n1, &s1, err, sizeof err);
            size_t a1 = frae_stream_header_bytes(&s1);
            for (uint32_t i = 0; i < 5 && same; i++) {
                const unsigned char *pa, *pb;
                size_t na, nb;
                a1 += (size_t)frae_stream_packet_parse(
                    &s1, alone + a1, n1 - a1, i, &pa, &na, err, sizeof err);
                frae_stream_packet_parse(&s, buf + starts[5 + i],
                                         size - starts[5 + i], 5 + i, &pb, &nb,
                                         err, sizeof err);
                same = na == nb && !memcmp(pa, pb, na);
            }
            CHECK(same, "%s: sequence 1 codes differently after sequence 0",
                  cs[k].name);
            free(alone);
        }
        /* frae 0.4's version 3 still decodes, to the same frames: the same
         * payloads, each packet a byte longer (its index), the header
         * longer by D, L, the code format and its CRC-32 */
        {
            unsigned char *v3 = malloc(1 << 16);
            const size_t n3 =
                encode_ranged_search(m, f, nseq, T, 16, v3, 0, 0.0f, NULL, NULL,
                                     FRAE_STREAM_VERSION_RANGED_V3);
            frae_stream s3;
            float *y3 = malloc(sizeof(float) * nseq * T * W);
            CHECK(frae_stream_parse(v3, n3, &s3, err, sizeof err) == 0 &&
                      s3.version == 3 &&
                      frae_stream_check_model(&s3, frae_model_net(m), err,
                                              sizeof err) == 0 &&
                      decode_ranged(m, &s3, y3) == 0 &&
                      decode_ranged(m, &s, y) == 0 &&
                      !memcmp(y3, y, sizeof(float) * nseq * T * W),
                  "%s: version 3: '%s'", cs[k].name, err);
            const size_t h3 = frae_stream_header_bytes(&s3);
            CHECK(n3 == size + (h3 - starts[0]) + 10 && h3 == 28,
                  "%s: version 3 takes %zu bytes (header %zu), version 4 %zu "
                  "(header %zu)",
                  cs[k].name, n3, h3, size, starts[0]);
            free(v3), free(y3);
        }
        /* damage: a lost packet, two swapped, a flipped byte, a cut,
         * trailing bytes */
        unsigned char *bad = malloc(size + 1);
        const size_t p1 = starts[1], p2 = starts[2], p3 = starts[3];
        memcpy(bad, buf, p1);
        memcpy(bad + p1, buf + p2, size - p2); /* packet 1 dropped */
        CHECK(frae_stream_parse(bad, size - (p2 - p1), &s, err, sizeof err) &&
                  strstr(err, "packet 1 is missing: found packet 2 in"),
              "lost packet: '%s'", err);
        memcpy(bad, buf, size); /* packets 1 and 2 swapped */
        memcpy(bad + p1, buf + p2, p3 - p2);
        memcpy(bad + p1 + (p3 - p2), buf + p1, p2 - p1);
        CHECK(frae_stream_parse(bad, size, &s, err, sizeof err) &&
                  strstr(err, "packet 1 is missing: found packet 2 in"),
              "swapped packets: '%s'", err);
        memcpy(bad, buf, size);
        bad[p1 + 5] ^= 0x10;
        CHECK(frae_stream_parse(bad, size, &s, err, sizeof err) &&
                  strstr(err, "packet 1: corrupted"),
              "flipped byte: '%s'", err);
        memcpy(bad, buf, size);
        bad[p1] |= 0x80; /* its length runs on into the payload */
        CHECK(frae_stream_parse(bad, size, &s, err, sizeof err) &&
                  strstr(err, "packet 1: "),
              "damaged length: '%s'", err);
        CHECK(frae_stream_parse(buf, size - 3, &s, err, sizeof err) &&
                  strstr(err, "truncated"),
              "cut stream: '%s'", err);
        memcpy(bad, buf, size);
        bad[size] = 0;
        CHECK(frae_stream_parse(bad, size + 1, &s, err, sizeof err) &&
                  strstr(err, "trailing"),
              "trailing byte: '%s'", err);
        /* a size written in two bytes where one does (0x82 0x00 for 2):
         * refused before any CRC, so each header has one form */
        {
            unsigned char *two = malloc(size + 1);
            memcpy(two, buf, 16);
            two[16] = 0x82, two[17] = 0x00; /* sequences: 2 */
            memcpy(two + 18, buf + 17, size - 17);
            CHECK(buf[16] == 2 &&
                      frae_stream_parse(two, size + 1, &s, err, sizeof err) &&
                      strstr(err, "malformed size"),
                  "two-byte varint: '%s'", err);
            free(two);
        }
        /* the header: each packet's CRC covers it, the first's before
         * any of its fields is used */
        for (int at_byte = 7; at_byte <= 17; at_byte += 5) {
            memcpy(bad, buf, size);
            bad[at_byte] ^= at_byte == 7 ? 0 : 1; /* the hash, frames */
            if (at_byte == 7)
                bad[at_byte] ^= FRAE_STREAM_DTX; /* a flag */
            CHECK(frae_stream_parse(bad, size, &s, err, sizeof err) &&
                      strstr(err, "packet 0: corrupted (CRC-16 mismatch: the "
                                  "packet or the header)"),
                  "header byte %d: '%s'", at_byte, err);
        }
        /* a model without the prior refuses the stream */
        frae_config cp = c;
        cp.prior_hidden = 0, cp.prior_ar = 0, cp.pitch_ranged = 0;
        frae_model *plain = create_or_die(&cp);
        frae_stream_parse(buf, size, &s, err, sizeof err);
        CHECK(frae_stream_check_model(&s, frae_model_net(plain), err,
                                      sizeof err) &&
                  strstr(err, "no prior"),
              "plain model: '%s'", err);
        frae_destroy(plain);
        free(bad), free(buf), free(f), free(x), free(want), free(y);
        frae_destroy(m);
    }
    return failures;
}

/* One sequence of T frames with DTX on, in packets of 16 */
static size_t encode_dtx(const frae_model *m, const float *f, int T,
                         const unsigned char *silent, unsigned char *out,
                         float *recon)
{
    return encode_ranged_search(m, f, 1, T, 16, out, 0, 0.0f, recon, silent, 0);
}

/* DTX: a silent frame costs its flag alone, freezes both ends and decodes
 * to the last frame decoded (f0 and voicing 0); the coded frames decode,
 * on every ISA, to the bit of frae_forward on the sequence with the silent
 * frames left out; the flag is the entropy-coded versions' alone. */
int test_codec_dtx(void)
{
    int failures = 0;
    enum { T = 70, D = 7 };
    frae_isa isas[3];
    const int nisa = available_isas(isas);
    frae_config c;
    codec_config(&c, FRAE_QUANT_BINARY, 0);
    c.family = FRAE_FAMILY_GRU;
    c.pitch = 1, c.prior_hidden = 6, c.prior_ar = 1;
    c.pitch_ranged = FRAE_PITCH_CODER_ENVELOPE; /* its context frozen too */
    c.normalize = 1, c.batch = 1, c.isa = isas[0];
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    const float mean[D] = {0.5f, -1, 0.25f, 2, 0, -0.5f, 1};
    const float std[D] = {2, 0.5f, 1, 4, 1, 0.25f, 3};
    frae_set_normalization(m, mean, std);
    const int W = D + 2;
    float *f = ranged_frames(1, T, D, 1, 77);
    unsigned char silent[T];
    for (int t = 0; t < T; t++) /* before any coded frame, a pause, a blip */
        silent[t] = t < 3 || (t >= 25 && t < 45) || t == 60 || t == 61;
    float *recon = malloc(sizeof(float) * T * W),
          *y = malloc(sizeof(float) * T * W);
    float *kept = malloc(sizeof(float) * T * D),
          *want = malloc(sizeof(float) * T * D);
    int nk = 0;
    for (int t = 0; t < T; t++)
        if (!silent[t])
            memcpy(kept + (size_t)nk++ * D, f + (size_t)t * W,
                   sizeof(float) * D);
    frae_forward(m, kept, want, 1, nk);
    unsigned char *buf = malloc(1 << 16);
    const size_t size = encode_dtx(m, f, T, silent, buf, recon);
    frae_stream s;
    char err[256] = "";
    CHECK(frae_stream_parse(buf, size, &s, err, sizeof err) == 0 &&
              (s.flags & FRAE_STREAM_DTX),
          "DTX stream: '%s', flags %d", err, s.flags);
    for (int i = 0; i < nisa; i++) {
        frae_model *mi = model_on_isa(m, &c, isas[i]);
        frae_set_normalization(mi, mean, std);
        frae_decoder *d = frae_decoder_create(frae_model_net(mi));
        CHECK(frae_decoder_set_dtx(d, 1) == 0, "set_dtx refused");
        frae_range_dec rd;
        const unsigned char *at = s.payload;
        int bad = 0;
        for (int t = 0; t < T; t++) {
            if (t % 16 == 0) {
                const unsigned char *pl;
                size_t n;
                at += frae_stream_packet_parse(
                    &s, at, size - (size_t)(at - buf), (uint32_t)t / 16, &pl,
                    &n, err, sizeof err);
                frae_range_dec_init(&rd, pl, n);
            }
            bad |= frae_decode_frame_ranged(d, &rd, y + (size_t)t * W);
        }
        CHECK(!bad && !memcmp(y, recon, sizeof(float) * T * W),
              "decoded on %s != the encoder's frames", frae_isa_name(mi));
        int same = 1, held = 1, voicing = 1;
        for (int t = 0, k = 0; t < T; t++) {
            const float *yt = y + (size_t)t * W;
            if (!silent[t]) {
                same &= !memcmp(yt, want + (size_t)k++ * D, sizeof(float) * D);
                voicing &= yt[D + 1] == f[(size_t)t * W + D + 1];
                continue;
            }
            /* the frame before, or the model's zero frame: the means */
            held &= !memcmp(yt, t < 3 ? mean : yt - W, sizeof(float) * D) &&
                    yt[D] == 0.0f && yt[D + 1] == 0.0f;
        }
        CHECK(same,
              "on %s: coded frames != frae_forward without the silent "
              "ones",
              frae_isa_name(mi));
        CHECK(held, "on %s: a silent frame is not the last one held",
              frae_isa_name(mi));
        CHECK(voicing, "on %s: voicing not kept", frae_isa_name(mi));
        frae_decoder_destroy(d);
        frae_destroy(mi);
    }
    /* a pause costs its flags alone: 65 silent frames after 5 coded ones
     * take at most 3 bytes more than the 5 frames alone */
    {
        unsigned char tail[T] = {0}, *alone = malloc(1 << 16);
        for (int t = 5; t < T; t++)
            tail[t] = 1;
        const size_t with_pause = encode_dtx(m, f, T, tail, buf, NULL);
        const size_t five = encode_dtx(m, f, 5, tail, alone, NULL);
        /* the pause's frames add 4 packets (length and CRC: 3 bytes
         * each, and a byte of their coder's flush) */
        const size_t packets = 4 * (FRAE_PACKET_MIN + 1);
        printf("    65 silent frames: %zu bytes (5 coded frames alone %zu)\n",
               with_pause, five);
        CHECK(with_pause <= five + packets + 3,
              "65 silent frames took %zu bytes more than none",
              with_pause - five);
        free(alone);
    }
    /* DTX needs a prior; its flag is the entropy-coded versions' alone */
    {
        frae_encoder *e = frae_encoder_create(frae_model_net(m));
        frae_range_enc rc;
        unsigned char out[64];
        frae_range_enc_init(&rc, out, sizeof out);
        CHECK(frae_encode_silence_ranged(e, &rc, NULL) == -1,
              "a silent frame coded with DTX off");
        frae_encoder_destroy(e);
        frae_config cp = c;
        cp.prior_hidden = 0, cp.prior_ar = 0, cp.pitch_ranged = 0;
        frae_model *plain = create_or_die(&cp);
        frae_encoder *pe = frae_encoder_create(frae_model_net(plain));
        CHECK(frae_encoder_set_dtx(pe, 1) == -1, "DTX on without a prior");
        frae_stream h;
        frae_stream_header(frae_model_net(plain), 1, 4, FRAE_STREAM_DTX, &h);
        CHECK(h.version == FRAE_STREAM_VERSION && !(h.flags & FRAE_STREAM_DTX),
              "a fixed-rate header with the DTX flag");
        const size_t n = frae_stream_bytes(&h);
        unsigned char *v2 = calloc(n, 1);
        unsigned char *codes =
            calloc(frae_code_bytes(frae_model_net(plain)) * 4, 1);
        frae_stream_write(v2, &h, codes);
        v2[7] |= FRAE_STREAM_DTX;
        const uint32_t crc = frae_crc32(v2, n - 4);
        for (int i = 0; i < 4; i++)
            v2[n - 4 + i] = (unsigned char)(crc >> 8 * i);
        CHECK(frae_stream_parse(v2, n, &s, err, sizeof err) &&
                  strstr(err, "unknown bits"),
              "version 2 with the DTX flag: '%s'", err);
        free(v2), free(codes);
        frae_encoder_destroy(pe);
        frae_destroy(plain);
    }
    free(buf), free(f), free(recon), free(y), free(kept), free(want);
    frae_destroy(m);
    return failures;
}

/* A fixed-rate frame's code bytes from level indices (binary: 1 = +1), and
 * back: L values of b bits, LSB first (README, "Bitstream"), written here
 * from the format, not with the codec's own packing. */
static void pack_indices(const int *idx, int L, int bits, unsigned char *code,
                         size_t cb)
{
    memset(code, 0, cb);
    for (int i = 0; i < L * bits; i++)
        if (idx[i / bits] >> (i % bits) & 1)
            code[i / 8] |= (unsigned char)(1u << (i % 8));
}

static void unpack_indices(const unsigned char *code, int L, int bits, int *idx)
{
    for (int u = 0; u < L; u++) {
        idx[u] = 0;
        for (int b = 0; b < bits; b++) {
            const int i = u * bits + b;
            idx[u] |= (code[i / 8] >> (i % 8) & 1) << b;
        }
    }
}

/* The squared distance per value of frame t decoded after codes 0..t-1
 * and then cand, by a plain decoder replaying the stream from its start. */
/* ln sum_i exp(5 v_i): a frame's power (the level term's, scale 5, no
 * normalization), written out here as the reference */
static double log_power(const float *v, int D)
{
    double mx = -HUGE_VAL, sum = 0.0;
    for (int i = 0; i < D; i++)
        mx = 5.0 * v[i] > mx ? 5.0 * v[i] : mx;
    for (int i = 0; i < D; i++)
        sum += exp(5.0 * v[i] - mx);
    return mx + log(sum);
}

/* The search's cost of frame t coded as cand after codes[0..t): its mean
 * squared error, plus level_w (ln P_decoded - ln P_input)^2 */
static double replay_distortion(frae_decoder *d, const unsigned char *codes,
                                size_t cb, int t, const unsigned char *cand,
                                const float *x, int D, double level_w)
{
    float y[64];
    frae_decoder_reset(d);
    for (int i = 0; i < t; i++)
        frae_decode_frame(d, codes + (size_t)i * cb, y);
    frae_decode_frame(d, cand, y);
    double sse = 0.0;
    for (int i = 0; i < D; i++) {
        const double e = (double)y[i] - (double)x[i];
        sse += e * e;
    }
    const double delta = log_power(y, D) - log_power(x, D);
    return sse / D + level_w * delta * delta;
}

/* The encoder's search (analysis by synthesis): any decoder reads its
 * stream and produces the encoder's frames to the bit; run to convergence
 * on distortion alone, every frame's codes are a local minimum (no code
 * moved by one level decodes closer), checked by a plain decoder replaying
 * the stream (a model trained with the level term: no move lowers the
 * squared error plus a quarter of its level weight x the squared log power
 * ratio, computed here, while some lower the squared error alone); it
 * codes the sequence closer than the network's codes; with
 * a prior and a rate weight the stream is smaller, and every ISA makes the
 * same stream; bad settings are refused. */
int test_codec_search(void)
{
    int failures = 0;
    const int T = 24, D = 7;
    /* level: the model's cfg.level_loss; the search weighs a frame's level
     * by a quarter of it (search.c, SEARCH_LEVEL_SHARE) */
    static const struct {
        frae_family family;
        frae_quantizer q;
        int levels, bits;
        float level;
        const char *name;
    } cs[] = {
        {FRAE_FAMILY_DENSE, FRAE_QUANT_BINARY, 0, 1, 0, "dense binary"},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 1, 0, "gru binary"},
        {FRAE_FAMILY_GRU, FRAE_QUANT_UNIFORM, 5, 3, 0, "gru uniform 5"},
        {FRAE_FAMILY_DENSE, FRAE_QUANT_UNIFORM, 4, 2, 0, "dense uniform 4"},
        {FRAE_FAMILY_GRU, FRAE_QUANT_BINARY, 0, 1, 2, "gru level"}};
    for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
        frae_config c;
        codec_config(&c, cs[k].q, cs[k].levels);
        c.family = cs[k].family;
        c.level_loss = cs[k].level;
        const double level_w = 0.25 * cs[k].level;
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        const int L = c.latent_dim;
        const size_t cb = frae_code_bytes(frae_model_net(m));
        float *x = synth(1, T, D, 60 + k);
        unsigned char *codes = malloc(cb * T), *plain = malloc(cb * T);
        unsigned char cand[16];
        float *recon = malloc(sizeof(float) * T * D), out[64], y[64];
        frae_encoder *e = frae_encoder_create(frae_model_net(m)),
                     *e0 = frae_encoder_create(frae_model_net(m));
        frae_decoder *d = frae_decoder_create(frae_model_net(m)),
                     *ref = frae_decoder_create(frae_model_net(m));
        CHECK(frae_encoder_set_search(e, 16, 0.0f) == 0, "search refused");
        double sse_search = 0, sse_plain = 0;
        int same = 1;
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * D;
            frae_encode_frame(e, xt, codes + (size_t)t * cb,
                              recon + (size_t)t * D);
            frae_encode_frame(e0, xt, plain + (size_t)t * cb, y);
            CHECK(frae_decode_frame(d, codes + (size_t)t * cb, out) == 0,
                  "a searched code refused");
            same &= !memcmp(out, recon + (size_t)t * D, sizeof(float) * D);
            for (int i = 0; i < D; i++) {
                sse_search += ((double)recon[t * D + i] - xt[i]) *
                              ((double)recon[t * D + i] - xt[i]);
                sse_plain += ((double)y[i] - xt[i]) * ((double)y[i] - xt[i]);
            }
        }
        CHECK(same, "%s: the decoder's frames differ from the encoder's",
              cs[k].name);
        /* local minima, by replay */
        int worse = 0, closer = 0, tried = 0, changed = 0, idx[16];
        for (int t = 0; t < T; t++) {
            const float *xt = x + (size_t)t * D;
            const double chosen = replay_distortion(
                ref, codes, cb, t, codes + (size_t)t * cb, xt, D, level_w);
            const double chosen_sse = replay_distortion(
                ref, codes, cb, t, codes + (size_t)t * cb, xt, D, 0.0);
            changed +=
                memcmp(codes + (size_t)t * cb, plain + (size_t)t * cb, cb) != 0;
            for (int u = 0; u < L; u++)
                for (int dir = -1; dir <= 1; dir += 2) {
                    unpack_indices(codes + (size_t)t * cb, L, cs[k].bits, idx);
                    const int top = c.quantizer == FRAE_QUANT_BINARY
                                        ? 1
                                        : c.quant_levels - 1;
                    idx[u] = c.quantizer == FRAE_QUANT_BINARY ? 1 - idx[u]
                                                              : idx[u] + dir;
                    if (idx[u] < 0 || idx[u] > top ||
                        (c.quantizer == FRAE_QUANT_BINARY && dir < 0))
                        continue;
                    pack_indices(idx, L, cs[k].bits, cand, cb);
                    tried++;
                    worse += replay_distortion(ref, codes, cb, t, cand, xt, D,
                                               level_w) < chosen;
                    closer += replay_distortion(ref, codes, cb, t, cand, xt, D,
                                                0.0) < chosen_sse;
                }
        }
        CHECK(worse == 0,
              "%s: %d of %d one-level moves decode closer than "
              "the search's choice",
              cs[k].name, worse, tried);
        /* with the level weighed, some moves decode closer but keep the
         * level worse: the level counts */
        CHECK(cs[k].level > 0 ? closer > 0 : closer == 0,
              "%s: %d one-level moves decode closer (level weight %g)",
              cs[k].name, closer, level_w);
        CHECK(changed > 0 && (cs[k].level > 0 || sse_search < sse_plain),
              "%s: the search changed %d frames, squared error %.4g against "
              "%.4g",
              cs[k].name, changed, sse_search, sse_plain);
        printf("    %-16s decoded == the encoder's frames; %d one-level moves, "
               "none closer; squared error %.4g against %.4g with the "
               "network's codes\n",
               cs[k].name, tried, sse_search, sse_plain);
        free(x), free(codes), free(plain), free(recon);
        frae_encoder_destroy(e), frae_encoder_destroy(e0);
        frae_decoder_destroy(d), frae_decoder_destroy(ref);
        frae_destroy(m);
    }
    /* entropy-coded: exact, the same stream on every ISA, fewer bytes for
     * a rate weight */
    frae_isa isas[3];
    const int nisa = available_isas(isas);
    for (int k = 0; k < 2; k++) {
        frae_config c;
        codec_config(&c, k ? FRAE_QUANT_UNIFORM : FRAE_QUANT_BINARY, k ? 5 : 0);
        c.family = k ? FRAE_FAMILY_DENSE : FRAE_FAMILY_GRU;
        c.pitch = !k;
        c.prior_hidden = 6;
        c.prior_ar = !k;
        c.batch = 1;
        c.isa = isas[0];
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        const int W = D + 2 * c.pitch, n = 70;
        float *f = ranged_frames(1, n, D, c.pitch, 80 + k);
        float *recon = malloc(sizeof(float) * n * W),
              *y = malloc(sizeof(float) * n * W);
        unsigned char *buf = malloc(1 << 16), *other = malloc(1 << 16);
        const size_t plain = encode_ranged(m, f, 1, n, 16, buf);
        const size_t size =
            encode_ranged_search(m, f, 1, n, 16, buf, 2, 0.5f, recon, NULL, 0);
        frae_stream s;
        char err[256] = "";
        CHECK(frae_stream_parse(buf, size, &s, err, sizeof err) == 0, "%s",
              err);
        CHECK(decode_ranged(m, &s, y) == 0, "a searched stream refused");
        int same = 1;
        for (int t = 0; t < n; t++)
            same &= !memcmp(y + (size_t)t * W, recon + (size_t)t * W,
                            sizeof(float) * D);
        CHECK(same, "ranged %d: the decoder's frames differ from the encoder's",
              k);
        CHECK(size < plain,
              "ranged %d: %zu bytes with the search's rate weight, "
              "%zu without",
              k, size, plain);
        for (int i = 1; i < nisa; i++) {
            frae_model *mi = model_on_isa(m, &c, isas[i]);
            const size_t si = encode_ranged_search(mi, f, 1, n, 16, other, 2,
                                                   0.5f, NULL, NULL, 0);
            CHECK(si == size && !memcmp(other, buf, size),
                  "ranged %d: the search's stream on %s differs from %s's", k,
                  frae_isa_name(mi), frae_isa_name(m));
            frae_destroy(mi);
        }
        printf("    ranged %-9s decoded == the encoder's frames; %zu bytes "
               "against %zu with the network's codes; the same stream on %d "
               "ISAs\n",
               k ? "uniform 5" : "binary", size, plain, nisa);
        free(f), free(recon), free(y), free(buf), free(other);
        frae_destroy(m);
    }
    /* refused settings */
    frae_config c;
    codec_config(&c, FRAE_QUANT_BINARY, 0);
    frae_model *m = create_or_die(&c);
    frae_encoder *e = frae_encoder_create(frae_model_net(m));
    CHECK(frae_encoder_set_search(e, -1, 0.0f) == -1 &&
              frae_encoder_set_search(e, 1, -1.0f) == -1 &&
              frae_encoder_set_search(e, 1, NAN) == -1 &&
              frae_encoder_set_search(e, 1, INFINITY) == -1,
          "bad search settings accepted");
    frae_encoder_destroy(e);
    frae_destroy(m);
    codec_config(&c, FRAE_QUANT_NONE, 0);
    m = create_or_die(&c);
    e = frae_encoder_create(frae_model_net(m));
    CHECK(frae_encoder_set_search(e, 1, 0.0f) == -1 &&
              frae_encoder_set_search(e, 0, 0.0f) == 0,
          "a search over raw float latents accepted, or turning it off "
          "refused");
    frae_encoder_destroy(e);
    frae_destroy(m);
    return failures;
}

/* The non-NULL buffers of a stream state, each a byte offset from base;
 * returns how many. */
static int state_offsets(const frae_state *s, const char *base, long *off)
{
    const float *p[FRAE_SP_COUNT];
    int n = 0;
    for (int l = 0; l < FRAE_MAX_LAYERS; l++)
        p[n++] = s->a[l];
    for (int k = 0; k < 2; k++) {
        p[n++] = s->h0[k];
        p[n++] = s->gx[k];
        p[n++] = s->gh[k];
        p[n++] = s->gates[k];
        p[n++] = s->pend[k];
    }
    p[n++] = s->pair_in, p[n++] = s->q, p[n++] = s->prior_ctx;
    p[n++] = s->prior_hid, p[n++] = s->prior_logit, p[n++] = s->ring;
    p[n++] = (const float *)(const void *)s->scratch.idx;
    p[n++] = s->scratch.val;
    int got = 0;
    for (int k = 0; k < n; k++)
        if (p[k])
            off[got++] = (const char *)p[k] - base;
    return got;
}

/* A frame codec's states are laid out by one plan (frae_codec_plan_make):
 * the sizes reported are the plan's; every buffer an encoder or a decoder
 * carves lies in its own part of a block of exactly that size, the stream
 * state's pieces 64-byte aligned, apart, and each one the plan made; the search's
 * trial state has st's offsets (frae_state_copy copies one onto the
 * other); and frames coded in such a block leave the bytes after it
 * alone. */
int test_codec_state_plan(void)
{
    int failures = 0;
    enum { D = 7, T = 12, GUARD = 256 };
    for (int k = 0; k < 3; k++) {
        frae_config c;
        codec_config(&c, FRAE_QUANT_BINARY, 0);
        c.batch = 1;
        if (k >= 1) { /* a GRU with the prior, normalized, with pitch */
            c.family = FRAE_FAMILY_GRU;
            c.pitch = 1, c.prior_hidden = 6, c.prior_ar = 1;
            c.normalize = 1;
        }
        if (k == 2)
            c.history = 1;
        frae_model *m = create_or_die(&c);
        perturb_params(m, NULL);
        const frae_net *n = frae_model_net(m);
        frae_codec_plan p;
        frae_codec_plan_make(n, &p);
        CHECK(frae_decoder_size(n) == p.decoder &&
                  frae_encoder_size(n) == p.encoder,
              "config %d: sizes %zu, %zu are not the plan's %zu, %zu", k,
              frae_decoder_size(n), frae_encoder_size(n), p.decoder, p.encoder);
        CHECK(p.st.bytes != SIZE_MAX && p.st.bytes % 64 == 0 &&
                  p.decoder % 64 == 0 && p.encoder % 64 == 0 &&
                  p.at_st % 64 == 0,
              "config %d: a part of the plan is not 64-byte aligned", k);
        int planned = 0;
        for (int i = 0; i < FRAE_SP_COUNT; i++)
            if (p.st.off[i] != FRAE_STATE_NONE) {
                planned++;
                CHECK(p.st.off[i] % 64 == 0 && p.st.off[i] < p.st.bytes,
                      "config %d: piece %d at %zu of %zu bytes", k, i,
                      p.st.off[i], p.st.bytes);
            }
        const int W = D + 2;
        float *f = ranged_frames(1, T, D, 1, 5 + k);
        unsigned char code[64] = {0};
        CHECK(frae_code_bytes(n) <= sizeof code, "config %d: code too big", k);
        for (int enc = 0; enc < 2; enc++) {
            const size_t size = enc ? p.encoder : p.decoder;
            char *block = aligned_alloc(64, size + GUARD);
            memset(block, 0xA5, size + GUARD);
            struct frae_codec_state *s =
                enc ? (struct frae_codec_state *)frae_encoder_init(block, n)
                    : (struct frae_codec_state *)frae_decoder_init(block, n);
            long off[FRAE_SP_COUNT], toff[FRAE_SP_COUNT];
            const int got = state_offsets(&s->st, s->st_base, off);
            CHECK(s->st_base == block + p.at_st && s->st_bytes == p.st.bytes &&
                      got == planned,
                  "config %d: st at %td, %zu bytes, %d pieces of %d planned", k,
                  s->st_base - block, s->st_bytes, got, planned);
            for (int i = 0; i < got; i++)
                CHECK(off[i] >= 0 && (size_t)off[i] < p.st.bytes &&
                          off[i] % 64 == 0,
                      "config %d: a piece of st at %ld of %zu", k, off[i],
                      p.st.bytes);
            for (int i = 0; i < got; i++) /* no two pieces at one place */
                for (int j = 0; j < i; j++)
                    CHECK(off[i] != off[j],
                          "config %d: two pieces of st at %ld", k, off[i]);
            const char *st_end = s->st_base + s->st_bytes;
            const char *end = block + p.decoder;
            if (c.normalize)
                CHECK((char *)s->xnorm >= st_end &&
                          (char *)(s->xnorm + D) <= end,
                      "config %d: xnorm out of its part", k);
            if (c.prior_hidden > 0) {
                const size_t LS =
                    (size_t)c.latent_dim * (size_t)frae_codec_prior_symbols(&c);
                CHECK((char *)s->scale >=
                              (c.normalize ? (char *)(s->xnorm + D) : st_end) &&
                          (char *)(s->weights + LS) <= end,
                      "config %d: the recalibration out of its part", k);
            }
            if (enc) {
                const int ntrial =
                    state_offsets(&s->trial, s->trial_base, toff);
                CHECK(s->trial_base == block + p.decoder && ntrial == got &&
                          !memcmp(off, toff, sizeof(long) * (size_t)got),
                      "config %d: the trial state is not st's layout at %zu", k,
                      p.decoder);
                const size_t LS =
                    (size_t)c.latent_dim * (size_t)frae_codec_prior_symbols(&c);
                CHECK((char *)s->raw_logit == s->trial_base + s->st_bytes &&
                          (char *)(s->best_q + c.latent_dim) <=
                              block + p.encoder &&
                          s->best_q == s->raw_logit + LS,
                      "config %d: the search's buffers out of their part", k);
                if (c.prior_hidden > 0)
                    frae_encoder_set_search((frae_encoder *)s, 2, 0.1f);
            } else {
                CHECK(!s->trial_base && !s->raw_logit && !s->best_q,
                      "config %d: a decoder with an encoder's search", k);
            }
            float out[D + 2];
            for (int t = 0; t < T; t++) {
                if (enc)
                    frae_encode_frame((frae_encoder *)s, f + (size_t)t * W,
                                      code, out);
                else
                    frae_decode_frame((frae_decoder *)s, code, out);
            }
            int kept = 1;
            for (int i = 0; i < GUARD; i++)
                kept &= (unsigned char)block[size + i] == 0xA5;
            CHECK(kept, "config %d: %s wrote past its %zu bytes", k,
                  enc ? "an encoder" : "a decoder", size);
            free(block);
        }
        free(f);
        frae_destroy(m);
    }
    return failures;
}

/* ---- a look-ahead encoder (cfg.lookahead) -------------------------------- */

/* Every frame of a stream (any version) through a reader, the envelopes
 * into got (D of each frame); returns the frames read. */
static long read_envelopes(const frae_model *m, const unsigned char *stream,
                           size_t len, int W, int D, float *got, long cap)
{
    frae_stream_reader *r = frae_stream_reader_create(frae_model_net(m));
    char err[256];
    long at = 0, k;
    size_t used = 0, need, pos = 0;
    const float *f;
    uint32_t seq;
    while ((k = frae_stream_read(r, stream + pos, len - pos, 1, &used, &need,
                                 &f, &seq, err, sizeof err)) > 0 ||
           used) {
        pos += used;
        for (long i = 0; i < k && at < cap; i++, at++)
            memcpy(got + at * D, f + i * W, sizeof(float) * D);
    }
    frae_stream_reader_destroy(r);
    return at;
}

/* The encoder also sees the next A frames (with cfg.lookahead_packet,
 * none past the next packet's first): decode(encode(x)) is still
 * frae_forward to the bit, for the frame API given them
 * (frae_encoder_set_ahead) and for the stream coder, which holds A frames
 * and gives each frame those of its own sequence (a file's sequences, a
 * version-4 stream's packets, version 5's packets, drained by NULL frames
 * or by end, with the same bytes); the frames ahead change the codes (the
 * weights that read them are not zero), and evaluation's loss is
 * frae_forward's. */
int test_codec_lookahead(void)
{
    int failures = 0;
    const int nseq = 3, T = 23, D = 7;
    /* look-ahead A, and packets P its frames stop at (0: none) */
    static const int ap[][2] = {{1, 0}, {2, 0}, {2, 3}, {4, 4}};
    for (int i_ap = 0; i_ap < 4; i_ap++)
        for (int ranged = 0; ranged <= 1; ranged++) {
            const int A = ap[i_ap][0], P = ap[i_ap][1];
            frae_config c;
            codec_config(&c, FRAE_QUANT_BINARY, 0);
            c.family = FRAE_FAMILY_GRU;
            c.lookahead = A;
            c.lookahead_packet = P;
            c.pitch = 1;
            c.prior_hidden = ranged ? 6 : 0;
            c.batch = nseq;
            const int W = D + 2;
            frae_model *m = create_or_die(&c);
            perturb_params(m, NULL);
            const frae_net *net = frae_model_net(m);
            float *f = ranged_frames(nseq, T, D, 1, 70 + A);
            float *x = malloc(sizeof(float) * nseq * T * D);
            for (int i = 0; i < nseq * T; i++)
                memcpy(x + (size_t)i * D, f + (size_t)i * W, sizeof(float) * D);
            float *want = malloc(sizeof(float) * nseq * T * D);
            float *got = malloc(sizeof(float) * nseq * T * D);
            frae_forward(m, x, want, nseq, T);
            /* a speech codec searches its codes by default, but not a
             * variable-rate look-ahead one (the search, frame by frame,
             * undoes codes made for the frames ahead at a rate weight) */
            frae_codec_settings cs;
            frae_stream_options so;
            frae_codec_settings_default(&cs);
            char why[256];
            CHECK(!frae_codec_stream_options(&cs, net, nseq, &so, why,
                                             sizeof why) &&
                      so.search == (ranged ? 0 : FRAE_SEARCH_PASSES),
                  "A %d, ranged %d: the default search is %d passes", A, ranged,
                  so.search);
            double sse = 0;
            for (int i = 0; i < nseq * T * D; i++) { /* as training sums */
                const float diff = want[i] - x[i];
                sse += (double)diff * diff;
            }
            frae_stats st;
            CHECK(!frae_step(m,
                             &(frae_batch){.x = x,
                                           .nseq = nseq,
                                           .nframes = T,
                                           .kind = FRAE_STEP_EVALUATE},
                             &st) &&
                      fabs(st.mse - sse / (nseq * T * D)) <= 1e-12 * sse,
                  "A %d: evaluation's mse %.9g, forward's %.9g", A, st.mse,
                  sse / (nseq * T * D));
            /* the frame API, given the frames ahead */
            if (!ranged) {
                frae_encoder *e = frae_encoder_create(net);
                frae_decoder *d = frae_decoder_create(net);
                unsigned char *code = malloc(frae_code_bytes(net));
                unsigned char *plain = malloc(frae_code_bytes(net));
                frae_encoder *e0 = frae_encoder_create(net);
                float out[9];
                int same = 1, moved = 0;
                CHECK(frae_encoder_set_ahead(e, f, A + 1, W) == -1 &&
                          frae_encoder_set_ahead(e, NULL, 1, W) == -1,
                      "A %d: set_ahead took more frames than A, or none", A);
                for (int s = 0; s < nseq; s++) {
                    frae_encoder_reset(e), frae_encoder_reset(e0);
                    frae_decoder_reset(d);
                    for (int t = 0; t < T; t++) {
                        const float *ft = f + ((size_t)s * T + t) * W;
                        const int edge = P ? P - t % P : A;
                        int n = T - 1 - t < A ? T - 1 - t : A;
                        n = n < edge ? n : edge;
                        frae_encoder_set_ahead(e, ft + W, n, W);
                        frae_encode_frame(e, ft, code, NULL);
                        frae_encode_frame(e0, ft, plain, NULL); /* held */
                        moved += memcmp(code, plain, frae_code_bytes(net)) != 0;
                        frae_decode_frame(d, code, out);
                        same &= !memcmp(out, want + ((size_t)s * T + t) * D,
                                        sizeof(float) * D);
                    }
                }
                CHECK(same,
                      "A %d: the frame API's decode differs from "
                      "forward",
                      A);
                CHECK(moved > 0, "A %d: the frames ahead changed no code", A);
                frae_encoder_destroy(e), frae_encoder_destroy(e0);
                frae_decoder_destroy(d);
                free(code), free(plain);
            }
            /* the stream coder: a file, then real-time packets (one
             * sequence) drained by NULL frames and by end, and sent as
             * soon as their frames are ready (the same bytes, with each
             * frame held only until the frames it sees have come) */
            for (int kind = 0; kind < 4; kind++) {
                char err[256] = "";
                frae_stream_options o;
                frae_stream_options_default(&o);
                if (ranged)
                    o.packet_frames = 4;
                if (kind)
                    o.datagrams = 1, o.packet_frames = 4;
                const int ns = kind ? 1 : nseq;
                frae_stream_encoder *e = frae_stream_encoder_create(
                    net, &o, (uint32_t)ns, T, ns == 1, err, sizeof err);
                CHECK(e != NULL, "A %d: %s", A, err);
                if (!e)
                    continue;
                unsigned char *stream = malloc(1 << 16);
                size_t len = 0, n;
                const unsigned char *b = frae_stream_encoder_bytes(e, &n);
                memcpy(stream + len, b, n), len += n;
                float recon[9];
                int aligned = 1, soonest = 1;
                for (int i = 0; i < ns * T; i++) {
                    recon[0] = NAN;
                    frae_stream_encode(e, f + (size_t)i * W, 0, recon);
                    b = frae_stream_encoder_bytes(e, &n);
                    memcpy(stream + len, b, n), len += n;
                    if (kind < 3) {
                        /* frame i - A coded now: its recon is forward's */
                        aligned &=
                            i < A ? isnan(recon[0])
                                  : !memcmp(recon, want + (size_t)(i - A) * D,
                                            sizeof(float) * D);
                        continue;
                    }
                    while (frae_stream_encoder_ready(e)) {
                        frae_stream_encode(e, NULL, 0, NULL);
                        b = frae_stream_encoder_bytes(e, &n);
                        memcpy(stream + len, b, n), len += n;
                    }
                    /* held: frame `first` on, the first that has not yet
                     * seen min(A, the frames to the next packet's first) */
                    int first = 0;
                    while (
                        first <= i &&
                        first + (P && P - first % P < A ? P - first % P : A) <=
                            i)
                        first++;
                    soonest &= frae_stream_encoder_pending(e) ==
                               (uint32_t)(i + 1 - first);
                }
                CHECK(aligned, "A %d, %s: recon is not the frame A back", A,
                      kind ? "packets" : "file");
                CHECK(soonest,
                      "A %d, P %d: a frame held past its last frame ahead", A,
                      P);
                CHECK(kind == 3 ||
                          frae_stream_encoder_pending(e) == (uint32_t)A,
                      "A %d: %u frames held at the end", A,
                      frae_stream_encoder_pending(e));
                while (kind == 2 && frae_stream_encoder_pending(e)) {
                    frae_stream_encode(e, NULL, 0, NULL);
                    b = frae_stream_encoder_bytes(e, &n);
                    memcpy(stream + len, b, n), len += n;
                }
                CHECK(!frae_stream_encoder_end(e), "A %d: end", A);
                b = frae_stream_encoder_bytes(e, &n);
                memcpy(stream + len, b, n), len += n;
                frae_stream_encoder_destroy(e);
                static unsigned char first_drain[1 << 16];
                static size_t first_len;
                if (kind == 1)
                    memcpy(first_drain, stream, len), first_len = len;
                if (kind >= 2)
                    CHECK(len == first_len && !memcmp(stream, first_drain, len),
                          "A %d: %s and by end differ", A,
                          kind == 2 ? "draining by NULL frames"
                                    : "sending frames as they are ready");
                const long at =
                    read_envelopes(m, stream, len, W, D, got, (long)ns * T);

                CHECK(at == (long)ns * T &&
                          !memcmp(got, want, sizeof(float) * ns * T * D),
                      "A %d, %s%s: %ld frames, decode(encode(x)) differs "
                      "from forward",
                      A, ranged ? "ranged " : "", kind ? "packets" : "file",
                      at);
                free(stream);
            }
            printf("    look-ahead %d (packets %d)%s: decode(encode(x)) == "
                   "forward to the bit (frames, file, packets)\n",
                   A, P, ranged ? ", ranged" : "");
            free(f), free(x), free(want), free(got);
            frae_destroy(m);
        }
    return failures;
}
