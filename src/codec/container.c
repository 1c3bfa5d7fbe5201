/* The .fbs bitstream (frae_codec.h, "The .fbs bitstream"): the header in every
 * version, packets sealed and parsed, the stream writer and parser, and a
 * stream checked against a model. */
#include <string.h>

#include "codec/codec_internal.h"

/* ---- the .fbs bitstream --------------------------------------------------------- */

static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Bits of one frame's code: L values, then the pitch bits. */
static uint64_t frame_bits(const frae_stream *s)
{
    return (uint64_t)s->latent_dim * s->code_bits +
           (s->flags & FRAE_STREAM_PITCH ? FRAE_PITCH_BITS : 0);
}

/* Total bits of codes, or 0 on overflow. */
static uint64_t payload_bits(const frae_stream *s)
{
    uint64_t n;
    if (__builtin_mul_overflow((uint64_t)s->sequences, (uint64_t)s->frames,
                               &n) ||
        __builtin_mul_overflow(n, frame_bits(s), &n) || n > ((uint64_t)1 << 60))
        return 0;
    return n;
}

int frae_stream_ranged(const frae_stream *s)
{
    return s->version == FRAE_STREAM_VERSION_RANGED ||
           s->version == FRAE_STREAM_VERSION_RANGED_V3 ||
           (s->version == FRAE_STREAM_VERSION_PACKETS &&
            (s->flags & FRAE_STREAM_RANGED_PACKETS));
}

size_t frae_stream_bytes(const frae_stream *s)
{
    if (frae_stream_ranged(s))
        return 0; /* variable: known once written */
    return FRAE_STREAM_HEADER + (size_t)((payload_bits(s) + 7) / 8) + 4;
}

/* ---- versions 3 and 4's compact fields ---------------------------------------
 * LEB128 varints: 7 bits a byte, low first, the top bit set on all but the
 * last.  Minimal (no trailing zero byte), so each value has one form. */
size_t frae_varint_put(unsigned char *p, uint32_t v)
{
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        p[n++] = (unsigned char)(v | 0x80);
    p[n++] = (unsigned char)v;
    return n;
}

/* A varint within avail bytes: its bytes; 0 if it runs past avail; -1 if
 * malformed (over 5 bytes or 32 bits, or not minimal). */
int frae_varint_get(const unsigned char *p, size_t avail, uint32_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 5; i++) {
        if ((size_t)i >= avail)
            return 0;
        x |= (uint64_t)(p[i] & 0x7f) << 7 * i;
        if (!(p[i] & 0x80)) {
            if (x > UINT32_MAX || (i > 0 && p[i] == 0))
                return -1;
            *v = (uint32_t)x;
            return i + 1;
        }
    }
    return -1;
}

static size_t put_header_ranged(unsigned char *dst, const frae_stream *s);

size_t frae_stream_header_bytes(const frae_stream *s)
{
    unsigned char scratch[FRAE_STREAM_HEADER_V3_MAX];
    return frae_stream_ranged(s) ? put_header_ranged(scratch, s)
                                 : FRAE_STREAM_HEADER;
}

/* Version 4: the CRC-16 of a packet's bytes (n of them) of stream s: the
 * header's bytes (as put_header_ranged writes them: the parsed ones, since
 * each field has one form), the packet's, then its index as a u32 */
static uint16_t packet_crc_before_index(const frae_stream *s,
                                        const unsigned char *packet, size_t n)
{
    unsigned char head[FRAE_STREAM_HEADER_V3_MAX];
    return frae_crc16_update(frae_crc16(head, put_header_ranged(head, s)),
                             packet, n);
}

static uint16_t packet_crc_index(uint16_t before, uint32_t index)
{
    unsigned char k[4];
    for (int i = 0; i < 4; i++)
        k[i] = (unsigned char)(index >> 8 * i);
    return frae_crc16_update(before, k, 4);
}

uint16_t frae_packet_crc(const frae_stream *s, const unsigned char *packet,
                         size_t n, uint32_t index)
{
    return packet_crc_index(packet_crc_before_index(s, packet, n), index);
}

/* Packets of a version-3 or -4 stream: ceil(frames / packet_frames) per
 * sequence (0 on overflow, which parse refuses). */
