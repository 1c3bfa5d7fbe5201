/* libFuzzer target for real-time packets (stream version 5) and the
 * receiving end's handling of loss: the header and the file framing
 * parsers, and the packet decoder fed datagrams that are lost, late,
 * duplicated, reordered, truncated or bit-flipped, of a fixed-rate model
 * and of an entropy-coded one (a prior, DTX, pitch).
 *
 * The first byte picks: bit 0 the model, bit 1 through (decoding through
 * bit errors), bit 2 how the rest is read.
 * - Raw (bit 2 clear): the rest is a stream as a file holds it, read as
 *   frae decode reads one: the header, then its bytes through
 *   frae_packet_read (lengths, CRCs, damaged framing found again, the end's
 *   loss concealed), given as a pipe gives them (bit 3: exactly the bytes
 *   it asks for) or all at once.  Each call must take bytes, give frames
 *   or ask for more than it has; the frames never pass the header's count,
 *   nor what the bytes that came can say (FRAE_PACKET_DECODE_MAX a call
 *   that took bytes, a packet a byte for a long loss run's, and
 *   FRAE_PACKET_TAIL_MAX at the end).
 * - Made (bit 2 set): the harness encodes a valid stream of 24 frames
 *   (every 5th silent with DTX) into 3-frame packets, then the rest of
 *   the input says what the channel does to each packet in turn: a byte
 *   of actions (drop it, deliver it twice, swap it with the next, flip a
 *   bit at the next byte's position, cut it to the next byte's length, a
 *   concealment call instead), so the decoder meets valid packets in
 *   every order and state.
 * Every call must give frames, at most its cap, finite; nothing may
 * crash, hang or read out of bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frae_codec.h"

enum { T = 24, P = 3, MAX_PACKET = 512, MAX_FRAMES = 64 * 16 };

static frae_model *models[2];
static float frames[MAX_FRAMES * 8]; /* frames of 6 + 2 values */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int k = 0; k < 2; k++) {
        frae_config c;
        frae_config_default_gru(&c);
        c.frame_dim = 6, c.latent_dim = 5;
        c.enc_hidden[0] = 8, c.dec_hidden[0] = 8;
        c.quantizer = k ? FRAE_QUANT_BINARY : FRAE_QUANT_UNIFORM;
        c.quant_levels = 6; /* 3 bits: indices 6 and 7 no encoder makes */
        c.training = 0;
        c.pitch = 1;
        c.prior_hidden = k ? 8 : 0;
        c.prior_ar = k;
        c.pitch_ranged = k ? FRAE_PITCH_CODER_ENVELOPE : FRAE_PITCH_CODER_4BIT;
        if (!(models[k] = frae_create(&c, NULL, 0)))
            abort();
    }
    return 0;
}

/* frames out: at most cap, finite */
static void check_out(long n, long cap, int width)
{
    if (n < 0 || n > cap)
        __builtin_trap();
    for (long i = 0; i < n * width; i++)
        if (!isfinite(frames[i]))
            __builtin_trap();
}

static void fuzz_raw(frae_packet_decoder **pd, const frae_model *m, int through,
                     int chunked, const uint8_t *p, size_t size)
{
    frae_stream s;
    char err[256] = "";
    long hb = frae_packet_header_parse(p, size, &s, err, sizeof err);
    if (hb <= 0)
        return;
    if (s.model_hash !=
        frae_model_hash(frae_model_net(m))) /* let the rest reach a decoder */
        s.model_hash = frae_model_hash(frae_model_net(m));
    if (s.packet_frames > 16) /* a small cap, so that it can be checked */
        s.packet_frames = 16;
    *pd = frae_packet_decoder_create(frae_model_net(m), &s, err, sizeof err);
    if (!*pd)
        return;
    frae_packet_decoder_through(*pd, through);
    const int width = frae_get_config(m)->frame_dim + 2;
    const long cap = FRAE_PACKET_DECODE_MAX(s.packet_frames);
    if (cap > MAX_FRAMES)
        __builtin_trap();
    const uint8_t *b = p + hb;
    const size_t n = size - (size_t)hb, window = frae_packet_window(*pd);
    size_t at = 0, have = chunked ? 0 : n;
    uint64_t out = 0, taking = 0;
    for (;;) {
        size_t used, need;
        const int end = at + have >= n;
        const long k =
            frae_packet_read(*pd, b + at, have, end, &used, &need, frames, cap);
        check_out(k, cap, width);
        out += (uint64_t)k;
        taking += used > 0;
        if (used > have || (s.frames && out > s.frames) ||
            out > taking * (uint64_t)cap +
                      (uint64_t)s.packet_frames * (at + used) +
                      FRAE_PACKET_TAIL_MAX)
            __builtin_trap();
        at += used, have -= used;
        if (used || k)
            continue;
        if (end)
            break;
        if (need <= have || need > window) /* asks for nothing, or too much */
            __builtin_trap();
        have = need > n - at ? n - at : need;
    }
}

