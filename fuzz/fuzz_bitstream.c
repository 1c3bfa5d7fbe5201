/* libFuzzer target for the .fbs reader and the decoders behind it, of
 * both families (a dense model and a GRU one that also codes pitch and
 * normalizes) and of entropy-coded streams (version 4: a GRU model with a
 * prior, its within-frame autoregression and the envelope pitch coder,
 * with or without DTX's silence flags);
 * (size / 2) % 3 picks.
 *
 * Half the inputs are taken as they are: they exercise the header and
 * length checks.  In the other half the harness writes the model's hash
 * and correct CRCs into the input first (for version 4 the packets'
 * lengths clamped to what is there, and their CRCs), so
 * mutations reach the code unpacking, the range decoder and the decoder
 * (random bytes almost never pass a CRC); a quarter of the prior model's
 * are made version-3 streams instead.
 * FRAE_FUZZ_SEED_DIR=dir makes it write a valid stream of each model
 * there as seeds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "frae_codec.h"
#include "io/formats.h" /* frae_crc32, the library's own */

static frae_model *models[3];
static frae_decoder *decoders[3];

/* A valid stream of model m (12 frames) into dir/name; with dtx 1 (a
 * model with a prior), frames 6 to 9 silent; dtx 2, version 3. */
static void write_seed(const frae_model *m, const char *dir, const char *name,
                       int dtx)
{
    frae_encoder *e = frae_encoder_create(frae_model_net(m));
    enum { T = 12 };
    unsigned char codes[T * 8];
    float x[8];
    for (int t = 0; t < T; t++) {
        for (int d = 0; d < 6; d++)
            x[d] = (float)((t * 7 + d * 3) % 11) / 11.0f - 0.5f;
        x[6] = 90.0f + 25.0f * (float)t; /* f0 and voicing, if coded */
        x[7] = t % 4 != 0;
        frae_encode_frame(e, x, codes + t * frae_code_bytes(frae_model_net(m)),
                          NULL);
    }
    frae_stream h;
    frae_stream_header(frae_model_net(m), 1, T,
                       1 | (dtx == 1 ? FRAE_STREAM_DTX : 0), &h);
    if (dtx == 2)
        h.version = FRAE_STREAM_VERSION_RANGED_V3;
    size_t size = frae_stream_bytes(&h);
    unsigned char *buf = malloc(size ? size : 4096);
    if (frae_stream_ranged(&h)) { /* packets of 5 frames */
        frae_stream_writer w;
        frae_range_enc rc;
        h.packet_frames = 5;
        size = frae_stream_writer_begin(&w, &h, buf);
        frae_encoder_reset(e);
        frae_encoder_set_dtx(e, dtx == 1);
        for (int t = 0, k = 0; t < T; t++) {
            for (int d = 0; d < 6; d++)
                x[d] = (float)((t * 7 + d * 3) % 11) / 11.0f - 0.5f;
            x[6] = 90.0f + 25.0f * (float)t;
            x[7] = t % 4 != 0;
            if (t % 5 == 0)
                frae_range_enc_init(&rc, buf + size + FRAE_PACKET_PAYLOAD,
                                    1024);
            if (dtx == 1 && t >= 6 && t <= 9)
                frae_encode_silence_ranged(e, &rc, NULL);
            else
                frae_encode_frame_ranged(e, x, &rc, NULL);
            if (t % 5 == 4 || t == T - 1)
                size += frae_stream_packet_seal(&h, buf + size, (uint32_t)k++,
                                                frae_range_enc_finish(&rc));
        }
    } else {
        frae_stream_write(buf, &h, codes);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, size, f);
        fclose(f);
    }
    free(buf);
    frae_encoder_destroy(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int k = 0; k < 3; k++) {
        const int gru = k > 0;
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
        c.normalize = k == 1;
        c.prior_hidden = k == 2 ? 8 : 0; /* version-4 streams */
        /* ... whose units are coded in order and whose pitch has the
         * default coder for range coding, the voicing in the context of
         * the decoded envelope */
        c.prior_ar = k == 2;
        c.pitch_ranged =
            k == 2 ? FRAE_PITCH_CODER_ENVELOPE : FRAE_PITCH_CODER_4BIT;
        models[k] = frae_create(&c, NULL, 0);
        if (!models[k])
            abort();
        if (k == 1) {
            const float mean[6] = {0.1f, -0.2f, 0, 0.3f, 0, 0};
            const float std[6] = {1, 0.5f, 2, 1, 1, 0.25f};
            frae_set_normalization(models[k], mean, std);
        }
        decoders[k] = frae_decoder_create(frae_model_net(models[k]));
        if (!decoders[k])
            abort();
    }
    const char *dir = getenv("FRAE_FUZZ_SEED_DIR");
    if (dir) {
        write_seed(models[0], dir, "seed.fbs", 0);
        write_seed(models[1], dir, "seed_gru.fbs", 0);
        write_seed(models[2], dir, "seed_prior.fbs", 0);
        write_seed(models[2], dir, "seed_prior_dtx.fbs", 1);
        write_seed(models[2], dir, "seed_prior_v3.fbs", 2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    const int which = (int)(size >> 1) % 3;
    const frae_model *model = models[which];
    frae_decoder *decoder = decoders[which];
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (which == 2 && size >= 32 && (size & 1) && (size & 2)) {
        /* frae 0.4's version 3, which frae still reads: the model's hash,
         * the header's CRC, and each packet's index, length and CRC made
         * right */
        uint64_t h = frae_model_hash(frae_model_net(model));
        buf[6] = FRAE_STREAM_VERSION_RANGED_V3;
        for (int i = 0; i < 8; i++)
            buf[8 + i] = (unsigned char)(h >> 8 * i);
        /* one-byte varints (sequences, frames, D, L; after code bits and
         * quantizer, levels and packet frames), then the header's CRC */
        for (int i = 16; i < 24; i++)
            if (i != 20 && i != 21)
                buf[i] &= 0x7f;
        buf[16] &= 3; /* at most 3 sequences: packets that fit the input */
        uint32_t crc = frae_crc32(buf, 24);
        for (int i = 0; i < 4; i++)
            buf[24 + i] = (unsigned char)(crc >> 8 * i);
        size_t at = 28;
        for (uint32_t k = 0; at + FRAE_PACKET_MIN + 1 <= size; k++) {
            const size_t room = size - at;
            size_t n = (size_t)(buf[at + 1] | buf[at + 2] << 8) % (room - 2);
            unsigned char length[5];
            while (1 + frae_varint_put(length, (uint32_t)n) + n + 2 > room)
                n--;
            buf[at] = (unsigned char)k;
            const size_t lb = frae_varint_put(buf + at + 1, (uint32_t)n);
            const uint16_t crc16 = frae_crc16(buf + at, 1 + lb + n);
            buf[at + 1 + lb + n] = (unsigned char)(crc16 & 0xff);
            buf[at + 2 + lb + n] = (unsigned char)(crc16 >> 8);
            at += 3 + lb + n;
        }
    } else if (which == 2 && size >= 32 && (size & 1)) {
        /* half the inputs pass every check, so the range decoder and the
         * pitch model see them: the model's hash, one-byte sizes, and each
         * packet's length and CRC (over the header too) made right */
        uint64_t h = frae_model_hash(frae_model_net(model));
        buf[6] = FRAE_STREAM_VERSION_RANGED;
        for (int i = 0; i < 8; i++)
            buf[8 + i] = (unsigned char)(h >> 8 * i);
        /* one-byte varints: sequences, frames, packet frames */
        for (int i = 16; i < 19; i++)
            buf[i] &= 0x7f;
        buf[16] &= 3;   /* at most 3 sequences: packets that fit the input */
        frae_stream hs; /* the header as the packets' CRC covers it */
        memset(&hs, 0, sizeof hs);
        hs.version = buf[6], hs.flags = buf[7], hs.model_hash = h;
        hs.sequences = buf[16], hs.frames = buf[17], hs.packet_frames = buf[18];
        size_t at = 19;
        for (uint32_t k = 0; at + FRAE_PACKET_MIN <= size; k++) {
            const size_t room = size - at;
            size_t n = (size_t)(buf[at] | buf[at + 1] << 8) % (room - 1);
            unsigned char length[5];
            while (frae_varint_put(length, (uint32_t)n) + n + 2 > room)
                n--;
            const size_t lb = frae_varint_put(buf + at, (uint32_t)n);
            const uint16_t crc = frae_packet_crc(&hs, buf + at, lb + n, k);
            buf[at + lb + n] = (unsigned char)(crc & 0xff);
            buf[at + lb + n + 1] = (unsigned char)(crc >> 8);
            at += 2 + lb + n;
        }
    } else if (size >= FRAE_STREAM_HEADER + 4 && (size & 1)) {
        uint64_t h = frae_model_hash(frae_model_net(model));
        for (int i = 0; i < 8; i++)
            buf[8 + i] = (unsigned char)(h >> 8 * i);
        uint32_t crc = frae_crc32(buf, size - 4);
        for (int i = 0; i < 4; i++)
            buf[size - 4 + i] = (unsigned char)(crc >> 8 * i);
    }
    frae_stream s;
    char err[256];
    if (!frae_stream_parse(buf, size, &s, err, sizeof err) &&
        !frae_stream_check_model(&s, frae_model_net(model), err, sizeof err) &&
        frae_stream_ranged(&s)) {
        const unsigned char *at = s.payload, *end = buf + size;
        frae_decoder_set_dtx(decoder, (s.flags & FRAE_STREAM_DTX) != 0);
        frae_range_dec rd;
        float y[8];
        uint32_t k = 0;
        for (uint64_t f = 0; f < (uint64_t)s.sequences * s.frames && f < 4096;
             f++) {
            const uint32_t t = (uint32_t)(f % s.frames);
            if (t == 0)
                frae_decoder_reset(decoder);
            if (t % s.packet_frames == 0) {
                const unsigned char *pl;
                size_t n;
                long used = frae_stream_packet_parse(
                    &s, at, (size_t)(end - at), k++, &pl, &n, err, sizeof err);
                if (used < 0)
                    abort(); /* the parse checked every packet */
                at += used;
                frae_range_dec_init(&rd, pl, n);
            }
            if (frae_decode_frame_ranged(decoder, &rd, y))
                break;
        }
    } else if (!frae_stream_parse(buf, size, &s, err, sizeof err) &&
               !frae_stream_check_model(&s, frae_model_net(model), err,
                                        sizeof err)) {
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