uint64_t frae_stream_packets(const frae_stream *s)
{
    if (!s->packet_frames)
        return 0;
    uint64_t per =
        ((uint64_t)s->frames + s->packet_frames - 1) / s->packet_frames;
    return per * s->sequences;
}

/* The most a packet of packet_frames frames can take: every symbol costs
 * at most 15 bits (no frequency is below 1 in 2^15), the coder's flush 5
 * bytes, and the packet's (index,) length and CRC. */
size_t frae_stream_packet_cap(const frae_stream *s)
{
    uint64_t symbols = (uint64_t)s->latent_dim +
                       (s->flags & FRAE_STREAM_PITCH ? 2 : 0) +
                       (s->flags & FRAE_STREAM_DTX ? 1 : 0);
    uint64_t bytes =
        ((uint64_t)s->packet_frames * symbols * FRAE_RANGE_TOTAL_BITS + 7) / 8 +
        6;
    return (size_t)(bytes + FRAE_PACKET_OVERHEAD);
}

size_t frae_stream_packet_seal(const frae_stream *s, unsigned char *packet,
                               uint32_t index, size_t payload_bytes)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    unsigned char length[3];
    const size_t lb = frae_varint_put(length, (uint32_t)payload_bytes);
    const size_t head = (size_t)v3 + lb;
    /* the payload moves left to follow the length (head <= 4) */
    memmove(packet + head, packet + FRAE_PACKET_PAYLOAD, payload_bytes);
    if (v3)
        packet[0] = (unsigned char)(index & 0xff);
    memcpy(packet + v3, length, lb);
    const size_t n = head + payload_bytes;
    const uint16_t crc =
        v3 ? frae_crc16(packet, n) : frae_packet_crc(s, packet, n, index);
    packet[n] = (unsigned char)(crc & 0xff);
    packet[n + 1] = (unsigned char)(crc >> 8);
    return n + 2;
}

/* A version-4 packet that fails its CRC as packet index: the index within
 * 256 either side it passes as (a lost or reordered packet), or -1 (a
 * damaged one, or a damaged header).  A damaged packet passes as another
 * index by chance 1 in 128; either way the stream is refused. */
static long packet_found_as(const frae_stream *s, const unsigned char *p,
                            size_t body, uint32_t index, uint16_t crc)
{
    const uint16_t before = packet_crc_before_index(s, p, body);
    for (uint32_t d = 1; d <= 256; d++)
        for (int side = 0; side < 2; side++) {
            if (side ? index < d : index + d < index)
                continue;
            const uint32_t k = side ? index - d : index + d;
            if (packet_crc_index(before, k) == crc)
                return (long)k;
        }
    return -1;
}

long frae_stream_packet_parse(const frae_stream *s, const unsigned char *p,
                              size_t avail, uint32_t index,
                              const unsigned char **payload, size_t *len,
                              char *err, size_t errlen)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    const size_t least = FRAE_PACKET_MIN + (size_t)v3;
    if (avail < least)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (%zu bytes left, a packet "
                           "takes at least %zu)",
                           index, avail, least);
    uint32_t n = 0;
    const int lb = frae_varint_get(p + v3, avail - (size_t)v3, &n);
    if (lb == 0)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (its length runs past the "
                           "stream's end)",
                           index);
    if (lb < 0 || n > 0xffff)
        return frae_errorf(err, errlen,
                           "packet %u: corrupted (a malformed length)", index);
    const size_t head = (size_t)v3 + (size_t)lb;
    if (avail < head + 2 || n > avail - head - 2)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (it declares %u bytes, "
                           "%zu are left)",
                           index, n, avail < head + 2 ? 0 : avail - head - 2);
    const size_t body = head + n;
    const uint16_t crc = (uint16_t)(p[body] | p[body + 1] << 8);
    if (v3) {
        if (frae_crc16(p, body) != crc)
            return frae_errorf(err, errlen,
                               "packet %u: corrupted (CRC-16 "
                               "mismatch)",
                               index);
        if (p[0] != (index & 0xff))
            return frae_errorf(err, errlen,
                               "packet %u is missing: found packet %u (mod "
                               "256) in its place",
                               index, p[0]);
    } else if (frae_packet_crc(s, p, body, index) != crc) {
        const long found = packet_found_as(s, p, body, index, crc);
        if (found >= 0)
            return frae_errorf(err, errlen,
                               "packet %u is missing: found packet %ld in "
                               "its place",
                               index, found);
        return frae_errorf(err, errlen,
                           "packet %u: corrupted (CRC-16 mismatch%s)", index,
                           index == 0 ? ": the packet or the header" : "");
    }
    *payload = p + head;
    *len = n;
    return (long)(body + 2);
}

