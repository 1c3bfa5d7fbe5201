/* Real-time packets (frae_codec.h, "Real-time packets: stream version 5"): the
 * header, the framing of a file or pipe, and the receiving end, which
 * takes packets as a datagram transport delivers them (some lost, late,
 * duplicated or damaged) and always gives frames: decoded, or concealed
 * (frae_decoder_conceal).  The sending end is the stream encoder's
 * (stream_coder.c). */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "core/frae_internal.h"
#include "io/formats.h"

/* ---- the header ---------------------------------------------------------------- */

size_t frae_packet_header_put(const frae_stream *s, unsigned char *dst)
{
    memcpy(dst, "FRAEBS", 6);
    dst[6] = FRAE_STREAM_VERSION_PACKETS;
    dst[7] = s->flags;
    for (int i = 0; i < 8; i++)
        dst[8 + i] = (unsigned char)(s->model_hash >> 8 * i);
    size_t n = 16;
    n += frae_varint_put(dst + n, s->packet_frames);
    n += frae_varint_put(dst + n, s->resync_packets);
    n += frae_varint_put(dst + n, s->frames);
    const uint16_t crc = frae_crc16(dst, n);
    dst[n] = (unsigned char)(crc & 0xff);
    dst[n + 1] = (unsigned char)(crc >> 8);
    return n + 2;
}

long frae_packet_header_parse(const void *buf, size_t size, frae_stream *s,
                              char *err, size_t errlen)
{
    const unsigned char *p = buf;
    memset(s, 0, sizeof *s);
    if (size < 8)
        return 0;
    if (memcmp(p, "FRAEBS", 6) || p[6] != FRAE_STREAM_VERSION_PACKETS)
        return frae_errorf(err, errlen,
                           "not a version-5 frae stream (magic or version)");
    s->version = p[6];
    s->flags = p[7];
    if (size < 16)
        return 0;
    for (int i = 7; i >= 0; i--)
        s->model_hash = s->model_hash << 8 | p[8 + i];
    uint32_t v[3];
    size_t at = 16;
    for (int k = 0; k < 3; k++) {
        const int used = frae_varint_get(p + at, size - at, &v[k]);
        if (used == 0)
            return 0;
        if (used < 0)
            return frae_errorf(err, errlen,
                               "corrupted: a malformed size in the version-5 "
                               "header (byte %zu)",
                               at);
        at += (size_t)used;
    }
    if (size - at < 2)
        return 0;
    if (frae_crc16(p, at) != (uint16_t)(p[at] | p[at + 1] << 8))
        return frae_errorf(err, errlen,
                           "corrupted: the version-5 header's CRC-16 does not "
                           "match");
    if (s->flags & ~(1 | FRAE_STREAM_PITCH | FRAE_STREAM_DTX |
                     FRAE_STREAM_RANGED_PACKETS | FRAE_STREAM_STATE_RESYNC))
        return frae_errorf(
            err, errlen, "bitstream flags 0x%02x: unknown bits set", s->flags);
    if ((s->flags & FRAE_STREAM_DTX) &&
        !(s->flags & FRAE_STREAM_RANGED_PACKETS))
        return frae_errorf(err, errlen,
                           "bitstream flags 0x%02x: DTX on a fixed-rate "
                           "stream",
                           s->flags);
    if ((s->flags & FRAE_STREAM_STATE_RESYNC) &&
        (s->flags & FRAE_STREAM_RANGED_PACKETS))
        return frae_errorf(err, errlen,
                           "bitstream flags 0x%02x: the state-resync bit on "
                           "an entropy-coded stream (whose state always "
                           "starts afresh there)",
                           s->flags);
    if (v[0] < 1 || v[0] > FRAE_PACKET_MAX_FRAMES)
        return frae_errorf(err, errlen,
                           "bitstream header: %u frames per packet (1..%d)",
                           v[0], FRAE_PACKET_MAX_FRAMES);
    s->packet_frames = v[0];
    s->resync_packets = v[1];
    s->frames = v[2];
    s->sequences = 1;
    return (long)(at + 2);
}

