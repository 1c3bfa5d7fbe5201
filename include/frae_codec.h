/* frae's codec, for whoever codes streams with a trained model (an
 * embedder of the codec, a voice link): frame encoder and decoder states
 * over a model's shared const weights (frae_net), the .fbs bitstream and
 * its stream coder, real-time packets with loss concealment, the codec's
 * options by name, and the shipped models found by name or by a stream's
 * hash.  The range coder and the container's parts are building blocks
 * inside the library (src/codec/entropy.h, container.h).  Models themselves (making, training, saving) are
 * frae.h's, which this header includes; audio in and out is
 * frae_audio.h's.  libfrae.so exports what is declared here too. */
#ifndef FRAE_CODEC_H
#define FRAE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "frae.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Streaming codec -----------------------------------------------------
 * An encoder state turns one frame into the code bytes of its quantized
 * latent; a decoder state turns code bytes back into the frame.  The
 * encoder runs the decoder too (closed loop), so both feed back the same
 * frames: decoding what was encoded reproduces frae_forward exactly.
 * A state is one block of fixed size: frae_*_size, then frae_*_init into
 * caller memory (malloc-aligned), or frae_*_create / frae_*_destroy.  No
 * call allocates after that; states share only the model's weights, read
 * only (a const frae_net *: frae_model_net), so separate states may run in
 * separate threads, each stream the same bits as coded alone.  The model
 * must outlive its states, and its parameters must not change meanwhile. */
typedef struct frae_encoder frae_encoder;
typedef struct frae_decoder frae_decoder;

/* Pitch (cfg.pitch): a codec frame is D values, then f0 in Hz and voicing
 * (voiced if >= 0.5), D + 2 floats in and out.  Its code ends with
 * FRAE_PITCH_BITS: a voicing bit, then for a voiced frame a step of a
 * closed-loop predictive quantizer of log2 f0: the prediction is the last
 * voiced frame's decoded log2 f0 (log2 150 Hz at the start), the step one
 * of +-0.015, +-0.06, +-0.17, +-0.5 octave, clamped to 50..600 Hz.  The
 * decoded f0 of an unvoiced frame is 0. */
#define FRAE_PITCH_BITS 4

/* Bits per latent value: 1 (binary), ceil(log2 N) (uniform N), or 32 (no
 * quantizer: the float itself).  A frame's code is L such values packed
 * LSB first, then the pitch bits (cfg.pitch), into frae_code_bytes bytes. */
FRAE_API
int frae_code_bits(const frae_net *m);
FRAE_API
size_t frae_code_bytes(const frae_net *m);
/* Identity of a model: its shape and weights (FNV-1a 64). */
FRAE_API
uint64_t frae_model_hash(const frae_net *m);

FRAE_API
size_t frae_encoder_size(const frae_net *m);
FRAE_API
frae_encoder *frae_encoder_init(void *mem, const frae_net *m);
FRAE_API
frae_encoder *frae_encoder_create(const frae_net *m);
FRAE_API
void frae_encoder_destroy(frae_encoder *e);
FRAE_API
void frae_encoder_reset(frae_encoder *e); /* a new stream */
/* frame: D floats in (D + 2 with pitch); code: frae_code_bytes out; recon
 * (may be NULL): the frame the decoder will produce. */
FRAE_API
void frae_encode_frame(frae_encoder *e, const float *frame, unsigned char *code,
                       float *recon);
/* A look-ahead model's encoder (cfg.lookahead = A > 0) also sees the A
 * frames after the one it codes: give the next frae_encode_frame (or
 * _ranged) call the first n of them (0 <= n <= A; rows as that call takes
 * its frame, `stride` floats apart); the ones not given are held at the
 * last one given, or at the coded frame itself when none is, as at a
 * sequence's end (training holds them so too).  A model with
 * cfg.lookahead_packet = P sees none past the first frame of the next
 * packet: frame k of a sequence (k from 0) takes n <= P - k mod P, and
 * the ones not given are marked as not there, not held.  Each
 * call takes them once.  The stream coder (below) keeps the frames and gives them, A
 * frames behind its input.  Returns 0, or -1 (nothing changed) for n out
 * of range. */
FRAE_API
int frae_encoder_set_ahead(frae_encoder *e, const float *frames, int n,
                           size_t stride);