void frae_stream_header(const frae_net *m, uint32_t sequences, uint32_t frames,
                        int flags, frae_stream *s)
{
    memset(s, 0, sizeof *s);
    s->version = m->cfg.prior_hidden > 0 ? FRAE_STREAM_VERSION_RANGED
                                         : FRAE_STREAM_VERSION;
    s->flags =
        (uint8_t)((flags & 1) | (m->cfg.pitch ? FRAE_STREAM_PITCH : 0) |
                  (m->cfg.prior_hidden > 0 ? flags & FRAE_STREAM_DTX : 0));
    if (m->cfg.prior_hidden > 0) /* a payload must fit 65535 bytes */
        for (s->packet_frames = FRAE_PACKET_FRAMES;
             s->packet_frames > 1 &&
             frae_stream_packet_cap(s) - FRAE_PACKET_OVERHEAD > 0xffff;)
            s->packet_frames /= 2;
    s->model_hash = frae_model_hash(m);
    s->sequences = sequences;
    s->frames = frames;
    s->frame_dim = (uint32_t)m->cfg.frame_dim;
    s->latent_dim = (uint32_t)m->cfg.latent_dim;
    s->code_bits = (uint8_t)frae_code_bits(m);
    s->quantizer = (uint8_t)m->cfg.quantizer;
    s->levels =
        (uint16_t)(m->cfg.quantizer == FRAE_QUANT_UNIFORM ? m->cfg.quant_levels
                                                          : 0);
}

/* version 4's header, or version 3's */
static size_t put_header_ranged(unsigned char *dst, const frae_stream *s)
{
    memcpy(dst, "FRAEBS", 6);
    dst[6] = s->version;
    dst[7] = s->flags;
    for (int i = 0; i < 8; i++)
        dst[8 + i] = (unsigned char)(s->model_hash >> 8 * i);
    size_t n = 16;
    n += frae_varint_put(dst + n, s->sequences);
    n += frae_varint_put(dst + n, s->frames);
    if (s->version != FRAE_STREAM_VERSION_RANGED_V3)
        return n + frae_varint_put(dst + n, s->packet_frames);
    n += frae_varint_put(dst + n, s->frame_dim);
    n += frae_varint_put(dst + n, s->latent_dim);
    dst[n++] = s->code_bits;
    dst[n++] = s->quantizer;
    n += frae_varint_put(dst + n, s->levels);
    n += frae_varint_put(dst + n, s->packet_frames);
    wr32(dst + n, frae_crc32(dst, n));
    return n + 4;
}

static size_t put_header(unsigned char *dst, const frae_stream *s)
{
    if (frae_stream_ranged(s))
        return put_header_ranged(dst, s);
    memcpy(dst, "FRAEBS", 6);
    dst[6] = s->version;
    dst[7] = s->flags;
    for (int i = 0; i < 8; i++)
        dst[8 + i] = (unsigned char)(s->model_hash >> 8 * i);
    wr32(dst + 16, s->sequences);
    wr32(dst + 20, s->frames);
    wr32(dst + 24, s->frame_dim);
    wr32(dst + 28, s->latent_dim);
    dst[32] = s->code_bits;
    dst[33] = s->quantizer;
    dst[34] = (unsigned char)(s->levels & 0xff);
    dst[35] = (unsigned char)(s->levels >> 8);
    return FRAE_STREAM_HEADER;
}

/* Version 4's or 3's header from p: its bytes, or -1 and one line in err.
 * Version 4's has no check of its own: each packet's CRC covers it. */