/* ---- framing in a file or pipe -------------------------------------------------- */

/* A frame's code bits: its L codes and the pitch's. */
static size_t frame_bits(const frae_net *m)
{
    const frae_config *c = frae_net_config(m);
    return (size_t)c->latent_dim * (size_t)frae_code_bits(m) +
           (c->pitch ? FRAE_PITCH_BITS : 0);
}

size_t frae_packet_cap(const frae_stream *s)
{
    /* the entropy coder's bound (frae_stream_packet_cap: every symbol at
     * its most), or the fixed-rate codes, the anchor, byte 0 and a count */
    frae_stream r = *s;
    const size_t ranged = frae_stream_packet_cap(&r);
    const size_t fixed =
        ((uint64_t)s->packet_frames *
             ((uint64_t)s->latent_dim * s->code_bits + FRAE_PITCH_BITS) +
         FRAE_PITCH_ANCHOR_BITS + 7) /
        8;
    return (ranged > fixed ? ranged : fixed) + 4;
}

/* ---- bits, LSB first ------------------------------------------------------------- */

static uint32_t read_bits(const unsigned char *p, size_t n_bytes, size_t pos,
                          int bits)
{
    uint32_t v = 0;
    for (int k = 0; k < bits; k++, pos++)
        if (pos / 8 < n_bytes && (p[pos / 8] >> (pos % 8) & 1))
            v |= 1u << k;
    return v;
}

/* ---- the receiving end ----------------------------------------------------------- */

struct frae_packet_decoder {
    const frae_net *m;
    frae_decoder *d;
    frae_stream s;
    int ranged, width, through;
    int fresh; /* the state starts afresh at resynchronisation
                          points: entropy-coded, or FRAE_STREAM_STATE_RESYNC */
    size_t frame_bits;
    uint64_t next;     /* the index of the packet expected */
    int synced;        /* entropy-coded: the state is the encoder's (no
                          loss since the last resynchronisation point) */
    int late_run;      /* the last packet was dropped as strayed */
    uint32_t late_seq; /* its index mod 64 */
    frae_packet_counts c;
    unsigned char *code; /* one frame's code bytes */
    /* frae_packet_read: a file's or pipe's bytes */
    size_t max_payload; /* the longest packet an encoder writes */
    size_t min_framed;  /* the shortest framed packet */
    uint64_t skipped;   /* damaged bytes since the last packet found */
    uint64_t read_out;  /* frames read gave */
    uint32_t tail_left; /* frames the end may still conceal */
    uint64_t pending;   /* lost packets still to conceal before the next */
    uint64_t framed_sum, framed_n; /* the sizes of the intact packets read */
    int arrived;                   /* bytes came after the header */
    size_t held; /* bytes a caller reading as far as *need holds now */
};