/* The encoder's search (analysis by synthesis), off after init.  With
 * passes > 0 a frame's codes are not taken from the network as they are:
 * starting from them, each pass decodes every code moved by one level (a
 * binary code's sign flipped; a uniform code one level up or down) and
 * keeps the move that lowers J = distortion + rate_weight x rate the
 * most, until none does or the passes are spent.  distortion: the mean
 * squared error of the decoded frame against the input frame, in the
 * model's space (z-scored with cfg.normalize), as training measures it;
 * rate: the frame's codes' bits under the prior as the range coder codes
 * them (frae_encode_frame_ranged; a fixed-rate frame's bits never
 * change).  It costs up to passes x L (binary) or 2L (uniform) decoder
 * runs a frame.  The stream is the same format and any decoder reads it,
 * recon still being what the decoder produces; decode(encode(x)) equals
 * frae_forward only with the search off.  The choices are the same on
 * every machine and ISA.  Not for a model trained toward other targets
 * (a denoiser): the search steers the decoded frame toward the input.
 * Returns 0, or -1 (nothing changed) for passes < 0, a rate_weight < 0 or
 * not finite, or passes > 0 with a model without a quantizer. */
FRAE_API
int frae_encoder_set_search(frae_encoder *e, int passes, float rate_weight);

FRAE_API
size_t frae_decoder_size(const frae_net *m);
FRAE_API
frae_decoder *frae_decoder_init(void *mem, const frae_net *m);
FRAE_API
frae_decoder *frae_decoder_create(const frae_net *m);
FRAE_API
void frae_decoder_destroy(frae_decoder *d);
FRAE_API
void frae_decoder_reset(frae_decoder *d);
/* frame: D floats out (D + 2 with pitch).  Returns 0, or -1 (state
 * unchanged) for a code no encoder makes: a uniform index >= N, a
 * non-finite float, or pitch bits on an unvoiced frame. */
FRAE_API
int frae_decode_frame(frae_decoder *d, const unsigned char *code, float *frame);

/* A frame that never arrived (packet loss): the decoder runs on the last
 * frame's latent halved, halved again at each further frame lost (toward
 * 0, the codes' middle), and holds the last decoded f0 and voicing (after
 * a silent frame, silence goes on).  For any decoder; an entropy-coded stream
 * cannot be read again until both ends start afresh (frae_packet_*,
 * below, handles it). */
FRAE_API
void frae_decoder_conceal(frae_decoder *d, float *frame);

/* ---- The .fbs bitstream ----------------------------------------------------
 * All integers little-endian:
 *   0  "FRAEBS"            6 bytes
 *   6  version (2)         u8
 *   7  flags               u8   bit 0: the input was one [T, D] sequence;
 *                               bit 1: frames carry pitch (FRAE_PITCH_BITS
 *                               after the L codes); no other bit is set
 *   8  model hash          u64  frae_model_hash of the encoding model
 *  16  sequences           u32
 *  20  frames per sequence u32
 *  24  frame dimension D   u32
 *  28  latent dimension L  u32
 *  32  code bits b         u8   1..16, or 32 for float latents
 *  33  quantizer           u8   0 none, 1 binary, 2 uniform
 *  34  levels N            u16  for uniform
 *  36  codes: sequences x frames x (L values of b bits [+ pitch bits]),
 *      LSB first, no padding between frames, zero bits up to a byte
 *      boundary
 *  end CRC-32 (zlib's) of every byte before it    u32
 * Each sequence starts from empty buffers. */
#define FRAE_STREAM_HEADER 36
#define FRAE_STREAM_PITCH                                                      \
    2 /* flags bit 1: each frame's codes end with
                               FRAE_PITCH_BITS of f0 and voicing */
#define FRAE_STREAM_DTX                                                        \
    4 /* flags bit 2, versions 3 and 4 only: each frame
                               starts with a silence flag (frae_encoder_
                               set_dtx) */
/* 2: first layers sum the fed-back frames oldest first, then the head
 * (frae.h, the numerical contract); version 1 streams decode differently. */
#define FRAE_STREAM_VERSION 2

