/* The config's enums and widths as text: one table each, for the command
 * line, the checkpoint metadata and the messages. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

const char *const frae_activation_names[2] = {"relu", "tanh"};
const char *const frae_family_names[2] = {"dense", "gru"};
const char *const frae_feedback_names[2] = {"detached", "full"};
const char *const frae_weights_names[2] = {"f32", "bf16"};
const char *const frae_isa_names[5] = {"auto", "scalar", "avx2", "avx512",
                                       "neon"};

int frae_name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* frae.h's enum names: the table of what */
static const char *const *enum_table(const char *what, int *n)
{
    static const struct {
        const char *what;
        const char *const *names;
        int n;
    } tables[] = {
        {"family", frae_family_names, FRAE_NAME_COUNT(frae_family_names)},
        {"activation", frae_activation_names,
         FRAE_NAME_COUNT(frae_activation_names)},
        {"feedback", frae_feedback_names, FRAE_NAME_COUNT(frae_feedback_names)},
        {"weights", frae_weights_names, FRAE_NAME_COUNT(frae_weights_names)},
        {"isa", frae_isa_names, FRAE_NAME_COUNT(frae_isa_names)},
    };
    for (size_t i = 0; what && i < sizeof tables / sizeof tables[0]; i++)
        if (!strcmp(what, tables[i].what))
            return *n = tables[i].n, tables[i].names;
    return *n = 0, NULL;
}

const char *frae_enum_name(const char *what, int value)
{
    int n;
    const char *const *names = enum_table(what, &n);
    return names && value >= 0 && value < n ? names[value] : NULL;
}

int frae_enum_value(const char *what, const char *name)
{
    int n;
    const char *const *names = enum_table(what, &n);
    return names ? frae_name_index(names, n, name) : -1;
}

void frae_quantizer_name(const frae_config *c, char *out, size_t cap)
{
    if (c->quantizer == FRAE_QUANT_UNIFORM)
        snprintf(out, cap, "uniform:%d", c->quant_levels);
    else
        snprintf(out, cap, "%s",
                 c->quantizer == FRAE_QUANT_BINARY ? "binary" : "none");
}

/* A whole decimal in lo..hi: digits only, nothing around them. */
static int whole(const char *s, long lo, long hi, const char **end, long *out)
{
    char *e;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *end = e;
    *out = v;
    return 0;
}

int frae_quantizer_parse(const char *s, frae_config *c)
{
    if (!strcmp(s, "none")) {
        c->quantizer = FRAE_QUANT_NONE;
    } else if (!strcmp(s, "binary")) {
        c->quantizer = FRAE_QUANT_BINARY;
    } else if (!strncmp(s, "uniform:", 8)) {
        const char *end;
        long n;
        if (whole(s + 8, 2, 65536, &end, &n) || *end)
            return -2;
        c->quantizer = FRAE_QUANT_UNIFORM;
        c->quant_levels = (int)n;
    } else {
        return -1;
    }
    return 0;
}

int frae_parse_widths(const char *s, int *n, int *w)
{
    *n = 0;
    if (!*s || !strcmp(s, "none"))
        return 0;
    for (const char *p = s;;) {
        const char *end;
        long v;
        if (whole(p, 1, INT_MAX, &end, &v) || (*end && *end != ','))
            return -1;
        if (*n == FRAE_MAX_HIDDEN)
            return -2;
        w[(*n)++] = (int)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

void frae_widths_name(const int *w, int n, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%d", i ? "," : "", w[i]);
}