frae_packet_decoder *frae_packet_decoder_create(const frae_net *m,
                                                const frae_stream *s, char *err,
                                                size_t errlen)
{
    const frae_config *c = frae_net_config(m);
    const int ranged = (s->flags & FRAE_STREAM_RANGED_PACKETS) != 0;
    if (s->version != FRAE_STREAM_VERSION_PACKETS) {
        frae_errorf(err, errlen, "not a version-5 stream");
        return NULL;
    }
    if (ranged != (c->prior_hidden > 0)) {
        frae_errorf(err, errlen,
                    ranged ? "stream is entropy-coded; the model has no prior "
                             "to decode it"
                           : "stream is fixed-rate; the model has a prior "
                             "and codes its packets entropy-coded");
        return NULL;
    }
    if (!(s->flags & FRAE_STREAM_PITCH) != !c->pitch) {
        frae_errorf(err, errlen,
                    c->pitch ? "stream carries no pitch; the model codes "
                               "pitch too"
                             : "stream carries pitch; the model codes the "
                               "envelope alone");
        return NULL;
    }
    if (s->model_hash != frae_model_hash(m)) {
        frae_errorf(err, errlen,
                    "stream was encoded with another model (hash %016llx, "
                    "this model %016llx)",
                    (unsigned long long)s->model_hash,
                    (unsigned long long)frae_model_hash(m));
        return NULL;
    }
    const size_t head = (sizeof(frae_packet_decoder) + 63) / 64 * 64;
    const size_t dec = (frae_decoder_size(m) + 63) / 64 * 64;
    char *block = NULL;
    if (posix_memalign((void **)&block, 64, head + dec + frae_code_bytes(m))) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    frae_packet_decoder *p = (frae_packet_decoder *)block;
    memset(p, 0, sizeof *p);
    p->m = m;
    p->d = frae_decoder_init(block + head, m);
    p->code = (unsigned char *)block + head + dec;
    p->s = *s;
    p->ranged = ranged;
    p->fresh = ranged || (s->flags & FRAE_STREAM_STATE_RESYNC);
    p->width = c->frame_dim + 2 * c->pitch;
    p->frame_bits = frame_bits(m);
    if (ranged)
        frae_decoder_set_dtx(p->d, (s->flags & FRAE_STREAM_DTX) != 0);
    frae_stream full = *s; /* the header's fields and the model's sizes */
    full.latent_dim = (uint32_t)c->latent_dim;
    full.code_bits = (uint8_t)frae_code_bits(m);
    p->max_payload = frae_packet_cap(&full);
    if (p->max_payload > 0xffff)
        p->max_payload = 0xffff;
    p->min_framed = 1 + 1 + 2; /* length, byte 0, CRC */
    if (!ranged)
        p->min_framed += (p->frame_bits + 7) / 8;
    p->tail_left = FRAE_PACKET_TAIL_MAX;
    return p;
}

void frae_packet_decoder_destroy(frae_packet_decoder *d) { free(d); }

void frae_packet_decoder_through(frae_packet_decoder *d, int on)
{
    d->through = on != 0;
}

void frae_packet_decoder_counts(const frae_packet_decoder *d,
                                frae_packet_counts *c)
{
    *c = d->c;
}

/* n frames concealed into frames (as many as cap leaves room for). */
static long conceal_frames(frae_packet_decoder *d, long n, float *frames,
                           long at, long cap)
{
    for (long k = 0; k < n && at < cap; k++, at++)
        frae_decoder_conceal(d->d, frames + (size_t)at * d->width);
    return at;
}

long frae_packet_conceal(frae_packet_decoder *d, float *frames, long cap)
{
    d->c.lost++;
    d->synced = 0;
    d->next++;
    const long n = conceal_frames(d, d->s.packet_frames, frames, 0, cap);
    d->c.frames += (uint64_t)n, d->c.concealed += (uint64_t)n;
    return n;
}

/* The packet's frames decoded from its payload p (n bytes) into frames
 * from at; a frame the payload cannot give (a code no encoder makes, or
 * bytes a range coder never writes) and those after it are concealed
 * and, entropy-coded, wait for the next resynchronisation point. */
