/* Stream coding: frames to a .fbs stream and back, the loop that frae
 * encode, frae decode and Python's encode/decode share (frae_codec.h, "Stream
 * coding").  Over the frame codec (codec.c: a frame to codes, range-coded
 * or not), this holds what a stream adds: the header, the packets (the
 * range coder started afresh in each), a fixed-rate stream's bit packing
 * and CRC, DTX's silent frames, the search's settings, and what it all
 * took.  A coder is one block allocated at create; coding a frame
 * allocates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "codec/container.h"
#include "core/frae_internal.h"

struct frae_stream_encoder {
    const frae_net *m;
    frae_encoder *e;
    frae_stream s;        /* the header's fields */
    frae_stream_writer w; /* a fixed-rate stream's packing and CRC */
    frae_range_enc rc;    /* a ranged stream's packet being coded */
    int ranged, dtx;
    int datagrams;  /* version 5 */
    int fresh;      /* ... whose state starts afresh at each
                               resynchronisation point (entropy-coded, or
                               FRAE_STREAM_STATE_RESYNC) */
    uint64_t frame; /* frames coded, over the sequences */
    uint32_t packets;
    long in_packet; /* version 5: frames in the packet being made */
    size_t bit_pos; /* ... its fixed-rate payload's bits so far */
    int resync;     /* ... and whether it is a resynchronisation
                               point */
    frae_stream_counts counts;
    unsigned char *code;   /* a fixed-rate frame's code bytes */
    unsigned char *packet; /* the packet being made */
    size_t packet_cap;
    unsigned char *out; /* the bytes to write next */
    size_t out_len, out_cap;
    const unsigned char *datagram; /* version 5: the last packet, bare */
    size_t datagram_len;
    /* a look-ahead model (cfg.lookahead = A > 0): the frames given and not
     * yet coded, oldest first (held, n_held rows of width floats, and
     * their silent flags); the oldest is coded once the A after it are
     * here, seeing those of its own sequence.  coded: the frame the last
     * call coded; tail: end's bytes, the held frames' and the end's */
    int ahead, width, n_held;
    float *held, *coded;
    unsigned char held_silent[FRAE_MAX_LOOKAHEAD + 1];
    uint64_t given; /* frames given, over the sequences */
    unsigned char *tail;
    size_t tail_cap;
};

/* Where a version-5 packet's payload starts in e->packet: after room for
 * byte 0 and a short packet's count (a varint of at most 2 bytes). */
#define DATAGRAM_HEAD 3

void frae_stream_options_default(frae_stream_options *o)
{
    memset(o, 0, sizeof *o);
    o->search_lambda = -1.0f;
}

const char *frae_stream_options_check(const frae_net *m,
                                      const frae_stream_options *o)
{
    const frae_config *c = frae_net_config(m);
    const int ranged = c->prior_hidden > 0;
    if (o->packet_frames < 0 || o->packet_frames > FRAE_PACKET_MAX_FRAMES)
        return "frames per packet out of range";
    if (o->packet_frames && !ranged && !o->datagrams)
        return "the model has no prior, so its streams are fixed-rate "
               "(version 2), without packets";
    if (o->resync_packets < -1)
        return "resynchronisation interval out of range";
    if (o->resync_state && !o->datagrams)
        return "the state's resynchronisation points are real-time "
               "packets' (version 5)";
    if (o->resync_state && ranged)
        return "an entropy-coded stream's state starts afresh at every "
               "resynchronisation point already";
    if (o->dtx && !ranged)
        return "silent frames (DTX) need a model with a prior: its "
               "fixed-rate streams code every frame alike";
    if (o->search < 0 || o->search > 16)
        return "search passes out of range (0..16)";
    if (o->search && c->quantizer == FRAE_QUANT_NONE)
        return "the model has raw float latents (no quantizer), so there "
               "are no codes to search";
    return NULL;
}

