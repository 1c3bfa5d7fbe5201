/* Real-time packets (stream version 5): the packet decoder against the
 * encoder's own reconstruction, and through loss, lateness and
 * duplication (frae.h, "Real-time packets"). */
#include <math.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "core/frae_internal.h"
#include "frae_audio.h"
#include "test_util.h"
#include "tests.h"

enum { T = 60, D = 7, W = D + 2, P = 3, R = 4, MAXP = 512 };

/* Frames with pitch: a smooth envelope, f0 gliding, every 7th frame
 * unvoiced. */
static void frames_with_pitch(float *f)
{
    float *env = synth(1, T, D, 41);
    for (int t = 0; t < T; t++) {
        memcpy(f + (size_t)t * W, env + (size_t)t * D, sizeof(float) * D);
        f[(size_t)t * W + D] = 110.0f + 2.0f * (float)t;
        f[(size_t)t * W + D + 1] = t % 7 != 0;
    }
    free(env);
}

/* A small GRU codec with pitch, its weights perturbed: fixed-rate, or
 * (ranged) entropy-coded with an autoregressive prior. */
static frae_model *pitch_model(int ranged)
{
    const int enc[1] = {12}, dec[1] = {12};
    frae_config c;
    tiny_config(&c, D, 0, 1, enc, 5, 1, dec);
    c.family = FRAE_FAMILY_GRU;
    c.quantizer = FRAE_QUANT_BINARY;
    c.pitch = 1, c.training = 0, c.batch = 1;
    c.prior_hidden = ranged ? 6 : 0, c.prior_ar = ranged;
    c.pitch_ranged = ranged ? FRAE_PITCH_CODER_ENVELOPE : 0;
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    return m;
}

typedef struct {
    unsigned char bytes[T / P + 1][MAXP];
    size_t len[T / P + 1];
    int n;
    frae_stream header;
} sent;

/* The stream's packets and the encoder's reconstruction of every frame
 * (with DTX, every frame t % 9 == 8 silent; state: the network afresh at
 * each resynchronisation point, FRAE_STREAM_STATE_RESYNC). */
static int send(const frae_model *m, int dtx, int state, const float *f,
                sent *out, float *recon)
{
    frae_stream_options o;
    frae_stream_options_default(&o);
    o.datagrams = 1, o.packet_frames = P, o.resync_packets = R, o.dtx = dtx;
    o.resync_state = state;
    char err[256];
    frae_stream_encoder *e = frae_stream_encoder_create(
        frae_model_net(m), &o, 1, T, 1, err, sizeof err);
    if (!e) {
        printf("    encoder: %s\n", err);
        return -1;
    }
    out->n = 0;
    for (int t = 0; t < T; t++) {
        frae_stream_encode(e, f + (size_t)t * W, dtx && t % 9 == 8,
                           recon + (size_t)t * W);
        size_t n;
        const unsigned char *p = frae_stream_encoder_packet(e, &n);
        if (n && n <= MAXP) {
            memcpy(out->bytes[out->n], p, n);
            out->len[out->n++] = n;
        }
    }
    out->header = *frae_stream_encoder_stream(e);
    frae_stream_encoder_destroy(e);
    return 0;
}

/* The receiver: packet k of `order` (-1: a concealment call), frames out
 * in y; returns the frames. */
static long receive(const frae_model *m, const sent *s, const int *order,
                    int n_order, float *y, frae_packet_counts *c)
{
    char err[256];
    frae_packet_decoder *d = frae_packet_decoder_create(
        frae_model_net(m), &s->header, err, sizeof err);
    if (!d)
        return -1;
    long out = 0;
    for (int i = 0; i < n_order; i++)
        out += order[i] < 0
                   ? frae_packet_conceal(d, y + (size_t)out * W,
                                         FRAE_PACKET_DECODE_MAX(P))
                   : frae_packet_decode(d, s->bytes[order[i]], s->len[order[i]],
                                        y + (size_t)out * W,
                                        FRAE_PACKET_DECODE_MAX(P));
    frae_packet_decoder_counts(d, c);
    frae_packet_decoder_destroy(d);
    return out;
}

