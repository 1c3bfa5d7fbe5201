/* NumPy .npy arrays: float32/float64, C order, little-endian, [T, D] or
 * [N, T, D].  Files are memory-mapped, so a dataset is never held in
 * memory twice; float64 is converted to float32 frame by frame.
 * Format: "\x93NUMPY", version, header length (u16 for 1.x, u32 for
 * 2.x/3.x), then a Python dict literal with 'descr', 'fortran_order' and
 * 'shape', padded so the data is aligned. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats.h"

static int npy_fail(char *err, size_t errlen, const char *name,
                    const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return frae_errorf(err, errlen, "%s: %s", name, msg);
}

/* Finds 'key' in the header dict and returns the text after its colon. */
static const char *dict_value(const char *h, size_t len, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= len; i++) {
        if ((h[i] == '\'' || h[i] == '"') && !memcmp(h + i + 1, key, kl) &&
            h[i + 1 + kl] == h[i]) {
            const char *p = h + i + kl + 2;
            while (p < h + len && (*p == ' ' || *p == ':'))
                p++;
            return p < h + len ? p : NULL;
        }
    }
    return NULL;
}

/* Whether the n bytes at p, bounded by end, begin with lit. */
static int starts_with(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/* A non-negative decimal of at most 18 digits (then 'L', as Python 2
 * wrote), bounded by end: returns the byte after it, or NULL. */
static const char *parse_dim(const char *p, const char *end, long *out)
{
    long v = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 18)
        v = v * 10 + (*p++ - '0'), digits++;
    if (!digits || (p < end && *p >= '0' && *p <= '9'))
        return NULL; /* none, or a 19th digit */
    if (p < end && *p == 'L')
        p++;
    *out = v;
    return p;
}

int frae_npy_parse(const unsigned char *buf, size_t size, const char *name,
                   frae_npy *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6))
        return npy_fail(err, errlen, name,
                        "not a .npy file (bad magic at byte 0)");
    int major = buf[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return npy_fail(err, errlen, name, "truncated .npy header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
               (size_t)buf[11] << 24;
        hstart = 12;
    } else {
        return npy_fail(err, errlen, name,
                        "unsupported .npy version %d.%d (byte 6)", major,
                        buf[7]);
    }
    if (hlen > size - hstart)
        return npy_fail(err, errlen, name,
                        "truncated .npy header (%zu bytes declared, %zu "
                        "present)",
                        hlen, size - hstart);
    const char *h = (const char *)buf + hstart;

    const char *descr = dict_value(h, hlen, "descr");
    if (!descr || (descr[0] != '\'' && descr[0] != '"'))
        return npy_fail(err, errlen, name, "header has no 'descr'");
    char dt[16] = "";
    size_t i = 0;
    while (i + 1 < sizeof dt && descr + 1 + i < h + hlen &&
           descr[1 + i] != descr[0])
        dt[i] = descr[1 + i], i++;
    dt[i] = 0;
    if (!strcmp(dt, "<f4"))
        a->itemsize = 4;
    else if (!strcmp(dt, "<f8"))
        a->itemsize = 8;
    else if (!strcmp(dt, ">f4") || !strcmp(dt, ">f8"))
        return npy_fail(err, errlen, name,
                        "big-endian data ('%s') is not supported; save it "
                        "little-endian (arr.astype('<f4'))",
                        dt);
    else
        return npy_fail(err, errlen, name,
                        "unsupported dtype '%s'; frames must be float32 "
                        "('<f4') or float64 ('<f8')",
                        dt);

    const char *fo = dict_value(h, hlen, "fortran_order"), *end = h + hlen;
    if (!fo)
        return npy_fail(err, errlen, name, "header has no 'fortran_order'");
    if (starts_with(fo, end, "True"))
        return npy_fail(err, errlen, name,
                        "Fortran-order arrays are not supported; save a "
                        "C-order copy (np.ascontiguousarray)");
    if (!starts_with(fo, end, "False"))
        return npy_fail(err, errlen, name, "bad 'fortran_order' value");

    const char *sh = dict_value(h, hlen, "shape");
    if (!sh || *sh != '(')
        return npy_fail(err, errlen, name, "header has no 'shape' tuple");
    long dims[8];
    int nd = 0;
    const char *p = sh + 1;
    while (p < end && *p != ')') {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p < end && *p == ')')
            break;
        const char *q = nd < 8 ? parse_dim(p, end, &dims[nd]) : NULL;
        if (!q)
            return npy_fail(err, errlen, name,
                            "bad 'shape' in header (byte %ld)",
                            (long)(hstart + (size_t)(p - h)));
        nd++;
        p = q;
    }
    if (p >= end)
        return npy_fail(err, errlen, name, "unterminated 'shape' in header");
    a->ndim = nd;
    for (int k = 0; k < nd; k++)
        a->dims[k] = dims[k];
    if (nd == 2)
        a->n = 1, a->t = dims[0], a->d = dims[1];
    else if (nd == 3)
        a->n = dims[0], a->t = dims[1], a->d = dims[2];
    size_t count = 1, bytes;
    for (int k = 0; k < nd; k++)
        if (__builtin_mul_overflow(count, (size_t)dims[k], &count))
            return npy_fail(err, errlen, name, "shape too large");
    if (__builtin_mul_overflow(count, (size_t)a->itemsize, &bytes) ||
        a->t > 0x7fffffff || a->d > 0x7fffffff)
        return npy_fail(err, errlen, name, "shape too large");
    size_t data_off = hstart + hlen;
    if (size - data_off < bytes)
        return npy_fail(err, errlen, name,
                        "truncated: shape needs %zu bytes of data, the file "
                        "has %zu",
                        bytes, size - data_off);
    a->data = buf + data_off;
    return 0;
}