frae_stream_encoder *
frae_stream_encoder_create(const frae_net *m, const frae_stream_options *o,
                           uint32_t sequences, uint32_t frames,
                           int one_sequence_2d, char *err, size_t errlen)
{
    frae_stream_options def;
    if (!o) {
        frae_stream_options_default(&def);
        o = &def;
    }
    const char *why = frae_stream_options_check(m, o);
    if (why) {
        frae_errorf(err, errlen, "%s", why);
        return NULL;
    }
    if (o->datagrams ? sequences != 1 : !sequences || !frames) {
        frae_errorf(err, errlen,
                    o->datagrams ? "real-time packets carry one sequence"
                                 : "a stream holds at least one frame");
        return NULL;
    }
    frae_stream s;
    frae_stream_header(m, sequences, frames,
                       (one_sequence_2d != 0) | (o->dtx ? FRAE_STREAM_DTX : 0),
                       &s);
    const int ranged = frae_stream_ranged(&s);
    if (o->datagrams) {
        /* version 5: P frames a packet (4: 40 ms), a resynchronisation
         * point every R */
        s.version = FRAE_STREAM_VERSION_PACKETS;
        s.flags |= ranged ? FRAE_STREAM_RANGED_PACKETS : 0;
        s.flags |= o->resync_state ? FRAE_STREAM_STATE_RESYNC : 0;
        s.packet_frames = o->packet_frames ? (uint32_t)o->packet_frames : 4;
        const long ms = ranged ? FRAE_RESYNC_MS_RANGED : FRAE_RESYNC_MS_FIXED;
        s.resync_packets =
            o->resync_packets < 0 ? 0
            : o->resync_packets
                ? (uint32_t)o->resync_packets
                : (uint32_t)((ms / 10 + s.packet_frames - 1) / s.packet_frames);
        if (frae_packet_cap(&s) > 0xffff) {
            frae_errorf(err, errlen,
                        "%u frames per packet: a packet could outgrow its "
                        "16-bit length with this model; use fewer frames",
                        s.packet_frames);
            return NULL;
        }
    } else if (o->packet_frames) {
        s.packet_frames = (uint32_t)o->packet_frames;
        if (frae_stream_packet_cap(&s) - FRAE_PACKET_OVERHEAD > 0xffff) {
            frae_errorf(err, errlen,
                        "%d frames per packet: a packet could outgrow its "
                        "16-bit length with this model; use fewer frames",
                        o->packet_frames);
            return NULL;
        }
    }
    /* one block: the struct, the frame codec's state, the code, the
     * packet and the bytes out (the header, or a frame's bytes, or a
     * packet, whichever is most) */
    const size_t cb = frae_code_bytes(m);
    const size_t packet_cap = o->datagrams ? frae_packet_cap(&s) + DATAGRAM_HEAD
                              : ranged     ? frae_stream_packet_cap(&s)
                                           : 0;
    size_t out_cap = cb + 8;
    if (out_cap < FRAE_STREAM_HEADER_V3_MAX)
        out_cap = FRAE_STREAM_HEADER_V3_MAX;
    if (out_cap < packet_cap + 8) /* + a version-5 packet's framing */
        out_cap = packet_cap + 8;
    const size_t head = (sizeof(frae_stream_encoder) + 63) / 64 * 64;
    frae_codec_plan plan; /* the frame codec's, made once */
    frae_codec_plan_make(m, &plan);
    const size_t enc = plan.encoder;
    const frae_config *c = frae_net_config(m);
    const int ahead = c->lookahead;
    const size_t width = (size_t)c->frame_dim + (c->pitch ? 2 : 0);
    /* with look-ahead: A + 2 frames (the held ones and the one coded), and
     * room for end's bytes: each held frame's and the end's */
    const size_t held_bytes =
        ahead ? ((size_t)(ahead + 2) * width * sizeof(float) + 63) / 64 * 64
              : 0;
    const size_t tail_cap = ahead ? (size_t)(ahead + 2) * out_cap : 0;
    char *block = NULL;
    if (posix_memalign((void **)&block, 64,
                       head + held_bytes + enc + cb + packet_cap + out_cap +
                           tail_cap)) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    frae_stream_encoder *e = (frae_stream_encoder *)block;
    memset(e, 0, sizeof *e);
    e->m = m;
    e->ahead = ahead;
    e->width = (int)width;
    if (ahead) {
        e->held = (float *)(void *)(block + head);
        e->coded = e->held + (size_t)(ahead + 1) * width;
    }
    e->e = (frae_encoder *)frae_codec_state_init(block + head + held_bytes, m,
                                                 &plan, 1);
    e->code = (unsigned char *)block + head + held_bytes + enc;
    e->packet = e->code + cb;
    e->out = e->packet + packet_cap;
    e->out_cap = out_cap;
    e->tail = ahead ? e->out + out_cap : NULL;
    e->tail_cap = tail_cap;
    e->packet_cap = packet_cap;
    e->s = s;
    e->ranged = ranged;
    e->dtx = o->dtx;
    e->datagrams = o->datagrams;
    e->fresh = ranged || o->resync_state;
    const float lambda = o->search_lambda >= 0
                             ? o->search_lambda
                             : frae_net_config(m)->rate_lambda;
    frae_encoder_set_search(e->e, o->search, lambda); /* checked above */
    if (o->dtx)
        frae_encoder_set_dtx(e->e, 1);
    e->out_len = e->datagrams ? frae_packet_header_put(&e->s, e->out)
                              : frae_stream_writer_begin(&e->w, &e->s, e->out);
    e->counts.header_bytes = e->out_len;
    e->counts.bytes = e->out_len;
    e->counts.datagram_bytes = e->out_len;
    return e;
}

