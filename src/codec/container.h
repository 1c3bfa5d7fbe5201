/* The .fbs container's parts, inside the library (codec.c, packets.c,
 * stream_coder.c, container.c; tests and fuzzers): the header, packets
 * sealed and parsed, a version-2 stream written and read, a packet's
 * CRC-16 and the varints of the header and the packet lengths.  The
 * format itself is frae_codec.h's and docs/formats.md's; the public face
 * reads and writes whole streams (frae_stream_encoder, _decoder,
 * frae_packet_read). */
#ifndef FRAE_CODEC_CONTAINER_H
#define FRAE_CODEC_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "codec/entropy.h"
#include "frae_codec.h"

/* A version-4 packet's CRC-16: over stream s's header, the packet's n
 * bytes (its length and payload), then its index as a u32. */
uint16_t frae_packet_crc(const frae_stream *s, const unsigned char *packet,
                         size_t n, uint32_t index);
/* v as a minimal LEB128 varint at p (1 to 5 bytes): the bytes written.
 * Versions 3 and 4's sizes and packet lengths. */
size_t frae_varint_put(unsigned char *p, uint32_t v);
/* One from p's avail bytes into v: the bytes it took, 0 if they end
 * first, -1 if it is malformed (longer than 5 bytes, past 32 bits, or not
 * minimal). */
int frae_varint_get(const unsigned char *p, size_t avail, uint32_t *v);

/* Fills the header fields for a stream of m's codes: version 4, with
 * FRAE_PACKET_FRAMES frames per packet (fewer if a packet could outgrow
 * its u16 length), for a model with a prior; else version 2.  flags: bit
 * 0, the input was one [T, D] sequence; FRAE_STREAM_DTX (kept for version
 * 4 only), the frames carry a silence flag. */
void frae_stream_header(const frae_net *m, uint32_t sequences, uint32_t frames,
                        int flags, frae_stream *s);
/* A version-2 stream's bytes; 0 for versions 3 and 4, whose size is
 * known once written. */
size_t frae_stream_bytes(const frae_stream *s);
/* The header's bytes: FRAE_STREAM_HEADER, or version 4's (its varints
 * make it 19 to 31; version 3's 28 to 46; at most
 * FRAE_STREAM_HEADER_V3_MAX). */
size_t frae_stream_header_bytes(const frae_stream *s);
/* Versions 3 and 4: packets in the stream; the most bytes one packet of
 * packet_frames frames can take (a buffer for frae_stream_packet_seal;
 * from the header frae_stream_header filled); sealing packet index
 * (counted over the stream) of stream s, whose payload (range-coded from
 * packet + FRAE_PACKET_PAYLOAD) is payload_bytes <= 65535 long: writes
 * the length (version 3: index and length), moves the payload after it,
 * appends the CRC, and returns the packet's bytes from packet[0]; and
 * reading one of s from avail bytes: the expected index, its payload, and
 * the bytes it took, or -1 and one line in err (truncated, corrupted, or
 * a packet missing: which one came instead). */
uint64_t frae_stream_packets(const frae_stream *s);
size_t frae_stream_packet_cap(const frae_stream *s);
size_t frae_stream_packet_seal(const frae_stream *s, unsigned char *packet,
                               uint32_t index, size_t payload_bytes);
long frae_stream_packet_parse(const frae_stream *s, const unsigned char *p,
                              size_t avail, uint32_t index,
                              const unsigned char **payload, size_t *len,
                              char *err, size_t errlen);
/* Version 2: writes frae_stream_bytes(s) bytes: header, the frames' codes
 * (each frae_code_bytes, in order), CRC. */
void frae_stream_write(unsigned char *dst, const frae_stream *s,
                       const unsigned char *frame_codes);
/* The same stream written a frame at a time, for inputs too long to hold
 * their codes: begin writes the header (FRAE_STREAM_HEADER bytes), add
 * takes one frame's frae_code_bytes and writes the whole bytes that
 * completes (at most frae_code_bytes + 1), end writes the last partial
 * byte and the CRC (at most 5); each returns the bytes it wrote to out.
 * Frames go in stream order, s->sequences x s->frames of them.  For
 * version 4 (and 3), begin writes its header (frae_stream_header_bytes),
 * and packets follow (frae_stream_packet_seal); add and end are not used. */
typedef struct {
    frae_stream s;
    uint32_t crc;
    unsigned char carry; /* bits waiting for their byte */
    int carry_bits;
} frae_stream_writer;
size_t frae_stream_writer_begin(frae_stream_writer *w, const frae_stream *s,
                                unsigned char *out);
size_t frae_stream_writer_add(frae_stream_writer *w, const unsigned char *code,
                              unsigned char *out);
size_t frae_stream_writer_end(frae_stream_writer *w, unsigned char *out);
/* Validates magic, version, sizes, exact length and CRC; never reads out
 * of bounds.  One line in err on failure. */
int frae_stream_parse(const void *buf, size_t size, frae_stream *s, char *err,
                      size_t errlen);
/* Whether m can decode s: version, pitch, shape and code format (where
 * the stream states them) and model hash. */
int frae_stream_check_model(const frae_stream *s, const frae_net *m, char *err,
                            size_t errlen);
/* Version 2: the code bytes of frame f (counting across sequences) of a
 * parsed s (versions 3 and 4 have no fixed place per frame: read their
 * packets). */
void frae_stream_frame_code(const frae_stream *s, uint64_t f,
                            unsigned char *code);

/* The most bytes a packet of stream s takes (a buffer for it). */
size_t frae_packet_cap(const frae_stream *s);

/* A version-2 to -4 stream decoded frame by frame (stream_coder.c): the
 * reader's (reader.c) building block; frae_stream_reader is the public
 * way. */
typedef struct frae_stream_decoder frae_stream_decoder;
/* Over a whole stream of size bytes at buf, which the caller keeps until
 * destroy: parsed (frae_stream_parse) and checked against m
 * (frae_stream_check_model).  NULL and one line in err otherwise. */
frae_stream_decoder *frae_stream_decoder_create(const frae_net *m,
                                                const void *buf, size_t size,
                                                char *err, size_t errlen);
void frae_stream_decoder_destroy(frae_stream_decoder *d);
const frae_stream *frae_stream_decoder_stream(const frae_stream_decoder *d);
/* The next frame into frame (D floats, D + 2 with pitch), and where it is
 * (seq, t: may be NULL): 1, 0 once every frame is out, or -1 and one line
 * in err for bytes no encoder writes. */
int frae_stream_decode(frae_stream_decoder *d, float *frame, uint32_t *seq,
                       uint32_t *t, char *err, size_t errlen);

#endif