static long decode_payload(frae_packet_decoder *d, int resync, long count,
                           const unsigned char *p, size_t n, float *frames,
                           long at, long cap)
{
    const frae_config *c = frae_net_config(d->m);
    long k = 0;
    if (d->ranged) {
        frae_range_dec rd;
        frae_range_dec_init(&rd, p, n);
        if (resync && c->pitch) {
            const uint32_t sym =
                frae_range_decode_target(&rd) >>
                (FRAE_RANGE_TOTAL_BITS - FRAE_PITCH_ANCHOR_BITS);
            frae_range_decode_update(
                &rd, sym << (FRAE_RANGE_TOTAL_BITS - FRAE_PITCH_ANCHOR_BITS),
                1u << (FRAE_RANGE_TOTAL_BITS - FRAE_PITCH_ANCHOR_BITS));
            frae_decoder_pitch_anchor(d->d, sym);
        }
        for (; k < count && at < cap; k++, at++)
            if (frae_decode_frame_ranged(d->d, &rd,
                                         frames + (size_t)at * d->width)) {
                d->synced = 0;
                break;
            }
    } else {
        size_t pos = 0;
        if (resync && c->pitch) {
            frae_decoder_pitch_anchor(
                d->d, read_bits(p, n, 0, FRAE_PITCH_ANCHOR_BITS));
            pos = FRAE_PITCH_ANCHOR_BITS;
        }
        const size_t cb = frae_code_bytes(d->m);
        for (; k < count && at < cap; k++, at++, pos += d->frame_bits) {
            memset(d->code, 0, cb);
            for (size_t b = 0; b < d->frame_bits; b++)
                if (read_bits(p, n, pos + b, 1))
                    d->code[b / 8] |= (unsigned char)(1u << (b % 8));
            float *frame = frames + (size_t)at * d->width;
            if (frae_decode_frame(d->d, d->code, frame)) {
                if (!d->through)
                    break;
                frae_decoder_conceal(d->d, frame); /* this one alone */
                d->c.concealed++;
            }
        }
    }
    const long left = count - k;
    d->c.concealed += (uint64_t)(left > 0 ? left : 0);
    return conceal_frames(d, left, frames, at, cap);
}

/* A packet's byte 0 and a short one's count: its frames, the payload's
 * offset in *head; 0 if the count is one no encoder writes. */
static long packet_frames(const frae_packet_decoder *d,
                          const unsigned char *packet, size_t n, size_t *head)
{
    *head = 1;
    if (!(packet[0] & FRAE_PACKET_SHORT))
        return (long)d->s.packet_frames;
    uint32_t v = 0;
    const int used = frae_varint_get(packet + 1, n - 1, &v);
    if (used <= 0 || v < 1 || v >= d->s.packet_frames)
        return 0;
    *head += (size_t)used;
    return (long)v;
}

/* A packet placed (its losses before it concealed into frames from 0 to
 * at): its frames decoded from at, or, its count damaged, concealed. */
static long packet_body(frae_packet_decoder *d, const unsigned char *packet,
                        size_t n, float *frames, long at, long cap)
{
    size_t head;
    const long count = packet_frames(d, packet, n, &head);
    const int resync = (packet[0] & FRAE_PACKET_RESYNC) != 0;
    d->next++;
    if (!count) { /* damaged: as lost */
        d->c.lost++;
        d->synced = 0;
        const long end = conceal_frames(d, d->s.packet_frames, frames, at, cap);
        d->c.concealed += (uint64_t)(end - at);
        d->c.frames += (uint64_t)end;
        return end;
    }
    d->c.packets++;
    long end;
    if (d->fresh && resync) {
        frae_decoder_reset(d->d); /* both ends start afresh here */
        frae_decoder_set_dtx(d->d, (d->s.flags & FRAE_STREAM_DTX) != 0);
        d->synced = 1;
    }
    if (d->ranged && !d->synced) { /* lost: wait for the next point */
        end = conceal_frames(d, count, frames, at, cap);
        d->c.concealed += (uint64_t)(end - at);
    } else {
        end = decode_payload(d, resync, count, packet + head, n - head, frames,
                             at, cap);
    }
    d->c.frames += (uint64_t)end;
    return end;
}

/* lost packets concealed into frames from at */
static long conceal_lost(frae_packet_decoder *d, uint32_t lost, float *frames,
                         long at, long cap)
{
    const long end =
        conceal_frames(d, (long)lost * d->s.packet_frames, frames, at, cap);
    d->c.lost += lost;
    d->c.concealed += (uint64_t)(end - at);
    d->next += lost;
    d->synced = 0;
    return end;
}