/* Version 4: entropy-coded frames, for a model with a prior (frae_config.
 * prior_hidden).  A low-rate stream pays for every byte around its codes,
 * so its framing holds only what the model's hash does not pin: the first
 * 16 bytes are version 2's, then the sizes as LEB128 varints (7 bits a
 * byte, low first, the top bit set on all but the last; 1 to 5 bytes,
 * minimal):
 *  16  sequences, frames per sequence, frames per packet P
 *      (1..FRAE_PACKET_MAX_FRAMES)   3 varints
 * (19 to 31 bytes: frae_stream_header_bytes; D, L and the code format are
 * the model's), then the packets: each sequence's frames in ceil(frames /
 * P) packets of P (its last one shorter), sequences in order, no bytes
 * between:
 *        0  payload length n  varint, 1 to 3 bytes, n <= 65535
 *        .  payload           n bytes: the packet's frames range-coded
 *                             (frae_encode_frame_ranged), the coder
 *                             started afresh for each packet
 *        .  CRC-16 (poly 0x1021, initial 0xffff, not reflected:
 *           CRC-16/IBM-3740) of the header's bytes, then the packet's
 *           bytes before it, then the packet's index k (counted from 0
 *           over the stream) as a u32  u16
 * The one check covers the header (on every packet, so a decoder that
 * joins late still checks it), the packet and its place: a lost or
 * reordered packet fails it, and the index it would pass with names the
 * packet found (frae_stream_packet_parse).  The recurrent state runs on
 * across packets within a sequence, so decoding stops at a lost packet.
 *
 * Version 3 (frae 0.4; still read, no longer written): the same packets
 * with a u8 index (k mod 256) before the length and their CRC over their
 * own bytes alone, after a header of the sizes as varints:
 *  16  sequences, frames per sequence, D, L   4 varints
 *   .  code bits b       u8   the fixed-rate width, the most a code needs
 *   .  quantizer         u8   1 binary, 2 uniform
 *   .  levels N          varint  for uniform (else 0)
 *   .  frames per packet P  varint  1..FRAE_PACKET_MAX_FRAMES
 *   .  CRC-32 (zlib's) of the header's bytes before it  u32
 * (28 to 46 bytes).  A stream of either version is entropy-coded when
 * frae_stream_ranged says so. */
#define FRAE_STREAM_VERSION_RANGED 4
#define FRAE_STREAM_VERSION_RANGED_V3 3
#define FRAE_STREAM_HEADER_V3_MAX                                              \
    48 /* the most a version-3 or -4 header
                                        takes */
#define FRAE_PACKET_PAYLOAD                                                    \
    4 /* where a packet's payload is range-coded
                                  before frae_stream_packet_seal */
#define FRAE_PACKET_OVERHEAD                                                   \
    6                          /* the most a packet adds: (index,) length,
                                  CRC */
#define FRAE_PACKET_MIN 3      /* the least a packet takes (version 3: 4) */
#define FRAE_PACKET_FRAMES 100 /* the encoder's default: 1 s at 10 ms */
#define FRAE_PACKET_MAX_FRAMES 1000

typedef struct {
    uint8_t version, flags;
    uint64_t model_hash;
    uint32_t sequences, frames;
    uint32_t frame_dim, latent_dim; /* 0 in a parsed version-4 stream,
                                       whose model (its hash) has them */
    uint8_t code_bits, quantizer;   /* so are these */
    uint16_t levels;
    uint32_t packet_frames;       /* versions 3, 4 and 5 */
    uint32_t resync_packets;      /* version 5: packets between
                                     resynchronisation points (0: only the
                                     first) */
    const unsigned char *payload; /* set by frae_stream_parse: the codes,
                                     or (versions 3, 4) the first packet */
    size_t size;                  /* set by frae_stream_parse: the bytes */
} frae_stream;

/* Whether s is entropy-coded: version 4 or 3, or 5 with its flag. */
FRAE_API
int frae_stream_ranged(const frae_stream *s);
/* ---- Stream coding: frames to a .fbs stream and back ---------------------
 * The loop that frae encode and decode and Python's encode and decode
 * share: frames in, a stream's bytes out as they are made, and back.  An
 * encoder writes the header, then per frame what it completed (a packet,
 * or a fixed-rate stream's whole bytes of codes), then at the end the
 * rest; a decoder reads a whole stream held in memory, frame by frame.
 * Each is one block allocated by create; coding a frame allocates
 * nothing.  Sequences follow each other in the stream, each from empty
 * buffers: the coders reset at each sequence's first frame. */
typedef struct {
    int packet_frames;   /* frames per packet of an entropy-coded stream
                            (a model with a prior), 1..FRAE_PACKET_MAX_FRAMES;
                            0: FRAE_PACKET_FRAMES */
    int search;          /* the encoder's search, passes (0: off; at most
                            16): frae_encoder_set_search */
    float search_lambda; /* its rate weight; < 0: the model's rate_lambda */
    int dtx;             /* a frame the caller says is silent is sent as
                            silence (DTX: a model with a prior) */
    int datagrams;       /* 1: stream version 5, packets a datagram
                            transport carries (below, "Real-time
                            packets"), for any model; 0: versions 2 and 4,
                            for files */
    int resync_packets;  /* version 5: a resynchronisation point every this
                            many packets; 0: the default (entropy-coded
                            streams FRAE_RESYNC_MS_RANGED, fixed-rate
                            FRAE_RESYNC_MS_FIXED, in packets); -1: only
                            the first packet */
    int resync_state;    /* version 5, fixed-rate: 1, both ends start the
                            network afresh at each resynchronisation point
                            too (FRAE_STREAM_STATE_RESYNC), as an
                            entropy-coded stream's always do */
} frae_stream_options;
/* Everything off, search_lambda -1 (the search too: frae encode's and
 * Python's default, FRAE_SEARCH_PASSES, comes from frae_codec_settings). */