int frae_npy_frames(const frae_npy *a, const char *name, char *err,
                    size_t errlen)
{
    if (a->ndim != 2 && a->ndim != 3)
        return npy_fail(err, errlen, name,
                        "shape has %d dimensions; expected [T, D] or "
                        "[N, T, D]",
                        a->ndim);
    if (a->n == 0 || a->t == 0 || a->d == 0)
        return npy_fail(err, errlen, name, "empty array (shape has a 0)");
    return 0;
}

float frae_npy_value(const frae_npy *a, size_t index)
{
    if (a->itemsize == 4) {
        float f;
        memcpy(&f, a->data + index * 4, 4);
        return f;
    }
    double d;
    memcpy(&d, a->data + index * 8, 8);
    return (float)d;
}

int frae_npy_read(const frae_npy *a, long seq, long t0, long nt, float *dst)
{
    size_t base = ((size_t)seq * a->t + (size_t)t0) * a->d;
    size_t n = (size_t)nt * a->d;
    if (a->from_fd) { /* float32 values in a file, read as needed */
        char *p = (char *)dst;
        size_t left = n * 4;
        off_t at = (off_t)(base * 4);
        while (left) {
            ssize_t got = pread(a->fd, p, left, at);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return -1;
            p += got, left -= (size_t)got, at += got;
        }
    } else if (a->itemsize == 4) {
        memcpy(dst, a->data + base * 4, n * 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = frae_npy_value(a, base + i);
    }
    return 0;
}

int frae_npy_check_finite(const frae_npy *a, const char *name, char *err,
                          size_t errlen)
{
    return frae_npy_check_finite_seqs(a, name, 0, a->n, err, errlen);
}

int frae_npy_check_finite_seqs(const frae_npy *a, const char *name, long s0,
                               long s1, char *err, size_t errlen)
{
    const size_t per_seq = (size_t)a->t * a->d;
    size_t count = (size_t)s1 * per_seq;
    if (a->ndim != 2 && a->ndim != 3)
        count = 0;
    for (size_t i = (size_t)s0 * per_seq; i < count; i++) {
        double v;
        if (a->itemsize == 4) {
            float f;
            memcpy(&f, a->data + i * 4, 4);
            v = f;
        } else {
            memcpy(&v, a->data + i * 8, 8);
        }
        if (!isfinite(v) || fabs(v) > 3.4028234663852886e38) {
            long d = (long)(i % (size_t)a->d), t = (long)(i / a->d % a->t),
                 n = (long)(i / ((size_t)a->d * a->t));
            const char *what = isnan(v)    ? "NaN"
                               : isinf(v) ? "Inf"
                                          : "a value too large for float32";
            if (a->ndim == 3)
                return npy_fail(err, errlen, name, "%s at [%ld, %ld, %ld]",
                                what, n, t, d);
            return npy_fail(err, errlen, name, "%s at [%ld, %ld]", what, t, d);
        }
    }
    return 0;
}

int frae_npy_open(const char *path, frae_npy *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    void *map;
    size_t size;
    if (frae_map_file(path, 1, &map, &size, err, errlen))
        return -1;
    frae_npy parsed;
    if (frae_npy_parse(map, size, path, &parsed, err, errlen)) {
        munmap(map, size);
        return -1;
    }
    *a = parsed;
    a->map = map;
    a->map_len = size;
    return 0;
}

void frae_npy_close(frae_npy *a)
{
    if (a->map)
        munmap(a->map, a->map_len);
    if (a->from_fd)
        close(a->fd);
    memset(a, 0, sizeof *a);
}

/* ---- writing ---------------------------------------------------------- */

/* The header of a float32 array of this shape, padded with spaces and a
 * newline so that the data starts at a multiple of 64 bytes, and to at
 * least min_total bytes.  Returns its length. */
static size_t npy_header(unsigned char *out, size_t cap, int ndim,
                         const long *shape, size_t min_total)
{
    char dict[192];
    int n;
    if (ndim == 2)
        n = snprintf(dict, sizeof dict,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(%ld, %ld), }",
                     shape[0], shape[1]);
    else
        n = snprintf(dict, sizeof dict,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(%ld, %ld, %ld), }",
                     shape[0], shape[1], shape[2]);
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    if (total < min_total)
        total = min_total;
    if (total > cap)
        return 0;
    size_t hlen = total - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', total - 10 - (size_t)n);
    out[total - 1] = '\n';
    return total;
}