int test_packets_loss(void)
{
    int failures = 0;
    static float f[T * W], recon[T * W], y[(T + 3 * P) * W];
    static float plain[T * W];
    frames_with_pitch(f);
    /* fixed-rate, entropy-coded, fixed-rate with the state resynchronised */
    for (int mode = 0; mode < 3; mode++) {
        const int ranged = mode == 1, state = mode == 2;
        frae_model *m = pitch_model(ranged);
        sent s;
        if (send(m, ranged, state, f, &s, recon)) {
            failures++;
            frae_destroy(m);
            continue;
        }
        const char *kind = ranged  ? "entropy-coded, DTX"
                           : state ? "fixed-rate, state resync"
                                   : "fixed-rate";
        if (state) {
            unsigned char h[FRAE_STREAM_HEADER_V5_MAX];
            frae_stream back;
            char err[256];
            const size_t hn = frae_packet_header_put(&s.header, h);
            CHECK(s.header.flags & FRAE_STREAM_STATE_RESYNC &&
                      frae_packet_header_parse(h, hn, &back, err, sizeof err) ==
                          (long)hn &&
                      back.flags == s.header.flags,
                  "%s: the flag in the header, and back", kind);
            /* the bit on an entropy-coded stream: refused, one line */
            back.flags |= FRAE_STREAM_RANGED_PACKETS;
            const size_t bn = frae_packet_header_put(&back, h);
            CHECK(frae_packet_header_parse(h, bn, &back, err, sizeof err) < 0,
                  "%s: the bit on an entropy-coded stream refused", kind);
            frae_stream_options o;
            frae_stream_options_default(&o);
            o.resync_state = 1;
            CHECK(frae_stream_options_check(frae_model_net(m), &o) != NULL,
                  "%s: without real-time packets refused", kind);
            /* the network starts afresh at packet 4 (frame 12): the same
             * frames as without until there, others after */
            CHECK(!memcmp(recon, plain, sizeof(float) * 12 * W) &&
                      memcmp(recon + 12 * W, plain + 12 * W,
                             sizeof(float) * (T - 12) * W),
                  "%s: the encoder's frames the plain stream's until the "
                  "first resynchronisation point, not after",
                  kind);
        }
        CHECK(s.n == T / P, "%s: %d packets of %d frames for %d", kind, s.n, P,
              T);
        int order[T / P + 2], n = 0;
        frae_packet_counts pc;
        /* no loss: the encoder's reconstruction, to the bit */
        for (int k = 0; k < s.n; k++)
            order[n++] = k;
        long got = receive(m, &s, order, n, y, &pc);
        CHECK(got == T && !memcmp(y, recon, sizeof(float) * T * W) &&
                  pc.concealed == 0 && pc.lost == 0,
              "%s: loss-free: %ld frames, the encoder's reconstruction %s",
              kind, got,
              got == T && !memcmp(y, recon, sizeof(float) * T * W) ? "yes"
                                                                   : "no");
        if (mode == 0)
            memcpy(plain, recon, sizeof plain);
        /* packet 5 lost (frames 15..17): concealed, and from the next
         * resynchronisation point (packet 8, frame 24) on, entropy-coded
         * frames are the encoder's again to the bit; a fixed-rate stream
         * decodes the very next packet, and its pitch from that point on */
        n = 0;
        for (int k = 0; k < s.n; k++)
            if (k != 5)
                order[n++] = k;
        got = receive(m, &s, order, n, y, &pc);
        int finite = 1;
        for (long i = 0; i < got * W; i++)
            finite &= isfinite(y[i]) != 0;
        CHECK(got == T && finite && pc.lost == 1 &&
                  !memcmp(y, recon, sizeof(float) * 15 * W),
              "%s: one lost: %ld frames, %llu lost, finite %d", kind, got,
              (unsigned long long)pc.lost, finite);
        if (state) {
            /* the frames between the loss and the next resynchronisation
             * point (packet 8, frame 24) decoded on a state apart from the
             * encoder's, and from there on the encoder's frames to the
             * bit */
            CHECK(
                pc.concealed == 3 &&
                    memcmp(y + 18 * W, recon + 18 * W, sizeof(float) * 6 * W) &&
                    !memcmp(y + 24 * W, recon + 24 * W,
                            sizeof(float) * (T - 24) * W),
                "%s: 3 frames concealed (%llu), then the encoder's frames "
                "from the resynchronisation point on",
                kind, (unsigned long long)pc.concealed);
        } else if (ranged) {
            CHECK(pc.concealed == 9 && !memcmp(y + 24 * W, recon + 24 * W,
                                               sizeof(float) * (T - 24) * W),
                  "%s: concealed until the resynchronisation point (%llu "
                  "frames), then the encoder's frames",
                  kind, (unsigned long long)pc.concealed);
        } else {
            int pitch_back = pc.concealed == 3;
            for (int t = 24; t < T; t++)
                pitch_back &=
                    y[(size_t)t * W + D] == recon[(size_t)t * W + D] &&
                    y[(size_t)t * W + D + 1] == recon[(size_t)t * W + D + 1];
            CHECK(pitch_back,
                  "%s: 3 frames concealed (%llu), the pitch the "
                  "encoder's again from the anchor on",
                  kind, (unsigned long long)pc.concealed);
        }
        /* packet 3 delivered twice, packets 6 and 7 swapped: the copy and
         * the late one dropped, the swapped-out one concealed */
        n = 0;
        for (int k = 0; k < s.n; k++) {
            if (k == 6) {
                order[n++] = 7, order[n++] = 6;
                k = 7;
                continue;
            }
            order[n++] = k;
            if (k == 3)
                order[n++] = 3;
        }
        got = receive(m, &s, order, n, y, &pc);
        CHECK(got == T && pc.late == 2 && pc.lost == 1 &&
                  !memcmp(y, recon, sizeof(float) * 18 * W),
              "%s: a duplicate and a swap: %ld frames, %llu late, %llu lost",
              kind, got, (unsigned long long)pc.late,
              (unsigned long long)pc.lost);
        /* a concealment call where packet 2 would come, then the rest */
        n = 0;
        for (int k = 0; k < s.n; k++)
            order[n++] = k == 2 ? -1 : k;
        got = receive(m, &s, order, n, y, &pc);
        CHECK(got == T && pc.lost == 1 &&
                  !memcmp(y, recon, sizeof(float) * 6 * W),
              "%s: a packet known lost: %ld frames, %llu lost", kind, got,
              (unsigned long long)pc.lost);
        frae_destroy(m);
    }
    return failures;
}