static long parse_header_ranged(const unsigned char *p, size_t size,
                                frae_stream *s, char *err, size_t errlen)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    /* version 3: sequences, frames, D, L, then levels and P; 4: sequences,
     * frames, P */
    uint32_t v[6];
    const int nv = v3 ? 6 : 3;
    size_t at = 16;
    for (int k = 0; k < nv; k++) {
        int used = at < size ? frae_varint_get(p + at, size - at, &v[k]) : 0;
        if (used < 0)
            return frae_errorf(err, errlen,
                               "corrupted: a malformed size in the version-%d "
                               "header (byte %zu)",
                               s->version, at);
        if (used == 0 || (v3 && k == 3 && size - at - (size_t)used < 2))
            return frae_errorf(err, errlen,
                               "truncated: %zu bytes, shorter than a "
                               "version-%d header",
                               size, s->version);
        at += (size_t)used;
        if (v3 && k == 3) { /* code bits and quantizer, one byte each */
            s->code_bits = p[at];
            s->quantizer = p[at + 1];
            at += 2;
        }
    }
    s->sequences = v[0], s->frames = v[1];
    const uint32_t packet_frames = v[nv - 1];
    if (v3) {
        if (size - at < 4)
            return frae_errorf(err, errlen,
                               "truncated: %zu bytes, shorter than a "
                               "version-3 header",
                               size);
        if (frae_crc32(p, at) != rd32(p + at))
            return frae_errorf(err, errlen,
                               "corrupted: the header's CRC-32 does not "
                               "match (%zu bytes)",
                               size);
        s->frame_dim = v[2], s->latent_dim = v[3];
        if (v[4] > 0xffff)
            return frae_errorf(err, errlen, "bitstream header: %u levels",
                               v[4]);
        s->levels = (uint16_t)v[4];
        at += 4;
    }
    if (packet_frames < 1 || packet_frames > FRAE_PACKET_MAX_FRAMES)
        return frae_errorf(err, errlen,
                           "bitstream header: %u frames per packet (1..%d)",
                           packet_frames, FRAE_PACKET_MAX_FRAMES);
    s->packet_frames = packet_frames;
    return (long)at;
}

size_t frae_stream_writer_begin(frae_stream_writer *w, const frae_stream *s,
                                unsigned char *out)
{
    memset(w, 0, sizeof *w);
    w->s = *s;
    size_t n = put_header(out, s);
    w->crc = frae_crc32_update(0, out, n);
    return n;
}

size_t frae_stream_writer_add(frae_stream_writer *w, const unsigned char *code,
                              unsigned char *out)
{
    /* frames arrive byte-aligned; the stream packs them bit-tight: whole
     * bytes go out, the last partial one waits for the next frame */
    const size_t bits = (size_t)frame_bits(&w->s);
    size_t done = 0;
    for (size_t k = 0; k < bits; k++) {
        w->carry |=
            (unsigned char)(frae_code_get_bits(code, k, 1) << w->carry_bits);
        if (++w->carry_bits == 8) {
            out[done++] = w->carry;
            w->carry = 0, w->carry_bits = 0;
        }
    }
    w->crc = frae_crc32_update(w->crc, out, done);
    return done;
}

size_t frae_stream_writer_end(frae_stream_writer *w, unsigned char *out)
{
    size_t n = 0;
    if (w->carry_bits) /* zero bits up to the byte boundary */
        out[n++] = w->carry;
    w->crc = frae_crc32_update(w->crc, out, n);
    wr32(out + n, w->crc);
    return n + 4;
}

void frae_stream_write(unsigned char *dst, const frae_stream *s,
                       const unsigned char *frame_codes)
{
    frae_stream_writer w;
    const size_t per_frame = (size_t)(frame_bits(s) + 7) / 8;
    const uint64_t n_frames = (uint64_t)s->sequences * s->frames;
    unsigned char *p = dst + frae_stream_writer_begin(&w, s, dst);
    for (uint64_t f = 0; f < n_frames; f++)
        p += frae_stream_writer_add(&w, frame_codes + f * per_frame, p);
    frae_stream_writer_end(&w, p);
}

