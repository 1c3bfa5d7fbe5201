/* The .fbs container's small parts, for the codec's files (codec.c,
 * packets.c, stream_coder.c) and the command that frames packets: a
 * packet's CRC-16 and the varints of the header and the packet lengths. */
#ifndef FRAE_CODEC_CONTAINER_H
#define FRAE_CODEC_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

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

#endif