/* Concealment runs the decoder on the last latent halved at each frame
 * lost: with 5 uniform levels (-1, -0.5, 0, 0.5, 1) a frame of codes at
 * +-1 concealed is, to the bit, the frame of codes at +-0.5 decoded on the
 * same state; a second concealed frame is not (+-0.25), and one after a
 * frame of zeros is the zeros again. */
int test_packets_conceal(void)
{
    int failures = 0;
    const int enc[1] = {12}, dec[1] = {12};
    frae_config c;
    tiny_config(&c, D, 2, 1, enc, 5, 1, dec);
    c.family = FRAE_FAMILY_GRU;
    c.quantizer = FRAE_QUANT_UNIFORM;
    c.quant_levels = 5;
    c.training = 0, c.batch = 1;
    frae_model *m = create_or_die(&c);
    perturb_params(m, NULL);
    frae_decoder *a = frae_decoder_create(frae_model_net(m)),
                 *b = frae_decoder_create(frae_model_net(m));
    const size_t cb = frae_code_bytes(frae_model_net(m));
    unsigned char hist[4], full[4], half[4], zero[4];
    /* 3 bits a value, LSB first: levels by value index */
    const int lv_hist[5] = {1, 3, 2, 0, 4}, lv_full[5] = {4, 0, 0, 4, 0},
              lv_half[5] = {3, 1, 1, 3, 1}, lv_zero[5] = {2, 2, 2, 2, 2};
    const int *lvs[4] = {lv_hist, lv_full, lv_half, lv_zero};
    unsigned char *codes[4] = {hist, full, half, zero};
    for (int k = 0; k < 4; k++) {
        memset(codes[k], 0, sizeof hist);
        for (int i = 0; i < 5; i++)
            for (int bit = 0; bit < 3; bit++)
                if (lvs[k][i] >> bit & 1)
                    codes[k][(i * 3 + bit) / 8] |=
                        (unsigned char)(1u << ((i * 3 + bit) % 8));
    }
    float ya[D], yb[D];
    int ok = cb <= sizeof hist;
    /* the same history on both, then a full frame */
    for (int t = 0; t < 6 && ok; t++) {
        ok &= !frae_decode_frame(a, t % 2 ? hist : full, ya);
        ok &= !frae_decode_frame(b, t % 2 ? hist : full, yb);
    }
    ok &= !frae_decode_frame(a, full, ya) && !frae_decode_frame(b, full, yb);
    frae_decoder_conceal(a, ya);
    ok &= !frae_decode_frame(b, half, yb);
    CHECK(ok && !memcmp(ya, yb, sizeof ya),
          "a concealed frame is the last latent halved, decoded, to the bit");
    frae_decoder_conceal(a, ya);
    ok &= !frae_decode_frame(b, half, yb);
    CHECK(ok && memcmp(ya, yb, sizeof ya),
          "a second one halves it again (not the half latent repeated)");
    frae_decoder_reset(a), frae_decoder_reset(b);
    for (int t = 0; t < 6 && ok; t++) {
        ok &= !frae_decode_frame(a, t % 2 ? hist : full, ya);
        ok &= !frae_decode_frame(b, t % 2 ? hist : full, yb);
    }
    ok &= !frae_decode_frame(a, zero, ya) && !frae_decode_frame(b, zero, yb);
    frae_decoder_conceal(a, ya);
    ok &= !frae_decode_frame(b, zero, yb);
    int finite = 1;
    for (int i = 0; i < D; i++)
        finite &= isfinite(ya[i]) != 0;
    CHECK(ok && finite && memcmp(ya, yb, sizeof ya) == 0,
          "after a frame of zeros, concealment decodes zeros again");
    frae_decoder_destroy(a), frae_decoder_destroy(b);
    frae_destroy(m);
    return failures;
}