int frae_stream_parse(const void *buf, size_t size, frae_stream *s, char *err,
                      size_t errlen)
{
    const unsigned char *p = buf;
    memset(s, 0, sizeof *s);
    if (size < 8 || memcmp(p, "FRAEBS", 6)) {
        frae_errorf(err, errlen,
                    "not a frae bitstream (bad magic or %zu bytes)", size);
        return -1;
    }
    s->version = p[6];
    s->flags = p[7];
    if (s->version == 1) {
        frae_errorf(err, errlen,
                    "bitstream version 1, from frae 0.1, whose decoder summed "
                    "in another order; this frae reads version %d: re-encode "
                    "the input",
                    FRAE_STREAM_VERSION);
        return -1;
    }
    if (s->version != FRAE_STREAM_VERSION && !frae_stream_ranged(s)) {
        frae_errorf(
            err, errlen,
            "bitstream version %d; this frae reads versions %d, %d and %d",
            s->version, FRAE_STREAM_VERSION, FRAE_STREAM_VERSION_RANGED_V3,
            FRAE_STREAM_VERSION_RANGED);
        return -1;
    }
    const int ranged = frae_stream_ranged(s);
    const int v4 = s->version == FRAE_STREAM_VERSION_RANGED;
    if (size < (ranged ? 16 : FRAE_STREAM_HEADER + 4)) {
        frae_errorf(err, errlen,
                    "truncated: %zu bytes, shorter than a version-%d header",
                    size, s->version);
        return -1;
    }
    for (int i = 7; i >= 0; i--)
        s->model_hash = s->model_hash << 8 | p[8 + i];
    long head = FRAE_STREAM_HEADER, first = 0; /* version 4: packet 0's bytes */
    if (ranged) {
        head = parse_header_ranged(p, size, s, err, errlen);
        if (head < 0)
            return -1;
        /* version 4: the first packet's CRC checks the header, before any
         * of its fields is believed */
        const unsigned char *pl;
        size_t n;
        if (v4 &&
            (first = frae_stream_packet_parse(s, p + head, size - (size_t)head,
                                              0, &pl, &n, err, errlen)) < 0)
            return -1;
    } else {
        s->sequences = rd32(p + 16);
        s->frames = rd32(p + 20);
        s->frame_dim = rd32(p + 24);
        s->latent_dim = rd32(p + 28);
        s->code_bits = p[32];
        s->quantizer = p[33];
        s->levels = (uint16_t)(p[34] | p[35] << 8);
    }
    if (s->flags & ~(1 | FRAE_STREAM_PITCH | (ranged ? FRAE_STREAM_DTX : 0))) {
        frae_errorf(err, errlen, "bitstream flags 0x%02x: unknown bits set",
                    s->flags);
        return -1;
    }
    if (!s->sequences || !s->frames ||
        (!v4 && /* version 4 leaves the code's format to the model */
         (!s->frame_dim || !s->latent_dim || s->frame_dim > (1u << 24) ||
          s->latent_dim > (1u << 24) ||
          !(s->code_bits == 32 || (s->code_bits >= 1 && s->code_bits <= 16)) ||
          s->quantizer > FRAE_QUANT_UNIFORM || !payload_bits(s) ||
          (ranged && (s->quantizer == FRAE_QUANT_NONE ||
                      (s->quantizer == FRAE_QUANT_UNIFORM &&
                       (s->levels < 2 || s->levels > 4096))))))) {
        frae_errorf(err, errlen, "bitstream header has impossible sizes");
        return -1;
    }
    if (ranged) {
        /* The frames a stream may declare, bounded by its bytes before
         * anything is walked or allocated: a packet takes at least
         * FRAE_PACKET_MIN bytes (version 3: one more) and holds at most
         * packet_frames <= FRAE_PACKET_MAX_FRAMES frames, so B bytes after
         * the header hold at most B / 3 packets and 1000 B / 3 frames.
         * The bound is the packets', not the bits': a frame can cost
         * almost nothing inside a packet (with DTX a silent frame's flag
         * well under 0.1 bits; without, a code the prior is sure of
         * 4.4e-5 bits, its frequency 2^15 - 1 of 2^15), and the coder's
         * flush drops trailing zero bytes, so an encoder can write a
         * packet of 1000 frames with an empty payload: 3 bytes. */
        const uint64_t packets = frae_stream_packets(s);
        const size_t rest = size - (size_t)head;
        const size_t least = FRAE_PACKET_MIN + (size_t)!v4;
        if (packets > rest / least) {
            frae_errorf(err, errlen,
                        "truncated: %u x %u frames declared, in %llu packets "
                        "of up to %u frames; %zu bytes hold at most %zu "
                        "packets (%zu bytes each at least)",
                        s->sequences, s->frames, (unsigned long long)packets,
                        s->packet_frames, rest, rest / least, least);
            return -1;
        }
        size_t at = (size_t)(head + first); /* after the packets checked */
        for (uint64_t k = first > 0; k < packets; k++) {
            const unsigned char *pl;
            size_t n;
            long used = frae_stream_packet_parse(
                s, p + at, size - at, (uint32_t)k, &pl, &n, err, errlen);
            if (used < 0)
                return -1;
            at += (size_t)used;
        }
        if (at != size) {
            frae_errorf(err, errlen,
                        "trailing bytes: %zu after the last packet", size - at);
            return -1;
        }
        s->size = size;
        s->payload = p + head;
        return 0;
    }
    /* version 2: every frame costs its L x b (+ pitch) bits, so the size
     * is exact, and a stream declares as many frames as its bytes hold */
    size_t want = frae_stream_bytes(s);
    if (size != want) {
        frae_errorf(err, errlen,
                    "%s: the header describes %zu bytes, the stream has %zu",
                    size < want ? "truncated" : "trailing bytes", want, size);
        return -1;
    }
    if (frae_crc32(p, size - 4) != rd32(p + size - 4)) {
        frae_errorf(err, errlen, "corrupted: CRC-32 mismatch");
        return -1;
    }
    s->payload = p + FRAE_STREAM_HEADER;
    s->size = size;
    return 0;
}

