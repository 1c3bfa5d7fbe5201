/* .npz as np.savez writes it: a zip archive of .npy members, stored (no
 * compression), often with zip64 fields.  Read through the central
 * directory; every offset and size is checked against the buffer, and
 * each member's CRC-32 is verified. */
#include <stdio.h>
#include <string.h>

#include "formats.h"

static uint32_t rd16(const unsigned char *p) { return p[0] | p[1] << 8; }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

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

#define FAIL(...)                                                              \
    do {                                                                       \
        frae_errorf(err, errlen, __VA_ARGS__);                                 \
        return -1;                                                             \
    } while (0)

int frae_npz_members(const unsigned char *buf, size_t size, const char *path,
                     frae_npz_member *out, int cap, char *err, size_t errlen)
{
    /* end of central directory: 22 bytes plus a comment of up to 64 KiB */
    if (size < 22)
        FAIL("%s: not a .npz (zip) file", path);
    size_t eocd = size - 22;
    size_t stop = size > 22 + 65535 ? size - 22 - 65535 : 0;
    while (rd32(buf + eocd) != 0x06054b50u) {
        if (eocd == stop)
            FAIL("%s: not a .npz (zip) file: no end of central directory",
                 path);
        eocd--;
    }
    uint64_t count = rd16(buf + eocd + 10);
    uint64_t cd_size = rd32(buf + eocd + 12), cd_off = rd32(buf + eocd + 16);
    if (count == 0xffff || cd_off == 0xffffffffu || cd_size == 0xffffffffu) {
        /* zip64: the locator sits just before the classic record */
        if (eocd < 20 || rd32(buf + eocd - 20) != 0x07064b50u)
            FAIL("%s: zip64 archive without its locator", path);
        uint64_t z = rd64(buf + eocd - 20 + 8);
        /* the 56-byte zip64 record must lie before the locator */
        if (z > eocd - 20 || eocd - 20 - z < 56 ||
            rd32(buf + z) != 0x06064b50u)
            FAIL("%s: bad zip64 end of central directory", path);
        count = rd64(buf + z + 32);
        cd_size = rd64(buf + z + 40);
        cd_off = rd64(buf + z + 48);
    }
    if (cd_off > size || cd_size > size - cd_off)
        FAIL("%s: truncated: central directory outside the file", path);
    if (count > (uint64_t)cap)
        FAIL("%s: %llu members, more than %d", path,
             (unsigned long long)count, cap);
    size_t at = (size_t)cd_off, end = (size_t)(cd_off + cd_size);
    for (uint64_t i = 0; i < count; i++) {
        if (end - at < 46 || rd32(buf + at) != 0x02014b50u)
            FAIL("%s: corrupt central directory entry %llu", path,
                 (unsigned long long)i);
        unsigned method = rd16(buf + at + 10);
        uint32_t crc = rd32(buf + at + 16);
        uint64_t csize = rd32(buf + at + 20), usize = rd32(buf + at + 24);
        size_t nlen = rd16(buf + at + 28), xlen = rd16(buf + at + 30),
               clen = rd16(buf + at + 32);
        uint64_t loff = rd32(buf + at + 42);
        if (end - at - 46 < nlen + xlen + clen)
            FAIL("%s: corrupt central directory entry %llu", path,
                 (unsigned long long)i);
        const unsigned char *name = buf + at + 46, *x = name + nlen;
        /* zip64 extra field: the 0xffffffff fields, in order */
        for (size_t e = 0; e + 4 <= xlen;) {
            size_t id = rd16(x + e), len = rd16(x + e + 2), f = e + 4;
            if (e + 4 + len > xlen)
                break;
            if (id == 1) {
                if (usize == 0xffffffffu && f + 8 <= e + 4 + len)
                    usize = rd64(x + f), f += 8;
                if (csize == 0xffffffffu && f + 8 <= e + 4 + len)
                    csize = rd64(x + f), f += 8;
                if (loff == 0xffffffffu && f + 8 <= e + 4 + len)
                    loff = rd64(x + f);
            }
            e += 4 + len;
        }
        frae_npz_member *m = &out[i];
        size_t copy = nlen < sizeof m->name - 1 ? nlen : sizeof m->name - 1;
        memcpy(m->name, name, copy);
        m->name[copy] = 0;
        if (method != 0)
            FAIL("%s: member '%s' is compressed (method %u); save with "
                 "np.savez, not np.savez_compressed",
                 path, m->name, method);
        if (csize != usize)
            FAIL("%s: member '%s' has inconsistent sizes", path, m->name);
        if (loff > size || size - loff < 30 || rd32(buf + loff) != 0x04034b50u)
            FAIL("%s: member '%s': bad local header", path, m->name);
        size_t data = (size_t)loff + 30 + rd16(buf + loff + 26) +
                      rd16(buf + loff + 28);
        if (data > size || size - data < usize)
            FAIL("%s: truncated: member '%s' runs past the end", path,
                 m->name);
        m->data = buf + data;
        m->size = (size_t)usize;
        if (!FRAE_FUZZING && frae_crc32(m->data, m->size) != crc)
            FAIL("%s: member '%s' is corrupted (CRC mismatch)", path,
                 m->name);
        at += 46 + nlen + xlen + clen;
    }
    return (int)count;
}