long frae_packet_decode(frae_packet_decoder *d, const unsigned char *packet,
                        size_t n, float *frames, long cap)
{
    if (n < 1)
        return frae_packet_conceal(d, frames, cap);
    const uint32_t seq = packet[0] & (FRAE_PACKET_INDEX_MOD - 1);
    long at = 0;
    if (!d->through) {
        /* where it falls: the next; a little ahead, past packets lost;
         * far ahead or behind, a packet late, duplicated or strayed, which
         * is dropped, unless the next one follows it: then the gap was
         * real, longer than the index tells apart from lateness */
        const uint32_t gap =
            (seq - (uint32_t)(d->next % FRAE_PACKET_INDEX_MOD)) &
            (FRAE_PACKET_INDEX_MOD - 1);
        uint32_t lost = gap;
        if (gap >= FRAE_PACKET_INDEX_MOD / 4) {
            const int follows =
                d->late_run &&
                seq == ((d->late_seq + 1) & (FRAE_PACKET_INDEX_MOD - 1));
            d->late_seq = seq;
            if (!follows) {
                d->late_run = 1;
                d->c.late++;
                return 0;
            }
            d->c.late--; /* the one before was not late, but lost */
            lost = gap < FRAE_PACKET_INDEX_MOD / 2 ? gap : 0;
            d->next += gap - lost; /* relock on them */
            d->synced = 0;
        }
        d->late_run = 0;
        if (lost)
            at = conceal_lost(d, lost, frames, 0, cap);
    }
    return packet_body(d, packet, n, frames, at, cap);
}

/* ---- a file's or pipe's packets, found again after damage ---------------------- */

/* What the bytes at p (avail of them) hold as a framed packet. */
enum { CAND_WAIT, CAND_NONE, CAND_DAMAGED, CAND_INTACT };
typedef struct {
    int kind;
    size_t size; /* framed: its length, the packet, the CRC */
    size_t need; /* CAND_WAIT: the bytes from p it needs */
    const unsigned char *packet;
    size_t n;
} candidate;

/* Whether n, the length before packet (of which have bytes are here), is
 * one an encoder writes for the packet's byte 0 (and a short one's count). */
static int length_fits(const frae_packet_decoder *d,
                       const unsigned char *packet, size_t have, size_t n)
{
    size_t head;
    const long count = packet_frames(d, packet, have, &head);
    if (!count)
        return 0;
    if (d->ranged)
        return n >= head;
    const int resync = (packet[0] & FRAE_PACKET_RESYNC) != 0;
    const size_t bits =
        (size_t)count * d->frame_bits +
        (resync && frae_net_config(d->m)->pitch ? FRAE_PITCH_ANCHOR_BITS : 0);
    return n == head + (bits + 7) / 8;
}

static candidate candidate_at(const frae_packet_decoder *d,
                              const unsigned char *p, size_t avail)
{
    candidate c = {CAND_NONE, 0, 0, NULL, 0};
    uint32_t len;
    const int lb = frae_varint_get(p, avail < 3 ? avail : 3, &len);
    if (lb < 0 || (lb == 0 && avail >= 3))
        return c;
    if (lb == 0) {
        c.kind = CAND_WAIT, c.need = avail + 1;
        return c;
    }
    if (len < 1 || len > d->max_payload)
        return c;
    c.size = (size_t)lb + len + 2;
    c.packet = p + lb, c.n = len;
    /* byte 0 and a short packet's count (under 2^14) say its length */
    const size_t head = len < 3 ? len : 3;
    if (avail - (size_t)lb < head) {
        c.kind = CAND_WAIT, c.need = c.size;
        return c;
    }
    if (!length_fits(d, c.packet, head, len))
        return c;
    if (avail < c.size) {
        c.kind = CAND_WAIT, c.need = c.size;
        return c;
    }
    const unsigned char *crc = p + lb + len;
    c.kind = frae_crc16(c.packet, len) == (uint16_t)(crc[0] | crc[1] << 8)
                 ? CAND_INTACT
                 : CAND_DAMAGED;
    return c;
}

/* Whether an intact packet found after skipped damaged bytes is the
 * stream's: its index a little ahead of the one expected (as
 * frae_packet_decode's), or no further than the bytes could have held;
 * *gap the packets lost before it. */