/* ---- version 5: real-time packets -------------------------------------------- */

static void put_bit_run(unsigned char *p, size_t pos, uint32_t v, int bits)
{
    for (int k = 0; k < bits; k++, pos++)
        if (v >> k & 1)
            p[pos / 8] |= (unsigned char)(1u << (pos % 8));
}

/* A packet begins: at a resynchronisation point the pitch anchor, and an
 * entropy-coded stream's (or with FRAE_STREAM_STATE_RESYNC a fixed-rate
 * one's) both ends start afresh. */
static void datagram_begin(frae_stream_encoder *e)
{
    const frae_config *c = frae_net_config(e->m);
    const uint32_t k = e->packets;
    e->resync = k == 0 || (e->s.resync_packets && k % e->s.resync_packets == 0);
    unsigned char *payload = e->packet + DATAGRAM_HEAD;
    memset(payload, 0, e->packet_cap - DATAGRAM_HEAD);
    e->bit_pos = 0;
    e->in_packet = 0;
    uint32_t anchor = 0;
    if (e->resync && c->pitch)
        anchor = frae_encoder_pitch_anchor(e->e); /* before any reset */
    if (e->resync && e->fresh && k > 0)
        frae_encoder_reset(e->e);
    if (e->resync && c->pitch)
        frae_decoder_pitch_anchor((frae_decoder *)e->e, anchor); /* both */
    if (e->ranged) {
        frae_range_enc_init(&e->rc, payload, e->packet_cap - DATAGRAM_HEAD);
        if (e->resync && c->pitch) /* 7 bits, each value alike */
            frae_range_encode(
                &e->rc,
                anchor << (FRAE_RANGE_TOTAL_BITS - FRAE_PITCH_ANCHOR_BITS),
                1u << (FRAE_RANGE_TOTAL_BITS - FRAE_PITCH_ANCHOR_BITS));
    } else if (e->resync && c->pitch) {
        put_bit_run(payload, 0, anchor, FRAE_PITCH_ANCHOR_BITS);
        e->bit_pos = FRAE_PITCH_ANCHOR_BITS;
    }
}

/* The packet is done: byte 0 (and a short packet's count) before its
 * payload, then in e->out its framing for a file or pipe. */
static void datagram_seal(frae_stream_encoder *e)
{
    const size_t payload =
        e->ranged ? frae_range_enc_finish(&e->rc) : (e->bit_pos + 7) / 8;
    unsigned char head[DATAGRAM_HEAD];
    const int is_short = e->in_packet < (long)e->s.packet_frames;
    head[0] = (unsigned char)((e->packets % FRAE_PACKET_INDEX_MOD) |
                              (e->resync ? FRAE_PACKET_RESYNC : 0) |
                              (is_short ? FRAE_PACKET_SHORT : 0));
    size_t hb = 1;
    if (is_short)
        hb += frae_varint_put(head + 1, (uint32_t)e->in_packet);
    unsigned char *dg = e->packet + DATAGRAM_HEAD - hb;
    memcpy(dg, head, hb);
    const size_t n = hb + payload;
    e->datagram = dg;
    e->datagram_len = n;
    size_t o = frae_varint_put(e->out, (uint32_t)n);
    memcpy(e->out + o, dg, n);
    o += n;
    const uint16_t crc = frae_crc16(dg, n);
    e->out[o++] = (unsigned char)(crc & 0xff);
    e->out[o++] = (unsigned char)(crc >> 8);
    e->out_len = o;
    e->packets++;
    e->counts.packets++;
    e->counts.packet_overhead += hb; /* byte 0 and a count */
    e->counts.datagram_bytes += n;
    e->in_packet = 0;
}

