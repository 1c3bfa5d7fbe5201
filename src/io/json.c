/* The strict JSON reader of json.h: no numbers but integers, no escapes
 * it cannot decode, nothing past the header's end. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io/formats.h"
#include "io/json.h"

int frae_json_fail(frae_json *j, const char *fmt, ...)
{
    if (!j->failed) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        frae_errorf(j->err, j->errlen, "%s: bad safetensors header: %s",
                    j->name, msg);
    }
    j->failed = 1;
    return -1;
}

void frae_json_space(frae_json *j)
{
    while (j->p < j->end &&
           (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

int frae_json_expect(frae_json *j, char c)
{
    frae_json_space(j);
    if (j->p >= j->end || *j->p != c)
        return frae_json_fail(j, "expected '%c' at header byte %ld", c,
                              (long)(j->p - j->start));
    j->p++;
    return 0;
}

/* Appends one byte to a growing string buffer. */
static int jpush(frae_json *j, char **buf, size_t *n, size_t *cap, char c)
{
    if (*n + 1 >= *cap) {
        if (*cap > FRAE_JSON_MAX_TEXT)
            return frae_json_fail(j, "string too long");
        char *nb = realloc(*buf, *cap * 2);
        if (!nb)
            return frae_json_fail(j, "out of memory");
        *buf = nb, *cap *= 2;
    }
    (*buf)[(*n)++] = c;
    return 0;
}

/* Reads a JSON string.  With out, copies it there (cap bytes with the NUL,
 * longer is an error); else hands a malloc'ed copy to *heap.  Returns the
 * length, or -1. */
long frae_json_string(frae_json *j, char *out, size_t cap, char **heap)
{
    frae_json_space(j);
    if (j->p >= j->end || *j->p != '"')
        return frae_json_fail(j, "expected a string");
    j->p++;
    size_t n = 0, bcap = 64;
    char *buf = malloc(bcap);
    if (!buf)
        return frae_json_fail(j, "out of memory");
    while (1) {
        if (j->p >= j->end) {
            free(buf);
            return frae_json_fail(j, "unterminated string");
        }
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"')
            break;
        if (c < 0x20) {
            free(buf);
            return frae_json_fail(j, "control character in a string");
        }
        unsigned cp = c;
        if (c == '\\') {
            char e = j->p < j->end ? *j->p++ : 0;
            switch (e) {
            case '"':
            case '\\':
            case '/': cp = (unsigned char)e; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u': {
                char hex[5] = {0}, *q;
                if (j->end - j->p >= 4)
                    memcpy(hex, j->p, 4);
                cp = (unsigned)strtoul(hex, &q, 16);
                if (q != hex + 4) {
                    free(buf);
                    return frae_json_fail(j, "bad \\u escape");
                }
                j->p += 4;
                break;
            }
            default:
                free(buf);
                return frae_json_fail(j, "bad escape in a string");
            }
            /* encode the code point as UTF-8 (no surrogate pairing) */
            int bad = 0;
            if (cp < 0x80) {
                bad = jpush(j, &buf, &n, &bcap, (char)cp);
            } else if (cp < 0x800) {
                bad = jpush(j, &buf, &n, &bcap, (char)(0xc0 | cp >> 6)) ||
                      jpush(j, &buf, &n, &bcap, (char)(0x80 | (cp & 0x3f)));
            } else {
                bad = jpush(j, &buf, &n, &bcap, (char)(0xe0 | cp >> 12)) ||
                      jpush(j, &buf, &n, &bcap,
                            (char)(0x80 | ((cp >> 6) & 0x3f))) ||
                      jpush(j, &buf, &n, &bcap, (char)(0x80 | (cp & 0x3f)));
            }
            if (bad) {
                free(buf);
                return -1;
            }
        } else if (jpush(j, &buf, &n, &bcap, (char)c)) {
            free(buf);
            return -1;
        }
    }
    buf[n] = 0;
    if (out) {
        if (n + 1 > cap) {
            free(buf);
            return frae_json_fail(j, "string too long (%zu bytes)", n);
        }
        memcpy(out, buf, n + 1);
        free(buf);
    } else {
        *heap = buf;
    }
    return (long)n;
}

int frae_json_int(frae_json *j, int64_t *v)
{
    frae_json_space(j);
    const char *s = j->p;
    if (s < j->end && *s == '-')
        return frae_json_fail(j, "negative number");
    int64_t x = 0;
    int digits = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (x > (INT64_MAX - 9) / 10)
            return frae_json_fail(j, "number too large");
        x = x * 10 + (*j->p++ - '0');
        digits++;
    }
    if (!digits)
        return frae_json_fail(j, "expected a number");
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return frae_json_fail(j, "expected an integer");
    *v = x;
    return 0;
}

int frae_json_int_array(frae_json *j, int64_t *vals, int cap, int *count)
{
    if (frae_json_expect(j, '['))
        return -1;
    *count = 0;
    frae_json_space(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    while (1) {
        if (*count == cap)
            return frae_json_fail(j, "array too long");
        if (frae_json_int(j, &vals[(*count)++]))
            return -1;
        frae_json_space(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        return frae_json_expect(j, ']');
    }
}

/* Skips any JSON value (for keys we do not use). */
int frae_json_skip(frae_json *j, int depth)
{
    frae_json_space(j);
    if (depth > 32)
        return frae_json_fail(j, "nested too deeply");
    if (j->p >= j->end)
        return frae_json_fail(j, "unexpected end");
    char c = *j->p;
    if (c == '"') {
        char *tmp;
        if (frae_json_string(j, NULL, 0, &tmp) < 0)
            return -1;
        free(tmp);
        return 0;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        frae_json_space(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        while (1) {
            if (c == '{') {
                char *tmp;
                if (frae_json_string(j, NULL, 0, &tmp) < 0)
                    return -1;
                free(tmp);
                if (frae_json_expect(j, ':'))
                    return -1;
            }
            if (frae_json_skip(j, depth + 1))
                return -1;
            frae_json_space(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            return frae_json_expect(j, close);
        }
    }
    /* number, true, false, null */
    const char *s = j->p;
    while (j->p < j->end && strchr("0123456789+-.eEtruefalsn", *j->p))
        j->p++;
    return j->p > s ? 0 : frae_json_fail(j, "unexpected character '%c'", c);
}