/* ---- frae_packet_read: a file's bytes, damaged framing found again ---------- */

enum { FILE_MAX = (T / P + 1) * (MAXP + 8) };

/* The stream's packets framed as a file holds them (no header): each a
 * varint length, the packet, its CRC-16.  Where packet k starts in at. */
static size_t frame_file(const sent *s, unsigned char *f, size_t *at)
{
    size_t n = 0;
    for (int k = 0; k < s->n; k++) {
        at[k] = n;
        n += frae_varint_put(f + n, (uint32_t)s->len[k]);
        memcpy(f + n, s->bytes[k], s->len[k]);
        n += s->len[k];
        const uint16_t crc = frae_crc16(s->bytes[k], s->len[k]);
        f[n++] = (unsigned char)(crc & 0xff);
        f[n++] = (unsigned char)(crc >> 8);
    }
    return n;
}

/* How read_file gives the bytes: all at once, exactly as far as the
 * reader asks (a pipe's reader), or past that by up to 40 bytes more (a
 * reader that reads ahead) */
enum { GIVE_ALL, GIVE_ASKED, GIVE_MORE };

/* The file's bytes through frae_packet_read, given as `give` says,
 * decoded through bit errors with through; the frames out, -1 if a call
 * neither took bytes, gave frames nor asked for more (a hang), or gave
 * more than its cap. */