static int gap_fits(const frae_packet_decoder *d, const candidate *c,
                    uint64_t skipped, uint32_t *gap)
{
    const uint32_t seq = c->packet[0] & (FRAE_PACKET_INDEX_MOD - 1);
    *gap = (seq - (uint32_t)(d->next % FRAE_PACKET_INDEX_MOD)) &
           (FRAE_PACKET_INDEX_MOD - 1);
    return *gap < FRAE_PACKET_INDEX_MOD / 4 ||
           *gap <= skipped / d->min_framed + 1;
}

size_t frae_packet_window(const frae_packet_decoder *d)
{
    return 4 * (d->max_payload + 5) + 64;
}

/* Whether the packets from buf's start, each's length taken as written,
 * end exactly at to. */
static int chain_reaches(const frae_packet_decoder *d, const unsigned char *buf,
                         size_t to)
{
    size_t at = 0;
    while (at < to) {
        const candidate c = candidate_at(d, buf + at, to - at);
        if (c.kind != CAND_DAMAGED && c.kind != CAND_INTACT)
            return 0;
        at += c.size;
    }
    return at == to;
}

/* The frames of a damaged packet whose length held: decoded through its
 * bit errors (through), or concealed. */
static long damaged_packet(frae_packet_decoder *d, const candidate *c,
                           float *frames, long cap)
{
    d->c.damaged++;
    d->skipped = 0;
    if (d->through)
        return frae_packet_decode(d, c->packet, c->n, frames, cap);
    return frae_packet_conceal(d, frames, cap);
}

/* The end of the bytes: the frames the header declares that loss took at
 * the end, concealed, at most FRAE_PACKET_TAIL_MAX, once some bytes came. */
static long conceal_tail(frae_packet_decoder *d, float *frames, long cap)
{
    if (!d->arrived || !d->s.frames || d->read_out >= d->s.frames ||
        !d->tail_left)
        return 0;
    uint64_t n = d->s.frames - d->read_out;
    if (n > d->tail_left)
        n = d->tail_left;
    if (n > (uint64_t)cap)
        n = (uint64_t)cap;
    const long k = conceal_frames(d, (long)n, frames, 0, cap);
    d->tail_left -= (uint32_t)k;
    d->c.frames += (uint64_t)k, d->c.concealed += (uint64_t)k;
    return k;
}

/* A fixed-rate stream's loss run longer than the index tells (64
 * packets): the whole turns of the index that the skipped bytes held
 * besides gap, at the mean size of the packets that came.  (An
 * entropy-coded packet's size says nothing of its neighbours'.) */
static uint64_t index_turns(const frae_packet_decoder *d, uint64_t skipped,
                            uint32_t gap)
{
    if (d->ranged || !d->framed_n)
        return 0;
    const double held = (double)skipped * (double)d->framed_n /
                        (double)d->framed_sum,
                 turns = (held - gap) / FRAE_PACKET_INDEX_MOD;
    return turns >= 0.5 ? (uint64_t)(turns + 0.5) : 0;
}

/* Pending lost packets concealed, as many as cap holds. */
static long conceal_pending(frae_packet_decoder *d, float *frames, long cap)
{
    uint64_t n = (uint64_t)(cap / (long)d->s.packet_frames);
    n = n < d->pending ? n : d->pending;
    d->pending -= n;
    const long k = conceal_lost(d, (uint32_t)n, frames, 0, cap);
    d->c.frames += (uint64_t)k;
    return k;
}

/* The next packet in buf (avail bytes): its frames; *used the bytes it
 * took (0: wait for *need bytes in all, or, frames given, call again). */
