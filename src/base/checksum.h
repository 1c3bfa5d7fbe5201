/* Checksums, for every layer above: .npz members and .fbs streams
 * (CRC-32), packets (CRC-16), checkpoint data and model hashes (FNV-1a). */
#ifndef FRAE_BASE_CHECKSUM_H
#define FRAE_BASE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 with zlib's (and zip's) polynomial: .npz members, .fbs streams. */
uint32_t frae_crc32(const unsigned char *p, size_t n);
/* The same, continued: frae_crc32_update(frae_crc32(a), b) is the CRC of a
 * followed by b; start from 0. */
uint32_t frae_crc32_update(uint32_t crc, const unsigned char *p, size_t n);
/* CRC-16/IBM-3740 (poly 0x1021, initial 0xffff): version-3 packets; the
 * _update form continues from crc16 (start from 0xffff). */
uint16_t frae_crc16(const unsigned char *p, size_t n);
uint16_t frae_crc16_update(uint16_t crc16, const unsigned char *p, size_t n);

/* FNV-1a, 64 bits, over bytes: the checkpoint data checksum. */
uint64_t frae_fnv1a64(const unsigned char *p, size_t n, uint64_t h);
#define FRAE_FNV_INIT 0xcbf29ce484222325ull

#endif