static void datagram_frame(frae_stream_encoder *e, const float *frame,
                           int silent, float *recon)
{
    if (e->in_packet == 0)
        datagram_begin(e);
    if (e->ranged) {
        if (silent && e->dtx) {
            frae_encode_silence_ranged(e->e, &e->rc, recon);
            e->counts.silent_frames++;
        } else {
            frae_encode_frame_ranged(e->e, frame, &e->rc, recon);
        }
    } else {
        frae_encode_frame(e->e, frame, e->code, recon);
        const frae_config *c = frae_net_config(e->m);
        const size_t bits =
            (size_t)c->latent_dim * (size_t)frae_code_bits(e->m) +
            (c->pitch ? FRAE_PITCH_BITS : 0);
        unsigned char *payload = e->packet + DATAGRAM_HEAD;
        for (size_t b = 0; b < bits; b++)
            if (e->code[b / 8] >> (b % 8) & 1)
                put_bit_run(payload, e->bit_pos + b, 1, 1);
        e->bit_pos += bits;
    }
    e->in_packet++;
    const int last = e->s.frames && e->frame + 1 == e->s.frames;
    if (e->in_packet == (long)e->s.packet_frames || last)
        datagram_seal(e);
}

const unsigned char *frae_stream_encoder_packet(const frae_stream_encoder *e,
                                                size_t *n)
{
    *n = e->datagram_len;
    return e->datagram;
}

void frae_stream_encoder_destroy(frae_stream_encoder *e) { free(e); }

const frae_stream *frae_stream_encoder_stream(const frae_stream_encoder *e)
{
    return &e->s;
}

uint64_t frae_stream_encoder_bound(const frae_stream_encoder *e)
{
    const frae_stream *s = &e->s;
    const uint64_t P = s->packet_frames ? s->packet_frames : 1;
    if (s->version == FRAE_STREAM_VERSION_PACKETS) /* framed: length, CRC */
        return s->frames
                   ? FRAE_STREAM_HEADER_V5_MAX +
                         (s->frames + P - 1) / P * (frae_packet_cap(s) + 5)
                   : 0;
    return frae_stream_ranged(s)
               ? frae_stream_header_bytes(s) +
                     frae_stream_packets(s) * frae_stream_packet_cap(s)
               : frae_stream_bytes(s);
}

const unsigned char *frae_stream_encoder_bytes(const frae_stream_encoder *e,
                                               size_t *n)
{
    *n = e->out_len;
    return e->out;
}

static size_t encode_now(frae_stream_encoder *e, const float *frame, int silent,
                         float *recon);

/* Stream frame i's index within its sequence (the stream's, for a stream
 * of one unbounded sequence). */
static uint64_t frame_in_sequence(const frae_stream_encoder *e, uint64_t i)
{
    return e->s.frames ? i % (uint64_t)e->s.frames : i;
}

/* A look-ahead model: codes the oldest held frame, giving the encoder the
 * frames held after it that belong to its sequence. */
static size_t code_held(frae_stream_encoder *e, float *recon)
{
    const size_t w = (size_t)e->width;
    long ahead = e->n_held - 1;
    const uint64_t t = frame_in_sequence(e, e->frame);
    if (e->s.frames) { /* not past its sequence's end */
        const long left = (long)(e->s.frames - 1 - t);
        ahead = ahead < left ? ahead : left;
    }
    const int horizon = frae_ahead_horizon(e->m, t); /* a packet's edge */
    ahead = ahead < horizon ? ahead : horizon;
    frae_encoder_set_ahead(e->e, e->held + w, (int)ahead, w);
    memcpy(e->coded, e->held, sizeof(float) * w);
    const int silent = e->held_silent[0];
    e->n_held--;
    memmove(e->held, e->held + w, sizeof(float) * w * (size_t)e->n_held);
    memmove(e->held_silent, e->held_silent + 1, (size_t)e->n_held);
    return encode_now(e, e->coded, silent, recon);
}

