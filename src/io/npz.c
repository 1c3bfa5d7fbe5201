/* .npz as NumPy writes it (np.savez: stored members; np.savez_compressed:
 * deflated ones; zip64 fields either way), read from memory through
 * libzip: the archive's directory and every member's CRC-32 are libzip's
 * to check.  A member is inflated into a buffer of its declared size, and
 * that size is checked first: no member may claim more than deflate can
 * expand its compressed bytes to, nor all together more than
 * FRAE_NPZ_MAX_BYTES, so a hostile archive cannot make frae allocate
 * more than a bounded multiple of its own size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "base/util.h"
#include "io/formats.h"

#define FAIL(...)                                                              \
    do {                                                                       \
        frae_errorf(err, errlen, __VA_ARGS__);                                 \
        goto fail;                                                             \
    } while (0)

/* deflate expands at most 1032:1 (RFC 1951's longest match per 2 bits) */
#define DEFLATE_MAX_RATIO 1032u

void frae_npz_free(frae_npz_member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].data);
        m[i].data = NULL;
    }
}

/* Reads exactly the member's declared size, and one more byte to learn
 * that the member ends there (libzip checks the CRC-32 at the end). */
static int read_member(zip_t *z, zip_uint64_t i, frae_npz_member *m,
                       const char *path, char *err, size_t errlen)
{
    zip_file_t *f = zip_fopen_index(z, i, 0);
    if (!f)
        return frae_errorf(err, errlen, "%s: member '%s': %s", path, m->name,
                           zip_strerror(z));
    size_t got = 0;
    zip_int64_t r = 1;
    while (got < m->size && r > 0) {
        r = zip_fread(f, m->data + got, m->size - got);
        if (r > 0)
            got += (size_t)r;
    }
    unsigned char extra;
    if (r >= 0 && got == m->size)
        r = zip_fread(f, &extra, 1);
    int rc = 0;
    if (r < 0)
        rc = frae_errorf(err, errlen, "%s: member '%s' is corrupted: %s", path,
                         m->name, zip_file_strerror(f));
    else if (got < m->size)
        rc = frae_errorf(err, errlen,
                         "%s: truncated: member '%s' gives %zu of its %zu "
                         "bytes",
                         path, m->name, got, m->size);
    else if (r > 0)
        rc = frae_errorf(err, errlen,
                         "%s: member '%s' holds more than its declared %zu "
                         "bytes",
                         path, m->name, m->size);
    zip_fclose(f);
    return rc;
}

int frae_npz_read(const unsigned char *buf, size_t size, const char *path,
                  frae_npz_member *out, int cap, char *err, size_t errlen)
{
    zip_error_t ze;
    zip_error_init(&ze);
    int n = 0;
    zip_t *z = NULL;
    zip_source_t *src = zip_source_buffer_create(buf, size, 0, &ze);
    if (!src)
        FAIL("%s: %s", path, zip_error_strerror(&ze));
    z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!z) {
        zip_source_free(src);
        FAIL("%s: not a .npz (zip) file: %s", path, zip_error_strerror(&ze));
    }
    zip_int64_t count = zip_get_num_entries(z, 0);
    if (count < 0 || count > cap)
        FAIL("%s: %lld members, more than %d", path, (long long)count, cap);
    size_t total = 0;
    for (zip_int64_t i = 0; i < count; i++) {
        zip_stat_t st;
        zip_stat_init(&st);
        frae_npz_member *m = &out[n];
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) ||
            !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE) ||
            !(st.valid & ZIP_STAT_COMP_SIZE) ||
            !(st.valid & ZIP_STAT_COMP_METHOD))
            FAIL("%s: member %lld: %s", path, (long long)i, zip_strerror(z));
        snprintf(m->name, sizeof m->name, "%s", st.name);
        frae_one_line(m->name);
        if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
            FAIL("%s: member '%s' uses compression method %u; frae reads "
                 "stored and deflated members (np.savez, "
                 "np.savez_compressed)",
                 path, m->name, (unsigned)st.comp_method);
        const zip_uint64_t most = st.comp_method == ZIP_CM_STORE
                                      ? st.comp_size
                                      : st.comp_size * DEFLATE_MAX_RATIO + 64;
        if (st.size > most || st.comp_size > size)
            FAIL("%s: member '%s' declares %llu bytes from %llu compressed: "
                 "more than its compression can hold",
                 path, m->name, (unsigned long long)st.size,
                 (unsigned long long)st.comp_size);
        if (st.size > FRAE_NPZ_MAX_BYTES - total)
            FAIL("%s: members of more than %llu bytes in all", path,
                 (unsigned long long)FRAE_NPZ_MAX_BYTES);
        total += (size_t)st.size;
        m->size = (size_t)st.size;
        m->data = malloc(m->size ? m->size : 1);
        if (!m->data)
            FAIL("%s: out of memory for member '%s' (%zu bytes)", path, m->name,
                 m->size);
        n++;
        if (read_member(z, (zip_uint64_t)i, m, path, err, errlen))
            goto fail;
    }
    zip_discard(z);
    return n;
fail:
    frae_npz_free(out, n);
    if (z)
        zip_discard(z);
    /* zip_error_strerror() may have allocated the message it returned
     * (a system error's text) inside ze; it has been copied into err */
    zip_error_fini(&ze);
    return -1;
}