static long read_next(frae_packet_decoder *d, const unsigned char *buf,
                      size_t avail, int end, size_t *used, size_t *need,
                      float *frames, long cap)
{
    const size_t window = frae_packet_window(d);
    if (d->pending && d->s.frames && d->read_out >= d->s.frames)
        d->pending = 0; /* the header's count reached: nothing to conceal */
    if (d->pending)     /* a long loss run: its packets before the next */
        return conceal_pending(d, frames, cap);
    const candidate c0 = candidate_at(d, buf, avail);
    if (c0.kind == CAND_INTACT && !d->skipped) { /* the usual case */
        *used = c0.size;
        d->framed_sum += c0.size, d->framed_n++;
        return frae_packet_decode(d, c0.packet, c0.n, frames, cap);
    }
    /* otherwise the first packet whose CRC holds and whose index follows:
     * before it, damaged packets whose lengths held, or bytes lost */
    size_t wait = 0, checked = avail;
    for (size_t j = 0; j < avail; j++) {
        const candidate c = j ? candidate_at(d, buf + j, avail - j) : c0;
        uint32_t gap;
        if (c.kind == CAND_WAIT) {
            if (checked == avail)
                checked = j;
            if (!end && j + c.need <= window && (!wait || j + c.need < wait))
                wait = j + c.need;
            continue;
        }
        if (c.kind != CAND_INTACT || !gap_fits(d, &c, d->skipped + j, &gap))
            continue;
        if (j > 0 && c0.kind == CAND_DAMAGED && chain_reaches(d, buf, j)) {
            *used = c0.size;
            return damaged_packet(d, &c0, frames, cap);
        }
        const uint64_t skipped = d->skipped + j,
                       turns = index_turns(d, skipped, gap);
        d->c.skipped_bytes += j;
        d->skipped = 0;
        if (turns) { /* conceal them first; the packet waits at buf + j */
            d->pending = turns * FRAE_PACKET_INDEX_MOD + gap;
            *used = j;
            return conceal_pending(d, frames, cap);
        }
        *used = j + c.size;
        d->framed_sum += c.size, d->framed_n++;
        const long at = conceal_lost(d, gap, frames, 0, cap);
        return packet_body(d, c.packet, c.n, frames, at, cap);
    }
    if (wait) { /* none yet: the bytes to come may hold it */
        *need = wait;
        return 0;
    }
    if (c0.kind == CAND_DAMAGED && (!end || chain_reaches(d, buf, avail))) {
        *used = c0.size;
        return damaged_packet(d, &c0, frames, cap);
    }
    /* no packet begins before checked (at the end, at all): damage */
    *used = end ? avail : (checked ? checked : 1);
    d->skipped += *used;
    d->c.skipped_bytes += *used;
    return 0;
}

/* read_next on the bytes a caller that reads exactly as far as *need
 * (a pipe: 'frae decode -') would hold, however many buf has: after damage
 * the packet found next depends on how far the search sees, so a whole
 * file given at once must be searched as far as a pipe's reader would
 * have read it, or the two decode differently.  d->held: the bytes such a
 * caller still holds from the last call (what it read past *used). */
static long read_as_piped(frae_packet_decoder *d, const unsigned char *buf,
                          size_t avail, int end, size_t *used, size_t *need,
                          float *frames, long cap)
{
    size_t seen = d->held ? d->held : 1;
    if (seen > avail)
        seen = avail;
    for (;;) {
        const long k = read_next(d, buf, seen, end && seen == avail, used, need,
                                 frames, cap);
        if (k || *used || *need <= seen) {
            d->held = seen - *used;
            return k;
        }
        if (*need > avail && !end) {
            d->held = avail; /* the caller reads on */
            return 0;
        }
        seen =
            *need < avail ? *need : avail; /* a read that far (or to the end) */
    }
}

long frae_packet_read(frae_packet_decoder *d, const unsigned char *buf,
                      size_t avail, int end, size_t *used, size_t *need,
                      float *frames, long cap)
{
    *used = 0, *need = 0;
    if (!avail && !end) {
        *need = 1;
        return 0;
    }
    long k = avail ? read_as_piped(d, buf, avail, end, used, need, frames, cap)
                   : conceal_tail(d, frames, cap);
    d->arrived |= avail > 0;
    if (d->s.frames && d->read_out + (uint64_t)k > d->s.frames)
        k = (long)(d->s.frames - d->read_out); /* what the header declared */
    d->read_out += (uint64_t)k;
    return k;
}