static long read_file_through(const frae_model *m, const frae_stream *h,
                              const unsigned char *f, size_t size, int give,
                              int through, float *y, long y_cap,
                              frae_packet_counts *c)
{
    char err[256];
    frae_packet_decoder *d =
        frae_packet_decoder_create(frae_model_net(m), h, err, sizeof err);
    if (!d)
        return -1;
    frae_packet_decoder_through(d, through);
    static float frames[FRAE_PACKET_DECODE_MAX(P) * W];
    size_t at = 0, have = give == GIVE_ALL ? size : 0;
    uint32_t ahead = 12345; /* GIVE_MORE's draws */
    long out = 0;
    for (int guard = 0; guard < 100000; guard++) {
        size_t used, need;
        const int end = at + have >= size;
        const long k = frae_packet_read(d, f + at, have, end, &used, &need,
                                        frames, FRAE_PACKET_DECODE_MAX(P));
        if (k < 0 || k > FRAE_PACKET_DECODE_MAX(P) || used > have ||
            (!k && !used && !end && need <= have))
            break;
        if (out + k <= y_cap)
            memcpy(y + (size_t)out * W, frames, sizeof(float) * k * W);
        out += k;
        at += used, have -= used;
        if (!k && !used) {
            if (end) {
                frae_packet_decoder_counts(d, c);
                frae_packet_decoder_destroy(d);
                return out;
            }
            if (give == GIVE_MORE) {
                ahead = ahead * 1664525u + 1013904223u;
                need += (ahead >> 16) % 41;
            }
            have = need > size - at ? size - at : need;
        }
    }
    frae_packet_decoder_destroy(d);
    return -1;
}

/* As read_file_through, concealing damaged packets; chunked: GIVE_ASKED,
 * else GIVE_ALL */
static long read_file(const frae_model *m, const frae_stream *h,
                      const unsigned char *f, size_t size, int chunked,
                      float *y, long y_cap, frae_packet_counts *c)
{
    return read_file_through(m, h, f, size, chunked ? GIVE_ASKED : GIVE_ALL, 0,
                             y, y_cap, c);
}