size_t frae_stream_encode(frae_stream_encoder *e, const float *frame,
                          int silent, float *recon)
{
    if (!e->ahead)
        return encode_now(e, frame, silent, recon);
    e->out_len = 0;
    e->datagram_len = 0;
    if (frame) {
        const frae_stream *s = &e->s;
        const uint64_t total =
            e->datagrams ? s->frames : (uint64_t)s->sequences * s->frames;
        if (total && e->given >= total)
            return 0; /* past what the header declares: nothing coded */
        memcpy(e->held + (size_t)e->n_held * e->width, frame,
               sizeof(float) * (size_t)e->width);
        e->held_silent[e->n_held++] = (unsigned char)(silent != 0);
        e->given++;
        if (!frae_stream_encoder_ready(e))
            return 0;
    } else if (!e->n_held) {
        return 0;
    }
    return code_held(e, recon);
}

uint32_t frae_stream_encoder_pending(const frae_stream_encoder *e)
{
    return (uint32_t)e->n_held;
}

/* The held frames, oldest first, whose frames ahead have all come: each
 * waits for A of them, or (cfg.lookahead_packet) for those up to the next
 * packet's first. */
uint32_t frae_stream_encoder_ready(const frae_stream_encoder *e)
{
    int n = 0;
    while (n < e->n_held) {
        const uint64_t i = e->frame + (uint64_t)n;
        if (e->n_held - 1 - n <
            frae_ahead_horizon(e->m, frame_in_sequence(e, i)))
            break;
        n++;
    }
    return (uint32_t)n;
}

static size_t encode_now(frae_stream_encoder *e, const float *frame, int silent,
                         float *recon)
{
    const frae_stream *s = &e->s;
    e->out_len = 0;
    e->datagram_len = 0;
    if (e->datagrams) {
        if (s->frames && e->frame >= s->frames)
            return 0;
        datagram_frame(e, frame, silent, recon);
        e->frame++;
        e->counts.frames = e->frame;
        e->counts.bytes += e->out_len;
        return e->out_len;
    }
    if (e->frame >= (uint64_t)s->sequences * s->frames)
        return 0; /* past what the header declares: nothing coded */
    const uint32_t t = (uint32_t)(e->frame % s->frames);
    if (t == 0)
        frae_encoder_reset(e->e); /* each sequence from empty buffers */
    if (!e->ranged) {
        frae_encode_frame(e->e, frame, e->code, recon);
        e->out_len = frae_stream_writer_add(&e->w, e->code, e->out);
    } else {
        /* a packet of packet_frames frames, the coder afresh */
        if (t % s->packet_frames == 0)
            frae_range_enc_init(&e->rc, e->packet + FRAE_PACKET_PAYLOAD,
                                frae_stream_packet_cap(s) -
                                    FRAE_PACKET_OVERHEAD);
        if (silent && e->dtx) {
            frae_encode_silence_ranged(e->e, &e->rc, recon);
            e->counts.silent_frames++;
        } else {
            frae_encode_frame_ranged(e->e, frame, &e->rc, recon);
        }
        if ((t + 1) % s->packet_frames == 0 || t + 1 == s->frames) {
            /* the packet's bound (frae_stream_packet_cap) holds every
             * frame's most bits: the coder cannot overflow it */
            const size_t n = frae_range_enc_finish(&e->rc);
            const size_t pb =
                frae_stream_packet_seal(s, e->packet, e->packets++, n);
            memcpy(e->out, e->packet, pb);
            e->out_len = pb;
            e->counts.packets++;
            e->counts.packet_overhead += pb - n;
        }
    }
    e->frame++;
    e->counts.frames = e->frame;
    e->counts.bytes += e->out_len;
    return e->out_len;
}

static int end_now(frae_stream_encoder *e);