#define FRAE_SEARCH_PASSES 2
FRAE_API
void frae_stream_options_default(frae_stream_options *o);
/* (frae_stream_encoder_create says why a model cannot code a stream with
 * o, in one line.) */

/* ---- codec options by name (src/codec/codec_options.c) -------------------
 * One row per option of the codec's two ends: the frae command parses
 * 'frae encode' and 'frae decode' with it and prints their --help from it,
 * and Python's Codec.encode/decode and FRAE.encode take its rows as
 * keywords ("packet-ms" is --packet-ms and packet_ms).  Adding an option is
 * a row here and its use. */
typedef struct {
    double frame_rate;    /* frame-rate: frames a second, for kbit/s (100) */
    int packet_frames;    /* packet-frames: entropy-coded packets (0: 100) */
    int search;           /* search: passes of the encoder's search; -1 (the
                             default): FRAE_SEARCH_PASSES for a speech
                             codec (cfg.pitch, with codes, no targets, not
                             look-ahead with a prior), else 0 */
    double search_lambda; /* search-lambda; < 0: the model's rate_lambda */
    int dtx;              /* dtx: silent frames sent as silence */
    double dtx_level;     /* dtx-level, dB (FRAE_DTX_LEVEL, frae_audio.h) */
    int packet_ms;        /* packet-ms: real-time packets (0: a file) */
    int resync_ms;        /* resync-ms; 0: the default, -1: off */
    int resync_state;     /* resync-state */
    int through;          /* through: decode through bit errors */
    int vocoder;          /* vocoder: 0 auto, 1 hnm, 2 gl */
    int gl_iters;         /* gl-iters: Griffin-Lim iterations (32) */
    int polish;           /* polish: rounds of frae_audio_out's polish
                             (FRAE_POLISH_ROUNDS, frae_audio.h) */
    uint32_t given;       /* a bit per row set by frae_codec_option_set */
} frae_codec_settings;
#define FRAE_CODEC_ENCODES 1 /* frae_codec_option.sides */
#define FRAE_CODEC_DECODES 2
typedef struct {
    const char *name;    /* "packet-ms" */
    const char *metavar; /* "N"; NULL: a flag */
    int sides;           /* FRAE_CODEC_ENCODES and/or FRAE_CODEC_DECODES */
    const char *help;    /* what it does, one line */
    const char *deflt;   /* the value when not given, or NULL */
} frae_codec_option;
/* Every default, as frae encode and frae decode with no option. */
FRAE_API
void frae_codec_settings_default(frae_codec_settings *s);
FRAE_API
int frae_codec_option_count(void);
FRAE_API
const frae_codec_option *frae_codec_option_at(int index);
/* The row of "packet-ms", "--packet-ms" or "packet_ms"; -1 if none. */
FRAE_API
int frae_codec_option_find(const char *name);
/* Parses value (NULL for a flag) into s and marks the option given: 0, or
 * -1 with one line in err naming the option as name gives it. */
FRAE_API
int frae_codec_option_set(frae_codec_settings *s, const char *name,
                          const char *value, char *err, size_t errlen);
/* A row's --help line ("  --packet-ms N        real-time packets ...\n",
 * the default in parentheses): its bytes (as snprintf counts them). */
FRAE_API
size_t frae_codec_option_help(const frae_codec_option *o, char *out,
                              size_t cap);
/* The stream options s asks of model m for an input of `sequences`
 * sequences: the packets (packet-ms, a whole number of frames at
 * frame-rate, or packet-frames), the resynchronisation points, the
 * search, DTX; 0, or -1 and one line in err (naming the option). */
FRAE_API
int frae_codec_stream_options(const frae_codec_settings *s, const frae_net *m,
                              long sequences, frae_stream_options *so,
                              char *err, size_t errlen);

/* What a stream took: every byte counted. */
typedef struct {
    uint64_t bytes; /* all of them so far, header included */
    uint64_t header_bytes;
    uint64_t packets;         /* entropy-coded streams */
    uint64_t packet_overhead; /* the packets' lengths and CRCs (version
                                 5: each packet's byte 0 and count) */
    uint64_t frames;
    uint64_t silent_frames;  /* sent as silence (DTX) */
    uint64_t datagram_bytes; /* version 5: the header and the packets as
                                 a datagram transport carries them (bytes
                                 less the file's lengths and CRCs) */
} frae_stream_counts;

typedef struct frae_stream_encoder frae_stream_encoder;
/* A stream of `sequences` sequences of `frames` frames each
 * (one_sequence_2d: the input was one [T, D] array, recorded in its
 * flags); o NULL: the defaults.  NULL and one line in err for options the
 * model cannot code (frae_stream_options_check) or no frames. */