int frae_npy_begin(frae_atomic_file *af, const char *path, int ndim,
                   const long *shape, char *err, size_t errlen)
{
    unsigned char header[256];
    size_t n = npy_header(header, sizeof header, ndim, shape, 0);
    if (frae_atomic_begin(af, path, err, errlen))
        return -1;
    fwrite(header, 1, n, af->f);
    return 0;
}

/* Room for any shape: every dimension as wide as the widest long. */
static size_t npy_header_room(int ndim)
{
    unsigned char header[256];
    const long widest[3] = {LONG_MAX, LONG_MAX, LONG_MAX};
    return npy_header(header, sizeof header, ndim, widest, 0);
}

int frae_npy_begin_growing(frae_atomic_file *af, const char *path, int ndim,
                           char *err, size_t errlen)
{
    unsigned char header[256];
    const long zero[3] = {0, 0, 0};
    size_t n = npy_header(header, sizeof header, ndim, zero,
                          npy_header_room(ndim));
    if (frae_atomic_begin(af, path, err, errlen))
        return -1;
    fwrite(header, 1, n, af->f);
    return 0;
}

int frae_npy_finish(frae_atomic_file *af, int ndim, const long *shape,
                    char *err, size_t errlen)
{
    unsigned char header[256];
    size_t n = npy_header(header, sizeof header, ndim, shape,
                          npy_header_room(ndim));
    if (fflush(af->f) || fseek(af->f, 0, SEEK_SET) ||
        fwrite(header, 1, n, af->f) != n || fseek(af->f, 0, SEEK_END)) {
        frae_atomic_abort(af);
        return frae_errorf(err, errlen, "%s: write failed", af->path);
    }
    return frae_atomic_commit(af, err, errlen);
}

int frae_npy_write(const char *path, const float *data, int ndim,
                   const long *shape, char *err, size_t errlen)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= (size_t)shape[i];
    frae_atomic_file af;
    if (frae_npy_begin(&af, path, ndim, shape, err, errlen))
        return -1;
    fwrite(data, sizeof(float), count, af.f);
    return frae_atomic_commit(&af, err, errlen);
}
