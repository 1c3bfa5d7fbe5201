/* libFuzzer target for the .fbs reader and the decoders behind it, of
 * both families (a dense model and a GRU one that also codes pitch and
 * normalizes; bit 1 of the size picks).
 *
 * Half the inputs are taken as they are: they exercise the header and
 * length checks.  In the other half the harness writes the model's hash
 * and a correct CRC into the input first, so mutations reach the code
 * unpacking and the decoder (random bytes almost never pass a CRC).
 * FRAE_FUZZ_SEED_DIR=dir makes it write a valid stream of each model
 * there as seeds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h" /* frae_crc32, the library's own */
#include "frae.h"

static frae_model *models[2];
static frae_decoder *decoders[2];

/* A valid stream of model m (12 frames) into dir/name. */
static void write_seed(const frae_model *m, const char *dir, const char *name)
{
    frae_encoder *e = frae_encoder_create(m);
    enum { T = 12 };
    unsigned char codes[T * 8];
    float x[8];
    for (int t = 0; t < T; t++) {
        for (int d = 0; d < 6; d++)
            x[d] = (float)((t * 7 + d * 3) % 11) / 11.0f - 0.5f;
        x[6] = 90.0f + 25.0f * (float)t; /* f0 and voicing, if coded */
        x[7] = t % 4 != 0;
        frae_encode_frame(e, x, codes + t * frae_code_bytes(m), NULL);
    }
    frae_stream h;
    frae_stream_header(m, 1, T, 1, &h);
    unsigned char *buf = malloc(frae_stream_bytes(&h));
    frae_stream_write(buf, &h, codes);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, frae_stream_bytes(&h), f);
        fclose(f);
    }
    free(buf);
    frae_encoder_destroy(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int gru = 0; gru < 2; gru++) {
        frae_config c;
        frae_config_default(&c);
        c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        c.frame_dim = 6, c.history = 2, c.latent_dim = 5;
        c.enc_hidden[0] = 16, c.enc_hidden[1] = 8;
        c.dec_hidden[0] = 8, c.dec_hidden[1] = 16;
        c.quantizer = FRAE_QUANT_UNIFORM;
        c.quant_levels = 6; /* 3 bits: indices 6 and 7 are invalid codes */
        c.training = 0;
        c.pitch = gru;
        c.normalize = gru;
        models[gru] = frae_create(&c, NULL, 0);
        if (!models[gru])
            abort();
        if (gru) {
            const float mean[6] = {0.1f, -0.2f, 0, 0.3f, 0, 0};
            const float std[6] = {1, 0.5f, 2, 1, 1, 0.25f};
            frae_set_normalization(models[gru], mean, std);
        }
        decoders[gru] = frae_decoder_create(models[gru]);
        if (!decoders[gru])
            abort();
    }
    const char *dir = getenv("FRAE_FUZZ_SEED_DIR");
    if (dir) {
        write_seed(models[0], dir, "seed.fbs");
        write_seed(models[1], dir, "seed_gru.fbs");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    const frae_model *model = models[size >> 1 & 1];
    frae_decoder *decoder = decoders[size >> 1 & 1];
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (size >= FRAE_STREAM_HEADER + 4 && (size & 1)) {
        uint64_t h = frae_model_hash(model);
        for (int i = 0; i < 8; i++)
            buf[8 + i] = (unsigned char)(h >> 8 * i);
        uint32_t crc = frae_crc32(buf, size - 4);
        for (int i = 0; i < 4; i++)
            buf[size - 4 + i] = (unsigned char)(crc >> 8 * i);
    }
    frae_stream s;
    char err[256];
    if (!frae_stream_parse(buf, size, &s, err, sizeof err) &&
        !frae_stream_check_model(&s, model, err, sizeof err)) {
        unsigned char code[8];
        float y[8];
        uint64_t n = (uint64_t)s.sequences * s.frames;
        for (uint64_t f = 0; f < n && f < 4096; f++) {
            if (f % s.frames == 0)
                frae_decoder_reset(decoder);
            frae_stream_frame_code(&s, f, code);
            if (frae_decode_frame(decoder, code, y))
                break;
        }
    }
    free(buf);
    return 0;
}