FRAE_API
frae_stream_encoder *
frae_stream_encoder_create(const frae_net *m, const frae_stream_options *o,
                           uint32_t sequences, uint32_t frames,
                           int one_sequence_2d, char *err, size_t errlen);
FRAE_API
void frae_stream_encoder_destroy(frae_stream_encoder *e);
/* The header's fields. */
FRAE_API
const frae_stream *frae_stream_encoder_stream(const frae_stream_encoder *e);
/* The most bytes the whole stream can take (its header, frames and end):
 * a buffer that holds any stream of these sizes; 0 for a live stream of
 * real-time packets (frames not known). */
FRAE_API
uint64_t frae_stream_encoder_bound(const frae_stream_encoder *e);
/* The bytes to write next, valid until the next call: after create the
 * header, after each frame what it completed (often none), after end the
 * rest. */
FRAE_API
const unsigned char *frae_stream_encoder_bytes(const frae_stream_encoder *e,
                                               size_t *n);
/* The stream's next frame (D floats, D + 2 with pitch), silent meaning
 * silence with DTX on (ignored otherwise); recon (may be NULL): the frame
 * the decoder will give (a reader then moves the f0 of a voicing onset's
 * climb: frae_stream_read).  Returns the bytes ready
 * (frae_stream_encoder_bytes); frames past those the header declares are
 * not coded.
 * A look-ahead model's encoder (cfg.lookahead = A) codes each frame once
 * the A after it have come (those of its own sequence: a sequence's last
 * frames see up to its end), so a call codes the frame given A calls
 * before (recon is that frame's; the first A calls code none and leave
 * recon alone), and frame NULL codes the oldest frame still held without
 * a new one (frae_stream_encoder_pending: how many are held), as a packet
 * sender does at the end to take each packet alone; end codes any still
 * held, their bytes before the end's.  A model whose look-ahead stops at
 * packets (cfg.lookahead_packet) lets a packet's frames go sooner: once
 * the next packet's first frame has come, frae_stream_encoder_ready
 * counts the held frames that see all they will, which frame NULL codes
 * one a call, so a sender that codes them at once sends each packet of
 * lookahead_packet frames a frame after its last. */
FRAE_API
size_t frae_stream_encode(frae_stream_encoder *e, const float *frame,
                          int silent, float *recon);
FRAE_API
uint32_t frae_stream_encoder_pending(const frae_stream_encoder *e);
FRAE_API
uint32_t frae_stream_encoder_ready(const frae_stream_encoder *e);
/* After the last frame: 0 (the rest in frae_stream_encoder_bytes), or -1
 * if fewer frames came than the header declares. */
FRAE_API
int frae_stream_encoder_end(frae_stream_encoder *e);
FRAE_API
void frae_stream_encoder_counts(const frae_stream_encoder *e,
                                frae_stream_counts *c);
/* Version 5: the packet the last call completed, bare, as a datagram
 * carries it (n 0 if none); frae_stream_encoder_bytes gives it framed for
 * a file or a pipe.  A live stream (frames 0 at create) ends its last
 * packet short at end.  After end, only the last packet end completed: a
 * look-ahead model's held frames can fill more than one, so a sender that
 * takes each packet alone codes them first with frame NULL
 * (frae_stream_encode) until frae_stream_encoder_pending is 0. */
FRAE_API
const unsigned char *frae_stream_encoder_packet(const frae_stream_encoder *e,
                                                size_t *n);

/* ---- one encode loop: frames in, the stream's bytes out -----------------
 * 'frae encode's loop and Python's encode: every frame of the stream the
 * encoder was created for (sequences x frames), read a chunk at a time
 * from the caller's source, coded, and the bytes written as they are
 * made (the header first, the end last); memory is one chunk of frames,
 * allocated once, whatever the stream's length. */
typedef struct {
    /* n frames of sequence seq from frame t, into dst (n x width
     * floats): 0, or -1 if they cannot be read */
    int (*read)(void *ctx, long seq, long t, long n, float *dst);
    /* the stream's next bytes: 0, or -1 if they cannot be written */
    int (*write)(void *ctx, const unsigned char *bytes, size_t n);
    /* DTX (frae_stream_options.dtx): whether frame t of sequence seq is
     * silent, asked of each frame in order; NULL: none is */
    int (*silent)(void *ctx, long seq, long t, const float *frame);
    void *ctx;
} frae_frames_io;
/* What the decoder will make of the frames, measured as they are coded:
 * the envelope's (the first D values) squared error and energy; with
 * pitch, the voiced input frames, those decoded voiced, and the sum of
 * their |f0 decoded / f0 - 1|. */
