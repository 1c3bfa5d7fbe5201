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

#include "io/formats.h"

static int npy_fail(char *err, size_t errlen, const char *name, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
static int npy_fail(char *err, size_t errlen, const char *name, const char *fmt,
                    ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return frae_errorf(err, errlen, "%s: %s", name, msg);
}

/* The header is a Python dict literal, as np.save writes it:
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } then
 * spaces and a newline.  It is parsed as the literal it is, so that no
 * key is read out of another's value: exactly the three keys NumPy
 * requires, each once.  NumPy's literal_eval would let a repeated key's
 * last value win; frae refuses a repeated key instead, so that no header
 * means one thing to NumPy and another to frae. */
typedef struct {
    const char *p, *end;
} npy_text;

static void skip_space(npy_text *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Whether the text goes on with lit (then skips it and the spaces after). */
static int take(npy_text *s, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n))
        return 0;
    s->p += n;
    skip_space(s);
    return 1;
}

/* A quoted string of at most cap - 1 plain characters (no escapes, no
 * newline: no header NumPy writes has them) into out. */
static int take_string(npy_text *s, char *out, size_t cap)
{
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
        return 0;
    const char quote = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != quote) {
        if (*s->p == '\\' || *s->p == '\n' || n + 1 >= cap)
            return 0;
        out[n++] = *s->p++;
    }
    if (s->p >= s->end)
        return 0;
    out[n] = 0;
    s->p++;
    skip_space(s);
    return 1;
}

/* A non-negative decimal of at most 18 digits (then 'L', as Python 2
 * wrote). */
static int take_dim(npy_text *s, long *out)
{
    long v = 0;
    int digits = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && digits < 18)
        v = v * 10 + (*s->p++ - '0'), digits++;
    if (!digits || (s->p < s->end && *s->p >= '0' && *s->p <= '9'))
        return 0; /* none, or a 19th digit */
    if (s->p < s->end && *s->p == 'L')
        s->p++;
    skip_space(s);
    *out = v;
    return 1;
}

/* A shape tuple: (), (n,), (n, m), ... with an optional trailing comma;
 * (n) alone is a number to Python, not a tuple. */
static int take_shape(npy_text *s, long *dims, int cap, int *nd)
{
    if (!take(s, "("))
        return 0;
    int commas = 0;
    for (*nd = 0; !take(s, ")"); ++*nd) {
        if (*nd == cap || !take_dim(s, &dims[*nd]))
            return 0;
        if (take(s, ","))
            commas++;
        else if (s->p >= s->end || *s->p != ')')
            return 0;
    }
    return *nd != 1 || commas == 1;
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

    /* the dict: each of descr, fortran_order and shape exactly once */
    npy_text s = {h, h + hlen};
    char dt[16] = "", key[32];
    int fortran = -1, nd = -1, have_descr = 0;
    long dims[8];
    skip_space(&s);
    if (!take(&s, "{"))
        return npy_fail(err, errlen, name, "header is not a dict literal");
    while (!take(&s, "}")) {
        const char *at = s.p;
        if (!take_string(&s, key, sizeof key) || !take(&s, ":"))
            return npy_fail(err, errlen, name, "bad header dict (byte %ld)",
                            (long)(hstart + (size_t)(at - h)));
        const int seen = !strcmp(key, "descr")           ? have_descr
                         : !strcmp(key, "fortran_order") ? fortran >= 0
                         : !strcmp(key, "shape")         ? nd >= 0
                                                         : -1;
        if (seen < 0)
            return npy_fail(err, errlen, name,
                            "header has a key '%s'; a .npy header holds "
                            "'descr', 'fortran_order' and 'shape' only",
                            key);
        if (seen)
            return npy_fail(err, errlen, name,
                            "header repeats the key '%s' (frae refuses a "
                            "repeated key rather than guess which one "
                            "counts)",
                            key);
        int ok;
        if (!strcmp(key, "descr"))
            ok = have_descr = take_string(&s, dt, sizeof dt);
        else if (!strcmp(key, "fortran_order"))
            ok = (fortran = take(&s, "True")    ? 1
                            : take(&s, "False") ? 0
                                                : -1) >= 0;
        else
            ok = take_shape(&s, dims, 8, &nd);
        if (!ok)
            return npy_fail(err, errlen, name,
                            "bad '%s' value in header (byte "
                            "%ld)",
                            key, (long)(hstart + (size_t)(at - h)));
        if (!take(&s, ",") && (s.p >= s.end || *s.p != '}'))
            return npy_fail(err, errlen, name, "bad header dict (byte %ld)",
                            (long)(hstart + (size_t)(s.p - h)));
    }
    if (s.p != s.end)
        return npy_fail(err, errlen, name,
                        "bytes after the header dict (byte %ld)",
                        (long)(hstart + (size_t)(s.p - h)));
    if (!have_descr)
        return npy_fail(err, errlen, name, "header has no 'descr'");
    if (fortran < 0)
        return npy_fail(err, errlen, name, "header has no 'fortran_order'");
    if (nd < 0)
        return npy_fail(err, errlen, name, "header has no 'shape' tuple");

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
    if (fortran)
        return npy_fail(err, errlen, name,
                        "Fortran-order arrays are not supported; save a "
                        "C-order copy (np.ascontiguousarray)");
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
            const char *what = isnan(v)   ? "NaN"
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
    size_t n =
        npy_header(header, sizeof header, ndim, zero, npy_header_room(ndim));
    if (frae_atomic_begin(af, path, err, errlen))
        return -1;
    fwrite(header, 1, n, af->f);
    return 0;
}

int frae_npy_finish(frae_atomic_file *af, int ndim, const long *shape,
                    char *err, size_t errlen)
{
    unsigned char header[256];
    size_t n =
        npy_header(header, sizeof header, ndim, shape, npy_header_room(ndim));
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
