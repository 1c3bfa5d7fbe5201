/* safetensors: u64 little-endian header length N, N bytes of JSON, then the
 * raw little-endian tensor data.  The JSON maps each tensor name to
 * {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data
 * section) and "__metadata__" to a string -> string map.
 *
 * The reader trusts nothing: the header length, every JSON token, every
 * shape and offset is checked against the file before any data is read,
 * and the tensors must tile the data section exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/formats.h"
#include "io/json.h"

#define MAX_HEADER FRAE_JSON_MAX_TEXT /* the spec's own limit */
#define MAX_ENTRIES 100000

static const char *const dtype_names[ST_NTYPES] = {"F32",  "F64", "F16",
                                                   "BF16", "I32", "I64"};
static const int dtype_sizes[ST_NTYPES] = {4, 8, 2, 2, 4, 8};

/* The checkpoint checksum covers the header as parsed (each tensor's name,
 * dtype, shape and offsets, each metadata pair but the checksum itself, in
 * file order) and then the data: editing any of them is noticed.  Hashing
 * the parsed fields rather than the JSON text keeps writer and reader on
 * one definition. */
static uint64_t hash_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return frae_fnv1a64(b, 8, h);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return frae_fnv1a64((const unsigned char *)s, strlen(s) + 1, h);
}

static uint64_t hash_tensor_entry(uint64_t h, const char *name, int dtype,
                                  int ndim, const int64_t *shape,
                                  uint64_t begin, uint64_t end)
{
    h = hash_str(h, name);
    h = hash_str(h, dtype_names[dtype]);
    h = hash_u64(h, (uint64_t)ndim);
    for (int d = 0; d < ndim; d++)
        h = hash_u64(h, (uint64_t)shape[d]);
    return hash_u64(hash_u64(h, begin), end);
}

static uint64_t hash_meta_entry(uint64_t h, const char *key, const char *val)
{
    if (!strcmp(key, FRAE_ST_CHECKSUM_KEY))
        return h;
    return hash_str(hash_str(h, key), val);
}

uint64_t frae_st_checksum(const frae_safetensors *st, int with_header)
{
    uint64_t h = FRAE_FNV_INIT;
    if (with_header) {
        for (int i = 0; i < st->n_tensors; i++) {
            const st_tensor *t = &st->tensors[i];
            h = hash_tensor_entry(h, t->name, t->dtype, t->ndim, t->shape,
                                  t->begin, t->end);
        }
        for (int i = 0; i < st->n_meta; i++)
            h = hash_meta_entry(h, st->meta[i].key, st->meta[i].value);
    }
    return frae_fnv1a64(st->data, st->data_len, h);
}