typedef struct {
    double sse, energy, f0_err;
    uint64_t voiced, voicing_kept;
    long seq, frame; /* FRAE_ENCODE_NONFINITE: the frame */
} frae_encode_tally;
typedef enum {
    FRAE_ENCODE_OK,
    FRAE_ENCODE_READ,      /* io.read failed */
    FRAE_ENCODE_WRITE,     /* io.write failed */
    FRAE_ENCODE_NONFINITE, /* a frame decodes to a value no audio has
                              (tally's seq, frame) */
    FRAE_ENCODE_MEMORY
} frae_encode_status;
FRAE_API
frae_encode_status frae_stream_encode_all(frae_stream_encoder *e,
                                          const frae_frames_io *io,
                                          frae_encode_tally *tally);

/* ---- Real-time packets: stream version 5 ---------------------------------
 * For a voice link: packets of a few frames (20 to 60 ms) that a datagram
 * transport (UDP, RTP) carries, each decodable whatever was lost before
 * it, or after a resynchronisation point for an entropy-coded stream.
 * The transport gives a packet's length, so a packet holds only what it
 * cannot:
 *   byte 0   bits 0-5: the packet's index mod 64 (the decoder finds gaps,
 *            late and duplicated packets by it); bit 6: a
 *            resynchronisation point; bit 7: short, the stream's last
 *            packet with fewer than P frames, their count following as a
 *            varint
 *   payload  fixed-rate: the frames' codes packed LSB first as version
 *            2's, zero bits to a byte boundary; entropy-coded: the frames
 *            range-coded (docs/codec.md), the coder afresh in
 *            each packet, its flush trimmed of trailing zeros
 * At a resynchronisation point (the first packet, then every R) the
 * payload starts with the pitch predictor's log2 f0, 7 bits over 50-600
 * Hz (a model with pitch), so that a predictor a loss left behind is set
 * again; and an entropy-coded stream's both ends start afresh there (the
 * network's state, the prior's recalibration, the adaptive counts), since
 * its probabilities come from the decoder's state: a decoder that lost a
 * packet conceals until the next such point, then decodes exactly.  A
 * fixed-rate stream's codes need no state to read, so it decodes the next
 * packet that comes, its network converging back from wherever the loss
 * left it; with flags bit 4 (FRAE_STREAM_STATE_RESYNC: frae encode
 * --resync-state) both ends also start the network afresh at each
 * resynchronisation point (its state, the feedback ring, the pitch
 * predictor then set by the anchor), so that from the first one after a
 * loss the decode is the loss-free one, bit for bit.
 * The stream's header, sent first (or out of band):
 *   0  "FRAEBS", version 5 (u8), flags (u8: bit 0 the input was one
 *      sequence, 1 pitch, 2 DTX, 3 entropy-coded, 4 the state starts
 *      afresh at resynchronisation points, fixed-rate), model hash (u64)
 *  16  frames per packet P, packets between resynchronisation points R
 *      (0: the first only), frames F (0: not known, a live stream): three
 *      varints
 *   .  CRC-16 of the header's bytes before it (u16), as version 4's
 * In a file or a pipe each packet follows as a varint length n, its n
 * bytes, and a CRC-16 of them (u16): a damaged packet is then found and
 * treated as lost, and the good ones around it decode; a damaged length
 * too: the reader (frae_packet_read) finds the next packet whose CRC-16
 * holds and whose index follows, and conceals the packets between. */
#define FRAE_STREAM_VERSION_PACKETS 5
#define FRAE_STREAM_RANGED_PACKETS 8 /* version 5 flags bit 3 */
#define FRAE_STREAM_STATE_RESYNC 16  /* version 5 flags bit 4 (fixed-rate) */
#define FRAE_PACKET_INDEX_MOD 64
#define FRAE_PACKET_RESYNC 0x40
#define FRAE_PACKET_SHORT 0x80
#define FRAE_STREAM_HEADER_V5_MAX 33
#define FRAE_RESYNC_MS_RANGED 1000 /* the default resynchronisation */
#define FRAE_RESYNC_MS_FIXED 200   /* intervals, at 100 frames a second */
/* A version-5 header at buf: its bytes, or -1 and one line in err (0: buf
 * ends before it does). */
FRAE_API
long frae_packet_header_parse(const void *buf, size_t size, frae_stream *s,
                              char *err, size_t errlen);

