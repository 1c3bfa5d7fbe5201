/* A strict JSON reader, just enough for a safetensors header: the
 * position in the text, one-line errors naming the file, and readers of
 * the values the header holds (strings, integers and arrays of them, and
 * anything else skipped to a bounded depth). */
#ifndef FRAE_IO_JSON_H
#define FRAE_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

/* the longest text it reads: the safetensors spec's own header limit */
#define FRAE_JSON_MAX_TEXT (100u << 20)

typedef struct {
    const char *p, *end, *start;
    const char *name; /* file, for messages */
    char *err;
    size_t errlen;
    int failed;
} frae_json;

int frae_json_fail(frae_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void frae_json_space(frae_json *j);
int frae_json_expect(frae_json *j, char c);
long frae_json_string(frae_json *j, char *out, size_t cap, char **heap);
int frae_json_int(frae_json *j, int64_t *v);
int frae_json_int_array(frae_json *j, int64_t *vals, int cap, int *count);
int frae_json_skip(frae_json *j, int depth);

#endif
