/* Checksums (checksum.h): CRC-32 as zlib and zip compute it, CRC-16/IBM-
 * 3740 and FNV-1a.  Bit loops, not tables: they run over headers and
 * packets of a few bytes, and whole tensors only at load and save. */
#include "base/checksum.h"

uint32_t frae_crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c >> 1 ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

uint32_t frae_crc32(const unsigned char *p, size_t n)
{
    return frae_crc32_update(0, p, n);
}

/* CRC-16/IBM-3740 (poly 0x1021, initial 0xffff, not reflected): a packet's
 * check, 2 bytes where CRC-32 took 4; "123456789" gives 0x29b1. */
uint16_t frae_crc16_update(uint16_t crc16, const unsigned char *p, size_t n)
{
    uint32_t crc = crc16;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint32_t)p[i] << 8;
        for (int k = 0; k < 8; k++)
            crc = (crc & 0x8000 ? crc << 1 ^ 0x1021 : crc << 1) & 0xffff;
    }
    return (uint16_t)crc;
}

uint16_t frae_crc16(const unsigned char *p, size_t n)
{
    return frae_crc16_update(0xffff, p, n);
}

uint64_t frae_fnv1a64(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