static void fuzz_made(frae_packet_decoder **pd, const frae_model *m,
                      int through, const uint8_t *p, size_t size)
{
    const int ranged = frae_get_config(m)->prior_hidden > 0;
    frae_stream_options o;
    frae_stream_options_default(&o);
    o.datagrams = 1;
    o.packet_frames = P;
    o.dtx = ranged;
    o.resync_packets = 3;
    char err[256];
    frae_stream_encoder *e = frae_stream_encoder_create(
        frae_model_net(m), &o, 1, T, 1, err, sizeof err);
    if (!e)
        abort();
    static unsigned char packets[T / P + 1][MAX_PACKET];
    static size_t lens[T / P + 1];
    int n_packets = 0;
    float x[8];
    for (int t = 0; t < T; t++) {
        for (int d = 0; d < 6; d++)
            x[d] = (float)((t * 7 + d * 3) % 11) / 11.0f - 0.5f;
        x[6] = 90.0f + 25.0f * (float)t;
        x[7] = t % 4 != 0;
        size_t n;
        if (frae_stream_encode(e, x, t % 5 == 4, NULL) &&
            frae_stream_encoder_packet(e, &n) && n <= MAX_PACKET) {
            memcpy(packets[n_packets], frae_stream_encoder_packet(e, &n), n);
            lens[n_packets++] = n;
        }
    }
    *pd = frae_packet_decoder_create(
        frae_model_net(m), frae_stream_encoder_stream(e), err, sizeof err);
    frae_stream_encoder_destroy(e);
    if (!*pd)
        abort();
    frae_packet_decoder_through(*pd, through);
    const int width = frae_get_config(m)->frame_dim + 2;
    const long cap = FRAE_PACKET_DECODE_MAX(P);
    size_t at = 0;
    for (int k = 0; k < n_packets; k++) {
        const uint8_t act = at < size ? p[at++] : 0;
        const uint8_t arg = at < size ? p[at++] : 0;
        unsigned char b[MAX_PACKET];
        size_t n = lens[k];
        memcpy(b, packets[k], n);
        if (act & 1) /* lost */
            continue;
        if ((act & 2) && k + 1 < n_packets) { /* swapped with the next */
            check_out(frae_packet_decode(*pd, packets[k + 1], lens[k + 1],
                                         frames, cap),
                      cap, width);
        }
        if (act & 4) /* a bit flipped */
            b[arg % n] ^= (unsigned char)(1u << (arg >> 5));
        if (act & 8) /* cut */
            n = arg % (n + 1);
        if (act & 16) /* its time passed: concealed */
            check_out(frae_packet_conceal(*pd, frames, cap), cap, width);
        else
            check_out(frae_packet_decode(*pd, b, n, frames, cap), cap, width);
        if (act & 32) /* delivered twice */
            check_out(frae_packet_decode(*pd, b, n, frames, cap), cap, width);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const frae_model *m = models[data[0] & 1];
    const int through = (data[0] & 2) != 0;
    frae_packet_decoder *pd = NULL;
    if (data[0] & 4)
        fuzz_made(&pd, m, through, data + 1, size - 1);
    else
        fuzz_raw(&pd, m, through, (data[0] & 8) != 0, data + 1, size - 1);
    frae_packet_decoder_destroy(pd);
    return 0;
}