int test_packets_read_resync(void)
{
    int failures = 0;
    static float f[T * W], recon[T * W], y[(T + 200) * W], z[(T + 200) * W],
        w[(T + 200) * W];
    static unsigned char file[FILE_MAX], bad[FILE_MAX];
    frames_with_pitch(f);
    for (int ranged = 0; ranged < 2; ranged++) {
        frae_model *m = pitch_model(ranged);
        sent s;
        size_t at[T / P + 1];
        if (send(m, ranged, 0, f, &s, recon)) {
            failures++;
            frae_destroy(m);
            continue;
        }
        const char *kind = ranged ? "entropy-coded" : "fixed-rate";
        const size_t size = frame_file(&s, file, at);
        frae_packet_counts pc;
        /* clean: the encoder's frames to the bit, read as a pipe gives
         * the bytes or all at once */
        long got = read_file(m, &s.header, file, size, 1, y, T + 200, &pc);
        long all = read_file(m, &s.header, file, size, 0, z, T + 200, &pc);
        CHECK(got == T && all == T &&
                  !memcmp(y, recon, sizeof(float) * T * W) &&
                  !memcmp(z, recon, sizeof(float) * T * W),
              "%s: clean, chunked %ld and whole %ld frames: the encoder's",
              kind, got, all);
        /* every single-bit flip of every packet's length byte: decoded to
         * the end, T frames, the frames before the damaged packet the
         * clean ones, the damage seen */
        int worst_ok = 1, flips = 0;
        for (int k = 0; k < s.n && worst_ok; k++)
            for (int bit = 0; bit < 8; bit++, flips++) {
                memcpy(bad, file, size);
                bad[at[k]] ^= (unsigned char)(1u << bit);
                got = read_file(m, &s.header, bad, size, bit & 1, y, T + 200,
                                &pc);
                int finite = 1;
                for (long i = 0; i < (got > 0 ? got : 0) * W; i++)
                    finite &= isfinite(y[i]) != 0;
                if (got != T || !finite || pc.frames != (uint64_t)got ||
                    memcmp(y, recon, sizeof(float) * (size_t)k * P * W) ||
                    pc.concealed < P) {
                    printf("    packet %d's length, bit %d: %ld frames, "
                           "%llu concealed\n",
                           k, bit, got, (unsigned long long)pc.concealed);
                    worst_ok = 0;
                    break;
                }
            }
        CHECK(worst_ok,
              "%s: %d single-bit flips of a packet's length: each "
              "decoded to the end, %d frames",
              kind, flips, T);
        /* garbage between packets 6 and 7 (a stray 65536 length first) */
        memcpy(bad, file, at[7]);
        const unsigned char junk[] = {0x80, 0x80, 0x04, 1, 2, 3, 0xff, 0xfe};
        memcpy(bad + at[7], junk, sizeof junk);
        memcpy(bad + at[7] + sizeof junk, file + at[7], size - at[7]);
        got = read_file(m, &s.header, bad, size + sizeof junk, 1, y, T + 200,
                        &pc);
        CHECK(got == T && pc.skipped_bytes == sizeof junk &&
                  !memcmp(y, recon, sizeof(float) * 21 * W),
              "%s: %zu bytes of garbage between packets: skipped %llu, %ld "
              "frames",
              kind, sizeof junk, (unsigned long long)pc.skipped_bytes, got);
        /* bit errors at 1% over every byte, eight seeds, decoded through
         * and concealed: the same frames and counts whether the bytes come
         * as the reader asks, all at once or further ahead (after damage
         * the next packet is searched for as far as a pipe's reader would
         * have read, however far the caller has; frae decode of a file
         * and Python's decode once differed here) */
        int same = 1, damaged = 0;
        for (int seed = 1; seed <= 8 && same; seed++)
            for (int through = 0; through < 2 && same; through++) {
                memcpy(bad, file, size);
                uint32_t draw = (uint32_t)seed * 2654435761u;
                for (size_t i = 0; i < size; i++)
                    for (int bit = 0; bit < 8; bit++) {
                        draw = draw * 1664525u + 1013904223u;
                        if ((draw >> 8) % 100 == 0)
                            bad[i] ^= (unsigned char)(1u << bit);
                    }
                frae_packet_counts c_asked, c_all, c_more;
                const long n_asked =
                    read_file_through(m, &s.header, bad, size, GIVE_ASKED,
                                      through, y, T + 200, &c_asked);
                const long n_all =
                    read_file_through(m, &s.header, bad, size, GIVE_ALL,
                                      through, z, T + 200, &c_all);
                const long n_more =
                    read_file_through(m, &s.header, bad, size, GIVE_MORE,
                                      through, w, T + 200, &c_more);
                same = n_asked > 0 && n_all == n_asked && n_more == n_asked &&
                       !memcmp(y, z, sizeof(float) * (size_t)n_asked * W) &&
                       !memcmp(y, w, sizeof(float) * (size_t)n_asked * W) &&
                       !memcmp(&c_asked, &c_all, sizeof c_asked) &&
                       !memcmp(&c_asked, &c_more, sizeof c_asked);
                damaged += c_asked.damaged > 0 && c_asked.skipped_bytes > 0;
                if (!same)
                    printf("    seed %d, through %d: %ld / %ld / %ld frames, "
                           "%llu / %llu / %llu skipped bytes\n",
                           seed, through, n_asked, n_all, n_more,
                           (unsigned long long)c_asked.skipped_bytes,
                           (unsigned long long)c_all.skipped_bytes,
                           (unsigned long long)c_more.skipped_bytes);
            }
        CHECK(same && damaged > 0,
              "%s: 1%% bit errors, 8 seeds, through and concealed: the same "
              "frames and counts given as asked, at once and further ahead "
              "(%d of 16 with damaged packets and framing)",
              kind, damaged);
        /* the header's frame count bounds nothing by itself: with 3
         * packets and 2^32-1 frames declared, 3 packets' frames and at
         * most FRAE_PACKET_TAIL_MAX concealed; with none, none */
        frae_stream lie = s.header;
        lie.frames = UINT32_MAX;
        got = read_file(m, &lie, file, at[3], 1, y, T + 200, &pc);
        CHECK(got == 3 * P + FRAE_PACKET_TAIL_MAX,
              "%s: 2^32-1 frames declared, 3 packets came: %ld frames", kind,
              got);
        got = read_file(m, &lie, file, 0, 1, y, T + 200, &pc);
        CHECK(got == 0, "%s: 2^32-1 frames declared, no packet: %ld frames",
              kind, got);
        /* the last 2 packets cut off: concealed, T frames */
        got =
            read_file(m, &s.header, file, at[s.n - 2] + 3, 1, y, T + 200, &pc);
        CHECK(got == T && !memcmp(y, recon, sizeof(float) * (T - 2 * P) * W),
              "%s: the end cut inside a packet: %ld frames", kind, got);
        frae_destroy(m);
    }
    return failures;
}