/* The receiving end.  A decoder over a version-5 stream's header takes
 * the packets as they come: decode, for a packet received (its index
 * finds it: the next one; ahead of it, the packets between it and the
 * last are lost and concealed first; behind, late or a duplicate, and
 * dropped); conceal, for a packet known lost (its time passed, or its
 * CRC failed), P frames.  Each writes frames (D floats, D + 2 with
 * pitch) into frames, at most cap of them (FRAE_PACKET_DECODE_MAX of one
 * packet and the losses before it), and returns how many.  through (off
 * after create) decodes through bit errors, for a fixed-rate stream on a
 * channel without checks: packets are taken in the order they come, their
 * index not believed, and a code no encoder makes is concealed.  Nothing
 * is allocated after create. */
#define FRAE_PACKET_DECODE_MAX(P) (64L * (P))
typedef struct frae_packet_decoder frae_packet_decoder;
typedef struct {
    uint64_t packets;       /* received and decoded (or waited through) */
    uint64_t lost;          /* found missing, or given to conceal */
    uint64_t late;          /* late or duplicated, dropped */
    uint64_t frames;        /* frames out */
    uint64_t concealed;     /* of them concealed */
    uint64_t damaged;       /* frae_packet_read: packets whose CRC failed */
    uint64_t skipped_bytes; /* ... bytes of no packet (damaged framing) */
} frae_packet_counts;
FRAE_API
frae_packet_decoder *frae_packet_decoder_create(const frae_net *m,
                                                const frae_stream *s, char *err,
                                                size_t errlen);
FRAE_API
void frae_packet_decoder_destroy(frae_packet_decoder *d);
FRAE_API
void frae_packet_decoder_through(frae_packet_decoder *d, int on);
FRAE_API
long frae_packet_decode(frae_packet_decoder *d, const unsigned char *packet,
                        size_t n, float *frames, long cap);
FRAE_API
long frae_packet_conceal(frae_packet_decoder *d, float *frames, long cap);
FRAE_API
void frae_packet_decoder_counts(const frae_packet_decoder *d,
                                frae_packet_counts *c);
/* A version-5 file's or pipe's bytes after the header, decoded as they
 * come ('frae decode's loop): buf holds avail bytes from where the last
 * call's *used ended; end says no more will come.  Takes the next packet
 * and writes its frames (at most cap: FRAE_PACKET_DECODE_MAX), the
 * packets lost before it concealed first.  Damage never stops it: a
 * packet whose CRC-16 fails is concealed (decoded, through), and after a
 * damaged length it finds the next packet whose CRC-16 holds and whose
 * index follows (the resynchronisation), the packets between concealed.
 * Returns the frames, *used the bytes taken (frames and *used 0: a long
 * loss run concealed in parts, call again with the same bytes); 0 frames
 * and *used 0: read until buf holds *need bytes (at most
 * frae_packet_window), or, at the end, done.  At the end it conceals what the header's frame count says
 * loss took at the end, at most FRAE_PACKET_TAIL_MAX frames (1 s of 10 ms
 * frames), and only once some bytes came: never frames that only the
 * header promises.  Frames past the header's count are not given.
 * Nothing is allocated. */
#define FRAE_PACKET_TAIL_MAX 100
FRAE_API
long frae_packet_read(frae_packet_decoder *d, const unsigned char *buf,
                      size_t avail, int end, size_t *used, size_t *need,
                      float *frames, long cap);
/* The bytes a reader's buffer for frae_packet_read holds. */
FRAE_API
size_t frae_packet_window(const frae_packet_decoder *d);

/* ---- Reading any stream: one loop for versions 2 to 5 (src/codec/reader.c)
 * 'frae decode's loop and Python's decoder.  buf holds avail bytes from
 * where the last call's *used ended; end says no more will come.  The
 * first calls read the header (frae_stream_reader_stream is NULL until
 * then); then each call gives frames in order, of one sequence (*seq),
 * into the reader's memory (*frames, valid until the next call): how
 * many, 0 with nothing used once the stream is done (0 with *used > 0, or
 * with *need > avail: call again, with at least *need bytes if it can),
 * or -1 and one line in err.  Versions 2 to 4 are files: give the whole
 * stream with end set (a mapping: the bytes must stay until the reader is
 * destroyed), and the stream is checked whole before a frame comes (its
 * CRC, its model).  Version 5 is read as it comes (frae_packet_read: a
 * pipe is read exactly as far as *need, never ahead), lost and damaged
 * packets concealed; a header whose frames never came is refused.
 * With pitch, a voicing onset whose f0 climbs at the pitch coder's limit
 * (steps of half an octave, one way) has the climb's frames given the f0
 * it reaches within the call's frames (a file's 64 at most, a packet's),
 * the rest as coded (docs/codec.md, "Pitch").
 * Memory is allocated once, with the header: frae_stream_reader_window
 * bytes at most are asked for at once. */