int frae_stream_encoder_end(frae_stream_encoder *e)
{
    if (!e->n_held)
        return end_now(e);
    /* the frames still held, then the end, their bytes one after another */
    size_t n = 0;
    while (e->n_held) {
        code_held(e, NULL);
        memcpy(e->tail + n, e->out, e->out_len);
        n += e->out_len;
    }
    const int rc = end_now(e);
    memcpy(e->tail + n, e->out, e->out_len);
    e->out_len += n;
    e->out = e->tail; /* what frae_stream_encoder_bytes gives now */
    return rc;
}

static int end_now(frae_stream_encoder *e)
{
    e->out_len = 0;
    e->datagram_len = 0;
    if (e->datagrams) { /* a live stream's last packet, short */
        if (e->in_packet)
            datagram_seal(e);
        e->counts.bytes += e->out_len;
        return e->s.frames && e->frame != e->s.frames ? -1 : 0;
    }
    if (e->frame != (uint64_t)e->s.sequences * e->s.frames)
        return -1;
    if (!e->ranged)
        e->out_len = frae_stream_writer_end(&e->w, e->out);
    e->counts.bytes += e->out_len;
    return 0;
}

/* frames read a chunk at a time */
#define ENCODE_CHUNK 512

/* frame x decoded as recon into t: the envelope's error and energy, and
 * the pitch kept; 0, or -1 once the error is not finite */
static int tally_frame(frae_encode_tally *t, const float *x, const float *recon,
                       int D, int pitch)
{
    if (pitch && x[D + 1] >= 0.5f && x[D] > 0) {
        t->voiced++;
        t->voicing_kept += recon[D + 1] >= 0.5f;
        t->f0_err += fabs(recon[D] / x[D] - 1.0);
    }
    for (int d = 0; d < D; d++) {
        const double diff = (double)recon[d] - x[d];
        t->sse += diff * diff;
        t->energy += (double)x[d] * x[d];
    }
    return isfinite(t->sse) ? 0 : -1;
}

/* One frame given (NULL: a held one coded), its bytes written, and the
 * frame it coded (with look-ahead, A frames back) tallied. */
static frae_encode_status encode_tallied(frae_stream_encoder *e,
                                         const frae_frames_io *io,
                                         const float *xt, int silent,
                                         float *recon, frae_encode_tally *t)
{
    const frae_config *c = &e->m->cfg;
    const uint64_t before = e->frame;
    if (frae_stream_encode(e, xt, silent, recon) &&
        io->write(io->ctx, e->out, e->out_len))
        return FRAE_ENCODE_WRITE;
    if (e->frame == before)
        return FRAE_ENCODE_OK; /* held */
    if (tally_frame(t, e->ahead ? e->coded : xt, recon, c->frame_dim,
                    c->pitch)) {
        if (e->s.frames) {
            t->seq = (long)(before / e->s.frames);
            t->frame = (long)(before % e->s.frames);
        }
        return FRAE_ENCODE_NONFINITE;
    }
    return FRAE_ENCODE_OK;
}

frae_encode_status frae_stream_encode_all(frae_stream_encoder *e,
                                          const frae_frames_io *io,
                                          frae_encode_tally *tally)
{
    const frae_stream *s = &e->s;
    const frae_config *c = &e->m->cfg;
    const int D = c->frame_dim, pitch = c->pitch, width = D + 2 * pitch;
    const long T = (long)s->frames;
    const long chunk = T < ENCODE_CHUNK ? T : ENCODE_CHUNK;
    frae_encode_tally local;
    frae_encode_tally *t = tally ? tally : &local;
    memset(t, 0, sizeof *t);
    float *x = malloc(sizeof(float) * (size_t)(chunk + 1) * width);
    if (!x)
        return FRAE_ENCODE_MEMORY;
    float *recon = x + (size_t)chunk * width;
    frae_encode_status rc = FRAE_ENCODE_OK;
    if (io->write(io->ctx, e->out, e->out_len)) /* the header */
        rc = FRAE_ENCODE_WRITE;
    for (long q = 0; !rc && q < (long)s->sequences; q++)
        for (long f = 0; !rc && f < T; f++) {
            const float *xt = x + (size_t)(f % chunk) * width;
            if (f % chunk == 0 &&
                io->read(io->ctx, q, f, T - f < chunk ? T - f : chunk, x)) {
                rc = FRAE_ENCODE_READ;
                break;
            }
            const int silent = io->silent && io->silent(io->ctx, q, f, xt);
            rc = encode_tallied(e, io, xt, silent, recon, t);
            while (!rc && frae_stream_encoder_ready(e)) /* a packet's */
                rc = encode_tallied(e, io, NULL, 0, recon, t);
        }
    while (!rc && e->n_held) /* a look-ahead model's last frames */
        rc = encode_tallied(e, io, NULL, 0, recon, t);
    if (!rc &&
        (frae_stream_encoder_end(e) || io->write(io->ctx, e->out, e->out_len)))
        rc = FRAE_ENCODE_WRITE;
    free(x);
    return rc;
}