/* ---- codec options by name (frae_codec.h) ------------------------------------ */

int test_codec_options_table(void)
{
    int failures = 0;
    frae_codec_settings s;
    frae_codec_settings_default(&s);
    CHECK(s.dtx_level == FRAE_DTX_LEVEL && s.frame_rate == 100 &&
              s.gl_iters == 32 && s.polish == FRAE_POLISH_ROUNDS &&
              s.search_lambda < 0 && !s.given,
          "defaults: dtx-level %g (FRAE_DTX_LEVEL %g), frame-rate %g, polish "
          "%d (FRAE_POLISH_ROUNDS %d)",
          s.dtx_level, FRAE_DTX_LEVEL, s.frame_rate, s.polish,
          FRAE_POLISH_ROUNDS);
    int found = 1, fits = 1;
    for (int r = 0; r < frae_codec_option_count(); r++) {
        const frae_codec_option *o = frae_codec_option_at(r);
        char dashes[64], under[64], line[512];
        snprintf(dashes, sizeof dashes, "--%s", o->name);
        snprintf(under, sizeof under, "%s", o->name);
        for (char *c = under; *c; c++)
            *c = *c == '-' ? '_' : *c;
        found &= frae_codec_option_find(o->name) == r &&
                 frae_codec_option_find(dashes) == r &&
                 frae_codec_option_find(under) == r && o->sides &&
                 !(o->sides & ~(FRAE_CODEC_ENCODES | FRAE_CODEC_DECODES));
        const size_t n = frae_codec_option_help(o, line, sizeof line);
        fits &= n == strlen(line) && strstr(line, dashes) != NULL;
        for (char *l = line; *l;) { /* every line within 72 columns */
            const size_t len = strcspn(l, "\n");
            fits &= len <= 72;
            l += len + (l[len] != 0);
        }
    }
    CHECK(found && frae_codec_option_find("packet_ms_") < 0 &&
              frae_codec_option_find("--epochs") < 0,
          "every row found as name, --name and name_with_underscores; "
          "others not");
    CHECK(fits, "every row's --help line names it, within 72 columns");
    char err[256] = "";
    CHECK(frae_codec_option_set(&s, "packet_ms", "40", err, sizeof err) == 0 &&
              s.packet_ms == 40 &&
              frae_codec_option_set(&s, "--resync-ms", "off", err,
                                    sizeof err) == 0 &&
              s.resync_ms == -1 &&
              frae_codec_option_set(&s, "dtx-level", "-50", err, sizeof err) ==
                  0 &&
              s.dtx && s.dtx_level == -50 &&
              frae_codec_option_set(&s, "through", "ignored", err,
                                    sizeof err) == 0 &&
              s.through,
          "values set: %s", err);
    CHECK(frae_codec_option_set(&s, "search_lambda", "-1", err, sizeof err) <
                  0 &&
              strstr(err, "search_lambda expects a number"),
          "a bad value refused naming the option as given: %s", err);
    CHECK(frae_codec_option_set(&s, "--vocoder", "wavenet", err, sizeof err) <
                  0 &&
              strstr(err, "--vocoder got 'wavenet'"),
          "a bad choice refused: %s", err);
    CHECK(frae_codec_option_set(&s, "nope", "1", err, sizeof err) < 0 &&
              strstr(err, "unknown codec option 'nope'"),
          "an unknown option refused: %s", err);
    /* the stream options they ask of a fixed-rate model with pitch */
    frae_model *m = pitch_model(0);
    frae_stream_options so;
    frae_codec_settings_default(&s);
    frae_codec_option_set(&s, "packet-ms", "40", err, sizeof err);
    frae_codec_option_set(&s, "resync-ms", "120", err, sizeof err);
    const int ok40 = frae_codec_stream_options(&s, frae_model_net(m), 1, &so,
                                               err, sizeof err) == 0;
    CHECK(ok40 && so.datagrams && so.packet_frames == 4 &&
              so.resync_packets == 3,
          "--packet-ms 40 --resync-ms 120: packets of %d frames, a "
          "resynchronisation point every %d (%s)",
          so.packet_frames, so.resync_packets, ok40 ? "" : err);
    frae_codec_option_set(&s, "packet-ms", "45", err, sizeof err);
    CHECK(frae_codec_stream_options(&s, frae_model_net(m), 1, &so, err,
                                    sizeof err) < 0 &&
              strstr(err, "not a whole number of 10 ms frames"),
          "--packet-ms 45 refused: %s", err);
    frae_codec_settings_default(&s);
    frae_codec_option_set(&s, "dtx", NULL, err, sizeof err);
    CHECK(frae_codec_stream_options(&s, frae_model_net(m), 1, &so, err,
                                    sizeof err) < 0 &&
              !strncmp(err, "--dtx: ", 7),
          "--dtx on a fixed-rate model refused: %s", err);
    frae_destroy(m);
    /* the search: by default on for a speech codec (pitch, codes), off
     * for other models (decode(encode(x)) == predict(x)), a denoiser (it
     * would steer toward the noisy input) and raw latents; as given
     * otherwise */
    static const struct {
        int quantizer, targets, pitch;
        const char *given;
        int want;
    } cases[] = {{FRAE_QUANT_BINARY, 0, 1, NULL, FRAE_SEARCH_PASSES},
                 {FRAE_QUANT_BINARY, 0, 0, NULL, 0},
                 {FRAE_QUANT_BINARY, 1, 1, NULL, 0},
                 {FRAE_QUANT_NONE, 0, 1, NULL, 0},
                 {FRAE_QUANT_BINARY, 0, 1, "0", 0},
                 {FRAE_QUANT_BINARY, 0, 0, "5", 5}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int enc[1] = {12}, dec[1] = {12};
        frae_config c;
        tiny_config(&c, D, 0, 1, enc, 5, 1, dec);
        c.family = FRAE_FAMILY_GRU, c.training = 0, c.batch = 1;
        c.quantizer = cases[i].quantizer, c.targets = cases[i].targets;
        c.pitch = cases[i].pitch;
        frae_model *sm = create_or_die(&c);
        frae_codec_settings_default(&s);
        if (cases[i].given)
            frae_codec_option_set(&s, "search", cases[i].given, err,
                                  sizeof err);
        const int ok = frae_codec_stream_options(&s, frae_model_net(sm), 1, &so,
                                                 err, sizeof err) == 0;
        CHECK(ok && so.search == cases[i].want,
              "search %s, quantizer %d, targets %d: %d passes, want %d (%s)",
              cases[i].given ? cases[i].given : "(default)", cases[i].quantizer,
              cases[i].targets, so.search, cases[i].want, ok ? "" : err);
        frae_destroy(sm);
    }
    return failures;
}