typedef struct frae_stream_reader frae_stream_reader;
FRAE_API
frae_stream_reader *frae_stream_reader_create(const frae_net *m);
FRAE_API
void frae_stream_reader_destroy(frae_stream_reader *r);
/* Version 5's decoding through bit errors (frae_packet_decoder_through). */
FRAE_API
void frae_stream_reader_through(frae_stream_reader *r, int on);
FRAE_API
long frae_stream_read(frae_stream_reader *r, const unsigned char *buf,
                      size_t avail, int end, size_t *used, size_t *need,
                      const float **frames, uint32_t *seq, char *err,
                      size_t errlen);
FRAE_API
const frae_stream *frae_stream_reader_stream(const frae_stream_reader *r);
FRAE_API
size_t frae_stream_reader_window(const frae_stream_reader *r);
/* Version 5's counts (frae_packet_decoder_counts); the others', frames. */
FRAE_API
void frae_stream_reader_counts(const frae_stream_reader *r,
                               frae_packet_counts *c);

/* ---- the shipped models (src/codec/models.c) ----------------------------
 * models/ in the source tree holds the shipped codecs ('make models'
 * rebuilds them; models/README.md says what they were trained on); 'make
 * install' puts them in PREFIX/share/frae/models, and 'pip install .' in
 * the Python package (frae/models).  They are found where this library (or
 * the program) is, not compiled in: see src/codec/models.c.  One search
 * order serves the command, the C library and Python (its extension asks
 * this library); frae_models_dir gives the index-th directory that exists
 * in it (each once): 0, or -1 past the last.
 *   1. $FRAE_MODELS: colon-separated directories, alone when set;
 *   2. the user's: $XDG_DATA_HOME/frae/models (an absolute XDG_DATA_HOME),
 *      else $HOME/.local/share/frae/models;
 *   3. beside the code: DIR/../share/frae/models and DIR/../models for
 *      DIR the library's directory, then the running program's (an
 *      install at any PREFIX; the source tree's models/ for build/frae);
 *   4. the directories added by frae_models_add_dir, in order (the Python
 *      module adds its package's frae/models, then the source tree's
 *      models/ when it is run from the tree);
 *   5. PREFIX/share/frae/models of the build. */
#define FRAE_DEFAULT_MODEL "speech" /* the fixed-rate 1.6 kbit/s codec */
FRAE_API
int frae_models_dir(int index, char *dir, size_t n);
/* Adds dir to the search (4. above; at most FRAE_MODELS_ADDED_MAX, each
 * once): 0, or -1 (NULL, empty, too long, or the table full).  Safe from
 * any thread; a search under way may or may not see it. */
#define FRAE_MODELS_ADDED_MAX 8
FRAE_API
int frae_models_add_dir(const char *dir);
#define FRAE_MODEL_NAME_MAX 256
/* Every shipped model, however many: each directory in search order, its
 * checkpoints in name order, fn(dir, name (less .safetensors), path,
 * used, ctx); used is 1 for the file frae_load_shipped(name) loads (the
 * first readable one of that name), 0 for one an earlier file of its name
 * hides, or one that cannot be read.  fn returning nonzero stops.  The
 * list 'frae models' prints and frae.models() returns.  Returns how many
 * files fn was given, or -1 out of memory. */
typedef int (*frae_models_fn)(const char *dir, const char *name,
                              const char *path, int used, void *ctx);
FRAE_API
int frae_models_each(frae_models_fn fn, void *ctx);
/* The shipped model name (NULL: FRAE_DEFAULT_MODEL; "speech-vbr" the
 * variable-rate one, "speech-3k2" the 3.2 kbit/s one), loaded as frae_load does (runtime may be NULL): the
 * first NAME.safetensors in the search order.  path (may be NULL) gets
 * its file.  NULL and one line in err if there is none. */
FRAE_API
frae_model *frae_load_shipped(const char *name, const frae_config *runtime,
                              char *path, size_t path_len, char *err,
                              size_t errlen);
/* The model whose frae_model_hash is hash (a stream's model_hash) among
 * the shipped ones, each directory's files in name order, however many.
 * A checkpoint records its hash in its metadata (frae.model_hash, which
 * frae_save writes): a file that records another is passed over, its
 * header alone read, and the file chosen is hashed from its weights;
 * older files, which record none, are loaded and hashed.  NULL and one
 * line in err if none matches. */
/* The same search in directory dir alone (a caller's own directories):
 * 1 and the file's path in path (path_len bytes), 0 if no checkpoint of
 * dir has that hash, -1 out of memory. */
FRAE_API
int frae_models_dir_find(const char *dir, uint64_t hash, char *path,
                         size_t path_len);
FRAE_API
frae_model *frae_load_by_hash(uint64_t hash, const frae_config *runtime,
                              char *path, size_t path_len, char *err,
                              size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