int frae_stream_check_model(const frae_stream *s, const frae_net *m, char *err,
                            size_t errlen)
{
    frae_stream want;
    frae_stream_header(m, 1, 1, 0, &want);
    if (s->version != FRAE_STREAM_VERSION_RANGED && /* 4 states no shape */
        (s->frame_dim != want.frame_dim || s->latent_dim != want.latent_dim ||
         s->code_bits != want.code_bits || s->quantizer != want.quantizer ||
         s->levels != want.levels)) {
        frae_errorf(
            err, errlen,
            "stream has D %u, L %u, %u-bit codes; the model has D %u, L "
            "%u, %u-bit codes",
            s->frame_dim, s->latent_dim, s->code_bits, want.frame_dim,
            want.latent_dim, want.code_bits);
        return -1;
    }
    if (frae_stream_ranged(s) != frae_stream_ranged(&want)) {
        if (frae_stream_ranged(s))
            frae_errorf(err, errlen,
                        "stream is entropy-coded (version %d); the model has "
                        "no prior to decode it",
                        s->version);
        else
            frae_errorf(err, errlen,
                        "stream is fixed-rate (version 2); the model has a "
                        "prior and codes version %d",
                        FRAE_STREAM_VERSION_RANGED);
        return -1;
    }
    if ((s->flags & FRAE_STREAM_PITCH) != (want.flags & FRAE_STREAM_PITCH)) {
        frae_errorf(err, errlen,
                    s->flags & FRAE_STREAM_PITCH
                        ? "stream carries pitch; the model codes the "
                          "envelope alone"
                        : "stream carries no pitch; the model codes pitch too");
        return -1;
    }
    if (s->model_hash != want.model_hash) {
        frae_errorf(err, errlen,
                    "stream was encoded with another model (hash %016llx, this "
                    "model %016llx)",
                    (unsigned long long)s->model_hash,
                    (unsigned long long)want.model_hash);
        return -1;
    }
    return 0;
}

void frae_stream_frame_code(const frae_stream *s, uint64_t frame,
                            unsigned char *code)
{
    const size_t bits = (size_t)frame_bits(s);
    size_t pos = (size_t)(frame * bits);
    memset(code, 0, (bits + 7) / 8);
    for (size_t k = 0; k < bits; k += 16) {
        int n = bits - k < 16 ? (int)(bits - k) : 16;
        frae_code_put_bits(code, k, frae_code_get_bits(s->payload, pos + k, n),
                           n);
    }
}