static int parse_tensor(frae_json *j, st_tensor *t)
{
    int have_dtype = 0, have_shape = 0, have_off = 0;
    if (frae_json_expect(j, '{'))
        return -1;
    frae_json_space(j);
    if (j->p < j->end && *j->p == '}')
        return frae_json_fail(j, "tensor '%s' has no fields", t->name);
    while (1) {
        char key[64];
        if (frae_json_string(j, key, sizeof key, NULL) < 0 ||
            frae_json_expect(j, ':'))
            return -1;
        if (!strcmp(key, "dtype")) {
            char dt[16];
            if (frae_json_string(j, dt, sizeof dt, NULL) < 0)
                return -1;
            t->dtype = -1;
            for (int i = 0; i < ST_NTYPES; i++)
                if (!strcmp(dt, dtype_names[i]))
                    t->dtype = i;
            if (t->dtype < 0)
                return frae_json_fail(
                    j, "tensor '%s' has unsupported dtype '%s'", t->name, dt);
            have_dtype = 1;
        } else if (!strcmp(key, "shape")) {
            if (frae_json_int_array(j, t->shape, ST_MAX_DIMS, &t->ndim))
                return -1;
            have_shape = 1;
        } else if (!strcmp(key, "data_offsets")) {
            int64_t off[2];
            int n;
            if (frae_json_int_array(j, off, 2, &n))
                return -1;
            if (n != 2 || off[1] < off[0])
                return frae_json_fail(j, "tensor '%s' has bad data_offsets",
                                      t->name);
            t->begin = (size_t)off[0];
            t->end = (size_t)off[1];
            have_off = 1;
        } else if (frae_json_skip(j, 1)) {
            return -1;
        }
        frae_json_space(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (frae_json_expect(j, '}'))
            return -1;
        break;
    }
    if (!have_dtype || !have_shape || !have_off)
        return frae_json_fail(
            j, "tensor '%s' lacks dtype, shape or data_offsets", t->name);
    return 0;
}

static int parse_metadata(frae_json *j, frae_safetensors *st)
{
    if (frae_json_expect(j, '{'))
        return -1;
    frae_json_space(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return 0;
    }
    int cap = 16;
    st->meta = calloc((size_t)cap, sizeof *st->meta);
    if (!st->meta)
        return frae_json_fail(j, "out of memory");
    while (1) {
        if (st->n_meta == MAX_ENTRIES)
            return frae_json_fail(j, "too many metadata entries");
        if (st->n_meta == cap) {
            st_meta *nm = realloc(st->meta, sizeof *nm * (size_t)cap * 2);
            if (!nm)
                return frae_json_fail(j, "out of memory");
            memset(nm + cap, 0, sizeof *nm * (size_t)cap);
            st->meta = nm, cap *= 2;
        }
        st_meta *e = &st->meta[st->n_meta];
        if (frae_json_string(j, e->key, sizeof e->key, NULL) < 0 ||
            frae_json_expect(j, ':'))
            return -1;
        if (frae_json_string(j, NULL, 0, &e->value) < 0)
            return frae_json_fail(j, "metadata value of '%s' is not a string",
                                  e->key);
        st->n_meta++;
        frae_json_space(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        return frae_json_expect(j, '}');
    }
}

static int cmp_begin(const void *a, const void *b)
{
    const st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts names; returns one that appears twice, or NULL. */
static const char *first_duplicate(const char **names, int n)
{
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 1; i < n; i++)
        if (!strcmp(names[i - 1], names[i]))
            return names[i];
    return NULL;
}

/* The header's entries, from its '{' to its '}': the tensors and the
 * metadata.  -1 on a malformed entry (j says why) or out of memory. */
static int parse_entries(frae_json *jp, frae_safetensors *st)
{
    frae_json j = *jp;
    int cap = 32;
    st->tensors = calloc((size_t)cap, sizeof *st->tensors);
    if (!st->tensors)
        goto fail;
    if (frae_json_expect(&j, '{'))
        goto fail;
    frae_json_space(&j);
    if (j.p < j.end && *j.p == '}') {
        j.p++;
    } else {
        while (1) {
            char key[256];
            if (frae_json_string(&j, key, sizeof key, NULL) < 0 ||
                frae_json_expect(&j, ':'))
                goto fail;
            if (!strcmp(key, "__metadata__")) {
                if (st->meta) {
                    frae_json_fail(&j, "two __metadata__ entries");
                    goto fail;
                }
                if (parse_metadata(&j, st))
                    goto fail;
            } else {
                if (st->n_tensors == MAX_ENTRIES) {
                    frae_json_fail(&j, "too many tensors");
                    goto fail;
                }
                if (st->n_tensors == cap) {
                    st_tensor *nt =
                        realloc(st->tensors, sizeof *nt * (size_t)cap * 2);
                    if (!nt)
                        goto fail;
                    st->tensors = nt, cap *= 2;
                }
                st_tensor *t = &st->tensors[st->n_tensors];
                memset(t, 0, sizeof *t);
                memcpy(t->name, key, sizeof t->name);
                if (parse_tensor(&j, t))
                    goto fail;
                st->n_tensors++;
            }
            frae_json_space(&j);
            if (j.p < j.end && *j.p == ',') {
                j.p++;
                continue;
            }
            if (frae_json_expect(&j, '}'))
                goto fail;
            break;
        }
    }
    *jp = j;
    return 0;
fail:
    *jp = j;
    return -1;
}

/* Every tensor's shape against its offsets, names unique, and the
 * tensors tiling the data section exactly; -1 with the reason in err. */
static int check_layout(const frae_safetensors *st, const char *name, char *err,
                        size_t errlen)
{
    /* shapes against offsets, and the tensors tile the data exactly */
    for (int i = 0; i < st->n_tensors; i++) {
        const st_tensor *t = &st->tensors[i];
        uint64_t bytes = (uint64_t)dtype_sizes[t->dtype];
        for (int d = 0; d < t->ndim; d++)
            if (__builtin_mul_overflow(bytes, (uint64_t)t->shape[d], &bytes)) {
                frae_errorf(err, errlen, "%s: tensor '%s' shape overflows",
                            name, t->name);
                return -1;
            }
        if (t->end - t->begin != bytes) {
            frae_errorf(err, errlen,
                        "%s: tensor '%s' has %zu bytes for a shape of %llu",
                        name, t->name, t->end - t->begin,
                        (unsigned long long)bytes);
            return -1;
        }
        if (t->end > st->data_len) {
            frae_errorf(
                err, errlen,
                "%s: truncated: tensor '%s' ends at byte %zu of a %zu-byte "
                "data section",
                name, t->name, t->end, st->data_len);
            return -1;
        }
    }
    /* names unique (sorted, so a header of many entries stays fast) */
    const char *dup = NULL;
    int n_names = st->n_tensors > st->n_meta ? st->n_tensors : st->n_meta;
    const char **names = malloc(sizeof *names * (size_t)(n_names + 1));
    if (!names)
        goto oom;
    for (int i = 0; i < st->n_tensors; i++)
        names[i] = st->tensors[i].name;
    if ((dup = first_duplicate(names, st->n_tensors))) {
        frae_errorf(err, errlen, "%s: tensor '%s' appears twice", name, dup);
        free(names);
        return -1;
    }
    for (int i = 0; i < st->n_meta; i++)
        names[i] = st->meta[i].key;
    if ((dup = first_duplicate(names, st->n_meta))) {
        frae_errorf(err, errlen, "%s: metadata key '%s' appears twice", name,
                    dup);
        free(names);
        return -1;
    }
    free(names);
    st_tensor *sorted = malloc(sizeof *sorted * (size_t)(st->n_tensors + 1));
    if (!sorted)
        goto oom;
    memcpy(sorted, st->tensors, sizeof *sorted * (size_t)st->n_tensors);
    qsort(sorted, (size_t)st->n_tensors, sizeof *sorted, cmp_begin);
    size_t at = 0;
    for (int i = 0; i < st->n_tensors; i++) {
        if (sorted[i].begin != at) {
            frae_errorf(err, errlen,
                        "%s: tensor data overlaps or leaves a hole at byte %zu",
                        name, at);
            free(sorted);
            return -1;
        }
        at = sorted[i].end;
    }
    free(sorted);
    if (at != st->data_len) {
        frae_errorf(err, errlen, "%s: %zu bytes after the last tensor", name,
                    st->data_len - at);
        return -1;
    }
    return 0;
oom:
    frae_errorf(err, errlen, "%s: out of memory reading the header", name);
    return -1;
}

int frae_st_parse(const unsigned char *buf, size_t size, const char *name,
                  frae_safetensors *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    if (size < 8) {
        frae_errorf(err, errlen, "%s: not a safetensors file (%zu bytes)", name,
                    size);
        return -1;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | buf[i];
    if (hlen < 2 || hlen > MAX_HEADER || hlen > size - 8) {
        frae_errorf(err, errlen,
                    "%s: not a safetensors file, or truncated (header length "
                    "%llu, file %zu bytes)",
                    name, (unsigned long long)hlen, size);
        return -1;
    }
    frae_json j = {(const char *)buf + 8,
                   (const char *)buf + 8 + hlen,
                   (const char *)buf + 8,
                   name,
                   err,
                   errlen,
                   0};
    if (parse_entries(&j, st))
        goto fail;
    frae_json_space(&j);
    if (j.p != j.end) {
        frae_json_fail(&j, "trailing bytes after the JSON object");
        goto fail;
    }
    st->data = buf + 8 + hlen;
    st->data_len = size - 8 - (size_t)hlen;

    if (check_layout(st, name, err, errlen))
        goto fail_quiet;
    return 0;
fail:
    if (!j.failed)
        frae_errorf(err, errlen, "%s: out of memory reading the header", name);
fail_quiet:
    frae_st_close(st);
    return -1;
}

int frae_st_open(const char *path, frae_safetensors *st, char *err,
                 size_t errlen)
{
    memset(st, 0, sizeof *st);
    void *map;
    size_t size;
    if (frae_map_file(path, 8, &map, &size, err, errlen))
        return -1;
    if (frae_st_parse(map, size, path, st, err, errlen)) {
        munmap(map, size);
        return -1;
    }
    st->map = map;
    st->map_len = size;
    return 0;
}

void frae_st_close(frae_safetensors *st)
{
    for (int i = 0; i < st->n_meta; i++)
        free(st->meta[i].value);
    free(st->meta);
    free(st->tensors);
    if (st->map)
        munmap(st->map, st->map_len);
    memset(st, 0, sizeof *st);
}

const st_tensor *frae_st_find(const frae_safetensors *st, const char *name)
{
    for (int i = 0; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, name))
            return &st->tensors[i];
    return NULL;
}

const char *frae_st_meta(const frae_safetensors *st, const char *key)
{
    for (int i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta[i].key, key))
            return st->meta[i].value;
    return NULL;
}

float frae_st_float(const frae_safetensors *st, const st_tensor *t, size_t i)
{
    const unsigned char *p = st->data + t->begin + i * dtype_sizes[t->dtype];
    switch (t->dtype) {
    case ST_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case ST_F64: {
        double d;
        memcpy(&d, p, 8);
        return (float)d;
    }
    case ST_BF16: {
        uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ST_F16: {
        unsigned h = (unsigned)(p[0] | p[1] << 8);
        unsigned sign = h >> 15, e = (h >> 10) & 31, man = h & 1023;
        float v;
        if (e == 0)
            v = (float)man * (1.0f / 16777216.0f); /* 2^-24 */
        else if (e == 31)
            v = man ? (float)NAN : (float)INFINITY;
        else
            v = (float)(1024 + man) * (float)(1 << e) / (1 << 25);
        return sign ? -v : v;
    }
    default: return 0.0f;
    }
}

/* ---- writing ---------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *s, const char *text, size_t n)
{
    if (s->oom)
        return;
    if (s->len + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 1024;
        while (nc < s->len + n + 1)
            nc *= 2;
        char *nb = realloc(s->buf, nc);
        if (!nb) {
            s->oom = 1;
            return;
        }
        s->buf = nb, s->cap = nc;
    }
    memcpy(s->buf + s->len, text, n);
    s->len += n;
    s->buf[s->len] = 0;
}

static void sb_str(sbuf *s, const char *text)
{
    sb_put(s, "\"", 1);
    for (const char *p = text; *p; p++) {
        char esc[8];
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            sb_put(s, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_put(s, esc, 6);
        } else {
            sb_put(s, p, 1);
        }
    }
    sb_put(s, "\"", 1);
}

int frae_st_write(const char *path, const st_out_tensor *t, int nt,
                  const char *const *meta_keys, const char *const *meta_vals,
                  int nmeta, char *err, size_t errlen)
{
    sbuf h = {0};
    char num[96];
    size_t off = 0;
    uint64_t sum = FRAE_FNV_INIT;
    sb_put(&h, "{", 1);
    for (int i = 0; i < nt; i++) {
        size_t bytes = (size_t)dtype_sizes[t[i].dtype];
        for (int d = 0; d < t[i].ndim; d++)
            bytes *= (size_t)t[i].shape[d];
        sum = hash_tensor_entry(sum, t[i].name, t[i].dtype, t[i].ndim,
                                t[i].shape, off, off + bytes);
        if (i)
            sb_put(&h, ",", 1);
        sb_str(&h, t[i].name);
        snprintf(num, sizeof num, ":{\"dtype\":\"%s\",\"shape\":[",
                 dtype_names[t[i].dtype]);
        sb_put(&h, num, strlen(num));
        for (int d = 0; d < t[i].ndim; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "",
                     (long long)t[i].shape[d]);
            sb_put(&h, num, strlen(num));
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%zu,%zu]}", off,
                 off + bytes);
        sb_put(&h, num, strlen(num));
        off += bytes;
    }
    const char *meta_open = nt ? ",\"__metadata__\":{" : "\"__metadata__\":{";
    sb_put(&h, meta_open, strlen(meta_open));
    for (int i = 0; i < nmeta; i++) {
        sum = hash_meta_entry(sum, meta_keys[i], meta_vals[i]);
        sb_str(&h, meta_keys[i]);
        sb_put(&h, ":", 1);
        sb_str(&h, meta_vals[i]);
        sb_put(&h, ",", 1);
    }
    for (int i = 0; i < nt; i++) {
        size_t bytes = (size_t)dtype_sizes[t[i].dtype];
        for (int d = 0; d < t[i].ndim; d++)
            bytes *= (size_t)t[i].shape[d];
        sum = frae_fnv1a64(t[i].data, bytes, sum);
    }
    snprintf(num, sizeof num, "fnv1a64:%016llx", (unsigned long long)sum);
    sb_str(&h, FRAE_ST_CHECKSUM_KEY);
    sb_put(&h, ":", 1);
    sb_str(&h, num);
    sb_put(&h, "}}", 2);
    while (h.len % 8) /* the data section starts 8-byte aligned */
        sb_put(&h, " ", 1);
    if (h.oom) {
        free(h.buf);
        frae_errorf(err, errlen, "%s: out of memory building the header", path);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    frae_atomic_file af;
    if (frae_atomic_begin(&af, path, err, errlen)) {
        free(h.buf);
        return -1;
    }
    fwrite(len8, 1, 8, af.f);
    fwrite(h.buf, 1, h.len, af.f);
    free(h.buf);
    for (int i = 0; i < nt; i++) {
        size_t bytes = (size_t)dtype_sizes[t[i].dtype];
        for (int d = 0; d < t[i].ndim; d++)
            bytes *= (size_t)t[i].shape[d];
        fwrite(t[i].data, 1, bytes, af.f);
    }
    return frae_atomic_commit(&af, err, errlen);
}