void frae_stream_encoder_counts(const frae_stream_encoder *e,
                                frae_stream_counts *c)
{
    *c = e->counts;
}

/* ---- decoding ---------------------------------------------------------------- */

struct frae_stream_decoder {
    const frae_net *m;
    frae_decoder *d;
    frae_stream s;
    const unsigned char *at;  /* ranged: the next packet */
    const unsigned char *end; /* the stream's end */
    uint32_t packet;          /* packets read */
    uint64_t frame;           /* frames decoded, over the sequences */
    frae_range_dec rd;
    unsigned char *code; /* a fixed-rate frame's code bytes */
};

frae_stream_decoder *frae_stream_decoder_create(const frae_net *m,
                                                const void *buf, size_t size,
                                                char *err, size_t errlen)
{
    frae_stream s;
    if (frae_stream_parse(buf, size, &s, err, errlen) ||
        frae_stream_check_model(&s, m, err, errlen))
        return NULL;
    const size_t head = (sizeof(frae_stream_decoder) + 63) / 64 * 64;
    frae_codec_plan plan; /* the frame codec's, made once */
    frae_codec_plan_make(m, &plan);
    const size_t dec = plan.decoder;
    char *block = NULL;
    if (posix_memalign((void **)&block, 64, head + dec + frae_code_bytes(m))) {
        frae_errorf(err, errlen, "out of memory");
        return NULL;
    }
    frae_stream_decoder *d = (frae_stream_decoder *)block;
    memset(d, 0, sizeof *d);
    d->m = m;
    d->d = (frae_decoder *)frae_codec_state_init(block + head, m, &plan, 0);
    d->code = (unsigned char *)block + head + dec;
    d->s = s;
    d->at = s.payload;
    d->end = (const unsigned char *)buf + size;
    frae_decoder_set_dtx(d->d, (s.flags & FRAE_STREAM_DTX) != 0);
    return d;
}

void frae_stream_decoder_destroy(frae_stream_decoder *d) { free(d); }

const frae_stream *frae_stream_decoder_stream(const frae_stream_decoder *d)
{
    return &d->s;
}

int frae_stream_decode(frae_stream_decoder *d, float *frame, uint32_t *seq,
                       uint32_t *t, char *err, size_t errlen)
{
    const frae_stream *s = &d->s;
    if (d->frame >= (uint64_t)s->sequences * s->frames)
        return 0;
    const uint32_t q = (uint32_t)(d->frame / s->frames),
                   f = (uint32_t)(d->frame % s->frames);
    if (f == 0)
        frae_decoder_reset(d->d);
    int bad;
    if (!frae_stream_ranged(s)) {
        frae_stream_frame_code(s, d->frame, d->code);
        bad = frae_decode_frame(d->d, d->code, frame);
    } else {
        if (f % s->packet_frames == 0) { /* the parse checked every one */
            const unsigned char *payload;
            size_t n;
            d->at +=
                frae_stream_packet_parse(s, d->at, (size_t)(d->end - d->at),
                                         d->packet++, &payload, &n, NULL, 0);
            frae_range_dec_init(&d->rd, payload, n);
        }
        bad = frae_decode_frame_ranged(d->d, &d->rd, frame);
    }
    if (seq)
        *seq = q;
    if (t)
        *t = f;
    if (bad) {
        if (frae_stream_ranged(s))
            frae_errorf(err, errlen,
                        "sequence %u, frame %u (packet %u): bytes no encoder "
                        "writes",
                        q, f, d->packet - 1);
        else
            frae_errorf(err, errlen,
                        "sequence %u, frame %u: a code no encoder makes", q, f);
        return -1;
    }
    d->frame++;
    return 1;
}
